// record_sink.h: what the collectors (collect/interner.h,
// sample_collector.h, launch_collector.h) write to, whichever session runs
// them: RecordOutputs (record_outputs.h: the main file and its rotated or
// cycle files) implements it, and the collectors' unit tests put a fake in
// its place. Names and stacks are defined the same way in every file (an
// id is the count defined before).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "record/recording.h"

namespace gpuprof {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Interned tables: the next id of each is the count defined so far.
  virtual uint32_t sample_frames_defined() const = 0;
  virtual Result<void> add_sample_frame(const std::string& name) = 0;
  virtual uint32_t sample_stacks_defined() const = 0;
  virtual Result<void> add_sample_stack(const std::vector<uint32_t>& frame_ids) = 0;
  virtual uint32_t launch_names_defined() const = 0;
  virtual Result<void> add_launch_name(const std::string& name) = 0;
  // Records.
  virtual uint64_t samples_appended() const = 0;
  virtual Result<void> append_samples(const CpuSample* samples, size_t count) = 0;
  virtual Result<void> append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) = 0;
  virtual Result<void> append_launches(const CudaLaunch* launches, size_t count) = 0;
};

}  // namespace gpuprof

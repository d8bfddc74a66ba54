// record_sink.h: what the collectors write to, whichever session runs them.
//
// `record -p` and `record -- CMD` write through RecordOutputs (the main file
// and its rotated or cycle files: output_switcher.h), `record -a` through
// one RecordWriter; both define names and stacks the same way (an id is the
// count defined before), so the collectors (interner.h, sample_collector.h,
// launch_collector.h) see one interface and WriterSink adapts either.
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

// A RecordSink over any writer with those methods (RecordOutputs,
// RecordWriter).
template <class Writer>
class WriterSink final : public RecordSink {
 public:
  explicit WriterSink(Writer& writer) : writer_(writer) {}
  uint32_t sample_frames_defined() const override { return writer_.sample_frames_defined(); }
  Result<void> add_sample_frame(const std::string& name) override {
    return writer_.add_sample_frame(name);
  }
  uint32_t sample_stacks_defined() const override { return writer_.sample_stacks_defined(); }
  Result<void> add_sample_stack(const std::vector<uint32_t>& frame_ids) override {
    return writer_.add_sample_stack(frame_ids);
  }
  uint32_t launch_names_defined() const override { return writer_.launch_names_defined(); }
  Result<void> add_launch_name(const std::string& name) override {
    return writer_.add_launch_name(name);
  }
  uint64_t samples_appended() const override { return writer_.samples_appended(); }
  Result<void> append_samples(const CpuSample* samples, size_t count) override {
    return writer_.append_samples(samples, count);
  }
  Result<void> append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) override {
    return writer_.append_sample_kernel_stack(sample_index, stack_id);
  }
  Result<void> append_launches(const CudaLaunch* launches, size_t count) override {
    return writer_.append_launches(launches, count);
  }

 private:
  Writer& writer_;
};

}  // namespace gpuprof

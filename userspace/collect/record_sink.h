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

#include "record/recording.h"

namespace gpuprof {

class RecordSink {
 public:
  virtual ~RecordSink() = default;
  // Interned tables: the next id of each is the count defined so far.
  virtual uint32_t sample_frames_defined() const = 0;
  virtual bool add_sample_frame(const std::string& name, std::string* error) = 0;
  virtual uint32_t sample_stacks_defined() const = 0;
  virtual bool add_sample_stack(const std::vector<uint32_t>& frame_ids, std::string* error) = 0;
  virtual uint32_t launch_names_defined() const = 0;
  virtual bool add_launch_name(const std::string& name, std::string* error) = 0;
  // Records.
  virtual uint64_t samples_appended() const = 0;
  virtual bool append_samples(const CpuSample* samples, size_t count, std::string* error) = 0;
  virtual bool append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id, std::string* error) = 0;
  virtual bool append_launches(const CudaLaunch* launches, size_t count, std::string* error) = 0;
};

// A RecordSink over any writer with those methods (RecordOutputs, RecordWriter).
template <class Writer>
class WriterSink final : public RecordSink {
 public:
  explicit WriterSink(Writer& writer) : writer_(writer) {}
  uint32_t sample_frames_defined() const override { return writer_.sample_frames_defined(); }
  bool add_sample_frame(const std::string& name, std::string* error) override {
    return writer_.add_sample_frame(name, error);
  }
  uint32_t sample_stacks_defined() const override { return writer_.sample_stacks_defined(); }
  bool add_sample_stack(const std::vector<uint32_t>& frame_ids, std::string* error) override {
    return writer_.add_sample_stack(frame_ids, error);
  }
  uint32_t launch_names_defined() const override { return writer_.launch_names_defined(); }
  bool add_launch_name(const std::string& name, std::string* error) override {
    return writer_.add_launch_name(name, error);
  }
  uint64_t samples_appended() const override { return writer_.samples_appended(); }
  bool append_samples(const CpuSample* samples, size_t count, std::string* error) override {
    return writer_.append_samples(samples, count, error);
  }
  bool append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id, std::string* error) override {
    return writer_.append_sample_kernel_stack(sample_index, stack_id, error);
  }
  bool append_launches(const CudaLaunch* launches, size_t count, std::string* error) override {
    return writer_.append_launches(launches, count, error);
  }

 private:
  Writer& writer_;
};

}  // namespace gpuprof

// chosen_processes_stream.h: some processes of a system-wide recording
// (record -a) read as a stream (record/record_stream.h), for an output of
// those --pid/--comm choose (report --chrome-trace): the inner stream gets
// what select_processes(recording, chosen) (process_filter.h) holds, as it
// comes: the chosen processes' op events and every CUT, in file order,
// numbered from 0 among them; their threads' launches and allocator
// events. It reads the chosen processes' selection of the first read's
// head (without events), which this keeps for as long as it lives.
//
// It declines what it cannot renumber alike: a recording with entry
// stacks, backward stacks or input shapes (their pairs name the file's
// event indices), and one with GPU activities (their calls are joined
// through correlations, which -a does not record).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class ChosenProcessesStream : public RecordStream {
 public:
  // head: the first read's (its thread-to-process table places launches
  // and allocator events). make_inner(selection): the stream of the
  // chosen processes, reading their selection of the head.
  ChosenProcessesStream(const Recording& head, std::set<uint32_t> chosen,
                        const std::function<std::unique_ptr<RecordStream>(const Recording& selection)>& make_inner);

  // Whether a recording streams this way (see above).
  static bool serves(const Recording& head);

  RecordStream& inner() { return *inner_; }

  bool wants(const Recording& head) override { return serves(head) && inner_->wants(head); }
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  bool on_launches(std::span<const CudaLaunch> launches) override;
  bool on_mem_events(std::span<const gp_mem_event> events) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override { return activities.empty(); }

 private:
  bool chosen_thread(uint32_t tid) const;

  std::set<uint32_t> chosen_;
  std::unordered_map<uint32_t, uint32_t> process_of_thread_;  // the head's (process_filter.h)
  std::unique_ptr<Recording> selection_;
  std::unique_ptr<RecordStream> inner_;
  uint64_t handed_ = 0;            // events handed to the inner stream: the next one's index
  // A chunk's chosen records, handed on.
  std::vector<gp_event> events_;
  std::vector<CudaLaunch> launches_;
  std::vector<gp_mem_event> mem_events_;
};

}  // namespace gpuprof

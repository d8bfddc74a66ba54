// streamed_running_at.h: report --gpu of a recording read as a stream
// (record/record_stream.h): what each launching thread ran when a GPU's
// host wait began (gpu_time.h's RunningAt), from its op events as they
// stream by. The GPU records themselves, which give every other figure,
// are the first read's (report_reads.cpp keeps them: one per activity and
// launch, far fewer than the op events).
//
// Each thread's calls come in settled forests (settled_calls.h), each
// waiting for its events' ENTRY_STACKS pairs (entry_stack_pairs.h); the
// moments are placed in them as innermost_calls_at places them in the whole
// timeline (forest_moments.h). Memory grows with the moments, the threads
// and each thread's current outermost call tree, not with the events.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "analyze/entry_stack_pairs.h"
#include "analyze/forest_moments.h"
#include "analyze/gpu_time.h"
#include "analyze/settled_calls.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedRunningAt : public RecordStream {
 public:
  // head: the first read's (its ops and Python stacks name what ran; it
  // must outlive the stream); moments: GpuTimeDraft::moments;
  // last_entry_stack: the event index of the file's last ENTRY_STACKS pair
  // (nullopt: none).
  StreamedRunningAt(const Recording& head, const std::vector<ThreadMoment>& moments,
                    std::optional<uint64_t> last_entry_stack);
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override { stacks_.add(event_index, stack_id); }
  // The first read's GPU records give the rest; allocator events tell
  // nothing here: all dropped.
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  bool on_gpu_activities(std::span<const GpuActivity>) override { return true; }
  // Once the read is done: what ran at each moment.
  std::vector<RunningAt> finish() &&;

 private:
  void place(const Timeline& forest);

  const Recording& head_;
  SettledCalls settled_;
  EntryStackPairs stacks_;
  ForestMoments moments_;
  std::vector<RunningAt> running_;
};

}  // namespace gpuprof

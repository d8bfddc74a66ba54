// streamed_host_waits.h: report --gpu of a recording read as a stream
// (record/record_stream.h): the host waits charged to what each launching
// thread ran when they began (gpu_time.h's GpuHostWait), from its op events
// as they stream by, with memory for the threads, each thread's current
// outermost call tree and the (device, op, frame) rows, not for the waits.
//
// The first read's GPU records give the waits (sorted_gpu_time.h): each is
// a moment on the launching thread, put in HostWaitMoments, which sorts
// them by thread and time (base/external_sort.h) into a temporary file per
// thread. The second read's calls come in settled forests (settled_calls.h),
// each waiting for its events' ENTRY_STACKS pairs (entry_stack_pairs.h);
// each thread's moments are read from its file as its forests come and
// decided as forest_moments.h decides them (innermost_calls_at's call in the
// whole timeline): a forest decides the moments from its first call's
// start to its last end; those at that very end may be decided again by
// the thread's next forest (the later decision stands), so a moment is
// charged once its thread's forests have passed it. Moments outside every
// forest were outside every call: "[no op]".
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/entry_stack_pairs.h"
#include "analyze/gpu_time.h"
#include "analyze/settled_calls.h"
#include "base/external_sort.h"
#include "base/spill_file.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

// The host waits' moments, added in any order, read back by thread and
// time.
class HostWaitMoments {
 public:
  struct Moment {
    uint64_t ts_ns = 0;  // where the wait began: its gap's start
    uint64_t wait_ns = 0;
    uint32_t device = 0;  // its index in the draft's devices
    uint32_t tid = 0;     // the thread that launched the activity ending the gap
  };
  explicit HostWaitMoments(size_t run_bytes = kSortRunBytes)
      : sorted_(run_bytes / sizeof(Moment)) {}
  void add(const Moment& moment) { sorted_.add(moment); }
  uint64_t size() const { return sorted_.size(); }
  // Each thread's moments by time, in a temporary file of its own. Once,
  // after the last add.
  std::unordered_map<uint32_t, std::unique_ptr<SpillFile>> by_thread() &&;

 private:
  struct ByThreadAndTime {
    bool operator()(const Moment& a, const Moment& b) const {
      return std::tie(a.tid, a.ts_ns) < std::tie(b.tid, b.ts_ns);
    }
  };
  ExternalSort<Moment, ByThreadAndTime> sorted_;
};

class StreamedHostWaits : public RecordStream {
 public:
  // head: the first read's (its ops and Python stacks name what ran; it
  // must outlive the stream); devices: how many the draft has;
  // last_entry_stack: the event index of the file's last ENTRY_STACKS pair
  // (nullopt: none).
  StreamedHostWaits(const Recording& head, HostWaitMoments moments, size_t devices,
                    std::optional<uint64_t> last_entry_stack);
  bool wants(const Recording&) override { return true; }
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override { stacks_.add(event_index, stack_id); }
  // The first read's GPU records give the rest; allocator events tell
  // nothing here: all dropped.
  bool on_mem_events(std::span<const gp_mem_event>) override { return true; }
  bool on_gpu_activities(std::span<const GpuActivity>) override { return true; }
  // Once the read is done: each device's host waits, most wait first, then
  // op and frame (as finish_gpu_time lists them).
  std::vector<std::vector<GpuHostWait>> finish() &&;

 private:
  // One thread's moments: its file, read ahead by one, and those its last
  // forest decided at its very end (not yet charged).
  struct ThreadMoments {
    std::unique_ptr<SpillFile> file;
    std::optional<SpilledRecords<HostWaitMoments::Moment>> reader;
    std::optional<HostWaitMoments::Moment> ahead;
    std::vector<std::pair<HostWaitMoments::Moment, RunningAt>> at_end;
    const HostWaitMoments::Moment* peek();
  };
  void place(const Timeline& forest);
  void charge(const HostWaitMoments::Moment& moment, const RunningAt& ran);

  const Recording& head_;
  SettledCalls settled_;
  EntryStackPairs stacks_;
  std::unordered_map<uint32_t, ThreadMoments> threads_;
  // Per device: (op, frame) -> its waits.
  std::vector<std::map<std::pair<std::string, std::string>, GpuHostWait>> waits_;
};

}  // namespace gpuprof

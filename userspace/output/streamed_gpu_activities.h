// streamed_gpu_activities.h: the GPU activities of a Chrome trace
// (chrome_trace.h) from a recording read as a stream
// (record/record_stream.h), without holding them.
//
// The trace writes them by device and stream, each stream's by start
// (longer first, then in file order: gpu_trace_order), and draws an arrow
// from the first launch of each one's correlation id (its GPU correlation)
// to it. Here each activity is joined to that launch once both are read, or
// once no unread GPU_CORRELATIONS chunk can hold its id; correlations are
// dropped once no unread GPU_ACTIVITIES chunk can hold theirs; and the
// activities go, in that order, to a temporary file per stream once no
// unread chunk can hold an earlier start. What each chunk can hold comes
// from the first read (GpuActivityBounds, through UnreadFloor). Memory grows
// with the streams and with how far activities lag their launches and one
// another in the file, not with the activities; each record costs a few
// ordered-map steps however much is held (a stream whose activities come
// late, as CUPTI may hand over a quiet stream's buffer at the end, holds
// the others back without making each chunk slower).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "analyze/unread_floor.h"
#include "base/spill_file.h"
#include "record/recording.h"

namespace gpuprof {

// One GPU activity as the trace writes it: with its launch, when one was
// read (the arrow's tail: the launching thread and moment).
struct TraceGpuActivity {
  GpuActivity activity;
  uint64_t launch_ts_ns = 0;
  uint32_t launch_tid = 0;
  uint32_t launch_seen = 0;  // 1: launch_ts_ns and launch_tid are its launch's
  // --ops: the span of the call that launched it, which --time-range must
  // overlap too (as the whole trace keeps only the calls it overlaps).
  uint64_t call_start_ns = 0, call_end_ns = 0;
};
using GpuActivityVisitor = std::function<void(const TraceGpuActivity& activity)>;

// The trace's order of a stream's activities: by start, the longer first
// (a slice encloses what starts with it); ties keep file order (the caller
// compares the indices).
inline bool gpu_trace_order(const GpuActivity& a, const GpuActivity& b) {
  if (a.device != b.device) return a.device < b.device;
  if (a.stream != b.stream) return a.stream < b.stream;
  if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
  return a.end_ns > b.end_ns;
}

// What the first read notes of each chunk, in file order: the least start
// and correlation id of each GPU_ACTIVITIES chunk, the least correlation id
// of each GPU_CORRELATIONS chunk.
struct GpuActivityBounds {
  std::vector<uint64_t> activity_start, activity_correlation, correlation_id;
};

class StreamedGpuActivities {
 public:
  explicit StreamedGpuActivities(const GpuActivityBounds& bounds);
  StreamedGpuActivities(const StreamedGpuActivities&) = delete;
  StreamedGpuActivities& operator=(const StreamedGpuActivities&) = delete;

  // One chunk's records, in file order.
  void add_correlations(std::span<const GpuCorrelation> correlations);
  void add_activities(std::span<const GpuActivity> activities);
  // --ops (set before any record): each activity waits, besides, for the
  // word of keep_launched_by on its correlation id; one whose launch no
  // unread chunk can hold is dropped, as the whole trace drops an activity
  // whose launch it did not see.
  void keep_by_launching_call() { by_launching_call_ = true; }
  // Whether the activities of a correlation id, all read by now, go in the
  // trace: the span of the kept call that launched them, or nullopt (their
  // launch ran outside every kept call). The first word for an id stands.
  void keep_launched_by(uint64_t correlation_id, std::optional<std::pair<uint64_t, uint64_t>> call_span);
  // Once the read is done: the replay of every activity, in the trace's
  // order (null: none). The replay owns the temporary files.
  std::function<void(const GpuActivityVisitor&)> finish();

 private:
  enum class Keep : uint8_t { yes, no, undecided };
  struct Held {
    TraceGpuActivity record;
    bool decided = false;  // its launch is known, or known not to come
    Keep keep = Keep::yes;  // by_launching_call_: whether its launching call is kept
  };
  // A stream's held activities in the trace's order (gpu_trace_order):
  // start, the longer first (UINT64_MAX - end), then file order.
  using OrderKey = std::tuple<uint64_t, uint64_t, uint64_t>;
  using StreamKey = std::pair<uint32_t, uint32_t>;  // (device, stream)
  struct Spills {
    std::map<std::pair<uint32_t, uint32_t>, SpillFile> streams;  // (device, stream): TraceGpuActivity records
    void replay(const GpuActivityVisitor& visit);
  };
  // An activity with its launch (the arrow's tail): decided.
  static void join(Held& held, uint64_t launch_ts_ns, uint32_t launch_tid);
  // Decides the activities no unread launch can join (no arrow), drops the
  // launches no unread activity can need, and spills the held activities
  // nothing unread can precede (at_end: all).
  void settle(bool at_end);

  UnreadFloor start_floor_;        // the least start an unread activity can have
  UnreadFloor activity_id_floor_;  // and correlation id
  UnreadFloor launch_id_floor_;    // the least correlation id an unread launch can have
  // The first launch read of each correlation id: (moment, thread), by id
  // (those below the activities' floor go at once).
  std::map<uint64_t, std::pair<uint64_t, uint32_t>> launches_;
  // Read, not spilled, each stream's in the order they will be.
  std::map<StreamKey, std::map<OrderKey, Held>> held_;
  // The held activities whose launch may still come, by correlation id
  // (a map's elements stay put: an undecided one is never spilled).
  std::multimap<uint64_t, Held*> undecided_;
  // by_launching_call_: the held activities waiting for keep_launched_by,
  // by correlation id.
  bool by_launching_call_ = false;
  std::multimap<uint64_t, Held*> keep_undecided_;
  uint64_t read_ = 0;  // activities read: the next one's file index
  std::shared_ptr<Spills> spills_;
};

}  // namespace gpuprof

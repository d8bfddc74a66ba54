// streamed_call_figures.h: call_figures() (call_figures.h) of a recording
// read as a stream (record/record_stream.h), one settled forest at a time
// (settled_calls.h): each call's memory and GPU time joined from the
// allocator events and GPU activities, whose records come chunks after the
// events they belong to. Memory grows with the threads, the open calls and
// how far those records lag, not with the events.
//
// The whole read joins a record stamped (tid, ts) to the innermost call of
// its thread whose [start, end] holds ts (innermost_calls_at, a call that
// starts at ts holding it). Here:
//  * Allocator events are put in time order across threads first (CPU
//    releases take their sizes from allocations made on any thread;
//    memory_attribution.h), each released once no unread MEM_EVENTS chunk
//    can hold an earlier one; the peaks are followed in that order. Then
//    each goes, as a moment, to its thread, as a GPU correlation (a launch)
//    does when read, and, when asked (on_probe_launch_placed), a launch
//    probe's launch (a LAUNCHES chunk's).
//  * A thread's forest is handed on once no unread chunk can hold a moment
//    of its thread up to its last event (the first read notes the earliest
//    moment of each chunk: JoinBounds). It is joined when the thread's next
//    forest comes (a moment at its end may be the next forest's, whose
//    first call starts then) or at the end: the moments before the next
//    forest's start go to its calls or, between forests, outside every op.
//  * A joined forest whose calls launched GPU work waits for the GPU
//    activities of its correlation ids: until no unread GPU_ACTIVITIES
//    chunk holds one of them (the first read notes each chunk's least id),
//    and so do its thread's later forests: each thread's forests are
//    handed on in their order. An activity's time waits, summed by
//    correlation id, for its launch.
//
// A thread that never runs an op (the first read notes the threads with op
// events) has every moment outside, decided as it comes. A thread's
// moments between two of its forests wait for the later one.
//
// Two things only a damaged or unusual file shows differ from the whole
// read: a correlation id launched twice goes to the launch joined first
// (the whole read: the first in the file), and a recording that gains
// chunks between the two reads (still being written) joins what the second
// read found past the first's chunks at the end.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "analyze/call_figures.h"
#include "analyze/call_tree.h"
#include "analyze/memory_attribution.h"
#include "analyze/op_timeline.h"
#include "analyze/settled_calls.h"
#include "analyze/time_ordered_mem_events.h"
#include "analyze/unread_floor.h"
#include "op_tracer_abi.h"
#include "record/recording.h"

namespace gpuprof {

// What the first of a streamed report's reads notes for the join: per
// chunk, in file order, the earliest allocator event of each MEM_EVENTS
// chunk, the earliest launch of each GPU_CORRELATIONS chunk, the least
// correlation id of each GPU_ACTIVITIES chunk; and the threads that have op
// events.
struct JoinBounds {
  std::vector<uint64_t> mem_event_ts, gpu_correlation_ts, gpu_activity_correlation;
  std::unordered_set<uint32_t> op_threads;
  // The earliest launch of each LAUNCHES chunk (the launch probes'), and
  // the kernel names of the runtime launches (whether one may take a CUPTI
  // name), for report --launches (streamed_launch_table.h).
  std::vector<uint64_t> launch_ts;
  std::unordered_set<uint32_t> kernel_launch_names;
  // For the trace's GPU activities (output/streamed_gpu_activities.h): the
  // earliest start of each GPU_ACTIVITIES chunk and the least correlation
  // id of each GPU_CORRELATIONS chunk.
  std::vector<uint64_t> gpu_activity_start, gpu_correlation_id;
};

class StreamedCallFigures {
 public:
  // One settled forest and its figures (call_figures_from).
  using Sink = std::function<void(const Timeline& forest, const CallFigures& figures)>;
  // ops: the read's op table (kept by pointer: it grows with placeholders
  // of lost ops); memory, gpu: whether the recording has those columns.
  // pairs_known: when given, a forest also waits until it says the pairs
  // (ENTRY_STACKS: entry_stack_pairs.h) up to its last event have come.
  StreamedCallFigures(const ProbeCosts* costs, const std::vector<OpInfo>& ops, bool memory, bool gpu,
                      JoinBounds bounds, Sink sink, std::function<bool(uint64_t event_index)> pairs_known = {});
  StreamedCallFigures(const StreamedCallFigures&) = delete;
  StreamedCallFigures& operator=(const StreamedCallFigures&) = delete;

  // Each GPU launch, once every activity of its correlation id has been
  // read: its id and the op of the innermost call running at it on its
  // thread (nullopt: outside every op), as calls_of_gpu_activities joins
  // them (report --kernels: streamed_kernel_table.h). Set before the events.
  using LaunchSink = std::function<void(uint64_t correlation_id, std::optional<uint32_t> op_id)>;
  void on_launch_joined(LaunchSink sink) { launch_sink_ = std::move(sink); }
  // Where a launch ran: the innermost call at its moment on its thread,
  // `call` an index in forest->calls (-1: outside every op; forest and tree
  // may then be empty), tree being build_call_tree(*forest). Valid during
  // the sink's call only.
  struct LaunchPlace {
    const Timeline* forest = nullptr;
    const CallTree* tree = nullptr;
    int64_t call = -1;
  };
  // As on_launch_joined, with the launch's place instead of its op (report
  // --chrome-trace --ops keeps the GPU activities of the calls it keeps:
  // output/streamed_chrome_trace.h).
  using PlacedLaunchSink = std::function<void(uint64_t correlation_id, const LaunchPlace& place)>;
  void on_launch_placed(PlacedLaunchSink sink) { placed_sink_ = std::move(sink); }
  // The launch probes' launches (LAUNCHES chunks, add_launches) joined too:
  // each one's index among the launches added (file order) and its place,
  // handed over as its forest is joined (no GPU activity to wait for). Set
  // before the events: the forests then wait, besides, until no unread
  // LAUNCHES chunk (JoinBounds::launch_ts) can hold a launch of theirs.
  using ProbeLaunchSink = std::function<void(uint64_t launch_index, const LaunchPlace& place)>;
  void on_probe_launch_placed(ProbeLaunchSink sink) { probe_launch_sink_ = std::move(sink); }

  void add_events(std::span<const gp_event> events, uint64_t first);
  void add_mem_events(std::span<const gp_mem_event> events);
  void add_gpu_correlations(std::span<const GpuCorrelation> correlations);
  void add_gpu_activities(std::span<const GpuActivity> activities);
  // One LAUNCHES chunk's launches (dropped without on_probe_launch_placed).
  void add_launches(std::span<const CudaLaunch> launches);
  // The end: every forest joined and handed on; the timeline's counters.
  // ops: the op table the read returned (the read's own, which the
  // constructor's pointed at, is gone).
  Timeline finish(const std::vector<OpInfo>& ops) &&;
  // The threads in the order of their first completed call
  // (SettledCalls::thread_order).
  const std::vector<uint32_t>& thread_order() const { return settled_.thread_order(); }

  // After finish: attribute_memory()'s totals (MemoryPeak::call unused:
  // the op of the innermost call at each peak instead).
  struct MemoryTotals {
    uint64_t outside_events = 0;
    int64_t outside_cpu = 0;
    int64_t outside_cuda = 0;
    uint64_t unmatched_frees = 0;
    MemoryPeak cpu_peak, cuda_peak;
    std::optional<uint32_t> cpu_peak_op, cuda_peak_op;
  };
  const MemoryTotals& memory() const { return memory_; }

 private:
  // An allocator event with its size resolved (memory_attribution.cpp's
  // rules), numbered in time order.
  struct MemoryMoment {
    uint64_t ts_ns = 0, seq = 0;
    int64_t cpu_bytes = 0, cuda_bytes = 0;
  };
  struct Correlation {
    uint64_t ts_ns = 0, id = 0;
  };
  // One thread's moments not joined yet, and its last forest, held until
  // its next forest starts.
  struct ThreadJoin {
    std::vector<MemoryMoment> memory;
    std::vector<Correlation> launches;
    std::vector<Correlation> probe_launches;  // id: the launch's index
    std::optional<Timeline> held;
  };
  // A joined forest waiting for the GPU activities of its launches.
  struct Joined {
    Timeline forest;
    CallTree tree;
    OwnFigures own;
    std::vector<std::pair<uint64_t, int64_t>> launches;  // (correlation id, call in forest or -1)
    uint64_t max_correlation = 0;
  };
  void hand_forests();
  void take_forest(Timeline forest);
  // Joins the thread's moments before `limit` with `forest` (nullptr:
  // outside every op), which it moves into the joined forest.
  void join(ThreadJoin& thread, Timeline* forest, uint64_t limit);
  void place_memory(const gp_mem_event& e, const AllocationSizes::Counted& counted);
  void complete_joined(bool at_end);

  const std::vector<OpInfo>* ops_;
  const bool memory_recorded_;
  const bool gpu_recorded_;
  const JoinBounds bounds_;
  Sink sink_;
  LaunchSink launch_sink_;
  PlacedLaunchSink placed_sink_;
  ProbeLaunchSink probe_launch_sink_;
  uint64_t probe_launches_read_ = 0;
  std::function<bool(uint64_t)> pairs_known_;
  SettledCalls settled_;
  UnreadFloor correlation_floor_, activity_floor_, launch_floor_;
  std::unordered_map<uint32_t, ThreadJoin> threads_;
  TimeOrderedMemEvents memory_order_;
  uint64_t memory_released_ = 0;
  MemoryLevelFollower levels_;
  uint64_t cpu_peak_seq_ = UINT64_MAX, cuda_peak_seq_ = UINT64_MAX;
  MemoryTotals memory_;
  std::vector<Joined> joined_;
  CallTree spare_tree_;  // a handed-on forest's, for the next one's (SettledCalls::reuse does the forest's)
  std::unordered_map<uint64_t, uint64_t> activity_ns_;  // by correlation id, waiting for its launch
};

}  // namespace gpuprof

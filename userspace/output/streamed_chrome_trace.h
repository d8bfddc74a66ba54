// streamed_chrome_trace.h: report --chrome-trace of a recording read as a
// stream (record/record_stream.h): memory grows with the threads and the
// calls of each thread's current outermost call tree, not with the events.
//
// The trace writes each thread's op calls by start (parents first), one
// thread after the other in the order of their first completed call, then
// the samples and the rest (chrome_trace.h). Here each thread's calls come
// in settled forests (analyze/settled_calls.h), are put in that order by
// the same code (build_call_tree), and go to a temporary file of their
// thread; write_chrome_trace then replays them, thread by thread, into the
// same document, byte for byte, as the whole read's.
//
// It serves recordings of op events, with or without CPU samples,
// --with-stack entry stacks and --record-shapes input shapes (a forest
// waits for the pairs of its events, entry_stack_pairs.h), module frames in those stacks (--with-modules, or
// --with-stack of a model), and --time-range. The module calls, which the
// trace writes first, are counted by the ModuleTreeBuilder that report
// --modules uses, fed each forest's calls; a thread's module calls go to
// its temporary file too, as soon as no call still open on it can start
// before them (ModuleTreeBuilder::open_since), and are replayed before
// every thread's op calls, the threads in the order of their first call
// (as build_module_tree lists them). With --ops, only the calls that match
// or are nested in one that does are spilled (a forest holds every
// ancestor of its calls: ops_filter.h), no module call (the whole trace
// writes none then), and each CPU sample is marked by whether its thread's
// innermost call at its moment was kept. GPU activities are joined to
// their launches and spilled per stream in the trace's order
// (streamed_gpu_activities.h). The launches go to a temporary file of
// their own and are replayed in file order.
// With --ops, a launch is kept when the innermost call at its moment is, a
// GPU activity when the call that launched it is: the calls then come
// joined with both (analyze/streamed_call_figures.h, which waits for the
// records that lag them, as the first read bounds them:
// keep_launches_by_their_calls), each launch waits for its call, and the
// kept ones go to the file in file order. Without the first read's bounds
// a recording with either is declined (streamable() says), and the caller
// reads it whole. Allocator events are put in time
// order as they come (TimeOrderedMemEvents), and the memory level after
// each goes to a temporary file too, replayed as the memory counter. A record -a recording streams like any other:
// each thread's trace process is the head's (THREAD_PROCESSES).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/entry_stack_pairs.h"
#include "analyze/forest_moments.h"
#include "analyze/module_tree.h"
#include "analyze/op_timeline.h"
#include "analyze/settled_calls.h"
#include "analyze/streamed_call_figures.h"
#include "analyze/time_ordered_mem_events.h"
#include "base/spill_file.h"
#include "output/chrome_trace.h"
#include "output/ops_filter.h"
#include "output/streamed_gpu_activities.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedChromeTrace : public RecordStream {
 public:
  // head: the first read's; last_entry_stack, last_entry_shape: the event
  // index of the file's last ENTRY_STACKS and ENTRY_SHAPES pair (nullopt:
  // none).
  // ops: --ops PATTERN (nullopt: every call).
  // mem_chunk_earliest_ts: the earliest event of each MEM_EVENTS chunk
  // (JoinBounds::mem_event_ts), for a recording with allocator events.
  // gpu: the first read's bounds of the GPU records, for a trace that
  // writes GPU activities (nullopt: they are dropped).
  // calls_only: for --speedscope, which draws the calls and samples alone:
  // module calls are not counted, and launches, allocator events and GPU
  // activities are dropped as they come.
  StreamedChromeTrace(const Recording& head, std::optional<uint64_t> last_entry_stack,
                      std::optional<uint64_t> last_entry_shape, const std::optional<std::regex>& ops,
                      const std::vector<uint64_t>& mem_chunk_earliest_ts = {},
                      const std::optional<GpuActivityBounds>& gpu = std::nullopt, bool calls_only = false);

  // Whether a recording read without its events (the first read: launches
  // and GPU activities counted, not kept) can be written this way; ops:
  // with --ops (whose launches and GPU activities would need their calls).
  static bool streamable(const Recording& head, bool ops);
  // Whether the trace of a recording with this head joins its launches and
  // GPU activities to calls by their thread, and so reads
  // JoinBounds::op_threads: when --ops keeps them by their calls
  // (keep_launches_by_their_calls, which the caller asks for then), as a
  // read without the join could not stream them.
  static bool joins_by_thread(const Recording& head, bool ops) { return !streamable(head, ops); }
  bool wants(const Recording& head) override { return streamable(head, ops_filter_ && !calls_joined_); }
  // --ops: the launches and GPU activities kept by their calls, the calls
  // joined with them within `bounds`, the first read's (op_threads,
  // launch_ts and the GPU chunks' bounds). Before the read; nothing
  // without --ops.
  void keep_launches_by_their_calls(JoinBounds bounds);
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override { stacks_.add(event_index, stack_id); }
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override { shapes_.add(event_index, shape_id); }
  // Put aside in file order, as the trace writes them (with --ops, once
  // their calls are known; without keep_launches_by_their_calls: false, and
  // the recording is read whole).
  bool on_launches(std::span<const CudaLaunch> launches) override;
  // Put in time order (TimeOrderedMemEvents), each event's memory level
  // put aside for the trace's memory counters (calls_only: dropped).
  bool on_mem_events(std::span<const gp_mem_event> events) override;
  // Joined to their launches and put in the trace's order as they come
  // (streamed_gpu_activities.h); dropped when the trace writes none.
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  // Once the read is done: the calls, for write_chrome_trace. The replay
  // owns the temporary files (closed, so removed, with its last copy).
  StreamedTraceCalls finish();

 private:
  // Where the next call of a thread is packed from: its previous call's
  // start and entry index (calls go by start, parents first, so both grow
  // by small steps); module_start_ns: its previous module call's start.
  struct SpillCursor {
    uint64_t start_ns = 0;
    uint64_t entry_index = 0;
    uint64_t module_start_ns = 0;
  };
  // One thread's calls in trace order, packed (streamed_chrome_trace.cpp).
  struct ThreadCalls {
    SpillFile spill;
    SpillCursor packed;  // the last call packed
  };
  struct Spills {
    std::unordered_map<uint32_t, ThreadCalls> threads;
    std::vector<uint32_t> order;         // the threads in the order of their first completed call
    std::vector<uint32_t> module_order;  // the threads with module calls, by their first call's start
    SpillFile launches;                  // the CUDA launches, whole records in file order
    uint64_t launch_count = 0;
    SpillFile memory_levels;  // MemoryLevel records in time order
    uint64_t memory_level_count = 0;
    Spills() = default;
    Spills(const Spills&) = delete;
    Spills& operator=(const Spills&) = delete;
    void replay(std::span<const uint32_t> tids, const TraceCallVisitor& visit);  // these threads' calls, in turn
    void replay_modules(const ModuleCallVisitor& visit);
    void replay_launches(const LaunchVisitor& visit);
    void replay_memory_levels(const MemoryLevelVisitor& visit);
  };
  void put_memory_level(const gp_mem_event& e, const AllocationSizes::Counted& counted);
  void spill(const Timeline& forest);
  // A forest's calls into the module tree; a thread's module calls that
  // nothing open can precede any more into its spill (at_end: all).
  void count_modules(const Timeline& forest, const CallTree& tree, const std::vector<std::optional<uint32_t>>& stacks);
  void take_listed_module_calls();
  void spill_module_calls(uint32_t tid, bool at_end);
  // --ops: marks the samples of the forest's thread that it decides.
  void mark_samples(const Timeline& forest, const CallTree& tree, const std::vector<bool>& kept);
  // --ops: the calls of a forest kept (OpsFilter::kept), the last forest's
  // remembered (its launches and its spill ask in turn).
  const std::vector<bool>& kept_calls(const Timeline& forest, const CallTree& tree);
  // --ops, joined: a launch's word (kept or not), and the launches decided
  // at the front of those waiting, kept ones to their file.
  void decide_launch(uint64_t index, bool kept);
  void release_launches();

  SettledCalls settled_;
  std::optional<OpsFilter> ops_filter_;
  // --ops: the CPU samples' moments (moment i is head.samples[i]), placed
  // in their threads' forests, and whether each sample's innermost call was
  // kept.
  std::optional<ForestMoments> sample_moments_;
  std::vector<bool> samples_in_kept_calls_;
  EntryStackPairs stacks_;
  EntryStackPairs shapes_;  // the ENTRY_SHAPES pairs, held the same way
  std::unordered_map<uint64_t, uint64_t> step_of_entry_;  // STEP events' step numbers, by event index
  std::shared_ptr<Spills> spills_;
  // Module frames in the stacks: the module tree, the module calls it
  // listed that wait for their place in their thread's order, and each
  // thread's first call start.
  std::unique_ptr<ModuleTreeBuilder> modules_;
  // A thread's listed module calls not yet written, and the earliest start
  // among them: while a module call that started before it stays open,
  // none can be written, and the list is left unsorted.
  struct WaitingModuleCalls {
    std::vector<ModuleCall> calls;
    uint64_t earliest_start_ns = UINT64_MAX;
  };
  std::unordered_map<uint32_t, WaitingModuleCalls> module_calls_waiting_;
  std::unordered_map<uint32_t, uint64_t> first_start_;
  // A recording with allocator events: them in time order, and the level
  // after each.
  std::optional<TimeOrderedMemEvents> memory_order_;
  MemoryLevelFollower levels_;
  std::unique_ptr<StreamedGpuActivities> gpu_;  // null: GPU activities dropped
  // --ops with keep_launches_by_their_calls: the calls, joined with the
  // launches and GPU launches (in place of settled_), its op table, the
  // launches waiting for their calls' word (-1: none yet) in file order from
  // launch index first_waiting_launch_, and the last forest's kept calls.
  std::unique_ptr<StreamedCallFigures> calls_joined_;
  std::vector<OpInfo> join_ops_;
  struct WaitingLaunch {
    CudaLaunch launch;
    int8_t kept = -1;
  };
  std::deque<WaitingLaunch> launches_waiting_;
  uint64_t first_waiting_launch_ = 0;
  struct KeptCalls {
    std::tuple<uint32_t, uint64_t, size_t> forest{0, UINT64_MAX, 0};  // tid, first entry, calls
    std::vector<bool> kept;
  } kept_cache_;
  const bool calls_only_;
  // spill()'s tree of a forest and its calls' entry stacks, their storage
  // kept from one forest to the next (a forest can be thousands of calls).
  CallTree tree_;
  std::vector<std::optional<uint32_t>> forest_stacks_;
};

}  // namespace gpuprof

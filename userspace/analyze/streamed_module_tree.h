// streamed_module_tree.h: build_module_tree() (module_tree.h) of a
// recording read as a stream (record/record_stream.h), for report
// --modules: memory grows with the modules, op names, threads and the calls
// of each thread's current outermost call tree, not with the events.
//
// Each thread's settled forest (settled_calls.h) goes into one
// ModuleTreeBuilder, parents first, as build_module_tree feeds it the whole
// timeline: an outermost call by the module frames of its ENTRY's Python
// stack (ENTRY_STACKS), an autograd engine call by the stack of the forward
// op that made its node (BACKWARD_STACKS), a nested call with its parent.
// Both kinds of pairs come after their events, on cursors of their own: a
// forest waits until the pairs of its events have all come (or the events
// are past the file's last pair of each kind: the first read says where).
//
// A recording with GPU activities (the CUPTI shim) comes in forests joined
// with their launches' activities (streamed_call_figures.h): each call's
// GPU time goes where build_module_tree puts it.
//
// One thing the whole read knows before it places a call: whether its
// thread runs Python at any op entry (an op without a stack is then under
// [stack not read], else [no Python frames]). A thread's calls without a
// stack, from before its first entry with one, are held, summed per op
// name (HeldCalls), and placed once that entry comes, or at the end. So the
// tree has the whole read's nodes, calls and figures; its first-seen order
// (of tops, and of children with no recorded place) follows the forests'
// order, which is the whole read's on one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/entry_stack_pairs.h"
#include "analyze/module_tree.h"
#include "analyze/settled_calls.h"
#include "analyze/streamed_call_figures.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedModuleTree : public RecordStream {
 public:
  // head: the recording read once without its events (report.cpp's first
  // pass): its ops, frames, stacks and module names name the modules, and
  // it must outlive this. costs: the probe costs to compensate by (nullptr:
  // raw times). last_entry_stack, last_backward_stack: the event index of
  // the file's last ENTRY_STACKS and BACKWARD_STACKS pair (nullopt: none).
  // bounds: the first read's, for the GPU join (nullptr: a recording with
  // GPU activities is declined).
  StreamedModuleTree(const Recording& head, const ProbeCosts* costs, std::optional<uint64_t> last_entry_stack,
                     std::optional<uint64_t> last_backward_stack, const JoinBounds* bounds = nullptr);

  // Whether the tree of a recording with this head joins GPU records to
  // calls by their thread (CUPTI's: StreamedCallFigures), and so reads
  // JoinBounds::op_threads.
  static bool joins_by_thread(const Recording& head) { return head.cupti_shim.has_value(); }

  // Declines what build_module_tree would not read alike from a stream: a
  // recording without entry stacks, a system-wide one (its modules are per
  // process) but for one process's selection of it (the head this tree was
  // made for: analyze/chosen_processes_stream.h), --profile-memory (module
  // memory needs every module call) and GPU time without the join's bounds.
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override;
  void on_backward_stack(uint64_t event_index, uint32_t stack_id) override;
  void on_gpu_correlations(std::span<const GpuCorrelation> correlations) override;
  bool on_gpu_activities(std::span<const GpuActivity> activities) override;
  // The tree, once the read is done: build_module_tree(recording).
  ModuleTree finish() &&;

 private:
  // figures: the forest's, when the recording has GPU time (else nullptr).
  void place(const Timeline& forest, const CallFigures* figures);
  bool ready(uint64_t event_index) const {
    return entry_pairs_.known_through(event_index) && backward_pairs_.known_through(event_index);
  }
  // One held call into its thread's sums.
  void hold(uint32_t tid, const OpCall& call, bool outermost, bool folded, const ModuleCallFigures& figures);

  const Recording& head_;
  EntryStackPairs entry_pairs_;
  EntryStackPairs backward_pairs_;
  SettledCalls settled_;
  const bool gpu_;                              // the recording has GPU time (the CUPTI shim)
  std::optional<StreamedCallFigures> figures_;  // gpu_: the forests, joined
  ModuleTreeBuilder builder_;
  std::unordered_set<uint32_t> python_threads_;  // threads with an entry stack so far
  struct Held {
    HeldCalls calls;
    std::unordered_map<std::string, size_t> row_of;  // op name -> index in calls.rows
  };
  std::unordered_map<uint32_t, Held> held_;  // threads with calls held, none with a stack yet
  std::vector<uint32_t> held_order_;         // held_'s threads, in the order first held
  // place()'s working storage, kept from one forest to the next (a forest
  // can be thousands of calls): each call's entry stack, its node (nullopt:
  // held), the forest's tree and fold.
  std::vector<std::optional<uint32_t>> stacks_;
  std::vector<std::optional<size_t>> node_of_call_;
  ForestShape shape_;
};

}  // namespace gpuprof

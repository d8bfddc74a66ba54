// streamed_stack_sums.h: stack_sums() (stack_sums.h) of a recording read as
// a stream (record/record_stream.h), for report --folded (self_cpu_time):
// memory grows with the distinct stacks, threads and the calls of each
// thread's current outermost call tree, not with the events.
//
// A call's path needs its parent's path and torch's same-name fold
// (call_tree.h), which are settled once nothing that encloses it is open.
// So each thread's completed calls wait until the thread is at rest
// (TimelineBuilder::at_rest: no frame open, or only the step frame its STEP
// just opened), and are then placed as one forest by the same code as the
// whole read (build_call_tree, fold_same_name_calls, StackPaths::place_calls):
// a call lands on the node of the same path, with the same value, as in
// stack_sums() of the recording read whole. With --with-stack, a forest
// whose outermost calls need the Python stack of their ENTRY also waits
// for the ENTRY_STACKS pairs that name its events (they come after the
// events, in later chunks): until a pair of a later event has come, or the
// events are past the last pair of the file (the first pass says where).
//
// What waits is bounded by a thread's longest outermost call (a range or a
// call open for the whole run holds its thread's calls until it ends) and,
// with --with-stack, by the events between two pairs. Only the self-time
// metric: samples and GPU time read the recording whole (report.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "analyze/op_timeline.h"
#include "analyze/stack_paths.h"
#include "analyze/stack_sums.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedStackSums : public RecordStream {
 public:
  // head: the same recording read once without its events (report.cpp's
  // first pass): its ops, frames and stacks name the paths, and must
  // outlive this. costs: the probe costs to compensate by (nullptr: raw
  // times). last_entry_stack: the event index of the file's last
  // ENTRY_STACKS pair (nullopt: none).
  StreamedStackSums(const Recording& head, const ProbeCosts* costs, std::optional<uint64_t> last_entry_stack);

  // Declines what stack_sums() would not read alike from a stream: a
  // system-wide recording (its stacks are per process) and --profile-memory
  // (as the op table, read whole).
  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override;
  // The sums, once the read is done: stack_sums(recording, kSelfCpuTime)
  // but for the order of the stacks (parents still before children).
  StackSums finish() &&;

 private:
  // One thread's completed calls not placed yet, with what the fold needs
  // (CompletedCalls: indices count every call the builder completed).
  struct Pending {
    std::vector<OpCall> calls;
    std::vector<uint32_t> child_count;
    std::vector<int64_t> only_child;
    std::vector<uint64_t> index;
    // Moments the thread was at rest: (calls completed then, event index).
    std::vector<std::pair<uint64_t, uint64_t>> rests;
  };
  void note_rest(uint32_t tid, uint64_t event_index);
  void take_completed();
  bool pairs_known_through(uint64_t event_index) const;
  void place_settled(bool all);
  void place(Pending& pending, uint64_t calls_before);

  const Recording& head_;
  std::optional<ProbeCosts> costs_;
  bool with_stack_;
  std::optional<uint64_t> last_entry_stack_;
  std::optional<uint64_t> last_pair_seen_;
  StackPaths paths_;
  TimelineBuilder builder_;
  std::unordered_map<uint32_t, Pending> pending_;
  std::unordered_map<uint64_t, uint32_t> entry_stacks_;  // pairs of calls not placed yet
  std::vector<uint64_t> value_of_node_;
  uint64_t total_ = 0;
};

}  // namespace gpuprof

// streamed_aggregate.h: aggregate() (aggregator.h) of a recording read as a
// stream (record/record_stream.h), for report's plain op table: memory grows
// with the ops, threads and open calls, not with the events.
//
// It covers the table, grouped by input shape or stack or not, without
// memory or GPU columns to fill: wants() declines a recording made with
// --profile-memory, and a streaming read stops at GPU activities
// (record_stream.h); the caller then reads the recording whole and calls
// aggregate(). The Profile is the one aggregate() returns for the same
// recording, row for row.
//
// Grouped by input shape or stack, a call's row needs its entry's
// ENTRY_SHAPES or ENTRY_STACKS pair, which comes after its events, often
// chunks later: a call given to its row waits (with the entries of the
// same-name children it folded, whose pairs are then dropped) until the
// pairs up to its entry have come (entry_stack_pairs.h), in a list
// bounded by how far the pairs lag. The pairs come in entry order, so the
// calls that wait are those of the latest entries: the list is walked only
// when the earliest of them is known, and most of it goes then.
//
// Folding (torch's _remove_dup_nodes, call_tree.h) needs a call's only
// child when the call ends: calls end innermost first, so a call is held
// while it is the only child of a frame still open, and given to its row
// once a sibling ends (no folding then) or its parent ends (folded into it
// when the names match). Held calls are at most the open frames.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/entry_stack_pairs.h"
#include "analyze/op_timeline.h"
#include "analyze/profile.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

// How rows are grouped beyond their op (report --group-by-input-shape,
// --group-by-stack-n N), and where the pairs that say it end: the event
// index of the file's last ENTRY_SHAPES and ENTRY_STACKS pair (nullopt:
// none).
struct TableGrouping {
  bool by_input_shape = false;
  int by_stack_n = 0;
  std::optional<uint64_t> last_entry_shape;
  std::optional<uint64_t> last_entry_stack;
};

class StreamedAggregate : public RecordStream {
 public:
  // costs: the recording's probe costs to compensate by (nullptr: raw
  // times). They must be known before the events, so a first pass over the
  // file (report.cpp) reads them.
  StreamedAggregate(const ProbeCosts* costs, bool raw_times, const TableGrouping& grouping = {});

  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  void on_entry_shape(uint64_t event_index, uint32_t shape_id) override { shapes_.add(event_index, shape_id); }
  void on_entry_stack(uint64_t event_index, uint32_t stack_id) override { stacks_.add(event_index, stack_id); }
  // The Profile, once the read is done (recording: what it returned).
  Profile finish(const Recording& recording) &&;
  // Grouped: the calls waiting for their entries' pairs (for tests).
  size_t calls_waiting() const { return waiting_.size(); }

 private:
  // A call on its way to its row: its op and its self time with the
  // same-name children it folded.
  struct Folded {
    uint32_t op_id = 0;
    uint64_t total_ns = 0;
    uint64_t self_ns = 0;
    bool unwound = false;
    uint64_t entry_index = 0;
  };
  void take_calls();
  // To its row: now, or (grouped) once its entry's pairs are known.
  void count(const Folded& call);
  void add_to_row(const Folded& call, std::optional<uint32_t> shape_id, std::optional<uint32_t> stack_id);
  // Grouped: puts a call (counted: false, a folded child whose pairs are
  // only to drop) on the waiting list.
  void wait(const Folded& call, bool counted);
  // Grouped: the waiting calls whose pairs have all come.
  void count_known_pairs(bool at_end);
  bool grouped() const { return grouping_.by_input_shape || grouping_.by_stack_n > 0; }
  bool same_name(uint32_t a, uint32_t b) const;

  std::optional<ProbeCosts> costs_;
  bool raw_times_;
  std::optional<TimelineBuilder> builder_;  // made in wants(), with the costs
  CompletedCalls completed_;  // take_calls()'s, its storage kept from one chunk to the next
  const std::vector<OpInfo>* ops_ = nullptr;  // the read's, set in wants()
  std::unordered_map<uint64_t, Folded> held_;  // by call index: only children of open frames
  struct Sums {
    uint64_t calls = 0, total_ns = 0, self_ns = 0, unwound = 0;
  };
  std::vector<Sums> by_op_;  // by op id (grown as placeholders of lost ops appear)
  uint64_t self_total_ns_ = 0;
  // Grouped: the sums by (op id, shape id, stack id), the calls that wait
  // for their entries' pairs (folded away: pairs to drop, not a call to
  // count), in no order, and the earliest entry among them.
  const TableGrouping grouping_;
  EntryStackPairs shapes_;
  EntryStackPairs stacks_;
  using GroupKey = std::tuple<uint32_t, std::optional<uint32_t>, std::optional<uint32_t>>;  // op, shape, stack
  struct GroupKeyHash {
    size_t operator()(const GroupKey& key) const;
  };
  std::unordered_map<GroupKey, Sums, GroupKeyHash> by_group_;  // rows made in key order (finish)
  struct Waiting {
    Folded call;
    bool counted = true;
  };
  std::vector<Waiting> waiting_;
  uint64_t earliest_waiting_ = UINT64_MAX;
};

}  // namespace gpuprof

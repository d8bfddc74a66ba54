// streamed_aggregate.h: aggregate() (aggregator.h) of a recording read as a
// stream (record/record_stream.h), for report's plain op table: memory grows
// with the ops, threads and open calls, not with the events.
//
// It covers the table without grouping and without memory or GPU columns to
// fill: wants() declines a recording made with --profile-memory, and a
// streaming read stops at GPU activities (record_stream.h); the caller then
// reads the recording whole and calls aggregate(). The Profile is the one
// aggregate() returns for the same recording, row for row.
//
// Folding (torch's _remove_dup_nodes, call_tree.h) needs a call's only
// child when the call ends: calls end innermost first, so a call is held
// while it is the only child of a frame still open, and given to its row
// once a sibling ends (no folding then) or its parent ends (folded into it
// when the names match). Held calls are at most the open frames.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "analyze/op_timeline.h"
#include "analyze/profile.h"
#include "record/record_stream.h"
#include "record/recording.h"

namespace gpuprof {

class StreamedAggregate : public RecordStream {
 public:
  // costs: the recording's probe costs to compensate by (nullptr: raw
  // times). They must be known before the events, so a first pass over the
  // file (report.cpp) reads them.
  StreamedAggregate(const ProbeCosts* costs, bool raw_times);

  bool wants(const Recording& head) override;
  void on_events(std::span<const gp_event> events, uint64_t first) override;
  // The Profile, once the read is done (recording: what it returned).
  Profile finish(const Recording& recording) &&;

 private:
  // A call on its way to its row: its op and its self time with the
  // same-name children it folded.
  struct Folded {
    uint32_t op_id = 0;
    uint64_t total_ns = 0;
    uint64_t self_ns = 0;
    bool unwound = false;
  };
  void take_calls();
  void count(const Folded& call);
  bool same_name(uint32_t a, uint32_t b) const;

  std::optional<ProbeCosts> costs_;
  bool raw_times_;
  std::optional<TimelineBuilder> builder_;  // made in wants(), with the costs
  const std::vector<OpInfo>* ops_ = nullptr;  // the read's, set in wants()
  std::unordered_map<uint64_t, Folded> held_;  // by call index: only children of open frames
  struct Sums {
    uint64_t calls = 0, total_ns = 0, self_ns = 0, unwound = 0;
  };
  std::vector<Sums> by_op_;  // by op id (grown as placeholders of lost ops appear)
  uint64_t self_total_ns_ = 0;
};

}  // namespace gpuprof

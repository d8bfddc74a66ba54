// settled_calls.h: a recording's op calls, as its events stream by
// (record/record_stream.h), handed on one thread's settled forest at a time:
// what the streamed outputs that need a call's parent, its fold or its
// thread's start order (streamed_stack_sums.h, output/streamed_chrome_trace.h)
// build on.
//
// A call's parent and torch's same-name fold (call_tree.h) are settled once
// nothing that encloses it is open. So each thread's completed calls wait
// until the thread is at rest (TimelineBuilder::at_rest: no frame open, or
// only the step frame its STEP just opened) and are then handed on as one
// forest: a Timeline of that thread's calls completed before that moment,
// in completion order, whose child_count/only_child index the forest
// itself. build_call_tree and fold_same_name_calls of a forest give each of
// its calls the parent and fold that the whole timeline gives it, and its
// calls sorted by (start, depth) come in the whole thread's order (forests
// of a thread are disjoint in time, later ones later).
//
// What waits is bounded by a thread's longest outermost call (a range or a
// call open for the whole run holds its thread's calls until it ends), and
// by what the caller's `ready` holds back.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/op_timeline.h"
#include "op_tracer_abi.h"

namespace gpuprof {

class SettledCalls {
 public:
  // Each forest handed on is the sink's to keep (a sink that holds it
  // moves it).
  using Sink = std::function<void(Timeline&& forest)>;
  // costs: the probe costs to compensate by (nullptr: raw times); kept.
  explicit SettledCalls(const ProbeCosts* costs);
  SettledCalls(const SettledCalls&) = delete;
  SettledCalls& operator=(const SettledCalls&) = delete;

  // One chunk's events; `first`: the index of events[0] among all.
  void add(std::span<const gp_event> events, uint64_t first);
  // Hands each thread's calls settled at the latest moment `ready` accepts
  // (it is given the event index of the moment; it must accept every
  // earlier moment when it accepts one).
  void hand_settled(const std::function<bool(uint64_t)>& ready, const Sink& sink);
  // The same, `ready` also given the moment's timestamp (the event's
  // ts_ns): a stream that joins records stamped by time, such as GPU
  // correlations or allocator events (streamed_call_figures.h), waits
  // until those up to that moment are read.
  void hand_settled_at(const std::function<bool(uint64_t event_index, uint64_t ts_ns)>& ready, const Sink& sink);
  // The end of the events: what is still open stays open (a step still
  // open ends with its thread's last event), every call is handed on.
  // Returns the timeline's counters (its calls all handed on).
  Timeline finish(const Sink& sink) &&;
  // The threads in the order of their first completed call.
  const std::vector<uint32_t>& thread_order() const { return thread_order_; }
  // A forest the sink kept and is done with: its vectors, whose pages are
  // already there, hold the next forest handed on (or what stays pending).
  void reuse(Timeline&& spent);

 private:
  // One thread's completed calls not handed on yet, with what the fold
  // needs (CompletedCalls: indices count every call the builder completed).
  struct Pending {
    std::vector<OpCall> calls;
    std::vector<uint32_t> child_count;
    std::vector<int64_t> only_child;
    std::vector<uint64_t> index;
    // Moments the thread was at rest: calls completed then, the event's
    // index and timestamp.
    struct Rest {
      uint64_t completed = 0;
      uint64_t event_index = 0;
      uint64_t ts_ns = 0;
    };
    std::vector<Rest> rests;
  };
  void note_rest(uint32_t tid, uint64_t event_index, uint64_t ts_ns);
  void take_completed();
  void hand(Pending& pending, uint64_t calls_before, const Sink& sink);

  std::optional<ProbeCosts> costs_;
  TimelineBuilder builder_;
  CompletedCalls completed_;  // take_completed()'s, its storage kept from one chunk to the next
  std::unordered_map<uint32_t, Pending> pending_;
  std::vector<uint32_t> thread_order_;
  std::unordered_map<uint32_t, bool> seen_thread_;
  // The forest being handed on. A forest can be thousands of calls (a
  // thread's calls between two moments its pairs were all read): its calls
  // and child counts trade storage with its thread's pending ones (hand()),
  // and its vectors are reused, not made anew, when the sink does not keep
  // them or hands them back (reuse()).
  Timeline forest_;
};

}  // namespace gpuprof

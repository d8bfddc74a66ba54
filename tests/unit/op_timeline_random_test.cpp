// Invariants of build_timeline() on random event streams: plausible nesting
// mixed with exceptions, catches, lost entries and stray exits, on several
// interleaved threads. The exact-value tests are in op_timeline_test.cpp.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "analyze/op_timeline.h"
#include "probe_events.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

struct Generated {
  std::vector<gp_event> events;
  uint64_t entries = 0;
};

// Each thread keeps a model of its real stack so most exits match; the rest
// of the stream is what exceptions, attach and lost events produce.
Generated random_stream(uint32_t seed, size_t length) {
  struct ModelFrame { uint64_t sp; uint32_t op; };
  constexpr uint32_t kThreads = 3;
  constexpr uint64_t kStackTop = 10000;
  std::mt19937 rng(seed);
  auto chance = [&](double p) { return std::uniform_real_distribution<>(0, 1)(rng) < p; };
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };

  std::vector<std::vector<ModelFrame>> stacks(kThreads);
  Generated out;
  uint64_t ts = 0;
  for (size_t i = 0; i < length; ++i) {
    const uint32_t thread = static_cast<uint32_t>(pick(0, kThreads - 1));
    const uint32_t tid = 10 + thread;
    std::vector<ModelFrame>& stack = stacks[thread];
    auto pop_while_sp_at_most = [&](uint64_t sp) {
      while (!stack.empty() && stack.back().sp <= sp) stack.pop_back();
    };
    auto random_sp = [&] { return kStackTop - 100 * pick(0, 12); };
    ts += pick(1, 10);  // strictly increasing on every thread
    const double action = std::uniform_real_distribution<>(0, 1)(rng);
    if (action < 0.45) {
      const uint64_t sp = !stack.empty() && chance(0.8) ? stack.back().sp - 100 * pick(1, 2) : random_sp();
      const uint32_t op = static_cast<uint32_t>(pick(0, 5));
      pop_while_sp_at_most(sp);
      stack.push_back({sp, op});
      out.events.push_back(op_entry(ts, sp, op, tid));
      ++out.entries;
    } else if (action < 0.85) {
      if (!stack.empty() && chance(0.85)) {
        out.events.push_back(op_exit(ts, stack.back().sp, stack.back().op, tid));
        stack.pop_back();
      } else {
        const uint64_t sp = random_sp();
        pop_while_sp_at_most(sp - 1);
        out.events.push_back(op_exit(ts, sp, static_cast<uint32_t>(pick(0, 5)), tid));
      }
    } else {
      const uint64_t sp = random_sp();
      pop_while_sp_at_most(sp);
      out.events.push_back(catch_at(ts, sp, tid));
    }
  }
  return out;
}

void expect_consistent(const Generated& input, const Timeline& t) {
  EXPECT_EQ(t.self_time_clamped, 0u);
  EXPECT_EQ(t.events_unknown_kind, 0u);
  // Every entry ends up as exactly one call or one frame open at the end.
  EXPECT_EQ(t.calls.size() + t.counters.calls_open_at_end, input.entries);

  uint64_t unwound = 0;
  for (const OpCall& call : t.calls) {
    ASSERT_LE(call.start_ns, call.end_ns);
    unwound += call.unwound;
  }
  EXPECT_EQ(t.counters.calls_unwound, unwound);

  for (const OpCall& outer : t.calls) {
    uint64_t children_ns = 0;
    for (const OpCall& inner : t.calls) {
      if (&inner == &outer || inner.tid != outer.tid) continue;
      const bool disjoint = inner.end_ns < outer.start_ns || outer.end_ns < inner.start_ns;
      const bool inside = outer.start_ns <= inner.start_ns && inner.end_ns <= outer.end_ns;
      const bool around = inner.start_ns <= outer.start_ns && outer.end_ns <= inner.end_ns;
      ASSERT_TRUE(disjoint || inside || around) << "calls on one thread overlap without nesting";
      if (inside && !around) {
        ASSERT_GT(inner.depth, outer.depth);
      }
      // Depth-d frames of a thread never overlap, so a depth d+1 call that
      // starts inside this one is its child.
      if (inner.depth == outer.depth + 1 && inside) children_ns += inner.duration_ns();
    }
    ASSERT_EQ(outer.self_ns, outer.duration_ns() - children_ns);
  }
}

TEST(OpTimelineRandom, InvariantsHoldOnRandomStreams) {
  uint64_t unwound = 0, without_entry = 0, open = 0;
  for (uint32_t seed = 1; seed <= 60; ++seed) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const Generated input = random_stream(seed, 500);
    const Timeline t = build_timeline(input.events);
    expect_consistent(input, t);
    unwound += t.counters.calls_unwound;
    without_entry += t.counters.exits_without_entry;
    open += t.counters.calls_open_at_end;
  }
  // The streams must actually exercise the unusual paths.
  EXPECT_GT(unwound, 100u);
  EXPECT_GT(without_entry, 100u);
  EXPECT_GT(open, 10u);
}

}  // namespace
}  // namespace gpuprof

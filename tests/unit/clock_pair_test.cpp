// The CLOCK chunk's pair of instants: the realtime read with the tightest
// monotonic bracket, placed at the bracket's midpoint (base/clock_pair.h).
#include "base/clock_pair.h"

#include <gtest/gtest.h>

#include <deque>

#include "base/session_loop.h"

namespace gpuprof {
namespace {

// Scripted clock reads: each try is (monotonic before, realtime, monotonic after).
struct ScriptedClocks {
  std::deque<uint64_t> monotonic, realtime;
  uint64_t operator()(clockid_t clock) {
    auto& reads = clock == CLOCK_MONOTONIC ? monotonic : realtime;
    EXPECT_FALSE(reads.empty()) << "more reads than scripted";
    const uint64_t value = reads.front();
    reads.pop_front();
    return value;
  }
};

TEST(ClockPair, TakesTheTightestBracketsMidpoint) {
  // Try 0 was preempted between its reads (40 us), try 2 too; try 1 ran through.
  ScriptedClocks clocks{.monotonic = {1'000, 41'000, 50'000, 50'060, 60'000, 160'000},
                        .realtime = {9'000'500, 9'049'530, 9'060'000}};
  const ClockPair pair = read_clock_pair(std::ref(clocks), 3);
  EXPECT_EQ(pair.monotonic_ns, 50'030u);
  EXPECT_EQ(pair.realtime_ns, 9'049'530u);
  EXPECT_EQ(pair.bracket_ns, 60u);
  EXPECT_TRUE(clocks.monotonic.empty() && clocks.realtime.empty());
}

TEST(ClockPair, TheFirstOfEqualBracketsStays) {
  ScriptedClocks clocks{.monotonic = {100, 200, 300, 400}, .realtime = {7'000, 7'250}};
  const ClockPair pair = read_clock_pair(std::ref(clocks), 2);
  EXPECT_EQ(pair.monotonic_ns, 150u);
  EXPECT_EQ(pair.realtime_ns, 7'000u);
}

TEST(ClockPair, TheSystemsPairBracketsItsRealtimeRead) {
  // A realtime read between two monotonic reads of the system's clocks:
  // the pair's moment lies inside them and its realtime near this one.
  const uint64_t before = clock_ns(CLOCK_MONOTONIC);
  const ClockPair pair = clock_pair_now();
  const uint64_t after = clock_ns(CLOCK_MONOTONIC);
  EXPECT_LE(before, pair.monotonic_ns);
  EXPECT_LE(pair.monotonic_ns, after);
  EXPECT_LE(pair.bracket_ns, after - before);
}

}  // namespace
}  // namespace gpuprof

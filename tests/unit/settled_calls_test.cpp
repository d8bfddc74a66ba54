// SettledCalls hands on each thread's calls completed up to the latest
// moment at rest that the caller's `ready` accepts (analyze/settled_calls.h):
// exactly those, whichever moment that is, and it finds the moment by
// asking `ready` about a few moments, not each of the hundreds that can
// wait for their pairs.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "analyze/settled_calls.h"
#include "probe_events.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// `outer` outermost calls a(b()) one after the other on one thread: four
// events each, the thread at rest after each a's EXIT (event 4k + 3).
std::vector<gp_event> outer_calls(size_t outer) {
  std::vector<gp_event> events;
  for (uint64_t k = 0; k < outer; k++) {
    const uint64_t ts = 1000 + 100 * k;
    events.push_back(op_entry(ts, 1000, 0));
    events.push_back(op_entry(ts + 10, 900, 1));
    events.push_back(op_exit(ts + 20, 900, 1));
    events.push_back(op_exit(ts + 30, 1000, 0));
  }
  return events;
}

TEST(SettledCalls, HandsOnTheCallsUpToTheLatestMomentReadyAccepts) {
  const std::vector<gp_event> events = outer_calls(10);
  SettledCalls settled(nullptr);
  settled.add(events, 0);
  std::vector<Timeline> forests;
  const auto keep = [&](Timeline&& forest) { forests.push_back(std::move(forest)); };
  // Nothing accepted: nothing handed on.
  settled.hand_settled([](uint64_t) { return false; }, keep);
  EXPECT_TRUE(forests.empty());
  // Up to event 23 (the sixth a's EXIT) and one past it: six a and six b.
  for (uint64_t through : {uint64_t{23}, uint64_t{24}}) {
    SCOPED_TRACE(testing::Message() << "through event " << through);
    SettledCalls again(nullptr);
    again.add(events, 0);
    forests.clear();
    again.hand_settled([&](uint64_t event_index) { return event_index <= through; }, keep);
    ASSERT_EQ(forests.size(), 1u);
    ASSERT_EQ(forests[0].calls.size(), 12u);
    EXPECT_EQ(forests[0].calls.back().entry_index, 20u);  // the sixth a
    // The rest when all is accepted: the four outer calls after.
    forests.clear();
    again.hand_settled([](uint64_t) { return true; }, keep);
    ASSERT_EQ(forests.size(), 1u);
    EXPECT_EQ(forests[0].calls.size(), 8u);
    EXPECT_EQ(forests[0].calls.front().entry_index, 25u);  // the seventh b
  }
  // Accepting every moment hands on all twenty calls at once.
  forests.clear();
  settled.hand_settled([](uint64_t) { return true; }, keep);
  ASSERT_EQ(forests.size(), 1u);
  EXPECT_EQ(forests[0].calls.size(), 20u);
}

TEST(SettledCalls, FindsTheMomentByAskingAboutAFew) {
  const std::vector<gp_event> events = outer_calls(1000);  // 1000 moments at rest
  SettledCalls settled(nullptr);
  settled.add(events, 0);
  size_t asked = 0;
  std::vector<Timeline> forests;
  settled.hand_settled(
      [&](uint64_t event_index) {
        asked++;
        return event_index <= 4 * 700 + 3;
      },
      [&](Timeline&& forest) { forests.push_back(std::move(forest)); });
  ASSERT_EQ(forests.size(), 1u);
  EXPECT_EQ(forests[0].calls.size(), 2u * 701);
  EXPECT_LE(asked, 12u);  // a bisection of 1000: 10 or 11
}

}  // namespace
}  // namespace gpuprof

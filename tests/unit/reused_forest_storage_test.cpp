// A streamed read reuses one forest's storage for the next (settled_calls.h
// reuse(), build_call_tree's second form, SameNameFolder, the builder's
// take_completed into one CompletedCalls): what comes out
// must be what fresh storage gives, whatever the earlier, larger or
// smaller, forests left in it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "analyze/settled_calls.h"
#include "random_event_streams.h"

namespace gpuprof {
namespace {

using test::ops_of_the_streams;
using test::random_events;

TEST(ReusedForestStorage, CallTreeAndFoldEqualFreshOnesAfterLargerAndSmallerTimelines) {
  const std::vector<OpInfo> ops = ops_of_the_streams();
  CallTree tree;
  SameNameFolder folder;
  size_t grew = 0, shrank = 0, last_threads = 0;
  // Lengths that go up and down, so reused storage is both too small and
  // too large (stale entries past the new end), and thread counts change.
  const size_t lengths[] = {4000, 30, 900, 5, 2500, 2500, 12, 600};
  uint32_t seed = 1;
  for (const size_t length : lengths) {
    SCOPED_TRACE(testing::Message() << "seed " << seed << ", length " << length);
    const Timeline timeline = build_timeline(random_events(seed++, length));
    build_call_tree(timeline, tree);
    const CallTree fresh = build_call_tree(timeline);
    EXPECT_EQ(tree.parent, fresh.parent);
    EXPECT_EQ(tree.threads, fresh.threads);
    EXPECT_EQ(folder.fold(timeline, ops), fold_same_name_calls(timeline, ops));
    if (tree.threads.size() > last_threads) grew++;
    if (tree.threads.size() < last_threads) shrank++;
    last_threads = tree.threads.size();
  }
  // The thread lists themselves were reused both ways too.
  EXPECT_GT(grew, 0u);
  EXPECT_GT(shrank, 0u);
}

// Every forest SettledCalls hands on, with the sink handing each back for
// reuse as StreamedCallFigures does, equals the one a SettledCalls that
// never reuses hands on.
TEST(ReusedForestStorage, SettledForestsHandedBackEqualFreshOnes) {
  const std::vector<gp_event> events = random_events(21, 20000);
  SettledCalls reusing(nullptr), fresh(nullptr);
  std::vector<Timeline> reused_forests, fresh_forests;
  auto always = [](uint64_t) { return true; };
  size_t handed_back = 0;
  const size_t chunk = 700;
  for (size_t first = 0; first < events.size(); first += chunk) {
    const std::span<const gp_event> part =
        std::span(events).subspan(first, std::min(chunk, events.size() - first));
    reusing.add(part, first);
    fresh.add(part, first);
    std::vector<Timeline> taken;
    reusing.hand_settled(always, [&](Timeline&& forest) { taken.push_back(std::move(forest)); });
    for (Timeline& forest : taken) {
      reused_forests.push_back(forest);  // a copy: the original's storage goes back
      reusing.reuse(std::move(forest));
      handed_back++;
    }
    fresh.hand_settled(always, [&](Timeline&& forest) { fresh_forests.push_back(std::move(forest)); });
  }
  std::move(reusing).finish([&](Timeline&& forest) { reused_forests.push_back(std::move(forest)); });
  std::move(fresh).finish([&](Timeline&& forest) { fresh_forests.push_back(std::move(forest)); });
  ASSERT_EQ(reused_forests.size(), fresh_forests.size());
  ASSERT_GT(handed_back, 10u);  // the stream must have been handed on in many forests
  for (size_t k = 0; k < fresh_forests.size(); k++) {
    SCOPED_TRACE(testing::Message() << "forest " << k);
    EXPECT_EQ(reused_forests[k].calls, fresh_forests[k].calls);
    EXPECT_EQ(reused_forests[k].child_count, fresh_forests[k].child_count);
    EXPECT_EQ(reused_forests[k].only_child, fresh_forests[k].only_child);
  }
}

// TimelineBuilder::take_completed into one CompletedCalls, chunk after
// chunk (as SettledCalls takes them), gives what a fresh take gives: the
// builder fills the vectors it swapped out, emptied.
TEST(ReusedForestStorage, CompletedCallsTakenIntoOneStorageEqualFreshTakes) {
  const std::vector<gp_event> events = random_events(33, 20000);
  TimelineBuilder reusing(nullptr, /*sibling_links=*/true), fresh(nullptr, /*sibling_links=*/true);
  CompletedCalls kept;
  size_t takes_with_calls = 0;
  const size_t chunks[] = {3000, 40, 1500, 7, 2200};  // up and down: kept storage too large and too small
  size_t next = 0;
  for (size_t k = 0; next < events.size(); k++) {
    const size_t end = std::min(events.size(), next + chunks[k % std::size(chunks)]);
    for (size_t i = next; i < end; i++) {
      reusing.add(events[i], i);
      fresh.add(events[i], i);
    }
    next = end;
    reusing.take_completed(kept);
    const CompletedCalls taken = fresh.take_completed();
    SCOPED_TRACE(testing::Message() << "take " << k);
    EXPECT_EQ(kept.first, taken.first);
    EXPECT_EQ(kept.calls, taken.calls);
    EXPECT_EQ(kept.child_count, taken.child_count);
    EXPECT_EQ(kept.only_child, taken.only_child);
    EXPECT_EQ(kept.siblings, taken.siblings);
    EXPECT_EQ(kept.previous_sibling, taken.previous_sibling);
    if (!taken.calls.empty()) takes_with_calls++;
  }
  EXPECT_GT(takes_with_calls, 10u);
}

}  // namespace
}  // namespace gpuprof

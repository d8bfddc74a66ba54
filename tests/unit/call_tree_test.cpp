// build_call_tree puts each thread's calls parents first, by (start, depth,
// completion order), and gives each call its innermost enclosing call. It
// takes that order from the nesting (Timeline::child_count) in linear time
// where the nesting agrees with the timestamps, and sorts where it does
// not (call_tree.cpp): either way the order and the parents must be those
// of the sort, checked here against a plain sort and sweep.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "probe_events.h"
#include "random_event_streams.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// The reference: each thread's calls sorted, then swept for parents.
CallTree sorted_tree(const Timeline& timeline) {
  const auto& calls = timeline.calls;
  std::map<uint32_t, std::vector<size_t>> by_tid;
  for (size_t i = 0; i < calls.size(); i++) by_tid[calls[i].tid].push_back(i);
  CallTree tree;
  tree.parent.assign(calls.size(), -1);
  for (auto& [tid, ids] : by_tid) {
    std::sort(ids.begin(), ids.end(), [&](size_t a, size_t b) {
      if (calls[a].start_ns != calls[b].start_ns) return calls[a].start_ns < calls[b].start_ns;
      if (calls[a].depth != calls[b].depth) return calls[a].depth < calls[b].depth;
      return a < b;
    });
    std::vector<size_t> open;
    for (size_t id : ids) {
      while (!open.empty() && calls[open.back()].end_ns < calls[id].start_ns) open.pop_back();
      while (!open.empty() && calls[open.back()].depth >= calls[id].depth) open.pop_back();
      tree.parent[id] = open.empty() ? -1 : static_cast<int64_t>(open.back());
      open.push_back(id);
    }
    tree.threads.push_back(ids);
  }
  return tree;
}

// The tree's thread lists by their first call's thread, for comparing
// (build_call_tree lists threads in no particular order).
std::map<uint32_t, std::vector<size_t>> lists_by_tid(const Timeline& timeline, const CallTree& tree) {
  std::map<uint32_t, std::vector<size_t>> lists;
  for (const std::vector<size_t>& ids : tree.threads) {
    if (ids.empty()) continue;
    lists[timeline.calls[ids.front()].tid] = ids;
  }
  return lists;
}

void expect_sorted_tree(const Timeline& timeline) {
  const CallTree tree = build_call_tree(timeline);
  const CallTree expected = sorted_tree(timeline);
  EXPECT_EQ(lists_by_tid(timeline, tree), lists_by_tid(timeline, expected));
  EXPECT_EQ(tree.parent, expected.parent);
}

// Nesting several levels deep on three interleaved threads, with
// exceptions, lost entries and stray exits (random_event_streams.h).
TEST(CallTree, RandomNestingComesOutAsTheSortPutsIt) {
  for (uint32_t seed = 1; seed <= 40; seed++) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    const Timeline timeline = build_timeline(random_events(seed, 3000));
    ASSERT_FALSE(timeline.calls.empty());
    expect_sorted_tree(timeline);
  }
}

// One thread: a( b( c() ) d() ) e(): nested, so completion order (c b d a
// e) is not parents first; and siblings and a parent and child that start
// at the same timestamp (ties go by depth, then completion order).
TEST(CallTree, NestedCallsAndTiesComeOutParentsFirst) {
  const std::vector<gp_event> events = {
      op_entry(100, 1000, 0), op_entry(100, 900, 1), op_entry(110, 800, 2), op_exit(120, 800, 2),
      op_exit(130, 900, 1),   op_entry(130, 900, 3), op_exit(130, 900, 3),  op_entry(130, 900, 4),
      op_exit(140, 900, 4),   op_exit(150, 1000, 0), op_entry(150, 1000, 5), op_exit(160, 1000, 5),
  };
  const Timeline timeline = build_timeline(events);
  ASSERT_EQ(timeline.calls.size(), 6u);
  const CallTree tree = build_call_tree(timeline);
  ASSERT_EQ(tree.threads.size(), 1u);
  std::vector<uint32_t> ops;
  for (size_t id : tree.threads[0]) ops.push_back(timeline.calls[id].op_id);
  EXPECT_EQ(ops, (std::vector<uint32_t>{0, 1, 2, 3, 4, 5}));
  expect_sorted_tree(timeline);
}

// Timestamps that disagree with the nesting (a child stamped before its
// parent, as a clock step or a damaged file gives), and child counts that
// make no forest: the order is the sort's all the same.
TEST(CallTree, NestingThatDisagreesWithTheTimestampsIsSorted) {
  for (uint32_t seed = 1; seed <= 20; seed++) {
    SCOPED_TRACE(testing::Message() << "seed " << seed);
    Timeline timeline = build_timeline(random_events(seed, 2000));
    // A nested call moved before its parent's start, and a few child
    // counts raised past what precedes them.
    size_t moved = 0;
    for (size_t i = 0; i < timeline.calls.size() && moved < 3; i++) {
      if (timeline.child_count[i] == 0 || i == 0) continue;
      OpCall& child = timeline.calls[i - 1];
      if (child.tid != timeline.calls[i].tid || child.start_ns < 5) continue;
      child.start_ns = timeline.calls[i].start_ns > 3 ? timeline.calls[i].start_ns - 3 : 0;
      moved++;
    }
    ASSERT_GT(moved, 0u);
    expect_sorted_tree(timeline);
    timeline.child_count[timeline.calls.size() / 2] += 1000;
    timeline.child_count[0] += 1;
    expect_sorted_tree(timeline);
  }
}

}  // namespace
}  // namespace gpuprof

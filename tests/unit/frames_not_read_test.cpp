// frames_not_read_test.cpp: the frames that stand for the Python frames a
// deep stack leaves out (record/frames_not_read.h), as the sessions put them
// in the recorded stacks and as folded stacks, the Source Location column
// and the stack counts show them.
#include "record/frames_not_read.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "abi_common.h"
#include "output/folded_stacks.h"
#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using Stack = std::vector<std::string>;  // a Source Location, innermost first

// The recorded stack (outermost first) of a walk of `depth` frames named
// f<i> (innermost first), as the sessions build it.
std::vector<std::string> recorded(PythonStackCut cut, uint32_t depth) {
  std::vector<std::string> stack;
  const bool whole = cut.outermost_first(
      depth, [](uint32_t i) { return "f" + std::to_string(i); }, [](std::string marker) { return marker; },
      [&](std::string frame) {
        stack.push_back(std::move(frame));
        return true;
      });
  EXPECT_TRUE(whole);
  return stack;
}

std::vector<std::string> walk_frames(uint32_t from, uint32_t to_inclusive_down) {
  std::vector<std::string> names;
  for (uint32_t i = from + 1; i-- > to_inclusive_down;) names.push_back("f" + std::to_string(i));
  return names;
}

TEST(FramesNotRead, TheMarkerSitsBetweenTheOutermostAndTheInnermostFramesKept) {
  static_assert(GP_PY_INNER_FRAMES == 64 && GP_MAX_PY_FRAMES == 128);
  // A stack of 203 frames: the walk kept 64 innermost (f0..f63) and 64
  // outermost (f64..f127, the root last), 75 not read between.
  const PythonStackCut cut = PythonStackCut::from_event(75);
  EXPECT_TRUE(cut.cut());
  std::vector<std::string> expected = walk_frames(127, 64);  // the root first
  expected.push_back("[75 frames not read]");
  for (const std::string& f : walk_frames(63, 0)) expected.push_back(f);
  EXPECT_THAT(recorded(cut, 128), ElementsAreArray(expected));
}

TEST(FramesNotRead, AStackThatFitsHasNoMarker) {
  const PythonStackCut cut = PythonStackCut::from_event(0);
  EXPECT_FALSE(cut.cut());
  EXPECT_THAT(recorded(cut, 128), ElementsAreArray(walk_frames(127, 0)));
  EXPECT_THAT(recorded(cut, 3), ElementsAre("f2", "f1", "f0"));
}

TEST(FramesNotRead, AWalkThatStoppedBeforeTheRootSaysSoOutermost) {
  const PythonStackCut cut = PythonStackCut::from_event(GP_PY_ROOT_NOT_REACHED | 1900);
  EXPECT_TRUE(cut.root_not_reached);
  EXPECT_EQ(cut.not_read, 1900u);
  const std::vector<std::string> stack = recorded(cut, 128);
  ASSERT_EQ(stack.size(), 130u);
  EXPECT_EQ(stack[0], "[outer frames not read]");
  EXPECT_EQ(stack[1], "f127");
  EXPECT_EQ(stack[65], "[1900 frames not read]");
  EXPECT_EQ(stack[129], "f0");
  // Stopped in the innermost frames (a frame it could not read): nothing
  // between, only the outermost marker.
  EXPECT_THAT(recorded(PythonStackCut::from_event(GP_PY_ROOT_NOT_REACHED), 2),
              ElementsAre("[outer frames not read]", "f1", "f0"));
}

TEST(FramesNotRead, AFailingNameStopsTheStack) {
  std::vector<int> pushed;
  const bool whole = PythonStackCut::from_event(5).outermost_first(
      128, [](uint32_t i) { return static_cast<int>(i); }, [](const std::string&) { return -1; },
      [&](int id) {
        if (id < 0) return false;
        pushed.push_back(id);
        return true;
      });
  EXPECT_FALSE(whole);
  EXPECT_EQ(pushed.size(), 64u);  // the outermost 64, up to the marker
}

TEST(FramesNotRead, MarkersAreKnownByTheirNamesOnly) {
  EXPECT_EQ(frames_not_read_frame(75), "[75 frames not read]");
  EXPECT_TRUE(is_frames_not_read_frame("[75 frames not read]"));
  EXPECT_TRUE(is_frames_not_read_frame("[outer frames not read]"));
  for (const char* other : {"[unknown Python frame]", "[ frames not read]", "[7x frames not read]",
                            "train.py(3): [75 frames not read]", "[75 frames not read] ", "[unknown]"})
    EXPECT_FALSE(is_frames_not_read_frame(other)) << other;
}

// A recording with two cut stacks (one a sample's, one an op entry's) and
// an uncut one.
Recording recording_with_cuts() {
  enum : uint32_t { kMm };
  Recording r = recording_of({op("aten::mm")}, {op_entry(10'000, 1000, kMm), op_exit(20'000, 1000, kMm),
                                                op_entry(30'000, 1000, kMm), op_exit(35'000, 1000, kMm)});
  r.options.with_stack = true;
  r.options.sample_hz = 99;
  r.sample_frames = {"deep.py(1): <module>", frames_not_read_frame(75), "deep.py(9): spin", "libc.so.6!read"};
  r.sample_stacks = {{0, 1, 2}, {0, 2}};
  r.entry_stacks = {{0, 0}, {2, 1}};
  r.samples = {CpuSample{.ts_ns = 15'000, .tid = kTid, .frame_id = 3, .python_stack = 0},
               CpuSample{.ts_ns = 16'000, .tid = kTid, .frame_id = 3, .python_stack = 1},
               CpuSample{.ts_ns = 17'000, .tid = kTid, .frame_id = 3, .python_stack = 0},
               CpuSample{.ts_ns = 18'000, .tid = kTid + 1, .frame_id = 3}};
  return r;
}

TEST(FramesNotRead, CutStacksAreCountedAndSaid) {
  const StackCuts cuts = count_stack_cuts(recording_with_cuts());
  EXPECT_EQ(cuts.samples, 3u);  // with a Python stack
  EXPECT_EQ(cuts.samples_cut, 2u);
  EXPECT_EQ(cuts.entries, 2u);
  EXPECT_EQ(cuts.entries_cut, 1u);
  EXPECT_EQ(stack_cuts_note(cuts),
            "gpuprof: 2 of 3 CPU samples and 1 of 2 op calls have Python stacks deeper than the 128 frames "
            "read: their innermost 64 and outermost 64 frames are kept, a frame [N frames not read] stands for "
            "those between (docs/stacks.md)\n");
  EXPECT_EQ(stack_cuts_note({.samples = 3, .entries = 2}), "");
  EXPECT_EQ(stack_cuts_note({.entries = 4, .entries_cut = 4}),
            "gpuprof: 4 of 4 op calls have Python stacks deeper than the 128 frames read: their innermost 64 "
            "and outermost 64 frames are kept, a frame [N frames not read] stands for those between "
            "(docs/stacks.md)\n");
}

TEST(FramesNotRead, FoldedStacksAndTheSourceLocationShowTheMarker) {
  const Recording r = recording_with_cuts();
  std::map<std::string, uint64_t> samples;
  for (const FoldedStack& s : folded_stacks(r, FoldedMetric::kSamples).stacks) samples[s.stack] = s.value;
  EXPECT_EQ(samples, (std::map<std::string, uint64_t>{
                         {"deep.py(1):_<module>;[75_frames_not_read];deep.py(9):_spin;aten::mm;libc.so.6!read", 2},
                         {"deep.py(1):_<module>;deep.py(9):_spin;aten::mm;libc.so.6!read", 1},
                         {"libc.so.6!read", 1},  // another thread, outside any op
                     }));
  std::map<std::string, uint64_t> self_time;
  for (const FoldedStack& s : folded_stacks(r, FoldedMetric::kSelfCpuTime, true).stacks) self_time[s.stack] = s.value;
  EXPECT_EQ(self_time, (std::map<std::string, uint64_t>{
                           {"deep.py(1):_<module>;[75_frames_not_read];deep.py(9):_spin;aten::mm", 10},
                           {"deep.py(1):_<module>;deep.py(9):_spin;aten::mm", 5},
                       }));
  const Profile p = aggregate(r, {.group_by_stack_n = 5, .raw_times = true});
  ASSERT_EQ(p.rows.size(), 2u);
  EXPECT_EQ(p.rows[0].stack, (Stack{"deep.py(9): spin", "[75 frames not read]", "deep.py(1): <module>"}));
  EXPECT_EQ(p.rows[1].stack, (Stack{"deep.py(9): spin", "deep.py(1): <module>"}));
}

}  // namespace
}  // namespace gpuprof

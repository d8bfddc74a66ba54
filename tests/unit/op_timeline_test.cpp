// Tests of build_timeline(): nesting, exceptions, attach/stop edges, threads.
//
// Stack pointers are small hand-picked numbers: the outermost call of a
// thread at 1000, each nesting level 100 lower (stacks grow down).
#include "analyze/op_timeline.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <vector>

#include "probe_events.h"

namespace gpuprof {

void PrintTo(const OpCall& c, std::ostream* os) {
  *os << "{tid " << c.tid << " op " << c.op_id << " [" << c.start_ns << ", " << c.end_ns
      << "] self " << c.self_ns << " depth " << c.depth << (c.unwound ? " unwound}" : "}");
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using namespace ::gpuprof::test;

// Expected calls: one that returned through its `ret`, one that was unwound.
OpCall returned(uint32_t op, uint64_t start, uint64_t end, uint64_t self, uint32_t depth,
                uint32_t tid = kTid) {
  return OpCall{.tid = tid, .op_id = op, .start_ns = start, .end_ns = end, .self_ns = self,
                .depth = depth, .unwound = false};
}
OpCall unwound(uint32_t op, uint64_t start, uint64_t end, uint64_t self, uint32_t depth,
               uint32_t tid = kTid) {
  OpCall call = returned(op, start, end, self, depth, tid);
  call.unwound = true;
  return call;
}

// build_timeline() plus the checks every well-ordered input must pass.
Timeline build(const std::vector<gp_event>& events) {
  Timeline timeline = build_timeline(events);
  uint64_t unwound_seen = 0;
  for (OpCall& call : timeline.calls) {
    // Each call points at its own ENTRY; the expectations below leave the
    // index out, so it is checked here and cleared.
    EXPECT_LT(call.entry_index, events.size());
    if (call.entry_index < events.size()) {
      const gp_event& entry = events[call.entry_index];
      EXPECT_TRUE(entry.kind == GP_EV_OP_ENTRY || entry.kind == GP_EV_RANGE_BEGIN) << entry.kind;
      EXPECT_EQ(entry.op_id, call.op_id);
      EXPECT_EQ(entry.ts_ns, call.start_ns);
      EXPECT_EQ(entry.tid, call.tid);
    }
    call.entry_index = 0;
    EXPECT_LE(call.start_ns, call.end_ns);
    EXPECT_LE(call.self_ns, call.duration_ns());
    unwound_seen += call.unwound;
  }
  EXPECT_EQ(timeline.counters.calls_unwound, unwound_seen);
  EXPECT_EQ(timeline.self_time_clamped, 0u) << "children outlasted their parent";
  EXPECT_EQ(timeline.events_unknown_kind, 0u);
  return timeline;
}

enum ConvOps : uint32_t { kConv2d, kConvolution, kUnderscoreConvolution, kMkldnnConvolution };
enum Ops : uint32_t { kP, kA, kB, kC, kD, kE };

TEST(OpTimeline, EmptyInputHasNoCallsAndNoThreads) {
  Timeline t = build({});
  EXPECT_THAT(t.calls, IsEmpty());
  EXPECT_EQ(t.threads, 0u);
}

TEST(OpTimeline, SimpleNestingGivesDepthAndSelfTime) {
  Timeline t = build({
      op_entry(10, 1000, kConv2d),
      op_entry(20, 900, kConvolution),
      op_entry(30, 800, kUnderscoreConvolution),
      op_entry(40, 700, kMkldnnConvolution),
      op_exit(70, 700, kMkldnnConvolution),
      op_exit(80, 800, kUnderscoreConvolution),
      op_exit(90, 900, kConvolution),
      op_exit(100, 1000, kConv2d),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kMkldnnConvolution, 40, 70, 30, 3),
                                   returned(kUnderscoreConvolution, 30, 80, 20, 2),
                                   returned(kConvolution, 20, 90, 20, 1),
                                   returned(kConv2d, 10, 100, 20, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 0u);
  EXPECT_EQ(t.counters.exits_without_entry, 0u);
  EXPECT_EQ(t.counters.calls_open_at_end, 0u);
  EXPECT_EQ(t.threads, 1u);
}

TEST(OpTimeline, SiblingCallsShareTheirCallersSp) {
  Timeline t = build({
      op_entry(0, 1000, kP),
      op_entry(10, 900, kA), op_exit(30, 900, kA),
      op_entry(40, 900, kB), op_exit(70, 900, kB),
      op_exit(100, 1000, kP),
      op_entry(110, 1000, kP), op_exit(120, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 10, 30, 20, 1), returned(kB, 40, 70, 30, 1),
                                   returned(kP, 0, 100, 50, 0), returned(kP, 110, 120, 10, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 0u);
}

TEST(OpTimeline, RecursionOfOneOpNestsByStackPointer) {
  Timeline t = build({
      op_entry(0, 1000, kA), op_entry(10, 900, kA), op_entry(20, 800, kA),
      op_exit(50, 800, kA), op_exit(80, 900, kA), op_exit(100, 1000, kA),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 20, 50, 30, 2), returned(kA, 10, 80, 40, 1),
                                   returned(kA, 0, 100, 30, 0)));
}

TEST(OpTimeline, ExceptionThroughOneFrameIsRevealedByTheNextEntry) {
  // A throws after B returned; P catches (catch not seen) and calls C.
  Timeline t = build({
      op_entry(0, 1000, kP), op_entry(10, 900, kA),
      op_entry(20, 800, kB), op_exit(30, 800, kB),
      op_entry(50, 900, kC), op_exit(60, 900, kC),
      op_exit(100, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 20, 30, 10, 2),
                                   unwound(kA, 10, 30, 10, 1),  // ends at B's exit, a lower bound
                                   returned(kC, 50, 60, 10, 1),
                                   returned(kP, 0, 100, 70, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 1u);
}

TEST(OpTimeline, ExceptionThroughSeveralFramesIsRevealedByTheNextEntry) {
  // D throws after E returned and unwinds D, B and A; P then calls C.
  Timeline t = build({
      op_entry(0, 1000, kP), op_entry(10, 900, kA), op_entry(20, 800, kB),
      op_entry(30, 700, kD), op_entry(40, 600, kE), op_exit(45, 600, kE),
      op_entry(60, 900, kC), op_exit(70, 900, kC),
      op_exit(100, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kE, 40, 45, 5, 4), unwound(kD, 30, 45, 10, 3),
                                   unwound(kB, 20, 45, 10, 2), unwound(kA, 10, 45, 10, 1),
                                   returned(kC, 60, 70, 10, 1), returned(kP, 0, 100, 55, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 3u);
}

TEST(OpTimeline, ExceptionIsRevealedByTheExitOfAnOuterOp) {
  // B throws through A; P catches (not seen) and returns.
  Timeline t = build({
      op_entry(0, 1000, kP), op_entry(10, 900, kA), op_entry(20, 800, kB),
      op_entry(30, 700, kC), op_exit(40, 700, kC),
      op_exit(100, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kC, 30, 40, 10, 3), unwound(kB, 20, 40, 10, 2),
                                   unwound(kA, 10, 40, 10, 1), returned(kP, 0, 100, 70, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 2u);
  EXPECT_EQ(t.counters.exits_without_entry, 0u);
}

TEST(OpTimeline, CatchEndsUnwoundFramesAtTheCatch) {
  // B throws through A; P catches it in a frame whose calls sit at sp 900.
  Timeline t = build({
      op_entry(0, 1000, kP), op_entry(10, 900, kA), op_entry(20, 800, kB),
      catch_at(50, 900),
      op_entry(60, 900, kC), op_exit(70, 900, kC),
      op_exit(100, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(unwound(kB, 20, 50, 30, 2), unwound(kA, 10, 50, 10, 1),
                                   returned(kC, 60, 70, 10, 1), returned(kP, 0, 100, 50, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 2u);
}

TEST(OpTimeline, CatchClosesOnlyFramesAtOrBelowItsSp) {
  Timeline t = build({
      op_entry(0, 1000, kP), op_entry(10, 900, kA),
      catch_at(15, 500),  // A caught an exception of a callee that is no op
      op_entry(20, 800, kB),
      catch_at(30, 800),  // A caught B's exception
      op_exit(40, 900, kA), op_exit(50, 1000, kP),
      catch_at(60, 2000),  // nothing open: nothing to close
  });
  EXPECT_THAT(t.calls, ElementsAre(unwound(kB, 20, 30, 10, 2), returned(kA, 10, 40, 20, 1),
                                   returned(kP, 0, 50, 20, 0)));
  EXPECT_EQ(t.counters.calls_unwound, 1u);
}

TEST(OpTimeline, ExitOfAnOpRunningAtAttachIsCounted) {
  Timeline t = build({op_exit(10, 1000, kP)});
  EXPECT_THAT(t.calls, IsEmpty());
  EXPECT_EQ(t.counters.exits_without_entry, 1u);
  EXPECT_EQ(t.threads, 1u);
}

TEST(OpTimeline, NestedOpsRunningAtAttachLeaveLaterCallsAtDepthZero) {
  // Attached while P (sp 1000) was inside A (sp 900).
  Timeline t = build({
      op_entry(10, 800, kB), op_exit(20, 800, kB),
      op_exit(30, 900, kA),
      op_entry(40, 900, kC), op_exit(50, 900, kC),
      op_exit(60, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 10, 20, 10, 0), returned(kC, 40, 50, 10, 0)));
  EXPECT_EQ(t.counters.exits_without_entry, 2u);
}

TEST(OpTimeline, ExitOfAnOpRunningAtAttachUnwindsFramesNestedInIt) {
  // P (sp 1000) was running at attach; A was left by an exception.
  Timeline t = build({
      op_entry(10, 900, kA), op_entry(15, 800, kB), op_exit(20, 800, kB),
      op_exit(30, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 15, 20, 5, 1), unwound(kA, 10, 20, 5, 0)));
  EXPECT_EQ(t.counters.exits_without_entry, 1u);
  EXPECT_EQ(t.counters.calls_unwound, 1u);
}

TEST(OpTimeline, ExitBelowTheTopFrameDoesNotPopIt) {
  // An exit at sp 900 whose entry was never seen, inside P.
  Timeline t = build({
      op_entry(0, 1000, kP),
      op_exit(10, 900, kA),
      op_entry(20, 900, kB), op_exit(30, 900, kB),
      op_exit(40, 1000, kP),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 20, 30, 10, 1), returned(kP, 0, 40, 30, 0)));
  EXPECT_EQ(t.counters.exits_without_entry, 1u);
  EXPECT_EQ(t.counters.calls_unwound, 0u);
}

TEST(OpTimeline, ExitAtTheTopFramesSpOfAnotherOpIsCountedAndChangesNothing) {
  Timeline t = build({op_entry(0, 1000, kP), op_exit(10, 1000, kA), op_exit(20, 1000, kP)});
  EXPECT_THAT(t.calls, ElementsAre(returned(kP, 0, 20, 20, 0)));
  EXPECT_EQ(t.counters.exits_without_entry, 1u);
}

TEST(OpTimeline, FramesOpenAtTheEndAreNotCallsButTheirChildrenAre) {
  Timeline t = build({
      op_entry(0, 1000, kP),
      op_entry(10, 900, kA), op_exit(20, 900, kA),
      op_entry(30, 900, kB), op_entry(35, 800, kC), op_exit(40, 800, kC),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 10, 20, 10, 1), returned(kC, 35, 40, 5, 2)));
  EXPECT_EQ(t.counters.calls_open_at_end, 2u);
  EXPECT_EQ(t.counters.calls_unwound, 0u);
}

TEST(OpTimeline, TwoInterleavedThreadsKeepTheirOwnStacks) {
  // Same sp values on both threads, and thread 2's events carry earlier
  // timestamps than thread 1's that precede them in the input.
  Timeline t = build({
      op_entry(100, 1000, kP, 1),
      op_entry(50, 1000, kC, 2),
      op_entry(110, 900, kA, 1),
      op_entry(60, 900, kB, 2),
      op_exit(70, 900, kB, 2),
      op_exit(130, 900, kA, 1),
      op_exit(90, 1000, kC, 2),
      op_exit(150, 1000, kP, 1),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 60, 70, 10, 1, 2), returned(kA, 110, 130, 20, 1, 1),
                                   returned(kC, 50, 90, 30, 0, 2), returned(kP, 100, 150, 30, 0, 1)));
  EXPECT_EQ(t.threads, 2u);
  EXPECT_EQ(t.counters.calls_unwound, 0u);
}

TEST(OpTimeline, ThreeInterleavedThreadsUnwindOnTheirOwnClocks) {
  // Thread 1 nests normally; on thread 2 an exception leaves C and B (seen
  // at A's entry, ending at thread 2's last event, ts 6, not the ts 25 of
  // thread 1); on thread 3 a catch ends B.
  Timeline t = build({
      op_entry(0, 1000, kP, 1),
      op_entry(1, 3000, kP, 3),
      op_entry(2, 2000, kP, 2),
      op_entry(3, 2900, kB, 3),
      op_entry(4, 1900, kB, 2),
      op_entry(5, 900, kA, 1),
      op_entry(6, 1800, kC, 2),
      catch_at(20, 2900, 3),
      op_exit(25, 900, kA, 1),
      op_entry(30, 1900, kA, 2),
      op_exit(35, 1900, kA, 2),
      op_exit(40, 1000, kP, 1),
      op_exit(45, 3000, kP, 3),
      op_exit(50, 2000, kP, 2),
  });
  EXPECT_THAT(t.calls, ElementsAre(unwound(kB, 3, 20, 17, 1, 3), returned(kA, 5, 25, 20, 1, 1),
                                   unwound(kC, 6, 6, 0, 2, 2), unwound(kB, 4, 6, 2, 1, 2),
                                   returned(kA, 30, 35, 5, 1, 2), returned(kP, 0, 40, 20, 0, 1),
                                   returned(kP, 1, 45, 27, 0, 3), returned(kP, 2, 50, 41, 0, 2)));
  EXPECT_EQ(t.threads, 3u);
  EXPECT_EQ(t.counters.calls_unwound, 3u);
}

TEST(OpTimeline, EventsAreGroupedByTidWhateverTheirPid) {
  gp_event worker_entry = op_entry(10, 1000, kA, 8);
  gp_event worker_exit = op_exit(20, 1000, kA, 8);
  worker_entry.pid = worker_exit.pid = 99;  // e.g. a forked worker process
  Timeline t = build({op_entry(0, 1000, kP, 7), worker_entry, worker_exit, op_exit(30, 1000, kP, 7),
                      catch_at(40, 1000, 9)});
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 10, 20, 10, 0, 8), returned(kP, 0, 30, 30, 0, 7)));
  EXPECT_EQ(t.threads, 2u);  // tid 9 only caught an exception: it ran no traced op
}

TEST(OpTimeline, EventsOfUnknownKindAreCountedAndIgnored) {
  gp_event odd = probe_event(/*kind=*/99, 90, 1000, kB, kTid);
  Timeline t = build_timeline(std::vector{op_entry(10, 1000, kA), odd, op_entry(20, 1000, kB)});
  // A ends at its own entry, the last event that counts, not at the odd one.
  EXPECT_THAT(t.calls, ElementsAre(unwound(kA, 10, 10, 0, 0)));
  EXPECT_EQ(t.events_unknown_kind, 1u);
  EXPECT_EQ(t.counters.calls_open_at_end, 1u);
}

TEST(OpTimeline, UnwoundEndIsNeverBeforeTheFramesEntry) {
  // A thread clock that steps back (never expected): the stray exit at ts
  // 30 is the last event before B reveals A's end, yet A began at 50.
  Timeline t = build({op_entry(50, 1000, kA), op_exit(30, 500, kP), op_entry(60, 1000, kB)});
  EXPECT_THAT(t.calls, ElementsAre(unwound(kA, 50, 50, 0, 0)));
}

TEST(OpTimeline, ACutEndsEveryOpenFrameOnEveryThreadAsACall) {
  // Thread 1 is inside P > A, thread 2 inside B when the window ends at 50;
  // their exits fell in unrecorded steps. The next window's calls are whole.
  Timeline t = build({
      op_entry(10, 1000, kP, 1), op_entry(20, 900, kA, 1),
      op_entry(30, 1000, kB, 2),
      cut_at(50),
      op_entry(200, 1000, kC, 1), op_exit(210, 1000, kC, 1),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 20, 50, 30, 1, 1), returned(kP, 10, 50, 10, 0, 1),
                                   returned(kB, 30, 50, 20, 0, 2), returned(kC, 200, 210, 10, 0, 1)));
  EXPECT_EQ(t.calls_cut, 3u);
  EXPECT_EQ(t.counters.calls_unwound, 0u);
  EXPECT_EQ(t.counters.calls_open_at_end, 0u);
}

TEST(OpTimeline, EventsStampedBeforeACutThatComeAfterItAreLeftOut) {
  // Thread 2's exit at 45 was behind the cut at 50 in the ring: its call
  // already ended at the cut; the late ENTRY at 48 opens nothing.
  Timeline t = build({
      op_entry(30, 1000, kB, 2), cut_at(50),
      op_exit(45, 1000, kB, 2), op_entry(48, 900, kA, 2),
      op_entry(60, 1000, kC, 2), op_exit(70, 1000, kC, 2),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 30, 50, 20, 0, 2), returned(kC, 60, 70, 10, 0, 2)));
  EXPECT_EQ(t.events_after_cut, 2u);
  EXPECT_EQ(t.counters.exits_without_entry, 0u);
}

TEST(OpTimeline, ACutClosesTheStepFrameToo) {
  Timeline t = build_timeline(std::vector{step_at(5, 0, kE), op_entry(10, 1000, kA), cut_at(50)});
  for (OpCall& call : t.calls) call.entry_index = 0;
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 10, 50, 40, 1), returned(kE, 5, 50, 5, 0)));
  EXPECT_EQ(t.calls_cut, 1u);  // the op; the step frame is a step
}

gp_event range_begin(uint64_t ts, uint64_t object, uint32_t op, uint32_t tid = kTid) {
  return probe_event(GP_EV_RANGE_BEGIN, ts, object, op, tid);
}
gp_event range_end(uint64_t ts, uint64_t object, uint32_t op, uint32_t tid = kTid) {
  return probe_event(GP_EV_RANGE_END, ts, object, op, tid);
}

TEST(OpTimeline, ARangeHoldsTheCallsMadeInIt) {
  // with record_function("model_inference"): A(B), A
  Timeline t = build({
      range_begin(0, 0xabc, kE),
      op_entry(10, 1000, kA), op_entry(12, 900, kB), op_exit(14, 900, kB), op_exit(20, 1000, kA),
      op_entry(30, 1000, kA), op_exit(40, 1000, kA),
      range_end(50, 0xabc, kE),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 12, 14, 2, 2), returned(kA, 10, 20, 8, 1),
                                   returned(kA, 30, 40, 10, 1), returned(kE, 0, 50, 30, 0)));
}

TEST(OpTimeline, ARangeInsideACallSitsAboveIt) {
  // A guard range a kernel opens (detach), with a call inside; the call
  // that holds it returns after it ends.
  Timeline t = build({
      op_entry(0, 1000, kA), range_begin(5, 0x10, kE), op_entry(6, 800, kB), op_exit(8, 800, kB),
      range_end(9, 0x10, kE), op_exit(10, 1000, kA),
  });
  EXPECT_THAT(t.calls, ElementsAre(returned(kB, 6, 8, 2, 2), returned(kE, 5, 9, 2, 1), returned(kA, 0, 10, 6, 0)));
  // A range still open when the call that holds it returns was left:
  // closed as unwound by the exit.
  t = build({op_entry(0, 1000, kA), range_begin(5, 0x10, kE), op_exit(10, 1000, kA)});
  EXPECT_THAT(t.calls, ElementsAre(unwound(kE, 5, 5, 0, 1), returned(kA, 0, 10, 10, 0)));
}

TEST(OpTimeline, RangesNestAndEndsOfOthersAreCounted) {
  Timeline t = build({
      range_begin(0, 0x1, kD), range_begin(5, 0x2, kE), op_entry(6, 1000, kA),
      range_end(8, 0x2, kE),  // A is still open above it: it was left
      range_end(9, 0x99, kE),  // no such range on this thread
      range_end(10, 0x1, kD),
  });
  EXPECT_THAT(t.calls, ElementsAre(unwound(kA, 6, 6, 0, 2), returned(kE, 5, 8, 3, 1), returned(kD, 0, 10, 7, 0)));
  EXPECT_EQ(t.ranges_ended_elsewhere, 1u);
}

TEST(OpTimeline, ChildrenOutlastingTheirParentClampSelfTimeAndSaySo) {
  // Only possible with out-of-order timestamps on one thread.
  Timeline t = build_timeline(std::vector{op_entry(0, 1000, kP), op_entry(10, 900, kA),
                                          op_exit(50, 900, kA), op_exit(30, 1000, kP)});
  EXPECT_EQ(t.calls.at(0).entry_index, 1u);
  EXPECT_EQ(t.calls.at(1).entry_index, 0u);
  t.calls[0].entry_index = 0;
  EXPECT_THAT(t.calls, ElementsAre(returned(kA, 10, 50, 40, 1), returned(kP, 0, 30, 0, 0)));
  EXPECT_EQ(t.self_time_clamped, 1u);
}


// Compensation (op_timeline.h): entry hits cost 100 ns before their
// timestamp and 200 after, exit hits 300 and 400.
const ProbeCosts kCosts{.entry = {100, 200}, .exit = {300, 400}};

TEST(OpTimeline, CompensationTakesEachCallsProbeTimeOut) {
  const std::vector<gp_event> events{op_entry(1000, 1000, kP), op_entry(2000, 900, kA), op_exit(3000, 900, kA),
                                     op_entry(3500, 900, kB), op_exit(4200, 900, kB), op_exit(6000, 1000, kP)};
  Timeline t = build_timeline(events, &kCosts);
  ASSERT_EQ(t.calls.size(), 3u);
  // A child holds its entry's after-part and its exit's before-part.
  EXPECT_EQ(t.calls[0].op_id, kA);
  EXPECT_EQ(t.calls[0].probe_ns, 200u + 300u);
  EXPECT_EQ(t.calls[0].compensated_ns(), 1000u - 500u);
  EXPECT_EQ(t.calls[0].compensated_self_ns(), 500u);
  EXPECT_EQ(t.calls[1].compensated_ns(), 700u - 500u);
  // The parent's interval holds its own parts and both children's whole
  // hits; its self time loses its own parts and the children's outer parts
  // (entry before, exit after: 100 + 400 each).
  const OpCall& p = t.calls[2];
  EXPECT_EQ(p.op_id, kP);
  EXPECT_EQ(p.duration_ns(), 5000u);
  EXPECT_EQ(p.self_ns, 5000u - 1000u - 700u);
  EXPECT_EQ(p.probe_ns, 200u + 2 * 1000u + 300u);
  EXPECT_EQ(p.compensated_ns(), 5000u - 2500u);
  EXPECT_EQ(p.compensated_self_ns(), p.self_ns - 500u - 2 * 500u);
  EXPECT_EQ(p.compensated_self_ns(), p.compensated_ns() - t.calls[0].compensated_ns() - t.calls[1].compensated_ns());
  EXPECT_EQ(t.counters.calls_shorter_than_probes, 0u);
  // Without costs, nothing is taken out and the calls are those of the raw build.
  Timeline raw = build_timeline(events);
  for (size_t i = 0; i < raw.calls.size(); i++) {
    EXPECT_EQ(raw.calls[i].compensated_ns(), raw.calls[i].duration_ns());
    EXPECT_EQ(raw.calls[i].compensated_self_ns(), raw.calls[i].self_ns);
    OpCall c = t.calls[i];
    c.probe_ns = c.self_probe_ns = 0;
    EXPECT_EQ(c, raw.calls[i]);
  }
}

TEST(OpTimeline, CompensationNeverGoesBelowZeroAndCountsTheCallsItClamps) {
  // A 300 ns call cannot hold 500 ns of probe time: 0, and counted; its
  // parent keeps what is left.
  Timeline t = build_timeline(std::vector{op_entry(0, 1000, kP), op_entry(1000, 900, kA), op_exit(1300, 900, kA),
                                          op_exit(4000, 1000, kP)},
                              &kCosts);
  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[0].compensated_ns(), 0u);
  EXPECT_EQ(t.calls[0].compensated_self_ns(), 0u);
  EXPECT_EQ(t.counters.calls_shorter_than_probes, 1u);
  EXPECT_EQ(t.calls[1].compensated_ns(), 4000u - (200u + 1000u + 300u));
  EXPECT_EQ(t.calls[1].compensated_self_ns(), t.calls[1].compensated_ns());
}

TEST(OpTimeline, CompensationCountsEveryHitBeforeACutAndUnwoundEndsAtTheLastEvent) {
  // P is open at the cut: every hit of its thread so far is inside it. A's
  // exception end is the thread's last event before B's entry (A's
  // nested C exit at 3000: C's hit's before-part is in A, its after-part not).
  Timeline t = build_timeline(std::vector{op_entry(0, 1000, kP), op_entry(1000, 900, kA), op_entry(2000, 800, kC),
                                          op_exit(3000, 800, kC), op_entry(5000, 900, kB), cut_at(8000)},
                              &kCosts);
  ASSERT_EQ(t.calls.size(), 4u);
  EXPECT_EQ(t.calls[1].op_id, kA);
  EXPECT_TRUE(t.calls[1].unwound);
  EXPECT_EQ(t.calls[1].probe_ns, 200u + 300u + 300u);  // A's after, C's whole entry, C's exit's before
  EXPECT_EQ(t.calls[3].op_id, kP);
  EXPECT_EQ(t.calls[3].probe_ns, 200u + 3 * 300u + 700u);  // P's after, A, C, B entries whole, C's exit whole
}

}  // namespace
}  // namespace gpuprof

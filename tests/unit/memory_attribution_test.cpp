// Tests of attribute_memory(): allocator events -> bytes per op call, with
// torch.profiler's profile_memory meaning (memory_attribution.h).
#include "analyze/memory_attribution.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/op_timeline.h"
#include "probe_events.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// Index in timeline.calls of the one call of op_id on tid (the timeline
// lists calls in completion order, which the tests should not depend on).
int64_t call_of(const Timeline& timeline, uint32_t op_id, uint32_t tid = kTid) {
  int64_t found = -1;
  for (size_t i = 0; i < timeline.calls.size(); i++) {
    if (timeline.calls[i].op_id != op_id || timeline.calls[i].tid != tid) continue;
    EXPECT_EQ(found, -1) << "op " << op_id << " has several calls on thread " << tid;
    found = static_cast<int64_t>(i);
  }
  EXPECT_NE(found, -1) << "op " << op_id << " has no call on thread " << tid;
  return found;
}

struct Attributed {
  Timeline timeline;
  MemoryAttribution mem;
};

Attributed attribute(const std::vector<gp_event>& events, const std::vector<gp_mem_event>& mem_events) {
  Attributed a;
  a.timeline = build_timeline(events);
  a.mem = attribute_memory(a.timeline, mem_events);
  EXPECT_EQ(a.mem.own_cpu.size(), a.timeline.calls.size());
  EXPECT_EQ(a.mem.own_cuda.size(), a.timeline.calls.size());
  EXPECT_EQ(a.mem.parent.size(), a.timeline.calls.size());
  return a;
}

// ---------------------------------------------------------------------------
// Which call an event belongs to.

TEST(MemoryAttribution, EachEventGoesToTheInnermostCallRunningOnItsThread) {
  enum : uint32_t { kLinear, kAddmm, kEmpty };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kLinear),
          op_entry(20, 900, kAddmm),
          op_entry(30, 800, kEmpty),
          op_exit(40, 800, kEmpty),
          op_exit(60, 900, kAddmm),
          op_exit(100, 1000, kLinear),
      },
      {
          cpu_alloc(10, 0xa000, 64),    // linear, before addmm
          cpu_alloc(35, 0xb000, 512),   // empty, inside addmm
          cpu_alloc(50, 0xc000, 128),   // addmm, after empty returned
          cpu_free(55, 0xa000),         // addmm releases linear's block
          cpu_alloc(80, 0xd000, 1024),  // linear, after addmm
      });
  const int64_t linear = call_of(a.timeline, kLinear), addmm = call_of(a.timeline, kAddmm),
                empty = call_of(a.timeline, kEmpty);
  EXPECT_EQ(a.mem.own_cpu[linear], 64 + 1024);
  EXPECT_EQ(a.mem.own_cpu[addmm], 128 - 64);
  EXPECT_EQ(a.mem.own_cpu[empty], 512);
  EXPECT_EQ(a.mem.own_cuda[linear], 0);
  EXPECT_EQ(a.mem.own_cuda[addmm], 0);
  EXPECT_EQ(a.mem.own_cuda[empty], 0);
  EXPECT_EQ(a.mem.outside_events, 0u);
  EXPECT_EQ(a.mem.unmatched_frees, 0u);
}

TEST(MemoryAttribution, ParentLinksFollowNestingAndSiblings) {
  enum : uint32_t { kOuter, kFirst, kFirstChild, kSecond, kLater };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kOuter),
          op_entry(10, 900, kFirst),
          op_entry(15, 800, kFirstChild),
          op_exit(18, 800, kFirstChild),
          op_exit(20, 900, kFirst),
          op_entry(30, 900, kSecond),  // sibling of first, same sp
          op_exit(40, 900, kSecond),
          op_exit(50, 1000, kOuter),
          op_entry(60, 1000, kLater),  // a second top-level call
          op_exit(70, 1000, kLater),
      },
      {});
  const int64_t outer = call_of(a.timeline, kOuter), first = call_of(a.timeline, kFirst),
                first_child = call_of(a.timeline, kFirstChild), second = call_of(a.timeline, kSecond),
                later = call_of(a.timeline, kLater);
  EXPECT_EQ(a.mem.parent[outer], -1);
  EXPECT_EQ(a.mem.parent[first], outer);
  EXPECT_EQ(a.mem.parent[first_child], first);
  EXPECT_EQ(a.mem.parent[second], outer);
  EXPECT_EQ(a.mem.parent[later], -1);
}

// A call that starts at the very timestamp its previous sibling ended at is
// that sibling's sibling, not its child.
TEST(MemoryAttribution, SiblingStartingWhenThePreviousOneEndsIsNotItsChild) {
  enum : uint32_t { kOuter, kFirst, kSecond };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kOuter),
          op_entry(10, 900, kFirst),
          op_exit(20, 900, kFirst),
          op_entry(20, 900, kSecond),
          op_exit(30, 900, kSecond),
          op_exit(40, 1000, kOuter),
      },
      {cpu_alloc(25, 0xa000, 100)});
  const int64_t outer = call_of(a.timeline, kOuter), first = call_of(a.timeline, kFirst),
                second = call_of(a.timeline, kSecond);
  EXPECT_EQ(a.mem.parent[first], outer);
  EXPECT_EQ(a.mem.parent[second], outer);
  EXPECT_EQ(a.mem.own_cpu[second], 100);
  EXPECT_EQ(a.mem.own_cpu[first], 0);
}

TEST(MemoryAttribution, CallBoundariesAreInclusive) {
  enum : uint32_t { kOuter, kInner };
  Attributed a = attribute(
      {
          op_entry(100, 1000, kOuter),
          op_entry(200, 900, kInner),
          op_exit(300, 900, kInner),
          op_exit(400, 1000, kOuter),
      },
      {
          cpu_alloc(99, 0x1, 1),       // before outer: outside
          cpu_alloc(100, 0x2, 2),      // outer's first instant
          cpu_alloc(200, 0x3, 4),      // inner's first instant
          cpu_alloc(300, 0x4, 8),      // inner's last instant
          cpu_alloc(301, 0x5, 16),     // back in outer
          cpu_alloc(400, 0x6, 32),     // outer's last instant
          cpu_alloc(401, 0x7, 64),     // after outer: outside
      });
  const int64_t outer = call_of(a.timeline, kOuter), inner = call_of(a.timeline, kInner);
  EXPECT_EQ(a.mem.own_cpu[outer], 2 + 16 + 32);
  EXPECT_EQ(a.mem.own_cpu[inner], 4 + 8);
  EXPECT_EQ(a.mem.outside_events, 2u);
  EXPECT_EQ(a.mem.outside_cpu, 1 + 64);
}

TEST(MemoryAttribution, ThreadsOnlySeeTheirOwnCalls) {
  enum : uint32_t { kMatmul, kRelu };
  constexpr uint32_t kOther = 200, kIdle = 300;
  Attributed a = attribute(
      {
          op_entry(0, 1000, kMatmul, kTid),
          op_entry(5, 5000, kRelu, kOther),
          op_exit(50, 5000, kRelu, kOther),
          op_exit(100, 1000, kMatmul, kTid),
      },
      {
          cpu_alloc(10, 0xa000, 100, kTid),    // matmul
          cpu_alloc(11, 0xb000, 200, kOther),  // relu, though matmul runs too
          cpu_alloc(12, 0xc000, 400, kIdle),   // a thread without ops: outside
          cpu_alloc(60, 0xd000, 800, kOther),  // relu is over: outside
      });
  const int64_t matmul = call_of(a.timeline, kMatmul, kTid), relu = call_of(a.timeline, kRelu, kOther);
  EXPECT_EQ(a.mem.own_cpu[matmul], 100);
  EXPECT_EQ(a.mem.own_cpu[relu], 200);
  EXPECT_EQ(a.mem.parent[matmul], -1);
  EXPECT_EQ(a.mem.parent[relu], -1);  // overlapping in time, but another thread
  EXPECT_EQ(a.mem.outside_events, 2u);
  EXPECT_EQ(a.mem.outside_cpu, 400 + 800);
}

TEST(MemoryAttribution, EventsOutsideEveryCallAreTorchsMemoryEvents) {
  enum : uint32_t { kAdd };
  Attributed a = attribute(
      {op_entry(100, 1000, kAdd), op_exit(200, 1000, kAdd)},
      {
          cpu_alloc(10, 0xa000, 4096),           // before
          cpu_alloc(150, 0xb000, 16),            // add
          cpu_free(250, 0xa000),                 // after
          cuda_mem(260, 0xc000, 1 << 20, 1 << 20),
          cuda_mem(270, 0xc000, -(1 << 20), 0),
          cuda_mem(280, 0xd000, 512, 512),
      });
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kAdd)], 16);
  EXPECT_EQ(a.mem.outside_events, 5u);
  EXPECT_EQ(a.mem.outside_cpu, 4096 - 4096);
  EXPECT_EQ(a.mem.outside_cuda, 512);
}

// A frame still open when the events end is not a call: what happened in it
// (outside its completed children) belongs to no call.
TEST(MemoryAttribution, FramesOpenAtTheEndAreNotCalls) {
  enum : uint32_t { kRunning, kChild };
  Attributed a = attribute(
      {op_entry(0, 1000, kRunning), op_entry(10, 900, kChild), op_exit(20, 900, kChild)},
      {cpu_alloc(5, 0xa000, 10), cpu_alloc(15, 0xb000, 20), cpu_alloc(25, 0xc000, 40)});
  ASSERT_EQ(a.timeline.calls.size(), 1u);
  EXPECT_EQ(a.mem.own_cpu[0], 20);
  EXPECT_EQ(a.mem.parent[0], -1);
  EXPECT_EQ(a.mem.outside_events, 2u);
  EXPECT_EQ(a.mem.outside_cpu, 10 + 40);
}

// A call left by an exception ends at the catch: later events on the thread
// are its caller's.
TEST(MemoryAttribution, EventsAfterACatchBelongToTheCatchingCall) {
  enum : uint32_t { kIndex, kNonzero };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kIndex),
          op_entry(10, 900, kNonzero),
          catch_at(50, 900),
          op_exit(100, 1000, kIndex),
      },
      {cpu_alloc(20, 0xa000, 256), cpu_free(60, 0xa000)});
  const int64_t index = call_of(a.timeline, kIndex), nonzero = call_of(a.timeline, kNonzero);
  ASSERT_TRUE(a.timeline.calls[nonzero].unwound);
  EXPECT_EQ(a.mem.own_cpu[nonzero], 256);
  EXPECT_EQ(a.mem.own_cpu[index], -256);
  EXPECT_EQ(a.mem.parent[nonzero], index);
}

// ---------------------------------------------------------------------------
// CPU releases: sizes from their allocations.

TEST(MemoryAttribution, ReleaseOnAnotherThreadIsThatThreadsCallsNegative) {
  enum : uint32_t { kEmpty, kDel };
  constexpr uint32_t kProducer = 1, kConsumer = 2;
  Attributed a = attribute(
      {
          op_entry(0, 1000, kEmpty, kProducer),
          op_exit(10, 1000, kEmpty, kProducer),
          op_entry(20, 2000, kDel, kConsumer),
          op_exit(30, 2000, kDel, kConsumer),
      },
      {cpu_alloc(5, 0xbeef00, 1000, kProducer), cpu_free(25, 0xbeef00, kConsumer)});
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kEmpty, kProducer)], 1000);
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kDel, kConsumer)], -1000);
  EXPECT_EQ(a.mem.unmatched_frees, 0u);
}

// Each thread's events are in order, but threads may interleave in any way:
// a release listed before its allocation (another thread's) still matches.
TEST(MemoryAttribution, ReleasesMatchAllocationsInTimestampOrderAcrossThreads) {
  enum : uint32_t { kEmpty, kDel };
  constexpr uint32_t kProducer = 1, kConsumer = 2;
  Attributed a = attribute(
      {
          op_entry(0, 1000, kEmpty, kProducer),
          op_exit(10, 1000, kEmpty, kProducer),
          op_entry(20, 2000, kDel, kConsumer),
          op_exit(30, 2000, kDel, kConsumer),
      },
      {cpu_free(25, 0xbeef00, kConsumer), cpu_alloc(5, 0xbeef00, 1000, kProducer)});
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kEmpty, kProducer)], 1000);
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kDel, kConsumer)], -1000);
  EXPECT_EQ(a.mem.unmatched_frees, 0u);
}

TEST(MemoryAttribution, ReleaseOfABlockAllocatedBeforeTheRecordingIsNotCounted) {
  enum : uint32_t { kCopy };
  Attributed a = attribute({op_entry(0, 1000, kCopy), op_exit(100, 1000, kCopy)},
                           {cpu_free(10, 0x1234), cpu_alloc(20, 0x5678, 8), cpu_free(30, 0x5678),
                            cpu_free(40, 0x5678) /* twice: the second is unknown */,
                            cpu_free(150, 0x9999) /* outside, also unknown */});
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kCopy)], 8 - 8);
  EXPECT_EQ(a.mem.unmatched_frees, 3u);
  EXPECT_EQ(a.mem.outside_events, 0u);  // an uncounted release is no [memory] event either
  EXPECT_EQ(a.mem.outside_cpu, 0);
}

TEST(MemoryAttribution, ReusedAddressTakesTheSizeOfItsLatestAllocation) {
  enum : uint32_t { kFirst, kSecond };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kFirst),
          op_exit(100, 1000, kFirst),
          op_entry(200, 1000, kSecond),
          op_exit(300, 1000, kSecond),
      },
      {
          cpu_alloc(10, 0xa000, 64),
          cpu_free(20, 0xa000),
          cpu_alloc(30, 0xa000, 4096),  // the allocator hands the address out again
          cpu_free(250, 0xa000),
      });
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kFirst)], 64 - 64 + 4096);
  EXPECT_EQ(a.mem.own_cpu[call_of(a.timeline, kSecond)], -4096);
  EXPECT_EQ(a.mem.unmatched_frees, 0u);
}

TEST(MemoryAttribution, EventsOfUnknownKindAreIgnored) {
  enum : uint32_t { kAdd };
  Attributed a = attribute({op_entry(0, 1000, kAdd), op_exit(100, 1000, kAdd)},
                           {mem_event(99, 10, 0xa000, 123, kTid), mem_event(99, 200, 0xa000, 7, kTid),
                            cpu_alloc(20, 0xb000, 5)});
  EXPECT_EQ(a.mem.own_cpu[0], 5);
  EXPECT_EQ(a.mem.own_cuda[0], 0);
  EXPECT_EQ(a.mem.outside_events, 0u);
}

// ---------------------------------------------------------------------------
// CUDA: signed deltas and the allocator's own total.

TEST(MemoryAttribution, DeviceEventsCarrySignedBytesAndDoNotTouchCpu) {
  enum : uint32_t { kConv, kCat };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kConv),
          op_exit(100, 1000, kConv),
          op_entry(200, 1000, kCat),
          op_exit(300, 1000, kCat),
      },
      {
          cuda_mem(10, 0xd000, 2048, 2048),
          cuda_mem(20, 0xe000, 512, 2560),
          cuda_mem(210, 0xd000, -2048, 512),
      });
  const int64_t conv = call_of(a.timeline, kConv), cat = call_of(a.timeline, kCat);
  EXPECT_EQ(a.mem.own_cuda[conv], 2048 + 512);
  EXPECT_EQ(a.mem.own_cuda[cat], -2048);
  EXPECT_EQ(a.mem.own_cpu[conv], 0);
  EXPECT_EQ(a.mem.own_cpu[cat], 0);
  EXPECT_FALSE(a.mem.cpu_peak.seen);
  EXPECT_EQ(a.mem.unmatched_frees, 0u);  // a negative device delta is not a CPU release
}

TEST(MemoryAttribution, CudaPeakIsTheHighestAllocatorTotalWithItsDeviceAndCall) {
  enum : uint32_t { kOuter, kInner };
  Attributed a = attribute(
      {
          op_entry(0, 1000, kOuter),
          op_entry(10, 900, kInner),
          op_exit(50, 900, kInner),
          op_exit(100, 1000, kOuter),
      },
      {
          cuda_mem(5, 0x1, 1000, 1000, /*device_index=*/0),
          cuda_mem(20, 0x2, 500, 7000, /*device_index=*/1),  // device 1 already held 6500
          cuda_mem(30, 0x3, 100, 1100, /*device_index=*/0),
          cuda_mem(60, 0x2, -500, 6500, /*device_index=*/1),
          cuda_mem(200, 0x4, 10, 1110, /*device_index=*/0),
      });
  ASSERT_TRUE(a.mem.cuda_peak.seen);
  EXPECT_EQ(a.mem.cuda_peak.bytes, 7000);
  EXPECT_EQ(a.mem.cuda_peak.at_ns, 20u);
  EXPECT_EQ(a.mem.cuda_peak.device_index, 1);
  EXPECT_EQ(a.mem.cuda_peak.call, call_of(a.timeline, kInner));
  EXPECT_FALSE(a.mem.cpu_peak.seen);
}

TEST(MemoryAttribution, CudaPeakOutsideEveryCallHasNoCall) {
  Attributed a = attribute({op_entry(0, 1000, 0), op_exit(10, 1000, 0)},
                           {cuda_mem(5, 0x1, 100, 100), cuda_mem(20, 0x2, 300, 400, 2)});
  ASSERT_TRUE(a.mem.cuda_peak.seen);
  EXPECT_EQ(a.mem.cuda_peak.bytes, 400);
  EXPECT_EQ(a.mem.cuda_peak.call, -1);
  EXPECT_EQ(a.mem.cuda_peak.device_index, 2);
}

// ---------------------------------------------------------------------------
// CPU peak: the highest net level of the counted events, all threads together.

TEST(MemoryAttribution, CpuPeakIsTheHighestRunningNetLevel) {
  enum : uint32_t { kOuter, kInner, kOther };
  constexpr uint32_t kT2 = 200;
  Attributed a = attribute(
      {
          op_entry(0, 1000, kOuter),
          op_entry(10, 900, kInner),
          op_exit(50, 900, kInner),
          op_exit(100, 1000, kOuter),
          op_entry(0, 5000, kOther, kT2),
          op_exit(100, 5000, kOther, kT2),
      },
      {
          cpu_free(1, 0xffff),             // unknown block: not counted, level stays 0
          cpu_alloc(5, 0xa, 100),          // 100
          cpu_alloc(20, 0xb, 300),         // 400
          cpu_alloc(25, 0xc, 50, kT2),     // 450: the peak, inner running on kTid...
          cpu_free(30, 0xb),               // 150
          cpu_alloc(40, 0xd, 250),         // 400
          cpu_free(45, 0xa, kT2),          // 300
          cpu_alloc(60, 0xe, 100),         // 400
      });
  ASSERT_TRUE(a.mem.cpu_peak.seen);
  EXPECT_EQ(a.mem.cpu_peak.bytes, 450);
  EXPECT_EQ(a.mem.cpu_peak.at_ns, 25u);
  // ...but the event that reached it was kT2's, in kOther.
  EXPECT_EQ(a.mem.cpu_peak.call, call_of(a.timeline, kOther, kT2));
  EXPECT_EQ(a.mem.cpu_peak.device_index, -1);
  EXPECT_FALSE(a.mem.cuda_peak.seen);
  EXPECT_EQ(a.mem.unmatched_frees, 1u);
}

// Net since the recording started: releasing more than was allocated in it
// never raises the level, and the peak stays the first high point.
TEST(MemoryAttribution, CpuPeakKeepsTheFirstTimeTheHighestLevelIsReached) {
  Attributed a = attribute({op_entry(0, 1000, 0), op_exit(100, 1000, 0)},
                           {cpu_alloc(10, 0xa, 100), cpu_free(20, 0xa), cpu_alloc(110, 0xb, 100)});
  ASSERT_TRUE(a.mem.cpu_peak.seen);
  EXPECT_EQ(a.mem.cpu_peak.bytes, 100);
  EXPECT_EQ(a.mem.cpu_peak.at_ns, 10u);
  EXPECT_EQ(a.mem.cpu_peak.call, 0);
}

TEST(MemoryAttribution, NoEventsNoPeaks) {
  Attributed a = attribute({op_entry(0, 1000, 0), op_exit(100, 1000, 0)}, {});
  EXPECT_FALSE(a.mem.cpu_peak.seen);
  EXPECT_FALSE(a.mem.cuda_peak.seen);
  EXPECT_EQ(a.mem.own_cpu, std::vector<int64_t>{0});
  EXPECT_EQ(a.mem.outside_events, 0u);
}

TEST(MemoryAttribution, EventsWithoutAnyCall) {
  Attributed a = attribute({}, {cpu_alloc(1, 0xa, 10), cpu_alloc(2, 0xb, 20), cpu_free(3, 0xa),
                                cuda_mem(4, 0xc, 64, 64)});
  EXPECT_TRUE(a.mem.parent.empty());
  EXPECT_EQ(a.mem.outside_events, 4u);
  EXPECT_EQ(a.mem.outside_cpu, 20);
  EXPECT_EQ(a.mem.outside_cuda, 64);
  EXPECT_EQ(a.mem.cpu_peak.bytes, 30);
  EXPECT_EQ(a.mem.cpu_peak.call, -1);
}

}  // namespace
}  // namespace gpuprof

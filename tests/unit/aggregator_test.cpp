// Tests of aggregate(): rows per op name, totals and the honesty counters.
#include "aggregator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "probe_events.h"

namespace gpuprof {

void PrintTo(const OpRow& r, std::ostream* os) {
  *os << "{" << r.name << " calls " << r.calls << " total " << r.cpu_total_ns << " self "
      << r.self_cpu_ns << " unwound " << r.unwound_calls << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using namespace ::gpuprof::test;

OpInfo op(std::string name, std::string overload = "") {
  return OpInfo{.name = std::move(name), .overload = std::move(overload), .symbol = ""};
}

Recording recording_of(std::vector<OpInfo> ops, std::vector<gp_event> events) {
  Recording recording;
  recording.ops = std::move(ops);
  recording.events = std::move(events);
  recording.complete = true;
  return recording;
}

OpRow row(std::string name, uint64_t calls, uint64_t total, uint64_t self, uint64_t unwound = 0) {
  return OpRow{.name = std::move(name), .calls = calls, .cpu_total_ns = total, .self_cpu_ns = self,
               .unwound_calls = unwound};
}

TEST(Aggregator, EmptyRecordingGivesAnEmptyProfile) {
  Profile p = aggregate(recording_of({op("aten::add")}, {}));
  EXPECT_THAT(p.rows, IsEmpty());
  EXPECT_EQ(p.self_cpu_total_ns, 0u);
  EXPECT_EQ(p.threads, 0u);
}

TEST(Aggregator, ConvolutionStackGivesOneRowPerOpSortedByName) {
  enum : uint32_t { kConv2d, kConvolution, kUnderscoreConvolution, kMkldnnConvolution };
  Profile p = aggregate(recording_of(
      {op("aten::conv2d"), op("aten::convolution"), op("aten::_convolution"),
       op("aten::mkldnn_convolution")},
      {
          op_entry(10, 1000, kConv2d),
          op_entry(20, 900, kConvolution),
          op_entry(30, 800, kUnderscoreConvolution),
          op_entry(40, 700, kMkldnnConvolution),
          op_exit(70, 700, kMkldnnConvolution),
          op_exit(80, 800, kUnderscoreConvolution),
          op_exit(90, 900, kConvolution),
          op_exit(100, 1000, kConv2d),
      }));
  EXPECT_THAT(p.rows, ElementsAre(row("aten::_convolution", 1, 50, 20), row("aten::conv2d", 1, 90, 20),
                                  row("aten::convolution", 1, 70, 20),
                                  row("aten::mkldnn_convolution", 1, 30, 30)));
  EXPECT_EQ(p.self_cpu_total_ns, 90u);  // the one top-level call's duration
  EXPECT_EQ(p.threads, 1u);
}

TEST(Aggregator, OverloadsOfOneOpShareARow) {
  enum : uint32_t { kAddTensor, kAddScalar, kMulTensor };
  Profile p = aggregate(recording_of(
      {op("aten::add", "Tensor"), op("aten::add", "Scalar"), op("aten::mul", "Tensor")},
      {
          op_entry(0, 1000, kAddTensor), op_exit(10, 1000, kAddTensor),
          op_entry(20, 1000, kAddScalar), op_exit(50, 1000, kAddScalar),
          op_entry(60, 1000, kMulTensor),
          op_entry(65, 900, kAddTensor), op_exit(70, 900, kAddTensor),
          op_exit(80, 1000, kMulTensor),
      }));
  EXPECT_THAT(p.rows, ElementsAre(row("aten::add", 3, 45, 45), row("aten::mul", 1, 20, 15)));
  EXPECT_EQ(p.self_cpu_total_ns, 60u);  // 10 + 30 + 20: the top-level durations
}

// A chain of only children of one name folds into one call, as in
// torch.profiler (EventList._remove_dup_nodes).
TEST(Aggregator, RecursiveOnlyChildrenFoldIntoOneCall) {
  Profile p = aggregate(recording_of({op("aten::cat")}, {
      op_entry(0, 1000, 0), op_entry(10, 900, 0), op_entry(20, 800, 0),
      op_exit(50, 800, 0), op_exit(80, 900, 0), op_exit(100, 1000, 0),
  }));
  EXPECT_THAT(p.rows, ElementsAre(row("aten::cat", 1, 100, 100)));
  EXPECT_EQ(p.self_cpu_total_ns, 100u);
}

// With two same-named children nothing folds: each call counts in the total.
TEST(Aggregator, RecursiveCallsEachCountInTotalTime) {
  Profile p = aggregate(recording_of({op("aten::cat")}, {
      op_entry(0, 1000, 0), op_entry(10, 900, 0), op_exit(30, 900, 0),
      op_entry(40, 900, 0), op_exit(50, 900, 0), op_exit(100, 1000, 0),
  }));
  EXPECT_THAT(p.rows, ElementsAre(row("aten::cat", 3, 130, 100)));
  EXPECT_EQ(p.self_cpu_total_ns, 100u);
}

TEST(Aggregator, CountersAndRowsAcrossThreadsWithUnwoundAndOpenCalls) {
  enum : uint32_t { kIndex, kNonzero, kEmpty, kZeros, kNeverCalled, kOpenOnly, kRunningAtAttach };
  Recording recording = recording_of(
      {op("aten::index", "Tensor"), op("aten::nonzero"), op("aten::empty", "memory_format"),
       op("aten::zeros"), op("aten::never_called"), op("aten::open_only"), op("aten::running")},
      {
          // Thread 1: nonzero throws after empty returned; index catches.
          op_entry(0, 1000, kIndex, 1),
          op_entry(10, 900, kNonzero, 1),
          // Thread 2, interleaved: an exit from before attach, then an op
          // still running at stop with a completed child.
          op_exit(12, 2000, kRunningAtAttach, 2),
          op_entry(14, 2000, kOpenOnly, 2),
          op_entry(20, 800, kEmpty, 1),
          op_exit(30, 800, kEmpty, 1),
          op_entry(32, 1900, kZeros, 2),
          op_exit(40, 1900, kZeros, 2),
          catch_at(50, 900, 1),
          op_exit(100, 1000, kIndex, 1),
      });
  recording.stats.events_lost = 7;
  Profile p = aggregate(recording);

  EXPECT_THAT(p.rows, ElementsAre(row("aten::empty", 1, 10, 10), row("aten::index", 1, 100, 60),
                                  row("aten::nonzero", 1, 40, 30, /*unwound=*/1),
                                  row("aten::zeros", 1, 8, 8)));
  // Thread 1's top-level call plus the child of thread 2's open call.
  EXPECT_EQ(p.self_cpu_total_ns, 108u);
  EXPECT_EQ(p.calls_unwound, 1u);
  EXPECT_EQ(p.exits_without_entry, 1u);
  EXPECT_EQ(p.calls_open_at_end, 1u);
  EXPECT_EQ(p.events_lost, 7u);
  EXPECT_EQ(p.events_unknown_kind, 0u);
  EXPECT_EQ(p.threads, 2u);
}

TEST(Aggregator, OpIdOutsideTheOpTableGetsItsOwnRow) {
  Profile p = aggregate(recording_of({op("aten::add")}, {
      op_entry(0, 1000, 0), op_exit(10, 1000, 0),
      op_entry(20, 1000, 5), op_exit(25, 1000, 5),
  }));
  EXPECT_THAT(p.rows, ElementsAre(row("<unknown op 5>", 1, 5, 5), row("aten::add", 1, 10, 10)));
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

using ::testing::ElementsAre;
using namespace ::gpuprof::test;

OpRow fold_row(std::string name, uint64_t calls, uint64_t total, uint64_t self) {
  return OpRow{.name = std::move(name), .calls = calls, .cpu_total_ns = total, .self_cpu_ns = self,
               .unwound_calls = 0};
}

// torch.profiler's _remove_dup_nodes: aten::mean -> aten::div_ (Scalar) ->
// aten::div_ (Tensor) -> aten::empty is one div_ call in its table, holding
// both div_ self times.
TEST(AggregatorFold, SameNamedOnlyChildIsFoldedIntoItsParent) {
  enum : uint32_t { kMean, kDivScalar, kDivTensor, kEmpty };
  Recording r;
  r.ops = {{"aten::mean", "", ""}, {"aten::div_", "Scalar", ""}, {"aten::div_", "Tensor", ""},
           {"aten::empty", "memory_format", ""}};
  r.events = {
      op_entry(0, 1000, kMean),
      op_entry(10, 900, kDivScalar),
      op_entry(20, 800, kDivTensor),
      op_entry(30, 700, kEmpty),
      op_exit(40, 700, kEmpty),
      op_exit(70, 800, kDivTensor),
      op_exit(100, 900, kDivScalar),
      op_exit(120, 1000, kMean),
  };
  Profile p = aggregate(r);
  EXPECT_THAT(p.rows, ElementsAre(fold_row("aten::div_", 1, 90, 30 + 50),
                                  fold_row("aten::empty", 1, 10, 10),
                                  fold_row("aten::mean", 1, 120, 30)));
  EXPECT_EQ(p.self_cpu_total_ns, 120u);
}

// Two same-named children, or a differently named only child: no fold.
TEST(AggregatorFold, OnlyAnOnlyChildOfTheSameNameFolds) {
  enum : uint32_t { kTo, kToCopy };
  Recording r;
  r.ops = {{"aten::to", "dtype", ""}, {"aten::_to_copy", "", ""}};
  r.events = {
      op_entry(0, 1000, kTo),  op_entry(10, 900, kTo), op_exit(20, 900, kTo),
      op_entry(30, 900, kTo),  op_exit(40, 900, kTo),  op_exit(50, 1000, kTo),
      op_entry(60, 1000, kTo), op_entry(70, 900, kToCopy), op_exit(80, 900, kToCopy),
      op_exit(90, 1000, kTo),
  };
  Profile p = aggregate(r);
  EXPECT_THAT(p.rows, ElementsAre(fold_row("aten::_to_copy", 1, 10, 10),
                                  fold_row("aten::to", 4, 50 + 10 + 10 + 30, 30 + 10 + 10 + 20)));
}

}  // namespace
}  // namespace gpuprof

// Tests of aggregate(): rows per op name, totals and the honesty counters.
#include "analyze/aggregator.h"
#include "output/op_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {

void PrintTo(const OpRow& r, std::ostream* os) {
  *os << "{" << r.name;
  if (!r.input_shapes.empty() || r.has_inputs)
    *os << " shapes " << r.input_shapes << (r.has_inputs ? "" : " (no inputs)");
  if (!r.stack.empty()) {
    *os << " stack [";
    for (size_t i = 0; i < r.stack.size(); i++) *os << (i ? " | " : "") << r.stack[i];
    *os << "]";
  }
  *os << " calls " << r.calls << " total " << r.cpu_total_ns << " self " << r.self_cpu_ns
      << " unwound " << r.unwound_calls;
  if (r.cpu_mem || r.self_cpu_mem || r.cuda_mem || r.self_cuda_mem)
    *os << " cpu_mem " << r.cpu_mem << " self_cpu_mem " << r.self_cpu_mem << " cuda_mem " << r.cuda_mem
        << " self_cuda_mem " << r.self_cuda_mem;
  if (r.on_gpu || r.self_cuda_ns || r.cuda_total_ns)
    *os << (r.on_gpu ? " GPU row" : "") << " self_cuda " << r.self_cuda_ns << " cuda_total " << r.cuda_total_ns;
  *os << "}";
}

namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using namespace ::gpuprof::test;

OpRow row(std::string name, uint64_t calls, uint64_t total, uint64_t self, uint64_t unwound = 0) {
  OpRow r;
  r.name = std::move(name);
  r.calls = calls;
  r.cpu_total_ns = total;
  r.self_cpu_ns = self;
  r.unwound_calls = unwound;
  return r;
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
  EXPECT_EQ(p.counters.calls_unwound, 1u);
  EXPECT_EQ(p.counters.exits_without_entry, 1u);
  EXPECT_EQ(p.counters.calls_open_at_end, 1u);
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
  OpRow r;
  r.name = std::move(name);
  r.calls = calls;
  r.cpu_total_ns = total;
  r.self_cpu_ns = self;
  return r;
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

// ---------------------------------------------------------------------------
// Memory columns (record --profile-memory) and rows per input shape
// (report --group-by-input-shape).

namespace gpuprof {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace ::gpuprof::test;

Recording memory_recording(std::vector<OpInfo> ops, std::vector<gp_event> events,
                           std::vector<gp_mem_event> mem_events) {
  Recording r;
  r.ops = std::move(ops);
  r.events = std::move(events);
  r.mem_events = std::move(mem_events);
  r.options.memory = true;
  r.complete = true;
  return r;
}

// The row of `name` (and `shapes`, when grouped); fails the test if missing.
const OpRow& row_named(const Profile& p, const std::string& name, const std::string& shapes = "") {
  for (const OpRow& r : p.rows)
    if (r.name == name && r.input_shapes == shapes) return r;
  ADD_FAILURE() << "no row " << name << " " << shapes;
  static const OpRow none;
  return none;
}

std::vector<std::string> row_names(const Profile& p) {
  std::vector<std::string> names;
  for (const OpRow& r : p.rows) names.push_back(r.name);
  return names;
}

std::vector<std::pair<std::string, std::string>> row_keys(const Profile& p) {
  std::vector<std::pair<std::string, std::string>> keys;
  for (const OpRow& r : p.rows) keys.emplace_back(r.name, r.input_shapes);
  return keys;
}

// linear -> addmm -> empty: each row's cpu_mem is what its call and the
// calls nested in it allocated minus released; self_cpu_mem its own part.
TEST(AggregatorMemory, RowsCarryTotalAndSelfBytesNegativeIncluded) {
  enum : uint32_t { kLinear, kAddmm, kEmpty };
  Profile p = aggregate(memory_recording(
      {op("aten::linear"), op("aten::addmm"), op("aten::empty", "memory_format")},
      {
          op_entry(0, 1000, kLinear),
          op_entry(10, 900, kAddmm),
          op_entry(20, 800, kEmpty),
          op_exit(30, 800, kEmpty),
          op_exit(60, 900, kAddmm),
          op_exit(100, 1000, kLinear),
      },
      {
          cpu_alloc(5, 0xa000, 64),            // linear
          cpu_alloc(25, 0xb000, 512),          // empty
          cuda_mem(26, 0xd000, 2048, 2048),    // empty
          cpu_alloc(40, 0xc000, 128),          // addmm
          cuda_mem(45, 0xd000, -2048, 0),      // addmm
          cpu_free(50, 0xa000),                // addmm: -64
          cpu_free(70, 0xb000),                // linear: -512
      }));
  EXPECT_TRUE(p.memory_recorded);
  EXPECT_THAT(row_names(p), ElementsAre("aten::addmm", "aten::empty", "aten::linear"));  // no [memory]

  const OpRow& empty = row_named(p, "aten::empty");
  EXPECT_EQ(empty.cpu_mem, 512);
  EXPECT_EQ(empty.self_cpu_mem, 512);
  EXPECT_EQ(empty.cuda_mem, 2048);
  EXPECT_EQ(empty.self_cuda_mem, 2048);

  const OpRow& addmm = row_named(p, "aten::addmm");
  EXPECT_EQ(addmm.self_cpu_mem, 128 - 64);
  EXPECT_EQ(addmm.cpu_mem, 128 - 64 + 512);
  EXPECT_EQ(addmm.self_cuda_mem, -2048);
  EXPECT_EQ(addmm.cuda_mem, 0);

  const OpRow& linear = row_named(p, "aten::linear");
  EXPECT_EQ(linear.self_cpu_mem, 64 - 512);
  EXPECT_EQ(linear.cpu_mem, 64 - 512 + (128 - 64 + 512));
  EXPECT_EQ(linear.self_cuda_mem, 0);
  EXPECT_EQ(linear.cuda_mem, 0);

  // Times are untouched by memory.
  EXPECT_EQ(linear.cpu_total_ns, 100u);
  EXPECT_EQ(p.self_cpu_total_ns, 100u);
}

TEST(AggregatorMemory, ACallThatOnlyReleasesHasNegativeMemory) {
  enum : uint32_t { kEmpty, kResize };
  Profile p = aggregate(memory_recording(
      {op("aten::empty"), op("aten::resize_")},
      {op_entry(0, 1000, kEmpty), op_exit(10, 1000, kEmpty), op_entry(20, 1000, kResize),
       op_exit(30, 1000, kResize)},
      {cpu_alloc(5, 0xa000, 4096), cpu_free(25, 0xa000)}));
  EXPECT_EQ(row_named(p, "aten::resize_").cpu_mem, -4096);
  EXPECT_EQ(row_named(p, "aten::resize_").self_cpu_mem, -4096);
  EXPECT_EQ(row_named(p, "aten::empty").cpu_mem, 4096);
}

// Siblings back to back: the second starts at the timestamp the first ended
// at. Each row gets its own bytes; neither is counted in the other.
TEST(AggregatorMemory, BackToBackSiblingsDoNotCountEachOthersBytes) {
  enum : uint32_t { kOuter, kFirst, kSecond };
  Profile p = aggregate(memory_recording(
      {op("aten::outer"), op("aten::first"), op("aten::second")},
      {
          op_entry(0, 1000, kOuter),
          op_entry(10, 900, kFirst),
          op_exit(20, 900, kFirst),
          op_entry(20, 900, kSecond),
          op_exit(30, 900, kSecond),
          op_exit(40, 1000, kOuter),
      },
      {cpu_alloc(15, 0xa, 10), cpu_alloc(25, 0xb, 100)}));
  EXPECT_EQ(row_named(p, "aten::first").cpu_mem, 10);
  EXPECT_EQ(row_named(p, "aten::second").cpu_mem, 100);
  EXPECT_EQ(row_named(p, "aten::outer").cpu_mem, 110);
  EXPECT_EQ(row_named(p, "aten::outer").self_cpu_mem, 0);
}

// _remove_dup_nodes: the folded child's self memory is the parent's self
// memory; the total was the parent's already.
TEST(AggregatorMemory, FoldedOnlyChildAddsItsSelfMemoryToTheParent) {
  enum : uint32_t { kMean, kDivScalar, kDivTensor, kEmpty };
  Profile p = aggregate(memory_recording(
      {op("aten::mean"), op("aten::div_", "Scalar"), op("aten::div_", "Tensor"),
       op("aten::empty", "memory_format")},
      {
          op_entry(0, 1000, kMean),
          op_entry(10, 900, kDivScalar),
          op_entry(20, 800, kDivTensor),
          op_entry(30, 700, kEmpty),
          op_exit(40, 700, kEmpty),
          op_exit(70, 800, kDivTensor),
          op_exit(100, 900, kDivScalar),
          op_exit(120, 1000, kMean),
      },
      {
          cpu_alloc(15, 0x1, 100),   // div_ (Scalar)
          cpu_alloc(25, 0x2, 10),    // div_ (Tensor), folded into it
          cpu_alloc(35, 0x3, 1),     // empty
          cpu_alloc(110, 0x4, 1000), // mean
      }));
  EXPECT_THAT(row_names(p), ElementsAre("aten::div_", "aten::empty", "aten::mean"));
  const OpRow& div = row_named(p, "aten::div_");
  EXPECT_EQ(div.calls, 1u);
  EXPECT_EQ(div.self_cpu_mem, 100 + 10);
  EXPECT_EQ(div.cpu_mem, 100 + 10 + 1);
  EXPECT_EQ(row_named(p, "aten::empty").self_cpu_mem, 1);
  EXPECT_EQ(row_named(p, "aten::mean").self_cpu_mem, 1000);
  EXPECT_EQ(row_named(p, "aten::mean").cpu_mem, 1111);
}

TEST(AggregatorMemory, RowsSumTheirCalls) {
  enum : uint32_t { kAdd, kMul };
  Profile p = aggregate(memory_recording(
      {op("aten::add", "Tensor"), op("aten::mul"), op("aten::add", "Scalar")},
      {
          op_entry(0, 1000, kAdd), op_exit(10, 1000, kAdd),
          op_entry(20, 1000, kMul),
          op_entry(22, 900, 2), op_exit(28, 900, 2),  // add.Scalar nested in mul
          op_exit(30, 1000, kMul),
          op_entry(40, 1000, kAdd), op_exit(50, 1000, kAdd),
      },
      {
          cpu_alloc(5, 0xa, 8),
          cpu_alloc(25, 0xb, 16),
          cpu_alloc(29, 0xc, 1),
          cpu_free(45, 0xa),
          cuda_mem(46, 0xd, 32, 32),
      }));
  const OpRow& add = row_named(p, "aten::add");
  EXPECT_EQ(add.calls, 3u);
  EXPECT_EQ(add.cpu_mem, 8 + 16 - 8);
  EXPECT_EQ(add.self_cpu_mem, 8 + 16 - 8);
  EXPECT_EQ(add.cuda_mem, 32);
  EXPECT_EQ(add.self_cuda_mem, 32);
  const OpRow& mul = row_named(p, "aten::mul");
  EXPECT_EQ(mul.cpu_mem, 16 + 1);
  EXPECT_EQ(mul.self_cpu_mem, 1);
}

// torch's top-level memory events: a "[memory]" row, one call per event,
// no time.
TEST(AggregatorMemory, EventsOutsideOpsMakeAMemoryRow) {
  enum : uint32_t { kAdd };
  Profile p = aggregate(memory_recording(
      {op("aten::add")}, {op_entry(100, 1000, kAdd), op_exit(200, 1000, kAdd)},
      {
          cpu_alloc(10, 0xa, 4096),       // before add
          cpu_alloc(150, 0xb, 64),        // add
          cpu_free(250, 0xa),             // after add
          cpu_free(260, 0xffff),          // unknown block: not an event at all
          cuda_mem(270, 0xc, 1024, 1024),
          cuda_mem(280, 0xe, 256, 1280, 0, /*tid=*/999),  // another thread, no ops
      }));
  EXPECT_THAT(row_names(p), ElementsAre("[memory]", "aten::add"));
  const OpRow& memory = row_named(p, "[memory]");
  EXPECT_EQ(memory.calls, 4u);
  EXPECT_EQ(memory.cpu_total_ns, 0u);
  EXPECT_EQ(memory.self_cpu_ns, 0u);
  EXPECT_EQ(memory.cpu_mem, 4096 - 4096);
  EXPECT_EQ(memory.self_cpu_mem, 0);
  EXPECT_EQ(memory.cuda_mem, 1024 + 256);
  EXPECT_EQ(memory.self_cuda_mem, 1024 + 256);
  EXPECT_EQ(memory.input_shapes, "");
  EXPECT_FALSE(memory.has_inputs);
  EXPECT_EQ(row_named(p, "aten::add").cpu_mem, 64);
  EXPECT_EQ(p.self_cpu_total_ns, 100u);  // the [memory] row adds no time
  EXPECT_EQ(p.memory_unmatched_frees, 1u);
}

TEST(AggregatorMemory, NothingAboutMemoryWhenItWasNotRecorded) {
  enum : uint32_t { kAdd };
  Recording r = memory_recording({op("aten::add")}, {op_entry(100, 1000, kAdd), op_exit(200, 1000, kAdd)},
                                 {cpu_alloc(10, 0xa, 4096), cpu_alloc(150, 0xb, 64), cpu_free(160, 0x1),
                                  cuda_mem(170, 0xc, 8, 8)});
  r.options.memory = false;
  Profile p = aggregate(r);
  EXPECT_FALSE(p.memory_recorded);
  EXPECT_THAT(p.rows, ElementsAre(row("aten::add", 1, 100, 100)));  // all memory fields 0
  EXPECT_FALSE(p.cpu_memory_peak.seen);
  EXPECT_FALSE(p.cuda_memory_peak.seen);
  EXPECT_EQ(p.memory_unmatched_frees, 0u);
}

TEST(AggregatorMemory, NoMemoryRowWithoutEventsOutsideOps) {
  Profile p = aggregate(memory_recording({op("aten::add")}, {op_entry(0, 1000, 0), op_exit(10, 1000, 0)}, {}));
  EXPECT_TRUE(p.memory_recorded);
  EXPECT_THAT(p.rows, ElementsAre(row("aten::add", 1, 10, 10)));
}

TEST(AggregatorMemory, PeaksNameTheOpAndTimeSinceTheStart) {
  enum : uint32_t { kConv, kRelu };
  Recording r = memory_recording(
      {op("aten::conv2d"), op("aten::relu")},
      {
          op_entry(1'000'000'000, 1000, kConv),
          op_exit(1'500'000'000, 1000, kConv),
          op_entry(2'000'000'000, 1000, kRelu),
          op_exit(2'600'000'000, 1000, kRelu),
      },
      {
          cpu_alloc(1'100'000'000, 0xa, 300),                   // conv: 300
          cpu_alloc(2'250'000'000, 0xb, 200),                   // relu: 500, the peak
          cpu_free(2'300'000'000, 0xa),                         // 200
          cuda_mem(1'200'000'000, 0xc, 4096, 4096, 1),
          cuda_mem(2'100'000'000, 0xd, 8192, 12288, 1),         // relu: the CUDA peak
          cuda_mem(2'700'000'000, 0xd, -8192, 4096, 1),
      });
  r.clock.start_monotonic_ns = 500'000'000;
  Profile p = aggregate(r);
  ASSERT_TRUE(p.cpu_memory_peak.seen);
  EXPECT_EQ(p.cpu_memory_peak.bytes, 500);
  EXPECT_EQ(p.cpu_memory_peak.op, "aten::relu");
  EXPECT_DOUBLE_EQ(p.cpu_memory_peak.at_s, 1.75);
  EXPECT_EQ(p.cpu_memory_peak.device_index, -1);
  ASSERT_TRUE(p.cuda_memory_peak.seen);
  EXPECT_EQ(p.cuda_memory_peak.bytes, 12288);
  EXPECT_EQ(p.cuda_memory_peak.op, "aten::relu");
  EXPECT_DOUBLE_EQ(p.cuda_memory_peak.at_s, 1.6);
  EXPECT_EQ(p.cuda_memory_peak.device_index, 1);
}

TEST(AggregatorMemory, PeakOutsideOpsHasNoOpName) {
  Profile p = aggregate(memory_recording({op("aten::add")}, {op_entry(0, 1000, 0), op_exit(10, 1000, 0)},
                                         {cpu_alloc(5, 0xa, 1), cpu_alloc(20, 0xb, 2)}));
  ASSERT_TRUE(p.cpu_memory_peak.seen);
  EXPECT_EQ(p.cpu_memory_peak.bytes, 3);
  EXPECT_EQ(p.cpu_memory_peak.op, "");
  EXPECT_FALSE(p.cuda_memory_peak.seen);
}

// --- grouped by input shape ------------------------------------------------

OpInfo op_with_args(std::string name, int32_t arg_count, uint32_t tensor_args) {
  OpInfo info = op(std::move(name));
  info.arg_count = arg_count;
  info.tensor_args = tensor_args;
  return info;
}

TEST(AggregatorInputShapes, RowsPerNameAndShapesSortedByBoth) {
  enum : uint32_t { kAdd, kRelu };
  Recording r = recording_of(
      {op_with_args("aten::add", 3, 2), op_with_args("aten::relu", 1, 1)},
      {
          op_entry(0, 1000, kAdd), op_exit(10, 1000, kAdd),       // events 0, 1
          op_entry(20, 1000, kAdd), op_exit(40, 1000, kAdd),      // 2, 3
          op_entry(50, 1000, kRelu), op_exit(55, 1000, kRelu),    // 4, 5
          op_entry(60, 1000, kAdd), op_exit(100, 1000, kAdd),     // 6, 7
      });
  r.shapes = {
      {std::vector<int64_t>{2, 3}, std::vector<int64_t>{2, 3}, std::vector<int64_t>{}},
      {std::vector<int64_t>{10}, std::vector<int64_t>{10}, std::vector<int64_t>{}},
      {std::vector<int64_t>{10}},
  };
  r.entry_shapes = {{0, 0}, {2, 1}, {4, 2}, {6, 0}};
  Profile p = aggregate(r, {.group_by_input_shape = true});
  EXPECT_TRUE(p.grouped_by_input_shape);
  // "[[10]..." sorts before "[[2, 3]...": the order is the strings'.
  EXPECT_THAT(row_keys(p), ElementsAre(std::pair<std::string, std::string>{"aten::add", "[[10], [10], []]"},
                                       std::pair<std::string, std::string>{"aten::add", "[[2, 3], [2, 3], []]"},
                                       std::pair<std::string, std::string>{"aten::relu", "[[10]]"}));
  const OpRow& small = row_named(p, "aten::add", "[[2, 3], [2, 3], []]");
  EXPECT_EQ(small.calls, 2u);
  EXPECT_EQ(small.cpu_total_ns, 10u + 40u);
  EXPECT_TRUE(small.has_inputs);
  const OpRow& large = row_named(p, "aten::add", "[[10], [10], []]");
  EXPECT_EQ(large.calls, 1u);
  EXPECT_EQ(large.cpu_total_ns, 20u);
  EXPECT_EQ(p.self_cpu_total_ns, 10u + 20u + 5u + 40u);

  // The same recording without grouping: one row per name, no shapes.
  Profile flat = aggregate(r);
  EXPECT_FALSE(flat.grouped_by_input_shape);
  EXPECT_THAT(flat.rows, ElementsAre(row("aten::add", 3, 70, 70), row("aten::relu", 1, 5, 5)));
}

TEST(AggregatorInputShapes, OpsWithoutTensorArgumentsHaveStaticShapes) {
  enum : uint32_t { kOnes, kNoArgs, kUnlocated, kNoRecord };
  Recording r = recording_of(
      {op_with_args("aten::ones", 5, 0), op_with_args("aten::_nnpack_available", 0, 0),
       op_with_args("aten::weird", -1, 0), op_with_args("aten::mul", 2, 2)},
      {
          op_entry(0, 1000, kOnes), op_exit(10, 1000, kOnes),
          op_entry(20, 1000, kNoArgs), op_exit(30, 1000, kNoArgs),
          op_entry(40, 1000, kUnlocated), op_exit(50, 1000, kUnlocated),
          op_entry(60, 1000, kNoRecord), op_exit(70, 1000, kNoRecord),  // its record was lost
          op_entry(80, 1000, kOnes), op_exit(90, 1000, kOnes),
      });
  Profile p = aggregate(r, {.group_by_input_shape = true});
  ASSERT_EQ(p.rows.size(), 4u);
  const OpRow& ones = row_named(p, "aten::ones", "[[], [], [], [], []]");
  EXPECT_EQ(ones.calls, 2u);
  EXPECT_TRUE(ones.has_inputs);
  EXPECT_FALSE(row_named(p, "aten::_nnpack_available", "[]").has_inputs);
  EXPECT_TRUE(row_named(p, "aten::weird", "?").has_inputs);
  EXPECT_TRUE(row_named(p, "aten::mul", "?").has_inputs);
}

TEST(AggregatorInputShapes, RecordedListsPrintAsTorchDoes) {
  enum : uint32_t { kMul, kSize };
  Recording r = recording_of(
      {op_with_args("aten::mul", 2, 2), op_with_args("aten::size", -1, 0)},
      {
          op_entry(0, 1000, kMul), op_exit(10, 1000, kMul),    // 0
          op_entry(20, 1000, kSize), op_exit(30, 1000, kSize),  // 2
      });
  r.shapes = {{std::vector<int64_t>{4, 4}, std::nullopt}, {}};
  r.entry_shapes = {{0, 0}, {2, 1}};
  Profile p = aggregate(r, {.group_by_input_shape = true});
  EXPECT_TRUE(row_named(p, "aten::mul", "[[4, 4], ?]").has_inputs);
  // A recorded empty list, where the op alone would say "?".
  EXPECT_FALSE(row_named(p, "aten::size", "[]").has_inputs);
}

// A folded child's shapes make no row: the parent's call is the one counted.
TEST(AggregatorInputShapes, FoldedChildTakesNoRowOfItsOwn) {
  enum : uint32_t { kDivScalar, kDivTensor };
  Recording r = recording_of({op_with_args("aten::div_", 2, 1), op_with_args("aten::div_", 2, 2)},
                             {
                                 op_entry(0, 1000, kDivScalar),   // 0
                                 op_entry(10, 900, kDivTensor),   // 1
                                 op_exit(20, 900, kDivTensor),
                                 op_exit(30, 1000, kDivScalar),
                             });
  r.shapes = {{std::vector<int64_t>{8}, std::vector<int64_t>{}}, {std::vector<int64_t>{9}, std::vector<int64_t>{}}};
  r.entry_shapes = {{0, 0}, {1, 1}};
  Profile p = aggregate(r, {.group_by_input_shape = true});
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(p.rows[0].input_shapes, "[[8], []]");
  EXPECT_EQ(p.rows[0].calls, 1u);
  EXPECT_EQ(p.rows[0].self_cpu_ns, 30u);
}

TEST(AggregatorInputShapes, MemoryRowAndColumnsPerShapeGroup) {
  enum : uint32_t { kCat };
  Recording r = memory_recording({op_with_args("aten::cat", 2, 1)},
                                 {
                                     op_entry(0, 1000, kCat), op_exit(10, 1000, kCat),   // 0
                                     op_entry(20, 1000, kCat), op_exit(30, 1000, kCat),  // 2
                                 },
                                 {cpu_alloc(5, 0xa, 100), cpu_alloc(25, 0xb, 1000), cpu_alloc(40, 0xc, 7)});
  r.shapes = {{std::vector<int64_t>{}, std::vector<int64_t>{3}}};
  r.entry_shapes = {{0, 0}};  // the second call's record was lost: "?"
  Profile p = aggregate(r, {.group_by_input_shape = true});
  EXPECT_THAT(row_keys(p), ElementsAre(std::pair<std::string, std::string>{"[memory]", "[]"},
                                       std::pair<std::string, std::string>{"aten::cat", "?"},
                                       std::pair<std::string, std::string>{"aten::cat", "[[], [3]]"}));
  EXPECT_EQ(row_named(p, "aten::cat", "[[], [3]]").cpu_mem, 100);
  EXPECT_EQ(row_named(p, "aten::cat", "?").cpu_mem, 1000);
  const OpRow& memory = row_named(p, "[memory]", "[]");
  EXPECT_EQ(memory.calls, 1u);
  EXPECT_EQ(memory.cpu_mem, 7);
  EXPECT_FALSE(memory.has_inputs);
}

// --- grouped by stack -------------------------------------------------------

using Stack = std::vector<std::string>;

// Python frames of the stack tests; recordings store stacks as ids into
// these, outermost first.
enum : uint32_t { kModule, kMain, kBlock0, kBlock1, kForward, kRunpy };
const std::vector<std::string> kFrames = {"train.py(30): <module>", "train.py(12): main",
                                          "nn.Module: Block_0", "nn.Module: Block_1",
                                          "model.py(5): forward", "<frozen runpy>(88): _run_code"};

// `r` recorded with --with-stack: Python stacks (frame ids, outermost first)
// and the ENTRY events that ran under them.
Recording with_stacks(Recording r, std::vector<std::vector<uint32_t>> stacks,
                      std::vector<EntryStack> entry_stacks) {
  r.options.with_stack = true;
  r.sample_frames = kFrames;
  r.sample_stacks = std::move(stacks);
  r.entry_stacks = std::move(entry_stacks);
  return r;
}

std::vector<std::pair<std::string, Stack>> stack_keys(const Profile& p) {
  std::vector<std::pair<std::string, Stack>> keys;
  for (const OpRow& r : p.rows) keys.emplace_back(r.name, r.stack);
  return keys;
}

// Four calls of aten::add under forward() of two blocks, called from main()
// once directly and once from a deeper caller.
Recording block_adds() {
  enum : uint32_t { kAdd };
  return with_stacks(recording_of({op("aten::add")},
                                  {
                                      op_entry(0, 1000, kAdd), op_exit(10, 1000, kAdd),    // 0
                                      op_entry(20, 1000, kAdd), op_exit(40, 1000, kAdd),   // 2
                                      op_entry(50, 1000, kAdd), op_exit(80, 1000, kAdd),   // 4
                                      op_entry(90, 1000, kAdd), op_exit(130, 1000, kAdd),  // 6
                                  }),
                     {
                         {kModule, kMain, kBlock0, kForward},
                         {kModule, kMain, kBlock1, kForward},
                         {kRunpy, kModule, kMain, kBlock0, kForward},
                     },
                     {{0, 0}, {2, 1}, {4, 2}, {6, 0}});
}

TEST(AggregatorStack, RowsSplitByTheTopFramesInnermostFirst) {
  Profile p = aggregate(block_adds(), {.group_by_stack_n = 2});
  EXPECT_EQ(p.group_by_stack_n, 2);
  // The third stack differs from the first below the top 2 frames only.
  EXPECT_THAT(stack_keys(p),
              ElementsAre(std::pair<std::string, Stack>{"aten::add", {"model.py(5): forward", "nn.Module: Block_0"}},
                          std::pair<std::string, Stack>{"aten::add", {"model.py(5): forward", "nn.Module: Block_1"}}));
  EXPECT_EQ(p.rows[0].calls, 3u);
  EXPECT_EQ(p.rows[0].cpu_total_ns, 10u + 30u + 40u);
  EXPECT_EQ(p.rows[1].calls, 1u);
  EXPECT_EQ(p.rows[1].cpu_total_ns, 20u);
  EXPECT_EQ(p.self_cpu_total_ns, 100u);

  // One frame: every call is under the same forward().
  Profile top = aggregate(block_adds(), {.group_by_stack_n = 1});
  ASSERT_EQ(top.rows.size(), 1u);
  EXPECT_EQ(top.rows[0].stack, Stack{"model.py(5): forward"});
  EXPECT_EQ(top.rows[0].calls, 4u);

  // Not grouped: the stacks are ignored.
  Profile flat = aggregate(block_adds());
  EXPECT_EQ(flat.group_by_stack_n, 0);
  EXPECT_THAT(flat.rows, ElementsAre(row("aten::add", 4, 100, 100)));
}

TEST(AggregatorStack, NLargerThanTheStackKeepsTheWholeStack) {
  Profile p = aggregate(block_adds(), {.group_by_stack_n = 5});
  // Stacks of 4 frames, and the one of 5 under runpy, are all distinct.
  EXPECT_THAT(stack_keys(p),
              ElementsAre(std::pair<std::string, Stack>{"aten::add",
                                                        {"model.py(5): forward", "nn.Module: Block_0",
                                                         "train.py(12): main", "train.py(30): <module>"}},
                          std::pair<std::string, Stack>{"aten::add",
                                                        {"model.py(5): forward", "nn.Module: Block_0",
                                                         "train.py(12): main", "train.py(30): <module>",
                                                         "<frozen runpy>(88): _run_code"}},
                          std::pair<std::string, Stack>{"aten::add",
                                                        {"model.py(5): forward", "nn.Module: Block_1",
                                                         "train.py(12): main", "train.py(30): <module>"}}));
  EXPECT_EQ(p.rows[0].calls, 2u);
  EXPECT_EQ(p.rows[1].calls, 1u);
  EXPECT_EQ(p.rows[2].calls, 1u);
  EXPECT_EQ(stack_keys(aggregate(block_adds(), {.group_by_stack_n = 100})), stack_keys(p));
}

// Calls without a recorded stack (a thread without Python, a stack that
// could not be read) form their own row with an empty stack; so do ids that
// point outside the recording.
TEST(AggregatorStack, CallsWithoutAStackHaveAnEmptyOne) {
  enum : uint32_t { kMm, kMmBackward };
  Recording r = with_stacks(recording_of({op("aten::mm"), op("autograd::MmBackward0")},
                                         {
                                             op_entry(0, 1000, kMm), op_exit(10, 1000, kMm),      // 0
                                             op_entry(20, 1000, kMm), op_exit(40, 1000, kMm),     // 2
                                             op_entry(0, 1000, kMmBackward, 7),                   // 4
                                             op_exit(50, 1000, kMmBackward, 7),
                                             op_entry(60, 1000, kMm), op_exit(100, 1000, kMm),    // 6
                                             op_entry(110, 1000, kMm), op_exit(111, 1000, kMm),   // 8
                                         }),
                            {{kMain, kForward}, {kMain, 99}},
                            {{0, 0}, {6, 5}, {8, 1}});
  Profile p = aggregate(r, {.group_by_stack_n = 5});
  EXPECT_THAT(stack_keys(p),
              ElementsAre(std::pair<std::string, Stack>{"aten::mm", {}},
                          std::pair<std::string, Stack>{"aten::mm", {"[unknown]", "train.py(12): main"}},
                          std::pair<std::string, Stack>{"aten::mm", {"model.py(5): forward", "train.py(12): main"}},
                          std::pair<std::string, Stack>{"autograd::MmBackward0", {}}));
  EXPECT_EQ(p.rows[0].calls, 2u);  // event 2 has no stack, event 6 one outside the recording
  EXPECT_EQ(p.rows[0].cpu_total_ns, 20u + 40u);
}

TEST(AggregatorStack, CombinesWithInputShapes) {
  enum : uint32_t { kAdd };
  Recording r = with_stacks(recording_of({op_with_args("aten::add", 3, 2)},
                                         {
                                             op_entry(0, 1000, kAdd), op_exit(10, 1000, kAdd),    // 0
                                             op_entry(20, 1000, kAdd), op_exit(40, 1000, kAdd),   // 2
                                             op_entry(50, 1000, kAdd), op_exit(80, 1000, kAdd),   // 4
                                             op_entry(90, 1000, kAdd), op_exit(130, 1000, kAdd),  // 6
                                         }),
                            {{kMain, kBlock0, kForward}, {kMain, kBlock1, kForward}},
                            {{0, 0}, {2, 1}, {4, 0}, {6, 0}});
  r.shapes = {
      {std::vector<int64_t>{2, 3}, std::vector<int64_t>{2, 3}, std::vector<int64_t>{}},
      {std::vector<int64_t>{10}, std::vector<int64_t>{10}, std::vector<int64_t>{}},
  };
  r.entry_shapes = {{0, 0}, {2, 0}, {4, 1}, {6, 0}};
  Profile p = aggregate(r, {.group_by_input_shape = true, .group_by_stack_n = 2});
  EXPECT_TRUE(p.grouped_by_input_shape);
  EXPECT_EQ(p.group_by_stack_n, 2);
  // Sorted by name, then shapes, then stack.
  ASSERT_EQ(p.rows.size(), 3u);
  EXPECT_EQ(p.rows[0].input_shapes, "[[10], [10], []]");
  EXPECT_EQ(p.rows[0].stack, (Stack{"model.py(5): forward", "nn.Module: Block_0"}));
  EXPECT_EQ(p.rows[0].calls, 1u);
  EXPECT_EQ(p.rows[1].input_shapes, "[[2, 3], [2, 3], []]");
  EXPECT_EQ(p.rows[1].stack, (Stack{"model.py(5): forward", "nn.Module: Block_0"}));
  EXPECT_EQ(p.rows[1].calls, 2u);
  EXPECT_EQ(p.rows[1].cpu_total_ns, 10u + 40u);
  EXPECT_EQ(p.rows[2].input_shapes, "[[2, 3], [2, 3], []]");
  EXPECT_EQ(p.rows[2].stack, (Stack{"model.py(5): forward", "nn.Module: Block_1"}));
  EXPECT_TRUE(p.rows[2].has_inputs);
}

// A folded child is counted in its parent's call: the parent's stack is the
// row's, as torch keeps the parent of _remove_dup_nodes.
TEST(AggregatorStack, FoldedChildTakesItsParentsStack) {
  enum : uint32_t { kDiv };
  Recording r = with_stacks(recording_of({op("aten::div_")},
                                         {
                                             op_entry(0, 1000, kDiv),   // 0
                                             op_entry(10, 900, kDiv),   // 1
                                             op_exit(20, 900, kDiv),
                                             op_exit(30, 1000, kDiv),
                                         }),
                            {{kMain}, {kMain, kForward}}, {{0, 0}, {1, 1}});
  Profile p = aggregate(r, {.group_by_stack_n = 5});
  ASSERT_EQ(p.rows.size(), 1u);
  EXPECT_EQ(p.rows[0].stack, Stack{"train.py(12): main"});
  EXPECT_EQ(p.rows[0].calls, 1u);
}

// Allocator events outside every op make the [memory] row, which has no
// stack (torch gives its memory events stack []).
TEST(AggregatorStack, MemoryRowHasNoStack) {
  enum : uint32_t { kCat };
  Recording r = memory_recording({op("aten::cat")}, {op_entry(0, 1000, kCat), op_exit(10, 1000, kCat)},
                                 {cpu_alloc(5, 0xa, 100), cpu_alloc(40, 0xc, 7)});
  r = with_stacks(std::move(r), {{kMain}}, {{0, 0}});
  Profile p = aggregate(r, {.group_by_stack_n = 5});
  EXPECT_THAT(stack_keys(p), ElementsAre(std::pair<std::string, Stack>{"[memory]", {}},
                                         std::pair<std::string, Stack>{"aten::cat", {"train.py(12): main"}}));
}


// GPU times (the CUPTI shim): torch's Self CUDA / CUDA total and kernel rows.

OpRow gpu_row(std::string name, uint64_t calls, uint64_t total, uint64_t self, uint64_t self_cuda,
              uint64_t cuda_total, bool on_gpu = false) {
  OpRow r = row(std::move(name), calls, total, self);
  r.self_cuda_ns = self_cuda;
  r.cuda_total_ns = cuda_total;
  r.on_gpu = on_gpu;
  return r;
}

// aten::linear (100..200) calling aten::addmm (120..150) on kTid, with the
// shim's launch records: one in addmm, one in linear, one outside ops.
Recording linear_on_gpu() {
  Recording r = recording_of({op("aten::linear"), op("aten::addmm")},
                             {op_entry(100, 0x1000, 0), op_entry(120, 0x0f00, 1), op_exit(150, 0x0f00, 1),
                              op_exit(200, 0x1000, 0)});
  r.launch_names = {"ampere_sgemm_32x32", "void at::native::bias_kernel()"};
  r.cupti_shim = CuptiShimInfo{"/opt/gpuprof/libgpuprof_cupti.so", 1, 0, 0};
  r.gpu_correlations = {
      {130, 7, kTid, 211, 2},  // in aten::addmm
      {170, 8, kTid, 211, 2},  // in aten::linear, after addmm returned
      {50, 9, kTid, 211, 2},   // before any op
  };
  // The GPU runs them later than the launches: only the id joins.
  r.gpu_activities = {gpu_activity(8, 9000, 9040, 1), gpu_activity(7, 5000, 5700, 0), gpu_activity(9, 1000, 1003, 1),
                      gpu_activity(7, 5700, 6000, 0), gpu_activity(42, 7000, 7005, 1)};  // id 42: launch not seen
  return r;
}

TEST(AggregatorGpu, OpsGetSelfAndTotalCudaTimeAndKernelsTheirOwnRows) {
  const Profile p = aggregate(linear_on_gpu());
  EXPECT_TRUE(p.gpu_recorded);
  // Kernel rows hold every activity, whatever launched it (outside ops, or
  // a launch never seen, too); op rows only what their launches made.
  EXPECT_THAT(p.rows, ElementsAre(gpu_row("ampere_sgemm_32x32", 2, 0, 0, 1000, 1000, true),
                                  gpu_row("aten::addmm", 1, 30, 30, 1000, 1000),
                                  gpu_row("aten::linear", 1, 100, 70, 40, 1040),
                                  gpu_row("void at::native::bias_kernel()", 3, 0, 0, 48, 48, true)));
}

TEST(AggregatorGpu, TableShowsTorchsCudaColumnsAndFooter) {
  const std::string table = format_op_table(aggregate(linear_on_gpu()), {.sort_by = SortKey::cuda_time_total});
  std::vector<std::string> lines;
  for (size_t at = 0, end; (end = table.find('\n', at)) != std::string::npos; at = end + 1)
    lines.push_back(table.substr(at, end - at));
  ASSERT_EQ(lines.size(), 10u) << table;
  EXPECT_THAT(lines[1], testing::HasSubstr("CPU time avg     Self CUDA   Self CUDA %    CUDA total  CUDA time avg"));
  // By CUDA total: linear 1.040us, then addmm and the gemm at 1.000us (name order), bias 0.048us.
  EXPECT_THAT(lines[3], testing::StartsWith("                      aten::linear  "));  // 30 + 4 wide
  EXPECT_THAT(lines[3], testing::HasSubstr("0.040us         3.82%       1.040us       1.040us"));
  EXPECT_THAT(lines[4], testing::HasSubstr("ampere_sgemm_32x32"));
  EXPECT_THAT(lines[4], testing::HasSubstr("1.000us        95.42%       1.000us       0.500us"));
  EXPECT_THAT(lines[5], testing::HasSubstr("aten::addmm"));
  EXPECT_THAT(lines[6], testing::HasSubstr("void at::native::bias_kernel()"));
  EXPECT_EQ(lines[8], "Self CPU time total: 0.100us");
  EXPECT_EQ(lines[9], "Self CUDA time total: 1.048us");  // the kernel rows' sum
}

TEST(AggregatorGpu, TotalsAddUpThroughEveryLevel) {
  // aten::a (0..300) > aten::b (10..200) > aten::c (20..100), each launching
  // one kernel; aten::c runs twice more at the top level without launching.
  Recording r = recording_of({op("aten::a"), op("aten::b"), op("aten::c")},
                             {op_entry(0, 0x1000, 0), op_entry(10, 0x0f00, 1), op_entry(20, 0x0e00, 2),
                              op_exit(100, 0x0e00, 2), op_exit(200, 0x0f00, 1), op_exit(300, 0x1000, 0),
                              op_entry(400, 0x1000, 2), op_exit(410, 0x1000, 2), op_entry(500, 0x1000, 2),
                              op_exit(510, 0x1000, 2)});
  r.launch_names = {"k"};
  r.cupti_shim = CuptiShimInfo{};
  r.gpu_correlations = {{50, 1, kTid, 211, 2}, {150, 2, kTid, 211, 2}, {250, 3, kTid, 211, 2}};
  r.gpu_activities = {gpu_activity(1, 0, 1, 0), gpu_activity(2, 0, 10, 0), gpu_activity(3, 0, 100, 0)};
  EXPECT_THAT(aggregate(r).rows, ElementsAre(gpu_row("aten::a", 1, 300, 110, 100, 111),
                                             gpu_row("aten::b", 1, 190, 110, 10, 11),
                                             gpu_row("aten::c", 3, 100, 100, 1, 1),
                                             gpu_row("k", 3, 0, 0, 111, 111, true)));
}

TEST(AggregatorGpu, FoldedChainKeepsItsDeepestCallsKernelsAsTorchDoes) {
  // aten::div_ (0..100) launches k_outer, then calls its only child
  // aten::div_ (20..80), which launches k_inner: torch folds the child into
  // the parent and REPLACES the parent's kernels with the child's, so the
  // row shows k_inner's time only. The kernel rows still count both.
  Recording r = recording_of({op("aten::mean"), op("aten::div_")},
                             {op_entry(0, 0x1100, 0), op_entry(5, 0x1000, 1), op_entry(20, 0x0f00, 1),
                              op_exit(80, 0x0f00, 1), op_exit(100, 0x1000, 1), op_exit(110, 0x1100, 0)});
  r.launch_names = {"k_outer", "k_inner"};
  r.cupti_shim = CuptiShimInfo{};
  r.gpu_correlations = {{10, 1, kTid, 211, 2}, {50, 2, kTid, 211, 2}};
  r.gpu_activities = {gpu_activity(1, 0, 700, 0), gpu_activity(2, 0, 30, 1)};
  EXPECT_THAT(aggregate(r).rows, ElementsAre(gpu_row("aten::div_", 1, 95, 95, 30, 30),
                                             gpu_row("aten::mean", 1, 110, 15, 0, 30),
                                             gpu_row("k_inner", 1, 0, 0, 30, 30, true),
                                             gpu_row("k_outer", 1, 0, 0, 700, 700, true)));
}

TEST(AggregatorGpu, KernelRowsHaveNoShapesOrStack) {
  Recording r = linear_on_gpu();
  const Profile p = aggregate(r, {.group_by_input_shape = true});
  for (const OpRow& row : p.rows) {
    if (!row.on_gpu) continue;
    EXPECT_EQ(row.input_shapes, "[]") << row.name;
    EXPECT_FALSE(row.has_inputs);
    EXPECT_TRUE(row.stack.empty());
  }
}

TEST(AggregatorGpu, NoShimNoGpuTimes) {
  Recording r = linear_on_gpu();
  r.cupti_shim.reset();
  r.gpu_activities.clear();
  r.gpu_correlations.clear();
  const Profile p = aggregate(r);
  EXPECT_FALSE(p.gpu_recorded);
  EXPECT_THAT(p.rows, ElementsAre(row("aten::addmm", 1, 30, 30), row("aten::linear", 1, 100, 70)));
  EXPECT_EQ(format_op_table(p, {}).find("CUDA"), std::string::npos);
}

}  // namespace
}  // namespace gpuprof

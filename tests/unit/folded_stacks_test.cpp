// folded_stacks_test.cpp: report --folded (folded_stacks.h).
//
// Each case builds probe events, and its expected output is the golden file
// tests/golden/folded_<case>.txt, written by hand from the times in the case
// (the comments give the arithmetic). The last tests check the stacks
// against the table (aggregate()) on random event streams.
#include "output/folded_stacks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "probe_events.h"
#include "recordings.h"
#include "result_values.h"
#include "test_files.h"

namespace gpuprof {
namespace {

namespace fs = std::filesystem;
using namespace ::gpuprof::test;
using ::testing::ElementsAre;
using ::testing::IsEmpty;

std::string read_golden(const std::string& name) {
  const fs::path path = golden_dir() / ("folded_" + name + ".txt");
  std::string contents;
  EXPECT_TRUE(read_file(path, &contents)) << "cannot read " << path;
  return contents;
}

constexpr uint64_t us(uint64_t n) { return n * 1000; }

// flamegraph.pl's line rule (the last whitespace run before a trailing
// number separates the count; a second trailing number would be a
// differential count) and speedscope's (/^(.*) (\d+)$/): with no whitespace
// in any frame both read each line the same way.
void expect_well_formed(const std::string& text) {
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    EXPECT_EQ(line.find_first_of(" \t\r\v\f"), space) << "whitespace inside a frame: " << line;
    const std::string count = line.substr(space + 1);
    EXPECT_FALSE(count.empty()) << line;
    EXPECT_TRUE(std::all_of(count.begin(), count.end(), [](char c) { return c >= '0' && c <= '9'; })) << line;
    EXPECT_NE(count, "0") << line;
    const std::string stack = line.substr(0, space);
    EXPECT_FALSE(stack.empty()) << line;
    EXPECT_NE(stack.front(), ';') << line;
    EXPECT_NE(stack.back(), ';') << line;
    EXPECT_EQ(stack.find(";;"), std::string::npos) << line;
  }
}

void expect_golden(const std::string& name, const FoldedStacks& folded) {
  const std::string text = format_folded(folded);
  EXPECT_EQ(text, read_golden(name)) << "folded_" << name << ".txt; got:\n" << text;
  expect_well_formed(text);
  // report --folded writes the same bytes a line at a time.
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  ASSERT_TRUE(write_folded(folded, file));
  std::string written(static_cast<size_t>(std::ftell(file)), '\0');
  std::rewind(file);
  EXPECT_EQ(std::fread(written.data(), 1, written.size(), file), written.size());
  std::fclose(file);
  EXPECT_EQ(written, text);
  // Sorted by stack in byte order, no stack twice.
  for (size_t i = 1; i < folded.stacks.size(); i++)
    EXPECT_LT(folded.stacks[i - 1].stack, folded.stacks[i].stack);
}

// ---------------------------------------------------------------------------
// Paths, sums and the same-name fold.

TEST(FoldedStacks, NestedCallsGiveTheirOpPathOutermostFirst) {
  enum : uint32_t { kConv2d, kConvolution, kUnderscoreConvolution, kMkldnnConvolution };
  // Self: mkldnn 160-60 = 100, _convolution 110-100 = 40 (140 in all),
  // convolution 170-140 = 30, conv2d 200-170 = 30 (us).
  FoldedStacks f = folded_stacks(recording_of(
      {op("aten::conv2d"), op("aten::convolution"), op("aten::_convolution"), op("aten::mkldnn_convolution")},
      {
          op_entry(us(0), 1000, kConv2d),
          op_entry(us(10), 900, kConvolution),
          op_entry(us(30), 800, kUnderscoreConvolution),
          op_entry(us(60), 700, kMkldnnConvolution),
          op_exit(us(160), 700, kMkldnnConvolution),
          op_exit(us(170), 800, kUnderscoreConvolution),
          op_exit(us(180), 900, kConvolution),
          op_exit(us(200), 1000, kConv2d),
      }));
  expect_golden("nested", f);
  EXPECT_EQ(f.self_ns_total, us(200));
  EXPECT_EQ(f.stacks_below_1us, 0u);
}

TEST(FoldedStacks, SiblingsAreSeparateStacksUnderTheirParent) {
  enum : uint32_t { kLinear, kT, kAddmm, kRelu };
  // linear 0..30 holds t (3) and addmm (20): self 7; then relu (2) on its own.
  expect_golden("siblings", folded_stacks(recording_of(
                                {op("aten::linear"), op("aten::t"), op("aten::addmm"), op("aten::relu")},
                                {
                                    op_entry(us(0), 1000, kLinear),
                                    op_entry(us(1), 900, kT),
                                    op_exit(us(4), 900, kT),
                                    op_entry(us(5), 900, kAddmm),
                                    op_exit(us(25), 900, kAddmm),
                                    op_exit(us(30), 1000, kLinear),
                                    op_entry(us(31), 1000, kRelu),
                                    op_exit(us(33), 1000, kRelu),
                                })));
}

TEST(FoldedStacks, OneStackSumsItsCallsOnEveryThreadAndOverload) {
  enum : uint32_t { kRelu, kLinear, kAddTensor, kAddScalar };
  constexpr uint32_t kOther = 200;
  // aten::relu: 3 + 4 (thread 100) + 1.5 (thread 200, top level) = 8.5 -> 8;
  // linear;relu 5; linear 8 - 5 = 3; add: Tensor 2 + Scalar 3 = 5.
  FoldedStacks f = folded_stacks(recording_of(
      {op("aten::relu"), op("aten::linear"), op("aten::add", "Tensor"), op("aten::add", "Scalar")},
      {
          op_entry(us(0), 1000, kRelu),
          op_entry(us(1), 2000, kLinear, kOther),
          op_entry(us(2), 1900, kRelu, kOther),
          op_exit(us(3), 1000, kRelu),
          op_exit(us(7), 1900, kRelu, kOther),
          op_exit(us(9), 2000, kLinear, kOther),
          op_entry(us(10), 1000, kRelu),
          op_exit(us(14), 1000, kRelu),
          op_entry(us(20), 2000, kRelu, kOther),
          op_exit(us(20) + 1500, 2000, kRelu, kOther),
          op_entry(us(30), 1000, kAddTensor),
          op_exit(us(32), 1000, kAddTensor),
          op_entry(us(33), 1000, kAddScalar),
          op_exit(us(36), 1000, kAddScalar),
      }));
  expect_golden("summed_across_calls_and_threads", f);
  EXPECT_EQ(f.self_ns_total, us(3 + 4 + 3 + 5) + 1500 + us(5));
}

TEST(FoldedStacks, SameNamedOnlyChildrenFoldAsInTheTable) {
  enum : uint32_t { kMean, kDivTensor, kDivScalar, kTo, kF, kA, kB, kG, kH };
  FoldedStacks f = folded_stacks(recording_of(
      {op("aten::mean"), op("aten::div_", "Tensor"), op("aten::div_", "Scalar"), op("aten::to"),
       op("test::f"), op("test::a"), op("test::b"), op("test::g"), op("test::h")},
      {
          // mean 0..120 > div_ 10..100 > div_ 20..90 > to 30..40. Self: to 10,
          // inner div_ 70-10 = 60, outer div_ 90-70 = 20 (folded: 80),
          // mean 120-90 = 30. The path of `to` skips the folded div_.
          op_entry(us(0), 1000, kMean),
          op_entry(us(10), 900, kDivTensor),
          op_entry(us(20), 800, kDivScalar),
          op_entry(us(30), 700, kTo),
          op_exit(us(40), 700, kTo),
          op_exit(us(90), 800, kDivScalar),
          op_exit(us(100), 900, kDivTensor),
          op_exit(us(120), 1000, kMean),
          // f 200..300 > f 210..290 > {a 220..230, b 240..260}: the inner f
          // folds (self 80-30 = 50, plus the outer's 100-80 = 20: 70) and
          // its children hang under the outer f.
          op_entry(us(200), 1000, kF),
          op_entry(us(210), 900, kF),
          op_entry(us(220), 800, kA),
          op_exit(us(230), 800, kA),
          op_entry(us(240), 800, kB),
          op_exit(us(260), 800, kB),
          op_exit(us(290), 900, kF),
          op_exit(us(300), 1000, kF),
          // g 400..500 > {g 410..420, g 430..450}: two children, no fold.
          op_entry(us(400), 1000, kG),
          op_entry(us(410), 900, kG),
          op_exit(us(420), 900, kG),
          op_entry(us(430), 900, kG),
          op_exit(us(450), 900, kG),
          op_exit(us(500), 1000, kG),
          // h > h > h, only children all the way: one h of 100.
          op_entry(us(600), 1000, kH),
          op_entry(us(610), 900, kH),
          op_entry(us(620), 800, kH),
          op_exit(us(680), 800, kH),
          op_exit(us(690), 900, kH),
          op_exit(us(700), 1000, kH),
      }));
  expect_golden("same_name_fold", f);
}

TEST(FoldedStacks, UnwoundCallsCountAndOpenFramesDoNot) {
  enum : uint32_t { kOuter, kMid, kLeaf, kX, kZ, kY, kW, kV };
  FoldedStacks f = folded_stacks(recording_of(
      {op("test::outer"), op("test::mid"), op("test::leaf"), op("test::x"), op("test::z"), op("test::y"),
       op("test::w"), op("test::v")},
      {
          op_exit(500, 5000, kOuter),  // running before the recording: ignored
          // outer 0..70; mid 10.. and leaf 20.. are left by an exception
          // caught in outer at 50: leaf 30, mid 40-30 = 10, outer 70-40 = 30.
          op_entry(us(0), 1000, kOuter),
          op_entry(us(10), 900, kMid),
          op_entry(us(20), 800, kLeaf),
          catch_at(us(50), 900),
          op_exit(us(70), 1000, kOuter),
          // x never returns; y's entry at its sp reveals it, ending it at the
          // thread's previous event (z's exit at 85): x 5 - z 3 = 2.
          op_entry(us(80), 1000, kX),
          op_entry(us(82), 900, kZ),
          op_exit(us(85), 900, kZ),
          op_entry(us(90), 1000, kY),
          op_exit(us(91), 1000, kY),
          // w still runs at the end: not a call, so v (3) has no parent.
          op_entry(us(100), 1000, kW),
          op_entry(us(101), 900, kV),
          op_exit(us(104), 900, kV),
      }));
  expect_golden("unwound", f);
  EXPECT_EQ(f.counters.calls_unwound, 3u);
  EXPECT_EQ(f.counters.calls_open_at_end, 1u);
  EXPECT_EQ(f.counters.exits_without_entry, 1u);
}

TEST(FoldedStacks, NanosecondsAreSummedPerStackBeforeTruncatingToMicroseconds) {
  enum : uint32_t { kAdd, kMul, kEmpty, kRelu, kLinear, kT };
  FoldedStacks f = folded_stacks(recording_of(
      {op("aten::add"), op("aten::mul"), op("aten::empty"), op("aten::relu"), op("aten::linear"), op("aten::t")},
      {
          // add: 3 x 600 ns = 1800 ns -> 1 (0 if each call were truncated).
          op_entry(0, 1000, kAdd),
          op_exit(600, 1000, kAdd),
          op_entry(1000, 1000, kAdd),
          op_exit(1600, 1000, kAdd),
          op_entry(2000, 1000, kAdd),
          op_exit(2600, 1000, kAdd),
          // mul: 999 ns -> 0: left out. empty: 0 ns: left out.
          op_entry(3000, 1000, kMul),
          op_exit(3999, 1000, kMul),
          op_entry(4000, 1000, kEmpty),
          op_exit(4000, 1000, kEmpty),
          // relu: 2999 ns -> 2.
          op_entry(5000, 1000, kRelu),
          op_exit(7999, 1000, kRelu),
          // linear 2500 ns holding t 700 + 700: t 1400 -> 1, linear 1100 -> 1.
          op_entry(10000, 1000, kLinear),
          op_entry(10100, 900, kT),
          op_exit(10800, 900, kT),
          op_entry(11000, 900, kT),
          op_exit(11700, 900, kT),
          op_exit(12500, 1000, kLinear),
      }));
  expect_golden("sub_microsecond", f);
  EXPECT_EQ(f.stacks_below_1us, 2u);
  EXPECT_EQ(f.self_ns_total, 1800u + 999 + 0 + 2999 + 2500);
}

TEST(FoldedStacks, NamesAreSanitisedIntoSingleFrames) {
  enum : uint32_t { kSpaced, kTrailingDigits, kSemicolon, kTab, kNewline, kEmpty, kUtf8 };
  constexpr uint32_t kUnknown = 42;  // outside the op table: the table's "<unknown op 42>"
  // Each 1 us of self time; "my ops::scaled dot" 2 us holding "trailing 12".
  std::vector<gp_event> events = {
      op_entry(us(0), 1000, kSpaced),
      op_entry(500, 900, kTrailingDigits),
      op_exit(1500, 900, kTrailingDigits),
      op_exit(us(2), 1000, kSpaced),
  };
  uint64_t t = us(10);
  for (uint32_t id : {static_cast<uint32_t>(kSemicolon), static_cast<uint32_t>(kTab),
                      static_cast<uint32_t>(kNewline), static_cast<uint32_t>(kEmpty),
                      static_cast<uint32_t>(kUtf8), kUnknown}) {
    events.push_back(op_entry(t, 1000, id));
    events.push_back(op_exit(t + us(1), 1000, id));
    t += us(2);
  }
  expect_golden("names", folded_stacks(recording_of({op("my ops::scaled dot"), op("trailing 12"), op("a;b"),
                                                     op("tab\there"), op("new\nline"), op(""),
                                                     op("caf\xc3\xa9::op")},
                                                    events)));
}

TEST(FoldedStacks, FrameNameRules) {
  EXPECT_EQ(folded_frame_name("aten::conv2d"), "aten::conv2d");
  EXPECT_EQ(folded_frame_name("a;b;c"), "a:b:c");
  EXPECT_EQ(folded_frame_name("a  b\t\tc"), "a__b__c");  // each byte, as torch's translate
  EXPECT_EQ(folded_frame_name("cr\rlf\nvt\vff\fdel\x7f" "bell\a"), "cr_lf_vt_ff_del_bell_");
  EXPECT_EQ(folded_frame_name("op 12"), "op_12");
  // Bytes that start no valid UTF-8 sequence (freed memory, a binary comm): U+FFFD; valid ones kept.
  EXPECT_EQ(folded_frame_name("caf\xC3\xA9(1):_f"), "caf\xC3\xA9(1):_f");
  EXPECT_EQ(folded_frame_name("x\xFFy\xC3"), "x\xEF\xBF\xBDy\xEF\xBF\xBD");
  EXPECT_EQ(folded_frame_name("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");  // a surrogate
  EXPECT_EQ(folded_frame_name(""), "_");
  EXPECT_EQ(folded_frame_name("-"), "-");
  EXPECT_EQ(folded_frame_name("\xe2\x86\x92"), "\xe2\x86\x92");  // UTF-8 is kept
}

TEST(FoldedStacks, NamesThatPrintAlikeAreOneFrame) {
  FoldedStacks f = folded_stacks(recording_of({op("a;b"), op("a:b")}, {
                                                                           op_entry(us(0), 1000, 0),
                                                                           op_exit(us(1), 1000, 0),
                                                                           op_entry(us(2), 1000, 1),
                                                                           op_exit(us(4), 1000, 1),
                                                                       }));
  EXPECT_THAT(f.stacks, ElementsAre(FoldedStack{"a:b", 3}));
}

TEST(FoldedStacks, NoCallsGiveNoLines) {
  FoldedStacks f = folded_stacks(recording_of({op("aten::add")}, {}));
  EXPECT_THAT(f.stacks, IsEmpty());
  EXPECT_EQ(format_folded(f), "");
}

TEST(FoldedStacks, MetricNames) {
  EXPECT_EQ(test::value_of(parse_folded_metric("self_cpu_time")), FoldedMetric::kSelfCpuTime);
  EXPECT_EQ(test::value_of(parse_folded_metric("samples")), FoldedMetric::kSamples);
  EXPECT_EQ(test::value_of(parse_folded_metric("self_cuda_time")), FoldedMetric::kSelfCudaTime);
  const auto unknown = parse_folded_metric("self_cpu_time_total");
  ASSERT_FALSE(unknown);
  EXPECT_THAT(unknown.error(), ::testing::HasSubstr("unknown --metric 'self_cpu_time_total'"));
  EXPECT_EQ(unknown.error().find('\n'), std::string::npos);
}

// Samples (record -F): each under the innermost op running on its thread,
// after the same-name fold, then its native leaf, then [kernel].
TEST(FoldedStacks, SamplesGoUnderTheInnermostOpThenTheirLeaf) {
  enum : uint32_t { kLinear, kAddmm, kDiv };
  constexpr uint32_t kOther = kTid + 1;
  Recording r = recording_of(
      {op("aten::linear"), op("aten::addmm"), op("aten::div_")},
      {op_entry(us(10), 1000, kLinear), op_entry(us(20), 900, kAddmm), op_exit(us(60), 900, kAddmm),
       op_exit(us(70), 1000, kLinear),
       // div_ calling div_ is one call after the fold: its samples sit under one frame.
       op_entry(us(100), 1000, kDiv), op_entry(us(110), 900, kDiv), op_exit(us(150), 900, kDiv),
       op_exit(us(160), 1000, kDiv)});
  r.options.sample_hz = 99;
  r.sample_frames = {"libblas.so.3!sgemm_", "python3.11!_PyEval_EvalFrameDefault", "libc.so.6!read"};
  auto sample = [](uint64_t t, uint32_t frame, bool kernel = false, uint32_t tid = kTid) {
    return CpuSample{.ts_ns = us(t), .tid = tid, .frame_id = frame, .in_kernel = kernel};
  };
  r.samples = {sample(30, 0),  sample(40, 0), sample(15, 1),           sample(65, 2, true),
               sample(80, 1),  sample(120, 1), sample(105, 2, true),   sample(30, 1, false, kOther),
               sample(200, 7)};  // a frame id the file does not define: "[unknown]"
  const FoldedStacks f = folded_stacks(r, FoldedMetric::kSamples);
  EXPECT_EQ(f.samples_total, 9u);
  std::map<std::string, uint64_t> got;
  for (const FoldedStack& s : f.stacks) got[s.stack] = s.value;
  EXPECT_EQ(got, (std::map<std::string, uint64_t>{
                     {"aten::linear;aten::addmm;libblas.so.3!sgemm_", 2},
                     {"aten::linear;python3.11!_PyEval_EvalFrameDefault", 1},
                     {"aten::linear;libc.so.6!read;[kernel]", 1},
                     {"python3.11!_PyEval_EvalFrameDefault", 2},  // t=80 and the other thread
                     {"aten::div_;python3.11!_PyEval_EvalFrameDefault", 1},
                     {"aten::div_;libc.so.6!read;[kernel]", 1},
                     {"[unknown]", 1},
                 }));
  expect_well_formed(format_folded(f));
}

// Samples with Python stacks (record -F on CPython 3.11/3.12): root first,
// the Python frames (outermost first), then the op path, then the native
// leaf, then [kernel]. A sample without a Python stack keeps the op path at
// the root; frame names are sanitised like the others.
TEST(FoldedStacks, SamplesPutTheirPythonFramesAboveTheOpPath) {
  enum : uint32_t { kLinear, kAddmm };
  constexpr uint32_t kOther = kTid + 1;
  Recording r = recording_of(
      {op("aten::linear"), op("aten::addmm")},
      {op_entry(us(10), 1000, kLinear), op_entry(us(20), 900, kAddmm), op_exit(us(60), 900, kAddmm),
       op_exit(us(70), 1000, kLinear)});
  r.options.sample_hz = 99;
  r.sample_frames = {"libblas.so.3!sgemm_",        "train.py(42): main",
                     "model.py(7): forward",       "libc.so.6!read",
                     "loader.py(3): next;batch"};
  r.sample_stacks = {{1, 2}, {1}, {}, {4, 9}};  // 9: a frame id the file does not define
  auto sample = [](uint64_t t, uint32_t frame, uint32_t stack, bool kernel = false,
                   uint32_t tid = kTid) {
    return CpuSample{.ts_ns = us(t), .tid = tid, .frame_id = frame, .in_kernel = kernel,
                     .python_stack = stack};
  };
  r.samples = {
      sample(30, 0, 0),  sample(40, 0, 0),                   // main;forward;linear;addmm;sgemm_
      sample(15, 3, 0, true),                                // under linear only
      sample(50, 0, kNoPythonStack),                         // no Python stack: ops at the root
      sample(80, 3, 1),                                      // no op running: Python, then leaf
      sample(90, 3, 2),                                      // an empty stack: as none
      sample(30, 3, 3, false, kOther),                       // another thread, no ops
      sample(35, 0, 7),                                      // a stack id not defined: as none
  };
  const FoldedStacks f = folded_stacks(r, FoldedMetric::kSamples);
  EXPECT_EQ(f.samples_total, 8u);
  std::map<std::string, uint64_t> got;
  for (const FoldedStack& s : f.stacks) got[s.stack] = s.value;
  EXPECT_EQ(got,
            (std::map<std::string, uint64_t>{
                {"train.py(42):_main;model.py(7):_forward;aten::linear;aten::addmm;"
                 "libblas.so.3!sgemm_",
                 2},
                {"train.py(42):_main;model.py(7):_forward;aten::linear;libc.so.6!read;[kernel]", 1},
                {"aten::linear;aten::addmm;libblas.so.3!sgemm_", 2},  // t=50 and t=35
                {"train.py(42):_main;libc.so.6!read", 1},
                {"libc.so.6!read", 1},  // the empty stack
                {"loader.py(3):_next:batch;[unknown];libc.so.6!read", 1},
            }));
  expect_well_formed(format_folded(f));
}

TEST(FoldedStacks, InKernelSamplesEndInTheirKernelStack) {
  Recording r = recording_of({op("aten::mm")}, {});
  r.options.sample_hz = 99;
  r.sample_frames = {"libc.so.6!read", "entry_SYSCALL_64_[k]", "do_syscall_64_[k]", "ksys_read_[k]"};
  r.sample_stacks = {{1, 2, 3}};  // outermost first
  auto sample = [](uint64_t t, bool kernel) {
    return CpuSample{.ts_ns = us(t), .tid = kTid, .frame_id = 0, .in_kernel = kernel};
  };
  r.samples = {sample(1, true), sample(2, true), sample(3, true), sample(4, false)};
  r.sample_kernel_stacks = {{0, 0}, {2, 0}};  // sample 1: in the kernel, stack unknown
  const FoldedStacks f = folded_stacks(r, FoldedMetric::kSamples);
  std::map<std::string, uint64_t> got;
  for (const FoldedStack& s : f.stacks) got[s.stack] = s.value;
  EXPECT_EQ(got, (std::map<std::string, uint64_t>{
                     {"libc.so.6!read;entry_SYSCALL_64_[k];do_syscall_64_[k];ksys_read_[k]", 2},
                     {"libc.so.6!read;[kernel]", 1},
                     {"libc.so.6!read", 1},
                 }));
  expect_well_formed(format_folded(f));
}

// torch's export_stacks puts a call's Python stack first; gpuprof then adds
// the op path. Only the outermost call's entry stack counts: a nested call
// is under its parent whatever its own entry says. Samples keep their own
// Python frames.
TEST(FoldedStacks, SelfTimeHangsUnderTheEntryPythonStack) {
  enum : uint32_t { kConv, kConvolution };
  Recording r = recording_of(
      {op("aten::conv2d"), op("aten::convolution")},
      {op_entry(us(10), 1000, kConv), op_entry(us(20), 900, kConvolution), op_exit(us(60), 900, kConvolution),
       op_exit(us(70), 1000, kConv), op_entry(us(100), 1000, kConv), op_exit(us(103), 1000, kConv)});
  r.options.with_stack = true;
  r.sample_frames = {"train.py(40): main", "nn.Module: Conv2d_0", "conv.py(454): _conv_forward",
                     "nn.Module: Conv2d_1"};
  r.sample_stacks = {{0, 1, 2}, {0, 3, 2}};
  // Events 0 and 4 are the conv2d entries; event 1 (nested) names another
  // stack, which does not move it.
  r.entry_stacks = {{0, 0}, {1, 1}, {4, 1}};
  const FoldedStacks f = folded_stacks(r, FoldedMetric::kSelfCpuTime);
  std::map<std::string, uint64_t> got;
  for (const FoldedStack& s : f.stacks) got[s.stack] = s.value;
  EXPECT_EQ(got, (std::map<std::string, uint64_t>{
                     {"train.py(40):_main;nn.Module:_Conv2d_0;conv.py(454):__conv_forward;aten::conv2d", 20},
                     {"train.py(40):_main;nn.Module:_Conv2d_0;conv.py(454):__conv_forward;aten::conv2d;"
                      "aten::convolution",
                      40},
                     {"train.py(40):_main;nn.Module:_Conv2d_1;conv.py(454):__conv_forward;aten::conv2d", 3},
                 }));
  expect_well_formed(format_folded(f));
}

// ---------------------------------------------------------------------------
// Against the table, on random streams: nesting, sibling slots, a few names
// shared by several op ids (overloads) so that same-name chains fold,
// exceptions caught at random depths, calls still open at the end, several
// threads. Times are whole microseconds, so no truncation is involved.

std::vector<gp_event> random_events(uint32_t seed) {
  constexpr uint32_t kThreads = 3;
  std::mt19937 rng(seed);
  auto pick = [&](uint64_t lo, uint64_t hi) { return std::uniform_int_distribution<uint64_t>(lo, hi)(rng); };
  struct Frame {
    uint64_t sp;
    uint32_t op;
  };
  std::vector<std::vector<Frame>> stacks(kThreads);
  std::vector<gp_event> events;
  uint64_t ts = 0;
  for (int i = 0; i < 400; i++) {
    const auto thread = static_cast<uint32_t>(pick(0, kThreads - 1));
    const uint32_t tid = 10 + thread;
    auto& stack = stacks[thread];
    ts += us(pick(1, 5));
    const uint64_t action = pick(0, 99);
    if (action < 50 && stack.size() < 8) {
      const uint64_t sp = stack.empty() ? 10000 : stack.back().sp - 100;
      const auto op = static_cast<uint32_t>(pick(0, 5));
      stack.push_back({sp, op});
      events.push_back(op_entry(ts, sp, op, tid));
    } else if (action < 92 && !stack.empty()) {
      events.push_back(op_exit(ts, stack.back().sp, stack.back().op, tid));
      stack.pop_back();
    } else if (stack.size() >= 2) {
      // An exception caught in a random open frame: the frames above it go.
      const size_t keep = pick(1, stack.size() - 1);
      events.push_back(catch_at(ts, stack[keep].sp, tid));
      stack.resize(keep);
    }
  }
  return events;
}

TEST(FoldedStacksRandom, LeavesAddUpToTheTableRowsAndFramesAreRows) {
  // Ops 0/1 share a name, as do 2/3: chains of them fold.
  const std::vector<OpInfo> ops = {op("aten::a", "x"), op("aten::a", "y"), op("aten::b", "x"),
                                   op("aten::b", "y"), op("aten::c"), op("aten::d")};
  for (uint32_t seed = 1; seed <= 200; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Recording recording = recording_of(ops, random_events(seed));
    const Profile profile = aggregate(recording);
    const FoldedStacks folded = folded_stacks(recording);
    expect_well_formed(format_folded(folded));

    // A stack's value is the self time of its leaf op; every frame of it is
    // a call that (after the fold) encloses that time, so a row's CPU total
    // is the values summed over each frame of its name: a same-name call
    // left unfolded would count twice.
    std::map<std::string, uint64_t> table_self_us, leaf_us, table_total_us, frame_us;
    std::set<std::string> rows;
    for (const OpRow& row : profile.rows) {
      rows.insert(row.name);
      ASSERT_EQ(row.self_cpu_ns % 1000, 0u);
      if (row.self_cpu_ns) table_self_us[row.name] = row.self_cpu_ns / 1000;
      if (row.cpu_total_ns) table_total_us[row.name] = row.cpu_total_ns / 1000;
    }
    uint64_t sum_us = 0;
    for (const FoldedStack& s : folded.stacks) {
      std::istringstream frames(s.stack);
      std::string frame, leaf;
      while (std::getline(frames, frame, ';')) {
        EXPECT_TRUE(rows.count(frame)) << frame << " in " << s.stack;
        frame_us[frame] += s.value;
        leaf = frame;
      }
      leaf_us[leaf] += s.value;
      sum_us += s.value;
    }
    EXPECT_EQ(leaf_us, table_self_us);
    EXPECT_EQ(frame_us, table_total_us);
    EXPECT_EQ(sum_us * 1000, profile.self_cpu_total_ns);
    EXPECT_EQ(folded.self_ns_total, profile.self_cpu_total_ns);
    EXPECT_EQ(folded.stacks_below_1us, 0u);
    EXPECT_EQ(folded.counters.calls_unwound, profile.counters.calls_unwound);
    EXPECT_EQ(folded.counters.calls_open_at_end, profile.counters.calls_open_at_end);
  }
}

}  // namespace
}  // namespace gpuprof

namespace gpuprof {
namespace {

// --metric self_cuda_time: the GPU time each call launched itself, on its op
// path, joined by correlation id (never by time).
TEST(FoldedStacks, SelfCudaTimeByCorrelationId) {
  using namespace ::gpuprof::test;
  Recording r = recording_of({op("aten::linear"), op("aten::add")},
                             {op_entry(100, 0x1000, 0), op_entry(120, 0x0f00, 1), op_exit(150, 0x0f00, 1),
                              op_exit(200, 0x1000, 0)});
  r.launch_names = {"k"};
  r.cupti_shim = CuptiShimInfo{"/x/libgpuprof_cupti.so", 1, 0, 0};
  r.gpu_correlations = {{130, 1, kTid, 211, 2}, {160, 2, kTid, 211, 2}, {50, 3, kTid, 211, 2}};
  auto activity = [](uint64_t id, uint64_t start, uint64_t end) {
    GpuActivity a;
    a.correlation_id = id, a.start_ns = start, a.end_ns = end;
    return a;
  };
  r.gpu_activities = {activity(2, 9000, 11500), activity(1, 5000, 7000), activity(1, 7000, 9400),
                      activity(3, 1000, 4000), activity(42, 20000, 21000)};
  const FoldedStacks f = folded_stacks(r, FoldedMetric::kSelfCudaTime);
  EXPECT_EQ(format_folded(f), "aten::linear 2\naten::linear;aten::add 4\n");
  EXPECT_EQ(f.self_ns_total, 6900u);
  EXPECT_EQ(f.gpu_ns_outside_ops, 4000u);  // before any op, and a launch never seen
}

// A full disk is an error naming why, not a short file said to be written.
TEST(FoldedStacks, WriteFoldedSaysWhyAWriteFailed) {
  FoldedStacks folded;
  folded.stacks.push_back({std::string(1 << 16, 'a'), 1});  // past stdio's buffer
  std::FILE* full = std::fopen("/dev/full", "w");
  ASSERT_NE(full, nullptr);
  const Result<void> written = write_folded(folded, full);
  std::fclose(full);
  ASSERT_FALSE(written);
  EXPECT_EQ(written.error(), "cannot write the folded stacks: No space left on device");
}

}  // namespace
}  // namespace gpuprof

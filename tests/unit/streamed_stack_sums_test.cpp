// The streamed folded stacks (analyze/streamed_stack_sums.h) against
// folded_stacks() of the same recording read whole: the same text, byte for
// byte, and the same counters, on random event streams of three threads
// that nest, fold same-name children, unwind, step, cut and leave calls
// open at the end, with Python stacks on some entries handed over a chunk
// or more after their events (as a file has them); and on a written file
// read by the streaming reader, whose pairs all come after the events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/streamed_stack_sums.h"
#include "output/folded_stacks.h"
#include "probe_events.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "record/record_file.h"
#include "record/record_stream.h"
#include "recordings.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// A random recording with Python stacks (record --with-stack) on about
// half of its ENTRY and RANGE_BEGIN events: three stacks sharing frames;
// and CPU samples (record -F), some in the kernel, with a Python stack or
// none.
Recording recording_with_stacks(uint32_t seed, size_t length) {
  Recording recording = random_recording(seed, length);
  recording.probe_costs = costs_of_the_streams();
  recording.options.with_stack = true;
  recording.sample_frames = {"train.py(3): main", "model.py(10): forward", "model.py(22): step", "a;b c"};
  recording.sample_stacks = {{0}, {0, 1}, {0, 2, 3}};
  std::mt19937 rng(seed);
  add_random_entry_stacks(recording, rng, 3);
  recording.options.sample_hz = 997;
  recording.sample_frames.push_back("do_syscall_64_[k]");
  recording.sample_frames.push_back("libtorch_cpu.so+0x1234");
  recording.sample_stacks.push_back({4});
  add_random_samples(
      recording, rng,
      {.count = recording.events.size() / 3, .leaf_frames = {1, 5}, .python_stacks = 3, .kernel_stack = 3});
  return recording;
}

// What report prints: the folded text and the notes' counters.
std::string printed(const FoldedStacks& folded) {
  return format_folded(folded) + "below 1us " + std::to_string(folded.stacks_below_1us) + ", self " +
         std::to_string(folded.self_ns_total) + ", unwound " + std::to_string(folded.counters.calls_unwound) +
         ", exits " + std::to_string(folded.counters.exits_without_entry) + ", open " +
         std::to_string(folded.counters.calls_open_at_end) + ", short " +
         std::to_string(folded.counters.calls_shorter_than_probes);
}

// The streamed stacks of `recording`: its events fed `chunk` at a time, each
// chunk's pairs handed over after `pair_delay` more chunks (or at the end).
FoldedStacks streamed_folded(const Recording& recording, size_t chunk, size_t pair_delay, bool raw_times,
                             FoldedMetric metric = FoldedMetric::kSelfCpuTime) {
  const Recording head = head_of(recording);
  StreamedStackSums streamed(head, compensation_costs(recording, raw_times), last_pair_of(recording),
                             metric == FoldedMetric::kSamples ? StackMetric::kSamples : StackMetric::kSelfCpuTime);
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, pair_delay);
  return folded_from_sums(std::move(streamed).finish(), metric);
}

TEST(StreamedStackSums, PrintsTheWholeReadsFoldedStacksOnRandomStreams) {
  size_t python_lines = 0, open_at_end = 0, other_lines = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    const Recording recording = recording_with_stacks(seed, 3000);
    for (bool raw : {false, true}) {
      const FoldedStacks whole = folded_stacks(recording, FoldedMetric::kSelfCpuTime, raw);
      const std::string expected = printed(whole);
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
        for (size_t delay : {size_t{0}, size_t{1}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " pair delay " +
                       std::to_string(delay) + (raw ? " raw" : ""));
          EXPECT_EQ(printed(streamed_folded(recording, chunk, delay, raw)), expected);
        }
      for (const FoldedStack& s : whole.stacks) (s.stack.rfind("train.py", 0) == 0 ? python_lines : other_lines)++;
      open_at_end += whole.counters.calls_open_at_end;
    }
  }
  // The streams must place calls under Python stacks and outside them, and
  // leave calls open at the end, or the comparison proves little (folding:
  // the same-name chain test below).
  EXPECT_GT(python_lines, 500u);
  EXPECT_GT(other_lines, 1000u);
  EXPECT_GT(open_at_end, 40u);
}

// --folded --metric self_cuda_time: each call's GPU time, joined from the
// launches and activities as they come (random_join_records.h), on its
// fold's path under its Python stack, and what is on no path, as the whole
// read charges them.
TEST(StreamedStackSums, ChargesGpuTimeAsTheWholeReadOnRandomStreams) {
  uint64_t placed = 0, outside = 0;
  for (uint32_t seed = 1; seed <= 30; seed++) {
    Recording recording = recording_with_stacks(seed, 3000);
    std::mt19937 rng(seed);
    add_random_gpu(recording, rng, 600);
    ring_order(recording.gpu_correlations, rng);
    const FoldedStacks whole = folded_stacks(recording, FoldedMetric::kSelfCudaTime);
    const std::string expected = printed(whole) + " outside " + std::to_string(whole.gpu_ns_outside_ops);
    const Recording head = head_of(recording);
    for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()})
      for (size_t lag : {size_t{0}, size_t{3}}) {
        const size_t pair_delay = lag + 2;  // pairs later than the launches, or earlier than the activities
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                     std::to_string(lag));
        const JoinBounds bounds = bounds_of(recording, chunk, lag);
        StreamedStackSums streamed(head, compensation_costs(recording, false), last_pair_of(recording),
                                   StackMetric::kSelfCudaTime, &bounds);
        EXPECT_TRUE(streamed.wants(head));
        feed_with_records(streamed, recording, chunk, lag, pair_delay);
        const FoldedStacks folded = folded_from_sums(std::move(streamed).finish(), FoldedMetric::kSelfCudaTime);
        EXPECT_EQ(printed(folded) + " outside " + std::to_string(folded.gpu_ns_outside_ops), expected);
      }
    placed += whole.stacks.size();
    outside += whole.gpu_ns_outside_ops;
  }
  EXPECT_GT(placed, 300u);
  EXPECT_GT(outside, 0u);
}

TEST(StreamedStackSums, CountsSamplesAsTheWholeReadOnRandomStreams) {
  size_t in_ops = 0, outside = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    const Recording recording = recording_with_stacks(seed, 3000);
    const FoldedStacks whole = folded_stacks(recording, FoldedMetric::kSamples);
    ASSERT_EQ(whole.samples_total, recording.samples.size());
    const std::string expected = printed(whole) + " samples " + std::to_string(whole.samples_total);
    for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      const FoldedStacks streamed = streamed_folded(recording, chunk, 1, false, FoldedMetric::kSamples);
      EXPECT_EQ(printed(streamed) + " samples " + std::to_string(streamed.samples_total), expected);
    }
    for (const FoldedStack& s : whole.stacks)
      (s.stack.find("aten::") != std::string::npos || s.stack.find("my_range") != std::string::npos ? in_ops
                                                                                                    : outside) += s.value;
  }
  // Samples must land in calls and outside them, or the sweep is not tried.
  EXPECT_GT(in_ops, 10000u);
  EXPECT_GT(outside, 1000u);
}

TEST(StreamedStackSums, FoldsAChainOfSameNameCallsUnderItsPythonStack) {
  // aten::div_ (Scalar) -> aten::div_ -> aten::div_ (Scalar) -> aten::mm on
  // thread 1 under train.py;model.py(10), and an aten::mm on thread 2 still
  // open at the end with a finished aten::add inside: that one's path starts
  // at its own entry's Python stack, as no call encloses it.
  Recording recording = recording_of(
      ops_of_the_streams(),
      {op_entry(0, 1000, 4, 1), op_entry(5'000, 1000, 3, 2), op_entry(10'000, 900, 2, 1),
       op_entry(20'000, 800, 4, 1), op_entry(30'000, 700, 3, 1), op_entry(35'000, 900, 0, 2),
       op_exit(40'000, 700, 3, 1), op_exit(50'000, 800, 4, 1), op_exit(60'000, 900, 2, 1),
       op_exit(4'000'000, 1000, 4, 1), op_exit(5'000'000, 900, 0, 2)});
  recording.process.pid = 4242;
  recording.options.with_stack = true;
  recording.sample_frames = {"train.py(3): main", "model.py(10): forward"};
  recording.sample_stacks = {{0}, {0, 1}};
  recording.entry_stacks = {{0, 1}, {1, 0}, {5, 0}};
  const std::string expected =
      "train.py(3):_main;aten::add 4965\n"
      "train.py(3):_main;model.py(10):_forward;aten::div_ 3990\n"
      "train.py(3):_main;model.py(10):_forward;aten::div_;aten::mm 10\n";
  EXPECT_EQ(format_folded(folded_stacks(recording, FoldedMetric::kSelfCpuTime, true)), expected);
  for (size_t chunk : {size_t{1}, size_t{4}})
    EXPECT_EQ(format_folded(streamed_folded(recording, chunk, 1, true)), expected) << chunk;
}

// A system-wide recording is declined; one with allocator events is taken,
// and its allocator events dropped (no metric counts them).
TEST(StreamedStackSums, DeclinesSystemWideRecordingsAndDropsAllocatorEvents) {
  Recording recording = recording_of(ops_of_the_streams(), {});
  StreamedStackSums system_wide(recording, nullptr, std::nullopt);
  EXPECT_FALSE(system_wide.wants(recording));  // pid 0: record -a
  recording.process.pid = 4242;
  EXPECT_TRUE(system_wide.wants(recording));
  recording.options.memory = true;
  EXPECT_TRUE(system_wide.wants(recording));
  const gp_mem_event allocation{};
  EXPECT_TRUE(system_wide.on_mem_events(std::span<const gp_mem_event>(&allocation, 1)));
}

// A file written by RecordWriter (its pairs after all of its events) and
// read streamed: the whole read's folded text.
TEST(StreamedStackSums, AStreamedFileReadPrintsTheWholeReadsStacks) {
  char path[] = "/tmp/gpuprof-stacks-test-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  const Recording written = recording_with_stacks(11, 20000);
  {
    std::string error;
    auto writer = noting_error(RecordWriter::create(path), &error);
    ASSERT_TRUE(writer) << error;
    ASSERT_TRUE(succeeded(writer->begin(written.process, ClockInfo{}, written.ops, written.options), &error)) << error;
    ASSERT_TRUE(succeeded(writer->set_probe_costs(*written.probe_costs), &error)) << error;
    ASSERT_TRUE(succeeded(writer->append_events(written.events.data(), written.events.size()), &error)) << error;
    for (const std::string& frame : written.sample_frames) ASSERT_TRUE(succeeded(writer->add_sample_frame(frame), &error)) << error;
    for (const auto& stack : written.sample_stacks) ASSERT_TRUE(succeeded(writer->add_sample_stack(stack), &error)) << error;
    for (const EntryStack& e : written.entry_stacks)
      ASSERT_TRUE(succeeded(writer->append_entry_stack(e.event_index, e.stack_id), &error)) << error;
    ASSERT_TRUE(succeeded(writer->finish(RecordStats{}, 0), &error)) << error;
  }
  std::string error;
  const auto whole = noting_error(read_recording(path), &error);
  ASSERT_TRUE(whole) << error;
  ASSERT_GT(whole->entry_stacks.size(), 3000u);
  // The first read: all but the events, and where the pairs end.
  struct Head : RecordStream {
    bool wants(const Recording&) override { return true; }
    void on_events(std::span<const gp_event>, uint64_t) override {}
    void on_entry_stack(uint64_t index, uint32_t) override { last = index; }
    std::optional<uint64_t> last;
  } first;
  bool whole_needed = true;
  const auto head = noting_error(read_recording_streamed(path, CorruptChunks::refuse, first, &whole_needed), &error);
  ASSERT_TRUE(head) << error;
  EXPECT_EQ(first.last, whole->entry_stacks.back().event_index);
  StreamedStackSums streamed(*head, compensation_costs(*head, false), first.last);
  const auto read = noting_error(read_recording_streamed(path, CorruptChunks::refuse, streamed, &whole_needed), &error);
  ::unlink(path);
  ASSERT_TRUE(read) << error;
  EXPECT_FALSE(whole_needed);
  EXPECT_TRUE(read->events.empty());
  const FoldedStacks from_whole = folded_stacks(*whole, FoldedMetric::kSelfCpuTime, false);
  ASSERT_GT(from_whole.stacks.size(), 20u);
  EXPECT_EQ(printed(folded_from_sums(std::move(streamed).finish(), FoldedMetric::kSelfCpuTime)), printed(from_whole));
}

}  // namespace
}  // namespace gpuprof

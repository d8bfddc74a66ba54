// report --pprof of a recording read as a stream (the stack sums of
// analyze/streamed_metric_sums.h, made into a profile by output/pprof.h)
// against pprof_profile() of the same recording read whole: the same bytes,
// on random event streams of three threads with Python stacks on some
// entries (handed over chunks after their events, as a file has them), CPU
// samples in native files the recording names with build ids, some in the
// kernel.
#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/streamed_metric_sums.h"
#include "analyze/streamed_process_metric_sums.h"
#include "output/pprof.h"
#include "random_event_streams.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// A random recording (record --with-stack -F 997): Python stacks on about
// half of its entries, samples with a Python stack or none, their native
// leaves in libtorch_cpu (its build id in PROCESS), libm (in NATIVE_FILES)
// and a file the recording does not name, some in the kernel.
Recording sampled_recording(uint32_t seed, size_t length) {
  Recording recording = random_recording(seed, length);
  recording.probe_costs = costs_of_the_streams();
  recording.options.with_stack = true;
  recording.options.sample_hz = 997;
  recording.process.cmdline = "python3 train.py";
  recording.process.libtorch_path = "/venv/torch/lib/libtorch_cpu.so";
  recording.process.libtorch_build_id = "0badcafe";
  recording.native_files = {{.pid = 4242, .path = "/usr/lib/libm.so.6", .build_id = "beef"},
                            {.pid = 7, .path = "/other/libm.so.6", .build_id = "f00d"}};
  recording.sample_frames = {"train.py(3): main",     "model.py(10): forward", "model.py(22): step",
                             "libtorch_cpu.so+0x1234", "libm.so.6!sin",         "libplain.so+0x2a0",
                             "do_syscall_64_[k]"};
  // Stacks 0 to 2: Python; 3: a kernel stack.
  recording.sample_stacks = {{0}, {0, 1}, {0, 2}, {6}};
  std::mt19937 rng(seed);
  add_random_entry_stacks(recording, rng, 3);
  add_random_samples(
      recording, rng,
      {.count = recording.events.size() / 3, .leaf_frames = {3, 4, 5}, .python_stacks = 3, .kernel_stack = 3});
  return recording;
}

// The streamed profile of `recording`: its events fed `chunk` at a time,
// each chunk's pairs handed over after `pair_delay` more chunks.
PprofProfile streamed_pprof(const Recording& recording, size_t chunk, size_t pair_delay, bool raw_times) {
  const Recording head = head_of(recording);
  StreamedMetricSums streamed(head, compensation_costs(head, raw_times), last_pair_of(recording),
                              pprof_metrics(head));
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, pair_delay);
  return pprof_profile(head, std::move(streamed).finish(), raw_times);
}

// The frame names of a metric's sums, in the order the sums met them.
std::vector<std::string> frame_order(const StackSums& sums) {
  std::vector<std::string> names;
  for (const StackFrame& f : sums.frames) names.push_back(f.name);
  return names;
}

TEST(StreamedPprof, WritesTheWholeReadsProfileOnRandomStreams) {
  size_t orders_differ = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    const Recording recording = sampled_recording(seed, 3000);
    ASSERT_EQ(pprof_metrics(recording),
              (std::vector<StackMetric>{StackMetric::kCalls, StackMetric::kSelfCpuTime, StackMetric::kSamples}));
    for (bool raw : {false, true}) {
      const PprofProfile whole = pprof_profile(recording, raw);
      // Every column has samples, or the comparison proves little.
      ASSERT_GT(whole.stats.samples, 100u);
      ASSERT_EQ(whole.stats.sample_types, 4u);
      for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
        for (size_t delay : {size_t{0}, size_t{2}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " pair delay " +
                       std::to_string(delay) + (raw ? " raw" : ""));
          const PprofProfile streamed = streamed_pprof(recording, chunk, delay, raw);
          EXPECT_EQ(streamed.data, whole.data);
          EXPECT_EQ(streamed.stats.samples, whole.stats.samples);
          EXPECT_EQ(streamed.stats.functions, whole.stats.functions);
        }
    }
    // The streamed sums meet frames in another order than the whole read's
    // (forests as they settle, not thread after thread): the profile must
    // not number its locations in the sums' order.
    const Recording head = head_of(recording);
    StreamedMetricSums streamed(head, compensation_costs(head, false), last_pair_of(recording),
                                {StackMetric::kSelfCpuTime});
    feed_in_chunks(streamed, recording, 7, 1);
    const auto sums = std::move(streamed).finish();
    if (frame_order(sums.at(StackMetric::kSelfCpuTime)) !=
        frame_order(stack_sums(recording, StackMetric::kSelfCpuTime)))
      orders_differ++;
  }
  EXPECT_GT(orders_differ, 5u);
}

// The profile's sums are those of the metrics the recording has: a
// recording without samples has no samples column, one without ops
// (record --no-ops -F) no calls or self_cpu.
TEST(StreamedPprof, SumsTheColumnsTheRecordingHas) {
  Recording traced = random_recording(3, 2000);
  traced.probe_costs = costs_of_the_streams();
  ASSERT_EQ(pprof_metrics(traced), (std::vector<StackMetric>{StackMetric::kCalls, StackMetric::kSelfCpuTime}));
  const PprofProfile whole = pprof_profile(traced);
  EXPECT_EQ(whole.stats.sample_types, 2u);
  EXPECT_EQ(streamed_pprof(traced, 64, 0, false).data, whole.data);

  Recording sampled = sampled_recording(4, 2000);
  sampled.options.ops = false;
  ASSERT_EQ(pprof_metrics(sampled), (std::vector<StackMetric>{StackMetric::kSamples}));
  const PprofProfile samples_only = pprof_profile(sampled);
  EXPECT_EQ(samples_only.stats.sample_types, 2u);  // samples, cpu
  EXPECT_EQ(streamed_pprof(sampled, 64, 1, false).data, samples_only.data);
}

// A system-wide recording (record -a), each process's stacks summed on
// its own (streamed_process_metric_sums.h): the whole read's profile, with
// a process met from the middle on, one sampled that ran no op, and
// launches the stream drops.
TEST(StreamedPprof, WritesTheWholeReadsProfileOfASystemWideRecording) {
  for (uint32_t seed = 1; seed <= 10; seed++) {
    const Recording recording = system_wide_recording(seed, 3000);
    for (bool raw : {false, true}) {
      const PprofProfile whole = pprof_profile(recording, raw);
      ASSERT_EQ(whole.stats.sample_types, 4u);
      for (size_t chunk : {size_t{1}, size_t{500}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + (raw ? " raw" : ""));
        const Recording head = streamed_read_of(recording);
        StreamedProcessMetricSums streamed(head, compensation_costs(head, raw), pprof_metrics(head));
        ASSERT_TRUE(streamed.wants(head));
        feed_in_chunks(streamed, recording, chunk, 0);
        std::map<uint32_t, ProcessMetricSums> processes = std::move(streamed).finish(head);
        EXPECT_EQ(processes.size(), 3u);  // 10 and 20 ran ops, 30 was sampled
        EXPECT_EQ(pprof_profile(head, std::move(processes), raw).data, whole.data);
      }
    }
  }
  // With Python entry stacks (record -a --with-stack), their pairs chunks
  // after their events: each process's stacks under its entries' frames.
  for (uint32_t seed = 1; seed <= 4; seed++) {
    Recording recording = system_wide_recording(seed, 3000);
    add_random_module_stacks(recording, seed, false, /*engine_op=*/4);
    const PprofProfile whole = pprof_profile(recording, false);
    for (size_t chunk : {size_t{1}, size_t{500}}) {
      SCOPED_TRACE("with stacks, seed " + std::to_string(seed) + " chunk " + std::to_string(chunk));
      const Recording head = streamed_read_of(recording);
      StreamedProcessMetricSums streamed(head, compensation_costs(head, false), pprof_metrics(head),
                                         LastPairs{.entry_stack = last_index_of(recording.entry_stacks),
                                                   .backward_stack = last_index_of(recording.backward_stacks)});
      ASSERT_TRUE(streamed.wants(head));
      feed_in_chunks(streamed, recording, chunk, 3);
      EXPECT_EQ(pprof_profile(head, std::move(streamed).finish(head), false).data, whole.data);
    }
  }
}

// Several recordings in one profile (report A B ... --pprof), each read
// as a stream on its own, one of them system-wide and one read whole: the
// profile of all of them read whole, each labelled with its file.
TEST(StreamedPprof, WritesTheWholeReadsProfileOfSeveralRecordings) {
  const Recording one = sampled_recording(6, 2000), other = sampled_recording(7, 1500);
  const Recording wide = system_wide_recording(8, 2000);
  const Recording one_head = head_of(one), wide_head = streamed_read_of(wide);
  for (bool raw : {false, true}) {
    SCOPED_TRACE(raw ? "raw" : "compensated");
    const PprofProfile whole =
        pprof_profile({{&one, "a.gpuprof"}, {&wide, "b.gpuprof"}, {&other, "c.gpuprof"}}, raw);
    StreamedMetricSums one_sums(one_head, compensation_costs(one_head, raw), last_pair_of(one),
                                pprof_metrics(one_head));
    feed_in_chunks(one_sums, one, 7, 1);
    std::map<StackMetric, StackSums> sums = std::move(one_sums).finish();
    StreamedProcessMetricSums wide_sums(wide_head, compensation_costs(wide_head, raw), pprof_metrics(wide_head));
    feed_in_chunks(wide_sums, wide, 500, 0);
    std::map<uint32_t, ProcessMetricSums> processes = std::move(wide_sums).finish(wide_head);
    const PprofProfile streamed = pprof_profile(
        {{&one_head, "a.gpuprof", &sums}, {&wide_head, "b.gpuprof", nullptr, &processes}, {&other, "c.gpuprof"}},
        raw);
    EXPECT_EQ(streamed.data, whole.data);
    EXPECT_GT(whole.stats.samples, 200u);
    // Each file's label is in it.
    for (const char* file : {"a.gpuprof", "b.gpuprof", "c.gpuprof"})
      EXPECT_NE(whole.data.find(file), std::string::npos) << file;
  }
}

TEST(StreamedPprof, DeclinesSystemWideRecordingsAndDropsAllocatorEvents) {
  Recording recording = random_recording(5, 100);
  StreamedMetricSums sums(recording, nullptr, std::nullopt, pprof_metrics(recording));
  EXPECT_TRUE(sums.wants(recording));
  recording.options.memory = true;
  EXPECT_TRUE(sums.wants(recording));
  const gp_mem_event allocation{};
  EXPECT_TRUE(sums.on_mem_events(std::span<const gp_mem_event>(&allocation, 1)));
  recording.options.memory = false;
  recording.process.pid = 0;  // record -a
  EXPECT_FALSE(sums.wants(recording));
}

}  // namespace
}  // namespace gpuprof

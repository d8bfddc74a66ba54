// The streamed folded stacks of a system-wide recording
// (analyze/streamed_process_metric_sums.h, folded_by_process_from_sums)
// against folded_stacks_by_process() of the same recording read whole:
// the same lines, totals and counters, for self times (compensated and
// raw) and samples, on random streams of two processes that ran ops (one
// first met after cuts) and one only sampled, fed in chunks of every size,
// with Python entry stacks too (their pairs chunks after their events).
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "analyze/aggregator.h"
#include "analyze/process_filter.h"
#include "analyze/streamed_process_metric_sums.h"
#include "output/folded_stacks.h"
#include "random_event_streams.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

FoldedStacks streamed_folded(const Recording& recording, FoldedMetric metric, size_t chunk, bool raw_times,
                             size_t pair_delay = 0) {
  const Recording head = streamed_read_of(recording);
  StreamedProcessMetricSums streamed(head, compensation_costs(head, raw_times),
                                     {metric == FoldedMetric::kSamples ? StackMetric::kSamples
                                                                       : StackMetric::kSelfCpuTime},
                                     LastPairs{.entry_stack = last_index_of(recording.entry_stacks),
                                               .backward_stack = last_index_of(recording.backward_stacks)});
  EXPECT_TRUE(streamed.wants(head));
  feed_in_chunks(streamed, recording, chunk, pair_delay);
  return folded_by_process_from_sums(std::move(streamed).finish(head), metric);
}

void expect_same_folded(const FoldedStacks& streamed, const FoldedStacks& whole) {
  EXPECT_EQ(streamed.stacks, whole.stacks);
  EXPECT_EQ(streamed.self_ns_total, whole.self_ns_total);
  EXPECT_EQ(streamed.stacks_below_1us, whole.stacks_below_1us);
  EXPECT_EQ(streamed.samples_total, whole.samples_total);
  EXPECT_EQ(streamed.counters, whole.counters);
}

// The root frames of the lines: their processes.
std::set<std::string> roots(const FoldedStacks& folded) {
  std::set<std::string> out;
  for (const FoldedStack& s : folded.stacks) out.insert(s.stack.substr(0, s.stack.find(';')));
  return out;
}

TEST(StreamedProcessMetricSums, EqualTheWholeFoldedStacksOnRandomStreams) {
  for (uint32_t seed = 1; seed <= 20; seed++) {
    Recording recording = system_wide_recording(seed, 3000);
    // Odd seeds: Python stacks with module frames on processes 10 and 20's
    // entries (record -a --with-stack).
    if (seed % 2) add_random_module_stacks(recording, seed, false, /*engine_op=*/4);
    // Slow calls: most stacks reach 1 us.
    for (gp_event& e : recording.events) e.ts_ns *= 50;
    for (CpuSample& s : recording.samples) s.ts_ns *= 50;
    for (FoldedMetric metric : {FoldedMetric::kSelfCpuTime, FoldedMetric::kSamples})
      for (bool raw : {false, true}) {
        if (metric == FoldedMetric::kSamples && raw) continue;  // samples are not compensated
        const FoldedStacks whole = folded_stacks_by_process(recording, metric, raw);
        // Both processes that ran ops, and (samples) the one only sampled.
        EXPECT_EQ(roots(whole), metric == FoldedMetric::kSamples
                                    ? (std::set<std::string>{"python3-10", "python3-20", "spin-30"})
                                    : (std::set<std::string>{"python3-10", "python3-20"}));
        EXPECT_GT(whole.stacks.size(), 20u);
        if (seed % 2 && metric == FoldedMetric::kSelfCpuTime) {  // the entries' Python frames on both
          size_t python = 0;
          for (const FoldedStack& line : whole.stacks) python += line.stack.find("x.py(1):_<module>") != std::string::npos;
          EXPECT_GT(python, 10u);
        }
        for (size_t chunk : {size_t{1}, size_t{7}, size_t{500}, recording.events.size()})
          for (size_t pair_delay : {size_t{0}, size_t{3}}) {
            SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " delay " +
                         std::to_string(pair_delay) + (metric == FoldedMetric::kSamples ? " samples" : "") +
                         (raw ? " raw" : ""));
            expect_same_folded(streamed_folded(recording, metric, chunk, raw, pair_delay), whole);
          }
      }
  }
}

// report --pid/--comm of a streamed read counts what the chosen processes'
// selection holds from these: each one's op events, and every CUT once.
TEST(StreamedProcessMetricSums, CountEachProcesssOpEventsAndTheCuts) {
  for (uint32_t seed = 1; seed <= 5; seed++) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    const Recording recording = system_wide_recording(seed, 3000);
    const Recording head = streamed_read_of(recording);
    StreamedProcessMetricSums streamed(head, nullptr, {StackMetric::kSamples});
    feed_in_chunks(streamed, recording, 7, 0);
    const uint64_t cuts = streamed.cuts();
    EXPECT_GT(cuts, 0u);
    const std::map<uint32_t, ProcessMetricSums> sums = std::move(streamed).finish(head);
    ASSERT_EQ(sums.size(), 3u);  // two ran ops, one was only sampled
    for (const auto& [pid, process] : sums)
      EXPECT_EQ(process.op_events + cuts, select_processes(recording, {pid}).events.size()) << pid;
    EXPECT_EQ(sums.at(10).op_events + sums.at(20).op_events + cuts,
              select_processes(recording, {10, 20}).events.size());
  }
}

TEST(StreamedProcessMetricSums, TakesEntryStackRecordingsAndDropsAllocatorEvents) {
  Recording recording = system_wide_recording(2, 100);
  StreamedProcessMetricSums streamed(recording, nullptr, {StackMetric::kSelfCpuTime});
  EXPECT_TRUE(streamed.wants(recording));
  recording.options.memory = true;
  EXPECT_TRUE(streamed.wants(recording));
  const gp_mem_event allocation{};
  EXPECT_TRUE(streamed.on_mem_events(std::span<const gp_mem_event>(&allocation, 1)));
  recording.options.memory = false;
  recording.options.with_stack = true;
  EXPECT_TRUE(streamed.wants(recording));
}

}  // namespace
}  // namespace gpuprof

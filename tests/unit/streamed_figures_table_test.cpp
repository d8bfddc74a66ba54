// The streamed op table with memory and GPU columns
// (analyze/streamed_figures_table.h, analyze/streamed_call_figures.h)
// against aggregate() of the same recording read whole: row for row, peaks
// and [memory] row included, on random event streams (folds, unwinding,
// catches, steps, cuts, open ranges; three threads) with allocator events
// and GPU launches stamped on the events' own moments (a call's start or
// end: the join's edges), between calls, and on a thread that runs no op;
// CPU releases on another thread than their allocation and of blocks
// allocated before the recording; GPU activities chunks after their
// launches, two per graph launch, some of launches never seen; all of it
// handed over in file order, in chunks of several sizes.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/streamed_figures_table.h"
#include "probe_events.h"
#include "profile_checks.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

Profile streamed_profile(const Recording& recording, size_t chunk, size_t activity_lag, bool raw_times,
                         const TableGrouping& grouping = {}) {
  TableGrouping with_ends = grouping;
  with_ends.last_entry_shape = last_index_of(recording.entry_shapes);
  with_ends.last_entry_stack = last_index_of(recording.entry_stacks);
  StreamedFiguresTable streamed(compensation_costs(recording, raw_times), raw_times, recording,
                                bounds_of(recording, chunk, activity_lag), with_ends);
  // The read's own Recording, whose op table wants() sees, is moved out
  // when the read returns: finish() must not need it.
  Recording being_read = head_of(recording);
  EXPECT_TRUE(streamed.wants(being_read));
  // The pairs come after their events' chunks, a few chunks later.
  feed_with_records(streamed, recording, chunk, activity_lag, /*pair_delay=*/activity_lag + 1);
  Recording returned = std::move(being_read);
  return std::move(streamed).finish(recording);
}

void expect_same_peak(const MemoryPeakInfo& streamed, const MemoryPeakInfo& whole) {
  EXPECT_EQ(streamed.seen, whole.seen);
  EXPECT_EQ(streamed.bytes, whole.bytes);
  EXPECT_EQ(streamed.at_s, whole.at_s);
  EXPECT_EQ(streamed.op, whole.op);
  EXPECT_EQ(streamed.device_index, whole.device_index);
}

TEST(StreamedFiguresTable, EqualsTheWholeAggregateWithMemoryAndGpuColumns) {
  uint64_t op_cuda_ns = 0, op_cpu_mem = 0, outside = 0, peaks_in_ops = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    recording.probe_costs = costs_of_the_streams();
    const bool memory = seed % 3 != 0, gpu = seed % 3 != 1;
    if (memory) add_random_memory(recording, rng, 1500);
    if (gpu) add_random_gpu(recording, rng, 600);
    ring_order(recording.mem_events, rng);
    ring_order(recording.gpu_correlations, rng);
    for (bool raw : {false, true}) {
      const Profile whole = aggregate(recording, AggregateOptions{.raw_times = raw});
      for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()}) {
        for (size_t lag : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                       std::to_string(lag) + (raw ? " raw" : ""));
          const Profile streamed = streamed_profile(recording, chunk, lag, raw);
          expect_same_profile(streamed, whole);
          expect_same_peak(streamed.cpu_memory_peak, whole.cpu_memory_peak);
          expect_same_peak(streamed.cuda_memory_peak, whole.cuda_memory_peak);
          EXPECT_EQ(streamed.memory_unmatched_frees, whole.memory_unmatched_frees);
        }
      }
      for (const OpRow& row : whole.rows) {
        if (!row.on_gpu && row.name != "[memory]") op_cuda_ns += row.self_cuda_ns;
        if (!row.on_gpu && row.name != "[memory]") op_cpu_mem += row.self_cpu_mem != 0;
        if (row.name == "[memory]") outside += row.calls;
      }
      peaks_in_ops += !whole.cpu_memory_peak.op.empty();
    }
  }
  // The streams must charge ops and leave some outside, or this proves little.
  EXPECT_GT(op_cuda_ns, 0u);
  EXPECT_GT(op_cpu_mem, 50u);
  EXPECT_GT(outside, 1000u);
  EXPECT_GT(peaks_in_ops, 5u);
}

// Grouped by input shape, by stack and by both (report
// --group-by-input-shape, --group-by-stack-n): each forest also waits for
// its events' ENTRY_SHAPES and ENTRY_STACKS pairs, handed over chunks
// after them; the [memory] and GPU rows get "[]" for shapes and no stack.
TEST(StreamedFiguresTable, GroupedByInputShapeOrStackEqualsTheWholeAggregate) {
  size_t shaped_rows = 0, stacked_rows = 0, shaped_memory = 0;
  for (uint32_t seed = 1; seed <= 20; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    recording.probe_costs = costs_of_the_streams();
    recording.options.with_stack = true;
    recording.sample_frames = {"train.py(9): <module>", "train.py(5): step", "model.py(3): forward",
                               "optim.py(7): step"};
    recording.sample_stacks = {{0, 1, 2}, {0, 1, 3}, {0}};
    add_random_entry_shapes(recording, rng);
    add_random_entry_stacks(recording, rng, 3);
    add_random_memory(recording, rng, 1000);
    if (seed % 2) add_random_gpu(recording, rng, 400);
    ring_order(recording.mem_events, rng);
    ring_order(recording.gpu_correlations, rng);
    for (const TableGrouping& grouping : {TableGrouping{.by_input_shape = true}, TableGrouping{.by_stack_n = 1},
                                          TableGrouping{.by_input_shape = true, .by_stack_n = 2}}) {
      const Profile whole = aggregate(recording, AggregateOptions{.group_by_input_shape = grouping.by_input_shape,
                                                                  .group_by_stack_n = grouping.by_stack_n});
      for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}})
        for (size_t lag : {size_t{0}, size_t{3}}) {
          SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                       std::to_string(lag) + " shapes " + std::to_string(grouping.by_input_shape) + " stack " +
                       std::to_string(grouping.by_stack_n));
          const Profile streamed = streamed_profile(recording, chunk, lag, false, grouping);
          expect_same_profile(streamed, whole);
          EXPECT_EQ(streamed.group_by_stack_n, whole.group_by_stack_n);
          expect_same_peak(streamed.cpu_memory_peak, whole.cpu_memory_peak);
        }
      for (const OpRow& row : whole.rows) {
        shaped_rows += row.input_shapes == "[[8, 3], [3]]";
        stacked_rows += row.stack == std::vector<std::string>{"optim.py(7): step"};
        shaped_memory += row.input_shapes == "[[8, 3], [3]]" && row.self_cpu_mem != 0;
      }
    }
  }
  // Or the comparison proves little.
  EXPECT_GT(shaped_rows, 20u);
  EXPECT_GT(stacked_rows, 20u);
  EXPECT_GT(shaped_memory, 10u);
}

// An activity of a launch made inside a call whose same-name parent folds
// it: torch lifts the deepest call's kernels to the row (call_figures.h);
// the launch comes in a chunk after the calls, the activity later still.
TEST(StreamedFiguresTable, AChainsKernelsAreItsDeepestCallsWhenTheyComeLate) {
  Recording recording = recording_of(ops_of_the_streams(), {op_entry(100, 9000, 0, 10), op_entry(110, 8900, 1, 10),
                                                            op_exit(190, 8900, 1, 10), op_exit(200, 9000, 0, 10),
                                                            op_entry(300, 9000, 3, 10), op_exit(400, 9000, 3, 10)});
  recording.cupti_shim = CuptiShimInfo{.state = 1};
  recording.launch_names = {"k"};
  recording.gpu_correlations = {{.ts_ns = 105, .correlation_id = 1, .tid = 10},
                                {.ts_ns = 150, .correlation_id = 2, .tid = 10},
                                {.ts_ns = 300, .correlation_id = 3, .tid = 10}};
  recording.gpu_activities = {{.start_ns = 1000, .end_ns = 1007, .correlation_id = 1},
                              {.start_ns = 1000, .end_ns = 1030, .correlation_id = 2},
                              {.start_ns = 1000, .end_ns = 1500, .correlation_id = 3}};
  const Profile whole = aggregate(recording);
  const Profile streamed = streamed_profile(recording, 1, 2, false);
  expect_same_profile(streamed, whole);
  ASSERT_EQ(streamed.rows.size(), 3u);
  EXPECT_EQ(streamed.rows[0].name, "aten::add");
  EXPECT_EQ(streamed.rows[0].self_cuda_ns, 30u);  // the inner call's kernel; the outer's own 7 ns drop out
  EXPECT_EQ(streamed.rows[1].name, "aten::mm");
  EXPECT_EQ(streamed.rows[1].self_cuda_ns, 500u);  // launched at its start
  EXPECT_EQ(streamed.rows[2].name, "k");
  EXPECT_EQ(streamed.rows[2].cuda_total_ns, 537u);
}

}  // namespace
}  // namespace gpuprof

// report --kernels streamed (output/streamed_kernel_table.h) against
// summarize_gpu_kernels() of the same recording read whole: the same rows
// and totals, on random event streams (folds, unwinding, steps, cuts, open
// ranges; three threads) with GPU launches stamped on the events' own
// moments (a call's start or end), between calls and on a thread that runs
// no op; activities chunks after their launches, two per graph launch,
// none for some, some of launches never seen; handed over in file order,
// in chunks of several sizes, with and without allocator events.
#include <gtest/gtest.h>

#include <random>
#include <string>

#include "output/gpu_kernel_table.h"
#include "output/launch_table.h"
#include "output/streamed_kernel_table.h"
#include "random_event_streams.h"
#include "random_join_records.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

GpuKernelSummary streamed_summary(const Recording& recording, size_t chunk, size_t activity_lag) {
  StreamedKernelTable streamed(bounds_of(recording, chunk, activity_lag));
  // The read's own Recording, whose op table wants() sees, is moved out
  // when the read returns: finish() must not need it.
  Recording being_read = head_of(recording);
  EXPECT_TRUE(streamed.wants(being_read));
  feed_with_records(streamed, recording, chunk, activity_lag);
  Recording returned = std::move(being_read);
  return std::move(streamed).finish(recording);
}

TEST(StreamedKernelTable, EqualsTheWholeSummaryOnRandomStreams) {
  uint64_t charged = 0, outside = 0, not_seen = 0;
  for (uint32_t seed = 1; seed <= 40; seed++) {
    std::mt19937 rng(seed);
    Recording recording = random_recording(seed, 3000);
    if (seed % 2) add_random_memory(recording, rng, 500);
    add_random_gpu(recording, rng, 600);
    ring_order(recording.mem_events, rng);
    ring_order(recording.gpu_correlations, rng);
    const GpuKernelSummary whole = summarize_gpu_kernels(recording);
    for (size_t chunk : {size_t{1}, size_t{9}, size_t{400}, recording.events.size()})
      for (size_t lag : {size_t{0}, size_t{3}}) {
        SCOPED_TRACE("seed " + std::to_string(seed) + " chunk " + std::to_string(chunk) + " lag " +
                     std::to_string(lag));
        const GpuKernelSummary streamed = streamed_summary(recording, chunk, lag);
        EXPECT_EQ(streamed.rows, whole.rows);
        EXPECT_EQ(streamed.activities, whole.activities);
        EXPECT_EQ(streamed.total_ns, whole.total_ns);
        EXPECT_EQ(streamed.launch_not_seen, whole.launch_not_seen);
        EXPECT_EQ(streamed.outside_ops, whole.outside_ops);
        EXPECT_EQ(format_gpu_kernel_table(streamed, -1), format_gpu_kernel_table(whole, -1));
      }
    for (const GpuKernelRow& row : whole.rows) {
      if (row.op == kNoOpName) outside += row.calls;
      else if (row.op == kLaunchNotSeen) not_seen += row.calls;
      else charged += row.calls;
    }
  }
  // The streams must charge ops, leave some outside and some unseen, or
  // this proves little.
  EXPECT_GT(charged, 5000u);
  EXPECT_GT(outside, 500u);
  EXPECT_GT(not_seen, 100u);
}

}  // namespace
}  // namespace gpuprof

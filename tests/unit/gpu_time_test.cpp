// Tests of report --gpu's breakdown (analyze/gpu_time.h) on planted CUPTI
// records whose busy time, gaps, launches, overlap and queue delays are
// known, and of its text.
#include "analyze/gpu_time.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "output/gpu_time_report.h"
#include "probe_events.h"
#include "recordings.h"
#include "test_files.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

enum : uint32_t { kGemm, kNccl, kRelu, kMemcpy, kMemset };

GpuActivity on_stream(GpuActivity a, uint32_t stream) {
  a.stream = stream;
  return a;
}

// Device 0 (ns):        stream 7                 stream 9
//   k::gemm      [1000, 3000)  launched  500
//   nccl         [2000, 5000)  launched  900      (overlaps gemm 1000 ns)
//   memcpy       [6000, 6500)  launched 5500  -> gap [5000, 6000): host wait 500, queued 500
//   k::gemm      [8000, 9000)  launched 7000  -> gap [6500, 8000): host wait 500, queued 1000
//   k::relu      [9500,10000)  launched 9000  -> gap [9000, 9500): queued 500
//   memset      [11000,11200)  launch not seen -> gap [10000, 11000): not seen 1000
// aten::item runs on the launching thread over [4800, 5600), its call under
// the Python frame train.py(42): step; nothing runs at 6500.
Recording planted() {
  Recording r = recording_of({op("aten::item")}, {op_entry(4800, 0x1000, 0), op_exit(5600, 0x1000, 0)});
  r.sample_frames = {"train.py(10): <module>", "train.py(42): step"};
  r.sample_stacks = {{0, 1}};
  r.entry_stacks = {{0, 0}};
  r.launch_names = {"k::gemm", "ncclDevKernel_AllReduce_Sum_f32", "k::relu", "Memcpy HtoD (Pageable -> Device)",
                    "Memset (Device)"};
  r.cupti_shim = CuptiShimInfo{"/opt/gpuprof/libgpuprof_cupti.so", 1, 0, 0};
  r.gpu_correlations = {{500, 1, kTid, 211, 2}, {900, 2, kTid, 211, 2}, {5500, 3, kTid, 41, 2},
                        {7000, 4, kTid, 211, 2}, {9000, 5, kTid, 211, 2}};
  r.gpu_activities = {on_stream(gpu_activity(1, 1000, 3000, kGemm), 7),
                      on_stream(gpu_activity(2, 2000, 5000, kNccl), 9),
                      on_stream(gpu_activity(3, 6000, 6500, kMemcpy, GpuActivityKind::memcpy), 7),
                      on_stream(gpu_activity(4, 8000, 9000, kGemm), 7),
                      on_stream(gpu_activity(5, 9500, 10000, kRelu), 7),
                      on_stream(gpu_activity(6, 11000, 11200, kMemset, GpuActivityKind::memset), 7)};
  return r;
}

TEST(GpuTime, BusyIdleAndWhatTheIdleTimeWaitedFor) {
  const std::vector<GpuDeviceTime> devices = gpu_time_by_device(planted());
  ASSERT_EQ(devices.size(), 1u);
  const GpuDeviceTime& d = devices[0];
  EXPECT_EQ(d.activities, 6u);
  EXPECT_EQ(d.window_start_ns, 1000u);
  EXPECT_EQ(d.window_end_ns, 11200u);
  EXPECT_EQ(d.busy_ns, 6200u);
  EXPECT_EQ(d.idle_gaps, 4u);
  EXPECT_EQ(d.host_wait_ns, 1000u);
  EXPECT_EQ(d.queued_ns, 2000u);
  EXPECT_EQ(d.launch_not_seen_ns, 1000u);
  EXPECT_EQ(d.busy_ns + d.host_wait_ns + d.queued_ns + d.launch_not_seen_ns, d.window_ns());
  EXPECT_EQ(d.by_category, (GpuTimeByCategory{3500, 3000, 500, 200}));
  EXPECT_EQ(d.overlap_ns, 1000u);
  // Delays 500, 500, 500, 1000, 1100: p50 the 3rd, p90 and p99 the 5th.
  EXPECT_EQ(d.queue_delays, (QueueDelays{.count = 5, .p50_ns = 500, .p90_ns = 1100, .p99_ns = 1100, .max_ns = 1100}));
  EXPECT_EQ(d.streams, (std::vector<GpuStreamTime>{{7, 5, 4200, {3500, 0, 500, 200}}, {9, 1, 3000, {0, 3000, 0, 0}}}));
  EXPECT_EQ(d.host_waits, (std::vector<GpuHostWait>{{"[no op]", "", 500, 1}, {"aten::item", "train.py(42): step", 500, 1}}));
  EXPECT_EQ(d.kernels, (std::vector<GpuKernelTime>{{"k::gemm", 2, 3000},
                                                    {"ncclDevKernel_AllReduce_Sum_f32", 1, 3000},
                                                    {"Memcpy HtoD (Pageable -> Device)", 1, 500},
                                                    {"k::relu", 1, 500},
                                                    {"Memset (Device)", 1, 200}}));
}

TEST(GpuTime, DevicesApartAndNoActivitiesNoDevice) {
  Recording r = planted();
  for (GpuActivity& a : r.gpu_activities)
    if (a.stream == 9) a.device = 1;
  const std::vector<GpuDeviceTime> devices = gpu_time_by_device(r);
  ASSERT_EQ(devices.size(), 2u);
  EXPECT_EQ(devices[1].device, 1u);
  EXPECT_EQ(devices[1].busy_ns, 3000u);
  EXPECT_EQ(devices[1].idle_gaps, 0u);
  EXPECT_EQ(devices[0].overlap_ns, 0u);  // the overlap was across devices
  r.gpu_activities.clear();
  EXPECT_TRUE(gpu_time_by_device(r).empty());
}

TEST(GpuTime, NearestRankPercentiles) {
  const std::vector<uint64_t> v{10, 20, 30, 40, 50, 60, 70, 80, 90, 100};
  EXPECT_EQ(nearest_rank(v, 50), 50u);
  EXPECT_EQ(nearest_rank(v, 90), 90u);
  EXPECT_EQ(nearest_rank(v, 99), 100u);
  EXPECT_EQ(nearest_rank(v, 100), 100u);
  EXPECT_EQ(nearest_rank({}, 50), 0u);
}

// tests/golden/gpu_time_report.txt, every figure checked by hand against
// the plan above planted() (e.g. busy 6200 / 10200 ns = 60.8%, k::gemm 3000 /
// 6200 ns of busy = 48.4%); --row-limit 3 cuts the kernels.
TEST(GpuTime, TheReportMatchesTheGoldenFile) {
  const Recording r = planted();
  const std::string text = format_gpu_time_report(gpu_time_by_device(r), *r.cupti_shim, 3);
  std::string golden;
  ASSERT_TRUE(read_file(golden_dir() / "gpu_time_report.txt", &golden));
  EXPECT_EQ(text, golden) << text;
}

}  // namespace
}  // namespace gpuprof

// Tests of summarize_gpu_kernels(): CUPTI's GPU activities -> the op whose
// launch made them, joined by correlation id only.
#include "output/gpu_kernel_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

// aten::linear (100..200) calling aten::add (120..150) on kTid.
Recording with_gpu() {
  Recording r = recording_of({op("aten::linear"), op("aten::add")},
                             {op_entry(100, 0x1000, 0), op_entry(120, 0x0f00, 1), op_exit(150, 0x0f00, 1),
                              op_exit(200, 0x1000, 0)});
  r.launch_names = {"k_add", "k_linear", "graph_a", "graph_b", "[memcpy HtoD]"};
  r.cupti_shim = CuptiShimInfo{"/opt/gpuprof/libgpuprof_cupti.so", 1, 0, 0};
  r.gpu_correlations = {
      {130, 7, kTid, 211, 2},  // in aten::add
      {160, 8, kTid, 430, 2},  // back in aten::linear
      {170, 9, kTid, 311, 2},  // a graph launch in aten::linear
      {50, 10, kTid, 211, 2},  // before any op
      {175, 11, kTid, 41, 2},  // a cudaMemcpyAsync in aten::linear
  };
  return r;
}

TEST(GpuKernelTable, JoinsByCorrelationIdOnlyInAnyOrder) {
  Recording r = with_gpu();
  // GPU times are far from the launches (the GPU runs later): only the id counts.
  r.gpu_activities = {
      gpu_activity(9, 9000, 9300, 3),  // the graph's kernels: one id, several kernels
      gpu_activity(8, 5000, 5500, 1),
      gpu_activity(9, 9300, 9400, 2),
      gpu_activity(7, 4000, 4100, 0),
      gpu_activity(7, 4100, 4300, 0),
      gpu_activity(10, 1000, 1070, 0),
      gpu_activity(11, 6000, 6150, 4, GpuActivityKind::memcpy),
      gpu_activity(99, 7000, 7010, 0),  // its launch was never seen
  };
  const GpuKernelSummary s = summarize_gpu_kernels(r);
  const std::vector<GpuKernelRow> expected = {
      {"aten::linear", "k_linear", 1, 500},
      {"aten::add", "k_add", 2, 300},
      {"aten::linear", "graph_b", 1, 300},
      {"aten::linear", "[memcpy HtoD]", 1, 150},
      {"aten::linear", "graph_a", 1, 100},
      {"[no op]", "k_add", 1, 70},
      {"[launch not seen]", "k_add", 1, 10},
  };
  EXPECT_EQ(s.rows, expected);
  EXPECT_EQ(s.activities, 8u);
  EXPECT_EQ(s.total_ns, 1430u);
  EXPECT_EQ(s.outside_ops, 1u);
  EXPECT_EQ(s.launch_not_seen, 1u);
}

TEST(GpuKernelTable, ARuntimeLaunchAndItsDriverCallShareOneId) {
  // CUPTI gives the driver call inside a runtime launch the runtime call's
  // id: two correlation records of one id still charge its kernel once.
  Recording r = with_gpu();
  r.gpu_correlations.push_back({131, 7, kTid, 307, 1});
  r.gpu_activities = {gpu_activity(7, 4000, 4100, 0)};
  const GpuKernelSummary s = summarize_gpu_kernels(r);
  ASSERT_EQ(s.rows.size(), 1u);
  EXPECT_EQ(s.rows[0], (GpuKernelRow{"aten::add", "k_add", 1, 100}));
}

TEST(GpuKernelTable, FormatAndWarnings) {
  Recording r = with_gpu();
  r.gpu_activities = {gpu_activity(7, 4000, 4100, 0), gpu_activity(8, 5000, 7500, 1)};
  r.cupti_shim->records_dropped = 4;
  r.cupti_shim->events_lost = 2;
  EXPECT_EQ(format_gpu_kernel_table(summarize_gpu_kernels(r), -1),
            "------------  --------  -----  ---------  -------\n"
            "Operator      Kernel    Calls  GPU total  GPU avg\n"
            "------------  --------  -----  ---------  -------\n"
            "aten::linear  k_linear      1    2.500us  2.500us\n"
            "aten::add     k_add         1    0.100us  0.100us\n"
            "------------  --------  -----  ---------  -------\n"
            "2 GPU activities, 2.600us of GPU time (0 launched outside any op, 0 whose launch was not seen)\n"
            "WARNING: CUPTI dropped 4 records: GPU times are incomplete\n"
            "WARNING: 2 GPU records lost (ring buffer full): GPU times are incomplete\n");
  r.cupti_shim->state = 3;
  r.gpu_activities.clear();
  const std::string taken = format_gpu_kernel_table(summarize_gpu_kernels(r), -1);
  EXPECT_NE(taken.find("WARNING: the CUPTI shim was not tracing (gpuprof_cupti_state 3)"), std::string::npos)
      << taken;
  r.cupti_shim->state = 7;  // given up to the job's own profiler during the recording
  r.cupti_shim->records_dropped = r.cupti_shim->events_lost = 0;
  EXPECT_EQ(format_gpu_record_warnings(*r.cupti_shim),
            "WARNING: the CUPTI shim gave CUPTI up to the job's own profiler (torch.profiler?) during the recording: "
            "GPU times stop there\n");
  r.cupti_shim.reset();
  EXPECT_EQ(format_gpu_kernel_table(summarize_gpu_kernels(r), -1).rfind("No GPU times: ", 0), 0u);
}

}  // namespace
}  // namespace gpuprof

// Tests of summarize_launches() / format_launch_table(): CUDA kernel
// launches -> the innermost op running on the launching thread.
#include "output/launch_table.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using namespace ::gpuprof::test;

CudaLaunch launch_at(uint64_t ts, uint32_t name_id, uint16_t api = GP_LAUNCH_KERNEL, uint32_t tid = kTid) {
  CudaLaunch l;
  l.ts_ns = ts;
  l.tid = tid;
  l.api = api;
  l.name_id = name_id;
  l.grid[0] = 1, l.grid[1] = 2, l.grid[2] = 3;
  l.block[0] = 128, l.block[1] = l.block[2] = 1;
  return l;
}

// ops: 0 aten::linear calling 1 aten::add on thread kTid (100..200, add
// 120..150), and aten::add alone on thread 7 (300..400).
Recording nested_ops() {
  Recording r = recording_of({op("aten::linear"), op("aten::add")},
                             {op_entry(100, 0x1000, 0), op_entry(120, 0x0f00, 1), op_exit(150, 0x0f00, 1),
                              op_exit(200, 0x1000, 0), op_entry(300, 0x2000, 1, 7), op_exit(400, 0x2000, 1, 7)});
  r.launch_names = {"void k::scale<float>(float*, int)", "k::reduce(float const*, float*)", "[CUDA graph]"};
  r.cuda_runtime = CudaRuntimeInfo{"/opt/cuda/libcudart.so.13", 6, 0};
  return r;
}

TEST(LaunchTable, InnermostOpOfTheLaunchingThread) {
  Recording r = nested_ops();
  r.launches = {
      launch_at(125, 0), launch_at(150, 0),    // in aten::add (its exit moment too)
      launch_at(120, 0),                       // the add's entry moment: the add's
      launch_at(160, 1, GP_LAUNCH_KERNEL_EXC), // back in aten::linear
      launch_at(350, 0, GP_LAUNCH_KERNEL, 7),                   // the other thread's add
      launch_at(50, 2, GP_LAUNCH_GRAPH),                        // before any op
      launch_at(350, 2, GP_LAUNCH_GRAPH, 8),                    // a thread without ops
  };
  const LaunchSummary s = summarize_launches(r);
  EXPECT_TRUE(s.traced);
  EXPECT_EQ(s.launches, 7u);
  EXPECT_EQ(s.outside_ops, 2u);
  const std::vector<LaunchRow> expected = {
      {"aten::add", "void k::scale<float>(float*, int)", GP_LAUNCH_KERNEL, 4, "(1, 2, 3)", "(128, 1, 1)", "default"},
      {"[no op]", "[CUDA graph]", GP_LAUNCH_GRAPH, 2, "-", "-", "default"},
      {"aten::linear", "k::reduce(float const*, float*)", GP_LAUNCH_KERNEL_EXC, 1, "(1, 2, 3)", "(128, 1, 1)", "default"},
  };
  EXPECT_EQ(s.rows, expected);
}

TEST(LaunchTable, LaunchesInAnyOrderAcrossThreads) {
  Recording r = nested_ops();
  r.launches = {launch_at(350, 0, GP_LAUNCH_KERNEL, 7), launch_at(160, 1), launch_at(125, 0)};
  r.launches[0].stream = 0x52;  // one row, two streams and two grids: "mixed"
  r.launches[0].grid[0] = 9;
  r.launches[1].stream = 0x52;
  const LaunchSummary s = summarize_launches(r);
  ASSERT_EQ(s.rows.size(), 2u);
  EXPECT_EQ(s.rows[0], (LaunchRow{"aten::add", "void k::scale<float>(float*, int)", GP_LAUNCH_KERNEL, 2, "mixed",
                                  "(128, 1, 1)", "mixed"}));
  EXPECT_EQ(s.rows[1], (LaunchRow{"aten::linear", "k::reduce(float const*, float*)", GP_LAUNCH_KERNEL, 1,
                                  "(1, 2, 3)", "(128, 1, 1)", "0x52"}));
  EXPECT_EQ(s.outside_ops, 0u);
}

TEST(LaunchTable, Format) {
  Recording r = nested_ops();
  r.launches = {launch_at(125, 0), launch_at(126, 0), launch_at(160, 1, GP_LAUNCH_KERNEL_EXC), launch_at(50, 2, GP_LAUNCH_GRAPH)};
  r.cuda_runtime->launches_lost = 3;
  const std::string text = format_launch_table(summarize_launches(r), -1);
  EXPECT_EQ(text,
            "------------  ---------------------------------  -------------------  ---------  -----------  -------  --------\n"
            "Operator      Kernel                             Launched with        Grid       Block        Stream   Launches\n"
            "------------  ---------------------------------  -------------------  ---------  -----------  -------  --------\n"
            "aten::add     void k::scale<float>(float*, int)  cudaLaunchKernel     (1, 2, 3)  (128, 1, 1)  default         2\n"
            "[no op]       [CUDA graph]                       cudaGraphLaunch      -          -            default         1\n"
            "aten::linear  k::reduce(float const*, float*)    cudaLaunchKernelExC  (1, 2, 3)  (128, 1, 1)  default         1\n"
            "------------  ---------------------------------  -------------------  ---------  -----------  -------  --------\n"
            "4 CUDA launches (1 outside any op) through /opt/cuda/libcudart.so.13\n"
            "WARNING: 3 launches lost (ring buffer full): the counts are incomplete\n");
  const std::string limited = format_launch_table(summarize_launches(r), 1);
  EXPECT_NE(limited.find("; 2 more rows (--row-limit -1 shows all)"), std::string::npos) << limited;
  EXPECT_EQ(limited.find("aten::linear"), std::string::npos) << limited;
}

// A pip wheel's stripped libtorch_cuda leaves the probes without a name
// (docs/gpu.md); with the shim, CUPTI's name for the kernel is taken,
// through the runtime-domain correlation ids the launching thread
// published between the launch and its next launch. Driver launches keep
// their CUfunction (their correlations need not follow their probe hits).
TEST(LaunchTable, UnnamedLaunchesTakeCuptiNames) {
  Recording r = nested_ops();
  // 3.. unnamed by the probes, 6.. CUPTI's names.
  r.launch_names.insert(r.launch_names.end(), {"[unknown kernel 0x7f00]", "[CUfunction 0x51]", "[unknown kernel 0x7f10]",
                                               "void at::native::vectorized_elementwise_kernel<4>()",
                                               "cudnn::bn_fw_inf_1C11_kernel_NCHW", "k::scale_from_cupti"});
  r.launches = {
      launch_at(125, 3),                        // in aten::add: ids 5 (no kernel: a driver-domain id), then 6
      launch_at(160, 4, GP_LAUNCH_DRIVER_KERNEL),  // in aten::linear, id 7 after it: a driver launch, kept
      launch_at(170, 5),                        // no id before the next launch on its thread: stays unnamed
      launch_at(175, 0),                        // named by its symbol: kept, whatever CUPTI says (id 8)
      launch_at(180, 2, GP_LAUNCH_GRAPH),       // a graph launch's many kernels: never renamed (id 9)
      launch_at(350, 3, GP_LAUNCH_KERNEL, 7),   // thread 7's add: thread 8's id is not its own
  };
  r.gpu_correlations = {{126, 5, kTid, 307, 1}, {127, 6, kTid, 211, 2}, {161, 7, kTid, 307, 1},
                        {176, 8, kTid, 211, 2}, {181, 9, kTid, 311, 2}, {351, 10, 8, 211, 2}};
  auto kernel = [](uint64_t correlation, uint32_t name_id) {
    GpuActivity a;
    a.start_ns = 1000 + correlation;
    a.end_ns = a.start_ns + 10;
    a.correlation_id = correlation;
    a.kind = GpuActivityKind::kernel;
    a.name_id = name_id;
    return a;
  };
  GpuActivity copy = kernel(5, 6);  // a memcpy of id 5 names nothing
  copy.kind = GpuActivityKind::memcpy;
  r.gpu_activities = {copy, kernel(6, 6), kernel(7, 7), kernel(8, 8), kernel(9, 8), kernel(10, 8)};
  const LaunchSummary s = summarize_launches(r);
  EXPECT_EQ(s.named_by_cupti, 1u);
  const std::vector<LaunchRow> expected = {
      {"aten::add", "[unknown kernel 0x7f00]", GP_LAUNCH_KERNEL, 1, "(1, 2, 3)", "(128, 1, 1)", "default"},
      {"aten::add", "void at::native::vectorized_elementwise_kernel<4>()", GP_LAUNCH_KERNEL, 1, "(1, 2, 3)",
       "(128, 1, 1)", "default"},
      {"aten::linear", "[CUDA graph]", GP_LAUNCH_GRAPH, 1, "-", "-", "default"},
      {"aten::linear", "[CUfunction 0x51]", GP_LAUNCH_DRIVER_KERNEL, 1, "(1, 2, 3)", "(128, 1, 1)", "default"},
      {"aten::linear", "[unknown kernel 0x7f10]", GP_LAUNCH_KERNEL, 1, "(1, 2, 3)", "(128, 1, 1)", "default"},
      {"aten::linear", "void k::scale<float>(float*, int)", GP_LAUNCH_KERNEL, 1, "(1, 2, 3)", "(128, 1, 1)",
       "default"},
  };
  EXPECT_EQ(s.rows, expected);
  EXPECT_NE(format_launch_table(s, -1).find("6 CUDA launches (0 outside any op; 1 named from CUPTI, their probe "
                                            "finding no symbol) through /opt/cuda/libcudart.so.13"),
            std::string::npos)
      << format_launch_table(s, -1);
}

TEST(LaunchTable, NotTraced) {
  Recording r = recording_of({op("aten::add")}, {});
  const LaunchSummary s = summarize_launches(r);
  EXPECT_FALSE(s.traced);
  EXPECT_NE(format_launch_table(s, -1).find("No CUDA launches were traced"), std::string::npos);
}

TEST(LaunchTable, EveryEntryPointHasItsApiName) {
  EXPECT_STREQ(launch_api_name(GP_LAUNCH_KERNEL), "cudaLaunchKernel");
  EXPECT_STREQ(launch_api_name(GP_LAUNCH_KERNEL_EXC), "cudaLaunchKernelExC");
  EXPECT_STREQ(launch_api_name(GP_LAUNCH_GRAPH), "cudaGraphLaunch");
  EXPECT_STREQ(launch_api_name(GP_LAUNCH_DRIVER_KERNEL), "cuLaunchKernel");
  EXPECT_STREQ(launch_api_name(GP_LAUNCH_DRIVER_KERNEL_EX), "cuLaunchKernelEx");
  EXPECT_STREQ(launch_api_name(0), "?");
  EXPECT_STREQ(launch_api_name(6), "?");
}

}  // namespace
}  // namespace gpuprof

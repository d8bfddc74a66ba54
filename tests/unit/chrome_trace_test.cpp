// Tests of the Chrome trace export: a golden file for a recording with every
// kind of data, and a structural validator (valid JSON, required fields,
// X events properly nested per thread, every flow with both ends, every
// stack frame and track defined) run on it and on cut-down traces.
#include "output/chrome_trace.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "base/output_file.h"
#include "probe_events.h"
#include "recordings.h"
#include "test_files.h"
#include "trace_structure.h"

namespace gpuprof {
namespace {

using json = nlohmann::json;
using namespace ::gpuprof::test;

constexpr uint32_t kMain = 500, kWorker = 501;
constexpr uint64_t kStart = 1'000'000;  // the recording's CLOCK_MONOTONIC start

// Two threads: on the main thread aten::linear (+10 us .. +60 us) calls
// aten::addmm (+20 .. +40), which launches a kernel; aten::relu (+70 .. +75)
// ends by exception unwinding; the worker runs aten::conv2d (+15 .. +50)
// with a driver API launch in it. Shapes for linear and addmm, entry stacks
// for linear; two CPU samples (one with Python and kernel frames); GPU
// activities: the addmm kernel, a memcpy launched outside ops, a kernel
// whose launch was not seen; CPU and CUDA memory.
Recording full_recording() {
  enum : uint32_t { kLinear, kAddmm, kRelu, kConv, kEmpty };
  Recording r = recording_of(
      {op("aten::linear"), op("aten::addmm"), op("aten::relu"), op("aten::conv2d"), op("aten::empty")},
      {op_entry(kStart + 10'000, 0x1000, kLinear, kMain), op_entry(kStart + 15'000, 0x2000, kConv, kWorker),
       op_entry(kStart + 20'000, 0x0f00, kAddmm, kMain), op_exit(kStart + 40'000, 0x0f00, kAddmm, kMain),
       op_exit(kStart + 50'000, 0x2000, kConv, kWorker), op_exit(kStart + 60'000, 0x1000, kLinear, kMain),
       op_entry(kStart + 70'000, 0x1000, kRelu, kMain), op_entry(kStart + 71'000, 0x0f00, kEmpty, kMain),
       op_exit(kStart + 72'500, 0x0f00, kEmpty, kMain), catch_at(kStart + 75'000, 0x1100, kMain)});
  r.process = {.pid = static_cast<int32_t>(kMain), .comm = "python3", .cmdline = "python3 train.py \"x\"",
               .libtorch_path = "/usr/lib/libtorch_cpu.so", .libtorch_build_id = "", .hostname = ""};
  r.clock = {kStart, 1'700'000'000'000'000'000ull, kStart + 100'000};
  r.options.shapes = true;
  r.options.with_stack = true;
  r.options.memory = true;
  r.options.sample_hz = 999;
  r.ops[kEmpty].arg_count = 2;  // no tensor arguments: static [[], []]
  r.shapes = {{std::vector<int64_t>{8, 32}, std::vector<int64_t>{16, 32}, std::vector<int64_t>{16}},
              {std::vector<int64_t>{16}, std::vector<int64_t>{8, 32}, std::nullopt}};
  r.entry_shapes = {{0, 0}, {2, 1}};
  r.sample_frames = {"train.py(12): <module>", "model.py(7): forward", "libtorch_cpu.so!at::native::addmm_impl",
                     "do_syscall_64_[k]", "read_[k]"};
  r.sample_stacks = {{0, 1}, {3, 4}};
  r.entry_stacks = {{0, 0}};
  r.samples = {{kStart + 30'000, kMain, 2, false, 0}, {kStart + 33'000, kWorker, 2, true, kNoPythonStack}};
  r.sample_kernel_stacks = {{1, 1}};
  r.launch_names = {"void at::native::gemm<float>(float*)", "[CUfunction 0xf00d]", "Memcpy HtoD (Pageable -> Device)"};
  r.launches = {{kStart + 30'000, 0x7f00, 0x51, {4, 1, 1}, {128, 1, 1}, kMain, GP_LAUNCH_KERNEL, 0},
                {kStart + 45'000, 0xf00d, 0x61, {2, 1, 1}, {64, 2, 1}, kWorker, GP_LAUNCH_DRIVER_KERNEL, 1}};
  r.cuda_runtime = CudaRuntimeInfo{"/usr/local/cuda/lib64/libcudart.so.13", 6, 0};
  r.cupti_shim = CuptiShimInfo{"/opt/gpuprof/libgpuprof_cupti.so", 1, 0, 0};
  r.gpu_correlations = {{kStart + 30'100, 7, kMain, 211, 2}, {kStart + 65'000, 8, kMain, 41, 2}};
  r.gpu_activities = {{kStart + 35'000, kStart + 39'500, 7, 0, 0, 81, GpuActivityKind::kernel, 0},
                      {kStart + 66'000, kStart + 66'250, 8, (uint64_t{1} << 56) | 4096, 0, 82,
                       GpuActivityKind::memcpy, 2},
                      {kStart + 80'000, kStart + 81'000, 99, 0, 1, 7, GpuActivityKind::kernel, 0}};
  r.thread_names = {{kMain, "python3"}};  // the worker's name was not read
  r.mem_events = {cpu_alloc(kStart + 25'000, 0xa0, 4096, kMain), cuda_mem(kStart + 26'000, 0xb0, 512, 1536, 0, kMain),
                  cpu_free(kStart + 58'000, 0xa0, kMain)};
  return r;
}

std::string trace_of(const Recording& r, const ChromeTraceOptions& options = {}) {
  std::string out;
  write_chrome_trace(r, options, [&](std::string_view piece) { out += piece; });
  return out;
}

json events_of(const std::string& text) { return json::parse(text)["traceEvents"]; }

std::multiset<std::string> names_with_ph(const json& events, const std::string& ph) {
  std::multiset<std::string> names;
  for (const json& e : events)
    if (e["ph"] == ph) names.insert(e["name"].get<std::string>());
  return names;
}

TEST(ChromeTrace, MatchesTheGoldenFile) {
  // tests/golden/chrome_trace_full.json, checked by hand once: the op calls
  // of both threads (relu unwound, its aten::empty inside), shapes, the
  // entry stack as sf, two samples, two launches, three GPU activities on
  // two devices with the two flows whose launch was seen, memory counters.
  const std::string trace = trace_of(full_recording());
  const std::string path = (test::golden_dir() / "chrome_trace_full.json").string();
  if (std::getenv("GPUPROF_WRITE_GOLDEN")) {  // after a deliberate change: rewrite, then review the diff
    std::FILE* f = std::fopen(path.c_str(), "wb");
    ASSERT_NE(f, nullptr);
    std::fwrite(trace.data(), 1, trace.size(), f);
    std::fclose(f);
  }
  std::string golden;
  ASSERT_TRUE(test::read_file(path, &golden));
  EXPECT_EQ(trace, golden);
  EXPECT_EQ(structural_problems(trace), "");
}

TEST(ChromeTrace, OpCallsAreCompleteEventsWithTorchsArgs) {
  const json events = events_of(trace_of(full_recording()));
  std::map<std::string, json> calls;
  for (const json& e : events)
    if (e["ph"] == "X" && e["cat"] == "cpu_op") calls[e["name"]] = e;
  ASSERT_EQ(calls.size(), 5u);
  EXPECT_EQ(calls["aten::linear"]["ts"], 10.0);
  EXPECT_EQ(calls["aten::linear"]["dur"], 50.0);
  EXPECT_EQ(calls["aten::linear"]["tid"], kMain);
  EXPECT_EQ(calls["aten::linear"]["args"]["Input Dims"], json::parse("[[8,32],[16,32],[16]]"));
  EXPECT_EQ(calls["aten::addmm"]["args"]["Input Dims"], json::parse("[[16],[8,32],null]"));
  EXPECT_EQ(calls["aten::empty"]["args"]["Input Dims"], json::parse("[[],[]]"));
  EXPECT_EQ(calls["aten::conv2d"]["args"]["Input Dims"], nullptr);  // not read
  EXPECT_EQ(calls["aten::relu"]["args"]["unwound"], true);
  EXPECT_FALSE(calls["aten::linear"]["args"].contains("unwound"));
  EXPECT_EQ(calls["aten::conv2d"]["tid"], kWorker);
  // Call ids are the ENTRY events' indices: unique.
  std::set<int> ids;
  for (const auto& [name, e] : calls) ids.insert(e["args"]["call"].get<int>());
  EXPECT_EQ(ids.size(), 5u);
}

TEST(ChromeTrace, StacksAreSharedFrameChains) {
  const json doc = json::parse(trace_of(full_recording()));
  auto chain = [&](const std::string& sf) {
    std::vector<std::string> names;  // innermost first
    for (std::string id = sf; !id.empty();) {
      const json& frame = doc["stackFrames"][id];
      names.push_back(frame["name"]);
      id = frame.contains("parent") ? frame["parent"].get<std::string>() : "";
    }
    return names;
  };
  std::map<std::string, std::vector<std::string>> stacks;
  for (const json& e : doc["traceEvents"])
    if (e.contains("sf")) stacks[e["name"].get<std::string>() + "@" + e["tid"].dump()] = chain(e["sf"]);
  EXPECT_EQ(stacks["aten::linear@500"],
            (std::vector<std::string>{"model.py(7): forward", "train.py(12): <module>"}));
  EXPECT_EQ(stacks["libtorch_cpu.so!at::native::addmm_impl@500"],
            (std::vector<std::string>{"libtorch_cpu.so!at::native::addmm_impl", "model.py(7): forward",
                                      "train.py(12): <module>"}));
  EXPECT_EQ(stacks["read_[k]@501"], (std::vector<std::string>{"read_[k]", "do_syscall_64_[k]",
                                                              "libtorch_cpu.so!at::native::addmm_impl"}));
  // The Python frames the entry and the sample share are one chain.
  EXPECT_EQ(doc["stackFrames"].size(), 6u);
}

// Each call's stack is named once per recorded stack, whatever calls share
// it: linear and relu have one stack, addmm another (its outer frame only),
// and the sample's Python frames are linear's.
TEST(ChromeTrace, CallsOfOneStackShareItsFramesAndOthersGetTheirOwn) {
  Recording r = full_recording();
  r.sample_stacks.push_back({0});                // stack 2: train.py(12) alone
  r.entry_stacks = {{0, 0}, {2, 2}, {6, 0}};  // linear, addmm, relu
  const json doc = json::parse(trace_of(r));
  std::map<std::string, std::string> sf;  // by event name
  for (const json& e : doc["traceEvents"])
    if (e.contains("sf")) sf[e["name"].get<std::string>()] = e["sf"].get<std::string>();
  ASSERT_EQ(sf.size(), 5u);  // three calls, two samples
  EXPECT_EQ(sf["aten::relu"], sf["aten::linear"]);
  EXPECT_NE(sf["aten::addmm"], sf["aten::linear"]);
  const json& linear = doc["stackFrames"][sf["aten::linear"]];
  EXPECT_EQ(linear["name"], "model.py(7): forward");
  EXPECT_EQ(linear["parent"], sf["aten::addmm"]);  // addmm's one frame is linear's outer one
  EXPECT_EQ(doc["stackFrames"][sf["aten::addmm"]]["name"], "train.py(12): <module>");
  EXPECT_FALSE(doc["stackFrames"][sf["aten::addmm"]].contains("parent"));
  EXPECT_EQ(doc["stackFrames"][sf["libtorch_cpu.so!at::native::addmm_impl"]]["parent"], sf["aten::linear"]);
  EXPECT_EQ(doc["stackFrames"].size(), 6u);
}

TEST(ChromeTrace, GpuWorkIsOnDeviceStreamTracksWithFlowsFromItsLaunch) {
  const json events = events_of(trace_of(full_recording()));
  std::map<std::string, json> gpu;
  std::vector<json> flows;
  std::map<std::pair<int64_t, int64_t>, std::string> names;
  for (const json& e : events) {
    if (e["ph"] == "X" && (e["cat"] == "kernel" || e["cat"] == "gpu_memcpy"))
      gpu[e["name"].get<std::string>() + "#" + e["args"]["correlation"].dump()] = e;
    if (e["ph"] == "s" || e["ph"] == "f") flows.push_back(e);
    if (e["ph"] == "M" && e["name"] == "thread_name") names[{e["pid"], e["tid"]}] = e["args"]["name"];
    if (e["ph"] == "M" && e["name"] == "process_name") names[{e["pid"], -1}] = e["args"]["name"];
  }
  ASSERT_EQ(gpu.size(), 3u);
  const json& gemm = gpu["void at::native::gemm<float>(float*)#7"];
  EXPECT_EQ(gemm["ts"], 35.0);
  EXPECT_EQ(gemm["dur"], 4.5);
  const int64_t gemm_pid = gemm["pid"];
  EXPECT_EQ(names[std::make_pair(gemm_pid, int64_t{-1})], "GPU 0");
  EXPECT_EQ(names[std::make_pair(gemm_pid, int64_t{81})], "stream 81");
  EXPECT_EQ(gpu["Memcpy HtoD (Pageable -> Device)#8"]["args"]["bytes"], 4096);
  const int64_t other_pid = gpu["void at::native::gemm<float>(float*)#99"]["pid"];
  EXPECT_EQ(names[std::make_pair(other_pid, int64_t{-1})], "GPU 1");
  // Two arrows (the id-99 kernel's launch was never seen), each from the
  // CPU thread at the launch to the activity's start.
  ASSERT_EQ(flows.size(), 4u);
  EXPECT_EQ(flows[0]["ph"], "s");
  EXPECT_EQ(flows[0]["tid"], kMain);
  EXPECT_EQ(flows[0]["ts"], 30.1);
  EXPECT_EQ(flows[1]["ph"], "f");
  EXPECT_EQ(flows[1]["pid"], gemm["pid"]);
  EXPECT_EQ(flows[1]["ts"], 35.0);
  EXPECT_EQ(flows[0]["id"], flows[1]["id"]);
}

TEST(ChromeTrace, OverlappingRecordsOfOneStreamGetLanesOfTheirOwn) {
  // Three records on stream 81: the second starts before the first ends
  // (it would cross its end on one track), the third after both.
  Recording r = recording_of({op("aten::add")}, {});
  r.process.pid = 42;
  r.cupti_shim = CuptiShimInfo{};
  r.launch_names = {"k"};
  r.gpu_activities = {{kStart + 1'000, kStart + 3'000, 1, 0, 0, 81, GpuActivityKind::kernel, 0},
                      {kStart + 2'000, kStart + 4'000, 2, 0, 0, 81, GpuActivityKind::kernel, 0},
                      {kStart + 5'000, kStart + 6'000, 3, 0, 0, 81, GpuActivityKind::kernel, 0}};
  r.clock.start_monotonic_ns = kStart;
  const std::string trace = trace_of(r);
  EXPECT_EQ(structural_problems(trace), "");
  std::map<int, int64_t> tid_of;  // correlation -> tid
  std::map<int64_t, std::string> names;
  for (const json& e : events_of(trace)) {
    if (e["ph"] == "X") tid_of[e["args"]["correlation"]] = e["tid"];
    if (e["ph"] == "M" && e["name"] == "thread_name") names[e["tid"]] = e["args"]["name"];
  }
  EXPECT_EQ(tid_of[1], 81);
  EXPECT_EQ(tid_of[2], 81 + (int64_t{1} << 32));
  EXPECT_EQ(tid_of[3], 81);
  EXPECT_EQ(names[81], "stream 81");
  EXPECT_EQ(names[81 + (int64_t{1} << 32)], "stream 81 (lane 1)");
}

TEST(ChromeTrace, TimeRangeKeepsWhatOverlapsItWhole) {
  ChromeTraceOptions options;
  options.range = {0.000045, 0.000068};  // 45 us .. 68 us
  const std::string trace = trace_of(full_recording(), options);
  EXPECT_EQ(structural_problems(trace), "");
  const json events = events_of(trace);
  // linear (10..60) and conv2d (15..50) overlap it and are kept whole;
  // addmm (20..40) and relu (70..75) do not.
  EXPECT_EQ(names_with_ph(events, "X"),
            (std::multiset<std::string>{"aten::linear", "aten::conv2d", "cuLaunchKernel",
                                        "Memcpy HtoD (Pageable -> Device)"}));
  for (const json& e : events) {
    if (e["ph"] == "X" && e["name"] == "aten::linear") {
      EXPECT_EQ(e["dur"], 50.0);
    }
  }
  EXPECT_EQ(names_with_ph(events, "i"), std::multiset<std::string>{});
  EXPECT_EQ(names_with_ph(events, "C"), (std::multiset<std::string>{"CPU memory"}));  // the free at 58 us
}

TEST(ChromeTrace, OpsPatternKeepsMatchesTheirNestedCallsAndTheirGpuWork) {
  ChromeTraceOptions options;
  options.ops.emplace("linear");
  options.ops_pattern = "linear";
  const std::string trace = trace_of(full_recording(), options);
  EXPECT_EQ(structural_problems(trace), "");
  const json events = events_of(trace);
  EXPECT_EQ(names_with_ph(events, "X"),
            (std::multiset<std::string>{"aten::linear", "aten::addmm", "cudaLaunchKernel",
                                        "void at::native::gemm<float>(float*)"}));
  EXPECT_EQ(names_with_ph(events, "i"), (std::multiset<std::string>{"libtorch_cpu.so!at::native::addmm_impl"}));
  EXPECT_EQ(names_with_ph(events, "s").size(), 1u);
  EXPECT_EQ(json::parse(trace)["otherData"]["ops"], "linear");
}

TEST(ChromeTrace, AnEmptyRecordingIsAValidTrace) {
  Recording r = recording_of({op("aten::add")}, {});
  r.process.pid = 42;
  const std::string trace = trace_of(r);
  EXPECT_EQ(structural_problems(trace), "");
  EXPECT_EQ(names_with_ph(events_of(trace), "M"),
            (std::multiset<std::string>{"process_name", "process_sort_index"}));
}

TEST(ChromeTrace, StringsAreValidJsonWhateverTheyHold) {
  Recording r = recording_of({op(std::string("aten::\"odd\"\\name\n\x01\tend\xff\xc3(") + "\xe2\x82\xac")},
                             {op_entry(10, 0x1000, 0), op_exit(20, 0x1000, 0)});
  r.process.pid = 42;
  r.process.cmdline = "python3 -c \"print('\xe9')\"";
  const std::string trace = trace_of(r);
  ASSERT_EQ(structural_problems(trace), "");
  const json events = events_of(trace);
  EXPECT_EQ(names_with_ph(events, "X"),
            (std::multiset<std::string>{"aten::\"odd\"\\name\n\x01\tend\xef\xbf\xbd\xef\xbf\xbd(\xe2\x82\xac"}));
}

TEST(ChromeTrace, TimestampsAreExactMicrosecondsFromTheStart) {
  Recording r = recording_of({op("aten::add")}, {op_entry(kStart + 1, 0x1000, 0), op_exit(kStart + 123'456'789'012, 0x1000, 0)});
  r.clock.start_monotonic_ns = kStart;
  r.process.pid = 42;
  r.cupti_shim = CuptiShimInfo{};
  // A kernel that started before the recording (launched before attach).
  r.launch_names = {"k"};
  r.gpu_activities = {{kStart - 2'500, kStart - 1'000, 3, 0, 0, 7, GpuActivityKind::kernel, 0}};
  const std::string trace = trace_of(r);
  EXPECT_NE(trace.find("\"ts\":0.001,\"dur\":123456789.011"), std::string::npos) << trace;
  EXPECT_NE(trace.find("\"ts\":-2.5,\"dur\":1.5"), std::string::npos) << trace;
}

TEST(ChromeTraceTimeRange, ParsesSecondsEitherSideOptional) {
  auto both = parse_trace_time_range("1.5:3");
  ASSERT_TRUE(both) << both.error();
  EXPECT_EQ(both->from_s, 1.5);
  EXPECT_EQ(both->until_s, 3.0);
  auto open_end = parse_trace_time_range("2:");
  ASSERT_TRUE(open_end);
  EXPECT_EQ(open_end->from_s, 2.0);
  EXPECT_FALSE(open_end->until_s);
  auto open_start = parse_trace_time_range(":0.25");
  ASSERT_TRUE(open_start);
  EXPECT_FALSE(open_start->from_s);
  for (const char* bad : {"", "1.5", "a:2", "1:b", "3:1", "-1:2", "1:2:3", "inf:"}) {
    const auto range = parse_trace_time_range(bad);
    ASSERT_FALSE(range) << bad;
    EXPECT_TRUE(range.error().starts_with("--time-range " + std::string(bad) + ": ")) << range.error();
  }
}

TEST(OutputFileTest, GzNamesAreCompressedAndReadBackWhole) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "gpuprof_output_file_test";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "t.json.gz").string();
  auto opened = OutputFile::open(path);
  ASSERT_TRUE(opened) << opened.error();
  auto file = std::move(opened).value();
  std::string written;
  for (int i = 0; i < 20000; ++i) written += "{\"ph\":\"X\",\"name\":\"aten::add\",\"ts\":" + std::to_string(i) + "},\n";
  ASSERT_TRUE(file->write(written));
  const auto closed = file->close();
  ASSERT_TRUE(closed) << closed.error();
  EXPECT_LT(std::filesystem::file_size(path), written.size() / 5);
  EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  gzFile in = gzopen(path.c_str(), "rb");
  ASSERT_NE(in, nullptr);
  std::string read(written.size() + 1, '\0');
  const int n = gzread(in, read.data(), static_cast<unsigned>(read.size()));
  gzclose(in);
  read.resize(n < 0 ? 0 : static_cast<size_t>(n));
  EXPECT_EQ(read, written);
  std::filesystem::remove_all(dir);
}

TEST(OutputFileTest, AnUncreatableFileSaysWhy) {
  const auto file = OutputFile::open("/nonexistent-dir/t.json");
  ASSERT_FALSE(file);
  EXPECT_EQ(file.error(), "cannot create /nonexistent-dir/t.json: No such file or directory");
}

}  // namespace
}  // namespace gpuprof

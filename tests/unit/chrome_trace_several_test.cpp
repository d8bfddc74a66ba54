// report A B ... --chrome-trace (output/chrome_trace_several.h): recordings
// with planted clocks (different CLOCK_MONOTONIC bases, known
// CLOCK_REALTIME offsets) must land at known exact timestamps, one process
// track each, named by rank or file, ranks first; each part holds exactly
// its own trace's events, shifted by its wall-clock offset.
#include "output/chrome_trace_several.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "output/chrome_trace.h"
#include "probe_events.h"
#include "recordings.h"
#include "trace_structure.h"

namespace gpuprof {
namespace {

using json = nlohmann::json;
using namespace ::gpuprof::test;

constexpr uint64_t kRealtime = 1'795'745'012'000'000'000ull;  // 2026-11-27T02:03:32Z

// One process with one call of `op` from start + from_ns to start + to_ns
// of its own CLOCK_MONOTONIC, which started at `monotonic` while
// CLOCK_REALTIME read `realtime`.
Recording planted(int32_t pid, std::optional<uint32_t> rank, const char* op_name, uint64_t monotonic,
                  uint64_t realtime, uint64_t from_ns, uint64_t to_ns) {
  Recording r = recording_of({op(op_name)}, {op_entry(monotonic + from_ns, 0x1000, 0, static_cast<uint32_t>(pid)),
                                             op_exit(monotonic + to_ns, 0x1000, 0, static_cast<uint32_t>(pid))});
  r.process.pid = pid;
  r.process.comm = "python3";
  r.process.hostname = rank ? "node" + std::to_string(*rank) : "other";
  r.clock = {monotonic, realtime, monotonic + to_ns + 1000};
  if (rank) r.job_ranks.push_back({.pid = pid, .rank = *rank});
  return r;
}

std::string trace_of(const std::vector<TraceInput>& inputs, const ChromeTraceOptions& options = {}) {
  std::string out;
  const auto stats = write_chrome_trace_of_several(inputs, options, [&](std::string_view piece) { out += piece; });
  EXPECT_TRUE(stats) << stats.error();
  return out;
}

// Integer nanoseconds of a trace's microseconds (exact: they are written
// to the ns, and fit a double's mantissa here).
int64_t ns(const json& us) { return std::llround(us.get<double>() * 1000); }

// (pid, name, ts ns, dur ns) of every op call.
std::vector<std::tuple<int64_t, std::string, int64_t, int64_t>> calls_of(const json& trace) {
  std::vector<std::tuple<int64_t, std::string, int64_t, int64_t>> out;
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "X") out.emplace_back(e["pid"], e["name"], ns(e["ts"]), ns(e["dur"]));
  return out;
}

// {pid: [name, sort index, labels]} of the process tracks.
std::map<int64_t, std::vector<json>> processes_of(const json& trace) {
  std::map<int64_t, std::vector<json>> out;
  for (const json& e : trace["traceEvents"]) {
    if (e["ph"] != "M") continue;
    if (e["name"] == "process_name") out[e["pid"]].push_back(e["args"]["name"]);
    if (e["name"] == "process_sort_index") out[e["pid"]].push_back(e["args"]["sort_index"]);
    if (e["name"] == "process_labels") out[e["pid"]].push_back(e["args"]["labels"]);
  }
  return out;
}

TEST(ChromeTraceSeveral, PlantedClocksPlaceEachEventAtItsWallClockTime) {
  // Rank 1 (pid 100): monotonic base 1 s, started 250 us of wall-clock time
  // after rank 0; its aten::add runs +2..+5 us after its start. Rank 0 (pid
  // 200): monotonic base 50 s, the earliest start; aten::mm +1..+1.5 us.
  // No rank (pid 100 again: another host): base 7 s, started 1.000001 ms
  // after rank 1; aten::relu +0..+10 ns.
  const Recording rank1 = planted(100, 1, "aten::add", 1'000'000'000, kRealtime + 250'000, 2'000, 5'000);
  const Recording rank0 = planted(200, 0, "aten::mm", 50'000'000'000, kRealtime, 1'000, 1'500);
  const Recording none = planted(100, std::nullopt, "aten::relu", 7'000'000'000, kRealtime + 1'250'001, 0, 10);
  const std::string text = trace_of({{&rank1, "a.gpuprof"}, {&none, "c.gpuprof"}, {&rank0, "b.gpuprof"}});
  EXPECT_EQ(structural_problems(text), "");
  const json trace = json::parse(text);
  constexpr int64_t kRepeated = 100 + (int64_t{1} << 23);  // pid 100 taken by rank 1's track
  EXPECT_EQ(calls_of(trace), (std::vector<std::tuple<int64_t, std::string, int64_t, int64_t>>{
                                 {200, "aten::mm", 1'000, 500},
                                 {100, "aten::add", 252'000, 3'000},
                                 {kRepeated, "aten::relu", 1'250'001, 10}}));
  EXPECT_EQ(processes_of(trace), (std::map<int64_t, std::vector<json>>{
                                     {200, {"rank 0: python3 (200)", "host node0, file b.gpuprof", 0}},
                                     {100, {"rank 1: python3 (100)", "host node1, file a.gpuprof", 1024}},
                                     {kRepeated, {"c.gpuprof: python3 (100)", "host other, file c.gpuprof", 2048}}}));
  // Threads stay on their process's track.
  for (const json& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name") {
      EXPECT_TRUE(e["pid"] == 200 || e["pid"] == 100 || e["pid"] == kRepeated);
    }
  const json& other = trace["otherData"];
  EXPECT_EQ(other["time zero"],
            "the earliest recording's start: CLOCK_REALTIME 1795745012000000000 ns (2026-11-27T02:03:32.000000000Z)");
  EXPECT_NE(other["alignment"].get<std::string>().find("NTP"), std::string::npos);
  ASSERT_EQ(other["recordings"].size(), 3u);
  std::vector<std::tuple<std::string, int64_t, uint64_t>> shifts;
  for (const json& r : other["recordings"]) shifts.emplace_back(r["file"], r["pid"], r["shift_ns"]);
  EXPECT_EQ(shifts, (std::vector<std::tuple<std::string, int64_t, uint64_t>>{
                        {"b.gpuprof", 200, 0}, {"a.gpuprof", 100, 250'000}, {"c.gpuprof", kRepeated, 1'250'001}}));
  EXPECT_EQ(other["recordings"][1]["rank"], 1);
  EXPECT_FALSE(other["recordings"][2].contains("rank"));
}

TEST(ChromeTraceSeveral, TimeRangeIsSecondsSinceTheEarliestStart) {
  const Recording rank1 = planted(100, 1, "aten::add", 1'000'000'000, kRealtime + 250'000, 2'000, 5'000);
  const Recording rank0 = planted(200, 0, "aten::mm", 50'000'000'000, kRealtime, 1'000, 1'500);
  ChromeTraceOptions late;
  late.range.from_s = 100e-6;  // after rank 0's call, before rank 1's (at 252 us)
  const json trace = json::parse(trace_of({{&rank1, "a"}, {&rank0, "b"}}, late));
  EXPECT_EQ(calls_of(trace), (std::vector<std::tuple<int64_t, std::string, int64_t, int64_t>>{
                                 {100, "aten::add", 252'000, 3'000}}));
  EXPECT_EQ(processes_of(trace).size(), 2u);  // every recording keeps its track
}

// A recording with every kind of data (samples, GPU work on two devices,
// memory, two threads), twice under two ranks: each part's events are
// exactly its own trace's, shifted by its offset, its GPUs named after it.
TEST(ChromeTraceSeveral, EachPartHoldsExactlyItsOwnTracesEventsShifted) {
  Recording a = planted(10, 0, "aten::add", 5'000, kRealtime + 40'000'000, 100, 900);
  a.events.insert(a.events.begin() + 1, {op_entry(5'300, 0x0f00, 0, 11), op_exit(5'400, 0x0f00, 0, 11)});
  a.samples = {{5'200, 10, 0, false, kNoPythonStack}, {5'350, 11, 0, false, kNoPythonStack}};
  a.sample_frames = {"libtorch_cpu.so!f"};
  a.options.sample_hz = 99;
  a.cupti_shim = CuptiShimInfo{};
  a.launch_names = {"gemm"};
  a.gpu_correlations = {{5'150, 7, 10, 211, 2}};
  a.gpu_activities = {{5'500, 5'700, 7, 0, 0, 81, GpuActivityKind::kernel, 0},
                      {5'600, 5'800, 8, 0, 1, 3, GpuActivityKind::kernel, 0}};
  a.options.memory = true;
  a.mem_events = {cpu_alloc(5'250, 0xa0, 4096, 10)};
  Recording b = a;
  b.process.pid = 20;
  b.job_ranks = {{.pid = 20, .rank = 1}};
  b.clock.start_realtime_ns = kRealtime;  // 40 ms before a
  const std::string text = trace_of({{&a, "a"}, {&b, "b"}});
  EXPECT_EQ(structural_problems(text), "");
  const json trace = json::parse(text);
  std::string alone;
  write_chrome_trace(a, {}, [&](std::string_view piece) { alone += piece; });
  // (name, ph, ts ns) of what a process (or its GPUs, pid >= 2^22) shows.
  using Seen = std::multiset<std::tuple<std::string, std::string, int64_t, bool>>;
  auto seen = [](const json& events, int64_t shift, auto&& wanted) {
    Seen out;
    for (const json& e : events)
      if (e["ph"] != "M" && wanted(e["pid"].get<int64_t>()))
        out.insert({e["name"], e["ph"], ns(e["ts"]) - shift, e["pid"].get<int64_t>() >= (int64_t{1} << 22)});
    return out;
  };
  const Seen expected = seen(json::parse(alone)["traceEvents"], 0, [](int64_t) { return true; });
  ASSERT_EQ(expected.size(), 9u);  // 2 calls, 2 samples, 2 kernels, the 2 ends of a flow, 1 counter value
  // Rank 0 (a, file order first but rank 0) is track 0: pid 10 and its
  // GPUs 2^22 + 0..1; rank 1 (b): pid 20, GPUs 2^22 + 1024 + 0..1.
  constexpr int64_t kGpus = int64_t{1} << 22;
  EXPECT_EQ(seen(trace["traceEvents"], 40'000'000,
                 [&](int64_t pid) { return pid == 10 || (pid >= kGpus && pid < kGpus + 1024); }),
            expected);
  EXPECT_EQ(seen(trace["traceEvents"], 0, [&](int64_t pid) { return pid == 20 || pid >= kGpus + 1024; }), expected);
  const auto processes = processes_of(trace);
  EXPECT_EQ(processes.at(kGpus + 1).front(), "rank 0: GPU 1");
  EXPECT_EQ(processes.at(kGpus + 1024).front(), "rank 1: GPU 0");
  EXPECT_EQ(processes.at(kGpus + 1024)[1], 1024 + 1);  // right after its rank's track
}

TEST(ChromeTraceSeveral, ARecordingWithoutAWallClockStartIsRefused) {
  const Recording fine = planted(100, 1, "aten::add", 1'000'000'000, kRealtime, 0, 10);
  Recording old = fine;
  old.clock.start_realtime_ns = 0;
  std::string out;
  const auto stats = write_chrome_trace_of_several({{&fine, "a"}, {&old, "old.gpuprof"}}, {},
                                                   [&](std::string_view piece) { out += piece; });
  ASSERT_FALSE(stats);
  EXPECT_EQ(stats.error(),
            "old.gpuprof holds no wall-clock time of its start (its CLOCK chunk's CLOCK_REALTIME is 0): its "
            "events cannot be placed beside the other recordings'");
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace gpuprof

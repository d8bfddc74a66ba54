// Tests of the speedscope export: shared frames, evented profiles nested
// under their Python frames, sampled profiles with the op path, and what an
// evented profile cannot show as it is (a step frame a call runs across).
#include "output/speedscope.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "probe_events.h"
#include "recordings.h"

namespace gpuprof {
namespace {

using json = nlohmann::json;
using namespace ::gpuprof::test;

constexpr uint32_t kMain = 700, kWorker = 701;
constexpr uint64_t kStart = 5'000'000;

json export_of(const Recording& r, SpeedscopeStats* stats = nullptr) {
  std::string text;
  SpeedscopeStats s = write_speedscope(r, [&](std::string_view piece) { text += piece; });
  if (stats) *stats = s;
  return json::parse(text);
}

// "O name @at" / "C name @at", in order.
std::vector<std::string> events_of(const json& doc, const json& profile) {
  std::vector<std::string> out;
  for (const json& e : profile["events"])
    out.push_back(e["type"].get<std::string>() + " " +
                  doc["shared"]["frames"][e["frame"].get<size_t>()]["name"].get<std::string>() + " @" +
                  std::to_string(e["at"].get<uint64_t>()));
  return out;
}

enum : uint32_t { kLinear, kAddmm, kRelu, kStep };

TEST(Speedscope, CallsNestUnderTheirEntrysPythonFramesSharedWhereAlike) {
  // linear (+10..+60) calls addmm (+20..+40); relu (+70..+75) after it;
  // linear's entry stack is <module>;forward, relu's <module>;backward.
  Recording r = recording_of({op("aten::linear"), op("aten::addmm"), op("aten::relu")},
                             {op_entry(kStart + 10, 0x1000, kLinear, kMain), op_entry(kStart + 20, 0x0f00, kAddmm, kMain),
                              op_exit(kStart + 40, 0x0f00, kAddmm, kMain), op_exit(kStart + 60, 0x1000, kLinear, kMain),
                              op_entry(kStart + 70, 0x1000, kRelu, kMain), op_exit(kStart + 75, 0x1000, kRelu, kMain)});
  r.process = {.pid = static_cast<int32_t>(kMain), .comm = "python3"};
  r.clock = {kStart, 0, kStart + 100};
  r.thread_names = {{kMain, "python3"}};
  r.sample_frames = {"train.py(3): <module>", "train.py(9): forward", "train.py(20): backward"};
  r.sample_stacks = {{0, 1}, {0, 2}};
  r.entry_stacks = {{0, 0}, {4, 1}};
  SpeedscopeStats stats;
  const json doc = export_of(r, &stats);
  ASSERT_EQ(doc["profiles"].size(), 1u);
  const json& p = doc["profiles"][0];
  EXPECT_EQ(p["type"], "evented");
  EXPECT_EQ(p["name"], "python3 (700) / python3 (700): ops");
  EXPECT_EQ(p["unit"], "nanoseconds");
  EXPECT_EQ(events_of(doc, p), (std::vector<std::string>{
                                   "O train.py(3): <module> @10", "O train.py(9): forward @10", "O aten::linear @10",
                                   "O aten::addmm @20", "C aten::addmm @40", "C aten::linear @60",
                                   // <module> stays open; forward gives way to backward.
                                   "C train.py(9): forward @60", "O train.py(20): backward @70", "O aten::relu @70",
                                   "C aten::relu @75", "C train.py(20): backward @75", "C train.py(3): <module> @75"}));
  EXPECT_EQ(p["startValue"], 10);
  EXPECT_EQ(p["endValue"], 75);
  EXPECT_EQ(doc["shared"]["frames"].size(), 6u);  // each name once
  EXPECT_EQ(stats.op_calls, 3u);
  EXPECT_EQ(stats.profiles, 1u);
  EXPECT_EQ(stats.frames, 6u);
}

TEST(Speedscope, StepFramesAreLeftOutAndCallsCrossingTheirEndStayWhole) {
  // A step frame (+5..+50) with relu running across its end (+30..+60), and
  // a linear whose child addmm an exception ended with it, at the catch.
  Recording r = recording_of(
      {op("aten::linear"), op("aten::addmm"), op("aten::relu"), op("ProfilerStep*")},
      {step_at(kStart + 5, 1, kStep, kMain), op_entry(kStart + 30, 0x1000, kRelu, kMain),
       step_at(kStart + 50, 2, GP_NO_OP, kMain), op_exit(kStart + 60, 0x1000, kRelu, kMain),
       op_entry(kStart + 70, 0x1000, kLinear, kMain), op_entry(kStart + 72, 0x0f00, kAddmm, kMain),
       catch_at(kStart + 80, 0x1100, kMain)});
  r.process = {.pid = static_cast<int32_t>(kMain), .comm = "python3"};
  r.clock = {kStart, 0, kStart + 100};
  const json doc = export_of(r);
  ASSERT_EQ(doc["profiles"].size(), 1u);
  EXPECT_EQ(events_of(doc, doc["profiles"][0]),
            (std::vector<std::string>{"O aten::relu @30", "C aten::relu @60", "O aten::linear @70",
                                      "O aten::addmm @72", "C aten::addmm @80", "C aten::linear @80"}));
}

TEST(Speedscope, SamplesCarryPythonFramesThenTheRunningOpsThenNativeAndKernelFrames) {
  Recording r = recording_of({op("aten::linear"), op("aten::addmm")},
                             {op_entry(kStart + 10, 0x1000, kLinear, kMain), op_entry(kStart + 20, 0x0f00, kAddmm, kMain),
                              op_exit(kStart + 40, 0x0f00, kAddmm, kMain), op_exit(kStart + 60, 0x1000, kLinear, kMain)});
  r.process = {.pid = static_cast<int32_t>(kMain), .comm = "python3"};
  r.clock = {kStart, 0, kStart + 100};
  r.options.sample_hz = 1000;
  r.thread_processes = {{kWorker, kMain}};
  r.thread_names = {{kMain, "python3"}, {kWorker, "worker"}};
  r.sample_frames = {"train.py(3): <module>", "libtorch_cpu.so!addmm_impl", "do_syscall_64_[k]", "read_[k]"};
  r.sample_stacks = {{0}, {2, 3}};
  // In addmm on the main thread; outside ops on the worker, in the kernel.
  r.samples = {{kStart + 30, kMain, 1, false, 0}, {kStart + 45, kWorker, 1, true, kNoPythonStack}};
  r.sample_kernel_stacks = {{1, 1}};
  SpeedscopeStats stats;
  const json doc = export_of(r, &stats);
  ASSERT_EQ(doc["profiles"].size(), 3u);  // main: ops, samples; worker: samples
  EXPECT_EQ(doc["profiles"][1]["name"], "python3 (700) / python3 (700): CPU samples");
  EXPECT_EQ(doc["profiles"][2]["name"], "python3 (700) / worker (701): CPU samples");
  auto names = [&](const json& stack) {
    std::vector<std::string> out;
    for (const json& f : stack) out.push_back(doc["shared"]["frames"][f.get<size_t>()]["name"]);
    return out;
  };
  EXPECT_EQ(names(doc["profiles"][1]["samples"][0]),
            (std::vector<std::string>{"train.py(3): <module>", "aten::linear", "aten::addmm",
                                      "libtorch_cpu.so!addmm_impl"}));
  EXPECT_EQ(names(doc["profiles"][2]["samples"][0]),
            (std::vector<std::string>{"libtorch_cpu.so!addmm_impl", "do_syscall_64_[k]", "read_[k]"}));
  EXPECT_EQ(doc["profiles"][1]["weights"], json::array({1'000'000}));  // one period, in ns
  EXPECT_EQ(doc["profiles"][1]["startValue"], 30);
  EXPECT_EQ(doc["profiles"][1]["endValue"], 30 + 1'000'000);
  EXPECT_EQ(stats.samples, 2u);
}

TEST(Speedscope, ProfilesGoByThreadMainFirstWhateverOrderTheirCallsEnded) {
  // Calls end on 703, then 702, then the main thread; 701 is only sampled,
  // 704 only ran step frames (no evented profile); 703 is sampled in its
  // call.
  Recording r = recording_of(
      {op("aten::linear"), op("aten::addmm"), op("aten::relu"), op("ProfilerStep*")},
      {step_at(kStart + 5, 1, kStep, 704), op_entry(kStart + 10, 0x1000, kLinear, 703),
       step_at(kStart + 12, 2, GP_NO_OP, 704), op_exit(kStart + 20, 0x1000, kLinear, 703),
       op_entry(kStart + 30, 0x1000, kAddmm, 702), op_exit(kStart + 40, 0x1000, kAddmm, 702),
       op_entry(kStart + 50, 0x1000, kRelu, kMain), op_exit(kStart + 60, 0x1000, kRelu, kMain)});
  r.process = {.pid = static_cast<int32_t>(kMain), .comm = "python3"};
  r.clock = {kStart, 0, kStart + 100};
  r.options.sample_hz = 1000;
  r.sample_frames = {"libtorch_cpu.so!linear_impl"};
  r.samples = {{kStart + 15, 701, 0, false, kNoPythonStack}, {kStart + 15, 703, 0, false, kNoPythonStack}};
  SpeedscopeStats stats;
  const json doc = export_of(r, &stats);
  std::vector<std::string> names;
  for (const json& p : doc["profiles"]) names.push_back(p["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "python3 (700) / thread (700): ops", "python3 (700) / thread (701): CPU samples",
                       "python3 (700) / thread (702): ops", "python3 (700) / thread (703): ops",
                       "python3 (700) / thread (703): CPU samples"}));
  EXPECT_EQ(stats.profiles, 5u);
  EXPECT_EQ(stats.op_calls, 3u);
  EXPECT_EQ(events_of(doc, doc["profiles"][3]),
            (std::vector<std::string>{"O aten::linear @10", "C aten::linear @20"}));
  EXPECT_EQ(doc["profiles"][3]["startValue"], 10);
  EXPECT_EQ(doc["profiles"][3]["endValue"], 20);
  const json& sample = doc["profiles"][4]["samples"][0];
  ASSERT_EQ(sample.size(), 2u);
  EXPECT_EQ(doc["shared"]["frames"][sample[0].get<size_t>()]["name"], "aten::linear");
  EXPECT_EQ(doc["shared"]["frames"][sample[1].get<size_t>()]["name"], "libtorch_cpu.so!linear_impl");
  EXPECT_TRUE(doc["profiles"][1]["samples"] == json::array({json::array({sample[1]})}));
}

TEST(Speedscope, AnEmptyRecordingIsAValidFileWithNoProfiles) {
  Recording r = recording_of({op("aten::add")}, {});
  const json doc = export_of(r);
  EXPECT_TRUE(doc["profiles"].empty());
  EXPECT_TRUE(doc["shared"]["frames"].empty());
}

}  // namespace
}  // namespace gpuprof

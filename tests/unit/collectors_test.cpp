// The collectors both sessions share (collect/interner.h,
// collect/sample_collector.h, collect/launch_collector.h), writing to a
// fake sink: ids as the record defines them, caches keyed by process,
// write errors kept, unresolved symbols counted.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/interner.h"
#include "collect/launch_collector.h"
#include "record/record_sink.h"
#include "collect/sample_collector.h"

namespace gpuprof {
namespace {

// Keeps what it is given; refuses a frame name listed in refuse_frame.
class FakeSink final : public RecordSink {
 public:
  uint32_t sample_frames_defined() const override { return static_cast<uint32_t>(frames.size()); }
  Result<void> add_sample_frame(const std::string& name) override {
    if (name == refuse_frame) return Error("no room for " + name);
    frames.push_back(name);
    return {};
  }
  uint32_t sample_stacks_defined() const override { return static_cast<uint32_t>(stacks.size()); }
  Result<void> add_sample_stack(const std::vector<uint32_t>& frame_ids) override {
    stacks.push_back(frame_ids);
    return {};
  }
  uint32_t launch_names_defined() const override { return static_cast<uint32_t>(launch_names.size()); }
  Result<void> add_launch_name(const std::string& name) override {
    launch_names.push_back(name);
    return {};
  }
  uint64_t samples_appended() const override { return samples.size(); }
  Result<void> append_samples(const CpuSample* s, size_t count) override {
    samples.insert(samples.end(), s, s + count);
    return {};
  }
  Result<void> append_sample_kernel_stack(uint64_t sample_index, uint32_t stack_id) override {
    kernel_stacks.push_back({sample_index, stack_id});
    return {};
  }
  Result<void> append_launches(const CudaLaunch* l, size_t count) override {
    launches.insert(launches.end(), l, l + count);
    return {};
  }

  std::string refuse_frame;
  std::vector<std::string> frames;
  std::vector<std::vector<uint32_t>> stacks;
  std::vector<std::string> launch_names;
  std::vector<CpuSample> samples;
  std::vector<std::pair<uint64_t, uint32_t>> kernel_stacks;
  std::vector<CudaLaunch> launches;
};

// What a live view (top) is handed.
struct LiveSeen final : LiveConsumer {
  std::vector<std::pair<uint32_t, std::string>> frames;
  std::vector<std::vector<uint32_t>> sample_stacks;
  void sample_frame(uint32_t id, const std::string& name) override { frames.push_back({id, name}); }
  void sample(const CpuSample&, const std::vector<uint32_t>& stack) override { sample_stacks.push_back(stack); }
};

struct Collectors {
  RecordStats stats;
  RecordOutcome outcome;
  Diagnostics diagnostics{stats, outcome};
  FakeSink sink;
  LiveSeen live;
  std::vector<std::pair<uint32_t, std::string>>& frames_seen = live.frames;
  Interner interner{sink, diagnostics, live};
  StackCuts cuts;
  std::vector<std::vector<uint32_t>>& sample_stacks_seen = live.sample_stacks;
  SampleCollector samples{interner, sink, diagnostics, stats, cuts, live};
};

TEST(Interner, IdsAreTheSinksCountsAndEachNameIsDefinedOnce) {
  Collectors c;
  EXPECT_EQ(c.interner.frame("main"), 0u);
  EXPECT_EQ(c.interner.frame("step"), 1u);
  EXPECT_EQ(c.interner.frame("main"), 0u);
  EXPECT_EQ(c.sink.frames, (std::vector<std::string>{"main", "step"}));
  EXPECT_EQ(c.frames_seen, (std::vector<std::pair<uint32_t, std::string>>{{0, "main"}, {1, "step"}}));
  EXPECT_EQ(c.interner.stack_of_names({"main", "step", "leaf"}), 0u);
  EXPECT_EQ(c.interner.stack({0, 1, 2}), 0u);
  EXPECT_EQ(c.interner.stack({0, 1}), 1u);
  EXPECT_EQ(c.sink.stacks, (std::vector<std::vector<uint32_t>>{{0, 1, 2}, {0, 1}}));
  EXPECT_EQ(c.interner.launch_name("gemm"), 0u);
  EXPECT_EQ(c.interner.launch_name("[CUDA graph]"), 1u);
  EXPECT_EQ(c.interner.launch_name("gemm"), 0u);
  EXPECT_EQ(c.sink.launch_names, (std::vector<std::string>{"gemm", "[CUDA graph]"}));
  EXPECT_TRUE(c.diagnostics.writing());
}

TEST(Interner, ARefusedDefinitionIsAWriteErrorAndNotInterned) {
  Collectors c;
  c.sink.refuse_frame = "big";
  EXPECT_EQ(c.interner.frame("big"), std::nullopt);
  EXPECT_EQ(c.diagnostics.write_error(), "no room for big");
  EXPECT_EQ(c.interner.stack_of_names({"a", "big"}), std::nullopt);
  EXPECT_TRUE(c.sink.stacks.empty());
  c.sink.refuse_frame.clear();
  EXPECT_EQ(c.interner.frame("big"), 1u);  // asked again, defined now ("a" took 0)
  EXPECT_EQ(c.diagnostics.write_error(), "no room for big");  // the first error stands
}

gp_cpu_sample sample_at(uint64_t ip, uint32_t tid) {
  gp_cpu_sample s{};
  s.ts_ns = 1000 + tid;
  s.user_ip = ip;
  s.tid = tid;
  s.pid = tid;
  return s;
}

TEST(SampleCollector, LeavesAreNamedOncePerProcessAndAddress) {
  Collectors c;
  int named = 0;
  auto leaf = [&](uint64_t ip) {
    named++;
    return ip == 0x10 ? std::string("train_step") : std::string("[unknown]");
  };
  c.samples.record(sample_at(0x10, 7), 1, leaf, nullptr);
  c.samples.record(sample_at(0x10, 7), 1, leaf, nullptr);
  EXPECT_EQ(named, 1);
  c.samples.record(sample_at(0x10, 8), 2, leaf, nullptr);  // another process: its own mappings
  EXPECT_EQ(named, 2);
  EXPECT_EQ(c.sink.frames, std::vector<std::string>{"train_step"});  // one name, one frame
  ASSERT_EQ(c.sink.samples.size(), 3u);
  for (const CpuSample& s : c.sink.samples) {
    EXPECT_EQ(s.frame_id, 0u);
    EXPECT_EQ(s.python_stack, kNoPythonStack);
    EXPECT_FALSE(s.in_kernel);
  }
  EXPECT_EQ(c.sink.samples[2].tid, 8u);
  EXPECT_EQ(c.samples.recorded(), 3u);
  EXPECT_EQ(c.stats.symbols_unresolved, 0u);
  EXPECT_EQ(c.sample_stacks_seen.size(), 3u);

  c.samples.record(sample_at(0x99, 7), 1, leaf, nullptr);
  c.samples.record(sample_at(0x99, 7), 1, leaf, nullptr);
  EXPECT_EQ(c.stats.symbols_unresolved, 2u);  // every sample of an unresolved leaf

  c.samples.forget([](uint32_t process) { return process == 1; });
  c.samples.record(sample_at(0x10, 7), 1, leaf, nullptr);
  EXPECT_EQ(named, 4);  // named again after its process went
  EXPECT_EQ(c.sink.samples.back().frame_id, 0u);
}

TEST(SampleCollector, KernelStacksFollowTheirSampleOutermostFirst) {
  Collectors c;
  gp_cpu_sample s = sample_at(0x10, 7);
  s.in_kernel = 1;
  s.kernel_depth = 2;
  s.frames[0] = 0x1000;  // innermost
  s.frames[1] = 0x2000;
  auto leaf = [](uint64_t) { return std::string("f"); };
  c.samples.record(s, 0, leaf, nullptr);
  c.samples.record(s, 0, leaf, nullptr);
  ASSERT_EQ(c.sink.samples.size(), 2u);
  EXPECT_TRUE(c.sink.samples[0].in_kernel);
  ASSERT_EQ(c.sink.stacks.size(), 1u);  // the same stack, interned once
  ASSERT_EQ(c.sink.stacks[0].size(), 2u);
  const std::string outer = c.sink.frames[c.sink.stacks[0][0]];
  const std::string inner = c.sink.frames[c.sink.stacks[0][1]];
  EXPECT_TRUE(outer.ends_with("_[k]")) << outer;
  EXPECT_TRUE(inner.ends_with("_[k]")) << inner;
  EXPECT_EQ(c.sink.kernel_stacks, (std::vector<std::pair<uint64_t, uint32_t>>{{0, 0}, {1, 0}}));
}

gp_launch_event launch_of(uint64_t function, uint16_t api) {
  gp_launch_event e{};
  e.ts_ns = 5;
  e.function = function;
  e.stream = 3;
  e.grid[0] = 4;
  e.block[0] = 128;
  e.tid = 9;
  e.api = api;
  return e;
}

TEST(LaunchCollector, NamesWithoutSymbolsAndCountsThemWhereAsked) {
  Collectors c;
  LaunchCollector counting(c.interner, c.sink, c.diagnostics, c.stats, /*count_unresolved=*/true);
  auto launch = counting.record(launch_of(0xabc, GP_LAUNCH_KERNEL), 0, nullptr);
  ASSERT_TRUE(launch);
  EXPECT_EQ(launch->name_id, 0u);
  EXPECT_EQ(launch->grid[0], 4u);
  EXPECT_EQ(launch->block[0], 128u);
  EXPECT_EQ(launch->stream, 3u);
  counting.record(launch_of(0xabc, GP_LAUNCH_KERNEL), 0, nullptr);
  counting.record(launch_of(0x5, GP_LAUNCH_GRAPH), 0, nullptr);
  counting.record(launch_of(0x77, GP_LAUNCH_DRIVER_KERNEL), 0, nullptr);
  EXPECT_EQ(c.sink.launch_names,
            (std::vector<std::string>{"[unknown kernel 0xabc]", "[CUDA graph]", "[CUfunction 0x77]"}));
  EXPECT_EQ(c.stats.symbols_unresolved, 2u);  // both launches of the unknown kernel
  EXPECT_EQ(counting.recorded(), 4u);
  EXPECT_EQ(c.sink.launches.size(), 4u);

  LaunchCollector system_wide(c.interner, c.sink, c.diagnostics, c.stats, /*count_unresolved=*/false);
  system_wide.record(launch_of(0xabc, GP_LAUNCH_KERNEL), 42, nullptr);
  EXPECT_EQ(c.stats.symbols_unresolved, 2u);
  EXPECT_EQ(c.sink.launches.back().name_id, 0u);  // the one interner: the same name, the same id
}

}  // namespace
}  // namespace gpuprof

// RecordOutputs (several record files of one recording), OutputSwitcher
// (when they open and close: cycles, rotation) and --on-cycle's outputs.
#include "record/record_outputs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "cli/cycle_output.h"
#include "analyze/op_timeline.h"
#include "record/output_switcher.h"
#include "probe_events.h"
#include "record/record_file.h"
#include "recordings.h"
#include "record/schedule.h"
#include "result_values.h"
#include "test_files.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

namespace fs = std::filesystem;
using test::op_entry;
using test::op_exit;
using test::step_at;

class OutputsTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_outputs_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  static RecordOutputs outputs(RecordOptions options = {}) {
    ProcessInfo process;
    process.pid = 42;
    process.comm = "python3";
    ClockInfo clock{.start_monotonic_ns = 1000, .start_realtime_ns = 5000, .end_monotonic_ns = 0};
    return RecordOutputs(process, clock, {test::op("aten::add"), test::op(std::string(kProfilerStepOp))},
                         options, 0640);
  }
  static Recording read(const std::string& p) {
    std::string err;
    auto rec = noting_error(read_recording(p), &err);
    EXPECT_TRUE(rec) << err;
    return rec ? std::move(*rec) : Recording{};
  }
  fs::path dir_;
};

RecordOptions sampled_with_stacks() {
  RecordOptions o;
  o.sample_hz = 99;
  o.with_stack = true;
  return o;
}

TEST_F(OutputsTest, AFileOpenedLaterHasEveryDefinitionWithTheSameIds) {
  RecordOutputs out = outputs(sampled_with_stacks());
  std::string err;
  RecordStats counters;
  ASSERT_TRUE(succeeded(out.open(RecordOutputs::kMain, path("main"), 1000, counters), &err)) << err;
  ASSERT_TRUE(succeeded(out.add_sample_frame("f0"), &err) && succeeded(out.add_sample_frame("f1"), &err)) << err;
  ASSERT_TRUE(succeeded(out.add_sample_stack({0, 1}), &err)) << err;
  ASSERT_TRUE(succeeded(out.add_launch_name("k0"), &err)) << err;
  const gp_event first[] = {op_entry(1100, 500, 0), op_exit(1200, 500, 0)};
  ASSERT_TRUE(succeeded(out.append_events(first, 2), &err)) << err;
  ASSERT_TRUE(succeeded(out.append_entry_stack(0, 0), &err)) << err;
  CpuSample s0{.ts_ns = 1150, .tid = 100, .frame_id = 1, .in_kernel = false, .python_stack = 0};
  ASSERT_TRUE(succeeded(out.append_samples(&s0, 1), &err)) << err;
  EXPECT_EQ(out.events_appended(), 2u);
  EXPECT_EQ(out.samples_appended(), 1u);

  counters.events_lost = 7;
  ASSERT_TRUE(succeeded(out.open(RecordOutputs::kCycle, path("cycle"), 3000, counters), &err)) << err;
  ASSERT_TRUE(succeeded(out.add_sample_frame("f2"), &err)) << err;
  const gp_event second[] = {op_entry(3100, 500, 0), op_exit(3200, 500, 0)};
  ASSERT_TRUE(succeeded(out.append_events(second, 2), &err)) << err;
  // The ENTRY at global index 0 went to the main file only: dropped from the cycle's.
  ASSERT_TRUE(succeeded(out.append_entry_stack(2, 0), &err)) << err;
  CpuSample s1{.ts_ns = 3150, .tid = 100, .frame_id = 2, .in_kernel = false, .python_stack = 0};
  ASSERT_TRUE(succeeded(out.append_samples(&s1, 1), &err)) << err;

  RecordStats end = counters;
  end.events_lost = 10;
  ASSERT_TRUE(succeeded(out.close(RecordOutputs::kCycle, end, 3500), &err)) << err;
  ASSERT_TRUE(succeeded(out.close(RecordOutputs::kMain, end, 4000), &err)) << err;

  const Recording main = read(path("main"));
  EXPECT_EQ(main.sample_frames, (std::vector<std::string>{"f0", "f1", "f2"}));
  EXPECT_EQ(main.events.size(), 4u);
  ASSERT_EQ(main.entry_stacks.size(), 2u);
  EXPECT_EQ(main.entry_stacks[1].event_index, 2u);
  EXPECT_EQ(main.stats.events_recorded, 4u);
  EXPECT_EQ(main.stats.events_lost, 10u);

  const Recording cycle = read(path("cycle"));
  EXPECT_EQ(cycle.sample_frames, (std::vector<std::string>{"f0", "f1", "f2"}));
  EXPECT_EQ(cycle.sample_stacks, (std::vector<std::vector<uint32_t>>{{0, 1}}));
  EXPECT_EQ(cycle.launch_names, (std::vector<std::string>{"k0"}));
  ASSERT_EQ(cycle.events.size(), 2u);  // its two
  EXPECT_EQ(cycle.events[0].ts_ns, 3100u);
  ASSERT_EQ(cycle.entry_stacks.size(), 1u);
  EXPECT_EQ(cycle.entry_stacks[0].event_index, 0u);  // global 2 is its event 0
  ASSERT_EQ(cycle.samples.size(), 1u);
  EXPECT_EQ(cycle.samples[0].frame_id, 2u);
  EXPECT_EQ(cycle.stats.events_recorded, 2u);
  EXPECT_EQ(cycle.stats.events_lost, 3u);  // lost while it was open
  EXPECT_EQ(cycle.clock.start_monotonic_ns, 3000u);
  EXPECT_EQ(cycle.clock.start_realtime_ns, 7000u);  // shifted as much
  struct stat st;
  ASSERT_EQ(stat(path("cycle").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0640u);
}

TEST_F(OutputsTest, AppendsWhileClosedGoNowhereButCount) {
  RecordOutputs out = outputs();
  std::string err;
  const gp_event e[] = {op_entry(1100, 500, 0)};
  ASSERT_TRUE(succeeded(out.append_events(e, 1), &err));
  EXPECT_EQ(out.events_appended(), 1u);
  EXPECT_FALSE(out.is_open(RecordOutputs::kMain));
  EXPECT_TRUE(succeeded(out.close(RecordOutputs::kMain, {}, 2000), &err));  // nothing to close
}

gp_schedule op_schedule(uint64_t wait, uint64_t active, uint64_t repeat) {
  gp_schedule s = {};
  s.mode = GP_SCHEDULE_BY_OP;
  s.wait = wait;
  s.active = active;
  s.repeat = repeat;
  s.step_marker_op = 1;
  return s;
}

struct Done {
  std::string path;
  int64_t cycle, first, last;
};

TEST_F(OutputsTest, CyclesOpenAtTheirFirstStepAndCloseAtTheNextOnesStep) {
  OutputPlan plan;
  plan.schedule = op_schedule(1, 2, 2);  // recorded: 1 2 | 4 5
  std::vector<Done> done;
  plan.cycle_path = [&](int64_t c) { return path("c" + std::to_string(c)); };
  plan.cycle_done = [&](const std::string& p, int64_t c, int64_t a, int64_t b) { done.push_back({p, c, a, b}); };
  OutputSwitcher sw(plan, outputs());
  std::string err;
  ASSERT_TRUE(succeeded(sw.begin(1000, {}), &err));  // no main file
  EXPECT_FALSE(sw.recorded_at(1500));
  uint64_t ts = 2000;
  for (uint64_t step = 0; step < 8; step++, ts += 1000) {
    const bool recorded = step_recorded(plan.schedule, static_cast<int64_t>(step));
    const gp_event step_event = step_at(ts, step, recorded ? 1 : GP_NO_OP);
    ASSERT_TRUE(succeeded(sw.on_step(step_event, {}), &err)) << err;
    ASSERT_TRUE(succeeded(sw.outputs().append_events(&step_event, 1), &err));
    if (recorded) {
      const gp_event calls[] = {op_entry(ts + 10, 500, 0), op_exit(ts + 20, 500, 0)};
      ASSERT_TRUE(succeeded(sw.outputs().append_events(calls, 2), &err));
    }
    if (step == 2) {
      // Another thread enters an op late in the cycle's last step; its exit
      // falls in step 3, which is not recorded (BPF drops it).
      gp_event late = op_entry(ts + 900, 700, 0);
      late.tid = 200;
      ASSERT_TRUE(succeeded(sw.outputs().append_events(&late, 1), &err));
    }
    EXPECT_EQ(sw.recorded_at(ts + 500), recorded) << step;
  }
  EXPECT_TRUE(sw.recorded_at(3500));   // step 1
  EXPECT_TRUE(sw.recorded_at(4500));   // step 2
  EXPECT_FALSE(sw.recorded_at(5500));  // step 3: waiting
  EXPECT_TRUE(sw.recorded_at(6500));   // step 4
  ASSERT_TRUE(succeeded(sw.finish({}, ts), &err)) << err;
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ(done[0].path, path("c0"));
  EXPECT_EQ((std::vector<int64_t>{done[0].cycle, done[0].first, done[0].last}), (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ((std::vector<int64_t>{done[1].cycle, done[1].first, done[1].last}), (std::vector<int64_t>{1, 4, 5}));
  EXPECT_EQ(sw.cycles_saved(), 2u);
  for (const Done& d : done) {
    const Recording rec = read(d.path);
    const Timeline t = build_timeline(rec.events);
    EXPECT_EQ(t.counters.calls_open_at_end, 0u);
    EXPECT_EQ(t.counters.calls_unwound, 0u);
    size_t steps = 0, adds = 0;
    for (const OpCall& c : t.calls) (c.op_id == 1 ? steps : adds)++;
    EXPECT_EQ(steps, 2u);  // both its steps: the first closed by the next step event, the last by the cut
    EXPECT_EQ(adds, d.cycle == 0 ? 3u : 2u);
    // The late call of cycle 0 ends where the cycle does (step 3 starts at
    // 5000), as torch.profiler ends it: counted, not unwound.
    EXPECT_EQ(t.calls_cut, d.cycle == 0 ? 1u : 0u);
    for (const OpCall& c : t.calls)
      if (c.tid == 200) {
        EXPECT_EQ((std::pair{c.start_ns, c.end_ns}), (std::pair<uint64_t, uint64_t>{4900, 5000}));
      }
  }
}

TEST_F(OutputsTest, TimeStepsGateAndSplitCycles) {
  OutputPlan plan;
  plan.schedule = op_schedule(1, 1, 0);  // odd steps recorded, each its own cycle
  plan.schedule.mode = GP_SCHEDULE_BY_TIME;
  plan.schedule.step_ns = 100;
  std::vector<Done> done;
  plan.cycle_path = [&](int64_t c) { return path("t" + std::to_string(c)); };
  plan.cycle_done = [&](const std::string& p, int64_t c, int64_t a, int64_t b) { done.push_back({p, c, a, b}); };
  OutputSwitcher sw(plan, outputs());
  std::string err;
  ASSERT_TRUE(succeeded(sw.begin(0, {}), &err));
  sw.start_time_steps(1000);
  EXPECT_FALSE(sw.recorded_at(999));
  EXPECT_FALSE(sw.recorded_at(1050));  // step 0
  EXPECT_TRUE(sw.recorded_at(1150));   // step 1
  EXPECT_FALSE(sw.recorded_at(1250));
  auto counters = [] { return RecordStats{}; };
  for (uint64_t ts : {1110, 1190, 1310, 1399}) {
    ASSERT_TRUE(succeeded(sw.before_record(ts, counters), &err)) << err;
    const gp_event e = op_entry(ts, 500, 0);
    ASSERT_TRUE(succeeded(sw.outputs().append_events(&e, 1), &err));
  }
  ASSERT_TRUE(succeeded(sw.before_record(1120, counters), &err));  // a straggler of a closed cycle: no new file
  ASSERT_TRUE(succeeded(sw.finish({}, 1400), &err));
  ASSERT_EQ(done.size(), 2u);
  EXPECT_EQ((std::pair{done[0].first, done[0].last}), (std::pair<int64_t, int64_t>{1, 1}));
  EXPECT_EQ((std::pair{done[1].first, done[1].last}), (std::pair<int64_t, int64_t>{3, 3}));
  // Each holds its two records, then the CUT at the end of its step.
  for (auto [d, end] : {std::pair{done[0], 1200u}, std::pair{done[1], 1400u}}) {
    const Recording rec = read(d.path);
    ASSERT_EQ(rec.events.size(), 3u) << d.path;
    EXPECT_EQ(rec.events[2].kind, GP_EV_CUT);
    EXPECT_EQ(rec.events[2].ts_ns, end);
  }
  EXPECT_EQ(read(done[1].path).clock.start_monotonic_ns, 1300u);
  EXPECT_EQ(sw.cuts(), 2u);
}

// issue: --step-time cycles held a fraction of their steps (the first cycle
// was closed as soon as it opened) and a call open at a step's end stretched
// over the unrecorded steps to the next recorded one.
TEST_F(OutputsTest, TimeCyclesHoldTheirWholeStepsAndCutOpenCalls) {
  OutputPlan plan;
  plan.main_path = path("main");
  plan.schedule = op_schedule(1, 2, 1);  // steps 1 and 2 recorded, one cycle
  plan.schedule.mode = GP_SCHEDULE_BY_TIME;
  plan.schedule.step_ns = 1'000'000'000;
  std::vector<Done> done;
  plan.cycle_path = [&](int64_t c) { return path("w" + std::to_string(c)); };
  plan.cycle_done = [&](const std::string& p, int64_t c, int64_t a, int64_t b) { done.push_back({p, c, a, b}); };
  OutputSwitcher sw(plan, outputs());
  std::string err;
  const uint64_t t0 = 10'000'000'000;
  ASSERT_TRUE(succeeded(sw.begin(t0, {}), &err));
  sw.start_time_steps(t0);
  auto counters = [] { return RecordStats{}; };
  // Calls every 100 ms through steps 1 and 2; the loop's tick comes in
  // between, as the session's would (the first cycle used to close at once).
  uint64_t sp = 500;
  for (uint64_t ts = t0 + 1'000'000'000; ts < t0 + 3'000'000'000; ts += 100'000'000) {
    ASSERT_TRUE(succeeded(sw.tick(ts, {}), &err)) << err;
    ASSERT_TRUE(succeeded(sw.before_record(ts, counters), &err)) << err;
    const gp_event e[] = {op_entry(ts, sp, 0), op_exit(ts + 1000, sp, 0)};
    ASSERT_TRUE(succeeded(sw.outputs().append_events(e, 2), &err));
  }
  // The last call of step 2 runs past its end: its exit is dropped.
  const uint64_t open_at = t0 + 2'999'000'000;
  ASSERT_TRUE(succeeded(sw.before_record(open_at, counters), &err));
  const gp_event open = op_entry(open_at, sp, 0);
  ASSERT_TRUE(succeeded(sw.outputs().append_events(&open, 1), &err));
  ASSERT_TRUE(succeeded(sw.tick(t0 + 4'000'000'000, {}), &err));  // not yet: 2 s of grace
  EXPECT_EQ(done.size(), 0u);
  ASSERT_TRUE(succeeded(sw.tick(t0 + 5'000'000'000, {}), &err));
  ASSERT_EQ(done.size(), 1u);
  EXPECT_EQ((std::pair{done[0].first, done[0].last}), (std::pair<int64_t, int64_t>{1, 2}));
  ASSERT_TRUE(succeeded(sw.finish({}, t0 + 6'000'000'000), &err));
  for (const std::string& file : {path("main"), path("w0")}) {
    const Timeline t = build_timeline(read(file).events);
    EXPECT_EQ(t.calls.size(), 21u) << file;  // 20 whole calls, and the one cut at the step's end
    EXPECT_EQ(t.calls_cut, 1u);
    EXPECT_EQ(t.counters.calls_unwound, 0u);
    EXPECT_EQ(t.counters.calls_open_at_end, 0u);
    EXPECT_EQ(t.calls.back().end_ns, t0 + 3'000'000'000);
  }
}

// torch calls on_trace_ready for every cycle, ops or not: a --step-time
// cycle in which the target called no op is still written (empty).
TEST_F(OutputsTest, TimeCyclesWithoutRecordsAreStillWritten) {
  OutputPlan plan;
  plan.schedule = op_schedule(1, 1, 3);  // steps 1, 3, 5: three cycles
  plan.schedule.mode = GP_SCHEDULE_BY_TIME;
  plan.schedule.step_ns = 100;
  std::vector<Done> done;
  plan.cycle_path = [&](int64_t c) { return path("e" + std::to_string(c)); };
  plan.cycle_done = [&](const std::string& p, int64_t c, int64_t a, int64_t b) { done.push_back({p, c, a, b}); };
  OutputSwitcher sw(plan, outputs());
  std::string err;
  ASSERT_TRUE(succeeded(sw.begin(0, {}), &err));
  sw.start_time_steps(1'000'000'000);
  auto counters = [] { return RecordStats{}; };
  // Only cycle 1 (step 3) sees a record; the grace is 2 s.
  ASSERT_TRUE(succeeded(sw.before_record(1'000'000'350, counters), &err));
  const gp_event e = op_entry(1'000'000'350, 500, 0);
  ASSERT_TRUE(succeeded(sw.outputs().append_events(&e, 1), &err));
  ASSERT_TRUE(succeeded(sw.tick(3'000'001'000, {}), &err)) << err;  // cycle 2 (step 5) ended 2 s ago and more
  ASSERT_TRUE(succeeded(sw.finish({}, 3'000'001'000), &err)) << err;
  ASSERT_EQ(done.size(), 3u);
  for (int64_t c = 0; c < 3; c++) {
    EXPECT_EQ(done[c].cycle, c);
    EXPECT_EQ(done[c].first, 1 + 2 * c);
    EXPECT_EQ(done[c].last, 1 + 2 * c);
  }
  // Cycle 0 was over when cycle 1's record came: its (empty) window ends first.
  EXPECT_EQ(read(done[0].path).events.size(), 1u);  // the cut
  EXPECT_EQ(read(done[1].path).events.size(), 2u);  // its record and the cut
  EXPECT_EQ(read(done[2].path).events.size(), 1u);
}

TEST_F(OutputsTest, RotationKeepsTheLastFiles) {
  OutputPlan plan;
  plan.main_path = path("run.gpuprof");
  plan.rotate_ns = 1000;
  plan.keep = 2;
  OutputSwitcher sw(plan, outputs());
  std::string err;
  ASSERT_TRUE(succeeded(sw.begin(1000, {}), &err)) << err;
  for (uint64_t t = 1000; t <= 5500; t += 500) {
    const gp_event e[] = {op_entry(t + 1, 500, 0), op_exit(t + 2, 500, 0)};
    ASSERT_TRUE(succeeded(sw.outputs().append_events(e, 2), &err));
    ASSERT_TRUE(succeeded(sw.tick(t + 10, {}), &err)) << err;
  }
  ASSERT_TRUE(succeeded(sw.finish({}, 6000), &err)) << err;
  EXPECT_EQ(sw.files_rotated(), 4u);
  for (int n = 1; n <= 5; n++)
    EXPECT_EQ(fs::exists(rotated_path(plan.main_path, n)), n >= 4) << n;
  for (int n : {4, 5}) {
    const Recording rec = read(rotated_path(plan.main_path, n));
    EXPECT_TRUE(rec.complete);
    // Checked every 500 after two events: a file holds 1000 of them (the last, what was left).
    EXPECT_EQ(rec.events.size(), n == 5 ? 2u : 4u);
    EXPECT_EQ(rec.stats.events_recorded, rec.events.size());
  }
}

TEST(Rotation, Parses) {
  const std::tuple<const char*, uint64_t, uint64_t> good[] = {
      {"512K", 512u << 10, 0}, {"100M", 100ull << 20, 0}, {"2G", 2ull << 30, 0},     {"1.5M", 3ull << 19, 0},
      {"30s", 0, 30'000'000'000}, {"10m", 0, 600'000'000'000}, {"1h", 0, 3'600'000'000'000}, {"3600", 0, 3'600'000'000'000},
      {"0.5", 0, 500'000'000}};
  for (const auto& [text, bytes, ns] : good) {
    uint64_t b = 0, n = 0;
    std::string err;
    EXPECT_TRUE(succeeded(parse_rotation(text, &b, &n), &err)) << text << ": " << err;
    EXPECT_EQ(b, bytes) << text;
    EXPECT_EQ(n, ns) << text;
  }
  for (const char* bad : {"", "0", "-1M", "10X", "1K", "0.05s", "M", "1e30G", "10 M"}) {
    uint64_t b = 0, n = 0;
    std::string err;
    EXPECT_FALSE(succeeded(parse_rotation(bad, &b, &n), &err)) << bad;
    EXPECT_THAT(err, testing::HasSubstr("give a size")) << bad;
  }
  EXPECT_EQ(rotated_path("/x/run.gpuprof", 12), "/x/run.gpuprof.12");
}

TEST(CycleOutput, TemplatesAndPaths) {
  EXPECT_EQ(test::value_of(cli::parse_cycle_template("c{cycle}.gpuprof")), cli::CycleFormat::record);
  EXPECT_EQ(test::value_of(cli::parse_cycle_template("c{cycle}.txt")), cli::CycleFormat::table);
  EXPECT_EQ(test::value_of(cli::parse_cycle_template("c{cycle}.folded")), cli::CycleFormat::folded);
  EXPECT_EQ(test::value_of(cli::parse_cycle_template("c{cycle}.json")), cli::CycleFormat::chrome_trace);
  EXPECT_EQ(test::value_of(cli::parse_cycle_template("d/{cycle}/t.json.gz")), cli::CycleFormat::chrome_trace);
  const auto no_field = cli::parse_cycle_template("c.json");
  ASSERT_FALSE(no_field);
  EXPECT_THAT(no_field.error(), testing::HasSubstr("must contain {cycle}"));
  const auto csv = cli::parse_cycle_template("c{cycle}.csv");
  ASSERT_FALSE(csv);
  EXPECT_THAT(csv.error(), testing::HasSubstr("unknown extension"));
  EXPECT_EQ(cli::cycle_output_path("a{cycle}/b{cycle}.txt", 12), "a12/b12.txt");
  EXPECT_EQ(cli::cycle_record_path("d/c3.json", cli::CycleFormat::chrome_trace), "d/.c3.json.gpuprof.partial");
  EXPECT_EQ(cli::cycle_record_path("c3.gpuprof", cli::CycleFormat::record), "c3.gpuprof");
}

TEST_F(OutputsTest, CycleOutputsInEachFormat) {
  for (const auto& [name, format] : std::vector<std::pair<std::string, cli::CycleFormat>>{
           {"c.txt", cli::CycleFormat::table}, {"c.folded", cli::CycleFormat::folded},
           {"c.json", cli::CycleFormat::chrome_trace}}) {
    const std::string record = cli::cycle_record_path(path(name), format);
    RecordOutputs out = outputs();
    std::string err;
    ASSERT_TRUE(succeeded(out.open(RecordOutputs::kMain, record, 1000, {}), &err)) << err;
    const gp_event e[] = {op_entry(1100, 500, 0), op_exit(5100, 500, 0)};  // 4 us
    ASSERT_TRUE(succeeded(out.append_events(e, 2), &err));
    ASSERT_TRUE(succeeded(out.close(RecordOutputs::kMain, {}, 6000), &err)) << err;
    cli::ReportOptions table;
    const auto written = cli::write_cycle_output(record, path(name), format, table, 0600);
    ASSERT_TRUE(written) << written.error();
    EXPECT_FALSE(fs::exists(record)) << name;
    std::string text;
    ASSERT_TRUE(test::read_file(path(name), &text));
    if (format == cli::CycleFormat::table) {
      EXPECT_THAT(text, testing::HasSubstr("aten::add"));
    }
    if (format == cli::CycleFormat::folded) {
      EXPECT_EQ(text, "aten::add 4\n");
    }
    if (format == cli::CycleFormat::chrome_trace) {
      const auto json = nlohmann::json::parse(text);
      size_t adds = 0;
      for (const auto& ev : json["traceEvents"]) adds += ev.value("name", "") == "aten::add";
      EXPECT_EQ(adds, 1u);
    }
    struct stat st;
    ASSERT_EQ(stat(path(name).c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << name;
  }
}

}  // namespace
}  // namespace gpuprof

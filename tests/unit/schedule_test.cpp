// record --schedule: torch.profiler.schedule's decisions (the golden file is
// torch's own, tests/golden/make_schedule_actions.py), its parsing, and the
// step frames of the timeline.
#include "record/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "analyze/op_timeline.h"
#include "probe_events.h"
#include "test_files.h"

namespace gpuprof {
namespace {

using test::op_entry;
using test::op_exit;
using test::step_at;

gp_schedule schedule_of(uint64_t skip_first, uint64_t wait, uint64_t warmup, uint64_t active, uint64_t repeat) {
  gp_schedule s = {};
  s.mode = GP_SCHEDULE_BY_OP;
  s.skip_first = skip_first;
  s.wait = wait;
  s.warmup = warmup;
  s.active = active;
  s.repeat = repeat;
  return s;
}

TEST(Schedule, ActionsAreTorchsForEveryStep) {
  std::string text;
  ASSERT_TRUE(test::read_file(test::golden_dir() / "schedule_actions.txt", &text));
  std::istringstream lines(text);
  std::string line;
  int schedules = 0;
  while (std::getline(lines, line)) {
    std::istringstream in(line);
    uint64_t skip, wait, warmup, active, repeat;
    char colon;
    ASSERT_TRUE(in >> skip >> wait >> warmup >> active >> repeat >> colon) << line;
    const gp_schedule s = schedule_of(skip, wait, warmup, active, repeat);
    int64_t cycle = 0;
    uint32_t torch_action;
    for (int64_t step = 0; in >> torch_action; step++) {
      EXPECT_EQ(gp_schedule_action(&s, step), torch_action) << line << " step " << step;
      const bool recorded = torch_action >= GP_ACTION_RECORD;
      EXPECT_EQ(step_recorded(s, step), recorded) << line << " step " << step;
      // Cycles count the RECORD_AND_SAVE steps before, as on_trace_ready calls do.
      EXPECT_EQ(cycle_of_step(s, step), recorded ? cycle : -1) << line << " step " << step;
      if (torch_action == GP_ACTION_RECORD_AND_SAVE) cycle++;
    }
    schedules++;
  }
  EXPECT_EQ(schedules, 12);
  const gp_schedule every = schedule_of(0, 0, 0, 1, 0);
  EXPECT_EQ(gp_schedule_action(&every, -1), GP_ACTION_NONE);  // before the first step op call
}

TEST(Schedule, RecordsAfter) {
  const gp_schedule s = schedule_of(2, 1, 1, 2, 2);  // recorded: 4 5, 8 9
  EXPECT_TRUE(schedule_records_after(s, -1));
  EXPECT_TRUE(schedule_records_after(s, 8));
  EXPECT_FALSE(schedule_records_after(s, 9));
  EXPECT_FALSE(schedule_records_after(s, 100));
  EXPECT_TRUE(schedule_records_after(schedule_of(0, 1, 0, 1, 0), 1000000));
}

TEST(Schedule, Parses) {
  auto s = parse_schedule("repeat=2,active=3,warmup=1,wait=1,skip_first=10");
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(format_schedule(*s), "skip_first=10,wait=1,warmup=1,active=3,repeat=2");
  EXPECT_EQ(s->mode, GP_SCHEDULE_OFF);  // the caller sets how steps are made
  s = parse_schedule("active=1");
  ASSERT_TRUE(s) << s.error();
  EXPECT_EQ(format_schedule(*s), "skip_first=0,wait=0,warmup=0,active=1,repeat=0");
}

TEST(Schedule, RefusesWithTheReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"", "active=N (N >= 1) is required"},
      {"wait=2", "active=N (N >= 1) is required"},
      {"active=0", "active=N (N >= 1) is required"},
      {"active=2,bogus=1", "unknown key 'bogus'"},
      {"active", "'active' is not KEY=N"},
      {"active=-1", "active=-1: not a whole number"},
      {"active=1.5", "active=1.5: not a whole number"},
      {"active=2147483648", "active=2147483648: not a whole number from 0 to 2147483647"},
      {"active=1,,wait=1", "'' is not KEY=N"},
  };
  for (const auto& [text, message] : cases) {
    auto s = parse_schedule(text);
    ASSERT_FALSE(s) << text;
    EXPECT_THAT(s.error(), testing::HasSubstr(message)) << text;
  }
}

// Step frames (op_timeline.h): under every op frame of their thread.
constexpr uint32_t kOp = 0, kStepOp = 9;

TEST(StepFrames, NestTheTopLevelCallsOfTheirStep) {
  const std::vector<gp_event> events = {
      step_at(100, 0, kStepOp),    op_entry(110, 5000, kOp), op_exit(130, 5000, kOp),
      op_entry(140, 5000, kOp),    op_exit(150, 5000, kOp),
      step_at(200, 1, GP_NO_OP),   // step 1 is not recorded: step 0 ends here
      step_at(300, 2, kStepOp),    op_entry(310, 5000, kOp), op_exit(320, 5000, kOp),
      step_at(400, 3, kStepOp),    // ends 2, starts 3
  };
  const Timeline t = build_timeline(events);
  ASSERT_EQ(t.calls.size(), 6u);
  std::vector<OpCall> steps;
  for (const OpCall& c : t.calls)
    if (c.op_id == kStepOp) steps.push_back(c);
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[0].start_ns, 100u);
  EXPECT_EQ(steps[0].end_ns, 200u);
  EXPECT_EQ(steps[0].self_ns, 100u - 20 - 10);
  EXPECT_FALSE(steps[0].unwound);
  EXPECT_EQ(steps[0].entry_index, 0u);
  EXPECT_EQ(steps[1].start_ns, 300u);
  EXPECT_EQ(steps[1].end_ns, 400u);
  EXPECT_EQ(steps[1].self_ns, 90u);
  // The last step is still running at the end: it ends at its thread's last event.
  EXPECT_EQ(steps[2].start_ns, 400u);
  EXPECT_EQ(steps[2].end_ns, 400u);
  for (const OpCall& c : t.calls) {
    if (c.op_id == kOp) {
      EXPECT_EQ(c.depth, 1u);
    }
  }
  EXPECT_EQ(t.counters.calls_open_at_end, 0u);
  EXPECT_EQ(t.counters.calls_unwound, 0u);
  EXPECT_EQ(t.steps_inside_calls, 0u);
}

TEST(StepFrames, NoOpRuleClosesThem) {
  // An ENTRY with a large sp, an EXIT above everything, a catch: the step stays.
  const std::vector<gp_event> events = {
      step_at(100, 0, kStepOp),
      op_entry(110, UINT64_MAX - 1, kOp), op_exit(120, UINT64_MAX - 1, kOp),
      test::catch_at(130, UINT64_MAX - 1),
      op_exit(140, UINT64_MAX - 2, kOp),  // an exit without entry
      step_at(200, 1, GP_NO_OP),
  };
  const Timeline t = build_timeline(events);
  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[1].op_id, kStepOp);
  EXPECT_EQ(t.calls[1].end_ns, 200u);
  EXPECT_EQ(t.counters.exits_without_entry, 1u);
}

// The step op called inside a call (or a range: the optimizer's foreach op
// inside Optimizer.step#X.step): the step ends under the open call, which
// goes on in the next step.
TEST(StepFrames, AStepInsideACallEndsTheStepUnderIt) {
  const std::vector<gp_event> events = {
      step_at(100, 0, kStepOp),
      op_entry(110, 5000, kOp),
      step_at(120, 1, kStepOp),
      op_exit(130, 5000, kOp),
      step_at(200, 2, GP_NO_OP),
  };
  const Timeline t = build_timeline(events);
  EXPECT_EQ(t.steps_inside_calls, 0u);
  ASSERT_EQ(t.calls.size(), 3u);
  EXPECT_EQ((std::tuple{t.calls[0].op_id, t.calls[0].start_ns, t.calls[0].end_ns}),
            (std::tuple{kStepOp, uint64_t{100}, uint64_t{120}}));
  EXPECT_EQ((std::tuple{t.calls[1].op_id, t.calls[1].start_ns, t.calls[1].end_ns}),
            (std::tuple{kOp, uint64_t{110}, uint64_t{130}}));
  EXPECT_EQ((std::tuple{t.calls[2].op_id, t.calls[2].start_ns, t.calls[2].end_ns, t.calls[2].self_ns}),
            (std::tuple{kStepOp, uint64_t{120}, uint64_t{200}, uint64_t{60}}));  // the call is its child
  EXPECT_EQ(t.calls[2].depth, 0u);
}

// With no step frame under it (the first step op called inside a call),
// nothing can go under the open call: counted.
TEST(StepFrames, AFirstStepInsideACallIsCounted) {
  const std::vector<gp_event> events = {op_entry(110, 5000, kOp), step_at(120, 0, kStepOp), op_exit(130, 5000, kOp)};
  const Timeline t = build_timeline(events);
  EXPECT_EQ(t.steps_inside_calls, 1u);
  ASSERT_EQ(t.calls.size(), 1u);
  EXPECT_EQ(t.calls[0].op_id, kOp);
}

TEST(StepFrames, ThreadsAreApart) {
  const std::vector<gp_event> events = {
      step_at(100, 0, kStepOp, 1), op_entry(105, 5000, kOp, 2), step_at(110, 1, GP_NO_OP, 2),
      op_exit(120, 5000, kOp, 2),  step_at(150, 1, GP_NO_OP, 1),
  };
  const Timeline t = build_timeline(events);
  EXPECT_EQ(t.steps_inside_calls, 1u);  // thread 2 had its op open
  ASSERT_EQ(t.calls.size(), 2u);
  EXPECT_EQ(t.calls[0].tid, 2u);
  EXPECT_EQ(t.calls[1].tid, 1u);
  EXPECT_EQ(t.calls[1].end_ns, 150u);
  // A recorded step with an op open above it at the end: the op is not a call, the step is.
  const std::vector<gp_event> open = {step_at(100, 0, kStepOp), op_entry(110, 5000, kOp)};
  const Timeline u = build_timeline(open);
  EXPECT_EQ(u.counters.calls_open_at_end, 1u);
  ASSERT_EQ(u.calls.size(), 1u);
  EXPECT_EQ(u.calls[0].end_ns, 110u);
}

}  // namespace
}  // namespace gpuprof

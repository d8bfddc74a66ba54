// Session::run() (collect/session.h), driven by a fake target: the order
// in which it calls the target's part, what stops its loop (a signal, -d,
// a write error) and the turn it stops in, and the file it closes. No BPF:
// the fake's start() opens the record file and its rings are scripted.
#include "collect/session.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "record/record_file.h"
#include "error_strings.h"

namespace gpuprof {
namespace {

namespace fs = std::filesystem;

class FakeTarget final : public Session {
 public:
  // What the target does in its turn `turn` (from 1) of the loop.
  using Turn = std::function<void(FakeTarget&, int turn)>;
  FakeTarget(const RecordConfig& config, Turn turn) : Session(config), turn_(std::move(turn)) {}

  bool check_ok = true, start_ok = true, recorded = true, sigchld = false;
  std::vector<std::string> calls;
  int turns = 0, child_signals = 0;

  // For the turn's script.
  void stop_now(const char* reason) { stop(reason); }
  void write_fails(const std::string& error) { write_failed(error); }

 private:
  Result<void> check_target() override {
    calls.push_back("check");
    if (!check_ok) return Error("no such process: 4242");
    return {};
  }
  bool reads_sigchld() const override { return sigchld; }
  Result<void> start() override {
    calls.push_back("start");
    if (!start_ok) return Error("the op tracer did not load");
    ProcessInfo process;
    process.pid = 4242;
    process.comm = "fake";
    ClockInfo clock{.start_monotonic_ns = 1000, .start_realtime_ns = 5000, .end_monotonic_ns = 0};
    OutputPlan plan = config_.outputs;
    plan.main_path = config_.output_path;
    switcher_.emplace(std::move(plan), RecordOutputs(process, clock, {}, RecordOptions{}, 0600));
    RETURN_IF_ERROR(switcher_->begin(clock.start_monotonic_ns, stats_));
    writer_ = &switcher_->outputs();
    return {};
  }
  void on_child_signal() override { child_signals++; }
  void read_rings() override { turn_(*this, ++turns); }
  void write_turn(uint64_t now_ns) override {
    if (flush_due(now_ns)) flush_chunks();
    tick_outputs(now_ns);
  }
  bool ended_recording() override {
    calls.push_back("ended");
    return recorded || fail("the command exited before it loaded libtorch_cpu");
  }
  double stop_probes() override {
    calls.push_back("stop_probes");
    return 1.5;
  }
  void record_last_figures() override {
    calls.push_back("last_figures");
    stats_.events_lost = 7;
  }
  std::string stop_line_part() override {
    calls.push_back("stop_line");
    return "; fake";
  }
  void after_run() override { calls.push_back("after_run"); }
  ProgressCounters progress_counters(uint64_t now_ns) const override { return ProgressCounters{.now_ns = now_ns}; }
  RecordStats counters_now() const override { return stats_; }

  Turn turn_;
};

class SessionTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuprof_session_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    config_.output_path = (dir_ / "fake.gpuprof").string();
  }
  void TearDown() override { fs::remove_all(dir_); }
  RecordStats stats_in_file() {
    std::string error;
    auto recording = noting_error(read_recording(config_.output_path), &error);
    EXPECT_TRUE(recording) << error;
    return recording ? recording->stats : RecordStats{};
  }
  fs::path dir_;
  RecordConfig config_;
};

const std::vector<std::string> kWholeRun = {"check",     "start",        "ended", "stop_probes",
                                            "last_figures", "stop_line", "after_run"};

TEST_F(SessionTest, ASignalStopsTheLoopAtTheNextTurnAndTheFileIsClosedWithTheTargetsFigures) {
  FakeTarget target(config_, [](FakeTarget&, int turn) {
    if (turn == 3) raise(SIGINT);  // blocked: read from the signalfd
  });
  const RecordOutcome outcome = target.run();
  EXPECT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.stop_reason, "interrupted");
  // The turn that reads the signal still reads the rings (what came before
  // the stop is kept); then the loop ends.
  EXPECT_EQ(target.turns, 4);
  EXPECT_EQ(target.calls, kWholeRun);
  const RecordStats stats = stats_in_file();
  EXPECT_EQ(stats.stop_reason, "interrupted");
  EXPECT_EQ(stats.events_lost, 7u);
}

TEST_F(SessionTest, SigtermAndSighupStopItTooAndSigchldGoesToTheTarget) {
  for (const auto& [signo, reason] : {std::pair{SIGTERM, "terminated"}, std::pair{SIGHUP, "hangup"}}) {
    FakeTarget target(config_, [signo = signo](FakeTarget&, int turn) {
      if (turn == 1) raise(SIGCHLD);
      if (turn == 2) raise(signo);
    });
    target.sigchld = true;
    const RecordOutcome outcome = target.run();
    EXPECT_EQ(outcome.stop_reason, reason);
    EXPECT_EQ(target.child_signals, 1);
    EXPECT_EQ(target.turns, 3);
  }
}

TEST_F(SessionTest, TheDurationStopsIt) {
  config_.duration_s = 0.05;
  FakeTarget target(config_, [](FakeTarget&, int) {});
  const RecordOutcome outcome = target.run();
  EXPECT_TRUE(outcome.ok) << outcome.error;
  EXPECT_EQ(outcome.stop_reason, "duration");
  EXPECT_EQ(target.calls, kWholeRun);
  EXPECT_EQ(stats_in_file().stop_reason, "duration");
}

TEST_F(SessionTest, AFailedCheckStartsNothing) {
  FakeTarget target(config_, [](FakeTarget&, int) {});
  target.check_ok = false;
  const RecordOutcome outcome = target.run();
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error, "no such process: 4242");
  EXPECT_EQ(target.calls, (std::vector<std::string>{"check"}));
  EXPECT_FALSE(fs::exists(config_.output_path));
}

TEST_F(SessionTest, AFailedStartRunsNoLoop) {
  FakeTarget target(config_, [](FakeTarget&, int) {});
  target.start_ok = false;
  const RecordOutcome outcome = target.run();
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error, "the op tracer did not load");
  EXPECT_EQ(target.calls, (std::vector<std::string>{"check", "start"}));
  EXPECT_EQ(target.turns, 0);
}

TEST_F(SessionTest, AWriteErrorStopsTheTurnItCameInAndIsTheSessionsError) {
  FakeTarget target(config_, [](FakeTarget& t, int turn) {
    if (turn == 2) t.write_fails("write fake.gpuprof: no space left on device");
  });
  const RecordOutcome outcome = target.run();
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.stop_reason, "write error");
  EXPECT_EQ(outcome.error, "write fake.gpuprof: no space left on device");
  EXPECT_EQ(target.turns, 2);
  // The probes come out and the figures go in; no stop line for a failed file.
  EXPECT_EQ(target.calls,
            (std::vector<std::string>{"check", "start", "ended", "stop_probes", "last_figures", "after_run"}));
}

TEST_F(SessionTest, ASessionThatEndedBeforeItRecordedFinishesNothing) {
  FakeTarget target(config_, [](FakeTarget& t, int) { t.stop_now("target exited"); });
  target.recorded = false;
  const RecordOutcome outcome = target.run();
  EXPECT_FALSE(outcome.ok);
  EXPECT_EQ(outcome.error, "the command exited before it loaded libtorch_cpu");
  EXPECT_EQ(target.turns, 1);
  EXPECT_EQ(target.calls, (std::vector<std::string>{"check", "start", "ended", "after_run"}));
}

}  // namespace
}  // namespace gpuprof

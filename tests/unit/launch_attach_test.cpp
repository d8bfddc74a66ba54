// The -- CMD attach machine (collect/launch_attach.h) driven with a fake
// launched command and fake collectors: which stop attaches what, what the
// command is stopped at next, that it always runs on, and how the session
// ends when it exits or fails.
#include <gtest/gtest.h>

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "collect/diagnostics.h"
#include "collect/launch_attach.h"

namespace gpuprof {
namespace {

MappedLibrary library(const std::string& path) { return MappedLibrary{path, path, 1, 2}; }

// The command: a queue of state changes, each stop marked as the watch's or not.
class FakeTarget final : public LaunchedTarget {
 public:
  int pid() const override { return 4242; }
  std::optional<ChildEvent> next_event() override {
    if (events.empty()) return std::nullopt;
    auto [event, ours] = events.front();
    events.pop_front();
    watch_stopped = ours;
    return event;
  }
  bool take_watch_stop() override { return std::exchange(watch_stopped, false); }
  void arm(std::string_view prefix) override { armed.emplace_back(prefix); }
  void resume() override { resumed++; }
  LibraryLookup find_library(std::string_view prefix) override {
    auto found = maps.find(std::string(prefix));
    return found == maps.end() ? LibraryLookup{} : found->second;
  }

  void stop_by_watch() { events.push_back({ChildEvent{ChildEvent::Kind::stopped, 19}, true}); }
  void stop_by_someone_else() { events.push_back({ChildEvent{ChildEvent::Kind::stopped, 19}, false}); }

  std::deque<std::pair<ChildEvent, bool>> events;
  bool watch_stopped = false;
  std::map<std::string, LibraryLookup> maps;
  std::vector<std::string> armed;
  int resumed = 0;
};

// The collectors: what they were asked to attach, and the libraries they
// still wait for, in order.
class FakeCollectors final : public AttachCollectors {
 public:
  explicit FakeCollectors(Diagnostics& diagnostics) : diagnostics_(diagnostics) {}
  bool attached() const override { return attached_; }
  bool attach_ops(const MappedLibrary& libtorch) override {
    attached_paths.push_back(libtorch.path_in_target);
    if (!attach_error.empty()) return diagnostics_.fail(attach_error);
    attached_ = true;
    return true;
  }
  void attach_late() override {
    late++;
    if (!waiting.empty()) waiting.erase(waiting.begin());  // the one mapped now
  }
  std::string next_stop() const override { return waiting.empty() ? "" : waiting.front(); }

  std::vector<std::string> attached_paths;
  std::string attach_error;
  std::vector<std::string> waiting;
  int late = 0;

 private:
  Diagnostics& diagnostics_;
  bool attached_ = false;
};

struct Machine {
  RecordStats stats;
  RecordOutcome outcome;
  Diagnostics diagnostics{stats, outcome};
  FakeTarget target;
  FakeCollectors collectors{diagnostics};
  LaunchAttach attach{target, collectors, diagnostics};
};

TEST(LaunchAttach, FirstStopIsAtLibtorchCpu) {
  Machine m;
  m.attach.arm_first();
  EXPECT_EQ(m.target.armed, std::vector<std::string>{"libtorch_cpu"});
  EXPECT_EQ(m.target.resumed, 0);
}

TEST(LaunchAttach, StopAtLibtorchAttachesOpsThenStopsAtEachLibraryStillAwaited) {
  Machine m;
  m.target.maps["libtorch_cpu"] = LibraryLookup{library("/torch/lib/libtorch_cpu.so"), ""};
  m.collectors.waiting = {"libc10.so", "libcudart", "libgpuprof_cupti"};
  m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_EQ(m.collectors.attached_paths, std::vector<std::string>{"/torch/lib/libtorch_cpu.so"});
  EXPECT_EQ(m.collectors.late, 0);
  EXPECT_EQ(m.target.armed, std::vector<std::string>{"libc10.so"});
  EXPECT_EQ(m.target.resumed, 1);

  // libc10, then libcudart, then the shim: each stop attaches late and arms the next.
  for (int i = 0; i < 3; i++) m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_EQ(m.collectors.attached_paths.size(), 1u);  // the op probes go in once
  EXPECT_EQ(m.collectors.late, 3);
  EXPECT_EQ(m.target.armed, (std::vector<std::string>{"libc10.so", "libcudart", "libgpuprof_cupti"}));
  EXPECT_EQ(m.target.resumed, 4);
  EXPECT_FALSE(m.diagnostics.stopped());
  EXPECT_TRUE(m.outcome.error.empty());
}

TEST(LaunchAttach, SomeoneElsesStopIsNotUndone) {
  Machine m;
  m.target.maps["libtorch_cpu"] = LibraryLookup{library("/l/libtorch_cpu.so"), ""};
  m.target.stop_by_someone_else();  // Ctrl-Z
  m.attach.on_child_state();
  EXPECT_EQ(m.target.resumed, 0);
  EXPECT_TRUE(m.collectors.attached_paths.empty());
  EXPECT_TRUE(m.target.armed.empty());
  EXPECT_FALSE(m.diagnostics.stopped());
}

TEST(LaunchAttach, LibtorchTheMapsDoNotShowFailsAndTheCommandRunsOn) {
  Machine m;
  m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_EQ(m.outcome.error, "the launched command mapped a libtorch_cpu that /proc does not show");
  EXPECT_EQ(m.outcome.stop_reason, "error");
  EXPECT_TRUE(m.diagnostics.stopped());
  EXPECT_EQ(m.target.resumed, 1);
  EXPECT_TRUE(m.target.armed.empty());
}

TEST(LaunchAttach, UnreadableLibtorchSaysWhy) {
  Machine m;
  m.target.maps["libtorch_cpu"] = LibraryLookup{std::nullopt, "/x/libtorch_cpu.so: Permission denied"};
  m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_EQ(m.outcome.error, "/x/libtorch_cpu.so: Permission denied");
  EXPECT_EQ(m.outcome.stop_reason, "error");
  EXPECT_EQ(m.target.resumed, 1);
}

TEST(LaunchAttach, FailedAttachStopsTheSessionButLetsTheCommandGo) {
  Machine m;
  m.target.maps["libtorch_cpu"] = LibraryLookup{library("/l/libtorch_cpu.so"), ""};
  m.collectors.attach_error = "--step-op aten::nothing: no such op";
  m.collectors.waiting = {"libc10.so"};
  m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_EQ(m.outcome.error, "--step-op aten::nothing: no such op");
  EXPECT_EQ(m.outcome.stop_reason, "error");
  EXPECT_TRUE(m.target.armed.empty());  // not attached: nothing more to stop for
  EXPECT_EQ(m.target.resumed, 1);
}

TEST(LaunchAttach, NothingMoreAwaitedArmsNothing) {
  Machine m;
  m.target.maps["libtorch_cpu"] = LibraryLookup{library("/l/libtorch_cpu.so"), ""};
  m.target.stop_by_watch();
  m.attach.on_child_state();
  EXPECT_TRUE(m.target.armed.empty());
  EXPECT_EQ(m.target.resumed, 1);
}

TEST(LaunchAttach, ExitEndsTheSession) {
  Machine m;
  m.target.events.push_back({ChildEvent{ChildEvent::Kind::exited, 3}, false});
  m.attach.on_child_state();
  EXPECT_TRUE(m.attach.exited());
  EXPECT_EQ(m.outcome.stop_reason, "target exited");
  EXPECT_EQ(m.attach.unattached_error("train.py", m.outcome.stop_reason),
            "train.py exited without loading libtorch_cpu: nothing was profiled");
}

TEST(LaunchAttach, KilledEndsTheSessionToo) {
  Machine m;
  m.target.events.push_back({ChildEvent{ChildEvent::Kind::killed, 9}, false});
  m.attach.on_child_state();
  EXPECT_TRUE(m.attach.exited());
  EXPECT_EQ(m.outcome.stop_reason, "target exited");
}

TEST(LaunchAttach, StoppedBeforeLibtorchSaysHow) {
  Machine m;
  m.diagnostics.stop("interrupted");
  EXPECT_FALSE(m.attach.exited());
  EXPECT_EQ(m.attach.unattached_error("train.py", m.outcome.stop_reason),
            "stopped (interrupted) before train.py loaded libtorch_cpu: nothing was profiled");
}

TEST(LaunchAttach, TheFirstStopReasonStands) {
  Machine m;
  m.target.stop_by_watch();  // fails: no libtorch in the maps
  m.target.events.push_back({ChildEvent{ChildEvent::Kind::exited, 1}, false});
  m.attach.on_child_state();
  EXPECT_EQ(m.outcome.stop_reason, "error");
  EXPECT_TRUE(m.attach.exited());
}

}  // namespace
}  // namespace gpuprof

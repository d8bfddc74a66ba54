// launch_attach.h: when the probes go into a command gpuprof launched
// (`record -- CMD`), apart from what they collect.
//
// The command runs under a library watch (library_watch.h) that stops it
// with SIGSTOP as it maps a library: first libtorch_cpu, where the op probes
// go in; then, one at a time, each library a collector still waits for
// (libc10, libcudart, the CUPTI shim, libcuda), so that no allocation of
// the first op and no launch is missed. Whatever happens at a stop, the
// command is let go again. A stop gpuprof did not cause (Ctrl-Z) is not
// gpuprof's to undo. The process side (LaunchedTarget) and the collectors'
// side (AttachCollectors) are interfaces, so that unit tests drive the
// machine with fakes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "collect/diagnostics.h"
#include "symbols/target_maps.h"

namespace gpuprof {

// A state change of the launched command (waitpid).
struct ChildEvent {
  enum class Kind { stopped, exited, killed };
  Kind kind = Kind::stopped;
  int value = 0;  // the exit status, or the signal that killed it
};

// The process side: waitpid, the library watch, SIGCONT, /proc maps.
class LaunchedTarget {
 public:
  virtual ~LaunchedTarget() = default;
  virtual int pid() const = 0;
  // The next state change not yet handled; nullopt when there is none.
  virtual std::optional<ChildEvent> next_event() = 0;
  // True when the watch caused the stop seen last (reading it clears it).
  virtual bool take_watch_stop() = 0;
  virtual void arm(std::string_view file_name_prefix) = 0;
  virtual void resume() = 0;
  virtual LibraryLookup find_library(std::string_view file_name_prefix) = 0;
};

// The collectors' side.
class AttachCollectors {
 public:
  virtual ~AttachCollectors() = default;
  // Whether the op probes are in (attach_ops succeeded).
  virtual bool attached() const = 0;
  // The op probes on libtorch_cpu, and what goes in with them; false when
  // the session failed (its error is in the outcome).
  virtual bool attach_ops(const MappedLibrary& libtorch) = 0;
  // Another library is mapped: the probes that waited for it go in.
  virtual void attach_late() = 0;
  // The library to stop the command at next, "" for none (called once the
  // op probes are in).
  virtual std::string next_stop() const = 0;
};

class LaunchAttach {
 public:
  LaunchAttach(LaunchedTarget& target, AttachCollectors& collectors, Diagnostics& diagnostics)
      : target_(target), collectors_(collectors), diagnostics_(diagnostics) {}

  // Before the command runs: its first stop is at libtorch_cpu.
  void arm_first() { target_.arm("libtorch_cpu"); }
  // On SIGCHLD (and once when the loop starts): every stop and exit pending.
  void on_child_state();
  bool exited() const { return exited_; }
  // The session's error when it ended before the op probes went in.
  std::string unattached_error(const std::string& command, const std::string& stop_reason) const;

 private:
  void on_stop();

  LaunchedTarget& target_;
  AttachCollectors& collectors_;
  Diagnostics& diagnostics_;
  bool exited_ = false;
};

}  // namespace gpuprof

// launcher.h: `gpuprof record -- CMD`: start CMD with a gate before exec.
//
// The child is forked at once but waits before exec until start() is
// called, so that gpuprof can load its BPF programs with the child's pid
// first. exec failures come back over a close-on-exec pipe, so "command not
// found" is reported as such instead of as an empty recording.
#pragma once

#include <string>
#include <vector>

#include "base/result.h"

namespace gpuprof {

class LaunchedCommand {
 public:
  static Result<LaunchedCommand> spawn(const std::vector<std::string>& argv);
  LaunchedCommand(LaunchedCommand&& other) noexcept;
  LaunchedCommand(const LaunchedCommand&) = delete;
  ~LaunchedCommand();

  int pid() const { return pid_; }

  // Lets the child exec CMD. An error if exec failed; the child has then
  // exited and been reaped.
  Result<void> start();

  // Kills and reaps a child that has not been started (an error came up
  // before start): CMD must not run unprofiled behind the user's back.
  void abandon();

 private:
  LaunchedCommand() = default;
  int pid_ = -1;
  int gate_fd_ = -1;       // write end: closing it lets the child exec
  int exec_error_fd_ = -1;  // read end: errno from a failed exec, EOF on success
  std::string command_;
};

}  // namespace gpuprof

// fork_watch.h: the child processes a process forks, as they are forked
// (record --follow-forks; bpf/process_forks.bpf.c).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "base/result.h"
#include "probe/bpf_program.h"
#include "process_forks_abi.h"

struct process_forks_bpf;

namespace gpuprof {

class ForkWatch {
 public:
  // Watches `pid` and, transitively, every child it forks; fails when the
  // tracepoint program cannot be loaded.
  static Result<std::unique_ptr<ForkWatch>> load(int pid, std::function<void(const gp_fork&)> on_fork);
  ~ForkWatch();

  int poll_fd() const { return bpf_.poll_fd(); }
  void consume() { bpf_.consume(); }
  // Forks the ring buffer had no room for, and children beyond
  // GP_MAX_FOLLOWED_PROCESSES (not followed).
  uint64_t lost() const;

 private:
  ForkWatch();
  BpfProgram<process_forks_bpf> bpf_;
};

}  // namespace gpuprof

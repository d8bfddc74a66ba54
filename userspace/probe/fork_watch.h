// fork_watch.h: the child processes a process forks, as they are forked
// (record --follow-forks; bpf/process_forks.bpf.c).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "process_forks_abi.h"
#include "probe/ring_reader.h"

struct process_forks_bpf;

namespace gpuprof {

class ForkWatch {
 public:
  // Watches `pid` and, transitively, every child it forks. nullptr and
  // *error when the tracepoint program cannot be loaded.
  static std::unique_ptr<ForkWatch> load(int pid, std::function<void(const gp_fork&)> on_fork,
                                         std::string* error);
  ~ForkWatch();

  int poll_fd() const;
  void consume();
  // Forks the ring buffer had no room for, and children beyond
  // GP_MAX_FOLLOWED_PROCESSES (not followed).
  uint64_t lost() const;

 private:
  ForkWatch() = default;
  process_forks_bpf* skel_ = nullptr;
  std::unique_ptr<RingReader> ring_;
};

}  // namespace gpuprof

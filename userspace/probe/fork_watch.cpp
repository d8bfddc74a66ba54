#include "probe/fork_watch.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "process_forks.skel.h"

namespace gpuprof {

std::unique_ptr<ForkWatch> ForkWatch::load(int pid, std::function<void(const gp_fork&)> on_fork,
                                           std::string* error) {
  std::unique_ptr<ForkWatch> watch(new ForkWatch());
  watch->skel_ = process_forks_bpf__open_and_load();
  if (!watch->skel_) {
    *error = std::string("cannot load the fork tracepoint program: ") + std::strerror(errno);
    return nullptr;
  }
  const __u32 key = static_cast<__u32>(pid), one = 1;
  if (bpf_map_update_elem(bpf_map__fd(watch->skel_->maps.followed), &key, &one, BPF_ANY) != 0 ||
      process_forks_bpf__attach(watch->skel_) != 0) {
    *error = std::string("cannot attach the fork tracepoint: ") + std::strerror(errno);
    return nullptr;
  }
  watch->ring_ = RingReader::open<gp_fork>(bpf_map__fd(watch->skel_->maps.forks), std::move(on_fork), "fork", error);
  return watch->ring_ ? std::move(watch) : nullptr;
}

ForkWatch::~ForkWatch() {
  ring_.reset();  // before the maps it reads
  if (skel_) process_forks_bpf__destroy(skel_);
}

int ForkWatch::poll_fd() const { return ring_->poll_fd(); }

void ForkWatch::consume() { ring_->consume(); }

uint64_t ForkWatch::lost() const { return __atomic_load_n(&skel_->bss->forks_lost, __ATOMIC_RELAXED); }

}  // namespace gpuprof

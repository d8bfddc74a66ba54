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
  watch->on_fork_ = std::move(on_fork);
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
  watch->rb_ = ring_buffer__new(bpf_map__fd(watch->skel_->maps.forks), on_record, watch.get(), nullptr);
  if (!watch->rb_) {
    *error = std::string("cannot open the fork ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  return watch;
}

ForkWatch::~ForkWatch() {
  if (rb_) ring_buffer__free(rb_);
  if (skel_) process_forks_bpf__destroy(skel_);
}

int ForkWatch::on_record(void* ctx, void* data, size_t size) {
  if (size < sizeof(gp_fork)) return 0;
  gp_fork fork;
  std::memcpy(&fork, data, sizeof fork);
  static_cast<ForkWatch*>(ctx)->on_fork_(fork);
  return 0;
}

int ForkWatch::poll_fd() const { return ring_buffer__epoll_fd(rb_); }

void ForkWatch::consume() { ring_buffer__consume(rb_); }

uint64_t ForkWatch::lost() const { return __atomic_load_n(&skel_->bss->forks_lost, __ATOMIC_RELAXED); }

}  // namespace gpuprof

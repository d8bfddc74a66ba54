#include "probe/fork_watch.h"

#include <bpf/bpf.h>

#include "process_forks.skel.h"

namespace gpuprof {

ForkWatch::ForkWatch() : bpf_("the fork tracepoint program") {}
ForkWatch::~ForkWatch() = default;

Result<std::unique_ptr<ForkWatch>> ForkWatch::load(int pid, std::function<void(const gp_fork&)> on_fork) {
  std::unique_ptr<ForkWatch> watch(new ForkWatch());
  RETURN_IF_ERROR(watch->bpf_.open_and_load());
  const __u32 key = static_cast<__u32>(pid), one = 1;
  if (bpf_map_update_elem(bpf_map__fd(watch->bpf_->maps.followed), &key, &one, BPF_ANY) != 0)
    return Error(std::string("cannot follow process ") + std::to_string(pid) + ": " + std::strerror(errno));
  RETURN_IF_ERROR(watch->bpf_.attach());
  RETURN_IF_ERROR(watch->bpf_.read_ring<gp_fork>(watch->bpf_->maps.forks, std::move(on_fork), "fork"));
  return watch;
}

uint64_t ForkWatch::lost() const { return read_bpf_counter(bpf_->bss->forks_lost); }

}  // namespace gpuprof

#include "probe/library_loads.h"

#include "library_loads.skel.h"
#include "probe/tracefs.h"

namespace gpuprof {

LibraryLoads::LibraryLoads() : bpf_("the library-load watcher (mmap tracepoint)") {}
LibraryLoads::~LibraryLoads() = default;

Result<std::unique_ptr<LibraryLoads>> LibraryLoads::load(std::function<void(const gp_library_load&)> on_load) {
  std::unique_ptr<LibraryLoads> loads(new LibraryLoads());
  RETURN_IF_ERROR(loads->bpf_.open_and_load());
  RETURN_IF_ERROR(ensure_tracefs());
  RETURN_IF_ERROR(loads->bpf_.attach());
  RETURN_IF_ERROR(loads->bpf_.read_ring<gp_library_load>(loads->bpf_->maps.loads, std::move(on_load), "library-load"));
  return loads;
}

uint64_t LibraryLoads::lost() const { return read_bpf_counter(bpf_->bss->loads_lost); }

}  // namespace gpuprof

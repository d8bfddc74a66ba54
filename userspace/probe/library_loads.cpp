#include "probe/library_loads.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstring>

#include "library_loads.skel.h"
#include "probe/tracefs.h"

namespace gpuprof {

std::unique_ptr<LibraryLoads> LibraryLoads::load(std::function<void(const gp_library_load&)> on_load,
                                                 std::string* error) {
  std::unique_ptr<LibraryLoads> loads(new LibraryLoads());
  loads->skel_ = library_loads_bpf__open_and_load();
  if (!loads->skel_) {
    *error = std::string("cannot load the library-load watcher (mmap tracepoint): ") + std::strerror(errno);
    return nullptr;
  }
  if (!ensure_tracefs(error)) return nullptr;
  if (library_loads_bpf__attach(loads->skel_) != 0) {
    *error = std::string("cannot attach the library-load watcher (mmap tracepoint): ") + std::strerror(errno);
    return nullptr;
  }
  loads->ring_ = RingReader::open<gp_library_load>(bpf_map__fd(loads->skel_->maps.loads), std::move(on_load),
                                                   "library-load", error);
  return loads->ring_ ? std::move(loads) : nullptr;
}

LibraryLoads::~LibraryLoads() {
  ring_.reset();  // before the maps it reads
  if (skel_) library_loads_bpf__destroy(skel_);
}

int LibraryLoads::poll_fd() const { return ring_->poll_fd(); }

void LibraryLoads::consume() { ring_->consume(); }

uint64_t LibraryLoads::lost() const { return __atomic_load_n(&skel_->bss->loads_lost, __ATOMIC_RELAXED); }

}  // namespace gpuprof

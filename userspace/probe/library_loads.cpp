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
  loads->on_load_ = std::move(on_load);
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
  loads->rb_ = ring_buffer__new(bpf_map__fd(loads->skel_->maps.loads), on_record, loads.get(), nullptr);
  if (!loads->rb_) {
    *error = std::string("cannot open the library-load ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  return loads;
}

LibraryLoads::~LibraryLoads() {
  if (rb_) ring_buffer__free(rb_);
  if (skel_) library_loads_bpf__destroy(skel_);
}

int LibraryLoads::on_record(void* ctx, void* data, size_t size) {
  if (size < sizeof(gp_library_load)) return 0;
  gp_library_load load;
  std::memcpy(&load, data, sizeof load);
  static_cast<LibraryLoads*>(ctx)->on_load_(load);
  return 0;
}

int LibraryLoads::poll_fd() const { return ring_buffer__epoll_fd(rb_); }

void LibraryLoads::consume() { ring_buffer__consume(rb_); }

uint64_t LibraryLoads::lost() const { return __atomic_load_n(&skel_->bss->loads_lost, __ATOMIC_RELAXED); }

}  // namespace gpuprof

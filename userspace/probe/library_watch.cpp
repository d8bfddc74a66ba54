#include "probe/library_watch.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "library_watch.skel.h"
#include "probe/tracefs.h"

namespace gpuprof {

std::unique_ptr<LibraryWatch> LibraryWatch::load(int tgid, std::string* error) {
  std::unique_ptr<LibraryWatch> watch(new LibraryWatch());
  watch->skel_ = library_watch_bpf__open();
  if (!watch->skel_) {
    *error = std::string("cannot open the library watcher: ") + std::strerror(errno);
    return nullptr;
  }
  watch->skel_->rodata->watch_tgid = static_cast<__u32>(tgid);
  if (int err = library_watch_bpf__load(watch->skel_); err != 0) {
    *error = std::string("cannot load the library watcher (mmap syscall tracepoint): ") +
             std::strerror(-err);
    return nullptr;
  }
  if (!ensure_tracefs(error)) return nullptr;
  if (int err = library_watch_bpf__attach(watch->skel_); err != 0) {
    *error = std::string("cannot attach the library watcher: ") + std::strerror(-err);
    return nullptr;
  }
  return watch;
}

LibraryWatch::~LibraryWatch() {
  if (skel_) library_watch_bpf__destroy(skel_);
}

void LibraryWatch::arm(std::string_view file_name_prefix) {
  // The BPF side reads the file name as a NUL-terminated string into a
  // buffer of this size: one byte fewer can be compared.
  const size_t n = std::min(file_name_prefix.size(), sizeof(skel_->bss->watch_prefix) - 1);
  std::memset(skel_->bss->watch_prefix, 0, sizeof(skel_->bss->watch_prefix));
  std::memcpy(skel_->bss->watch_prefix, file_name_prefix.data(), n);
  skel_->bss->watch_prefix_len = static_cast<uint32_t>(n);
  __atomic_store_n(&skel_->bss->armed, 1, __ATOMIC_SEQ_CST);
}

bool LibraryWatch::take_stop_sent() {
  return __atomic_exchange_n(&skel_->bss->stop_sent, 0, __ATOMIC_SEQ_CST) != 0;
}

}  // namespace gpuprof

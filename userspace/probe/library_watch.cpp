#include "probe/library_watch.h"

#include <algorithm>
#include <cstring>

#include "library_watch.skel.h"
#include "probe/tracefs.h"

namespace gpuprof {

LibraryWatch::LibraryWatch() : bpf_("the library watcher (mmap syscall tracepoint)") {}
LibraryWatch::~LibraryWatch() = default;

Result<std::unique_ptr<LibraryWatch>> LibraryWatch::load(int tgid) {
  std::unique_ptr<LibraryWatch> watch(new LibraryWatch());
  RETURN_IF_ERROR(watch->bpf_.open());
  watch->bpf_->rodata->watch_tgid = static_cast<__u32>(tgid);
  RETURN_IF_ERROR(watch->bpf_.load());
  RETURN_IF_ERROR(ensure_tracefs());
  RETURN_IF_ERROR(watch->bpf_.attach());
  return watch;
}

void LibraryWatch::arm(std::string_view file_name_prefix) {
  // The BPF side reads the file name as a NUL-terminated string into a
  // buffer of this size: one byte fewer can be compared.
  const size_t n = std::min(file_name_prefix.size(), sizeof(bpf_->bss->watch_prefix) - 1);
  std::memset(bpf_->bss->watch_prefix, 0, sizeof(bpf_->bss->watch_prefix));
  std::memcpy(bpf_->bss->watch_prefix, file_name_prefix.data(), n);
  bpf_->bss->watch_prefix_len = static_cast<uint32_t>(n);
  __atomic_store_n(&bpf_->bss->armed, 1, __ATOMIC_SEQ_CST);
}

bool LibraryWatch::take_stop_sent() {
  return __atomic_exchange_n(&bpf_->bss->stop_sent, 0, __ATOMIC_SEQ_CST) != 0;
}

}  // namespace gpuprof

#include "uprobe_multi.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuprof {
namespace {

// The link_create part of union bpf_attr for uprobe_multi, as the kernel
// reads it (include/uapi/linux/bpf.h, 6.6+). Spelled out here because the
// installed linux headers may predate it.
struct LinkCreateUprobeMulti {
  uint32_t prog_fd;          //  0
  uint32_t target_fd;        //  4: 0
  uint32_t attach_type;      //  8: BPF_TRACE_UPROBE_MULTI
  uint32_t flags;            // 12: 0
  uint64_t path;             // 16: const char*
  uint64_t offsets;          // 24: const unsigned long*
  uint64_t ref_ctr_offsets;  // 32: 0 (no semaphores)
  uint64_t cookies;          // 40: const __u64*
  uint32_t cnt;              // 48
  uint32_t uprobe_flags;     // 52: 0 = entry probes; never BPF_F_UPROBE_MULTI_RETURN
  uint32_t pid;              // 56: tgid filter
  uint32_t path_fd;          // 60: 0
};
static_assert(sizeof(LinkCreateUprobeMulti) == 64);

constexpr int kBpfLinkCreate = 28;
constexpr size_t kBpfAttrSize = 160;  // > any field we set; zero-filled tail

}  // namespace

std::optional<UprobeMultiLink> UprobeMultiLink::attach(int prog_fd, const std::string& binary_path,
                                                       const std::vector<uint64_t>& offsets,
                                                       const std::vector<uint64_t>& cookies, int pid,
                                                       std::string* error) {
  if (offsets.empty() || offsets.size() != cookies.size() || pid < 0) {
    *error = "internal: bad uprobe_multi request";
    return std::nullopt;
  }
  alignas(8) unsigned char attr[kBpfAttrSize] = {};
  LinkCreateUprobeMulti link = {};
  link.prog_fd = static_cast<uint32_t>(prog_fd);
  link.attach_type = kBpfTraceUprobeMulti;
  link.path = reinterpret_cast<uint64_t>(binary_path.c_str());
  link.offsets = reinterpret_cast<uint64_t>(offsets.data());
  link.cookies = reinterpret_cast<uint64_t>(cookies.data());
  link.cnt = static_cast<uint32_t>(offsets.size());
  link.pid = static_cast<uint32_t>(pid);
  std::memcpy(attr, &link, sizeof(link));
  long fd = syscall(__NR_bpf, kBpfLinkCreate, attr, sizeof(attr));
  if (fd < 0) {
    int err = errno;
    *error = "uprobe_multi attach to " + binary_path + " failed: " + std::strerror(err);
    if (err == EINVAL || err == EOPNOTSUPP)
      *error += " (the kernel needs CONFIG_UPROBES and uprobe_multi, Linux 6.6 or later)";
    return std::nullopt;
  }
  return UprobeMultiLink(static_cast<int>(fd));
}

UprobeMultiLink& UprobeMultiLink::operator=(UprobeMultiLink&& other) noexcept {
  if (this != &other) {
    reset();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void UprobeMultiLink::reset() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

}  // namespace gpuprof

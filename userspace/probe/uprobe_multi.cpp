#include "probe/uprobe_multi.h"

#include <bpf/libbpf.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

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

// What the helper task hands back (it shares our memory).
struct LinkRequest {
  unsigned char* attr;
  long result;  // the link fd, or -errno
};

int create_link(void* arg) {
  auto* request = static_cast<LinkRequest*>(arg);
  // Out of gpuprof's process group and deaf to every signal: what kills
  // gpuprof (Ctrl-C, kill -9 of the group) must not reach this syscall.
  syscall(__NR_setsid);
  sigset_t all;
  sigfillset(&all);
  syscall(__NR_rt_sigprocmask, SIG_BLOCK, &all, nullptr, sizeof(uint64_t));
  const long fd = syscall(__NR_bpf, kBpfLinkCreate, request->attr, kBpfAttrSize);
  request->result = fd >= 0 ? fd : -errno;
  return 0;
}

// BPF_LINK_CREATE run by a helper task that shares gpuprof's memory and fd
// table (CLONE_VM | CLONE_FILES) but is a process of its own. Registering
// thousands of uprobes takes up to a second, and a SIGKILL of the task
// doing it midway leaves the breakpoints already planted in the target
// for good (seen on kernel 6.18: tests/integration/test_kill_many.py):
// killed here, gpuprof dies, the helper finishes its syscall, and its exit
// closes the new link, which removes every breakpoint cleanly.
long create_link_unkillable(unsigned char* attr) {
  constexpr size_t kStackBytes = 64 * 1024;
  static thread_local std::vector<unsigned char> stack(kStackBytes);
  LinkRequest request{attr, -EINVAL};
  const int child = clone(create_link, stack.data() + stack.size(), CLONE_VM | CLONE_FILES, &request);
  if (child < 0) {  // no task to spare: do it here, as before
    const long fd = syscall(__NR_bpf, kBpfLinkCreate, attr, kBpfAttrSize);
    return fd >= 0 ? fd : -errno;
  }
  int status = 0;
  while (waitpid(child, &status, __WALL) < 0 && errno == EINTR) {
  }
  return request.result;
}

}  // namespace

void expect_uprobe_multi(bpf_program* program) {
  bpf_program__set_expected_attach_type(program, static_cast<bpf_attach_type>(kBpfTraceUprobeMulti));
}

Result<void> UprobeMultiLink::attach_into(std::vector<UprobeMultiLink>& links, const bpf_program* program,
                                          const std::string& binary_path, const std::vector<uint64_t>& offsets,
                                          const std::vector<uint64_t>& cookies, int pid) {
  ASSIGN_OR_RETURN(UprobeMultiLink link, attach(program, binary_path, offsets, cookies, pid));
  links.push_back(std::move(link));
  return {};
}

Result<UprobeMultiLink> UprobeMultiLink::attach(const bpf_program* program, const std::string& binary_path,
                                               const std::vector<uint64_t>& offsets,
                                               const std::vector<uint64_t>& cookies, int pid) {
  const int prog_fd = bpf_program__fd(program);
  if (offsets.empty() || offsets.size() != cookies.size() || pid < 0)
    return Error("internal: bad uprobe_multi request");
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
  const long fd = create_link_unkillable(attr);
  if (fd < 0) {
    const int err = static_cast<int>(-fd);
    std::string message = "uprobe_multi attach to " + binary_path + " failed: " + std::strerror(err);
    if (err == EINVAL || err == EOPNOTSUPP)
      message += " (the kernel needs CONFIG_UPROBES and uprobe_multi, Linux 6.6 or later)";
    return Error(std::move(message));
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

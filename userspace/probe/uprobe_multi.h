// uprobe_multi.h: one BPF link for thousands of uprobes.
//
// Debian's libbpf 1.1 has no bpf_program__attach_uprobe_multi, so the link
// is created with the raw BPF_LINK_CREATE command (kernel 6.6+), its attr
// laid out as the kernel's uapi bpf.h gives it. Attaching ~9000 sites
// this way takes milliseconds; detaching is closing the fd. One perf-event
// uprobe per site would take seconds to attach and minutes to detach.
//
// Only entry-style probes are created here: the return flag is never set
// (return probes abort C++ processes when exceptions cross them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"

struct bpf_program;

namespace gpuprof {

// BPF_TRACE_UPROBE_MULTI; the program must be loaded with it as its
// expected attach type.
constexpr int kBpfTraceUprobeMulti = 48;
// Before the skeleton's load: `program` is attached with UprobeMultiLink.
void expect_uprobe_multi(bpf_program* program);

class UprobeMultiLink {
 public:
  // Attaches prog_fd to the given file offsets of binary_path, with one
  // cookie per offset, for process pid only (pid > 0), or for every
  // process that maps the file (pid 0: record -a). The kernel also plants
  // the breakpoints in mappings created later.
  // `program`: loaded after expect_uprobe_multi.
  static Result<UprobeMultiLink> attach(const bpf_program* program, const std::string& binary_path,
                                        const std::vector<uint64_t>& offsets, const std::vector<uint64_t>& cookies,
                                        int pid);
  // attach(), the link kept in `links` (a program's links, one per binary).
  static Result<void> attach_into(std::vector<UprobeMultiLink>& links, const bpf_program* program,
                                  const std::string& binary_path, const std::vector<uint64_t>& offsets,
                                  const std::vector<uint64_t>& cookies, int pid);
  UprobeMultiLink(UprobeMultiLink&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  UprobeMultiLink& operator=(UprobeMultiLink&& other) noexcept;
  UprobeMultiLink(const UprobeMultiLink&) = delete;
  UprobeMultiLink& operator=(const UprobeMultiLink&) = delete;
  ~UprobeMultiLink() { reset(); }

  // Detaches: the kernel removes every breakpoint of the link.
  void reset();

 private:
  explicit UprobeMultiLink(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace gpuprof

#include "target/privileges.h"

#include <linux/capability.h>
#include <pwd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "base/unique_fd.h"

namespace gpuprof {
namespace {

// Older headers may lack them.
constexpr int kCapPerfmon = 38;
constexpr int kCapBpf = 39;

std::string user_name(uid_t uid) {
  if (const passwd* pw = getpwuid(uid)) return std::string(pw->pw_name) + " (uid " + std::to_string(uid) + ")";
  return "uid " + std::to_string(uid);
}

int yama_ptrace_scope() {
  std::ifstream f("/proc/sys/kernel/yama/ptrace_scope");
  int scope = -1;
  f >> scope;
  return f ? scope : -1;
}

}  // namespace

uint64_t effective_capabilities() {
  __user_cap_header_struct header = {_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2] = {};
  if (syscall(SYS_capget, &header, data) != 0) return 0;
  return static_cast<uint64_t>(data[0].effective) | static_cast<uint64_t>(data[1].effective) << 32;
}

std::string missing_privileges(const std::string& root_only) {
  if (geteuid() == 0) return "";
  const uint64_t caps = effective_capabilities();
  std::string missing;
  if (!(caps >> kCapBpf & 1)) missing = "CAP_BPF";
  if (!(caps >> kCapPerfmon & 1)) missing += std::string(missing.empty() ? "" : " and ") + "CAP_PERFMON";
  if (missing.empty()) return "";
  if (!root_only.empty())
    return root_only + " needs root: run it with sudo (file capabilities are enough only for -p PID on your "
                       "own processes; this process lacks " + missing + ": docs/privileges.md)";
  return "gpuprof needs root or the capabilities CAP_BPF and CAP_PERFMON (this process lacks " + missing +
         "): run it with sudo, or give the binary file capabilities: sudo setcap cap_bpf,cap_perfmon+ep " +
         "$(command -v gpuprof) (docs/privileges.md)";
}

std::string ptrace_refusal(int pid) {
  const uid_t me = getuid();
  if (me == 0) return "";  // the invoking user is root
  UniqueFd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) return "";  // gone: the caller says "no such process"
  // The kernel checks ptrace access with the real credentials before it
  // looks the fd up: EPERM is "no", EBADF (no fd 0) or an fd is "yes".
  const int fd = static_cast<int>(syscall(SYS_pidfd_getfd, pidfd.get(), 0, 0));
  if (fd >= 0) {
    close(fd);
    return "";
  }
  if (errno != EPERM) return "";
  struct stat st;
  const std::string owner =
      stat(("/proc/" + std::to_string(pid)).c_str(), &st) == 0 ? user_name(st.st_uid) : "another user";
  std::string why = user_name(me) + " may not watch process " + std::to_string(pid) + " of " +
                    owner + ": the kernel would not let this user ptrace it";
  if (st.st_uid == me && yama_ptrace_scope() >= 1)
    why += " (kernel.yama.ptrace_scope = " + std::to_string(yama_ptrace_scope()) +
           ": only a parent may ptrace its process; launch it with gpuprof record -- CMD)";
  else if (st.st_uid != me)
    why += " (capabilities do not extend to other users' processes; run gpuprof as root for that)";
  return why;
}

}  // namespace gpuprof

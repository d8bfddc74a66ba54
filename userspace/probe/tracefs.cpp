#include "probe/tracefs.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace gpuprof {
namespace {

// libbpf 1.1 looks under the debugfs path whenever it exists, else under
// /sys/kernel/tracing (libbpf.c: use_debugfs()).
constexpr const char* kDebugfsTracing = "/sys/kernel/debug/tracing";
constexpr const char* kTracefs = "/sys/kernel/tracing";
constexpr const char* kTracefsEvents = "/sys/kernel/tracing/events";

bool exists(const char* path) { return access(path, F_OK) == 0; }

}  // namespace

Result<void> ensure_tracefs() {
  if (exists(kDebugfsTracing)) return {};
  if (exists(kTracefsEvents)) return {};
  if (errno == EACCES) {
    // Mounted, but tracefs is root's (mode 0700): CAP_BPF and CAP_PERFMON
    // do not let a user read a tracepoint's id there.
    return Error(std::string("the mmap tracepoint that launch mode and -a watch library loads with is found in "
                             "tracefs (") + kTracefs + "), which only root may read: run gpuprof as root for "
                 "`-- CMD` and `-a`; with capabilities, start the command yourself and use -p PID (docs/privileges.md)");
  }
  if (mount("nodev", kTracefs, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) return {};
  // EBUSY: tracefs is already mounted there, by someone since the look above.
  if (errno == EBUSY && exists(kTracefsEvents)) return {};
  return Error(std::string("the mmap tracepoint needs tracefs, which is not mounted, and mounting it at ") + kTracefs +
               " failed (" + std::strerror(errno) + "): mount it as root with `mount -t tracefs nodev " + kTracefs + "`");
}

}  // namespace gpuprof

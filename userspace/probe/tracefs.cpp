#include "probe/tracefs.h"

#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuprof {
namespace {

// libbpf 1.1 looks under the debugfs path whenever it exists, else under
// /sys/kernel/tracing (libbpf.c: use_debugfs()).
constexpr const char* kDebugfsTracing = "/sys/kernel/debug/tracing";
constexpr const char* kTracefs = "/sys/kernel/tracing";
constexpr const char* kTracefsEvents = "/sys/kernel/tracing/events";

bool exists(const char* path) { return access(path, F_OK) == 0; }

}  // namespace

bool ensure_tracefs(std::string* error) {
  if (exists(kDebugfsTracing)) return true;
  if (exists(kTracefsEvents)) return true;
  if (errno == EACCES) {
    // Mounted, but tracefs is root's (mode 0700): CAP_BPF and CAP_PERFMON
    // do not let a user read a tracepoint's id there.
    *error = std::string("the mmap tracepoint that launch mode and -a watch library loads with is found in "
                         "tracefs (") + kTracefs + "), which only root may read: run gpuprof as root for "
             "`-- CMD` and `-a`; with capabilities, start the command yourself and use -p PID (docs/privileges.md)";
    return false;
  }
  if (mount("nodev", kTracefs, "tracefs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) return true;
  // EBUSY: tracefs is already mounted there, by someone since the look above.
  if (errno == EBUSY && exists(kTracefsEvents)) return true;
  *error = std::string("the mmap tracepoint needs tracefs, which is not mounted, and mounting it at ") + kTracefs +
           " failed (" + std::strerror(errno) + "): mount it as root with `mount -t tracefs nodev " + kTracefs + "`";
  return false;
}

}  // namespace gpuprof

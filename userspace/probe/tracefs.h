// tracefs.h: the tracing filesystem that syscall tracepoints are attached
// through (libbpf reads a tracepoint's id from tracefs's events/ tree).
#pragma once

#include "base/result.h"

namespace gpuprof {

// Makes sure libbpf can find tracefs: succeeds when /sys/kernel/debug/tracing
// or /sys/kernel/tracing already shows the events, or once tracefs is
// mounted at /sys/kernel/tracing (systemd mounts it at boot; minimal VMs
// and containers may not, and perf mounts it the same way). Fails saying
// what to do when it is missing and cannot be mounted (no CAP_SYS_ADMIN,
// no tracefs in the kernel), or when this user may not read it (tracefs is
// root's: file capabilities are not enough).
Result<void> ensure_tracefs();

}  // namespace gpuprof

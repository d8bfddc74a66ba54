// privileges.h: may this gpuprof watch that process?
//
// gpuprof needs root, or the capabilities CAP_BPF and CAP_PERFMON (file
// capabilities on the binary: `setcap cap_bpf,cap_perfmon+ep gpuprof`).
// Capabilities must never become a way to watch other users' processes:
// unless the invoking (real) user is root, `-p PID` is refused when that
// user could not ptrace PID (docs/privileges.md).
#pragma once

#include <cstdint>
#include <string>

namespace gpuprof {

// "" when the process may load and attach gpuprof's BPF programs; otherwise
// one line saying what is missing and how to get it. `root_only` names the
// mode when only root can run it (launch mode, -a: tracefs is root's,
// docs/privileges.md): then setcap, which would not do, is not suggested.
std::string missing_privileges(const std::string& root_only = "");

// "" when the invoking user may watch `pid`: the real user is root, or the
// kernel's ptrace access check (PTRACE_MODE_ATTACH_REALCREDS, the check of
// `gdb -p` and of pidfd_getfd(2)) lets the real user in. Otherwise one line
// naming the target, its owner, the invoking user and why.
std::string ptrace_refusal(int pid);

// Effective capability bits 0..63 of this process (capget(2)).
uint64_t effective_capabilities();

}  // namespace gpuprof

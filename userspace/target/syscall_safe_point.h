// syscall_safe_point.h: one thread of a process, held by ptrace at the
// entry of a blocking system call, where running other code is safe.
//
// A thread stopped at an arbitrary instruction may hold a lock that the
// code gpuprof makes it run needs (malloc's, inside malloc): that code would
// wait for itself forever. A thread about to block in read, poll, a futex
// wait, a sleep... holds none of the C library's locks it is not waiting
// for (docs/injection.md says what is left). Every thread of the process is
// seized (PTRACE_SEIZE: no signal is sent, the process sees no stop) and
// runs on under PTRACE_SYSCALL until one enters such a call; that one is
// held, the others are let go at once. Threads blocked in a call when the
// search starts are interrupted: the kernel restarts their call, which
// enters again and is seen.
//
// Never PTRACE_O_EXITKILL: if gpuprof dies, the kernel lets every thread go.
#pragma once

#include <sys/user.h>

#include <chrono>
#include <cstdint>
#include <string>

#include "base/result.h"

namespace gpuprof {

// Stopped by ptrace at the entry of `syscall_number`, until released.
struct HeldThread {
  int pid = 0, tid = 0;
  uint64_t syscall_number = 0;
  user_regs_struct registers{};  // at the entry stop
};

// Whether gpuprof's injection stops a thread at this call (x86-64 numbers;
// futex only for its wait operations, `futex_op` its second argument).
bool is_blocking_syscall(uint64_t number, uint64_t futex_op);

// The held thread, or why none: ptrace refused (the reason in words: another
// tracer, Yama's ptrace_scope, missing CAP_SYS_PTRACE), the process stopped
// or gone, or no thread entered a blocking call within `timeout`.
Result<HeldThread> hold_thread_at_blocking_syscall(int pid, std::chrono::milliseconds timeout);

// The held thread runs from these registers once let go.
Result<void> set_thread_registers(const HeldThread& thread, const user_regs_struct& registers);
// Lets the held thread go.
Result<void> release_thread(const HeldThread& thread);

// "" when /proc/PID/status shows nothing that stops gpuprof from tracing
// the process, else why (another tracer, a stopped or exiting process).
std::string ptrace_obstacle(int pid);

// A field of /proc/PID/status ("TracerPid", "Seccomp"), "" when absent.
std::string process_status_field(int pid, const std::string& field);

}  // namespace gpuprof

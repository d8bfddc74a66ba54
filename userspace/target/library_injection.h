// library_injection.h: a shared library loaded into a running process that
// was not started with it, and one of its functions called, with no change
// the process can see afterwards (docs/injection.md).
//
// One thread is held at the entry of a blocking system call
// (syscall_safe_point.h), a trampoline is written into a code cave
// (code_cave.h) and a frame onto that thread's stack
// (library_load_trampoline.h), and the thread is let go running the
// trampoline: it calls the C library's own dlopen and dlsym, the function,
// restores itself and makes its system call. From the moment its registers
// change it needs nothing from gpuprof: SIGKILL of gpuprof at any step
// leaves the process whole (before that moment nothing it runs changed).
//
// Refused, with the reason: a process gpuprof may not ptrace (another
// tracer, Yama, privileges), under a seccomp filter (the loading's own
// system calls could be forbidden, and a filter may kill for that), not
// x86-64, stopped, or whose C library has no dlopen (glibc before 2.34).
#pragma once

#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace gpuprof {

struct LibraryInjection {
  std::string library_path;  // as the target opens it (its root, its mount namespace)
  std::string function;      // called with no argument once loaded
  std::chrono::milliseconds safe_point_timeout{5000};
  // Called as each step begins ("hold", "write", "registers", "release"): progress, and the
  // tests' hook that stops gpuprof there to SIGKILL it.
  std::function<void(std::string_view step)> at_step;
};

// "" when the process may be injected as far as gpuprof can tell without
// touching it, else why not.
std::string injection_obstacle(int pid);

// Returns once the thread runs the trampoline: the library is loaded and
// the function called shortly after, by the target itself (the caller
// watches for what the function does).
Result<void> inject_library(int pid, const LibraryInjection& request);

}  // namespace gpuprof

// no_threads.h: runs a check in a child process that can make no thread
// (an unprivileged user at a process limit of 0, as under a pids limit), for
// the code that falls back to working in turn when std::thread throws.
// Needs root, as the unit tests run (to drop to nobody); the check's
// failure, or a crash, comes back as the child's exit status.
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <system_error>
#include <thread>

namespace gpuprof::no_threads {

// The child's exit status: 0 when `check` returned true there, 1 when it
// returned false, 2 when it threw; 3 when a thread could still be made
// (the set-up failed); 4 when it could not drop privileges.
inline int run_without_threads(const std::function<bool()>& check) {
  const pid_t child = fork();
  if (child == 0) {
    const rlimit none{0, 0};
    if (setgid(65534) != 0 || setuid(65534) != 0 || setrlimit(RLIMIT_NPROC, &none) != 0) _exit(4);
    try {
      std::thread([] {}).join();
      _exit(3);
    } catch (const std::system_error&) {
    }
    // Nothing may leave the child but its status: an exception that
    // reached the test framework would run the other tests here.
    bool ok = false;
    try {
      ok = check();
    } catch (...) {
      _exit(2);
    }
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace gpuprof::no_threads

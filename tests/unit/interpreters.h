// interpreters.h: the CPython interpreters of this kind of machine that the
// live tests run against. Debian's /usr/bin/python3 (3.11, with torch) comes
// from the project's setup; the pyenv builds under /root/.pyenv/versions
// come with the machine's image. A missing one makes its test fail (an empty
// path), never skip.
#pragma once

#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <system_error>

namespace gpuprof::testing_support {

inline constexpr const char* kDebianPython = "/usr/bin/python3";

// The newest pyenv CPython 3.`minor` (bin/python3), or "" when there is none.
inline std::string pyenv_python(int minor) {
  std::string found;
  int best_micro = -1;
  std::error_code error;
  const std::string prefix = "3." + std::to_string(minor) + ".";
  for (const auto& entry : std::filesystem::directory_iterator("/root/.pyenv/versions", error)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(prefix)) continue;
    const int micro = std::atoi(name.c_str() + prefix.size());
    if (micro > best_micro) {
      best_micro = micro;
      found = (entry.path() / "bin" / "python3").string();
    }
  }
  return found;
}

// Starts `python script` with its stdout on a pipe (UTF-8, whatever the
// locale); *out reads it (the caller fcloses it). The pid, or -1 (and *out
// nullptr) when the pipe or fork failed.
inline pid_t start_python_script(const std::string& python, const std::string& script, FILE** out) {
  *out = nullptr;
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    setenv("PYTHONIOENCODING", "utf-8", 1);
    execl(python.c_str(), python.c_str(), script.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  *out = fdopen(fds[0], "r");
  return pid;
}

}  // namespace gpuprof::testing_support

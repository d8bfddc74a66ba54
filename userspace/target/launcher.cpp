#include "target/launcher.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace gpuprof {

Result<LaunchedCommand> LaunchedCommand::spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return Error("no command given after --");
  int gate[2], exec_error[2];
  if (pipe2(gate, O_CLOEXEC) != 0 || pipe2(exec_error, O_CLOEXEC) != 0)
    return Error(std::string("pipe: ") + std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args.push_back(nullptr);

  pid_t pid = fork();
  if (pid < 0) return Error(std::string("fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: only async-signal-safe calls from here on.
    close(gate[1]);
    close(exec_error[0]);
    char byte;
    while (read(gate[0], &byte, 1) < 0 && errno == EINTR) {
    }
    // gpuprof blocks the signals it handles through signalfd; CMD must get
    // the default mask and dispositions.
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    execvp(args[0], args.data());
    int err = errno;
    (void)!write(exec_error[1], &err, sizeof(err));
    _exit(127);
  }
  close(gate[0]);
  close(exec_error[1]);
  LaunchedCommand launched;
  launched.pid_ = pid;
  launched.gate_fd_ = gate[1];
  launched.exec_error_fd_ = exec_error[0];
  launched.command_ = argv[0];
  return launched;
}

LaunchedCommand::LaunchedCommand(LaunchedCommand&& other) noexcept
    : pid_(other.pid_), gate_fd_(other.gate_fd_), exec_error_fd_(other.exec_error_fd_),
      command_(std::move(other.command_)) {
  other.pid_ = other.gate_fd_ = other.exec_error_fd_ = -1;
}

LaunchedCommand::~LaunchedCommand() {
  // Never leave a child waiting at the gate: closing it lets it run.
  if (gate_fd_ >= 0) close(gate_fd_);
  if (exec_error_fd_ >= 0) close(exec_error_fd_);
}

void LaunchedCommand::abandon() {
  if (gate_fd_ < 0) return;
  kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  close(gate_fd_);
  gate_fd_ = -1;
}

Result<void> LaunchedCommand::start() {
  close(gate_fd_);
  gate_fd_ = -1;
  int err = 0;
  ssize_t n;
  while ((n = read(exec_error_fd_, &err, sizeof(err))) < 0 && errno == EINTR) {
  }
  close(exec_error_fd_);
  exec_error_fd_ = -1;
  if (n == static_cast<ssize_t>(sizeof(err))) {
    waitpid(pid_, nullptr, 0);
    return Error("cannot start '" + command_ + "': " + std::strerror(err));
  }
  return {};
}

}  // namespace gpuprof

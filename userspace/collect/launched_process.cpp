#include "collect/launched_process.h"

#include <signal.h>
#include <sys/wait.h>

namespace gpuprof {

std::optional<ChildEvent> LaunchedProcess::next_event() {
  int status;
  while (waitpid(pid_, &status, WNOHANG | WUNTRACED) > 0) {
    if (WIFSTOPPED(status)) return ChildEvent{ChildEvent::Kind::stopped, WSTOPSIG(status)};
    if (WIFEXITED(status)) return ChildEvent{ChildEvent::Kind::exited, WEXITSTATUS(status)};
    if (WIFSIGNALED(status)) return ChildEvent{ChildEvent::Kind::killed, WTERMSIG(status)};
  }
  return std::nullopt;
}

void LaunchedProcess::resume() { kill(pid_, SIGCONT); }

}  // namespace gpuprof

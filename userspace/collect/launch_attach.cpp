#include "collect/launch_attach.h"

#include <cstdio>
#include <cstring>

namespace gpuprof {

void LaunchAttach::on_child_state() {
  while (auto event = target_.next_event()) {
    if (event->kind == ChildEvent::Kind::stopped) {
      if (!target_.take_watch_stop()) continue;  // someone else's stop (Ctrl-Z): not ours to undo
      on_stop();
      continue;
    }
    exited_ = true;
    if (event->kind == ChildEvent::Kind::exited)
      std::fprintf(stderr, "gpuprof: %d exited with status %d\n", target_.pid(), event->value);
    else
      std::fprintf(stderr, "gpuprof: %d was killed by signal %d (%s)\n", target_.pid(), event->value,
                   strsignal(event->value));
    diagnostics_.stop("target exited");
  }
}

// Our SIGSTOP: the child has just mapped libtorch_cpu (or, later, a library
// a collector waits for). Attach, then always let it go, whatever happened.
void LaunchAttach::on_stop() {
  if (collectors_.attached()) {
    collectors_.attach_late();
  } else if (auto library = target_.find_library("libtorch_cpu")) {
    collectors_.attach_ops(*library);
  } else if (!library.unreadable.empty()) {
    diagnostics_.fail(library.unreadable);
  } else {
    diagnostics_.fail("the launched command mapped a libtorch_cpu that /proc does not show");
  }
  // The loader may map libc10 and libcudart after libtorch_cpu, and the
  // CUDA driver maps the shim at cuInit: stop there too, one at a time.
  // One mapped already was attached above.
  if (collectors_.attached())
    if (std::string next = collectors_.next_stop(); !next.empty()) target_.arm(next);
  target_.resume();
  if (diagnostics_.failed()) diagnostics_.stop("error");
}

std::string LaunchAttach::unattached_error(const std::string& command, const std::string& stop_reason) const {
  if (exited_) return command + " exited without loading libtorch_cpu: nothing was profiled";
  return "stopped (" + stop_reason + ") before " + command + " loaded libtorch_cpu: nothing was profiled";
}

}  // namespace gpuprof

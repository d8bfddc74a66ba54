#include "base/session_loop.h"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <cmath>

namespace gpuprof {

SignalGuard::SignalGuard(std::initializer_list<int> signals) {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : signals) sigaddset(&set, sig);
  sigprocmask(SIG_BLOCK, &set, &old_);
  fd_.reset(signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK));
}

SignalGuard::~SignalGuard() {
  // A signal that came while the session was already stopping (a Ctrl-C as
  // the target exits) asked for what is done: taken here, not left pending
  // to kill gpuprof the moment the old mask is back.
  if (fd_.get() >= 0) {
    signalfd_siginfo info;
    while (read(fd_.get(), &info, sizeof(info)) == sizeof(info)) {
    }
  }
  sigprocmask(SIG_SETMASK, &old_, nullptr);
}

UniqueFd duration_timer(double seconds) {
  UniqueFd timer;
  if (seconds <= 0) return timer;
  timer.reset(timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK));
  itimerspec spec = {};
  double whole;
  spec.it_value.tv_nsec = static_cast<long>(std::modf(seconds, &whole) * 1e9);
  spec.it_value.tv_sec = static_cast<time_t>(whole);
  timerfd_settime(timer.get(), 0, &spec, nullptr);
  return timer;
}

void epoll_watch(int epoll_fd, int fd) {
  if (fd < 0) return;
  epoll_event ev = {};
  ev.events = EPOLLIN;
  ev.data.fd = fd;
  epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
}

}  // namespace gpuprof

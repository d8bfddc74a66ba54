// session_loop.h: the pieces of the recording session's event loop
// (collect/session.cpp): the clock, the signals read through a signalfd,
// the -d timer, epoll.
#pragma once

#include <signal.h>
#include <time.h>

#include <cstdint>
#include <initializer_list>

#include "base/unique_fd.h"

namespace gpuprof {

inline uint64_t clock_ns(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Blocks `signals` while the session reads them through fd(), and restores
// the previous mask when it ends (so that a second Ctrl-C while waiting for
// a launched command kills gpuprof, not the command); what arrived and was
// not read by then is discarded first, never delivered late.
class SignalGuard {
 public:
  explicit SignalGuard(std::initializer_list<int> signals);
  ~SignalGuard();
  SignalGuard(const SignalGuard&) = delete;
  SignalGuard& operator=(const SignalGuard&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t old_;
  UniqueFd fd_;
};

// A timerfd that fires once, `seconds` from now (-d); an empty fd for 0.
UniqueFd duration_timer(double seconds);

// Adds fd (when >= 0) to the epoll set, readable.
void epoll_watch(int epoll_fd, int fd);

}  // namespace gpuprof

// retry_every.h: "look again at most every 100 ms" (or another period): the
// polls for things a target maps or sets up late (libcudart, the CUPTI
// shim, the interpreter), which read /proc or ELF files and must not do so
// on every turn of the session's loop.
#pragma once

#include <time.h>

#include <cstdint>

#include "base/session_loop.h"

namespace gpuprof {

class RetryEvery {
 public:
  explicit RetryEvery(uint64_t period_ns = 100'000'000) : period_ns_(period_ns) {}
  // True when the last try was a period ago or more (or `now` forces it);
  // then counts as a try.
  bool due(bool now = false) {
    const uint64_t t = clock_ns(CLOCK_MONOTONIC);
    if (!now && t - last_ns_ < period_ns_) return false;
    last_ns_ = t;
    return true;
  }

 private:
  uint64_t period_ns_;
  uint64_t last_ns_ = 0;
};

}  // namespace gpuprof

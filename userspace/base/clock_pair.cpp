// clock_pair.cpp: see clock_pair.h.
#include "base/clock_pair.h"

#include "base/session_loop.h"

namespace gpuprof {

ClockPair read_clock_pair(const std::function<uint64_t(clockid_t)>& read, int tries) {
  ClockPair best;
  for (int i = 0; i < tries; ++i) {
    const uint64_t before = read(CLOCK_MONOTONIC);
    const uint64_t realtime = read(CLOCK_REALTIME);
    const uint64_t after = read(CLOCK_MONOTONIC);
    const uint64_t bracket = after - before;
    if (i == 0 || bracket < best.bracket_ns)
      best = {.monotonic_ns = before + bracket / 2, .realtime_ns = realtime, .bracket_ns = bracket};
  }
  return best;
}

ClockPair clock_pair_now() {
  return read_clock_pair([](clockid_t clock) { return clock_ns(clock); });
}

}  // namespace gpuprof

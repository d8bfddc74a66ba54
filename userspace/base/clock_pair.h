// clock_pair.h: the CLOCK_MONOTONIC and CLOCK_REALTIME instants of one
// moment, as a recording's CLOCK chunk keeps them to place its timeline on
// wall-clock time (report A B ... --chrome-trace aligns ranks by them,
// docs/chrome-trace.md).
//
// Two clock_gettime calls in a row are not one moment: on a loaded machine
// the thread can be preempted between them (a VM's vCPU descheduled), and
// the realtime read then lands tens or hundreds of microseconds late. Two
// ranks recorded on one host then disagree on their offset by that much,
// and a rank's all-reduce shows up ending before the other rank issued it.
// So the realtime read is bracketed by two monotonic reads, a few times, and
// the tightest bracket's midpoint is taken: the pair is then exact to half
// that bracket (tens of nanoseconds when the reads ran uninterrupted).
#pragma once

#include <time.h>

#include <cstdint>
#include <functional>

namespace gpuprof {

struct ClockPair {
  uint64_t monotonic_ns = 0;
  uint64_t realtime_ns = 0;
  uint64_t bracket_ns = 0;  // how far apart the monotonic reads around realtime_ns were
};

inline constexpr int kClockPairTries = 8;

// `read` is clock_gettime in nanoseconds; tests script it.
ClockPair read_clock_pair(const std::function<uint64_t(clockid_t)>& read, int tries = kClockPairTries);

// The pair now, from the system's clocks.
ClockPair clock_pair_now();

}  // namespace gpuprof

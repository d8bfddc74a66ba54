// timeline_counters.h: the honesty counters of an op timeline (op_timeline.h)
// that every output built from it reports under its table or on stderr: one
// struct, so that a timeline, its stack sums, the folded stacks and the
// profile carry them alike and add them up in one place.
#pragma once

#include <cstdint>

namespace gpuprof {

struct TimelineCounters {
  uint64_t calls_unwound = 0;        // calls ended by exception unwinding (counted; their end is the catch)
  uint64_t exits_without_entry = 0;  // EXITs matching no open frame: ops already running when recording began
  uint64_t calls_open_at_end = 0;    // frames still open after the last event (not counted)
  // Compensation (op_timeline.h): calls whose probe time exceeded their
  // duration (compensated to 0). Many mean the calibration overestimates.
  uint64_t calls_shorter_than_probes = 0;

  TimelineCounters& operator+=(const TimelineCounters& other) {
    calls_unwound += other.calls_unwound;
    exits_without_entry += other.exits_without_entry;
    calls_open_at_end += other.calls_open_at_end;
    calls_shorter_than_probes += other.calls_shorter_than_probes;
    return *this;
  }
  bool operator==(const TimelineCounters&) const = default;
};

}  // namespace gpuprof

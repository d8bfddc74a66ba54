// progress_line.h: what `gpuprof record` shows on its terminal while it
// records (docs/record.md): one line, redrawn about once a second, from the
// counters the session keeps anyway (nothing is counted for it on the
// events' path):
//
//   gpuprof: 12s, 48210 ops/s, 1204331 events, 1188 samples, 3402 GPU records, 14.2 MB, 0 lost
//
// Samples show with -F, GPU records once the target has the CUPTI shim.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace gpuprof {

class StatusLine;

struct ProgressCounters {
  uint64_t now_ns = 0;        // CLOCK_MONOTONIC
  uint64_t op_calls = 0;      // op entries recorded (the ops/s)
  uint64_t events = 0;        // events recorded (the stop line's count)
  std::optional<uint64_t> samples;      // -F
  std::optional<uint64_t> gpu_records;  // the shim's GPU activities
  uint64_t bytes_written = 0;  // record file bytes
  uint64_t lost = 0;           // events, samples, launches, GPU records lost, together
};

// The figures a session counts itself (samples: with -F only); the
// losses, which its BPF programs count, are added by the session.
inline ProgressCounters progress_figures(uint64_t now_ns, uint64_t op_calls, uint64_t events,
                                         std::optional<uint64_t> samples, uint64_t bytes_written) {
  ProgressCounters counters;
  counters.now_ns = now_ns;
  counters.op_calls = op_calls;
  counters.events = events;
  counters.samples = samples;
  counters.bytes_written = bytes_written;
  return counters;
}

// The line for `now`; ops/s over the time since `before` (the previous
// line's counters; none: since the start).
std::string format_progress_line(const ProgressCounters& now, const ProgressCounters& before,
                                  uint64_t start_ns);

// The line on stderr while a session records; inert when stderr is not a
// terminal or the user asked for quiet (-q).
class RecordProgress {
 public:
  RecordProgress(bool wanted, uint64_t start_ns);
  ~RecordProgress();
  // Redraws the line when a second has passed since the last one.
  void tick(const ProgressCounters& now);
  // Draws the final counts at once (the stop line that follows erases them).
  void last(const ProgressCounters& now);
  bool active() const { return line_ != nullptr; }

 private:
  std::unique_ptr<StatusLine> line_;
  uint64_t start_ns_;
  ProgressCounters shown_;
};

}  // namespace gpuprof

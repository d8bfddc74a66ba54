// output_switcher.h: when the session's record files open and close.
//
// Two things switch files during a recording:
//   - a schedule (record --schedule, schedule.h) with --on-cycle: each cycle
//     of recorded steps gets a record file of its own, opened when its
//     first step starts and closed when the step after its last one starts
//     (or the recording stops: torch saves a cycle cut short at exit too);
//   - rotation (record --rotate SIZE|SECONDS --keep N): the main file is
//     closed once it holds SIZE bytes or SECONDS of recording and the next
//     one (PATH.2, PATH.3, ...) opened; with --keep, older files beyond the
//     last N are deleted, so the disk used stays bounded.
// It also answers, for the records that BPF cannot gate (CPU samples, CUDA
// launches, CUPTI records: other BPF programs or the shim), whether their
// time falls in a recorded step.
//
// With a schedule, each cycle's recorded steps are a window; where a window
// ends (op mode: at the step event that ends the cycle; time mode: at the
// end of its last step, known once a record of a later cycle arrives, or
// kCycleGraceNs after it), a CUT event (bpf/op_tracer_abi.h) goes into every open file
// before the cycle's file is closed: the calls still running end there in
// the main file and in the cycle's file alike (op_timeline.h), as
// torch.profiler ends its ranges when its active steps end, instead of
// waiting for exits that the unrecorded steps drop.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "base/result.h"
#include "op_tracer_abi.h"
#include "record/record_outputs.h"

namespace gpuprof {

struct OutputPlan {
  std::string main_path;   // "": no main file (--on-cycle alone)
  uint64_t rotate_bytes = 0;  // --rotate SIZE (0: not by size)
  uint64_t rotate_ns = 0;     // --rotate SECONDS (0: not by time)
  uint32_t keep = 0;          // --keep N: rotated files kept (0: all)
  gp_schedule schedule = {};  // mode GP_SCHEDULE_OFF: no schedule
  // --on-cycle: the record file for cycle N (null: no per-cycle files), and
  // what to do once it is complete (steps first..last were recorded in it).
  std::function<std::string(int64_t cycle)> cycle_path;
  std::function<void(const std::string& path, int64_t cycle, int64_t first_step, int64_t last_step)> cycle_done;
};

// --rotate LIMIT: a size ("512K", "100M", "2G": KiB, MiB, GiB) sets
// *bytes, seconds ("3600", "30s", "10m", "1h") set *ns. An error for
// anything else.
Result<void> parse_rotation(const std::string& text, uint64_t* bytes, uint64_t* ns);

// The name of rotated file n (1, 2, ...): PATH with ".n" appended.
std::string rotated_path(const std::string& main_path, uint64_t n);

class OutputSwitcher {
 public:
  OutputSwitcher(OutputPlan plan, RecordOutputs outputs);

  // Opens the main file (the first rotated one with --rotate).
  Result<void> begin(uint64_t now_ns, const RecordStats& counters);
  RecordOutputs& outputs() { return outputs_; }
  // Time-mode schedules: step 0 starts now (when the tracing starts).
  void start_time_steps(uint64_t start_ns) { plan_.schedule.start_ns = start_ns; }

  // Op-mode schedules: a STEP event (bpf/op_tracer_abi.h) is about to be appended.
  // Closes the cycle it ends, opens the one it starts.
  Result<void> on_step(const gp_event& step, const RecordStats& counters);
  // Time-mode schedules: a record stamped ts_ns is about to be appended;
  // switches cycle files when it belongs to another cycle.
  // counters_now: called only when a file closes or opens.
  Result<void> before_record(uint64_t ts_ns, const std::function<RecordStats()>& counters_now);
  // Whether a record stamped ts_ns falls into a recorded step (true without
  // a schedule). Op mode knows the steps from the STEP events read so far.
  bool recorded_at(uint64_t ts_ns) const;
  // Rotation, and time-mode cycles that ended; every turn of the loop.
  Result<void> tick(uint64_t now_ns, const RecordStats& counters);
  // Closes everything (a cycle in progress is saved as it is).
  Result<void> finish(const RecordStats& counters, uint64_t end_ns);

  uint64_t files_rotated() const { return rotations_; }
  uint64_t cycles_saved() const { return cycles_saved_; }
  uint64_t cuts() const { return cuts_; }

 private:
  int64_t step_at(uint64_t ts_ns) const;  // time mode; -1 before the start
  int64_t first_step(int64_t cycle) const;  // time mode
  uint64_t window_end_ns() const;           // time mode: the end of window_'s last step
  Result<void> open_window(int64_t cycle, int64_t step, uint64_t start_ns, const RecordStats& counters);
  Result<void> end_window(uint64_t end_ns, const RecordStats& counters);
  Result<void> next_time_window(const RecordStats& counters, bool end_it);
  Result<void> close_cycle(const RecordStats& counters, uint64_t end_ns);

  OutputPlan plan_;
  RecordOutputs outputs_;
  uint64_t rotation_ = 1;  // number of the main file open now (with --rotate)
  uint64_t rotations_ = 0;
  int64_t window_ = -1;       // the cycle whose window records are written into (-1: none)
  bool window_cut_ = false;  // its CUT is written
  int64_t open_cycle_ = -1;  // cycle whose file is open
  int64_t cycle_first_step_ = -1, cycle_last_step_ = -1;
  uint64_t cycles_saved_ = 0;
  uint64_t cuts_ = 0;
  // Op mode: (start time, recorded) of the latest steps, oldest first.
  std::deque<std::pair<uint64_t, bool>> steps_;
};

}  // namespace gpuprof

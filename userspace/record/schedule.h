// schedule.h: record --schedule, torch.profiler.schedule for a process whose
// code we cannot touch.
//
// torch's schedule(skip_first, wait, warmup, active, repeat) decides per
// step whether the profiler records; the user's loop marks steps with
// prof.step(). gpuprof marks them itself: a step starts at each call of a
// step op (--step-op NAME, e.g. the optimizer's foreach op), or every
// --step-time seconds. The decision is taken in BPF (bpf/op_tracer_abi.h,
// gp_schedule_action, shared with this file), so steps that are not
// recorded cost one probe hit per event and no ring-buffer traffic.
//
// Cycles: a cycle is the run of RECORD steps ending with its
// RECORD_AND_SAVE step (torch's on_trace_ready fires then); cycle numbers
// count from 0 like torch's repeats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "op_tracer_abi.h"

namespace gpuprof {

// The op of step frames in the op table (torch's key_averages name for its
// ProfilerStep#N ranges); traces name each frame ProfilerStep#N.
inline constexpr std::string_view kProfilerStepOp = "ProfilerStep*";

// Parses "skip_first=S,wait=W,warmup=U,active=A,repeat=R" (any order, any
// subset but active; defaults 0; active >= 1), or an error saying what is
// wrong. The result has mode GP_SCHEDULE_OFF: the caller sets the mode and
// step fields.
Result<gp_schedule> parse_schedule(const std::string& text);

// "skip_first=0,wait=1,warmup=1,active=3,repeat=2"
std::string format_schedule(const gp_schedule& schedule);

inline bool step_recorded(const gp_schedule& schedule, int64_t step) {
  return gp_schedule_action(&schedule, step) >= GP_ACTION_RECORD;
}

// The cycle a recorded step belongs to (0 for the first); -1 for a step
// that is not recorded.
int64_t cycle_of_step(const gp_schedule& schedule, int64_t step);

// Whether the schedule can record any more step after `step` (false after
// the last repeat).
bool schedule_records_after(const gp_schedule& schedule, int64_t step);

}  // namespace gpuprof

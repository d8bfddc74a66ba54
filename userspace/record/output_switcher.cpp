#include "record/output_switcher.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

#include "record/schedule.h"

namespace gpuprof {
namespace {

// Op-mode step starts remembered for recorded_at(): samples and launches
// arrive within a few hundred ms of their time, far fewer steps than this.
constexpr size_t kStepsRemembered = 4096;
// A time-mode cycle closes when a record of a later cycle arrives, or this
// long after its end when none does (the target went quiet): records stamped
// before the end may still be on their way through the ring buffers, far
// behind when the collector has a backlog.
constexpr uint64_t kCycleGraceNs = 2'000'000'000;

}  // namespace

Result<void> parse_rotation(const std::string& text, uint64_t* bytes, uint64_t* ns) {
  size_t used = 0;
  double value = -1;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = used ? text.substr(used) : "";
  struct Unit {
    const char* name;
    double scale;
    bool size;
  };
  // A bare number is seconds (--rotate SIZE|SECONDS); sizes carry a unit.
  static constexpr Unit kUnits[] = {{"K", 1024.0, true}, {"M", 1048576.0, true}, {"G", 1073741824.0, true},
                                    {"", 1e9, false},    {"s", 1e9, false},     {"m", 60e9, false},
                                    {"h", 3600e9, false}};
  for (const Unit& u : kUnits) {
    if (unit != u.name || !(value > 0)) continue;
    const double amount = value * u.scale;
    if (amount > 1e18 || (u.size && amount < 65536) || (!u.size && amount < 1e8)) break;
    (u.size ? *bytes : *ns) = static_cast<uint64_t>(amount);
    return {};
  }
  return Error("--rotate " + text + ": give a size (64K and up: 512K, 100M, 2G) or seconds (0.1 and up: 3600, 30s, "
               "10m, 1h)");
}

std::string rotated_path(const std::string& main_path, uint64_t n) {
  return main_path + "." + std::to_string(n);
}

OutputSwitcher::OutputSwitcher(OutputPlan plan, RecordOutputs outputs)
    : plan_(std::move(plan)), outputs_(std::move(outputs)) {}

Result<void> OutputSwitcher::begin(uint64_t now_ns, const RecordStats& counters) {
  if (plan_.main_path.empty()) return {};
  const bool rotating = plan_.rotate_bytes || plan_.rotate_ns;
  return outputs_.open(RecordOutputs::kMain, rotating ? rotated_path(plan_.main_path, 1) : plan_.main_path,
                       now_ns, counters);
}

int64_t OutputSwitcher::step_at(uint64_t ts_ns) const {
  const gp_schedule& s = plan_.schedule;
  if (ts_ns < s.start_ns || s.step_ns == 0) return -1;
  return static_cast<int64_t>((ts_ns - s.start_ns) / s.step_ns);
}

Result<void> OutputSwitcher::open_window(int64_t cycle, int64_t step, uint64_t start_ns,
                                         const RecordStats& counters) {
  window_ = cycle;
  window_cut_ = false;
  cycle_first_step_ = cycle_last_step_ = step;
  if (!plan_.cycle_path) return {};
  RETURN_IF_ERROR(outputs_.open(RecordOutputs::kCycle, plan_.cycle_path(cycle), start_ns, counters));
  open_cycle_ = cycle;
  return {};
}

// The window's end: a CUT event (bpf/op_tracer_abi.h) in every open file, so that the
// calls still running end there in each of them alike, then the cycle's
// own file is closed.
Result<void> OutputSwitcher::end_window(uint64_t end_ns, const RecordStats& counters) {
  if (window_ < 0 || window_cut_) return {};
  window_cut_ = true;
  const gp_event cut{.ts_ns = end_ns, .sp = 0, .tid = 0, .pid = 0, .op_id = GP_NO_OP,
                     .kind = GP_EV_CUT, .payload_bytes = 0};
  RETURN_IF_ERROR(outputs_.append_events(&cut, 1));
  cuts_++;
  return close_cycle(counters, end_ns);
}

Result<void> OutputSwitcher::close_cycle(const RecordStats& counters, uint64_t end_ns) {
  if (open_cycle_ < 0) return {};
  const std::string path = outputs_.path(RecordOutputs::kCycle);
  const int64_t cycle = open_cycle_;
  open_cycle_ = -1;
  RETURN_IF_ERROR(outputs_.close(RecordOutputs::kCycle, counters, end_ns));
  cycles_saved_++;
  if (plan_.cycle_done) plan_.cycle_done(path, cycle, cycle_first_step_, cycle_last_step_);
  return {};
}

Result<void> OutputSwitcher::on_step(const gp_event& step, const RecordStats& counters) {
  const int64_t number = static_cast<int64_t>(step.sp);
  const int64_t cycle = cycle_of_step(plan_.schedule, number);
  steps_.emplace_back(step.ts_ns, cycle >= 0);
  if (steps_.size() > kStepsRemembered) steps_.pop_front();
  if (cycle == window_ && cycle >= 0) {
    cycle_last_step_ = number;
    return {};
  }
  // The step that ends a cycle ends its window (on every thread).
  RETURN_IF_ERROR(end_window(step.ts_ns, counters));
  if (cycle < 0) {
    window_ = -1;
    return {};
  }
  return open_window(cycle, number, step.ts_ns, counters);
}

// Time mode: cycle c records steps first_step(c) .. first_step(c) + active - 1.
int64_t OutputSwitcher::first_step(int64_t cycle) const {
  const gp_schedule& s = plan_.schedule;
  return static_cast<int64_t>(s.skip_first + static_cast<uint64_t>(cycle) * (s.wait + s.warmup + s.active) +
                              s.wait + s.warmup);
}

uint64_t OutputSwitcher::window_end_ns() const {
  const gp_schedule& s = plan_.schedule;
  return s.start_ns + static_cast<uint64_t>(first_step(window_) + static_cast<int64_t>(s.active)) * s.step_ns;
}

Result<void> OutputSwitcher::before_record(uint64_t ts_ns, const std::function<RecordStats()>& counters_now) {
  if (plan_.schedule.mode != GP_SCHEDULE_BY_TIME) return {};
  const int64_t step = step_at(ts_ns);
  const int64_t cycle = cycle_of_step(plan_.schedule, step);
  // Not recorded (a clock read racing a boundary), the window being
  // written, or a straggler of an earlier window (the timeline leaves out
  // what is stamped before a cut): nothing to switch.
  if (cycle < 0 || cycle <= window_) return {};
  const RecordStats counters = counters_now();
  // Cycles that passed with no record are written too (empty), then this one opens.
  while (window_ < cycle)
    RETURN_IF_ERROR(next_time_window(counters, /*end_it=*/window_ + 1 < cycle));
  return {};
}

// Ends the window in progress and opens the next cycle's, from its first
// step as the schedule has it; end_it: that cycle is over already (no
// record came in it), its window ends at once.
Result<void> OutputSwitcher::next_time_window(const RecordStats& counters, bool end_it) {
  const gp_schedule& s = plan_.schedule;
  if (window_ >= 0) RETURN_IF_ERROR(end_window(window_end_ns(), counters));
  const int64_t cycle = window_ + 1;
  const int64_t first = first_step(cycle);
  RETURN_IF_ERROR(open_window(cycle, first, s.start_ns + static_cast<uint64_t>(first) * s.step_ns, counters));
  cycle_last_step_ = first + static_cast<int64_t>(s.active) - 1;
  if (!end_it) return {};
  return end_window(window_end_ns(), counters);
}

bool OutputSwitcher::recorded_at(uint64_t ts_ns) const {
  switch (plan_.schedule.mode) {
    case GP_SCHEDULE_OFF: return true;
    case GP_SCHEDULE_BY_TIME: return step_recorded(plan_.schedule, step_at(ts_ns));
    default: break;
  }
  // The last step that started at or before ts_ns.
  auto after = std::upper_bound(steps_.begin(), steps_.end(), ts_ns,
                                [](uint64_t ts, const std::pair<uint64_t, bool>& s) { return ts < s.first; });
  return after != steps_.begin() && std::prev(after)->second;
}

Result<void> OutputSwitcher::tick(uint64_t now_ns, const RecordStats& counters) {
  // A time-mode window whose end passed long enough ago that its records
  // have all arrived (the target went quiet after it: no later record
  // switched): it ends now.
  if (plan_.schedule.mode == GP_SCHEDULE_BY_TIME && window_ >= 0 && !window_cut_ &&
      now_ns >= window_end_ns() + kCycleGraceNs) {
    RETURN_IF_ERROR(end_window(window_end_ns(), counters));
  }
  // Time-mode cycles come by the clock, as torch's on_trace_ready comes for
  // every cycle: one that began long enough ago with no record to open it
  // (the target called no op then) is opened now, and ended if it is over.
  while (plan_.schedule.mode == GP_SCHEDULE_BY_TIME && plan_.schedule.step_ns) {
    const gp_schedule& s = plan_.schedule;
    const int64_t next = window_ + 1;
    if (s.repeat && static_cast<uint64_t>(next) >= s.repeat) break;
    const uint64_t start = s.start_ns + static_cast<uint64_t>(first_step(next)) * s.step_ns;
    if (now_ns < start + kCycleGraceNs) break;
    const uint64_t end = start + s.active * s.step_ns;
    RETURN_IF_ERROR(next_time_window(counters, /*end_it=*/now_ns >= end + kCycleGraceNs));
  }
  if (!outputs_.is_open(RecordOutputs::kMain) || !(plan_.rotate_bytes || plan_.rotate_ns)) return {};
  const bool full = plan_.rotate_bytes && outputs_.bytes_written(RecordOutputs::kMain) >= plan_.rotate_bytes;
  const bool old = plan_.rotate_ns && now_ns - outputs_.opened_at_ns(RecordOutputs::kMain) >= plan_.rotate_ns;
  if (!full && !old) return {};
  RETURN_IF_ERROR(outputs_.close(RecordOutputs::kMain, counters, now_ns));
  rotation_++;
  rotations_++;
  RETURN_IF_ERROR(outputs_.open(RecordOutputs::kMain, rotated_path(plan_.main_path, rotation_), now_ns, counters));
  if (plan_.keep && rotation_ > plan_.keep) {
    const std::string gone = rotated_path(plan_.main_path, rotation_ - plan_.keep);
    if (unlink(gone.c_str()) != 0 && errno != ENOENT)
      std::fprintf(stderr, "gpuprof: warning: --keep: could not delete %s: %s\n", gone.c_str(), strerror(errno));
  }
  return {};
}

Result<void> OutputSwitcher::finish(const RecordStats& counters, uint64_t end_ns) {
  // A time-mode cycle whose steps are all over ends where they do; one cut
  // short by the stop (or any op-mode cycle) ends at the stop, its running
  // calls not counted, as anywhere else.
  if (plan_.schedule.mode == GP_SCHEDULE_BY_TIME && window_ >= 0 && !window_cut_) {
    if (end_ns >= window_end_ns()) {
      RETURN_IF_ERROR(end_window(window_end_ns(), counters));
    } else {
      cycle_last_step_ = std::min(cycle_last_step_, step_at(end_ns));
    }
  }
  // The main file is closed even when the cycle's file fails; the first error wins.
  Result<void> closed = close_cycle(counters, end_ns);
  Result<void> main_closed = outputs_.close(RecordOutputs::kMain, counters, end_ns);
  return closed ? main_closed : closed;
}

}  // namespace gpuprof

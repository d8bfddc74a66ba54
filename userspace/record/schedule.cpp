#include "record/schedule.h"

#include <charconv>
#include <string_view>

namespace gpuprof {
namespace {

// Bounds that keep gp_schedule_action's repeat * cycle product far from
// overflow (and no real loop has 2^31 steps per cycle).
constexpr uint64_t kMaxField = 1ull << 31;

}  // namespace

Result<gp_schedule> parse_schedule(const std::string& text) {
  gp_schedule schedule = {};
  bool have_active = false;
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos)
      return Error("--schedule: '" + std::string(item) + "' is not KEY=N (keys: skip_first, wait, warmup, active, repeat)");
    const std::string_view key = item.substr(0, eq), value = item.substr(eq + 1);
    uint64_t n = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (ec != std::errc() || end != value.data() + value.size() || n >= kMaxField)
      return Error("--schedule: " + std::string(key) + "=" + std::string(value) +
                   ": not a whole number from 0 to " + std::to_string(kMaxField - 1));
    if (key == "skip_first") schedule.skip_first = n;
    else if (key == "wait") schedule.wait = n;
    else if (key == "warmup") schedule.warmup = n;
    else if (key == "active") schedule.active = n, have_active = true;
    else if (key == "repeat") schedule.repeat = n;
    else {
      return Error("--schedule: unknown key '" + std::string(key) +
                   "' (keys: skip_first, wait, warmup, active, repeat)");
    }
  }
  if (!have_active || schedule.active == 0)
    return Error("--schedule: active=N (N >= 1) is required: the steps recorded per cycle");
  return schedule;
}

std::string format_schedule(const gp_schedule& s) {
  return "skip_first=" + std::to_string(s.skip_first) + ",wait=" + std::to_string(s.wait) +
         ",warmup=" + std::to_string(s.warmup) + ",active=" + std::to_string(s.active) +
         ",repeat=" + std::to_string(s.repeat);
}

int64_t cycle_of_step(const gp_schedule& s, int64_t step) {
  if (!step_recorded(s, step)) return -1;
  return static_cast<int64_t>((static_cast<uint64_t>(step) - s.skip_first) / (s.wait + s.warmup + s.active));
}

bool schedule_records_after(const gp_schedule& s, int64_t step) {
  if (s.repeat == 0) return true;
  const uint64_t cycle = s.wait + s.warmup + s.active;
  const uint64_t last_recorded = s.skip_first + s.repeat * cycle - 1;
  return step < 0 || static_cast<uint64_t>(step) < last_recorded;
}

}  // namespace gpuprof

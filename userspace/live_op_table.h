// live_op_table.h: per-op figures of a running job, interval by interval
// (gpuprof top).
//
// Fed the calls that completed since the last feed (TimelineBuilder::
// take_calls), it keeps one row per op name for the current interval and
// since the start: calls, self time and total time, torch.profiler's
// # of Calls, Self CPU and CPU total. Unlike the recorded table it does not
// fold a same-name only child into its parent (torch's _remove_dup_nodes):
// a live view shows calls as they complete.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "op_timeline.h"
#include "recording.h"

namespace gpuprof {

struct LiveOpRow {
  std::string name;
  uint64_t calls = 0;
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;
  bool operator==(const LiveOpRow&) const = default;
};

struct LiveInterval {
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  std::vector<LiveOpRow> rows;  // by name
  uint64_t calls = 0;
  uint64_t self_ns = 0;  // sum of the rows' self time
};

class LiveOpTable {
 public:
  explicit LiveOpTable(const std::vector<OpInfo>& ops) : ops_(ops) {}

  void add(const std::vector<OpCall>& calls);
  // Ends the interval at now_ns: returns it and starts the next one. The
  // first interval starts at the first roll's start_ns (begin()).
  LiveInterval roll(uint64_t now_ns);
  void begin(uint64_t now_ns) { interval_start_ns_ = since_ns_ = now_ns; }
  // Everything since begin(), up to the last roll.
  LiveInterval since_start() const;

 private:
  const std::string& name_of(uint32_t op_id);
  static std::vector<LiveOpRow> sorted_rows(const std::unordered_map<std::string, LiveOpRow>& rows);

  const std::vector<OpInfo>& ops_;
  std::deque<std::string> unknown_names_;  // "<unknown op N>" (a deque: references stay valid)
  std::unordered_map<std::string, LiveOpRow> current_, total_;
  uint64_t interval_start_ns_ = 0, since_ns_ = 0, last_roll_ns_ = 0;
};

}  // namespace gpuprof

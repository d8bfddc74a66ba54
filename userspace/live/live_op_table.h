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
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

struct LiveOpRow {
  std::string name;
  uint64_t calls = 0;
  uint64_t self_ns = 0;
  uint64_t total_ns = 0;
  uint64_t self_cuda_ns = 0;  // GPU time of what its calls launched themselves (the CUPTI shim)
  bool operator==(const LiveOpRow&) const = default;
};

struct LiveInterval {
  uint64_t start_ns = 0;  // CLOCK_MONOTONIC
  uint64_t end_ns = 0;
  std::vector<LiveOpRow> rows;  // by name
  uint64_t calls = 0;
  uint64_t self_ns = 0;  // sum of the rows' self time
  // GPU work that ended in the interval (the CUPTI shim): kernels, and the
  // time at least one activity (kernel, memcpy, memset) ran, per device,
  // summed over devices.
  uint64_t gpu_kernels = 0;
  uint64_t gpu_busy_ns = 0;
  uint32_t gpu_devices = 0;
};

class LiveOpTable {
 public:
  explicit LiveOpTable(const std::vector<OpInfo>& ops) : ops_(ops) {}

  void add(const std::vector<OpCall>& calls);
  // GPU time launched by a call of op_id (LiveGpuJoin's credits).
  void add_gpu_time(uint32_t op_id, uint64_t ns);
  // Every GPU activity, for the interval's busy time and count.
  void add_gpu_activity(const GpuActivity& activity);
  // Ends the interval at now_ns: returns it and starts the next one. The
  // first interval starts at the first roll's start_ns (begin()).
  LiveInterval roll(uint64_t now_ns);
  void begin(uint64_t now_ns) { interval_start_ns_ = since_ns_ = now_ns; }
  // Everything since begin(), up to the last roll.
  LiveInterval since_start() const;

 private:
  LiveOpRow& row_of(uint32_t op_id);  // in the current interval
  static std::vector<LiveOpRow> sorted_rows(const std::unordered_map<std::string, LiveOpRow>& rows);

  const std::vector<OpInfo>& ops_;
  std::unordered_map<std::string, LiveOpRow> current_, total_;
  std::unordered_map<uint32_t, std::vector<std::pair<uint64_t, uint64_t>>> gpu_spans_;  // device -> [start, end)
  uint64_t gpu_kernels_ = 0, total_gpu_kernels_ = 0, total_gpu_busy_ns_ = 0;
  uint32_t gpu_devices_seen_ = 0;
  uint64_t interval_start_ns_ = 0, since_ns_ = 0, last_roll_ns_ = 0;
};

}  // namespace gpuprof

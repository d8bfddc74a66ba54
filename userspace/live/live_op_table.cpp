// live_op_table.cpp: rows per op name, per interval and since the start.
#include "live/live_op_table.h"

#include <algorithm>

namespace gpuprof {

// Rows are found by name: overloads of one op share a row, as in the table.
LiveOpRow& LiveOpTable::row_of(uint32_t op_id) {
  if (op_id < ops_.size() && ops_[op_id].kind != OpKind::user_range) {  // no string built for most calls
    LiveOpRow& row = current_[ops_[op_id].name];
    if (row.name.empty()) row.name = ops_[op_id].name;
    return row;
  }
  const std::string name = op_table_name(ops_, op_id);
  LiveOpRow& row = current_[name];
  if (row.name.empty()) row.name = name;
  return row;
}

void LiveOpTable::add(const std::vector<OpCall>& calls) {
  for (const OpCall& call : calls) {
    LiveOpRow& row = row_of(call.op_id);
    row.calls++;
    row.self_ns += call.compensated_self_ns();
    row.total_ns += call.compensated_ns();
  }
}

void LiveOpTable::add_gpu_time(uint32_t op_id, uint64_t ns) { row_of(op_id).self_cuda_ns += ns; }

void LiveOpTable::add_gpu_activity(const GpuActivity& activity) {
  if (activity.kind == GpuActivityKind::kernel) ++gpu_kernels_;
  gpu_spans_[activity.device].push_back({activity.start_ns, std::max(activity.end_ns, activity.start_ns)});
}

namespace {

// The time covered by at least one span.
uint64_t covered_ns(std::vector<std::pair<uint64_t, uint64_t>>& spans) {
  std::sort(spans.begin(), spans.end());
  uint64_t covered = 0, until = 0;
  for (const auto& [start, end] : spans) {
    const uint64_t from = std::max(start, until);
    if (end > from) covered += end - from;
    until = std::max(until, end);
  }
  return covered;
}

// The interval's totals over its rows.
void sum_rows(LiveInterval& interval) {
  for (const LiveOpRow& row : interval.rows) {
    interval.calls += row.calls;
    interval.self_ns += row.self_ns;
  }
}

}  // namespace

std::vector<LiveOpRow> LiveOpTable::sorted_rows(const std::unordered_map<std::string, LiveOpRow>& rows) {
  std::vector<LiveOpRow> out;
  out.reserve(rows.size());
  for (const auto& [name, row] : rows) out.push_back(row);
  std::sort(out.begin(), out.end(), [](const LiveOpRow& a, const LiveOpRow& b) { return a.name < b.name; });
  return out;
}

LiveInterval LiveOpTable::roll(uint64_t now_ns) {
  LiveInterval out;
  out.start_ns = interval_start_ns_;
  out.end_ns = now_ns;
  out.rows = sorted_rows(current_);
  sum_rows(out);
  for (const LiveOpRow& row : out.rows) {
    LiveOpRow& total = total_[row.name];
    if (total.name.empty()) total.name = row.name;
    total.calls += row.calls;
    total.self_ns += row.self_ns;
    total.total_ns += row.total_ns;
    total.self_cuda_ns += row.self_cuda_ns;
  }
  current_.clear();
  out.gpu_kernels = gpu_kernels_;
  for (auto& [device, spans] : gpu_spans_) out.gpu_busy_ns += covered_ns(spans);
  out.gpu_devices = static_cast<uint32_t>(gpu_spans_.size());
  gpu_devices_seen_ = std::max(gpu_devices_seen_, out.gpu_devices);
  total_gpu_kernels_ += gpu_kernels_;
  total_gpu_busy_ns_ += out.gpu_busy_ns;
  gpu_kernels_ = 0;
  gpu_spans_.clear();
  interval_start_ns_ = last_roll_ns_ = now_ns;
  return out;
}

LiveInterval LiveOpTable::since_start() const {
  LiveInterval out;
  out.start_ns = since_ns_;
  out.end_ns = last_roll_ns_;
  out.rows = sorted_rows(total_);
  sum_rows(out);
  out.gpu_kernels = total_gpu_kernels_;
  out.gpu_busy_ns = total_gpu_busy_ns_;
  out.gpu_devices = gpu_devices_seen_;
  return out;
}

}  // namespace gpuprof

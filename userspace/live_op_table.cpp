// live_op_table.cpp: rows per op name, per interval and since the start.
#include "live_op_table.h"

#include <algorithm>

namespace gpuprof {

const std::string& LiveOpTable::name_of(uint32_t op_id) {
  if (op_id < ops_.size()) return ops_[op_id].name;
  unknown_names_.push_back("<unknown op " + std::to_string(op_id) + ">");
  return unknown_names_.back();
}

void LiveOpTable::add(const std::vector<OpCall>& calls) {
  for (const OpCall& call : calls) {
    const std::string& name = name_of(call.op_id);
    LiveOpRow& row = current_[name];
    if (row.calls == 0) row.name = name;
    row.calls++;
    row.self_ns += call.self_ns;
    row.total_ns += call.duration_ns();
  }
}

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
  for (const LiveOpRow& row : out.rows) {
    out.calls += row.calls;
    out.self_ns += row.self_ns;
    LiveOpRow& total = total_[row.name];
    if (total.calls == 0) total.name = row.name;
    total.calls += row.calls;
    total.self_ns += row.self_ns;
    total.total_ns += row.total_ns;
  }
  current_.clear();
  interval_start_ns_ = last_roll_ns_ = now_ns;
  return out;
}

LiveInterval LiveOpTable::since_start() const {
  LiveInterval out;
  out.start_ns = since_ns_;
  out.end_ns = last_roll_ns_;
  out.rows = sorted_rows(total_);
  for (const LiveOpRow& row : out.rows) {
    out.calls += row.calls;
    out.self_ns += row.self_ns;
  }
  return out;
}

}  // namespace gpuprof

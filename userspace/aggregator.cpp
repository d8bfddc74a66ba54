// aggregator.cpp: fold the timeline's calls into one row per op name.
#include "aggregator.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "op_timeline.h"

namespace gpuprof {
namespace {

// Maps op ids to rows, creating a row the first time an op name completes a
// call, so ops that never ran get none.
class RowIndex {
 public:
  RowIndex(const std::vector<OpInfo>& ops, std::vector<OpRow>& rows)
      : ops_(ops), rows_(rows), row_of_known_op_(ops.size(), kNoRow) {}

  OpRow& row_of(uint32_t op_id) {
    if (op_id < ops_.size()) {
      size_t& row = row_of_known_op_[op_id];
      if (row == kNoRow) row = row_named(ops_[op_id].name);
      return rows_[row];
    }
    return rows_[row_named("<unknown op " + std::to_string(op_id) + ">")];
  }

 private:
  static constexpr size_t kNoRow = static_cast<size_t>(-1);

  size_t row_named(const std::string& name) {
    auto [it, inserted] = row_of_name_.try_emplace(name, rows_.size());
    if (inserted) rows_.push_back(OpRow{.name = name});
    return it->second;
  }

  const std::vector<OpInfo>& ops_;
  std::vector<OpRow>& rows_;
  std::vector<size_t> row_of_known_op_;
  std::unordered_map<std::string, size_t> row_of_name_;
};

}  // namespace

Profile aggregate(const Recording& recording) {
  const Timeline timeline = build_timeline(recording.events);

  Profile profile;
  RowIndex index(recording.ops, profile.rows);
  for (const OpCall& call : timeline.calls) {
    OpRow& row = index.row_of(call.op_id);
    ++row.calls;
    row.cpu_total_ns += call.duration_ns();
    row.self_cpu_ns += call.self_ns;
    if (call.unwound) ++row.unwound_calls;
    profile.self_cpu_total_ns += call.self_ns;
  }
  std::sort(profile.rows.begin(), profile.rows.end(),
            [](const OpRow& a, const OpRow& b) { return a.name < b.name; });

  profile.calls_unwound = timeline.calls_unwound;
  profile.exits_without_entry = timeline.exits_without_entry;
  profile.calls_open_at_end = timeline.calls_open_at_end;
  profile.events_unknown_kind = timeline.events_unknown_kind;
  profile.events_lost = recording.stats.events_lost;
  profile.threads = timeline.threads;
  return profile;
}

}  // namespace gpuprof

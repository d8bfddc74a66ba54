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

  // torch.profiler's EventList._remove_dup_nodes: a call whose only child
  // has the same name absorbs it (aten::div_ calling aten::div_ is one row
  // entry, not two). The child's self time becomes the parent's, and the
  // child's children become the parent's, so chains fold all the way.
  // Children complete before parents, so one pass in completion order sees
  // every child already folded.
  const size_t n = timeline.calls.size();
  std::vector<uint64_t> self_ns(n);
  std::vector<uint32_t> child_count(timeline.child_count);
  std::vector<int64_t> only_child(timeline.only_child);
  std::vector<bool> folded(n, false);
  auto name_of = [&](uint32_t op_id) -> const std::string* {
    return op_id < recording.ops.size() ? &recording.ops[op_id].name : nullptr;
  };
  for (size_t i = 0; i < n; i++) {
    self_ns[i] = timeline.calls[i].self_ns;
    while (child_count[i] == 1 && only_child[i] >= 0) {
      const auto child = static_cast<size_t>(only_child[i]);
      const std::string* name = name_of(timeline.calls[i].op_id);
      if (!name || name_of(timeline.calls[child].op_id) == nullptr ||
          *name != *name_of(timeline.calls[child].op_id))
        break;
      folded[child] = true;
      self_ns[i] += self_ns[child];
      child_count[i] = child_count[child];
      only_child[i] = only_child[child];
    }
  }

  Profile profile;
  RowIndex index(recording.ops, profile.rows);
  for (size_t i = 0; i < n; i++) {
    if (folded[i]) continue;
    OpCall call = timeline.calls[i];
    call.self_ns = self_ns[i];
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

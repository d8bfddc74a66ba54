// streamed_aggregate.cpp: aggregate() as the events stream by.
#include "analyze/streamed_aggregate.h"

#include <algorithm>
#include <map>
#include <string>
#include <utility>

#include "analyze/aggregator.h"
#include "analyze/input_shapes.h"
#include "analyze/stack_groups.h"

namespace gpuprof {

StreamedAggregate::StreamedAggregate(const ProbeCosts* costs, bool raw_times, const TableGrouping& grouping)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      raw_times_(raw_times),
      grouping_(grouping),
      shapes_(grouping.by_input_shape, grouping.last_entry_shape),
      stacks_(grouping.by_stack_n > 0, grouping.last_entry_stack) {}

bool StreamedAggregate::wants(const Recording& head) {
  if (head.options.memory) return false;  // memory columns need every call at once
  ops_ = &head.ops;
  builder_.emplace(costs_ ? &*costs_ : nullptr, /*sibling_links=*/true);
  return true;
}

void StreamedAggregate::on_events(std::span<const gp_event> events, uint64_t first) {
  for (size_t i = 0; i < events.size(); i++) builder_->add(events[i], first + i);
  take_calls();
  if (grouped()) count_known_pairs(/*at_end=*/false);
}

bool StreamedAggregate::same_name(uint32_t a, uint32_t b) const {
  // fold_same_name_calls' rule: an op outside the table folds nothing.
  const std::vector<OpInfo>& ops = *ops_;
  return a < ops.size() && b < ops.size() && ops[a].name == ops[b].name;
}

void StreamedAggregate::count(const Folded& call) {
  if (grouped())
    wait(call, true);
  else
    add_to_row(call, std::nullopt, std::nullopt);
}

void StreamedAggregate::wait(const Folded& call, bool counted) {
  waiting_.push_back({call, counted});
  earliest_waiting_ = std::min(earliest_waiting_, call.entry_index);
}

void StreamedAggregate::count_known_pairs(bool at_end) {
  // Known through an entry is known through every earlier one: nothing
  // waiting is known unless its earliest entry is.
  auto known = [this](uint64_t entry) { return shapes_.known_through(entry) && stacks_.known_through(entry); };
  if (waiting_.empty() || (!at_end && !known(earliest_waiting_))) return;
  size_t still = 0;
  uint64_t earliest = UINT64_MAX;
  for (const Waiting& waiting : waiting_) {
    const uint64_t entry = waiting.call.entry_index;
    if (!at_end && !known(entry)) {
      waiting_[still++] = waiting;
      earliest = std::min(earliest, entry);
      continue;
    }
    const std::optional<uint32_t> shape_id = shapes_.take(entry), stack_id = stacks_.take(entry);
    if (waiting.counted) add_to_row(waiting.call, shape_id, stack_id);
  }
  waiting_.resize(still);
  earliest_waiting_ = earliest;
}

size_t StreamedAggregate::GroupKeyHash::operator()(const GroupKey& key) const {
  const auto& [op_id, shape_id, stack_id] = key;
  // Each id with one more bit for whether it is there.
  const auto part = [](const std::optional<uint32_t>& id) { return id ? (uint64_t{*id} << 1) | 1 : 0; };
  uint64_t h = op_id;
  h = h * 0x9e3779b97f4a7c15ULL ^ part(shape_id);
  h = h * 0x9e3779b97f4a7c15ULL ^ part(stack_id);
  return static_cast<size_t>(h ^ (h >> 29));
}

void StreamedAggregate::add_to_row(const Folded& call, std::optional<uint32_t> shape_id,
                                   std::optional<uint32_t> stack_id) {
  if (!grouped() && call.op_id >= by_op_.size()) by_op_.resize(call.op_id + 1);
  Sums& sums = grouped() ? by_group_[{call.op_id, shape_id, stack_id}] : by_op_[call.op_id];
  ++sums.calls;
  sums.total_ns += call.total_ns;
  sums.self_ns += call.self_ns;
  sums.unwound += call.unwound;
  self_total_ns_ += call.self_ns;
}

void StreamedAggregate::take_calls() {
  CompletedCalls& done = completed_;
  builder_->take_completed(done);
  for (size_t k = 0; k < done.calls.size(); k++) {
    const OpCall& call = done.calls[k];
    Folded folded{.op_id = call.op_id,
                  .total_ns = call.compensated_ns(),
                  .self_ns = call.compensated_self_ns(),
                  .unwound = call.unwound,
                  .entry_index = call.entry_index};
    // Its only child was held: folded into it when the names match, else
    // counted now. (After folding, the child's own only child has another
    // name: the child folded it otherwise. One step is the whole chain.)
    if (done.child_count[k] == 1 && done.only_child[k] >= 0) {
      auto child = held_.find(static_cast<uint64_t>(done.only_child[k]));
      if (child != held_.end()) {
        if (same_name(call.op_id, child->second.op_id)) {
          folded.self_ns += child->second.self_ns;
          if (grouped()) wait(child->second, false);  // its pairs, to drop
        } else
          count(child->second);
        held_.erase(child);
      }
    }
    // Whether its parent will fold it is known when a sibling or the parent
    // ends: held while it is the only child so far.
    const uint32_t siblings = done.siblings[k];
    if (siblings == 1) {
      held_.emplace(done.first + k, folded);
      continue;
    }
    if (siblings == 2) {
      if (auto first = held_.find(static_cast<uint64_t>(done.previous_sibling[k])); first != held_.end()) {
        count(first->second);
        held_.erase(first);
      }
    }
    count(folded);
  }
}

Profile StreamedAggregate::finish(const Recording& recording) && {
  Timeline timeline;
  if (builder_) {
    builder_->end();  // a step still open ends with its thread's last event
    take_calls();
    timeline = std::move(*builder_).finish();
  }
  // What is still held is the only child of a frame open at the end: no
  // call folds it.
  for (const auto& [index, call] : held_) count(call);
  held_.clear();
  count_known_pairs(/*at_end=*/true);

  Profile profile;
  profile.gpu_recorded = recording.cupti_shim.has_value();
  profile.grouped_by_input_shape = grouping_.by_input_shape;
  profile.group_by_stack_n = std::max(grouping_.by_stack_n, 0);
  StackGroups stack_groups(recording, profile.group_by_stack_n);
  std::map<std::tuple<std::string, std::string, uint32_t>, size_t> row_of_key;  // (name, input shapes, stack group)
  auto add_row = [&](uint32_t op_id, const std::pair<std::string, bool>& shapes, uint32_t stack_group,
                     const Sums& sums) {
    if (sums.calls == 0) return;
    const std::string name = op_table_name(recording.ops, op_id);
    auto [it, inserted] = row_of_key.try_emplace({name, shapes.first, stack_group}, profile.rows.size());
    if (inserted) {
      profile.rows.emplace_back();
      profile.rows.back().name = name;
      profile.rows.back().input_shapes = shapes.first;
      profile.rows.back().has_inputs = shapes.second;
      profile.rows.back().stack = stack_groups.frames()[stack_group];
    }
    OpRow& row = profile.rows[it->second];
    row.calls += sums.calls;
    row.cpu_total_ns += sums.total_ns;
    row.self_cpu_ns += sums.self_ns;
    row.unwound_calls += sums.unwound;
  };
  for (uint32_t op_id = 0; op_id < by_op_.size(); op_id++)
    add_row(op_id, {"", false}, StackGroups::kNoStack, by_op_[op_id]);
  const ShapeNames shape_names(recording);
  // Rows made in key order, not in the hash's: the same on every build.
  const std::map<GroupKey, Sums> groups_in_order(by_group_.begin(), by_group_.end());
  for (const auto& [key, sums] : groups_in_order) {
    const auto& [op_id, shape_id, stack_id] = key;
    const std::pair<std::string, bool> shapes =
        grouping_.by_input_shape ? shape_names.of(op_id, shape_id) : std::pair<std::string, bool>{"", false};
    add_row(op_id, shapes, stack_groups.of_stack(stack_id), sums);
  }
  profile.self_cpu_total_ns = self_total_ns_;
  finish_profile(profile, timeline, recording, costs_ ? &*costs_ : nullptr, raw_times_);
  return profile;
}

}  // namespace gpuprof

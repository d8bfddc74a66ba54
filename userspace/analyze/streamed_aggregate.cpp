// streamed_aggregate.cpp: aggregate() as the events stream by.
#include "analyze/streamed_aggregate.h"

#include <map>
#include <string>
#include <utility>

#include "analyze/aggregator.h"
#include "analyze/input_shapes.h"

namespace gpuprof {

StreamedAggregate::StreamedAggregate(const ProbeCosts* costs, bool raw_times, bool group_by_input_shape,
                                     std::optional<uint64_t> last_entry_shape)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      raw_times_(raw_times),
      group_by_input_shape_(group_by_input_shape),
      shapes_(group_by_input_shape, last_entry_shape) {}

bool StreamedAggregate::wants(const Recording& head) {
  if (head.options.memory) return false;  // memory columns need every call at once
  ops_ = &head.ops;
  builder_.emplace(costs_ ? &*costs_ : nullptr, /*sibling_links=*/true);
  return true;
}

void StreamedAggregate::on_events(std::span<const gp_event> events, uint64_t first) {
  for (size_t i = 0; i < events.size(); i++) builder_->add(events[i], first + i);
  take_calls();
  if (group_by_input_shape_) count_known_shapes(/*at_end=*/false);
}

bool StreamedAggregate::same_name(uint32_t a, uint32_t b) const {
  // fold_same_name_calls' rule: an op outside the table folds nothing.
  const std::vector<OpInfo>& ops = *ops_;
  return a < ops.size() && b < ops.size() && ops[a].name == ops[b].name;
}

void StreamedAggregate::count(const Folded& call) {
  if (group_by_input_shape_)
    waiting_.push({call, true});
  else
    add_to_row(call, std::nullopt);
}

void StreamedAggregate::count_known_shapes(bool at_end) {
  while (!waiting_.empty() && (at_end || shapes_.known_through(waiting_.top().call.entry_index))) {
    const Waiting waiting = waiting_.top();
    waiting_.pop();
    const std::optional<uint32_t> shape_id = shapes_.of(waiting.call.entry_index);
    shapes_.forget(waiting.call.entry_index);
    if (waiting.counted) add_to_row(waiting.call, shape_id);
  }
}

void StreamedAggregate::add_to_row(const Folded& call, std::optional<uint32_t> shape_id) {
  if (!group_by_input_shape_ && call.op_id >= by_op_.size()) by_op_.resize(call.op_id + 1);
  Sums& sums = group_by_input_shape_ ? by_op_and_shape_[{call.op_id, shape_id}] : by_op_[call.op_id];
  ++sums.calls;
  sums.total_ns += call.total_ns;
  sums.self_ns += call.self_ns;
  sums.unwound += call.unwound;
  self_total_ns_ += call.self_ns;
}

void StreamedAggregate::take_calls() {
  CompletedCalls done = builder_->take_completed();
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
          if (group_by_input_shape_) waiting_.push({child->second, false});  // its pair, to drop
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
  count_known_shapes(/*at_end=*/true);

  Profile profile;
  profile.gpu_recorded = recording.cupti_shim.has_value();
  profile.grouped_by_input_shape = group_by_input_shape_;
  std::map<std::pair<std::string, std::string>, size_t> row_of_key;  // (name, input shapes)
  auto add_row = [&](uint32_t op_id, const std::pair<std::string, bool>& shapes, const Sums& sums) {
    if (sums.calls == 0) return;
    const std::string name = op_table_name(recording.ops, op_id);
    auto [it, inserted] = row_of_key.try_emplace({name, shapes.first}, profile.rows.size());
    if (inserted) {
      profile.rows.emplace_back();
      profile.rows.back().name = name;
      profile.rows.back().input_shapes = shapes.first;
      profile.rows.back().has_inputs = shapes.second;
    }
    OpRow& row = profile.rows[it->second];
    row.calls += sums.calls;
    row.cpu_total_ns += sums.total_ns;
    row.self_cpu_ns += sums.self_ns;
    row.unwound_calls += sums.unwound;
  };
  for (uint32_t op_id = 0; op_id < by_op_.size(); op_id++) add_row(op_id, {"", false}, by_op_[op_id]);
  const ShapeNames shape_names(recording);
  for (const auto& [key, sums] : by_op_and_shape_) add_row(key.first, shape_names.of(key.first, key.second), sums);
  profile.self_cpu_total_ns = self_total_ns_;
  finish_profile(profile, timeline, recording, costs_ ? &*costs_ : nullptr, raw_times_);
  return profile;
}

}  // namespace gpuprof

// streamed_aggregate.cpp: aggregate() as the events stream by.
#include "analyze/streamed_aggregate.h"

#include <map>
#include <string>
#include <utility>

#include "analyze/aggregator.h"

namespace gpuprof {

StreamedAggregate::StreamedAggregate(const ProbeCosts* costs, bool raw_times)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt), raw_times_(raw_times) {}

bool StreamedAggregate::wants(const Recording& head) {
  if (head.options.memory) return false;  // memory columns need every call at once
  ops_ = &head.ops;
  builder_.emplace(costs_ ? &*costs_ : nullptr, /*sibling_links=*/true);
  return true;
}

void StreamedAggregate::on_events(std::span<const gp_event> events, uint64_t first) {
  for (size_t i = 0; i < events.size(); i++) builder_->add(events[i], first + i);
  take_calls();
}

bool StreamedAggregate::same_name(uint32_t a, uint32_t b) const {
  // fold_same_name_calls' rule: an op outside the table folds nothing.
  const std::vector<OpInfo>& ops = *ops_;
  return a < ops.size() && b < ops.size() && ops[a].name == ops[b].name;
}

void StreamedAggregate::count(const Folded& call) {
  if (call.op_id >= by_op_.size()) by_op_.resize(call.op_id + 1);
  Sums& sums = by_op_[call.op_id];
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
                  .unwound = call.unwound};
    // Its only child was held: folded into it when the names match, else
    // counted now. (After folding, the child's own only child has another
    // name: the child folded it otherwise. One step is the whole chain.)
    if (done.child_count[k] == 1 && done.only_child[k] >= 0) {
      auto child = held_.find(static_cast<uint64_t>(done.only_child[k]));
      if (child != held_.end()) {
        if (same_name(call.op_id, child->second.op_id))
          folded.self_ns += child->second.self_ns;
        else
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

  Profile profile;
  profile.gpu_recorded = recording.cupti_shim.has_value();
  std::map<std::string, size_t> row_of_name;
  for (uint32_t op_id = 0; op_id < by_op_.size(); op_id++) {
    const Sums& sums = by_op_[op_id];
    if (sums.calls == 0) continue;
    const std::string name = op_table_name(recording.ops, op_id);
    auto [it, inserted] = row_of_name.try_emplace(name, profile.rows.size());
    if (inserted) {
      profile.rows.emplace_back();
      profile.rows.back().name = name;
    }
    OpRow& row = profile.rows[it->second];
    row.calls += sums.calls;
    row.cpu_total_ns += sums.total_ns;
    row.self_cpu_ns += sums.self_ns;
    row.unwound_calls += sums.unwound;
  }
  profile.self_cpu_total_ns = self_total_ns_;
  finish_profile(profile, timeline, recording, costs_ ? &*costs_ : nullptr, raw_times_);
  return profile;
}

}  // namespace gpuprof

// streamed_figures_table.cpp: the op table with memory or GPU columns, as
// the events and their records stream by.
#include "analyze/streamed_figures_table.h"

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/gpu_attribution.h"
#include "analyze/input_shapes.h"
#include "analyze/process_filter.h"
#include "analyze/stack_groups.h"

namespace gpuprof {

StreamedFiguresTable::StreamedFiguresTable(const ProbeCosts* costs, bool raw_times, const Recording& head,
                                           JoinBounds bounds, const TableGrouping& grouping)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      raw_times_(raw_times),
      bounds_(std::move(bounds)),
      memory_(head.options.memory),
      gpu_(head.cupti_shim.has_value()),
      grouping_(grouping),
      shapes_(grouping.by_input_shape, grouping.last_entry_shape),
      stacks_(grouping.by_stack_n > 0, grouping.last_entry_stack) {}

bool StreamedFiguresTable::serves(const Recording& head) {
  return (head.options.memory || head.cupti_shim.has_value()) && !is_system_wide(head);
}

bool StreamedFiguresTable::wants(const Recording& head) {
  // Grouped, a forest waits for the pairs of its events; its calls' pairs
  // are then used (or, folded calls', dropped).
  std::function<bool(uint64_t)> pairs_known;
  if (grouping_.by_input_shape || grouping_.by_stack_n > 0)
    pairs_known = [this](uint64_t event_index) {
      return shapes_.known_through(event_index) && stacks_.known_through(event_index);
    };
  figures_.emplace(
      costs_ ? &*costs_ : nullptr, head.ops, memory_, gpu_, std::move(bounds_),
      [this](const Timeline& forest, const CallFigures& figures) {
        for (size_t i = 0; i < forest.calls.size(); i++) {
          const OpCall& call = forest.calls[i];
          const std::optional<uint32_t> shape_id = shapes_.of(call.entry_index), stack_id = stacks_.of(call.entry_index);
          shapes_.forget(call.entry_index);
          stacks_.forget(call.entry_index);
          if (figures.folded_into[i] != i) continue;
          add_call_to_row(by_group_[{call.op_id, shape_id, stack_id}], call, figures, i, memory_, gpu_);
          self_total_ns_ += figures.self_ns[i];
        }
      },
      std::move(pairs_known));
  return true;
}

bool StreamedFiguresTable::on_mem_events(std::span<const gp_mem_event> events) {
  figures_->add_mem_events(events);
  return true;
}

bool StreamedFiguresTable::on_gpu_activities(std::span<const GpuActivity> activities) {
  // torch's GPU rows: every activity, whatever launched it, under its name.
  for (const GpuActivity& a : activities) {
    GpuSums& sums = by_activity_name_[a.name_id];
    ++sums.activities;
    sums.ns += gpu_activity_ns(a);
  }
  figures_->add_gpu_activities(activities);
  return true;
}

Profile StreamedFiguresTable::finish(const Recording& recording) && {
  const Timeline timeline = std::move(*figures_).finish(recording.ops);
  const StreamedCallFigures::MemoryTotals& mem = figures_->memory();
  Profile profile;
  profile.memory_recorded = memory_;
  profile.gpu_recorded = gpu_;
  profile.grouped_by_input_shape = grouping_.by_input_shape;
  profile.group_by_stack_n = std::max(grouping_.by_stack_n, 0);
  StackGroups stack_groups(recording, profile.group_by_stack_n);
  // Overloads of one op share its row (aggregator.h), as do placeholders
  // of lost ops that print alike; grouped, by input shapes and stack group.
  using RowKey = std::tuple<std::string, std::string, uint32_t, bool>;  // (name, shapes, stack group, on GPU)
  std::map<RowKey, size_t> row_of;
  auto row_named = [&](const std::string& name, const std::pair<std::string, bool>& shapes, uint32_t stack_group,
                       bool on_gpu) -> OpRow& {
    auto [it, inserted] = row_of.try_emplace({name, shapes.first, stack_group, on_gpu}, profile.rows.size());
    if (inserted)
      profile.rows.push_back(OpRow{.name = name, .input_shapes = shapes.first, .has_inputs = shapes.second,
                                   .stack = stack_groups.frames()[stack_group], .on_gpu = on_gpu});
    return profile.rows[it->second];
  };
  const ShapeNames shape_names(recording);
  for (const auto& [key, sums] : by_group_) {
    const auto& [op_id, shape_id, stack_id] = key;
    const std::pair<std::string, bool> shapes =
        grouping_.by_input_shape ? shape_names.of(op_id, shape_id) : std::pair<std::string, bool>{"", false};
    row_named(op_table_name(recording.ops, op_id), shapes, stack_groups.of_stack(stack_id), false).add_sums(sums);
  }
  profile.self_cpu_total_ns = self_total_ns_;
  // torch's top-level memory events and GPU rows: no input shapes ("[]"
  // when grouped by them), no stack.
  const std::pair<std::string, bool> no_shapes{grouping_.by_input_shape ? "[]" : "", false};
  if (memory_ && mem.outside_events > 0)
    add_outside_memory_to_row(row_named("[memory]", no_shapes, StackGroups::kNoStack, false), mem.outside_events,
                              mem.outside_cpu, mem.outside_cuda);
  for (const auto& [name_id, sums] : by_activity_name_) {
    OpRow& row = row_named(gpu_activity_row_name(recording, name_id), no_shapes, StackGroups::kNoStack, true);
    row.calls += sums.activities;
    row.self_cuda_ns += sums.ns;
    row.cuda_total_ns += sums.ns;
  }
  if (memory_) {
    profile.cpu_memory_peak = memory_peak_info(recording, mem.cpu_peak, mem.cpu_peak_op);
    profile.cuda_memory_peak = memory_peak_info(recording, mem.cuda_peak, mem.cuda_peak_op);
    profile.memory_unmatched_frees = mem.unmatched_frees;
  }
  finish_profile(profile, timeline, recording, costs_ ? &*costs_ : nullptr, raw_times_);
  return profile;
}

}  // namespace gpuprof

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
          const std::optional<uint32_t> shape_id = shapes_.take(call.entry_index),
                                        stack_id = stacks_.take(call.entry_index);
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
  TableRows table(recording, memory_, gpu_, grouping_.by_input_shape, grouping_.by_stack_n);
  Profile& profile = table.profile();
  // Overloads of one op share its row (aggregator.h), as do placeholders
  // of lost ops that print alike; grouped, by input shapes and stack group.
  const ShapeNames shape_names(recording);
  for (const auto& [key, sums] : by_group_) {
    const auto& [op_id, shape_id, stack_id] = key;
    const auto [shapes, has_inputs] =
        grouping_.by_input_shape ? shape_names.of(op_id, shape_id) : std::pair<std::string, bool>{"", false};
    table.row_of(op_table_name(recording.ops, op_id), shapes, has_inputs, table.stack_group(stack_id)).add_sums(sums);
  }
  profile.self_cpu_total_ns = self_total_ns_;
  if (memory_ && mem.outside_events > 0)
    add_outside_memory_to_row(table.memory_events_row(), mem.outside_events, mem.outside_cpu, mem.outside_cuda);
  // torch's GPU rows: every activity, whatever launched it, under its name.
  for (const auto& [name_id, sums] : by_activity_name_) {
    OpRow& row = table.gpu_activity_row(gpu_activity_row_name(recording, name_id));
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
  return std::move(profile);
}

}  // namespace gpuprof

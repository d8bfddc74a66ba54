// streamed_figures_table.cpp: the op table with memory or GPU columns, as
// the events and their records stream by.
#include "analyze/streamed_figures_table.h"

#include <string>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/gpu_attribution.h"
#include "analyze/process_filter.h"

namespace gpuprof {

StreamedFiguresTable::StreamedFiguresTable(const ProbeCosts* costs, bool raw_times, const Recording& head,
                                           JoinBounds bounds)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      raw_times_(raw_times),
      bounds_(std::move(bounds)),
      memory_(head.options.memory),
      gpu_(head.cupti_shim.has_value()) {}

bool StreamedFiguresTable::serves(const Recording& head) {
  return (head.options.memory || head.cupti_shim.has_value()) && !is_system_wide(head);
}

bool StreamedFiguresTable::wants(const Recording& head) {
  figures_.emplace(costs_ ? &*costs_ : nullptr, head.ops, memory_, gpu_, std::move(bounds_),
                   [this](const Timeline& forest, const CallFigures& figures) {
                     for (size_t i = 0; i < forest.calls.size(); i++) {
                       if (figures.folded_into[i] != i) continue;
                       const OpCall& call = forest.calls[i];
                       add_call_to_row(by_op_[call.op_id], call, figures, i, memory_, gpu_);
                       self_total_ns_ += figures.self_ns[i];
                     }
                   });
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
  // Overloads of one op share its row (aggregator.h), as do placeholders
  // of lost ops that print alike.
  std::map<std::pair<std::string, bool>, size_t> row_of;  // (name, on GPU)
  auto row_named = [&](const std::string& name, bool on_gpu) -> OpRow& {
    auto [it, inserted] = row_of.try_emplace({name, on_gpu}, profile.rows.size());
    if (inserted) profile.rows.push_back(OpRow{.name = name, .on_gpu = on_gpu});
    return profile.rows[it->second];
  };
  for (const auto& [op_id, sums] : by_op_) {
    row_named(op_table_name(recording.ops, op_id), false).add_sums(sums);
  }
  profile.self_cpu_total_ns = self_total_ns_;
  if (memory_ && mem.outside_events > 0)
    add_outside_memory_to_row(row_named("[memory]", false), mem.outside_events, mem.outside_cpu, mem.outside_cuda);
  for (const auto& [name_id, sums] : by_activity_name_) {
    OpRow& row = row_named(gpu_activity_row_name(recording, name_id), true);
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

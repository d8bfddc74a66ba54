// streamed_kernel_table.cpp: report --kernels as the events and GPU records
// stream by (streamed_kernel_table.h).
#include "output/streamed_kernel_table.h"

#include <string>

#include "analyze/gpu_attribution.h"
#include "output/launch_table.h"
#include "output/op_table.h"

namespace gpuprof {

bool StreamedKernelTable::wants(const Recording& head) {
  // Raw times (nullptr: no compensation), as summarize_gpu_kernels'
  // timeline: a launch's call is the one whose raw span holds it.
  figures_.emplace(nullptr, head.ops, /*memory=*/false, /*gpu=*/true, std::move(bounds_),
                   [](const Timeline&, const CallFigures&) {});
  figures_->on_launch_joined([this](uint64_t id, std::optional<uint32_t> op_id) { charge(id, op_id); });
  return true;
}

bool StreamedKernelTable::on_gpu_activities(std::span<const GpuActivity> activities) {
  // Put aside before the join can decide their launches.
  for (const GpuActivity& a : activities) {
    auto& [count, ns] = waiting_[a.correlation_id][a.name_id];
    count++;
    ns += gpu_activity_ns(a);
  }
  figures_->add_gpu_activities(activities);
  return true;
}

// A launch decided: every activity of its id has been read. Should a
// damaged file repeat an id, the launch decided first keeps its
// activities (streamed_call_figures.h).
void StreamedKernelTable::charge(uint64_t correlation_id, std::optional<uint32_t> op_id) {
  auto it = waiting_.find(correlation_id);
  if (it == waiting_.end()) return;
  for (const auto& [name_id, sums] : it->second) {
    auto& [count, ns] = charged_[{op_id, name_id}];
    count += sums.first;
    ns += sums.second;
  }
  waiting_.erase(it);
}

GpuKernelSummary StreamedKernelTable::finish(const Recording& recording) && {
  std::move(*figures_).finish(recording.ops);
  GpuKernelSums sums;
  for (const auto& [key, counted] : charged_) {
    const auto& [op_id, name_id] = key;
    sums.add(op_id ? op_display_name(recording.ops, *op_id) : std::string(kNoOpName), name_id, counted.first,
             counted.second);
  }
  // What is left had no launch record.
  for (const auto& [id, by_name] : waiting_)
    for (const auto& [name_id, counted] : by_name) sums.add(kLaunchNotSeen, name_id, counted.first, counted.second);
  return std::move(sums).summary(recording);
}

}  // namespace gpuprof

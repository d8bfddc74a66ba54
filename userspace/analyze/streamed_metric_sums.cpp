// streamed_metric_sums.cpp: one streamed read handed to each metric's sums.
#include "analyze/streamed_metric_sums.h"

#include <utility>

namespace gpuprof {

StreamedMetricSums::StreamedMetricSums(const Recording& head, const ProbeCosts* costs,
                                       std::optional<uint64_t> last_entry_stack,
                                       const std::vector<StackMetric>& metrics, const JoinBounds* bounds) {
  for (StackMetric metric : metrics)
    sums_.emplace_back(metric, std::make_unique<StreamedStackSums>(head, costs, last_entry_stack, metric, bounds));
}

bool StreamedMetricSums::wants(const Recording& head) {
  bool all = true;
  for (auto& [metric, sums] : sums_) all = sums->wants(head) && all;
  return all;
}

void StreamedMetricSums::on_events(std::span<const gp_event> events, uint64_t first) {
  for (auto& [metric, sums] : sums_) sums->on_events(events, first);
}

void StreamedMetricSums::on_entry_stack(uint64_t event_index, uint32_t stack_id) {
  for (auto& [metric, sums] : sums_) sums->on_entry_stack(event_index, stack_id);
}

void StreamedMetricSums::on_gpu_correlations(std::span<const GpuCorrelation> correlations) {
  for (auto& [metric, sums] : sums_) sums->on_gpu_correlations(correlations);
}

bool StreamedMetricSums::on_gpu_activities(std::span<const GpuActivity> activities) {
  bool all = true;
  for (auto& [metric, sums] : sums_) all = sums->on_gpu_activities(activities) && all;
  return all;
}

std::map<StackMetric, StackSums> StreamedMetricSums::finish() && {
  std::map<StackMetric, StackSums> out;
  for (auto& [metric, sums] : sums_) out.emplace(metric, std::move(*sums).finish());
  return out;
}

}  // namespace gpuprof

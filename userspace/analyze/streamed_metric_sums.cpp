// streamed_metric_sums.cpp: one streamed read handed to each metric's sums
// (kCalls counted by kSelfCpuTime's, on the same placement).
#include "analyze/streamed_metric_sums.h"

#include <algorithm>
#include <utility>

namespace gpuprof {

StreamedMetricSums::StreamedMetricSums(const Recording& head, const ProbeCosts* costs,
                                       std::optional<uint64_t> last_entry_stack,
                                       const std::vector<StackMetric>& metrics, const JoinBounds* bounds) {
  const auto has = [&](StackMetric m) { return std::find(metrics.begin(), metrics.end(), m) != metrics.end(); };
  // kCalls rides on kSelfCpuTime's placement when both are asked for.
  calls_with_self_ = has(StackMetric::kCalls) && has(StackMetric::kSelfCpuTime);
  for (StackMetric metric : metrics) {
    if (metric == StackMetric::kCalls && calls_with_self_) continue;
    auto sums = std::make_unique<StreamedStackSums>(head, costs, last_entry_stack, metric, bounds);
    if (metric == StackMetric::kSelfCpuTime && calls_with_self_) sums->count_calls_too();
    sums_.emplace_back(metric, std::move(sums));
  }
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
  for (auto& [metric, sums] : sums_) {
    if (metric == StackMetric::kSelfCpuTime && calls_with_self_) {
      auto [self, calls] = std::move(*sums).finish_with_calls();
      out.emplace(StackMetric::kSelfCpuTime, std::move(self));
      out.emplace(StackMetric::kCalls, std::move(calls));
    } else {
      out.emplace(metric, std::move(*sums).finish());
    }
  }
  return out;
}

}  // namespace gpuprof

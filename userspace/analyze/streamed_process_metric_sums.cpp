// streamed_process_metric_sums.cpp: a system-wide recording's pprof stack
// sums, process by process, as the events stream by.
#include "analyze/streamed_process_metric_sums.h"

#include <algorithm>
#include <utility>

#include "analyze/process_filter.h"

namespace gpuprof {

StreamedProcessMetricSums::StreamedProcessMetricSums(const Recording& head, const ProbeCosts* costs,
                                                     std::vector<StackMetric> metrics, const LastPairs& last)
    : head_(head),
      costs_(costs),
      metrics_(std::move(metrics)),
      split_([this](uint32_t pid) -> RecordStream& { return *processes_.emplace(pid, make(pid)).first->second.sums; },
             last) {}

StreamedProcessMetricSums::Process StreamedProcessMetricSums::make(uint32_t pid) const {
  Process p;
  p.selection = std::make_unique<Recording>(select_processes(head_, {pid}));
  // No last pair: the split hands each pair before its event.
  p.sums = std::make_unique<StreamedMetricSums>(*p.selection, costs_, std::nullopt, metrics_);
  return p;
}

void StreamedProcessMetricSums::on_events(std::span<const gp_event> events, uint64_t first) {
  split_.add(events, first);
}

std::map<uint32_t, ProcessMetricSums> StreamedProcessMetricSums::finish(const Recording& recording) && {
  split_.finish();
  std::map<uint32_t, ProcessMetricSums> out;
  const std::map<uint32_t, uint64_t> op_events = split_.op_events();
  auto take = [&](uint32_t pid, Process& p) {
    const auto events = op_events.find(pid);
    out.emplace(pid, ProcessMetricSums{std::move(p.selection), std::move(*p.sums).finish(),
                                       events == op_events.end() ? 0 : events->second});
    p = Process{};
  };
  for (auto& [pid, p] : processes_) take(pid, p);
  // Sampled processes without op events (folded_stacks_by_process's and
  // pprof_profile's rule): their samples are summed now, one at a time.
  const bool samples = std::find(metrics_.begin(), metrics_.end(), StackMetric::kSamples) != metrics_.end();
  for (const auto& [pid, activity] : process_activity(recording))
    if (samples && activity.samples && !out.count(pid)) {
      Process p = make(pid);
      take(pid, p);
    }
  processes_.clear();
  return out;
}

}  // namespace gpuprof

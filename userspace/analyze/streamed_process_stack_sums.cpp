// streamed_process_stack_sums.cpp: a system-wide recording's stack sums,
// process by process, as the events stream by.
#include "analyze/streamed_process_stack_sums.h"

#include <utility>

#include "analyze/process_filter.h"

namespace gpuprof {

StreamedProcessStackSums::StreamedProcessStackSums(const Recording& head, const ProbeCosts* costs,
                                                   StackMetric metric)
    : head_(head), costs_(costs), metric_(metric), split_([this](uint32_t pid) -> RecordStream& {
        return *processes_.emplace(pid, make(pid)).first->second.sums;
      }) {}

bool StreamedProcessStackSums::wants(const Recording& head) {
  return !head.options.memory && !head.options.with_stack;
}

StreamedProcessStackSums::Process StreamedProcessStackSums::make(uint32_t pid) const {
  Process p;
  p.selection = std::make_unique<Recording>(select_processes(head_, {pid}));
  p.sums = std::make_unique<StreamedStackSums>(*p.selection, costs_, std::nullopt, metric_);
  return p;
}

void StreamedProcessStackSums::on_events(std::span<const gp_event> events, uint64_t) { split_.add(events); }

std::map<uint32_t, StreamedProcessStackSums::ProcessSums> StreamedProcessStackSums::finish(
    const Recording& recording) && {
  std::map<uint32_t, ProcessSums> out;
  auto take = [&](uint32_t pid, Process& p) {
    out.emplace(pid, ProcessSums{p.selection->process, std::move(*p.sums).finish()});
    p = Process{};
  };
  for (auto& [pid, p] : processes_) take(pid, p);
  // Sampled processes without op events (folded_stacks_by_process's rule):
  // their samples are summed now, one process at a time.
  if (metric_ == StackMetric::kSamples)
    for (const auto& [pid, activity] : process_activity(recording))
      if (activity.samples && !out.count(pid)) {
        Process p = make(pid);
        take(pid, p);
      }
  processes_.clear();
  return out;
}

}  // namespace gpuprof

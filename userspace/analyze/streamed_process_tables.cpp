// streamed_process_tables.cpp: a system-wide recording's per-process tables
// as the events stream by.
#include "analyze/streamed_process_tables.h"

#include <utility>

namespace gpuprof {

StreamedProcessTables::StreamedProcessTables(const ProbeCosts* costs, bool raw_times, const TableGrouping& grouping)
    : costs_(costs ? std::optional<ProbeCosts>(*costs) : std::nullopt),
      raw_times_(raw_times),
      grouping_{.by_input_shape = grouping.by_input_shape, .by_stack_n = grouping.by_stack_n},
      split_(
          [this](uint32_t pid) -> RecordStream& {
            StreamedAggregate& aggregate =
                aggregates_.try_emplace(pid, costs_ ? &*costs_ : nullptr, raw_times_, grouping_).first->second;
            aggregate.wants(*head_);  // declines only memory, declined in wants()
            return aggregate;
          },
          LastPairs{.entry_stack = grouping.last_entry_stack, .entry_shape = grouping.last_entry_shape}) {}

bool StreamedProcessTables::wants(const Recording& head) {
  if (head.options.memory) return false;  // memory columns need every call at once
  head_ = &head;
  return true;
}

void StreamedProcessTables::on_events(std::span<const gp_event> events, uint64_t first) { split_.add(events, first); }

bool StreamedProcessTables::on_launches(std::span<const CudaLaunch> launches) {
  for (const CudaLaunch& launch : launches) ++launches_[launch.tid];
  return true;
}

ProcessTables StreamedProcessTables::finish(const Recording& recording) && {
  split_.finish();
  // The recording holds no events nor launches: its activity is the
  // processes it lists and their samples; the events and launches are ours.
  std::map<uint32_t, ProcessActivity> by_pid;
  for (const auto& [pid, activity] : process_activity(recording)) by_pid[pid] = activity;
  for (const auto& [pid, events] : split_.op_events()) by_pid[pid].events = events;
  const std::unordered_map<uint32_t, uint32_t> process_of = process_of_thread(recording);
  for (const auto& [tid, count] : launches_)
    if (auto it = process_of.find(tid); it != process_of.end()) by_pid[it->second].launches += count;

  ProcessTables tables;
  tables.activity.assign(by_pid.begin(), by_pid.end());
  for (auto& [pid, aggregate] : aggregates_) tables.profiles.emplace(pid, std::move(aggregate).finish(recording));
  aggregates_.clear();
  return tables;
}

}  // namespace gpuprof

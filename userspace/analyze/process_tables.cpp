// process_tables.cpp: a system-wide recording's per-process tables, read whole.
#include "analyze/process_tables.h"

#include <algorithm>

namespace gpuprof {

ProcessTables process_tables(const Recording& recording, const AggregateOptions& options) {
  ProcessTables tables;
  tables.activity = process_activity(recording);
  for (const auto& [pid, activity] : tables.activity)
    if (activity.events) tables.profiles.emplace(pid, aggregate(select_processes(recording, {pid}), options));
  return tables;
}

void keep_processes(ProcessTables& tables, const std::set<uint32_t>& pids) {
  // select_processes keeps those processes' events, threads (so samples and
  // launches) and descriptions: the activity of each is unchanged, and the
  // others have none.
  std::erase_if(tables.activity, [&](const auto& entry) { return !pids.count(entry.first); });
  std::erase_if(tables.profiles, [&](const auto& entry) { return !pids.count(entry.first); });
}

}  // namespace gpuprof

// process_tables.h: what report prints per process of a system-wide
// recording (record -a): each process's activity (op events, CPU samples,
// CUDA launches) and, for each process that ran ops, its op table's Profile.
// Here from a recording read whole (a selected recording per process,
// aggregated); analyze/streamed_process_tables.h gives the same from a
// streaming read.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "analyze/aggregator.h"
#include "analyze/process_filter.h"
#include "analyze/profile.h"
#include "record/recording.h"

namespace gpuprof {

struct ProcessTables {
  std::vector<std::pair<uint32_t, ProcessActivity>> activity;  // as process_activity(), by pid
  std::map<uint32_t, Profile> profiles;                        // the processes with op events, by pid
};

// aggregate(select_processes(recording, {pid}), options) of each process
// with op events (memory and GPU columns as the recording has them).
ProcessTables process_tables(const Recording& recording, const AggregateOptions& options);

// Only the processes in `pids`: the tables process_tables() gives for
// select_processes(recording, pids), when `pids` are processes the
// recording lists (matching_processes()).
void keep_processes(ProcessTables& tables, const std::set<uint32_t>& pids);

}  // namespace gpuprof

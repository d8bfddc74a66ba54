// process_filter.h: one process (or some) out of a system-wide recording
// (record -a), as a recording of its own that every output reads as usual.
//
// Events carry their process; samples, launches, memory events and CUPTI
// correlations carry a thread, whose process the recording lists
// (Recording::thread_processes); GPU activities follow their correlation.
// Dictionaries (ops, frames, stacks, shapes, names) are kept whole, and the
// indices into events and samples (entry shapes and stacks, sample kernel
// stacks) are renumbered.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "record/recording.h"

namespace gpuprof {

// Whether the recording is system-wide (record -a).
inline bool is_system_wide(const Recording& recording) { return !recording.processes.empty(); }

// The process of each thread the recording lists (THREAD_PROCESSES), by tid.
std::unordered_map<uint32_t, uint32_t> process_of_thread(const Recording& recording);

// The recording restricted to the processes in `pids`. With exactly one,
// `process` describes it (the recording's hostname kept).
Recording select_processes(const Recording& recording, const std::set<uint32_t>& pids);

// --pid / --comm as given (both empty: no choice made).
struct ProcessChoice {
  std::vector<int> pids;
  std::vector<std::string> comms;
  bool any() const { return !pids.empty() || !comms.empty(); }
};

// --pid / --comm: the pids of the processes listed in the recording whose pid
// is in `pids` or whose comm equals one of `comms` (either list empty: no
// condition from it; both empty: every process).
std::set<uint32_t> matching_processes(const Recording& recording, const std::vector<int>& pids,
                                      const std::vector<std::string>& comms);

// How much each process did: op events and CPU samples, by pid.
struct ProcessActivity {
  uint64_t events = 0;
  uint64_t samples = 0;
  uint64_t launches = 0;
};
std::vector<std::pair<uint32_t, ProcessActivity>> process_activity(const Recording& recording);

// "python3-4242": the root frame of a process's folded stacks.
std::string process_frame(const ProcessInfo& process);

}  // namespace gpuprof

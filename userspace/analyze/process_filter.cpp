#include "analyze/process_filter.h"

#include <algorithm>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace gpuprof {
namespace {

template <typename... Members>
void copy_members(Recording& to, const Recording& from, Members... members) {
  ((to.*members = from.*members), ...);
}

}  // namespace

std::unordered_map<uint32_t, uint32_t> process_of_thread(const Recording& recording) {
  std::unordered_map<uint32_t, uint32_t> of;
  for (const ThreadProcess& t : recording.thread_processes) of.emplace(t.tid, t.pid);
  return of;
}

Recording select_processes(const Recording& recording, const std::set<uint32_t>& pids) {
  const auto of = process_of_thread(recording);
  auto kept_thread = [&](uint32_t tid) {
    auto it = of.find(tid);
    return it != of.end() && pids.count(it->second);
  };
  Recording out;
  // Kept whole: the header, the dictionaries, the trailer.
  copy_members(out, recording, &Recording::format_version, &Recording::process, &Recording::clock,
               &Recording::ops, &Recording::options, &Recording::shapes, &Recording::sample_frames,
               &Recording::sample_stacks, &Recording::launch_names, &Recording::cuda_runtime,
               &Recording::cupti_shim, &Recording::probe_costs, &Recording::stats, &Recording::complete,
               &Recording::incomplete_reason, &Recording::lost_chunks);

  std::unordered_map<uint64_t, uint64_t> event_index;  // old -> new, kept frame-opening events only
  for (size_t i = 0; i < recording.events.size(); i++) {
    const gp_event& e = recording.events[i];
    // A CUT (record -a --push-every's window end) is every thread's.
    if (!pids.count(e.pid) && e.kind != GP_EV_CUT) continue;
    if (e.kind == GP_EV_OP_ENTRY || e.kind == GP_EV_RANGE_BEGIN) event_index.emplace(i, out.events.size());
    out.events.push_back(e);
  }
  for (const EntryShapes& s : recording.entry_shapes)
    if (auto it = event_index.find(s.event_index); it != event_index.end())
      out.entry_shapes.push_back({it->second, s.shape_id});
  for (const EntryStack& s : recording.entry_stacks)
    if (auto it = event_index.find(s.event_index); it != event_index.end())
      out.entry_stacks.push_back({it->second, s.stack_id});
  for (const EntryStack& s : recording.backward_stacks)
    if (auto it = event_index.find(s.event_index); it != event_index.end())
      out.backward_stacks.push_back({it->second, s.stack_id});
  std::unordered_map<uint64_t, uint64_t> sample_index;
  for (size_t i = 0; i < recording.samples.size(); i++) {
    if (!kept_thread(recording.samples[i].tid)) continue;
    sample_index.emplace(i, out.samples.size());
    out.samples.push_back(recording.samples[i]);
  }
  for (const SampleKernelStack& k : recording.sample_kernel_stacks)
    if (auto it = sample_index.find(k.sample_index); it != sample_index.end())
      out.sample_kernel_stacks.push_back({it->second, k.stack_id});
  for (const gp_mem_event& m : recording.mem_events)
    if (kept_thread(m.tid)) out.mem_events.push_back(m);
  for (const CudaLaunch& l : recording.launches)
    if (kept_thread(l.tid)) out.launches.push_back(l);
  std::unordered_set<uint64_t> correlations;
  for (const GpuCorrelation& c : recording.gpu_correlations)
    if (kept_thread(c.tid)) {
      out.gpu_correlations.push_back(c);
      correlations.insert(c.correlation_id);
    }
  for (const GpuActivity& a : recording.gpu_activities)
    if (correlations.count(a.correlation_id)) out.gpu_activities.push_back(a);
  for (const ThreadName& t : recording.thread_names)
    if (kept_thread(t.tid)) out.thread_names.push_back(t);
  for (const ThreadProcess& t : recording.thread_processes)
    if (pids.count(t.pid)) out.thread_processes.push_back(t);
  for (const ProcessInfo& p : recording.processes)
    if (pids.count(static_cast<uint32_t>(p.pid))) out.processes.push_back(p);
  for (const JobRank& r : recording.job_ranks)
    if (pids.count(static_cast<uint32_t>(r.pid))) out.job_ranks.push_back(r);
  for (const NativeFile& f : recording.native_files)
    if (pids.count(static_cast<uint32_t>(f.pid))) out.native_files.push_back(f);
  if (out.processes.size() == 1) {
    const std::string hostname = recording.process.hostname;
    out.process = out.processes.front();
    out.process.hostname = hostname;
  }
  return out;
}

std::set<uint32_t> matching_processes(const Recording& recording, const std::vector<int>& pids,
                                      const std::vector<std::string>& comms) {
  std::set<uint32_t> out;
  for (const ProcessInfo& p : recording.processes) {
    const bool pid_ok = pids.empty() || std::find(pids.begin(), pids.end(), p.pid) != pids.end();
    const bool comm_ok = comms.empty() || std::find(comms.begin(), comms.end(), p.comm) != comms.end();
    if (pid_ok && comm_ok) out.insert(static_cast<uint32_t>(p.pid));
  }
  return out;
}

std::vector<std::pair<uint32_t, ProcessActivity>> process_activity(const Recording& recording) {
  const auto of = process_of_thread(recording);
  std::map<uint32_t, ProcessActivity> by_pid;
  for (const ProcessInfo& p : recording.processes) by_pid[static_cast<uint32_t>(p.pid)];
  for (const gp_event& e : recording.events)
    if (e.kind != GP_EV_CUT) by_pid[e.pid].events++;  // a CUT is no process's
  for (const CpuSample& s : recording.samples)
    if (auto it = of.find(s.tid); it != of.end()) by_pid[it->second].samples++;
  for (const CudaLaunch& l : recording.launches)
    if (auto it = of.find(l.tid); it != of.end()) by_pid[it->second].launches++;
  return {by_pid.begin(), by_pid.end()};
}

std::string process_frame(const ProcessInfo& process) {
  std::string comm = process.comm.empty() ? "process" : process.comm;
  return comm + "-" + std::to_string(process.pid);
}

}  // namespace gpuprof

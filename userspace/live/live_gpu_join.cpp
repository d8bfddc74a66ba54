// live_gpu_join.cpp: launches meet their calls, activities their launches.
#include "live/live_gpu_join.h"

#include <iterator>
#include <map>

namespace gpuprof {

void LiveGpuJoin::launch(const GpuCorrelation& launch, uint64_t now_ns) {
  launches_[launch.tid].emplace(launch.ts_ns, PendingLaunch{launch, now_ns});
}

std::vector<LiveGpuJoin::Credit> LiveGpuJoin::calls(const std::vector<OpCall>& calls) {
  std::vector<Credit> credits;
  for (const OpCall& call : calls) {
    auto thread = launches_.find(call.tid);
    if (thread == launches_.end()) continue;
    auto& pending = thread->second;
    for (auto it = pending.lower_bound(call.start_ns); it != pending.end() && it->first <= call.end_ns;) {
      const GpuCorrelation& l = it->second.launch;
      op_of_correlation_[l.correlation_id] = {call.op_id, it->second.arrived_ns};
      if (auto w = waiting_.find(l.correlation_id); w != waiting_.end()) {
        credits.push_back({call.op_id, w->second.ns});
        waiting_.erase(w);
      }
      it = pending.erase(it);
    }
  }
  return credits;
}

std::optional<LiveGpuJoin::Credit> LiveGpuJoin::activity(const GpuActivity& activity, uint64_t now_ns) {
  const uint64_t ns = activity.end_ns > activity.start_ns ? activity.end_ns - activity.start_ns : 0;
  if (auto a = op_of_correlation_.find(activity.correlation_id); a != op_of_correlation_.end())
    return Credit{a->second.op_id, ns};  // kept: a graph launch has many activities
  Waiting& w = waiting_[activity.correlation_id];
  w.ns += ns;
  w.arrived_ns = now_ns;
  return std::nullopt;
}

void LiveGpuJoin::expire(uint64_t now_ns) {
  auto old = [&](uint64_t arrived) { return now_ns > arrived && now_ns - arrived > kExpiryNs; };
  for (auto thread = launches_.begin(); thread != launches_.end();) {
    std::erase_if(thread->second, [&](const auto& e) { return old(e.second.arrived_ns); });
    thread = thread->second.empty() ? launches_.erase(thread) : std::next(thread);
  }
  std::erase_if(op_of_correlation_, [&](const auto& e) { return old(e.second.arrived_ns); });
  std::erase_if(waiting_, [&](const auto& e) { return old(e.second.arrived_ns); });
}

size_t LiveGpuJoin::pending() const {
  size_t n = waiting_.size();
  for (const auto& [tid, launches] : launches_) n += launches.size();
  return n;
}

}  // namespace gpuprof

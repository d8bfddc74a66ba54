// gpu_attribution.cpp: correlation id -> launch moment -> innermost call.
#include "analyze/gpu_attribution.h"

#include <unordered_map>

namespace gpuprof {

std::vector<int64_t> calls_of_gpu_activities(const Recording& recording, const Timeline& timeline,
                                             const CallTree& tree) {
  const std::vector<GpuCorrelation>& launches = recording.gpu_correlations;
  const std::vector<int64_t> launching = innermost_calls_at(timeline, tree, thread_moments(launches));
  // One launch per correlation id (the shim fires once per id); should a
  // damaged file repeat one, the first launch keeps it.
  std::unordered_map<uint64_t, int64_t> call_of_correlation;
  call_of_correlation.reserve(launches.size());
  for (size_t i = 0; i < launches.size(); ++i)
    call_of_correlation.try_emplace(launches[i].correlation_id,
                                    launching[i] < 0 ? kLaunchedOutsideOps : launching[i]);
  std::vector<int64_t> calls;
  calls.reserve(recording.gpu_activities.size());
  for (const GpuActivity& a : recording.gpu_activities) {
    auto it = call_of_correlation.find(a.correlation_id);
    calls.push_back(it == call_of_correlation.end() ? kLaunchNotSeenCall : it->second);
  }
  return calls;
}

}  // namespace gpuprof

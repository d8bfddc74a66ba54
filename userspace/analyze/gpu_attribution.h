// gpu_attribution.h: GPU activities -> the op calls that launched them.
//
// A GPU activity (kernel, memcpy, memset; from the CUPTI shim) carries
// CUPTI's correlation id; the launch API call that made it published the
// same id on its thread (GpuCorrelation: thread and moment). The call
// running innermost on that thread at that moment launched it: torch.profiler
// charges a kernel to the op whose cudaLaunchKernel made it (kineto's linked
// correlation), which becomes that op's Self CUDA. The join is by
// correlation id only, never by time.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/call_tree.h"
#include "analyze/op_timeline.h"
#include "record/recording.h"

namespace gpuprof {

// What launched an activity, when not a call.
inline constexpr int64_t kLaunchedOutsideOps = -1;  // its launch ran under no op
inline constexpr int64_t kLaunchNotSeenCall = -2;   // no launch carries its correlation id

// Parallel to recording.gpu_activities: the index in timeline.calls of the
// call that launched each activity, or one of the two values above.
// `timeline` and `tree` are those of recording.events.
std::vector<int64_t> calls_of_gpu_activities(const Recording& recording, const Timeline& timeline,
                                             const CallTree& tree);

// GPU nanoseconds of one activity: end - start (0 for a record CUPTI could
// not time).
inline uint64_t gpu_activity_ns(const GpuActivity& a) { return a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0; }

}  // namespace gpuprof

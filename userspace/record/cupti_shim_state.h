// cupti_shim_state.h: what the CUPTI shim's gpuprof_cupti_state says, in
// words (cupti_shim/gpuprof_cupti_probes.h, GpuprofCuptiState).
#pragma once

#include <cstdint>

namespace gpuprof {

inline constexpr uint32_t kCuptiShimNotInitialized = 0;
inline constexpr uint32_t kCuptiShimTracing = 1;
// Initialized, no tracer attached: CUPTI untouched. Read while attached, it
// is the shim not having noticed the attach yet (its watcher looks every
// 50 ms), or, at the stop, having switched off after gpuprof's detach.
inline constexpr uint32_t kCuptiShimDormant = 6;
inline constexpr uint32_t kCuptiShimLastState = 6;

// "is tracing kernels, memcpy and memset", "found CUPTI taken by another
// subscriber (torch.profiler?)", ...: completes "the CUPTI shim ...".
const char* cupti_shim_state_text(uint32_t state);

}  // namespace gpuprof

// cupti_shim_state.h: what the CUPTI shim's gpuprof_cupti_state says, in
// words (cupti_shim/gpuprof_cupti_probes.h, GpuprofCuptiState).
#pragma once

#include <cstdint>

namespace gpuprof {

inline constexpr uint32_t kCuptiShimNotInitialized = 0;
inline constexpr uint32_t kCuptiShimTracing = 1;
inline constexpr uint32_t kCuptiShimTaken = 3;  // a tracer attached, another subscriber holds CUPTI
// Initialized, no tracer attached: CUPTI untouched. Read while attached, it
// is the shim not having noticed the attach yet (its watcher looks every
// 50 ms), or, at the stop, having switched off after gpuprof's detach.
inline constexpr uint32_t kCuptiShimDormant = 6;
// The job's own profiler asked for CUPTI while the shim traced, and the
// shim gave CUPTI up to it: GPU times stop there.
inline constexpr uint32_t kCuptiShimYielded = 7;
inline constexpr uint32_t kCuptiShimLastState = 7;

// "is tracing kernels, memcpy and memset", "found CUPTI taken by another
// subscriber (torch.profiler?)", ...: completes "the CUPTI shim ...".
const char* cupti_shim_state_text(uint32_t state);

}  // namespace gpuprof

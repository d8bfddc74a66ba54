// cupti_shim_state.h: what the CUPTI shim's gpuprof_cupti_state says, in
// words (cupti_shim/gpuprof_cupti_probes.h, GpuprofCuptiState).
#pragma once

#include <cstdint>

namespace gpuprof {

inline constexpr uint32_t kCuptiShimTracing = 1;
inline constexpr uint32_t kCuptiShimLastState = 5;

// "is tracing kernels, memcpy and memset", "found CUPTI taken by another
// subscriber (torch.profiler?)", ...: completes "the CUPTI shim ...".
const char* cupti_shim_state_text(uint32_t state);

}  // namespace gpuprof

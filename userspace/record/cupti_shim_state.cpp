// cupti_shim_state.cpp: gpuprof_cupti_state in words.
#include "record/cupti_shim_state.h"

namespace gpuprof {

const char* cupti_shim_state_text(uint32_t state) {
  switch (state) {
    case 0: return "is loaded but not initialized (the driver has not called InitializeInjection yet)";
    case 1: return "is tracing kernels, memcpy and memset";
    case 2: return "is disabled (GPUPROF_CUPTI=0)";
    case 3: return "found CUPTI taken by another subscriber (torch.profiler?)";
    case 4: return "found no libcupti";
    case 6: return "stayed dormant (initialized, but it had not switched CUPTI on for gpuprof when the recording ended)";
    case 7:
      return "gave CUPTI up to the job's own profiler (torch.profiler?), which asked for it during the recording: "
             "GPU times stop there";
    default: return "failed in CUPTI (see the target's stderr)";
  }
}

}  // namespace gpuprof

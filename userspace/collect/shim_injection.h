// shim_injection.h: `record -p PID --inject-cupti`: gpuprof's CUPTI shim
// loaded into a running job that was not started with
// CUDA_INJECTION64_PATH, so that its GPU times are recorded as a job
// started with it gets them (docs/injection.md).
//
// The shim is loaded through ptrace (target/library_injection.h) and its
// InitializeInjection called, as the CUDA driver calls it at cuInit; then
// the session attaches the shim's probes as for any target that maps it.
#pragma once

#include "base/result.h"

namespace gpuprof {

// Done when the shim has set its state (gpuprof_cupti_state): the line said
// on stderr names it. Nothing to do (said, not an error) when the target
// maps the shim already or its CUDA driver will load it at cuInit.
Result<void> inject_cupti_shim_into(int pid);

}  // namespace gpuprof

// process_session.h: `gpuprof record -p PID` and `record -- CMD` (and
// `top -p`): one target process, attached by pid or launched, its probes
// in when the launch attach machine says (launch_attach.h); the session's
// loop and finish are the one session's (session.h).
#pragma once

#include "collect/record_session.h"

namespace gpuprof {

// Runs a one-process session to its end (not config.system_wide).
RecordOutcome run_process_session(const RecordConfig& config);

}  // namespace gpuprof

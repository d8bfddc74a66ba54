// cli/system_top.h: `gpuprof top -a`: every PyTorch process on the machine.
//
// The system-wide session (system_session.h) feeds one live op table per
// process; the screen first lists the processes (pid, command, CPU %,
// ops/s, kernel launches/s), and Enter shows the op table of the one
// selected, as `top -p PID` draws it (Esc goes back). --batch prints the
// process list at each refresh.
#pragma once

#include "cli/top.h"

namespace gpuprof::cli {

int run_system_top(const TopOptions& options);

}  // namespace gpuprof::cli

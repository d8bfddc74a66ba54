// system_session.h: `gpuprof record -a` (and `top -a`): every process.
//
// CPU samples of every process on every CPU (the idle task aside), and op
// tracing in every process that maps a libtorch_cpu: each distinct
// libtorch_cpu file gets one uprobe_multi link without a pid filter, so the
// kernel puts its probes in every process that maps that file, now or later,
// and no other process ever runs the op program. Files are found at start
// (every process's maps) and as they are mapped (bpf/library_loads.bpf.c).
// Each file's ops are appended to the recording's op table (MORE_OPS), so op
// ids stay unique across libtorch builds; every process seen is described
// in PROCESSES, every thread's process in THREAD_PROCESSES
// (record_file.h). Launches are traced per process once it maps libcudart.
// With --push-every (config.schedule in time mode) each window also goes to
// a cycle file of its own, standing alone, for the pusher (record_outputs.h,
// docs/system-wide.md).
#pragma once

#include "collect/record_session.h"

namespace gpuprof {

// Runs `record -a` to its end (config.system_wide). Progress on stderr.
RecordOutcome run_system_session(const RecordConfig& config);

}  // namespace gpuprof

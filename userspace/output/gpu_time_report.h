// gpu_time_report.h: report --gpu, the text of gpu_time.h's breakdown
// (docs/gpu-time.md): per device a summary (busy, idle split into host
// wait, queued and launch not seen, time per category, compute and
// communication overlap, queue delay percentiles), then tables of its
// streams, of the host waits by what the launching thread ran, and of its
// kernels by GPU time.
#pragma once

#include <string>

#include "analyze/gpu_time.h"
#include "output/gpu_kernel_table.h"

namespace gpuprof {

// row_limit applies to the host-wait and kernel tables (< 0: every row).
// `shim` gives the shim's state and lost records, warned about as
// --kernels does.
std::string format_gpu_time_report(const std::vector<GpuDeviceTime>& devices, const CuptiShimInfo& shim,
                                   int row_limit);

}  // namespace gpuprof

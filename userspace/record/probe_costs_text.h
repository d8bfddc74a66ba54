// probe_costs_text.h: the probes' calibrated costs (recording.h,
// ProbeCosts) in words, for the line under tables and `gpuprof calibrate`.
// Apart from the calibration itself (probe_calibration.h), which loads BPF:
// reports and the fuzzers link this without it.
#pragma once

#include <string>

#include "record/recording.h"

namespace gpuprof {

// One line for reports: what is removed per call and how it was measured;
// the single-stepped kinds when some op has such sites, or every_kind.
std::string describe_probe_costs(const ProbeCosts& costs, bool every_kind = false);

}  // namespace gpuprof

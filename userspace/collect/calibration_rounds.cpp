#include "collect/calibration_rounds.h"

#include <cstdio>
#include <utility>

namespace gpuprof {

// Calibrates the op probes' costs on gpuprof's own code (probe_calibration.h),
// once per session, before the target's probes go in: the target does not
// wait on it.
std::optional<ProbeCosts> CalibrationRounds::at_attach(const DispatcherCatalog& catalog) {
  if (std::exchange(tried_, true)) return std::nullopt;
  std::string error;
  auto calibrator = value_or_error(ProbeCalibrator::start(), &error);
  std::optional<ProbeCosts> costs;
  if (calibrator) {
    if (auto calibrated = calibrator->calibrate()) costs = *calibrated;
    else error = calibrated.error();
  }
  if (!costs) {
    diagnostics_.warn("reports will show raw op times (the probes' cost is in them): " + error);
    return std::nullopt;
  }
  costs->op_sites = catalog.op_sites;
  at_attach_ = costs;
  if (config_.calibrate_through_recording) calibrator_ = std::move(calibrator);
  return costs;
}

// A calibration round now and then while the target runs: on the machine
// of docs/overhead.md the probes' cost moves by 20% with the host's phases,
// for seconds at a time, so the rounds follow the recording.
void CalibrationRounds::round() {
  if (!calibrator_ || !retry_.due()) return;
  std::string error;
  if (!succeeded(calibrator_->round(), &error)) {
    if (config_.verbose) std::fprintf(stderr, "gpuprof: calibration rounds stopped: %s\n", error.c_str());
    calibrator_.reset();
  }
}

// Once the target's probes are out: the estimate from every round, written
// after attach's, which it supersedes (recording.h, ProbeCosts).
void CalibrationRounds::record_through_recording(RecordOutputs& writer) {
  if (!calibrator_ || !at_attach_) return;
  std::string error;
  // Two rounds more: a recording shorter than the rounds' period still
  // gets an estimate (from attach's rounds and these).
  for (int i = 0; i < 2 && calibrator_->round(); i++) {
  }
  auto costs = calibrator_->through_rounds();
  calibrator_.reset();
  if (!costs) return;
  costs->op_sites = at_attach_->op_sites;
  if (!writer.set_probe_costs(*costs, &error)) return (void)diagnostics_.write_failed(error);
  if (config_.verbose)
    std::fprintf(stderr, "gpuprof: calibrated through the recording: %.2f us per call from %u rounds (at attach: %.2f us)\n",
                 costs->total_ns() / 1000.0, costs->rounds, at_attach_->total_ns() / 1000.0);
}

// Records them, so that reports can take them out of op times.
void CalibrationRounds::record(const ProbeCosts& costs, RecordOutputs& writer) {
  std::string error;
  if (!writer.set_probe_costs(costs, &error)) return (void)diagnostics_.write_failed(error);
  if (config_.on_probe_costs) config_.on_probe_costs(costs);
  if (config_.verbose) std::fprintf(stderr, "gpuprof: %s\n", describe_probe_costs(costs).c_str());
}

}  // namespace gpuprof

#include "collect/calibration_rounds.h"

#include <algorithm>
#include <cstdio>
#include <utility>

#include "record/probe_costs_text.h"

namespace gpuprof {

// Calibrates the op probes' costs on gpuprof's own code (probe_calibration.h),
// once per session, before the target's probes go in: the target does not
// wait on it.
bool CalibrationRounds::at_attach(const std::vector<uint8_t>& op_sites) {
  if (std::exchange(tried_, true)) return false;
  auto calibrator = ProbeCalibrator::start();
  std::optional<ProbeCosts> costs;
  std::string error;
  if (!calibrator) error = calibrator.error();
  else if (auto calibrated = (*calibrator)->calibrate()) costs = *calibrated;
  else error = calibrated.error();
  if (!costs) {
    diagnostics_.warn("reports will show raw op times (the probes' cost is in them): " + error);
    return false;
  }
  costs->op_sites = op_sites;
  at_attach_ = costs;
  if (config_.calibrate_through_recording) calibrator_ = std::move(*calibrator);
  return true;
}

void CalibrationRounds::add_op_sites(uint32_t first_op, const std::vector<uint8_t>& sites) {
  if (!at_attach_) return;
  std::vector<uint8_t>& all = at_attach_->op_sites;
  if (all.size() < first_op + sites.size()) all.resize(first_op + sites.size(), 0);
  std::copy(sites.begin(), sites.end(), all.begin() + first_op);
  // A live view compensates with the sites it knows (top -a).
  if (attach_recorded_) config_.live_consumer().probe_costs(*at_attach_);
}

// A calibration round now and then while the target runs: on the machine
// of docs/overhead.md the probes' cost moves by 20% with the host's phases,
// for seconds at a time, so the rounds follow the recording.
void CalibrationRounds::round() {
  if (!calibrator_ || !retry_.due()) return;
  if (Result<void> round = calibrator_->round(); !round) {
    if (config_.verbose) std::fprintf(stderr, "gpuprof: calibration rounds stopped: %s\n", round.error().c_str());
    calibrator_.reset();
  }
}

// Once the target's probes are out: the estimate from every round, written
// after attach's, which it supersedes (recording.h, ProbeCosts).
void CalibrationRounds::record_rounds(const Store& store) {
  if (!calibrator_ || !at_attach_) return;
  // Two rounds more: a recording shorter than the rounds' period still
  // gets an estimate (from attach's rounds and these).
  for (int i = 0; i < 2 && calibrator_->round(); i++) {
  }
  auto costs = calibrator_->through_rounds();
  calibrator_.reset();
  if (!costs) return;
  costs->op_sites = at_attach_->op_sites;
  if (Result<void> stored = store(*costs); !stored) return (void)diagnostics_.write_failed(stored.error());
  if (config_.verbose)
    std::fprintf(stderr, "gpuprof: calibrated through the recording: %.2f us per call from %u rounds (at attach: %.2f us)\n",
                 costs->total_ns() / 1000.0, costs->rounds, at_attach_->total_ns() / 1000.0);
}

// Records attach's, so that reports can take them out of op times.
void CalibrationRounds::record_attach(const Store& store) {
  if (!at_attach_ || std::exchange(attach_recorded_, true)) return;
  if (Result<void> stored = store(*at_attach_); !stored) return (void)diagnostics_.write_failed(stored.error());
  config_.live_consumer().probe_costs(*at_attach_);
  if (config_.verbose) std::fprintf(stderr, "gpuprof: %s\n", describe_probe_costs(*at_attach_).c_str());
}

}  // namespace gpuprof

// calibration_rounds.h: the op probes' cost, measured on gpuprof's own
// code (probe_calibration.h) once before the target's probes go in, then in
// a round now and then while recording, and recorded (recording.h,
// ProbeCosts) so that reports can take it out of op times.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "collect/diagnostics.h"
#include "collect/record_session.h"
#include "collect/retry_every.h"
#include "probe/probe_calibration.h"
#include "record/record_outputs.h"
#include "torch/dispatcher_catalog.h"

namespace gpuprof {

class CalibrationRounds {
 public:
  CalibrationRounds(const RecordConfig& config, Diagnostics& diagnostics) : config_(config), diagnostics_(diagnostics) {}

  // Attach's calibration (once per session, failed or not; nullopt when
  // it failed or was done already).
  std::optional<ProbeCosts> at_attach(const DispatcherCatalog& catalog);
  // Records `costs` (attach's), and hands them to a live view.
  void record(const ProbeCosts& costs, RecordOutputs& writer);
  // A round, when one is due (the loop's turn).
  void round();
  // At detach: the estimate from every round, recorded after attach's.
  void record_through_recording(RecordOutputs& writer);

 private:
  // A round (about 10 ms of gpuprof's own CPU on the machine of
  // docs/overhead.md) this often while recording: 4% of a core.
  static constexpr uint64_t kRoundIntervalNs = 250'000'000;

  const RecordConfig& config_;
  Diagnostics& diagnostics_;
  bool tried_ = false;  // once per session, failed or not
  // Attach's calibration (and the op sites' kinds), and the calibrator that
  // keeps running rounds through the recording.
  std::optional<ProbeCosts> at_attach_;
  std::unique_ptr<ProbeCalibrator> calibrator_;
  RetryEvery retry_{kRoundIntervalNs};
};

}  // namespace gpuprof

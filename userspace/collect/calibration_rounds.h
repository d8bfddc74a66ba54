// calibration_rounds.h: the op probes' cost, measured on gpuprof's own
// code (probe_calibration.h) once before the target's probes go in, then in
// a round now and then while recording, and recorded (recording.h,
// ProbeCosts) so that reports can take it out of op times. Used by record
// -p / -- CMD (one libtorch, its op sites known at attach) and by record -a
// (libtorch files found as processes map them: their op sites are added as
// they come, and the estimate recorded at the end holds them all).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "collect/diagnostics.h"
#include "collect/record_session.h"
#include "collect/retry_every.h"
#include "probe/probe_calibration.h"

namespace gpuprof {

class CalibrationRounds {
 public:
  CalibrationRounds(const RecordConfig& config, Diagnostics& diagnostics) : config_(config), diagnostics_(diagnostics) {}

  // Attach's calibration (once per session, failed or not): true when it
  // succeeded. `op_sites`: the kinds of the op sites known now, by op id
  // (DispatcherCatalog::op_sites).
  bool at_attach(const std::vector<uint8_t>& op_sites);
  // The kinds of ops [first_op, first_op + sites.size()) (record -a: a
  // libtorch file found later, its ops appended to the op table).
  void add_op_sites(uint32_t first_op, const std::vector<uint8_t>& sites);
  // Records attach's costs (with the op sites known now) in `writer` (a
  // RecordWriter or RecordOutputs), once, and hands them to a live view.
  template <class Writer>
  void record(Writer& writer) {
    record_attach([&writer](const ProbeCosts& c) { return writer.set_probe_costs(c); });
  }
  // A round, when one is due (the loop's turn).
  void round();
  // At detach: the estimate from every round, with every op site, recorded
  // after attach's (which it supersedes).
  template <class Writer>
  void record_through_recording(Writer& writer) {
    record_rounds([&writer](const ProbeCosts& c) { return writer.set_probe_costs(c); });
  }

 private:
  using Store = std::function<Result<void>(const ProbeCosts&)>;
  void record_attach(const Store& store);
  void record_rounds(const Store& store);

  // A round (about 10 ms of gpuprof's own CPU on the machine of
  // docs/overhead.md) this often while recording: 4% of a core.
  static constexpr uint64_t kRoundIntervalNs = 250'000'000;

  const RecordConfig& config_;
  Diagnostics& diagnostics_;
  bool tried_ = false;  // once per session, failed or not
  bool attach_recorded_ = false;
  // Attach's calibration (and the op sites' kinds), and the calibrator that
  // keeps running rounds through the recording.
  std::optional<ProbeCosts> at_attach_;
  std::unique_ptr<ProbeCalibrator> calibrator_;
  RetryEvery retry_{kRoundIntervalNs};
};

}  // namespace gpuprof

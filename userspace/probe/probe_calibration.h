// probe_calibration.h: what one hit of an op probe costs the traced thread,
// measured on the machine being profiled (docs/overhead.md, "Compensation").
//
// Each op probe is an ordinary uprobe: the hit traps into the kernel, which
// runs the BPF program (its bpf_ktime_get_ns() is the event's timestamp),
// emulates or single-steps the probed instruction and returns to the
// thread. The thread loses that time on both sides of the timestamp, and
// which side decides whose time it inflates: the op's own, or its parent's
// (op_timeline.h, "Compensation"). calibrate_probe_costs() measures both
// sides on gpuprof's own code, with a private copy of the op tracer (the
// same BPF programs, ring buffer and attach path as the op sites):
//
//  * four functions of gpuprof's own hold the instruction kinds the op
//    sites have: a `push` (an entry probe, emulated), a `jne` (an exit probe
//    on the stack-protector branch, emulated), a `sub` (an entry that is
//    not a push: single-stepped out of line) and a `ret` (an exit in
//    --exit-mode ret, or in a body without the branch: single-stepped);
//  * the calibrating thread calls a probed function between two
//    CLOCK_MONOTONIC reads (the BPF clock); `before` = the event's timestamp
//    less the first read, `after` = the second read less the timestamp, each
//    less half the cost of the two reads around an unprobed call;
//  * in rounds of kCallsPerRound hits of each kind, in turn, each part the
//    median of its round, at least kMinRounds and for kMinRoundsNs, until
//    kStableRounds consecutive rounds' totals lie within kStableSpread of
//    their median (or kMaxRoundsNs: the spread is recorded either way). Of the windows
//    that agree, the one of the lowest total is kept (a slow phase of the
//    machine only ever inflates rounds); the estimate is the median of its
//    rounds' parts. record keeps running rounds through the recording
//    (ProbeCalibrator below) and writes their estimate at detach
//    (recording.h, ProbeCosts).
//
// What it does not see (docs/overhead.md, "Limits"): the target's caches
// (its hits come between real ops, the calibration's back to back), other
// consumers of the same probe site (a second profiler), and the extra BPF
// work of --record-shapes and --with-stack, which reads the target's
// memory.
#pragma once

#include <memory>
#include <optional>
#include "base/result.h"
#include "record/probe_costs_text.h"
#include "record/recording.h"

namespace gpuprof {

// A calibration kept through a recording: its BPF programs stay loaded and
// attached to gpuprof's own functions, so that rounds can be run now and
// then in the calling thread while the target runs. On the machine of
// docs/overhead.md a probe hit costs 20% more in slow phases of the host
// that can last seconds: an estimate from rounds spread through the
// recording pays what the job paid, one taken at attach only what the
// machine cost then.
class ProbeCalibrator {
 public:
  // Loads and attaches the calibration's probes, and warms them up.
  static Result<std::unique_ptr<ProbeCalibrator>> start();
  ~ProbeCalibrator();
  // One round (kCallsPerRound hits of each kind, about 10 ms on that
  // machine), kept for through_rounds().
  Result<void> round();
  // Rounds until the estimate is stable, as calibrate_probe_costs() below.
  Result<ProbeCosts> calibrate();
  // Every round run so far (those of calibrate() too): each part the mean
  // of the middle 80% of the rounds' medians; nullopt under kMinRounds.
  std::optional<ProbeCosts> through_rounds() const;

 private:
  ProbeCalibrator();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Runs the calibration in the calling thread (about 0.5 s on the machine of
// docs/overhead.md). Fails (the error says why) when the BPF programs
// cannot be loaded or attached to gpuprof's own file, or when events go
// missing.
// op_sites is left empty: the caller knows its op sites' kinds.
Result<ProbeCosts> calibrate_probe_costs();


}  // namespace gpuprof

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
//    rounds' parts. record calibrates again at detach and keeps the lower
//    (recording.h, ProbeCosts).
//
// What it does not see (docs/overhead.md, "Limits"): the target's caches
// (its hits come between real ops, the calibration's back to back), other
// consumers of the same probe site (a second profiler), and the extra BPF
// work of --record-shapes and --with-stack, which reads the target's
// memory.
#pragma once

#include <optional>
#include <string>

#include "probe_costs_text.h"
#include "recording.h"

namespace gpuprof {

// Runs the calibration in the calling thread (about 0.5 s on the machine of
// docs/overhead.md). Fails (nullopt, *error says why) when the BPF programs
// cannot be loaded or attached to gpuprof's own file, or when events go
// missing.
// op_sites is left empty: the caller knows its op sites' kinds.
std::optional<ProbeCosts> calibrate_probe_costs(std::string* error);


}  // namespace gpuprof

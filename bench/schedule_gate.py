#!/usr/bin/env python3
"""What a --schedule's waiting steps cost the job: gated in BPF vs detached.

    sudo /usr/bin/python3 bench/schedule_gate.py [--rounds 4] [--python /usr/bin/python3]

During wait and warmup steps gpuprof records nothing. It could get there
two ways: keep the probes in and drop the events in the BPF program (what
it does: the decision is exact at every step boundary), or take the probes
out and put them back when the next recorded step starts. This measures
both sides on tests/workloads/busy_loop.py (small torch ops), in one run,
rounds rotating the order:
  baseline   nothing attached (what detached probes cost the job)
  record     `record -p PID` (every event recorded)
  gated      `record -p PID --schedule wait=1000000,active=1 --step-time 3600`
             (every step waits: each op hits its probes, the BPF gate drops it)
  gated-op   the same with --step-op aten::mul (a step starts at each
             torch.mul: one STEP event per loop step gets through)
and the time gpuprof takes to attach the probes (its `attach X ms`) and to
detach them (`detach X ms`), which detaching during waits would pay per
cycle. Prints us per op added over the baseline, and the break-even: how
many op calls a wait phase must hold for detaching to cost the job less
than gating. The loop checks its results every cycle (exit status 1 if any
differed).
"""
import argparse
import re
import statistics
import sys

from loop_bench import BusyLoop, measure_variants, ops_per_step, print_added

WHO = "schedule_gate"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()
    loop = BusyLoop(args.python, WHO)
    record_file = loop.work / "bench.gpuprof"
    waiting = ["--schedule", "wait=1000000,active=1"]
    argv = {"baseline": None,
            "record": ["record", "-p", loop.pid, "-q", "-o", record_file],
            "gated": ["record", "-p", loop.pid, "-q", "-o", loop.work / "g.gpuprof", *waiting, "--step-time", "3600"],
            "gated-op": ["record", "-p", loop.pid, "-q", "-o", loop.work / "o.gpuprof", *waiting,
                         "--step-op", "aten::mul"]}
    attach_ms, detach_ms = [], []

    def probe_times(variant, line, rest):
        if m := re.search(r"\(attach ([\d.]+) ms\)", line):
            attach_ms.append(float(m.group(1)))
        if m := re.search(r"detach ([\d.]+) ms", rest):
            detach_ms.append(float(m.group(1)))

    try:
        rates = measure_variants(loop, argv, args.rounds, WHO, probe_times)
        per_step = ops_per_step(record_file)
        result = loop.stop()
    finally:
        loop.kill()
    added = print_added(rates, per_step, args.rounds)
    attach_med, detach_med = statistics.median(attach_ms), statistics.median(detach_ms)
    print(f"gated / record: {added['gated'] / added['record']:.2f}x per op")
    print(f"probes: attach {attach_med:.1f} ms, detach {detach_med:.1f} ms (medians of {len(attach_ms)})")
    if added["gated"] > 0:
        calls = (attach_med + detach_med) * 1000 / added["gated"]
        print(f"break-even: detaching for a wait phase costs the job less than gating only when the phase "
              f"holds more than {calls:,.0f} op calls (attach + detach time / gated cost per op; and it would "
              f"lose the exact step boundaries)")
    print(f"cycles {result['cycles']}, mismatches {result['mismatches']}")
    return 0 if result["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

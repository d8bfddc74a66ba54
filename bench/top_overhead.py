#!/usr/bin/env python3
"""What `gpuprof top` costs a running job, next to `gpuprof record`, in one run.

    sudo /usr/bin/python3 bench/top_overhead.py [--rounds 6] [--python /usr/bin/python3]

Starts tests/workloads/busy_loop.py (a loop of small torch ops: add, mul,
view/transpose/reshape on 16 float64 values) and, in rounds, measures its
speed (steps per second, wall clock, the median of 4 windows of 0.25 s) with
nothing attached, with `gpuprof record -p PID -q -o FILE` attached, and with
`gpuprof top -p PID --batch --interval 1` attached (output discarded); the
order rotates each round. Both attach the same op probes (one session, the
same BPF programs); top hands the events to an in-memory table instead of a
file. Prints, per variant, the step time and what it adds to the baseline's
(us per step and per op, the median over rounds with the range), and
top / record. Ops per step come from one record attach (its event count).
The loop checks its own result every cycle: exit status 1 if any cycle
differed (a profiler that changed the job's results).
"""
import argparse
import sys

from loop_bench import BusyLoop, measure_variants, ops_per_step, print_added

WHO = "top_overhead"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()
    loop = BusyLoop(args.python, WHO)
    record_file = loop.work / "bench.gpuprof"
    argv = {"baseline": None,
            "record": ["record", "-p", loop.pid, "-q", "-o", record_file],
            "top": ["top", "-p", loop.pid, "--batch", "--interval", "1"]}
    try:
        rates = measure_variants(loop, argv, args.rounds, WHO)
        per_step = ops_per_step(record_file)
        result = loop.stop()
    finally:
        loop.kill()
    added = print_added(rates, per_step, args.rounds)
    if added.get("record"):
        print(f"top / record: {added['top'] / added['record']:.2f}x")
    print(f"cycles {result['cycles']}, mismatches {result['mismatches']}")
    return 0 if result["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

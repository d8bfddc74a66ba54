"""Long-running target: a deterministic loop of small ops whose speed can be measured.

Usage: busy_loop.py WORKDIR

The loop repeats one deterministic "cycle": CYCLE_STEPS steps on a small
float64 tensor, each a torch.add, a torch.mul and a view/transpose/reshape
(x.view(4, 4).t().reshape(16): several nested aten ops per Python call, so
probes show in the loop's speed), then a weighted sum. The first cycle's result is the
reference; every later cycle must give exactly the same value, so a target
disturbed by a profiler shows up as a mismatch. Between cycles the script
looks at WORKDIR for requests from the test:

  measure-LABEL   measure the loop's speed now: MEASURE_WINDOWS windows of
                  MEASURE_WINDOW_S seconds each; writes rate-LABEL, JSON
                  {"best": steps/s, "median": steps/s, "windows": [steps/s...]}
  mark-LABEL      write marked-LABEL: the number of loop steps run so far
                  (requests are answered between cycles, so it counts
                  whole cycles: that many torch.add calls, and as many
                  torch.mul). Marks around a recording bound the calls it
                  can hold.
  stop            finish: write result.json {"reference", "cycles",
                  "mismatches"}, print `checksum <reference as hex>` and exit
                  0 if no cycle mismatched, 1 otherwise.

It writes `ready` (its pid) after the first cycle. If `stop` exists from the
start, it exits after that first cycle (the unprofiled baseline run). Every
wait is bounded: after MAX_RUN_S seconds (BUSY_LOOP_MAX_RUN_S in the
environment, default 300) without `stop` it exits with status 3.
"""
import json
import os
import sys
import time

from handshake import signal_file  # noqa: E402

CYCLE_STEPS = 100
MEASURE_WINDOW_S = 0.25
MEASURE_WINDOWS = 4
MAX_RUN_S = float(os.environ.get("BUSY_LOOP_MAX_RUN_S", "300"))  # long benchmarks raise it




def main():
    workdir = sys.argv[1]
    import torch

    torch.set_num_threads(1)
    base = torch.linspace(-1.0, 1.0, 16, dtype=torch.float64)
    weights = torch.arange(1.0, 17.0, dtype=torch.float64)

    def cycle():
        x = base
        for j in range(CYCLE_STEPS):
            x = torch.add(x, 0.1 * j)
            x = torch.mul(x, 0.7)
            x = x.view(4, 4).t().reshape(16)
        return float(torch.dot(x, weights))

    reference = cycle()
    cycles = 1
    mismatches = 0
    signal_file(workdir, "ready", str(os.getpid()))
    deadline = time.monotonic() + MAX_RUN_S
    while True:
        entries = set(os.listdir(workdir))
        if "stop" in entries:
            break
        if time.monotonic() > deadline:
            sys.stderr.write("busy_loop.py: no `stop` after %s s\n" % MAX_RUN_S)
            return 3
        for name in sorted(entries):
            if name.startswith("mark-") and "marked-" + name[len("mark-"):] not in entries:
                signal_file(workdir, "marked-" + name[len("mark-"):], str(cycles * CYCLE_STEPS))
            if name.startswith("measure-") and "rate-" + name[len("measure-"):] not in entries:
                rates = []
                for _ in range(MEASURE_WINDOWS):
                    n = 0
                    start = time.perf_counter()
                    while time.perf_counter() - start < MEASURE_WINDOW_S:
                        if cycle() != reference:
                            mismatches += 1
                        n += 1
                    rates.append(n * CYCLE_STEPS / (time.perf_counter() - start))
                    cycles += n
                rates.sort()
                signal_file(workdir, "rate-" + name[len("measure-"):],
                            json.dumps({"best": rates[-1], "median": rates[len(rates) // 2], "windows": rates}))
        if cycle() != reference:
            mismatches += 1
        cycles += 1

    result = {"reference": reference.hex(), "cycles": cycles, "mismatches": mismatches}
    signal_file(workdir, "result.json", json.dumps(result))
    print("checksum %s" % reference.hex())
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

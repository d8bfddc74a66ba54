"""A long-lived target for the kill test: small ops and caught c10 errors,
its results checked all along.

Usage: kill_target.py WORKDIR

Computes a reference checksum of one cycle (small float64 ops: add, mul,
view/t/reshape, mm, a softmax), writes `ready` (its pid), then repeats the
cycle until WORKDIR/stop appears: every cycle also raises and catches a
c10::Error inside aten::mm (mismatched shapes), so catch probes are hit, and
compares its checksum with the reference. On `stop` it writes result.json
({"cycles", "mismatches", "errors_caught"}) and exits 0 only if no cycle
differed and every error was caught. Bounded: exits 3 after MAX_RUN_S.
"""
import json
import os
import sys
import time

import torch

from handshake import signal_file

MAX_RUN_S = 900.0


def cycle():
    x = torch.arange(16, dtype=torch.float64) / 16
    m = torch.ones(4, 4, dtype=torch.float64)
    for _ in range(20):
        x = torch.add(x, 0.5)
        x = torch.mul(x, 0.75)
        x = x.view(4, 4).t().reshape(16)
        x = torch.mm(m, x.view(4, 4)).reshape(16) / 4
        x = torch.softmax(x, 0) * 16
    return float(x.sum())


def main():
    workdir = sys.argv[1]
    reference = cycle()
    signal_file(workdir, "ready", str(os.getpid()))
    cycles = mismatches = caught = 0
    bad = torch.ones(2, 3)
    deadline = time.monotonic() + MAX_RUN_S
    while not os.path.exists(os.path.join(workdir, "stop")):
        if time.monotonic() > deadline:
            sys.exit(3)
        if cycle() != reference:
            mismatches += 1
        try:
            torch.mm(bad, bad)
        except RuntimeError:
            caught += 1
        cycles += 1
    with open(os.path.join(workdir, "result.json"), "w") as f:
        json.dump({"cycles": cycles, "mismatches": mismatches, "errors_caught": caught}, f)
    sys.exit(0 if mismatches == 0 and caught == cycles else 1)


if __name__ == "__main__":
    main()

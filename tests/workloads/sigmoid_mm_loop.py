"""A loop whose every iteration is timed: one torch.sigmoid, then 50 x relu(mm).

Usage: sigmoid_mm_loop.py WORKDIR SECONDS [--now]

Writes `ready` (its pid) and waits for `go` (or starts at once with --now,
for launch mode), then loops for SECONDS. Iteration i calls torch.sigmoid
once, between CLOCK_MONOTONIC readings t0 and t1 (time.monotonic_ns: the
clock of gpuprof's events), then relu(mm(y, w)) 50 times. At the end it
writes `iterations.json`: {"sigmoid": [[t0, t1], ...], "mm_per_iteration":
50}, so a test knows which iterations' sigmoid call falls inside any time
window (and which straddle its edges), and exits 0.
"""
import json
import os
import sys
import time

from handshake import signal_file, wait_for_file

MM_PER_ITERATION = 50


def main():
    workdir, seconds = sys.argv[1], float(sys.argv[2])
    import torch

    torch.set_num_threads(1)
    x = torch.randn(16, 16)
    w = torch.randn(16, 16)
    y = torch.relu(torch.mm(x, w))  # warm-up
    if "--now" not in sys.argv[3:]:
        signal_file(workdir, "ready", str(os.getpid()))
        wait_for_file(workdir, "go")
    times = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.monotonic_ns()
        torch.sigmoid(y)
        times.append((t0, time.monotonic_ns()))
        for _ in range(MM_PER_ITERATION):
            y = torch.relu(torch.mm(x, w))
    signal_file(workdir, "iterations.json", json.dumps({"sigmoid": times, "mm_per_iteration": MM_PER_ITERATION}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

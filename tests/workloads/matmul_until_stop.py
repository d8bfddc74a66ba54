"""Target for `gpuprof top` with a count to check: matmul_loop.py's step, run until told to stop.

Usage: matmul_until_stop.py WORKDIR

Writes `ready` (its pid) after a warm-up step and waits for `go`; then runs
steps of (x @ w + 1).relu() / 2 on 64x64 float64 tensors until `stop`
exists in WORKDIR (looked for between steps, with no torch op), then writes
`steps` (how many it ran after `go`) and exits 0. Each step is one call of
aten::matmul (-> aten::mm), aten::add, aten::relu and aten::div, so a
profiler attached before `go` counts exactly `steps` of each. It gives up
(exit 3) after MAX_RUN_S seconds without `stop`, so a broken test cannot
leave it spinning.
"""
import os
import sys
import time

from handshake import signal_file, wait_for_file

MAX_RUN_S = 300


def main():
    workdir = sys.argv[1]
    import torch
    torch.manual_seed(0)
    w = torch.rand(64, 64, dtype=torch.float64) / 64
    x = torch.rand(64, 64, dtype=torch.float64)
    (x @ w + 1).relu()
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    stop = os.path.join(workdir, "stop")
    deadline = time.monotonic() + MAX_RUN_S
    steps = 0
    while not os.path.exists(stop):
        x = (x @ w + 1).relu() / 2
        steps += 1
        if time.monotonic() > deadline:
            return 3
    signal_file(workdir, "steps", str(steps))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Target for `gpuprof top`: a fixed loop of small matmul + add + relu steps.

Usage: matmul_loop.py WORKDIR STEPS

Writes `ready` (its pid) after a warm-up step and waits for `go`; then runs
STEPS steps of (x @ w + 1).relu() on 64x64 float64 tensors, each feeding the
next, and prints `checksum <sum as hex>`: the same with or without a
profiler attached, detached, or killed midway.
"""
import os
import sys

from handshake import signal_file, wait_for_file


def main():
    workdir, steps = sys.argv[1], int(sys.argv[2])
    import torch
    torch.manual_seed(0)
    w = torch.rand(64, 64, dtype=torch.float64) / 64
    x = torch.rand(64, 64, dtype=torch.float64)
    (x @ w + 1).relu()
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    for _ in range(steps):
        x = (x @ w + 1).relu() / 2
    print("checksum", float(x.sum()).hex(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

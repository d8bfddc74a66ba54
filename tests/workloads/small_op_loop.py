"""A loop of the smallest ops, for as long as it is told: the record file's worst case per second.

Usage: small_op_loop.py SECONDS [READY_FILE]

Adds 1-element tensors in a loop (torch.add: a few nested aten ops per
call) for SECONDS seconds, then prints `loops N` and exits 0. With
READY_FILE it writes its pid there once torch is imported and the first
add ran, so a profiler can attach (bench/record_size.py).
"""
import os
import sys
import time

import torch


def main():
    seconds = float(sys.argv[1])
    a, b = torch.ones(1), torch.ones(1)
    torch.add(a, b)
    if len(sys.argv) > 2:
        with open(sys.argv[2], "w") as ready:
            ready.write(str(os.getpid()))
    end = time.monotonic() + seconds
    loops = 0
    while time.monotonic() < end:
        for _ in range(1000):
            torch.add(a, b)
        loops += 1000
    print(f"loops {loops}")


if __name__ == "__main__":
    main()

"""Known-answer workload for CPU sampling: most CPU time inside one aten op.

Usage: mm_dominated.py WORKDIR SECONDS. Writes `ready` (its pid) and waits
for `go`; then loops for SECONDS: a 256x256 torch.mm (inside aten::mm) and a
stretch of pure Python arithmetic (outside any op) sized to take about 40%
of the mm's time, measuring with the thread's CPU clock how much of its CPU
time was spent inside the torch.mm calls; writes that as `truth.json`
{"mm_fraction": f, "cpu_s": s, "mm_calls": n}, waits for `exit` (so that the recording can
stop before the interpreter's teardown) and exits.
"""
import json
import os
import random
import sys
import time

from handshake import signal_file, wait_for_file


def main():
    workdir, seconds = sys.argv[1], float(sys.argv[2])
    import torch
    torch.set_num_threads(1)
    a = torch.randn(256, 256)
    b = torch.randn(256, 256)
    torch.mm(a, b)
    # Size the Python stretch from the two costs on this machine.
    t0 = time.thread_time_ns()
    for _ in range(5):
        torch.mm(a, b)
    mm_ns = (time.thread_time_ns() - t0) / 5
    t0 = time.thread_time_ns()
    x = 0
    for i in range(20000):
        x = (x * 31 + i) % 1000003
    per_iteration_ns = (time.thread_time_ns() - t0) / 20000
    iterations = max(1, int(0.4 * mm_ns / per_iteration_ns))
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    in_mm = 0
    mm_calls = 0
    start = time.thread_time_ns()
    end = time.monotonic() + seconds
    x = 0
    stretches = random.Random(20261122)
    while time.monotonic() < end:
        t0 = time.thread_time_ns()
        torch.mm(a, b)
        in_mm += time.thread_time_ns() - t0
        mm_calls += 1
        # A Python stretch of random length: a loop of fixed period can run in
        # step with the sampling clock and bias the samples' split.
        for i in range(int(iterations * stretches.uniform(0.5, 1.5))):  # pure Python, no op
            x = (x * 31 + i) % 1000003
    total = time.thread_time_ns() - start
    signal_file(workdir, "truth.json", json.dumps({"mm_fraction": in_mm / total, "cpu_s": total / 1e9,
                                                     "mm_calls": mm_calls}))
    wait_for_file(workdir, "exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

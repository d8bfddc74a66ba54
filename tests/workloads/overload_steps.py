"""A loop whose step ops are known call by call: two overloads of aten::add and one aten::mul.

Usage: overload_steps.py WORKDIR ITERATIONS [SPIN_SECONDS]

Writes `ready` (its pid) and waits for `go` (written once gpuprof traces
it), then runs ITERATIONS iterations; iteration i calls, in this order:

  torch.add(a, b, out=c)     aten::add.out, once
  torch.add(a, b)            aten::add.Tensor, i + 1 times
  torch.mul(a, b)            aten::mul.Tensor, once

and then, with SPIN_SECONDS, spins in pure Python for that much of its
thread's CPU time. None of these ops calls another op, and no other op runs
from `go` until the last iteration ends (the results are checked after it:
reading a tensor runs ops), so a test knows which calls each --step-op
choice puts in each step. Before each iteration, and after the last, it reads its
thread's CPU time and the number of stretches it ran on a CPU
(/proc/thread-self/schedstat: exact to the ns); at the end `iterations.json`
holds them ({"cpu_ns": [...], "runs": [...]}, ITERATIONS + 1 readings), and
it exits 0 when every result was right, 1 otherwise.
"""
import json
import os
import sys
import time

from handshake import signal_file, wait_for_file


def schedstat():
    with open("/proc/thread-self/schedstat") as f:
        fields = f.read().split()
    return int(fields[0]), int(fields[2])


def main():
    workdir, iterations = sys.argv[1], int(sys.argv[2])
    spin_ns = int(float(sys.argv[3]) * 1e9) if len(sys.argv) > 3 else 0
    import torch

    torch.set_num_threads(1)
    a = torch.ones(4)
    b = torch.full((4,), 2.0)
    c = torch.empty(4)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    readings = []
    sums, products = [], []
    for i in range(iterations):
        readings.append(schedstat())
        torch.add(a, b, out=c)
        for _ in range(i + 1):
            sums.append(torch.add(a, b))
        products.append(torch.mul(a, b))
        end = time.thread_time_ns() + spin_ns
        x = 0
        while time.thread_time_ns() < end:
            for j in range(1000):
                x = (x * 31 + j) % 1000003
    readings.append(schedstat())
    # tolist() runs ops of its own (aten::resolve_conj, aten::resolve_neg).
    ok = c.tolist() == [3.0] * 4 and all(s.tolist() == [3.0] * 4 for s in sums) and \
        all(p.tolist() == [2.0] * 4 for p in products)
    signal_file(workdir, "iterations.json", json.dumps({"cpu_ns": [r[0] for r in readings],
                                                        "runs": [r[1] for r in readings]}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

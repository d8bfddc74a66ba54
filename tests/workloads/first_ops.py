"""Launch-mode target: its very first ops are distinctive, then the same again under torch.profiler.

Usage: first_ops.py WORKDIR [EXIT_STATUS]

Run by `gpuprof record -- /usr/bin/python3 first_ops.py WORKDIR`. Right
after `import torch` (which runs no aten op in torch 1.13) it runs SEQUENCE:
torch.zeros(7) (the process's first op), torch.arange(11), LOGADDEXP_CALLS x
torch.logaddexp, HYPOT_CALLS x torch.hypot. Then it runs SEQUENCE once more
inside torch.profiler.profile(CPU) and writes that profile's key_averages()
to WORKDIR/torch_ops.json ({key: {count, self_cpu_time_total,
cpu_time_total}}). So a tracer that saw every op from the first one on
counts exactly twice what torch.profiler counts, op by op.

It prints `first_ops: done <value>` (a checksum of the results) and exits
with EXIT_STATUS (default 0). Nothing here waits, so nothing can hang.
"""
import json
import os
import sys

import torch

LOGADDEXP_CALLS = 13
HYPOT_CALLS = 5


def sequence():
    zeros = torch.zeros(7)  # the very first op of the process
    steps = torch.arange(11)
    total = zeros
    for _ in range(LOGADDEXP_CALLS):
        total = torch.logaddexp(total, zeros)
    for _ in range(HYPOT_CALLS):
        total = torch.hypot(total, zeros)
    return sum(total.tolist()) + sum(steps.tolist())  # tolist(): no aten op


def main():
    workdir = sys.argv[1]
    exit_status = int(sys.argv[2]) if len(sys.argv) > 2 else 0
    first = sequence()

    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        second = sequence()
    ops = {
        evt.key: {"count": evt.count, "self_cpu_time_total": evt.self_cpu_time_total,
                  "cpu_time_total": evt.cpu_time_total}
        for evt in prof.key_averages()
    }
    tmp = os.path.join(workdir, ".torch_ops.json.tmp")
    with open(tmp, "w") as f:
        json.dump(ops, f, indent=1, sort_keys=True)
    os.rename(tmp, os.path.join(workdir, "torch_ops.json"))
    assert first == second, (first, second)
    print("first_ops: done %r" % first, flush=True)
    return exit_status


if __name__ == "__main__":
    sys.exit(main())

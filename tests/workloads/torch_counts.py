"""A PyTorch process with known op counts, profiled by torch.profiler itself.

Usage: torch_counts.py WORKDIR NAME N

Writes `ready-NAME` (its pid), waits for `go` (a file shared by every
process of a test), then runs N steps of mm, N of add and 2N of relu, each
with a known result, under torch.profiler, and writes `truth-NAME`
({"pid": ..., "calls": {op: count}, "ok": bool}: torch.profiler's own call
counts of aten::mm/add/relu, and whether every result was right); then waits
for `exit-NAME` and exits 0 when every result was right. No other mm, add or
relu runs in the process, so gpuprof's counts of those ops over the whole
process must equal torch's.
"""
import json
import os
import sys

import torch

from handshake import signal_file, wait_for_file

OPS = ("aten::mm", "aten::add", "aten::relu")


def main():
    workdir, name, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    torch.set_num_threads(1)
    a = torch.ones(16, 16)
    b = torch.full((16, 16), -1.0)
    signal_file(workdir, "ready-" + name, str(os.getpid()))
    wait_for_file(workdir, "go")
    ok = True
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(n):
            ok &= float(torch.mm(a, a)[0, 0]) == 16.0
            ok &= float(torch.add(a, b)[0, 0]) == 0.0
            ok &= float(torch.relu(b)[0, 0]) == 0.0
            ok &= float(torch.relu(a)[0, 0]) == 1.0
    calls = {e.key: e.count for e in prof.key_averages() if e.key in OPS}
    signal_file(workdir, "truth-" + name, json.dumps({"pid": os.getpid(), "calls": calls, "ok": bool(ok)}))
    wait_for_file(workdir, "exit-" + name)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""A torch target that replaces itself by exec while it is profiled.

Usage: exec_into.py WORKDIR torch|sleep

Writes `ready` (its pid), waits for `go`, runs torch.add 500 times, then
execs /usr/bin/python3 running a torch.cumsum loop (torch: the same
libtorch_cpu file mapped again by the new image) or /bin/sleep 1 (sleep: no
torch at all). The torch image checks its results, writes `done` and exits 0
only if they were right.
"""
import os
import sys

import torch

from handshake import signal_file, wait_for_file

AFTER_EXEC = """
import os, sys, torch
x = torch.ones(8, dtype=torch.float64)
for _ in range(3000):
    y = torch.cumsum(x, 0)
ok = torch.equal(y, torch.arange(1, 9, dtype=torch.float64))
open(os.path.join(sys.argv[1], "done"), "w").write("3000")
sys.exit(0 if ok else 1)
"""


def main():
    workdir, into = sys.argv[1], sys.argv[2]
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    x = torch.zeros(4)
    for _ in range(500):
        x = torch.add(x, 1.0)
    assert float(x[0]) == 500.0
    if into == "torch":
        os.execv("/usr/bin/python3", ["/usr/bin/python3", "-c", AFTER_EXEC, workdir])
    os.execv("/bin/sleep", ["/bin/sleep", "1"])


if __name__ == "__main__":
    main()

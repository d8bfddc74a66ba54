"""A torch process that forks while it is profiled (record --follow-forks).

Usage: forking.py WORKDIR

Writes `ready` (its pid), waits for `go`, then forks a child that runs
torch.cumsum for CHILD_S seconds and itself forks a grandchild that runs
torch.exp as long; the parent meanwhile runs torch.add 2000 times. The
child and the grandchild first write their pid (pid-child, pid-grandchild)
and wait for go-child / go-grandchild, which the test writes once gpuprof
follows them (or at once when it does not), so that every call they make is
traced. Each process checks its own results and exits non-zero on a wrong
one; each writes how many calls of its op it made (calls-parent,
calls-child, calls-grandchild). The parent exits with status 0 only if its
children did.
"""
import os
import sys
import time

import torch

from handshake import signal_file, wait_for_file

CHILD_S = 1.5


def run_for(seconds, step):
    n = 0
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        step()
        n += 1
    return n


def wait_to_be_followed(workdir, role):
    signal_file(workdir, "pid-" + role, str(os.getpid()))
    wait_for_file(workdir, "go-" + role)


def main():
    workdir = sys.argv[1]
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    child = os.fork()
    if child == 0:
        grandchild = os.fork()
        if grandchild == 0:
            wait_to_be_followed(workdir, "grandchild")
            x = torch.zeros(8, dtype=torch.float64)
            n = run_for(CHILD_S, lambda: torch.exp(x))
            ok = torch.equal(torch.exp(x), torch.ones(8, dtype=torch.float64))
            signal_file(workdir, "calls-grandchild", str(n + 1))  # and the check
            os._exit(0 if ok else 1)
        wait_to_be_followed(workdir, "child")
        x = torch.ones(8, dtype=torch.float64)
        n = run_for(CHILD_S, lambda: torch.cumsum(x, 0))
        ok = torch.equal(torch.cumsum(x, 0), torch.arange(1, 9, dtype=torch.float64))
        _, status = os.waitpid(grandchild, 0)
        signal_file(workdir, "calls-child", str(n + 1))  # and the check
        os._exit(0 if ok and status == 0 else 1)
    x = torch.zeros(8, dtype=torch.float64)
    n = 0
    while n < 2000:
        x = torch.add(x, 1.0)
        n += 1
    _, status = os.waitpid(child, 0)
    signal_file(workdir, "calls-parent", str(n))
    sys.exit(0 if float(x[0]) == 2000.0 and status == 0 else 1)


if __name__ == "__main__":
    main()

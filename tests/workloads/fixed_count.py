"""A known number of calls of one op, and nothing else while they run.

Usage: fixed_count.py WORKDIR N SECONDS

Writes `ready` (its pid) and waits for `go` (written once gpuprof traces
it), then calls torch.add(a, b) exactly N times, spread evenly over about
SECONDS (in batches of BATCH calls, sleeping between batches; 0: no
sleeps), so that a recording split by time or size (record --rotate) gets
several files. aten::add calls no other op (torch.profiler shows it alone
on torch 1.13 and 2.6), and no other op runs from `go` to the end, so a
recording that covers the whole run holds exactly N calls of aten::add and
nothing else. Then it writes `done` (N) and waits for `check` (written once
the test has stopped gpuprof: the checks run ops of their own), checks
every result and exits 0, or 1 on a wrong one.
"""
import os
import sys
import time

from handshake import signal_file, wait_for_file

BATCH = 100


def main():
    workdir, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    import torch

    torch.set_num_threads(1)
    a = torch.ones(8)
    b = torch.full((8,), 2.0)
    expected = [3.0] * 8
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    pause = seconds * BATCH / n
    start = time.monotonic()
    results = []
    for i in range(n):
        results.append(torch.add(a, b))
        if seconds and (i + 1) % BATCH == 0:
            # Keep to the schedule: each batch starts at its share of SECONDS.
            delay = start + (i + 1) // BATCH * pause - time.monotonic()
            if delay > 0:
                time.sleep(delay)
    signal_file(workdir, "done", str(n))
    wait_for_file(workdir, "check")
    return 0 if all(r.tolist() == expected for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Known-answer workload for Python frames in CPU samples: 70/30.

Usage: two_functions.py WORKDIR SECONDS. Writes `ready` (its pid), waits for
`go`, then for SECONDS alternates between seventy() and thirty(), pure
Python, sized so that seventy() takes about 70% of the thread's CPU time
(no torch: `record --no-ops` samples any process, and the pyenv CPythons
that run it too have none);
measures the split with the thread's CPU clock and writes `truth.json`
{"seventy": f, "thirty": f, "lines": {name: [first, last]}, "file": path};
waits for `exit`, exits.
"""
import inspect
import json
import os
import random
import sys
import time

from handshake import signal_file, wait_for_file


def seventy(n):
    x = 0
    for i in range(7 * n):
        x = (x * 31 + i) % 1000003
    return x


def thirty(n):
    x = 0
    for i in range(3 * n):
        x = (x * 31 + i) % 1000003
    return x


def line_range(f):
    lines, first = inspect.getsourcelines(f)
    return [first, first + len(lines) - 1]


def main():
    workdir, seconds = sys.argv[1], float(sys.argv[2])
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    spent = {"seventy": 0, "thirty": 0}
    start = time.thread_time_ns()
    end = time.monotonic() + seconds
    # Rounds of random length: a round of fixed length (2.0 ms with n = 2000 on
    # CPython 3.12 and 3.13 here) is a multiple of the 999 Hz sampling period,
    # and a sampler in step with the loop sees one phase of it far more often
    # than the other (75/25 for a true 70/30 in one CI run).
    rounds = random.Random(20261122)
    while time.monotonic() < end:
        n = rounds.randint(1000, 3000)
        t0 = time.thread_time_ns()
        seventy(n)
        t1 = time.thread_time_ns()
        thirty(n)
        t2 = time.thread_time_ns()
        spent["seventy"] += t1 - t0
        spent["thirty"] += t2 - t1
    total = time.thread_time_ns() - start
    truth = {name: ns / total for name, ns in spent.items()}
    truth["lines"] = {"seventy": line_range(seventy), "thirty": line_range(thirty)}
    truth["file"] = os.path.abspath(__file__)
    signal_file(workdir, "truth.json", json.dumps(truth))
    wait_for_file(workdir, "exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

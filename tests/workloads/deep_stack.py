"""Known-answer workload for deep Python stacks: every frame's depth is known.

Usage: deep_stack.py WORKDIR LEVELS SECONDS. Builds LEVELS functions,
level_0 calling level_1 ... level_LEVELS-1 calling spin(), each its own code
object (file "levels", function level_k at line 2k+1), so any frame's name
says how deep it is: level_k is frame k + 3 from the root (<module>, main,
level_0 ...), spin() frame LEVELS + 3. Writes `ready` (its pid), waits for
`go`, then runs down the levels and spins in spin() for SECONDS: torch.mm
on 8x8 matrices (an op entry each, no Python frame of torch's in between)
and a pure Python loop; writes `done` {"mm_calls": n, "depth": LEVELS + 3},
waits for `exit`, exits.
"""
import json
import os
import sys
import time

import torch

from handshake import signal_file, wait_for_file


def spin(seconds, a):
    calls = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        torch.mm(a, a)
        calls += 1
        x = 0
        for i in range(2000):
            x = (x * 31 + i) % 1000003
    return calls


def make_levels(levels):
    """level_0, which calls down to spin() through LEVELS frames."""
    source = "".join(f"def level_{k}(seconds, a):\n    return level_{k + 1}(seconds, a)\n" for k in range(levels - 1))
    source += f"def level_{levels - 1}(seconds, a):\n    return spin(seconds, a)\n"
    namespace = {"spin": spin}
    exec(compile(source, "levels", "exec"), namespace)
    return namespace["level_0"]


def main():
    workdir, levels, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    level_0 = make_levels(levels)
    a = torch.ones(8, 8)
    torch.mm(a, a)  # warm
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    calls = level_0(seconds, a)
    signal_file(workdir, "done", json.dumps({"mm_calls": calls, "depth": levels + 3}))
    wait_for_file(workdir, "exit")


if __name__ == "__main__":
    main()

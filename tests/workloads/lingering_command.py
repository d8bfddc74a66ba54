"""A launched command that outlives its recording (record -- CMD, stopped by -d or a signal).

Usage: lingering_command.py WORKDIR CALLS

Imports torch, calls torch.hypot CALLS times (an op torch's import never
calls), prints `lingering: made CALLS hypot calls` and writes `made`; then
waits for `release` (written by the test once gpuprof has stopped
recording), prints `lingering: released`, writes `finished` and exits 0.
Its stdout is gpuprof's (the launched command inherits it), so a test sees
exactly what it printed and in which order.
"""
import sys

from handshake import signal_file, wait_for_file


def main():
    workdir, calls = sys.argv[1], int(sys.argv[2])
    import torch

    a = torch.ones(3)
    for _ in range(calls):
        torch.hypot(a, a)
    print(f"lingering: made {calls} hypot calls", flush=True)
    signal_file(workdir, "made")
    wait_for_file(workdir, "release")
    print("lingering: released", flush=True)
    signal_file(workdir, "finished")
    return 0


if __name__ == "__main__":
    sys.exit(main())

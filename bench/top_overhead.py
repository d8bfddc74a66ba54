#!/usr/bin/env python3
"""What `gpuprof top` costs a running job, next to `gpuprof record`, in one run.

    sudo /usr/bin/python3 bench/top_overhead.py [--rounds 6] [--python /usr/bin/python3]

Starts tests/workloads/busy_loop.py (a loop of small torch ops: add, mul,
view/transpose/reshape on 16 float64 values) and, in rounds, measures its
speed (steps per second, wall clock, the median of 4 windows of 0.25 s) with
nothing attached, with `gpuprof record -p PID -q -o FILE` attached, and with
`gpuprof top -p PID --batch --interval 1` attached (output discarded); the
order rotates each round. Both attach the same op probes (one session, the
same BPF programs); top hands the events to an in-memory table instead of a
file. Prints, per variant, the step time and what it adds to the baseline's
(us per step and per op, the median over rounds with the range), and
top / record. Ops per step come from one record attach (its event count).
The loop checks its own result every cycle: exit status 1 if any cycle
differed (a profiler that changed the job's results).
"""
import argparse
import json
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPUPROF = ROOT / "build" / "gpuprof"
WORKLOADS = ROOT / "tests" / "workloads"
TIMEOUT_S = 120
CYCLE_STEPS = 100  # busy_loop.py's steps per cycle


def wait_for(path, proc):
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"top_overhead: the loop exited ({proc.returncode}) before {path.name}")
        if time.monotonic() > deadline:
            sys.exit(f"top_overhead: timed out waiting for {path}")
        time.sleep(0.01)


def attach(variant, pid, work):
    """Starts gpuprof for the variant; returns it once its probes are in (None: baseline)."""
    if variant == "baseline":
        return None
    if variant == "record":
        argv = [str(GPUPROF), "record", "-p", str(pid), "-q", "-o", str(work / "bench.gpuprof")]
    else:
        argv = [str(GPUPROF), "top", "-p", str(pid), "--batch", "--interval", "1"]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT_S
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            sys.exit(f"top_overhead: {variant} exited before tracing:\n" + "".join(seen))
        seen.append(line)
        if line.startswith("gpuprof: tracing "):
            return proc
    sys.exit(f"top_overhead: {variant} did not start tracing")


def detach(proc):
    """Stops gpuprof; returns its stderr's remaining lines."""
    if proc is None:
        return ""
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    if proc.wait(timeout=TIMEOUT_S) != 0:
        sys.exit(f"top_overhead: gpuprof failed:\n{rest}")
    return rest


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--python", default="/usr/bin/python3")
    args = parser.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpuprof-top-overhead-"))
    loop = subprocess.Popen([args.python, str(WORKLOADS / "busy_loop.py"), str(work)],
                            env={"PYTHONPATH": str(WORKLOADS), "PATH": "/usr/bin:/bin"},
                            stdout=subprocess.PIPE, text=True)
    variants = ["baseline", "record", "top"]
    rates = {v: [] for v in variants}
    ops_per_step = None
    try:
        wait_for(work / "ready", loop)
        pid = int((work / "ready").read_text())
        for r in range(args.rounds):
            order = variants[r % 3:] + variants[:r % 3]
            for variant in order:
                gp = attach(variant, pid, work)
                label = f"{variant}-{r}"
                (work / f"measure-{label}").touch()
                wait_for(work / f"rate-{label}", loop)
                rest = detach(gp)
                rates[variant].append(json.loads((work / f"rate-{label}").read_text())["median"])
                if variant == "record" and ops_per_step is None:
                    # events of the attach / 2 = calls; over the steps of the whole attach,
                    # which the rate and the attach's length give only roughly: use the
                    # recording's op table instead.
                    report = subprocess.run([str(GPUPROF), "report", str(work / "bench.gpuprof"), "--row-limit",
                                             "-1"], capture_output=True, text=True, timeout=TIMEOUT_S)
                    calls = {}
                    for line in report.stdout.splitlines():
                        cells = line.split()
                        if cells and cells[0].startswith("aten::") and cells[-1].isdigit():
                            calls[cells[0]] = int(cells[-1])
                    if calls.get("aten::mul"):
                        # one torch.mul per step: ops per step = all calls / mul calls
                        ops_per_step = sum(calls.values()) / calls["aten::mul"]
        (work / "stop").touch()
        loop.wait(timeout=TIMEOUT_S)
    finally:
        if loop.poll() is None:
            loop.kill()
    result = json.loads((work / "result.json").read_text())
    step_us = {v: [1e6 / rate for rate in rates[v]] for v in variants}
    base = step_us["baseline"]
    print(f"busy_loop (small ops), {args.rounds} rounds, this machine; ops per step: "
          f"{ops_per_step:.1f}" if ops_per_step else "ops per step: unknown")
    print(f"{'variant':10} {'step us (median)':>17} {'adds us/step [range]':>26} {'adds us/op':>11}")
    added = {}
    for v in variants:
        median = statistics.median(step_us[v])
        if v == "baseline":
            print(f"{v:10} {median:17.2f}")
            continue
        deltas = [t - b for t, b in zip(step_us[v], base)]
        added[v] = statistics.median(deltas)
        per_op = f"{added[v] / ops_per_step:11.2f}" if ops_per_step else f"{'-':>11}"
        print(f"{v:10} {median:17.2f} {added[v]:+10.2f} [{min(deltas):+.2f} .. {max(deltas):+.2f}] {per_op}")
    if added.get("record"):
        print(f"top / record: {added['top'] / added['record']:.2f}x")
    print(f"cycles {result['cycles']}, mismatches {result['mismatches']}")
    return 0 if result["mismatches"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())

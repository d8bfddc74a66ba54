"""Shared machinery of the benchmarks that time tests/workloads/busy_loop.py
(a loop of small torch ops) with different gpuprof invocations attached.

The loop measures its own speed on request (steps per second, the median of
4 windows of 0.25 s) and checks its result every cycle; gpuprof variants are
attached one at a time, each once its probes are in.
"""
import json
import statistics
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPUPROF = ROOT / "build" / "gpuprof"
WORKLOADS = ROOT / "tests" / "workloads"
TIMEOUT_S = 120


def wait_for(path, proc, who):
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"{who}: the loop exited ({proc.returncode}) before {path.name}")
        if time.monotonic() > deadline:
            sys.exit(f"{who}: timed out waiting for {path}")
        time.sleep(0.01)


class BusyLoop:
    """busy_loop.py running in a fresh work directory."""

    def __init__(self, python, who, max_run_s=300):
        self.who = who
        self.work = pathlib.Path(tempfile.mkdtemp(prefix=f"gpuprof-{who}-"))
        self.proc = subprocess.Popen([python, str(WORKLOADS / "busy_loop.py"), str(self.work)],
                                     env={"PYTHONPATH": str(WORKLOADS), "PATH": "/usr/bin:/bin",
                                          "BUSY_LOOP_MAX_RUN_S": str(max_run_s)},
                                     stdout=subprocess.PIPE, text=True)
        wait_for(self.work / "ready", self.proc, who)
        self.pid = int((self.work / "ready").read_text())

    def rate(self, label):
        """Steps per second now (the median window)."""
        (self.work / f"measure-{label}").touch()
        wait_for(self.work / f"rate-{label}", self.proc, self.who)
        return json.loads((self.work / f"rate-{label}").read_text())["median"]

    def stop(self):
        """Ends the loop; returns its result.json (cycles, mismatches)."""
        (self.work / "stop").touch()
        self.proc.wait(timeout=TIMEOUT_S)
        return json.loads((self.work / "result.json").read_text())

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()


def attach(argv, who):
    """Starts gpuprof (argv after the binary); returns (process, its tracing line) once its probes are in."""
    proc = subprocess.Popen([str(GPUPROF), *map(str, argv)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.monotonic() + TIMEOUT_S
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            sys.exit(f"{who}: gpuprof {' '.join(map(str, argv))} exited before tracing:\n" + "".join(seen))
        seen.append(line)
        if line.startswith("gpuprof: tracing "):
            return proc, line
    sys.exit(f"{who}: gpuprof did not start tracing")


def detach(proc, who):
    """Stops gpuprof with SIGINT; returns the rest of its stderr."""
    if proc is None:
        return ""
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    if proc.wait(timeout=TIMEOUT_S) != 0:
        sys.exit(f"{who}: gpuprof failed:\n{rest}")
    return rest


def ops_per_step(record_file):
    """Op calls per loop step in a recording of the loop (one torch.mul per step)."""
    report = subprocess.run([str(GPUPROF), "report", str(record_file), "--row-limit", "-1"], capture_output=True,
                            text=True, timeout=TIMEOUT_S)
    calls = {}
    for line in report.stdout.splitlines():
        cells = line.split()
        if cells and cells[0].startswith("aten::") and cells[-1].isdigit():
            calls[cells[0]] = int(cells[-1])
    return sum(calls.values()) / calls["aten::mul"] if calls.get("aten::mul") else None


def measure_variants(loop, argv, rounds, who, after_detach=None):
    """Rates (steps/s) of the loop with each variant attached in turn, the
    order rotating each round. argv: {variant: gpuprof argv, or None for
    nothing attached}. after_detach(variant, tracing line, rest of stderr)
    sees each attach's output."""
    variants = list(argv)
    rates = {v: [] for v in variants}
    for r in range(rounds):
        k = r % len(variants)
        for variant in variants[k:] + variants[:k]:
            gp, line = attach(argv[variant], who) if argv[variant] else (None, "")
            rates[variant].append(loop.rate(f"{variant}-{r}"))
            rest = detach(gp, who)
            if after_detach:
                after_detach(variant, line, rest)
    return rates


def print_added(rates, per_step, rounds):
    """The table of step times and what each variant adds to the baseline
    (the first variant); returns {variant: median us added per op}."""
    step_us = {v: [1e6 / rate for rate in r] for v, r in rates.items()}
    variants = list(rates)
    base = step_us[variants[0]]
    print(f"busy_loop (small ops), {rounds} rounds, this machine; ops per step: "
          + (f"{per_step:.1f}" if per_step else "unknown"))
    print(f"{'variant':10} {'step us (median)':>17} {'adds us/step [range]':>26} {'adds us/op':>11}")
    print(f"{variants[0]:10} {statistics.median(base):17.2f}")
    added = {}
    for v in variants[1:]:
        deltas = [t - b for t, b in zip(step_us[v], base)]
        added[v] = statistics.median(deltas) / per_step if per_step else None
        per_op = f"{added[v]:11.2f}" if per_step else f"{'-':>11}"
        print(f"{v:10} {statistics.median(step_us[v]):17.2f} {statistics.median(deltas):+10.2f} "
              f"[{min(deltas):+.2f} .. {max(deltas):+.2f}] {per_op}")
    return added

#!/usr/bin/env python3
"""How close compensated op times come to torch.profiler's (docs/overhead.md,
"Compensation").

For each workload of tests/workloads/region.py (default: tiny_transformer,
the many-small-ops model of the compensation issue, and resnet18), two runs
one after the other on the same machine, each profiler alone (each one's
cost would land in the other's times):

  1. torch.profiler alone: region.py's own profile of the region;
  2. gpuprof alone: `gpuprof record -p PID` around the region, region.py
     with --no-torch-profiler; its table read compensated (the default) and
     with --raw-times.

Prints, per workload, the Self CPU % of every op over --threshold % in any
of the three tables, and the largest distance to torch.profiler's share of
the compensated and of the raw table.

Then "precision needed": what 3 points of torch.profiler's table allow per
op call, against the probes' calibrated cost per call (docs/overhead.md,
"Why the tiny-op transformer cannot match torch.profiler here").

Usage: sudo /usr/bin/python3 bench/compensation.py [--chroot /srv/gpuprof-trixie]
           [--workload tiny_transformer --workload resnet18] [--gpuprof build/gpuprof]
           [--rt-cpu CPU] [--keep DIR]
"""
import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOADS = REPO / "tests" / "workloads"
CHROOT_WORKLOADS = "/opt/gpuprof-tests/workloads"  # as the tests' torch 2.x tier puts them
TIMEOUT_S = 300


def wait_for(path, proc, what):
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"{what}: the workload exited with status {proc.returncode}")
        if time.monotonic() > deadline:
            sys.exit(f"{what}: timed out")
        time.sleep(0.01)
    return path.read_text()


def touch(path):
    path.write_text("")


def workload_argv(args, workdir, workload, *extra):
    # --rt: the workload at real-time priority on one CPU, so that nothing of
    # the machine's (other jobs, gpuprof's own threads) preempts it: what is
    # left is the probes' own cost (docs/overhead.md, "Compensation").
    return rt_prefix(args) + _workload_argv(args, workdir, workload, *extra)


def rt_prefix(args):
    """--rt-cpu CPU: the workload at real-time priority, pinned to CPU."""
    return ["chrt", "-f", "10", "taskset", "-c", str(args.rt_cpu)] if args.rt_cpu is not None else []


def _workload_argv(args, workdir, workload, *extra):
    if args.chroot:
        dest = Path(args.chroot) / CHROOT_WORKLOADS.lstrip("/")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(WORKLOADS, dest, ignore=shutil.ignore_patterns("__pycache__"))
        return ["chroot", args.chroot, "/usr/bin/python3", f"{CHROOT_WORKLOADS}/region.py", str(workdir),
                "--workload", workload, *extra]
    return [args.python, str(WORKLOADS / "region.py"), str(workdir), "--workload", workload, *extra]


def shares(self_us):
    total = sum(self_us.values())
    return {name: 100.0 * v / total for name, v in self_us.items()} if total else {}


def torch_self_us(ops):
    return sum(v["self_cpu_time_total"] for v in ops.values())


def torch_alone(args, tmp, workload):
    workdir = tmp / f"{workload}-torch"
    workdir.mkdir()
    proc = subprocess.Popen(workload_argv(args, workdir, workload))
    wait_for(workdir / "ready", proc, "torch.profiler run")
    touch(workdir / "go")
    wait_for(workdir / "region-done", proc, "torch.profiler run")
    touch(workdir / "dump")
    proc.wait(timeout=TIMEOUT_S)
    ops = json.loads((workdir / "torch_ops.json").read_text())
    if args.keep:
        shutil.copy(workdir / "torch_ops.json", Path(args.keep) / f"{workload}.torch_ops.json")
    return shares({name: v["self_cpu_time_total"] for name, v in ops.items()}), torch_self_us(ops)


TABLE_ROW = re.compile(r"^\s*(\S.*?)\s{2,}(-?[\d.]+)%\s+(\S+)\s+(-?[\d.]+)%\s+(\S+)\s+(\S+)\s+(\d+)\s*$")


def table_shares(text):
    return {m.group(1): float(m.group(2)) for m in map(TABLE_ROW.match, text.splitlines()) if m}


def table_calls(text):
    return sum(int(m.group(7)) for m in map(TABLE_ROW.match, text.splitlines()) if m)


def precision_needed(torch_us, calls, note, points=3.0):
    """What `points` of torch.profiler's table allow per op call, against the
    probes' calibrated cost per call and the calibration's own spread: the
    estimate must be this exact for the tiny ops' rows to come out right."""
    cost = re.search(r"([\d.]+) us of probe time removed per call", note)
    spread = re.search(r"spread ([\d.]+)%", note)
    if not cost or not calls or not torch_us:
        return None
    budget_us = points / 100.0 * torch_us / calls
    cost_us = float(cost.group(1))
    return (f"precision needed: {points:g} points of torch.profiler's table = {points / 100.0 * torch_us / 1000:.2f} ms "
            f"of its {torch_us / 1000:.1f} ms Self CPU; over gpuprof's {calls} calls {budget_us:.3f} us per call, "
            f"{100.0 * budget_us / cost_us:.2f}% of the {cost_us:.2f} us the probes cost per call "
            f"(probes {calls * cost_us / torch_us:.1f}x the job's own time"
            + (f"; the calibration's rounds spread {spread.group(1)}%)" if spread else ")"))


def start_recording(gpuprof, pid, record):
    """`gpuprof record -p PID -q -o RECORD`, returned once it traces."""
    gp = subprocess.Popen([gpuprof, "record", "-p", str(pid), "-q", "-o", str(record)], stderr=subprocess.PIPE,
                          text=True)
    line = gp.stderr.readline()
    while line and "tracing" not in line:
        line = gp.stderr.readline()
    if not line:
        sys.exit("gpuprof did not start tracing")
    return gp


def gpuprof_alone(args, tmp, workload):
    workdir = tmp / f"{workload}-gpuprof"
    workdir.mkdir()
    record = tmp / f"{workload}.gpuprof"
    proc = subprocess.Popen(workload_argv(args, workdir, workload, "--no-torch-profiler"))
    pid = wait_for(workdir / "ready", proc, "gpuprof run").strip()
    gp = start_recording(args.gpuprof, pid, record)
    touch(workdir / "go")
    wait_for(workdir / "region-done", proc, "gpuprof run")
    gp.send_signal(signal.SIGINT)
    gp.communicate(timeout=TIMEOUT_S)
    touch(workdir / "dump")
    proc.wait(timeout=TIMEOUT_S)
    if args.keep:
        shutil.copy(record, Path(args.keep) / record.name)
    out = {}
    for label, extra in (("compensated", []), ("raw", ["--raw-times"])):
        report = subprocess.run([args.gpuprof, "report", str(record), "--row-limit", "-1", *extra],
                                capture_output=True, text=True, check=True)
        out[label] = table_shares(report.stdout)
        out[label + "_calls"] = table_calls(report.stdout)
        if label == "compensated":
            out["note"] = [line for line in report.stdout.splitlines() if "probe time removed" in line
                           or "shorter than their probes" in line]
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpuprof", default=str(REPO / "build" / "gpuprof"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--chroot", help="run the workload in this torch 2.x chroot (scripts/torch2-chroot.sh)")
    parser.add_argument("--workload", action="append", help="region.py workload (repeatable)")
    parser.add_argument("--threshold", type=float, default=5.0)
    parser.add_argument("--rt-cpu", type=int, metavar="CPU",
                        help="run the workload at real-time priority (chrt -f 10) pinned to this CPU")
    parser.add_argument("--keep", help="copy each gpuprof recording into this folder (WORKLOAD.gpuprof)")
    args = parser.parse_args()
    workloads = args.workload or ["tiny_transformer", "resnet18"]
    host = os.uname()
    print(f"machine: {host.nodename}, kernel {host.release}, {os.cpu_count()} CPUs; "
          f"torch from {'the chroot ' + args.chroot if args.chroot else args.python}")
    with tempfile.TemporaryDirectory(prefix="gpuprof-compensation-", dir="/tmp") as tmp_name:
        tmp = Path(tmp_name)
        os.chmod(tmp, 0o755)
        for workload in workloads:
            torch_pct, torch_us = torch_alone(args, tmp, workload)
            gp = gpuprof_alone(args, tmp, workload)
            names = sorted({n for table in (torch_pct, gp["compensated"], gp["raw"]) for n, p in table.items()
                            if p > args.threshold}, key=lambda n: -torch_pct.get(n, 0))
            print(f"\n{workload}: Self CPU % of the ops over {args.threshold}% in any table, each profiler alone")
            print(f"  {'op':42} {'torch.profiler':>15} {'gpuprof':>9} {'gpuprof raw':>12}")
            for n in names:
                print(f"  {n:42} {torch_pct.get(n, 0):14.2f}% {gp['compensated'].get(n, 0):8.2f}% "
                      f"{gp['raw'].get(n, 0):11.2f}%")
            for label in ("compensated", "raw"):
                worst = max(names, key=lambda n: abs(gp[label].get(n, 0) - torch_pct.get(n, 0)))
                print(f"  largest distance, {label}: {abs(gp[label].get(worst, 0) - torch_pct.get(worst, 0)):.2f} "
                      f"points ({worst})")
            for line in gp["note"]:
                print("  " + line)
            needed = precision_needed(torch_us, gp["raw_calls"], " ".join(gp["note"]))
            if needed:
                print("  " + needed)


if __name__ == "__main__":
    main()

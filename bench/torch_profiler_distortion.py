#!/usr/bin/env python3
"""What one op really costs, against what torch.profiler and gpuprof say it
costs (docs/overhead.md, "Which table is right").

tests/workloads/op_alone.py calls one op in a loop, in one process, three
times: with no profiler (the truth: time.perf_counter over the loop), under
torch.profiler (its own table's Self CPU and CPU total per call), and with
`gpuprof record -p` attached (gpuprof's table, compensated and raw). Prints
the per-call figures side by side, from the same process and run.

Usage: sudo /usr/bin/python3 bench/torch_profiler_distortion.py [--op aten::_transform_bias_rescale_qkv]
           [--calls 2000] [--chroot /srv/gpuprof-trixie] [--rt-cpu 1]
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compensation import (CHROOT_WORKLOADS, REPO, TABLE_ROW, TIMEOUT_S, WORKLOADS, rt_prefix,  # noqa: E402
                          start_recording, touch, wait_for)


def workload_argv(args, workdir):
    prefix = rt_prefix(args)
    tail = [str(workdir), "--op", args.op, "--calls", str(args.calls)]
    if args.chroot:
        dest = Path(args.chroot) / CHROOT_WORKLOADS.lstrip("/")
        shutil.rmtree(dest, ignore_errors=True)
        shutil.copytree(WORKLOADS, dest, ignore=shutil.ignore_patterns("__pycache__"))
        return prefix + ["chroot", args.chroot, "/usr/bin/python3", f"{CHROOT_WORKLOADS}/op_alone.py", *tail]
    return prefix + [args.python, str(WORKLOADS / "op_alone.py"), *tail]


def op_row(report_text, op):
    """(self us, total us, calls) of the op's row in gpuprof's table."""
    for m in map(TABLE_ROW.match, report_text.splitlines()):
        if m and m.group(1) == op:
            return m.group(3), m.group(5), int(m.group(7))
    return None


def to_us(text):
    for unit, scale in (("us", 1.0), ("ms", 1e3), ("s", 1e6)):
        if text.endswith(unit):
            return float(text[: -len(unit)]) * scale
    raise ValueError(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gpuprof", default=str(REPO / "build" / "gpuprof"))
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--chroot", help="run the workload in this torch 2.x chroot (scripts/torch2-chroot.sh)")
    parser.add_argument("--op", default="aten::_transform_bias_rescale_qkv")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rt-cpu", type=int, metavar="CPU",
                        help="run the workload at real-time priority (chrt -f 10) pinned to this CPU")
    args = parser.parse_args()
    host = os.uname()
    print(f"machine: {host.nodename}, kernel {host.release}, {os.cpu_count()} CPUs; "
          f"torch from {'the chroot ' + args.chroot if args.chroot else args.python}; {args.op}, {args.calls} calls")
    with tempfile.TemporaryDirectory(prefix="gpuprof-distortion-", dir="/tmp") as tmp_name:
        tmp = Path(tmp_name)
        os.chmod(tmp, 0o755)
        record = tmp / "op.gpuprof"
        proc = subprocess.Popen(workload_argv(args, tmp), stdout=subprocess.PIPE, text=True)
        pid = wait_for(tmp / "ready", proc, "op_alone.py").strip()
        gp = start_recording(args.gpuprof, pid, record)
        touch(tmp / "go")
        wait_for(tmp / "done", proc, "op_alone.py")
        gp.send_signal(signal.SIGINT)
        gp.communicate(timeout=TIMEOUT_S)
        touch(tmp / "exit")
        out, _ = proc.communicate(timeout=TIMEOUT_S)
        phases = {p["phase"]: p for p in map(json.loads, out.splitlines())}
        rows = {}
        for label, extra in (("compensated", []), ("raw", ["--raw-times"])):
            report = subprocess.run([args.gpuprof, "report", str(record), "--row-limit", "-1", *extra],
                                    capture_output=True, text=True, check=True)
            rows[label] = op_row(report.stdout, args.op)
    if not all(rows.values()):
        sys.exit(f"gpuprof's table has no row {args.op}")
    alone = phases["alone"]["us_per_call"]
    tp = phases["torch_profiler"]
    print(f"  no profiler:     {alone:9.2f} us per call (the loop's own time)")
    print(f"  torch.profiler:  {tp['us_per_call']:9.2f} us per call of loop; its table: self "
          f"{tp['torch_self_us_per_call']:.2f} us, total {tp['torch_total_us_per_call']:.2f} us "
          f"({tp['torch_total_us_per_call'] / alone:.1f}x the op alone)")
    print(f"  gpuprof:         {phases['outside']['us_per_call']:9.2f} us per call of loop", end="")
    for label, (self_t, total_t, calls) in rows.items():
        total_us = to_us(total_t) / calls
        print(f"; {label}: self {to_us(self_t) / calls:.2f} us, total {total_us:.2f} us "
              f"({total_us / alone:.1f}x)", end="")
    print()


if __name__ == "__main__":
    main()

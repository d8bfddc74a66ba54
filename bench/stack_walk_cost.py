#!/usr/bin/env python3
"""What the Python frame walk costs in BPF, by stack depth (docs/stacks.md, "Cost").

    sudo /usr/bin/python3 bench/stack_walk_cost.py [--gpuprof build/gpuprof] [--baseline OTHER_GPUPROF]
                                                   [--levels 10,60,125,200,1000] [--seconds 2] [--hz 999]

For each depth, tests/workloads/deep_stack.py runs down LEVELS Python frames
(LEVELS + 3 in all) and spins there, calling torch.mm, while `gpuprof record
-p PID -F HZ --with-stack` records it. With the kernel's BPF statistics on
(kernel.bpf_stats_enabled, set for the run and put back after), the run
time of gpuprof's programs is read with bpftool just before it stops:
on_cpu_sample (one run per CPU sample: a walk) and on_op_probe (the op
probes: one run per entry, which walks, and one per exit, which does not).
Prints ns per run of each, per depth, for each binary given (--baseline: an
older build, e.g. main's, measured in the same rounds), the binaries
alternating within each depth. Nothing is asserted: these are costs on a
shared machine, the median of --rounds runs.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
WORKLOAD = REPO / "tests" / "workloads" / "deep_stack.py"
STATS_SYSCTL = Path("/proc/sys/kernel/bpf_stats_enabled")
PROGRAMS = ("on_cpu_sample", "on_op_probe")


def wait_for(path, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            sys.exit(f"no {path.name}: {proc.args} ended or timed out")
        time.sleep(0.01)
    return path.read_text()


def program_stats(pid):
    """{name: (run_time_ns, run_cnt)} of the BPF programs process `pid` holds.

    From /proc/PID/fdinfo of its bpf-prog fds (the kernel prints prog_id,
    run_time_ns and run_cnt there): Debian's bpftool lists no owning pids
    (it is built without BPF iterators), so its `pids` cannot say whose a
    program is. Names come from `bpftool prog show id N`."""
    stats = {}
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:bpf-prog":
                continue
            info = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines()
                        if ":" in line)
        except OSError:
            continue
        prog_id = int(info["prog_id"])
        shown = json.loads(subprocess.run(["bpftool", "-j", "prog", "show", "id", str(prog_id)], check=True,
                                          capture_output=True, text=True).stdout)
        if shown.get("name") in PROGRAMS:
            t, n = stats.get(shown["name"], (0, 0))
            stats[shown["name"]] = (t + int(info.get("run_time_ns", 0)), n + int(info.get("run_cnt", 0)))
    return stats


def one_run(gpuprof, levels, seconds, hz):
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        target = subprocess.Popen(["/usr/bin/python3", WORKLOAD, work, str(levels), str(seconds)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        pid = int(wait_for(work / "ready", target))
        gp = subprocess.Popen([gpuprof, "record", "-p", str(pid), "-q", "-o", work / "out.gpuprof", "-F", str(hz),
                               "--with-stack"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while not program_stats(gp.pid).get("on_op_probe"):
            if time.monotonic() > deadline:
                gp.kill()
                target.kill()
                sys.exit("bpftool -j prog show lists no on_op_probe program of gpuprof's: it must list programs "
                         "with their pids (a bpftool built with BPF skeletons, and a kernel that lets it "
                         "enumerate programs)")
            time.sleep(0.2)
        time.sleep(1)  # attach done: the probes are all in
        before = program_stats(gp.pid)
        (work / "go").write_text("")
        done = json.loads(wait_for(work / "done", target))
        after = program_stats(gp.pid)
        gp.send_signal(signal.SIGINT)
        gp.communicate(timeout=60)
        (work / "exit").write_text("")
        target.wait(timeout=60)
        assert done["depth"] == levels + 3
        return {name: ((after[name][0] - before.get(name, (0, 0))[0]) /
                       max(1, after[name][1] - before.get(name, (0, 0))[1])) for name in after}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gpuprof", default=str(REPO / "build" / "gpuprof"))
    parser.add_argument("--baseline", help="another gpuprof binary, measured alongside")
    parser.add_argument("--levels", default="10,60,125,200,1000")
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--hz", type=int, default=999)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    binaries = {"gpuprof": args.gpuprof}
    if args.baseline:
        binaries["baseline"] = args.baseline
    was = STATS_SYSCTL.read_text().strip()
    STATS_SYSCTL.write_text("1")
    try:
        print(f"{'frames':>6}  {'binary':<9} {'ns/sample (on_cpu_sample)':>26} {'ns/probe run (on_op_probe)':>27}")
        for levels in map(int, args.levels.split(",")):
            runs = {name: [] for name in binaries}
            for _ in range(args.rounds):
                for name, path in binaries.items():
                    runs[name].append(one_run(path, levels, args.seconds, args.hz))
            for name in binaries:
                med = {p: statistics.median(r.get(p, 0) for r in runs[name]) for p in PROGRAMS}
                print(f"{levels + 3:>6}  {name:<9} {med['on_cpu_sample']:>26.0f} {med['on_op_probe']:>27.0f}",
                      flush=True)
    finally:
        STATS_SYSCTL.write_text(was)


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("run as root (BPF)")
    main()

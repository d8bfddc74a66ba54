#!/usr/bin/env python3
"""gpuprof overhead benchmark: baseline vs torch.profiler vs gpuprof, side by side.

    sudo /usr/bin/python3 bench/overhead.py [--rounds 8] [--keep] [--json FILE]

Starts bench/overhead_target.py (with --python, default /usr/bin/python3, which
has torch) and, in one process, times two workloads -- a small-op chain of
16x16 mm/add/relu and torchvision resnet18 (batch 5, 224x224, forward) -- under
four variants in alternating phases: no profiler, torch.profiler (CPU),
torch.profiler with record_shapes, and `gpuprof record -p PID` attached for the
phase, the order rotated each round. Time per step is the target's CPU time
(user + system: uprobe traps and single-steps count, waiting for a core does
not); each variant's figure is the 10th percentile of all its steps, since
other load on the machine only ever adds time (the median over rounds of the
phase means is printed beside it). Per-op overhead = (t_variant - t_baseline) /
aten ops per step, with ops counted by torch.profiler (nested ops included),
with a 90% interval from resampling the rounds. The run's noise floor (how far
the p10 sits above the fastest step, per op) is printed with the load of other
processes; an overhead below it is "not resolved", and the gpuprof/
torch.profiler ratio is then given as a lower bound. Also reports gpuprof's
attach and detach times, the CPU time of gpuprof's own process, and checks
from each recording that gpuprof saw every op (ops per step from `gpuprof
report`). --json FILE saves the raw per-step times; --from-json FILE reprints
the tables of a saved run.

Needs root (gpuprof loads BPF programs and uprobes). The harness itself needs
no torch.
"""
import argparse
import datetime
import json
import os
import platform
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
VARIANTS = ["baseline", "torch.profiler", "torch.profiler+shapes", "gpuprof"]

TRACING_RE = re.compile(r"gpuprof: tracing (\d+) .*?: (\d+) ops, (\d+) entry \+ (\d+) exit probes .*\(attach ([\d.]+) ms\)")
STOPPED_RE = re.compile(r"gpuprof: stopped \(([^)]*)\); detach ([\d.]+) ms; (\d+) events, (\d+) lost")


_children = []  # processes to end if the benchmark stops early


def cleanup():
    for p in _children:
        if p.poll() is None:
            p.kill()
            p.wait()


def die(msg):
    cleanup()
    sys.stderr.write(f"overhead.py: {msg}\n")
    sys.exit(1)


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def virt():
    """'kvm VM', 'kvm VM, docker container', 'none detected', ... (systemd-detect-virt, else cpuinfo)."""
    found = []
    for flag, what in (("--vm", "VM"), ("--container", "container")):
        try:
            out = subprocess.run(["systemd-detect-virt", flag], capture_output=True, text=True, timeout=5)
            if out.returncode == 0 and out.stdout.strip() not in ("", "none"):
                found.append(f"{out.stdout.strip()} {what}")
        except (OSError, subprocess.SubprocessError):
            pass
    if not found:
        try:
            with open("/proc/cpuinfo") as f:
                if " hypervisor" in f.read():
                    found.append("VM (hypervisor cpu flag)")
        except OSError:
            pass
    return ", ".join(found) or "none detected"


class Target:
    def __init__(self, python, args):
        cmd = [python, "-u", os.path.join(HERE, "overhead_target.py")] + args
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        _children.append(self.p)

    def recv(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                rc = self.p.wait()
                die(f"workload process exited unexpectedly (rc {rc})")
            if line.startswith("@@"):
                return line[2:].rstrip("\n").split(" ", 1)
            sys.stderr.write("target: " + line)

    def send(self, word):
        self.p.stdin.write(word + "\n")
        self.p.stdin.flush()


class Gpuprof:
    """One `gpuprof record -p PID -q -o FILE` session."""

    def __init__(self, exe, pid, out, errlog):
        self.out, self.errlog = out, errlog
        self.t_start = time.perf_counter()
        self.err = open(errlog, "w+")
        self.p = subprocess.Popen([exe, "record", "-p", str(pid), "-q", "-o", out],
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.err)
        _children.append(self.p)
        self.attach = None

    def _stderr(self):
        self.err.flush()
        with open(self.errlog) as f:
            return f.read()

    def wait_tracing(self, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = TRACING_RE.search(self._stderr())
            if m:
                self.attach_wall = (time.perf_counter() - self.t_start) * 1e3
                self.attach = {"ops": int(m.group(2)), "entry": int(m.group(3)), "exit": int(m.group(4)),
                               "attach_ms": float(m.group(5)), "attach_wall_ms": self.attach_wall}
                return self.attach
            if self.p.poll() is not None:
                die(f"gpuprof exited (rc {self.p.returncode}) before tracing:\n{self._stderr()}")
            time.sleep(0.002)
        self.p.kill()
        die(f"gpuprof did not start tracing within {timeout}s:\n{self._stderr()}")

    def stop(self, timeout=120):
        t0 = time.perf_counter()
        self.p.send_signal(signal.SIGINT)
        try:
            _, status, ru = os.wait4(self.p.pid, 0)
        except ChildProcessError:
            status, ru = 0, None
        self.p.returncode = os.waitstatus_to_exitcode(status)
        wall = (time.perf_counter() - t0) * 1e3
        text = self._stderr()
        self.err.close()
        m = STOPPED_RE.search(text)
        if self.p.returncode != 0 or not m:
            die(f"gpuprof record failed (rc {self.p.returncode}):\n{text}")
        return {"reason": m.group(1), "detach_ms": float(m.group(2)), "events": int(m.group(3)),
                "lost": int(m.group(4)), "detach_wall_ms": wall,
                "cpu_s": (ru.ru_utime + ru.ru_stime) if ru else float("nan"),
                "stderr": text}


def report_calls(exe, path):
    """Total '# of Calls' over all rows of `gpuprof report FILE --sort-by count`."""
    r = subprocess.run([exe, "report", path, "--sort-by", "count", "--row-limit", "-1"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        die(f"gpuprof report {path} failed:\n{r.stderr}")
    total, rows, in_table, dashes = 0, 0, False, 0
    for line in r.stdout.splitlines():
        if line.startswith("---"):
            dashes += 1
            in_table = dashes == 2
            continue
        if in_table and line.strip():
            total += int(line.split()[-1])
            rows += 1
    return total, rows


def med(xs):
    return statistics.median(xs)


QUANTILE = 0.10  # other load only ever adds time; a low percentile of many steps is the undisturbed cost


def percentile(xs, q):
    xs = sorted(xs)
    k = q * (len(xs) - 1)
    i = int(k)
    return xs[i] if i + 1 >= len(xs) else xs[i] + (xs[i + 1] - xs[i]) * (k - i)


def overheads(pooled, ops):
    """Per-op overhead (us) of each variant against baseline, from the QUANTILE of its step times (ms)."""
    base = percentile(pooled["baseline"], QUANTILE)
    return {v: (percentile(xs, QUANTILE) - base) * 1e3 / ops for v, xs in pooled.items()}


def bootstrap(phases, ops, n=1000):
    """Overheads over n resamples of the rounds (with replacement, the same rounds for every
    variant): steps of one phase share its disturbances, so the round is the unit resampled."""
    rng = random.Random(12345)
    rounds = range(len(phases["baseline"]))
    out = []
    for _ in range(n):
        idx = rng.choices(rounds, k=len(rounds))
        out.append(overheads({v: [x for i in idx for x in ph[i]] for v, ph in phases.items()}, ops))
    return out


def interval(xs, level=0.90):
    return percentile(xs, (1 - level) / 2), percentile(xs, 1 - (1 - level) / 2)


def report(info, sessions, rounds, small_steps, resnet_steps):
    """Prints the tables; returns False if a recording does not match the op counts."""
    print(f"torch {info['torch']}, torchvision {info['torchvision']}, "
          f"torch.set_num_threads({info['threads']}); grad disabled (forward only)")
    print(f"{rounds} rounds; each round runs every variant once per workload (order rotated per round); "
          f"{small_steps} small-op / {resnet_steps} resnet18 timed steps per phase")
    print("time per step = CPU time of the target process (user + system, uprobe traps included); "
          f"'p{int(QUANTILE * 100)}' = {int(QUANTILE * 100)}th percentile of all steps of a variant "
          "(robust to other load on the machine), 'mean' = median over rounds of each phase's mean")
    print("overhead us/op = (variant - baseline) / aten ops per step (counted by torch.profiler, nested ops "
          "included); [90% interval, bootstrap over rounds]")
    print()

    hdr = (f"{'workload':<9} {'variant':<22} {'ops/step':>8} {'p' + str(int(QUANTILE * 100)) + ' ms/step':>12} "
           f"{'overhead us/op':>15} {'[90% interval]':>17}  {'mean ms/step':>12} {'overhead us/op':>14}  "
           f"{'wall ms/step':>12}")
    print(hdr)
    print("-" * len(hdr))
    summary = {}
    for wl, w in info["workloads"].items():
        ops = w["ops_per_step"]
        phases = {v: [[x * 1e3 for x in ph] for ph in w["cpu"][v]] for v in VARIANTS}
        pooled = {v: [x for ph in phases[v] for x in ph] for v in VARIANTS}
        est = overheads(pooled, ops)
        boot = bootstrap(phases, ops)
        # how far above its fastest step a variant's p10 sits: ~0.5% when the machine is quiet,
        # 5-15% when it is disturbed; in us/op this is the smallest overhead the run can resolve
        floor = max(percentile(xs, QUANTILE) / min(xs) - 1 for xs in pooled.values()) * \
            percentile(pooled["baseline"], QUANTILE) * 1e3 / ops
        means = {v: med([sum(ph) / len(ph) * 1e3 for ph in w["cpu"][v]]) for v in VARIANTS}
        walls = {v: med([sum(ph) / len(ph) * 1e3 for ph in w["wall"][v]]) for v in VARIANTS}
        for v in VARIANTS:
            q = percentile(pooled[v], QUANTILE)
            if v == "baseline":
                o = r = mo = ""
            else:
                lo, hi = interval([bt[v] for bt in boot])
                o, r = f"{est[v]:.2f}", f"[{lo:.2f} - {hi:.2f}]"
                mo = f"{(means[v] - means['baseline']) * 1e3 / ops:.2f}"
            print(f"{wl:<9} {v:<22} {ops:>8} {q:12.3f} {o:>15} {r:>17}  {means[v]:12.3f} {mo:>14}  "
                  f"{walls[v]:12.3f}")
        summary[wl] = (est, boot, floor)
        print()

    print("ratio gpuprof / torch.profiler, per-op overhead (p%d CPU time) [90%% interval]:"
          % int(QUANTILE * 100))
    for wl, (est, boot, floor) in summary.items():
        parts = []
        glo = interval([bt["gpuprof"] for bt in boot])[0]
        for v in ("torch.profiler", "torch.profiler+shapes"):
            tlo, thi = interval([bt[v] for bt in boot])
            if tlo > 0 and est[v] > floor:
                lo, hi = interval([bt["gpuprof"] / bt[v] for bt in boot])
                parts.append(f"{est['gpuprof'] / est[v]:6.1f}x [{lo:.1f} - {hi:.1f}]  vs {v}")
            elif glo > floor and max(thi, floor) > 0:
                parts.append(f">= {glo / max(thi, floor):.0f}x  vs {v}: its overhead, {est[v]:.2f} us/op "
                             f"[{tlo:.2f} - {thi:.2f}], is not resolved in this run (noise floor "
                             f"{floor:.2f} us/op)")
            else:
                parts.append(f"n/a  vs {v}: the overheads are not resolved in this run "
                             f"(noise floor {floor:.2f} us/op)")
        print(f"  {wl:<9} " + ("\n  " + " " * 10).join(parts))
    print()

    print("gpuprof's own process (BPF ring-buffer reader, runs beside the target) during the gpuprof phases:")
    for wl, w in info["workloads"].items():
        steps = sum(len(ph) for ph in w["cpu"]["gpuprof"])
        helper = sum(w["helper"]["gpuprof"])
        print(f"  {wl:<9} {helper * 1e6 / (steps * w['ops_per_step']):6.2f} us CPU per op "
              f"({helper:.2f} s over {steps} steps; /proc tick resolution 10 ms)")
    print()

    print("noise (p10 above the fastest step, per op; overheads below it are not resolved) and other load:")
    warn = []
    for wl, w in info["workloads"].items():
        est, boot, floor = summary[wl]
        loads = [o / sum(ph) for v in VARIANTS for o, ph in zip(w["other"][v], w["wall"][v])]
        print(f"  {wl:<9} noise floor {floor:6.2f} us/op; other processes' load {med(loads):.2f} CPUs median, "
              f"{max(loads):.2f} max")
        if floor > 0.25 * est["gpuprof"]:
            warn.append(wl)
    if warn:
        print(f"  WARNING: the machine was disturbed during this run (other processes, or the host when the "
              f"load above is ~0);")
        print(f"  {', '.join(warn)}: gpuprof's overhead is not well resolved. Rerun when the machine is quiet.")
    print()

    print("gpuprof attach/detach (one `gpuprof record -p PID -q -o FILE` per gpuprof phase; "
          "the workload waits while it attaches and detaches):")
    att = [s["attach_ms"] for s in sessions]
    det = [s["detach_ms"] for s in sessions]
    attw = [s["attach_wall_ms"] for s in sessions]
    detw = [s["detach_wall_ms"] for s in sessions]
    s0 = sessions[0]
    print(f"  {len(sessions)} attaches; {s0['ops']} ops, {s0['entry']} entry + {s0['exit']} exit probes")
    print(f"  attach (as gpuprof reports it):          median {med(att):7.1f} ms   max {max(att):7.1f} ms")
    print(f"  detach (as gpuprof reports it):          median {med(det):7.1f} ms   max {max(det):7.1f} ms")
    print(f"  launch -> tracing (BPF load + attach):   median {med(attw):7.1f} ms   max {max(attw):7.1f} ms")
    print(f"  SIGINT -> exit (detach + write record):  median {med(detw):7.1f} ms   max {max(detw):7.1f} ms")
    print()

    print("gpuprof recordings (sanity check: did gpuprof see every op?):")
    print(f"  {'workload':<10} {'round':>5} {'steps':>6} {'events':>9} {'lost':>5} {'ops/step':>9} "
          f"{'torch.profiler':>15} {'gpuprof CPU s':>14}")
    ok = True
    for s in sessions:
        expect = info["workloads"][s["workload"]]["ops_per_step"]
        per = s["calls"] / s["steps"]
        flag = "" if s["calls"] == expect * s["steps"] and s["lost"] == 0 else "  <-- MISMATCH"
        ok = ok and not flag
        print(f"  {s['workload']:<10} {s['round']:>5} {s['steps']:>6} {s['events']:>9} {s['lost']:>5} "
              f"{per:9.2f} {expect:>15} {s['cpu_s']:14.2f}{flag}")
    print("  (ops/step = sum of '# of Calls' in `gpuprof report FILE --sort-by count` / steps attached; "
          "events = entries + exits)")
    print(f"  {'all recordings match torch.profiler op counts, no events lost' if ok else 'MISMATCH: see rows marked above'}")
    print()
    return ok

def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuprof", default=os.path.join(ROOT, "build", "gpuprof"))
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch + torchvision")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--small-links", type=int, default=79, help="mm/add/relu links per small-op step (7 ops each)")
    ap.add_argument("--small-steps", type=int, default=200)
    ap.add_argument("--resnet-steps", type=int, default=8)
    ap.add_argument("--keep", action="store_true", help="keep the gpuprof recordings and logs")
    ap.add_argument("--json", metavar="FILE", help="also write the raw per-step times and gpuprof sessions as JSON")
    ap.add_argument("--from-json", metavar="FILE", help="print the tables of a run saved with --json, run nothing")
    a = ap.parse_args()

    if a.from_json:
        with open(a.from_json) as f:
            saved = json.load(f)
        info = saved["info"]
        first = next(iter(info["workloads"].values()))
        steps = {wl: w["steps"] for wl, w in info["workloads"].items()}
        print(f"(tables of the run saved in {a.from_json})")
        ok = report(info, saved["sessions"], len(first["cpu"]["baseline"]),
                    steps.get("small-op"), steps.get("resnet18"))
        return 0 if ok else 2

    if os.geteuid() != 0:
        die("must run as root: gpuprof loads BPF programs and attaches uprobes "
            "(sudo /usr/bin/python3 bench/overhead.py)")
    if not os.access(a.gpuprof, os.X_OK):
        die(f"{a.gpuprof} not found; build it with `make -C {ROOT} build/gpuprof`")
    chk = subprocess.run([a.python, "-c", "import torch, torchvision"], capture_output=True, text=True)
    if chk.returncode != 0:
        die(f"{a.python} cannot import torch/torchvision (use --python):\n{chk.stderr.strip()}")

    workdir = tempfile.mkdtemp(prefix="gpuprof-overhead-")
    t_begin = time.monotonic()
    print("gpuprof overhead benchmark")
    print(f"date:    {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"machine: {platform.node()}; kernel {platform.release()}; {cpu_model()}; "
          f"nproc {os.cpu_count()}; virtualisation: {virt()}")
    sys.stdout.flush()

    target = Target(a.python, ["--rounds", str(a.rounds), "--small-links", str(a.small_links),
                               "--small-steps", str(a.small_steps), "--resnet-steps", str(a.resnet_steps),
                               "--threads", "1"])
    kind, arg = target.recv()
    if kind != "READY":
        die(f"unexpected message from workload: {kind} {arg}")
    pid = int(arg)

    sessions = []  # one per gpuprof phase
    while True:
        kind, arg = target.recv()
        if kind == "ATTACH":
            wl, rnd = arg.split()
            n = len(sessions)
            g = Gpuprof(a.gpuprof, pid, os.path.join(workdir, f"{n:02d}-{wl}-r{rnd}.gpuprof"),
                        os.path.join(workdir, f"{n:02d}-{wl}-r{rnd}.stderr"))
            att = g.wait_tracing()
            target.send(f"GO {g.p.pid}")
            kind, arg = target.recv()
            if kind != "DETACH":
                die(f"expected DETACH from workload, got {kind}")
            steps = int(arg)
            det = g.stop()
            target.send("DETACHED")
            calls, rows = report_calls(a.gpuprof, g.out)
            sessions.append({"workload": wl, "round": int(rnd), "steps": steps, "calls": calls,
                             "rows": rows, **att, **det})
        elif kind == "RESULT":
            info = json.loads(arg)
            break
        else:
            die(f"unexpected message from workload: {kind}")
    target.p.wait()
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"info": info, "sessions": [{k: v for k, v in s.items() if k != "stderr"}
                                                  for s in sessions]}, f)

    ok = report(info, sessions, a.rounds, a.small_steps, a.resnet_steps)

    print(f"total run time {time.monotonic() - t_begin:.0f} s")
    if a.keep:
        print(f"recordings and gpuprof stderr kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0 if ok else 2


def _terminate(signum, frame):
    raise KeyboardInterrupt


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _terminate)
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)

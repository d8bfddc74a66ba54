#!/usr/bin/env python3
"""gpuprof overhead benchmark: baseline vs torch.profiler vs gpuprof's two exit modes, side by side.

    sudo /usr/bin/python3 bench/overhead.py [--rounds 8] [--shapes-memory] [--sampling] [--stacks] [--keep]
                                            [--json FILE] [--chroot /srv/gpuprof-trixie]

Starts bench/overhead_target.py (with --python, default /usr/bin/python3, which
has torch) and, in one process, times two workloads -- a small-op chain of
16x16 mm/add/relu and torchvision resnet18 (batch 5, 224x224, forward) -- under
five variants in alternating phases: no profiler, torch.profiler (CPU),
torch.profiler with record_shapes, and `gpuprof record -p PID` attached for the
phase, once with `--exit-mode emulated` (the default) and once with
`--exit-mode ret`, the order rotated each round. Time per step is the target's
CPU time (user + system: uprobe traps and single-steps count, waiting for a
core does not); each variant's figure is the 10th percentile of all its steps,
since other load on the machine only ever adds time (the median over rounds of
the phase means is printed beside it).

With --shapes-memory, three more variants join the rounds: torch.profiler
with profile_memory, and gpuprof (emulated exits) with --record-shapes and
with --profile-memory (GPUPROF_VARIANTS holds every gpuprof variant's record
arguments). Each feature's gpuprof variant is then compared with
torch.profiler's same feature, and with plain gpuprof (what the feature adds).

With --stacks, torch.profiler with with_stack=True and gpuprof (emulated
exits) with --with-stack and with --with-modules join the rounds, compared
the same way.

With --sampling, three more gpuprof variants join the rounds: `-F 99 --no-ops`
and `-F 999 --no-ops` (CPU-clock samples of the target's threads, no op
probes at all) and `--exit-mode emulated -F 99` (op probes + samples).
Sampling costs per unit of time, not per op, so besides the per-op figure and
the ratios against torch.profiler their overhead is printed as a % of the
baseline step time (p10, with its interval and noise floor), with the cost
per sample and whether -F 99 --no-ops is under 1% of the step time. Their
sanity check: > 0 samples, 0 lost, every sample in `gpuprof report FILE
--folded --metric samples`, and samples per second of the target's CPU time
while attached (/proc/PID/task/*/schedstat) within 10% of HZ (--no-ops: 0
events, no calls).

Per-op overhead = (t_variant - t_baseline) / aten ops per step, with ops
counted by torch.profiler (nested ops included), with a 90% interval from
resampling the rounds. The run's noise floor (how far the p10 sits above the
fastest step, per op) is printed with the load of other processes; an overhead
below it is "not resolved", and a ratio against it is then given as a lower
bound. Ratios: each gpuprof mode against
torch.profiler (and record_shapes), and ret against emulated; with
--shapes-memory also gpuprof (+shapes) / torch.profiler+shapes, gpuprof
(+memory) / torch.profiler+memory, each of them / gpuprof (emulated exits),
and each feature's extra cost per op on both sides.

Also reports gpuprof's attach and detach times per variant, the CPU time of
gpuprof's own process, and checks from each recording that gpuprof saw every
op (events and `gpuprof report` calls per step; +shapes: the TensorImpl
layout was calibrated; +memory: memory events recorded, none lost). Then,
after the rounds, it takes --duration-recordings one-step resnet18 recordings
per exit mode, alternating, and checks that the two modes measure the same op durations
(Self CPU of the ops holding >= 5% of the self time, within 2%, once the ret
mode's own cost inside each op is taken out; see duration_check). Exit status
2 if a recording misses ops or a duration difference beyond 2% is resolved.
--json FILE saves the raw per-step times and the recordings' tables;
--from-json FILE reprints the tables of a saved run.

Needs root (gpuprof loads BPF programs and uprobes). The harness itself needs
no torch.
"""
import argparse
import collections
import datetime
import gzip
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
# gpuprof variants: name -> the arguments of `gpuprof record -p PID ... -q -o FILE`. The
# feature variants name the exit mode too, so that they differ from "gpuprof (emulated
# exits)" by the feature alone whatever record's default mode is.
GPUPROF_VARIANTS = {
    "gpuprof (emulated exits)": ["--exit-mode", "emulated"],
    "gpuprof (ret exits)": ["--exit-mode", "ret"],
    "gpuprof (+shapes)": ["--exit-mode", "emulated", "--record-shapes"],
    "gpuprof (+memory)": ["--exit-mode", "emulated", "--profile-memory"],
    # --sampling: CPU samples alone (no op probes at all), and with the op probes
    "gpuprof (-F 99 --no-ops)": ["-F", "99", "--no-ops"],
    "gpuprof (-F 999 --no-ops)": ["-F", "999", "--no-ops"],
    "gpuprof (emulated exits, -F 99)": ["--exit-mode", "emulated", "-F", "99"],
    # --stacks: the Python stack at every op entry
    "gpuprof (+stack)": ["--exit-mode", "emulated", "--with-stack"],
    # ... and the module attribute names read from it (docs/modules.md)
    "gpuprof (+modules)": ["--exit-mode", "emulated", "--with-modules"],
}
GP_EMU, GP_RET, GP_SHAPES, GP_MEMORY, GP_F99, GP_F999, GP_EMU_F99, GP_STACK, GP_MODULES = GPUPROF_VARIANTS
EXIT_MODES = {GP_EMU: "emulated", GP_RET: "ret"}  # the two exit modes: duration check, old --json files
# torch.profiler variants (overhead_target.py holds their profile() arguments)
TORCH_VARIANTS = ["torch.profiler", "torch.profiler+shapes", "torch.profiler+memory", "torch.profiler+stack"]
# the default run: no profiler, torch.profiler (with and without shapes), gpuprof's two exit modes
VARIANTS = ["baseline", "torch.profiler", "torch.profiler+shapes", GP_EMU, GP_RET]
# --shapes-memory adds the features that cost per op on both sides, each against its counterpart
FEATURES = {  # feature: (gpuprof variant, torch.profiler variant)
    "shapes": (GP_SHAPES, "torch.profiler+shapes"),
    "memory": (GP_MEMORY, "torch.profiler+memory"),
    "stack": (GP_STACK, "torch.profiler+stack"),
    "modules": (GP_MODULES, "torch.profiler+stack"),  # torch's with_stack names the module calls too
}
SHAPES_MEMORY_VARIANTS = ["torch.profiler+memory", GP_SHAPES, GP_MEMORY]
# --stacks: with_stack on both sides
STACK_VARIANTS = ["torch.profiler+stack", GP_STACK, GP_MODULES]
# --sampling: CPU sampling costs per unit of time, not per op: judged as a % of the step time
SAMPLING_VARIANTS = [GP_F99, GP_F999, GP_EMU_F99]
SAMPLING_GOAL_PCT = 1.0  # the goal for samples alone at 99 Hz: under 1% of the step time
ALL_VARIANTS = ["baseline"] + TORCH_VARIANTS + list(GPUPROF_VARIANTS)  # the order of the tables

TRACING_RE = re.compile(r"gpuprof: tracing (\d+) .*?: (\d+) ops, (\d+) entry \+ (\d+) exit probes .*\(attach ([\d.]+) ms\)"
                        r"(?:; exits (emulated|on ret) \((\d+) single-stepped\))?")
# --no-ops (-F without op probes) prints this instead of the tracing line
SAMPLING_RE = re.compile(r"gpuprof: sampling (\d+) \(.*?\) at (\d+) Hz on (\d+) CPUs, no op tracing")
STOPPED_RE = re.compile(r"gpuprof: stopped \(([^)]*)\); detach ([\d.]+) ms; (\d+) events, (\d+) lost"
                        r"(?:; (\d+) samples, (\d+) lost)?"  # the samples part: -F only
                        r"(?:; (\d+) memory events, (\d+) lost)?")  # the memory part: --profile-memory only
# --record-shapes: printed once the layout is calibrated (a refusal reads "TensorImpl layout: cannot ...")
LAYOUT_RE = re.compile(r"gpuprof: (TensorImpl layout: ndim @.*)")
NO_SHAPES = "gpuprof: warning: no input shapes"
MEMORY_ROW = "[memory]"  # --profile-memory: allocations outside any op, one "call" per event; not an op


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
    def __init__(self, python, args, chroot=None):
        """python: the interpreter; chroot: run it there (the script is copied in)."""
        script = os.path.join(HERE, "overhead_target.py")
        if chroot:
            inside = "/opt/gpuprof-bench/overhead_target.py"
            os.makedirs(os.path.join(chroot, os.path.dirname(inside).lstrip("/")), exist_ok=True)
            shutil.copyfile(script, os.path.join(chroot, inside.lstrip("/")))
            cmd = ["chroot", chroot, python, "-u", inside] + args
        else:
            cmd = [python, "-u", script] + args
        self.p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        _children.append(self.p)

    def recv(self):
        while True:
            line = self.p.stdout.readline()
            if not line:
                rc = self.p.wait()
                die(f"workload process exited unexpectedly (rc {rc})")
            if line.startswith("@@"):
                kind, _, arg = line[2:].rstrip("\n").partition(" ")
                return kind, arg
            sys.stderr.write("target: " + line)

    def send(self, word):
        self.p.stdin.write(word + "\n")
        self.p.stdin.flush()


def variant_of(session):
    """A session's gpuprof variant; --json files from before the feature variants name only the mode."""
    return session.get("variant") or {m: v for v, m in EXIT_MODES.items()}[session["mode"]]


def exit_mode(args):
    if "--no-ops" in args:
        return None  # no op probes, no exits
    return args[args.index("--exit-mode") + 1] if "--exit-mode" in args else "emulated"


def sample_hz(args):
    """The -F of a gpuprof variant's arguments, None without sampling."""
    return int(args[args.index("-F") + 1]) if "-F" in args else None


def task_cpu_ns(pid):
    """CPU time (ns) of all threads of pid, from /proc/PID/task/*/schedstat (sum_exec_runtime,
    which holds the time of the interrupts that hit the thread unless the kernel has
    CONFIG_IRQ_TIME_ACCOUNTING); None if it cannot be read."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except FileNotFoundError:
                pass  # a thread that has just exited
    except (OSError, ValueError, IndexError):
        return None
    return total


def kernel_config(option):
    """'y', 'not set' or None (config not readable) for a CONFIG_ option of the running kernel."""
    for path, opener in (("/proc/config.gz", "gzip"), (f"/boot/config-{platform.release()}", None)):
        try:
            if opener:
                text = gzip.open(path, "rt").read()
            else:
                with open(path) as f:
                    text = f.read()
        except OSError:
            continue
        m = re.search(rf"^{option}=(\w+)", text, re.M)
        return m.group(1) if m else "not set"
    return None


class Gpuprof:
    """One `gpuprof record -p PID ARGS -q -o FILE` session."""

    def __init__(self, exe, pid, args, out, errlog):
        self.out, self.errlog, self.args = out, errlog, args
        self.t_start = time.perf_counter()
        self.err = open(errlog, "w+")
        self.p = subprocess.Popen([exe, "record", "-p", str(pid)] + args + ["-q", "-o", out],
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
            text = self._stderr()
            m = TRACING_RE.search(text)
            s = SAMPLING_RE.search(text)  # --no-ops: samples only, no op probes, no attach time printed
            if m or s:
                self.attach_wall = (time.perf_counter() - self.t_start) * 1e3
                if m:
                    self.attach = {"ops": int(m.group(2)), "entry": int(m.group(3)), "exit": int(m.group(4)),
                                   "attach_ms": float(m.group(5)), "attach_wall_ms": self.attach_wall,
                                   "exits": m.group(6) or "?",
                                   "single_stepped": int(m.group(7)) if m.group(7) else None}
                else:
                    self.attach = {"ops": 0, "entry": 0, "exit": 0, "attach_ms": None,
                                   "attach_wall_ms": self.attach_wall, "exits": None, "single_stepped": None}
                # -F: the sampled rate and CPUs are printed only by the --no-ops line
                self.attach.update({"hz": sample_hz(self.args),
                                    "sample_cpus": int(s.group(3)) if s else None})
                return self.attach
            if self.p.poll() is not None:
                die(f"gpuprof exited (rc {self.p.returncode}) before tracing:\n{self._stderr()}")
            time.sleep(0.002)
        self.p.kill()
        die(f"gpuprof did not start tracing within {timeout}s:\n{self._stderr()}")

    def wait_steady(self, timeout=10):
        """After the target's warm-up: with --record-shapes, wait until gpuprof has handed the
        calibrated TensorImpl layout to BPF (it prints the layout line then). Before that, entries
        past BPF's raw-window budget go without shapes, and cost less: timed, they would make
        the variant look cheaper. Returns the wait in ms, None if the variant has nothing to wait
        for; a layout that does not come is left to the sanity check."""
        if "--record-shapes" not in self.args:
            return None
        t0 = time.perf_counter()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and self.p.poll() is None:
            text = self._stderr()
            if LAYOUT_RE.search(text) or NO_SHAPES in text:
                break
            time.sleep(0.002)
        return (time.perf_counter() - t0) * 1e3

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
        layout = LAYOUT_RE.search(text)
        return {"reason": m.group(1), "detach_ms": float(m.group(2)), "events": int(m.group(3)),
                "lost": int(m.group(4)), "detach_wall_ms": wall,
                "cpu_s": (ru.ru_utime + ru.ru_stime) if ru else float("nan"),
                # None where the variant does not record them
                "samples": int(m.group(5)) if m.group(5) else None,
                "samples_lost": int(m.group(6)) if m.group(6) else None,
                "mem_events": int(m.group(7)) if m.group(7) else None,
                "mem_lost": int(m.group(8)) if m.group(8) else None,
                "tensor_layout": layout.group(1) if layout else None,
                "stderr": text}


TIME_UNITS = {"ns": 1e-3, "us": 1.0, "ms": 1e3, "s": 1e6}


def parse_time(text):
    """'612.428us', '192.436ms', '1.488s' -> microseconds."""
    m = re.fullmatch(r"([\d.]+)(ns|us|ms|s)", text)
    if not m:
        die(f"cannot parse a time in gpuprof report: {text!r}")
    return float(m.group(1)) * TIME_UNITS[m.group(2)]


def report_rows(exe, path, *args):
    """The rows of `gpuprof report FILE --row-limit -1 ARGS`, each as {column header: text}."""
    r = subprocess.run([exe, "report", path, "--sort-by", "count", "--row-limit", "-1", *args],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        die(f"gpuprof report {path} failed:\n{r.stderr}")
    # Columns are cut where the dash line's runs are, by header: which columns there
    # are depends on the recording and the options (--profile-memory adds CPU Mem and
    # Self CPU Mem, whose values, "7.96 Mb", hold a space; --group-by-input-shape adds
    # Input Shapes).
    rows, spans, names, dashes = [], None, None, 0
    for line in r.stdout.splitlines():
        if line.startswith("---"):
            dashes += 1
            spans = spans or [m.span() for m in re.finditer(r"-+", line)]
        elif dashes == 1 and names is None:
            names = [line[a:b].strip() for a, b in spans]
        elif dashes == 2 and line.strip():
            rows.append(dict(zip(names, (line[a:b].strip() for a, b in spans))))
    return rows


def report_table(exe, path):
    """All rows of `gpuprof report FILE --row-limit -1`: {name: [self CPU us, CPU total us, calls]}."""
    return {r["Name"]: [parse_time(r["Self CPU"]), parse_time(r["CPU total"]), int(r["# of Calls"])]
            for r in report_rows(exe, path)}


def folded_samples(exe, path):
    """Samples in `gpuprof report FILE --folded --metric samples` (the sum of its counts)."""
    r = subprocess.run([exe, "report", path, "--folded", "--metric", "samples"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        die(f"gpuprof report {path} --folded --metric samples failed:\n{r.stderr}")
    return sum(int(line.rsplit(" ", 1)[1]) for line in r.stdout.splitlines() if line.strip())


def shapeless_calls(exe, path):
    """Calls whose input shapes print as '?' in `gpuprof report FILE --group-by-input-shape`."""
    return sum(int(r["# of Calls"]) for r in report_rows(exe, path, "--group-by-input-shape")
               if "?" in r["Input Shapes"] and r["Name"] != MEMORY_ROW)


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


def ratio(est, boot, num, den, floor, digits=1):
    """Per-op overhead ratio num / den with its 90% interval; a lower bound when den is not resolved."""
    dlo, dhi = interval([bt[den] for bt in boot])
    nlo = interval([bt[num] for bt in boot])[0]
    if dlo > 0 and est[den] > floor:
        lo, hi = interval([bt[num] / max(bt[den], 1e-9) for bt in boot])
        return f"{est[num] / est[den]:{5 + digits}.{digits}f}x [{lo:.{digits}f} - {hi:.{digits}f}]"
    if nlo > floor and max(dhi, floor) > 0:
        return (f">= {nlo / max(dhi, floor):.0f}x  (the {den} overhead, {est[den]:.2f} us/op "
                f"[{dlo:.2f} - {dhi:.2f}], is not resolved in this run: noise floor {floor:.2f} us/op)")
    return f"n/a  (the overheads are not resolved in this run: noise floor {floor:.2f} us/op)"


def per_step(sessions, workload, variant):
    """[{op: (self us, total us) per step}, ...]: the duration-check recordings of one exit mode."""
    return [{n: (r[0] / s["steps"], r[1] / s["steps"]) for n, r in s["table"].items()}
            for s in sessions if s["workload"] == workload and variant_of(s) == variant
            and s.get("purpose") == "duration" and s.get("table")]


DURATION_TOLERANCE = 0.02  # the two modes' durations must agree within 2%
MAJOR_SHARE = 0.05  # ops holding at least 5% of the self time are compared one by one
TOP_LEVEL = ["aten::conv2d", "aten::batch_norm", "aten::max_pool2d", "aten::relu_", "aten::add_",
             "aten::adaptive_avg_pool2d", "aten::linear"]


def duration_check(info, sessions, workload="resnet18"):
    """Do the two exit modes measure the same op durations? Returns True/False, or None when not run.

    Data: one-step resnet18 recordings, alternating the modes (run after the
    overhead rounds); `gpuprof report FILE --row-limit -1` of each gives every
    op's Self CPU and CPU total for one step. Durations are timestamps, so a
    step during which the target waited for a core or the host slowed the VM
    reads longer: as for the step times, each figure is the 10th percentile
    over the recordings of a mode (other load only ever adds time).

    Each exit probe takes its timestamp on the trap, before the kernel finishes
    the probed instruction; what follows (emulating the jne: ~0.5 us; single-
    stepping the ret out of line: tens of us on this VM) is paid after the
    child's exit timestamp, i.e. inside its parent's Self CPU. So in ret mode an
    op's Self CPU grows by (its direct child calls) x (the extra cost of a ret
    exit), and its CPU total by (all its descendant calls) x that cost: short
    ops with many nested ops (batch_norm: ~0.4 ms, 9 nested calls) are inflated
    by tens of percent, a leaf such as max_pool2d_with_indices not at all. The
    check therefore compares the Self CPU per step of every op that holds at
    least 5% of the self time, and their sum, once that known extra is taken
    out of the ret mode's figure. The extra cost per nested exit is measured in
    the same recordings, on the wrapper ops that have exactly one child and
    almost no work of their own (conv2d -> convolution -> _convolution, relu_
    -> clamp_min_, ...), whose Self CPU difference between the modes is that
    child's exit. The raw difference is printed beside it and, for
    information, the CPU total of the top-level ops. Nested-call counts come
    from torch.profiler's tree of one step (overhead_target.op_tree).
    """
    tree = info["workloads"].get(workload, {}).get("tree")
    emu, ret = per_step(sessions, workload, GP_EMU), per_step(sessions, workload, GP_RET)
    if not tree or not emu or not ret:
        print(f"duration agreement between the exit modes ({workload}): not run (no duration recordings)")
        print()
        return None
    names = sorted(set().union(*emu, *ret))

    def q(recs, ns, k):
        return percentile([sum(r.get(n, (0.0, 0.0))[k] for n in ns) for r in recs], QUANTILE)

    def nested(ns, key):
        return sum(tree[n][key] for n in ns if n in tree)

    wrappers = [n for n in names if n in tree and tree[n]["children"] == tree[n]["calls"] > 0
                and q(emu, [n], 0) / tree[n]["calls"] < 50]
    kids = nested(wrappers, "children")

    def extra_of(e, t):
        return (q(t, wrappers, 0) - q(e, wrappers, 0)) / kids if kids else 0.0

    extra = extra_of(emu, ret)
    selfs = {n: q(emu, [n], 0) for n in names}
    major = [n for n in sorted(names, key=lambda n: -selfs[n]) if selfs[n] >= MAJOR_SHARE * sum(selfs.values())]

    rng = random.Random(54321)
    boots = [(rng.choices(emu, k=len(emu)), rng.choices(ret, k=len(ret))) for _ in range(1000)]
    boot_extra = [extra_of(e, t) for e, t in boots]

    def compare(ns, k, key):
        """Column k (0 self, 1 total) summed over ns: emulated, ret (us per step), raw diff, ret
        extra, diff without it and its 90% interval; key: which nested calls add a ret exit."""
        n_nested = nested(ns, key)
        e, t = q(emu, ns, k), q(ret, ns, k)
        corr = [(q(bt, ns, k) - x * n_nested) / q(be, ns, k) - 1 for (be, bt), x in zip(boots, boot_extra)]
        lo, hi = interval(corr)
        return e, t, t / e - 1, extra * n_nested / e, (t - extra * n_nested) / e - 1, lo, hi

    rme = info.get("_ret_minus_emu", {})
    print(f"duration agreement between the exit modes ({workload}; {len(emu)} + {len(ret)} one-step recordings, "
          f"modes alternating; per step, p{int(QUANTILE * 100)} over the recordings of `gpuprof report FILE "
          f"--row-limit -1`):")
    lo, hi = interval(boot_extra)
    print(f"  ret mode's own cost inside a parent op: {extra:.1f} us per nested exit [{lo:.1f} - {hi:.1f}] "
          f"(Self CPU, ret - emulated, of {len(wrappers)} one-child wrapper ops over their {kids} children); "
          f"per op from the step times, ret - emulated overhead: "
          + ", ".join(f"{wl} {v:.1f} us" for wl, v in rme.items()))
    hdr = (f"  {'op':<32} {'calls':>5} {'nested':>6} {'emulated ms':>11} {'ret ms':>9} {'raw diff':>9} "
           f"{'ret extra':>9} {'diff w/o extra [90%]':>26}")
    verdicts = []
    tol = DURATION_TOLERANCE

    def row(label, ns, k, key, gate):
        e, t, raw, x, corr, lo, hi = compare(ns, k, key)
        flag = ""
        if gate:
            if -tol <= lo and hi <= tol:
                verdict = "agrees"  # the whole interval is within 2%
            elif hi < -tol or lo > tol:
                verdict = "DIFFERS"  # the whole interval is beyond 2%
            elif abs(corr) <= tol:
                verdict = "within 2%, not resolved"  # point estimate within, interval wider
            else:
                verdict = "not resolved"
            verdicts.append(verdict)
            flag = "  " + verdict + ("  <--" if verdict == "DIFFERS" else "")
        print(f"  {label:<32} {nested(ns, 'calls'):>5} {nested(ns, key):>6} {e / 1e3:11.3f} {t / 1e3:9.3f} "
              f"{raw * 100:+8.2f}% {x * 100:+8.2f}% {corr * 100:+8.2f}% [{lo * 100:+.2f} - {hi * 100:+.2f}]{flag}")

    print(f"  Self CPU of the ops holding >= {MAJOR_SHARE:.0%} of the self time (checked: within "
          f"{DURATION_TOLERANCE:.0%} once the ret extra is taken out; 'agrees' = the 90% interval is within "
          f"+-{DURATION_TOLERANCE:.0%}, 'DIFFERS' = it is beyond):")
    print(hdr)
    for n in major:
        row(n, [n], 0, "children", True)
    row(f"sum of these {len(major)}", major, 0, "children", True)
    print("  CPU total of the top-level ops (information; their nested exits make the ret extra large):")
    print(hdr.replace("nested", " desc."))
    for n in TOP_LEVEL:
        if n in selfs:
            row(n, [n], 1, "descendants", False)
    print("  (calls, nested calls per step from torch.profiler's tree of one step: 'nested' = direct children "
          "(Self CPU), 'desc.' = all descendants (CPU total); raw diff = ret / emulated - 1; ret extra = "
          "nested x the ret mode's cost per nested exit, over emulated; diff w/o extra = (ret - extra) / "
          "emulated - 1, interval by resampling the recordings)")
    if "DIFFERS" in verdicts:
        print("  MISMATCH: the exit modes measure different durations (a difference beyond 2% is resolved), "
              "see the rows marked above")
    elif all(v == "agrees" for v in verdicts):
        print("  durations agree within 2% (Self CPU of the major ops and their sum, ret extra taken out; "
              "every 90% interval within +-2%)")
    else:
        print(f"  no difference beyond 2% is resolved; point estimates {'all' if all(v in ('agrees', 'within 2%, not resolved') for v in verdicts) else 'not all'} "
              f"within 2%, but not every 90% interval is within +-2%: the machine's noise (see above) "
              f"hides differences that small in this run. Rerun when the machine is quiet.")
    print()
    return "DIFFERS" not in verdicts


def short(variant):
    """'gpuprof (emulated exits)' -> 'emulated exits', 'gpuprof (+shapes)' -> '+shapes'."""
    return variant.removeprefix("gpuprof (").removesuffix(")")


def sampling_overheads(phases, pooled, walls, variants, floor_ms):
    """--sampling: each sampling variant's overhead per step as a % of the baseline step time
    (p10 CPU time), with a 90% interval from the same resampled rounds as bootstrap()."""
    def pct(pool, v, den="baseline"):
        return (percentile(pool[v], QUANTILE) - percentile(pool[den], QUANTILE)) / \
            percentile(pool["baseline"], QUANTILE) * 100

    rng = random.Random(12345)  # the seed and draws of bootstrap(): the same resamples
    rounds = range(len(phases["baseline"]))
    boot = []
    for _ in range(1000):
        idx = rng.choices(rounds, k=len(rounds))
        pool = {v: [x for i in idx for x in ph[i]] for v, ph in phases.items()}
        boot.append({v: pct(pool, v) for v in variants} | {"_on_ops": pct(pool, GP_EMU_F99, GP_EMU)
                                                           if GP_EMU_F99 in variants else None})
    base = percentile(pooled["baseline"], QUANTILE)
    means = {v: med([sum(ph) / len(ph) for ph in phases[v]]) for v in variants}
    wall = {v: percentile([x for ph in walls[v] for x in ph], QUANTILE) for v in variants}
    out = {"_base_ms": base, "_floor_pct": floor_ms / base * 100}
    for v in [v for v in SAMPLING_VARIANTS if v in variants] + ([GP_EMU_F99] if GP_EMU_F99 in variants else []):
        key, den = (v, "baseline") if v not in out else ("_on_ops", GP_EMU)  # the second: -F 99 on top of ops
        lo, hi = interval([bt[key] for bt in boot])
        out[key] = {"pct": pct(pooled, v, den), "lo": lo, "hi": hi,
                    "mean_pct": (means[v] - means[den]) / means["baseline"] * 100,
                    "wall_pct": (wall[v] - wall[den]) / wall["baseline"] * 100}
    return out


def sampling_ratio(est, boot, num, den, floor):
    """A sampling variant's per-op overhead / torch.profiler's: the ratio with its interval when
    the sampling overhead is resolved, else an upper bound."""
    dlo = interval([bt[den] for bt in boot])[0]
    nlo, nhi = interval([bt[num] for bt in boot])
    if est[num] > floor and nlo > 0 or dlo <= 0:
        return ratio(est, boot, num, den, floor, 3)
    return (f"<= {max(nhi, floor) / dlo:.3f}x  (the {num} overhead, {est[num]:.3f} us/op [{nlo:.3f} - "
            f"{nhi:.3f}], is not resolved in this run: noise floor {floor:.2f} us/op)")


def samples_rate(s):
    """Samples per second of the target's CPU time while gpuprof was attached, None if unknown."""
    return s["samples"] / s["target_cpu_s"] if s.get("samples") is not None and s.get("target_cpu_s") else None


SAMPLES_RATE_TOLERANCE = 0.10  # samples per target CPU-second within 10% of HZ (+ 3 samples of slack)


def rate_ok(s):
    hz, cpu = s.get("hz"), s.get("target_cpu_s")
    if not hz or not cpu:
        return True  # not measured (an old --json file, or /proc/PID/task/*/schedstat unreadable)
    return abs(s["samples"] - hz * cpu) <= SAMPLES_RATE_TOLERANCE * hz * cpu + 3


def print_sampling(info, step_pct, sessions, sampling):
    """--sampling: overhead per step as a % of the baseline step time, the 99 Hz goal, samples/s."""
    print(f"CPU sampling: overhead per step, % of the baseline step time (p{int(QUANTILE * 100)} CPU time; "
          "sampling costs per unit of time, not per op) [90% interval, bootstrap over rounds]; "
          "'~' = below the run's noise floor (not resolved)")
    on_ops = f"({short(GP_EMU_F99)}) - ({short(GP_EMU)})"  # what -F 99 adds to the op probes
    lw = max([len(on_ops)] + [len(v) for v in sampling])
    hdr = (f"  {'workload':<9} {'variant':<{lw}} {'HZ':>4} {'baseline ms':>11} {'overhead %':>11} "
           f"{'[90% interval]':>18} {'mean %':>8} {'wall p10 %':>10} {'us/sample':>9} {'floor %':>7}")
    print(hdr)
    for wl, sp in step_pct.items():
        rows = [(v, v, "baseline") for v in sampling]
        if "_on_ops" in sp:
            rows.append(("_on_ops", on_ops, GP_EMU))
        for i, (key, label, den) in enumerate(rows):
            r = sp[key]
            hz = sample_hz(GPUPROF_VARIANTS[key if key != "_on_ops" else GP_EMU_F99])
            mark = "~" if r["pct"] <= sp["_floor_pct"] or r["lo"] <= 0 else ""
            # the cost of one sample: % of a step / samples per step (HZ x step time)
            per_sample = r["pct"] * 1e4 / hz
            print(f"  {wl if i == 0 else '':<9} {label:<{lw}} {hz:>4} {sp['_base_ms']:11.3f} "
                  f"{mark + format(r['pct'], '+.3f'):>11} [{r['lo']:+.3f} - {r['hi']:+.3f}] "
                  f"{r['mean_pct']:+8.3f} {r['wall_pct']:+10.3f} {per_sample:9.2f} {sp['_floor_pct']:7.3f}")
    print(f"  (overhead % = (p{int(QUANTILE * 100)} variant - p{int(QUANTILE * 100)} baseline) / "
          f"p{int(QUANTILE * 100)} baseline; '{on_ops}' = what -F 99 adds to the op "
          "probes, over the baseline step; mean % from the median over rounds of the phase means; wall p10 % "
          "from wall time (information); us/sample = overhead % x step time / (HZ x step time); floor % = "
          "the run's noise floor as a % of the step)")
    irq = kernel_config("CONFIG_IRQ_TIME_ACCOUNTING")
    print("  the sampling interrupt runs in hardirq context: the target's CPU time holds it only without "
          f"CONFIG_IRQ_TIME_ACCOUNTING (this kernel: {irq or 'config not readable'}"
          + ("; the CPU-time figures above MISS the interrupt's cost, see wall p10 %" if irq == "y" else "")
          + ")")
    if GP_F99 in sampling:
        for wl, sp in step_pct.items():
            r = sp[GP_F99]
            goal = SAMPLING_GOAL_PCT
            if r["hi"] < goal and sp["_floor_pct"] < goal:
                verdict = f"yes: under {goal:g}% (the whole 90% interval is below {goal:g}%)"
            elif r["hi"] < goal:
                verdict = (f"not resolved: the 90% interval is below {goal:g}%, but the noise floor, "
                           f"{sp['_floor_pct']:.2f}% of the step, is not: rerun when the machine is quiet")
            elif r["lo"] > goal:
                verdict = f"NO: above {goal:g}% (the whole 90% interval is above {goal:g}%)"
            else:
                verdict = (f"not resolved: the 90% interval straddles {goal:g}%"
                           + (f" (noise floor {sp['_floor_pct']:.2f}% of the step: rerun when the machine is "
                              "quiet)" if sp["_floor_pct"] >= goal else ""))
            print(f"  {wl:<9} -F 99 --no-ops under {goal:g}% of the step time? {r['pct']:+.3f}% "
                  f"[{r['lo']:+.3f} - {r['hi']:+.3f}]: {verdict}")
    print("  samples per second of the target's CPU time while attached (should be ~HZ: one CPU-clock "
          "event per CPU at HZ, the target's samples kept; median [min - max] over the recordings):")
    for wl in info["workloads"]:
        for v in sampling:
            rates = [samples_rate(s) for s in sessions if s["workload"] == wl and variant_of(s) == v
                     and s.get("purpose", "overhead") == "overhead"]
            rates = [x for x in rates if x is not None]
            hz = sample_hz(GPUPROF_VARIANTS[v])
            text = (f"{med(rates):7.1f} [{min(rates):.1f} - {max(rates):.1f}] /s = {med(rates) / hz:.3f} x HZ"
                    if rates else "not measured")
            print(f"    {wl:<9} {v:<{lw}} {text}")
    print()


def report(info, sessions, rounds, small_steps, resnet_steps):
    """Prints the tables; returns False if a recording does not match the op counts (or misses
    what its feature records), or the two exit modes' durations disagree."""
    # the variants this run timed, in table order (a --json file holds those of its run)
    variants = [v for v in ALL_VARIANTS if v in next(iter(info["workloads"].values()))["cpu"]]
    gp_variants = [v for v in variants if v in GPUPROF_VARIANTS]
    features = {f: pair for f, pair in FEATURES.items() if all(v in variants for v in pair)}
    sampling = [v for v in SAMPLING_VARIANTS if v in variants]
    vw = max([24] + [len(v) for v in variants])  # the variant column (24 without --sampling)
    print(f"torch {info['torch']}, torchvision {info['torchvision']}, "
          f"torch.set_num_threads({info['threads']}); grad disabled (forward only)")
    print(f"{rounds} rounds; each round runs every variant once per workload (order rotated per round); "
          f"{small_steps} small-op / {resnet_steps} resnet18 timed steps per phase; then "
          f"{info.get('duration_recordings', 0)} one-step resnet18 recordings per exit mode (duration check)")
    print("gpuprof variants: `gpuprof record -p PID --exit-mode emulated` (exit probes on the stack-protector "
          "jne before each ret, emulated by the kernel) and `--exit-mode ret` (on each ret, single-stepped)")
    if features:
        print(f"with --shapes-memory: {GP_SHAPES} = `gpuprof record -p PID {' '.join(GPUPROF_VARIANTS[GP_SHAPES])}` "
              "(reads the sizes of every op's tensor arguments at op entry), against torch.profiler+shapes "
              f"(record_shapes=True); {GP_MEMORY} = `... {' '.join(GPUPROF_VARIANTS[GP_MEMORY])}` (entry probes "
              "on libc10's allocator accounting), against torch.profiler+memory (profile_memory=True)")
    if sampling:
        print("with --sampling: " + "; ".join(f"{v} = `gpuprof record -p PID {' '.join(GPUPROF_VARIANTS[v])}`"
                                               for v in sampling)
              + " (one CPU-clock perf event per CPU at HZ, a BPF program keeps the target's samples; "
              "--no-ops: no op probes at all)")
    print("time per step = CPU time of the target process (user + system, uprobe traps included); "
          f"'p{int(QUANTILE * 100)}' = {int(QUANTILE * 100)}th percentile of all steps of a variant "
          "(robust to other load on the machine), 'mean' = median over rounds of each phase's mean")
    print("overhead us/op = (variant - baseline) / aten ops per step (counted by torch.profiler, nested ops "
          "included); [90% interval, bootstrap over rounds]; '~' = below the run's noise floor (not resolved)")
    print()

    hdr = (f"{'workload':<9} {'variant':<{vw}} {'ops/step':>8} {'p' + str(int(QUANTILE * 100)) + ' ms/step':>12} "
           f"{'overhead us/op':>15} {'[90% interval]':>17}  {'mean ms/step':>12} {'overhead us/op':>14}  "
           f"{'wall ms/step':>12}")
    print(hdr)
    print("-" * len(hdr))
    summary = {}
    step_pct = {}  # --sampling: workload -> the per-step figures of sampling_overheads
    info["_ret_minus_emu"] = {}
    for wl, w in info["workloads"].items():
        ops = w["ops_per_step"]
        phases = {v: [[x * 1e3 for x in ph] for ph in w["cpu"][v]] for v in variants}
        pooled = {v: [x for ph in phases[v] for x in ph] for v in variants}
        est = overheads(pooled, ops)
        boot = bootstrap(phases, ops)
        # how far above its fastest step a variant's p10 sits: ~0.5% when the machine is quiet,
        # 5-15% when it is disturbed; in us/op this is the smallest overhead the run can resolve
        floor = max(percentile(xs, QUANTILE) / min(xs) - 1 for xs in pooled.values()) * \
            percentile(pooled["baseline"], QUANTILE) * 1e3 / ops
        means = {v: med([sum(ph) / len(ph) * 1e3 for ph in w["cpu"][v]]) for v in variants}
        walls = {v: med([sum(ph) / len(ph) * 1e3 for ph in w["wall"][v]]) for v in variants}
        for v in variants:
            q = percentile(pooled[v], QUANTILE)
            if v == "baseline":
                o = r = mo = ""
            else:
                lo, hi = interval([bt[v] for bt in boot])
                o, r = f"{est[v]:.2f}", f"[{lo:.2f} - {hi:.2f}]"
                if est[v] <= floor or lo <= 0:
                    o = "~" + o
                mo = f"{(means[v] - means['baseline']) * 1e3 / ops:.2f}"
            print(f"{wl:<9} {v:<{vw}} {ops:>8} {q:12.3f} {o:>15} {r:>17}  {means[v]:12.3f} {mo:>14}  "
                  f"{walls[v]:12.3f}")
        summary[wl] = (est, boot, floor)
        if sampling:
            step_pct[wl] = sampling_overheads(phases, pooled, w["wall"], variants, floor * ops / 1e3)
        info["_ret_minus_emu"][wl] = est[GP_RET] - est[GP_EMU]
        print()

    print("ratios of per-op overhead (p%d CPU time) [90%% interval]:" % int(QUANTILE * 100))
    # each exit mode against torch.profiler with and without shapes, ret against emulated; then
    # each feature's gpuprof variant against torch.profiler with the same feature, and against
    # plain gpuprof (emulated exits, what the feature adds to)
    pairs = [(g, t) for g in EXIT_MODES for t in ("torch.profiler", "torch.profiler+shapes")] + [(GP_RET, GP_EMU)]
    pairs += [pair for g, t in features.values() for pair in ((g, t), (g, GP_EMU))]
    # --sampling: every sampling variant against torch.profiler, and ops + samples against ops alone
    pairs += [(g, "torch.profiler") for g in sampling] + [(g, GP_EMU) for g in sampling if g == GP_EMU_F99]
    for wl, (est, boot, floor) in summary.items():
        for i, (num, den) in enumerate(pairs):
            label = f"{num} / {den}"
            # a feature against plain gpuprof is near 1: one decimal would hide it
            digits = 2 if num in GPUPROF_VARIANTS and den in GPUPROF_VARIANTS and num != GP_RET else 1
            if num in sampling and den == "torch.profiler":
                text = sampling_ratio(est, boot, num, den, floor)
            else:
                text = ratio(est, boot, num, den, floor, digits)
            print(f"  {wl if i == 0 else '':<9} {label:<48} {text}")
    print()

    if features:
        print("what each feature adds per op, us/op [90% interval] ('~' = not resolved): gpuprof = "
              "gpuprof (+F) - gpuprof (emulated exits), torch.profiler = torch.profiler+F - torch.profiler")
        for wl, (est, boot, floor) in summary.items():
            for i, (f, (g, t)) in enumerate(features.items()):
                cells = []
                for side, (num, den) in (("gpuprof", (g, GP_EMU)), ("torch.profiler", (t, "torch.profiler"))):
                    lo, hi = interval([bt[num] - bt[den] for bt in boot])
                    d = est[num] - est[den]
                    mark = "~" if abs(d) <= floor or lo <= 0 <= hi else ""
                    cells.append(f"{side} {mark + format(d, '+.2f'):>7} [{lo:+.2f} - {hi:+.2f}]")
                print(f"  {wl if i == 0 else '':<9} {f:<7} " + "   ".join(cells))
        print()

    if sampling:
        print_sampling(info, step_pct, sessions, sampling)

    print("gpuprof's own process (BPF ring-buffer reader, runs beside the target) during the gpuprof phases:")
    for wl, w in info["workloads"].items():
        for v in gp_variants:
            steps = sum(len(ph) for ph in w["cpu"][v])
            helper = sum(w["helper"][v])
            print(f"  {wl:<9} {v:<{vw}} {helper * 1e6 / (steps * w['ops_per_step']):6.2f} us CPU per op "
                  f"({helper:.2f} s over {steps} steps; /proc tick resolution 10 ms)")
    print()

    print("noise (p10 above the fastest step, per op; overheads below it are not resolved) and other load:")
    warn = []
    for wl, w in info["workloads"].items():
        est, boot, floor = summary[wl]
        loads = [o / sum(ph) for v in variants for o, ph in zip(w["other"][v], w["wall"][v])]
        print(f"  {wl:<9} noise floor {floor:6.2f} us/op; other processes' load {med(loads):.2f} CPUs median, "
              f"{max(loads):.2f} max")
        # judged on the larger gpuprof overhead (ret mode): on a quiet machine the floor is a few
        # percent of it; the emulated mode's overhead on resnet18 can be below even a quiet floor
        if floor > 0.25 * max(est[v] for v in EXIT_MODES):
            warn.append(wl)
    if warn:
        print("  WARNING: the machine was disturbed during this run (other processes, or the host when the "
              "load above is ~0);")
        print(f"  {', '.join(warn)}: gpuprof's overhead is not well resolved. Rerun when the machine is quiet.")
    print()

    print("gpuprof attach/detach (one `gpuprof record -p PID ARGS -q -o FILE` per gpuprof phase and "
          "per duration-check recording; the workload waits while it attaches and detaches):")
    for v in gp_variants:
        ss = [s for s in sessions if variant_of(s) == v]
        if not ss:
            continue
        att = [s["attach_ms"] for s in ss if s["attach_ms"] is not None]  # --no-ops prints none
        det = [s["detach_ms"] for s in ss]
        attw = [s["attach_wall_ms"] for s in ss]
        detw = [s["detach_wall_ms"] for s in ss]
        s0 = ss[0]
        steps = sorted({s["single_stepped"] for s in ss}, key=str)
        if "--no-ops" in GPUPROF_VARIANTS[v]:
            print(f"  {' '.join(GPUPROF_VARIANTS[v])}: {len(ss)} attaches; no op probes; samples at "
                  f"{s0.get('hz')} Hz on {s0.get('sample_cpus')} CPUs")
        else:
            print(f"  {' '.join(GPUPROF_VARIANTS[v])}: {len(ss)} attaches; {s0['ops']} ops, {s0['entry']} entry + "
                  f"{s0['exit']} exit probes; exits {s0['exits']} ({'/'.join(map(str, steps))} single-stepped)")
        if att:
            print(f"    attach (as gpuprof reports it):          median {med(att):7.1f} ms   max {max(att):7.1f} ms")
        print(f"    detach (as gpuprof reports it):          median {med(det):7.1f} ms   max {max(det):7.1f} ms")
        launch = f"launch -> {'sampling' if not att else 'tracing'} (BPF load + attach):"
        print(f"    {launch:<41}median {med(attw):7.1f} ms   max {max(attw):7.1f} ms")
        print(f"    SIGINT -> exit (detach + write record):  median {med(detw):7.1f} ms   max {max(detw):7.1f} ms")
        waits = [s["steady_wait_ms"] for s in ss if s.get("steady_wait_ms") is not None]
        if waits:
            print(f"    warm-up -> layout in BPF (not timed):    median {med(waits):7.1f} ms   max {max(waits):7.1f} ms")
        layouts = collections.Counter(s["tensor_layout"].split(" (")[0] for s in ss if s.get("tensor_layout"))
        for layout, n in layouts.items():
            print(f"    {layout} ({n} of {len(ss)} recordings)")
    print()

    print("gpuprof recordings (sanity check: did gpuprof see every op?):")
    sw = max([14] + [len(short(v)) for v in gp_variants])  # 14 without --sampling
    print(f"  {'workload':<10} {'variant':<{sw}} {'round':>5} {'steps':>6} {'events':>9} {'lost':>5} {'calls/step':>10} "
          f"{'rows/step':>9} {'torch.profiler':>15} {'gpuprof CPU s':>14}")
    ok = True

    def feature_problems(s):
        """What a recording with --record-shapes / --profile-memory misses: [] if nothing."""
        args = GPUPROF_VARIANTS[variant_of(s)]
        w = info["workloads"][s["workload"]]
        out = []
        if "--record-shapes" in args and not s.get("tensor_layout"):
            out.append("no TensorImpl layout line (no input shapes)")
        elif "--record-shapes" in args and s["shapeless_calls"] > w["warmup"] * w["table_ops_per_step"]:
            # calls go without shapes only between the end of BPF's raw-window budget and the
            # layout's arrival, which the harness waits for before the timed steps
            out.append(f"{s['shapeless_calls']} calls without shapes: more than the warm-up's")
        if "-F" in args and s.get("samples") is None:
            out.append("no samples in the stop line")
        elif "-F" in args:
            if s["samples"] == 0 or s["samples_lost"] != 0:
                out.append(f"{s['samples']} samples, {s['samples_lost']} lost")
            if not rate_ok(s):
                out.append(f"{samples_rate(s):.1f} samples per target CPU-s, not ~{s['hz']} Hz")
            if s.get("folded_samples") is not None and s["folded_samples"] != s["samples"]:
                out.append(f"report --folded --metric samples holds {s['folded_samples']} of {s['samples']} samples")
        if "--profile-memory" in args and s.get("mem_events") is None:
            out.append("no memory events in the stop line")
        elif "--profile-memory" in args and (s["mem_events"] == 0 or s["mem_lost"] != 0):
            out.append(f"{s['mem_events']} memory events, {s['mem_lost']} lost")
        return out

    def good(s):
        w = info["workloads"][s["workload"]]
        calls, rows = w["ops_per_step"], w.get("table_ops_per_step", w["ops_per_step"])
        if "--no-ops" in GPUPROF_VARIANTS[variant_of(s)]:
            calls = rows = 0  # no op probes: no events, no calls in the report
        return (s["events"] == 2 * calls * s["steps"] and s["calls"] == rows * s["steps"] and s["lost"] == 0
                and not feature_problems(s))

    for s in sessions:
        if s.get("purpose", "overhead") != "overhead":
            continue
        w = info["workloads"][s["workload"]]
        calls, rows = w["ops_per_step"], w.get("table_ops_per_step", w["ops_per_step"])
        per = s["calls"] / s["steps"]
        flag = "" if good(s) else "  <-- MISMATCH"
        ok = ok and not flag
        # A note, not a mismatch: an op whose body has no stack-protector
        # branch before its ret keeps that ret single-stepped in emulated
        # mode (torch 1.13's libtorch has one).
        if s.get("mode") == "emulated" and s.get("single_stepped"):
            flag += f"  ({s['single_stepped']} exits single-stepped)"
        note = "; ".join(feature_problems(s))
        if "--no-ops" in GPUPROF_VARIANTS[variant_of(s)]:
            calls = rows = 0
        if not note and s.get("samples") is not None:
            rate = samples_rate(s)
            note = (f"{s['samples']} samples, 0 lost, "
                    + (f"{rate:.1f} per target CPU-s ({s['target_cpu_s']:.2f} s) at {s['hz']} Hz"
                       if rate is not None else "samples/s not measured")
                    + (f"; {s['folded_samples']} in report --folded" if s.get("folded_samples") is not None else ""))
        if not note and s.get("mem_events") is not None:
            note = f"{s['mem_events'] / s['steps']:.1f} memory events/step, 0 lost"
        if not note and s.get("tensor_layout"):
            note = f"TensorImpl layout calibrated; {s['shapeless_calls']} calls without shapes, in the warm-up"
        print(f"  {s['workload']:<10} {short(variant_of(s)):<{sw}} {s['round']:>5} {s['steps']:>6} {s['events']:>9} "
              f"{s['lost']:>5} {s['events'] / 2 / s['steps']:10.2f} {per:9.2f} {f'{calls} / {rows}':>15} "
              f"{s['cpu_s']:14.2f}{flag}" + (f"  ({note})" if note else ""))
    print("  (calls/step = events / 2 / steps attached, events = entries + exits: every dispatcher call; "
          "rows/step = sum of '# of Calls' in `gpuprof report FILE` / steps, where, as in torch.profiler's "
          "table, an op whose only child has its own name is one call (div_.Scalar -> div_.Tensor in "
          "resnet18's mean); torch.profiler = calls / table calls per step"
          + (f"; +shapes: the TensorImpl layout must be calibrated; +memory: > 0 memory events, 0 lost, "
             f"and the report's {MEMORY_ROW} row (memory events outside any op) is not counted; calls "
             "without shapes: '?' in `gpuprof report FILE --group-by-input-shape`"
             if features else "")
          + (f"; -F: > 0 samples, 0 lost, samples per second of the target's CPU time while attached "
             f"within {SAMPLES_RATE_TOLERANCE:.0%} (+ 3 samples) of HZ, and every sample in `gpuprof report FILE "
             "--folded --metric samples`; --no-ops: 0 events and no calls" if sampling else "") + ")")
    dur = [s for s in sessions if s.get("purpose") == "duration"]
    if dur:
        bad = [s for s in dur if not good(s) or (s["mode"] == "emulated" and s.get("single_stepped"))]
        ok = ok and not bad
        print(f"  duration-check recordings: {len(dur)} one-step resnet18 recordings, "
              + (f"{len(bad)} MISMATCH: " + ", ".join(f"{s['mode']} #{s['round']}: {s['events']} events, "
                                                      f"{s['calls']} calls, {s['lost']} lost" for s in bad)
                 if bad else f"all with {2 * info['workloads']['resnet18']['ops_per_step']} events, "
                             f"{info['workloads']['resnet18'].get('table_ops_per_step')} table calls, 0 lost"))
    print(f"  {'all recordings match torch.profiler op counts, no events lost' if ok else 'MISMATCH: see rows marked above'}")
    print()

    agree = duration_check(info, sessions)
    return ok and agree is not False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpuprof", default=os.path.join(ROOT, "build", "gpuprof"))
    ap.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch + torchvision")
    ap.add_argument("--chroot", metavar="ROOT",
                    help="run the workload's --python in this chroot (scripts/torch2-chroot.sh: torch 2.6, "
                         "CPython 3.13, a CET-built libtorch)")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--small-links", type=int, default=79, help="mm/add/relu links per small-op step (7 ops each)")
    ap.add_argument("--small-steps", type=int, default=200)
    ap.add_argument("--resnet-steps", type=int, default=8)
    ap.add_argument("--train-steps", type=int, default=0,
                    help="also time N steps of a small MLP's training step (Adam) per phase: the ranges, "
                         "engine and node rows' probes (0: not)")
    ap.add_argument("--duration-recordings", type=int, default=20,
                    help="one-step resnet18 recordings per exit mode for the duration-agreement check")
    ap.add_argument("--shapes-memory", action="store_true",
                    help="also time torch.profiler+memory, gpuprof (+shapes) and gpuprof (+memory) "
                         "(record --record-shapes / --profile-memory); the rounds take 8/5 as long")
    ap.add_argument("--sampling", action="store_true",
                    help="also time CPU sampling: gpuprof (-F 99 --no-ops), gpuprof (-F 999 --no-ops) (samples "
                         "only, no op probes) and gpuprof (emulated exits, -F 99) (ops + samples); their "
                         "overhead is also given as a %% of the baseline step time")
    ap.add_argument("--stacks", action="store_true",
                    help="also time torch.profiler+stack (with_stack=True) and gpuprof (+stack) "
                         "(record --with-stack)")
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
    python_argv = (["chroot", a.chroot] if a.chroot else []) + [a.python]
    chk = subprocess.run(python_argv + ["-c", "import torch, torchvision"], capture_output=True, text=True)
    if chk.returncode != 0:
        die(f"{' '.join(python_argv)} cannot import torch/torchvision (use --python, --chroot):\n"
            f"{chk.stderr.strip()}")

    workdir = tempfile.mkdtemp(prefix="gpuprof-overhead-")
    t_begin = time.monotonic()
    print("gpuprof overhead benchmark")
    print(f"date:    {datetime.datetime.now().astimezone().strftime('%Y-%m-%d %H:%M:%S %Z')}")
    print(f"machine: {platform.node()}; kernel {platform.release()}; {cpu_model()}; "
          f"nproc {os.cpu_count()}; virtualisation: {virt()}")
    sys.stdout.flush()

    variants = VARIANTS + (SHAPES_MEMORY_VARIANTS if a.shapes_memory else []) + \
        (SAMPLING_VARIANTS if a.sampling else []) + (STACK_VARIANTS if a.stacks else [])
    target = Target(a.python, ["--rounds", str(a.rounds), "--small-links", str(a.small_links),
                               "--small-steps", str(a.small_steps), "--resnet-steps", str(a.resnet_steps),
                               "--train-steps", str(a.train_steps),
                               "--duration-recordings", str(a.duration_recordings), "--threads", "1"]
                    + [arg for v in variants for arg in ("--variant", v)]
                    + [arg for v in EXIT_MODES for arg in ("--duration-variant", v)], chroot=a.chroot)
    kind, arg = target.recv()
    if kind != "READY":
        die(f"unexpected message from workload: {kind} {arg}")
    pid = int(arg)

    sessions = []  # one per gpuprof phase
    while True:
        kind, arg = target.recv()
        if kind == "ATTACH":
            wl, rnd, purpose, variant = arg.split(" ", 3)
            if variant not in GPUPROF_VARIANTS:
                die(f"the workload asks for an unknown gpuprof variant {variant!r}")
            args = GPUPROF_VARIANTS[variant]
            n = len(sessions)
            tag = f"{n:02d}-{wl}-{'d' if purpose == 'duration' else 'r'}{rnd}-{short(variant).replace(' ', '-')}"
            g = Gpuprof(a.gpuprof, pid, args, os.path.join(workdir, f"{tag}.gpuprof"),
                        os.path.join(workdir, f"{tag}.stderr"))
            att = g.wait_tracing()
            # the target's CPU time while it can be sampled: it is blocked on stdin until GO
            # and from DETACH on, so this is the time of its steps (warm-up included)
            cpu0 = task_cpu_ns(pid)
            target.send(f"GO {g.p.pid}")
            kind, arg = target.recv()
            steady_ms = None
            if kind == "WARM":  # an overhead phase's warm-up is done
                steady_ms = g.wait_steady()
                target.send("TIME")
                kind, arg = target.recv()
            if kind != "DETACH":
                die(f"expected DETACH from workload, got {kind}")
            steps = int(arg)
            cpu1 = task_cpu_ns(pid)
            det = g.stop()
            target.send("DETACHED")
            table = report_table(a.gpuprof, g.out)
            table.pop(MEMORY_ROW, None)  # memory events outside any op: not op calls
            sessions.append({"workload": wl, "round": int(rnd), "variant": variant, "args": args,
                             "mode": exit_mode(args), "purpose": purpose, "steps": steps,
                             "calls": sum(r[2] for r in table.values()), "rows": len(table), "table": table,
                             "steady_wait_ms": steady_ms,
                             "shapeless_calls": shapeless_calls(a.gpuprof, g.out)
                             if "--record-shapes" in args else None,
                             "target_cpu_s": (cpu1 - cpu0) / 1e9 if None not in (cpu0, cpu1) else None,
                             "folded_samples": folded_samples(a.gpuprof, g.out) if "-F" in args else None,
                             **att, **det})
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

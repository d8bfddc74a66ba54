"""Workload process for bench/overhead.py (run with /usr/bin/python3, which has torch).

Runs two workloads in one process and times them under the variants the
harness names (--variant, in order), in alternating phases so that drift
(thermal, noisy neighbours, allocator state) hurts no variant more than
another:

  baseline            no profiler
  torch.profiler      torch.profiler.profile(activities=[CPU]) around the phase
  torch.profiler+shapes  the same with record_shapes=True
  torch.profiler+memory  the same with profile_memory=True
  torch.profiler+stack   the same with with_stack=True
  any other name      a gpuprof variant: the harness attaches
                      `gpuprof record -p PID ...` for the phase, with the
                      arguments it keeps for that name (bench/overhead.py,
                      GPUPROF_VARIANTS); this process needs to know nothing
                      about them

Protocol with the harness, one line each way (the target's stdout lines that
start with "@@" are protocol; everything else is ignored by the harness):

  target -> harness  @@READY <pid>
  target -> harness  @@ATTACH <workload> <round> <overhead|duration> <variant>   harness starts gpuprof ...
  harness -> target  GO <gpuprof pid>                 ... once it prints "tracing" ("sampling" with --no-ops)
  target -> harness  @@WARM                           warm-up steps done (overhead phases only)
  harness -> target  TIME                             once the variant is in its steady state
  target -> harness  @@DETACH <steps run while attached>
  harness -> target  DETACHED                         once gpuprof has exited
  target -> harness  @@RESULT <json>

(<variant> is the rest of the line: variant names contain spaces.)

The target is idle (blocked on stdin) while gpuprof attaches and detaches, so
every step of a gpuprof phase runs with all probes in place, and no other phase
runs while probes are still being removed.

After the rounds come --duration-recordings rounds of one-step resnet18
recordings, one per --duration-variant (the two exit modes), alternating
(ABBA): ATTACH carries the word "duration", and DETACH says 1.
bench/overhead.py compares the op durations of the two modes on them.
"""
import argparse
import collections
import json
import os
import sys
import time

import torch
import torchvision
from torch.profiler import ProfilerActivity, profile

# torch.profiler variants: the arguments of profile() besides activities=[CPU]
TORCH_PROFILER_VARIANTS = {
    "torch.profiler": {},
    "torch.profiler+shapes": {"record_shapes": True},
    "torch.profiler+memory": {"profile_memory": True},
    "torch.profiler+stack": {"with_stack": True},
}


def send(line):
    sys.stdout.write("@@" + line + "\n")
    sys.stdout.flush()


def expect(word):
    line = sys.stdin.readline()
    if line.strip() != word:
        raise SystemExit(f"overhead_target: expected {word!r} from harness, got {line!r}")


class SmallOps:
    """A chain of 16x16 mm + add + relu; 7 aten ops per link
    (mm, 3x resolve_conj inside mm, add, relu, clamp_min inside relu)."""

    name = "small-op"

    def __init__(self, links):
        g = torch.Generator().manual_seed(0)
        self.links = links
        self.w = [torch.randn(16, 16, generator=g) * 0.25 for _ in range(8)]
        self.b = [torch.randn(16, 16, generator=g) for _ in range(8)]
        self.x = torch.randn(16, 16, generator=g)

    def step(self):
        x = self.x
        w, b = self.w, self.b
        for i in range(self.links):
            x = torch.relu(torch.mm(x, w[i & 7]) + b[i & 7])
        return x


class ResNet18:
    """torchvision resnet18, eval mode, batch 5 at 224x224, one forward per step."""

    name = "resnet18"

    def __init__(self):
        torch.manual_seed(0)
        self.model = torchvision.models.resnet18().eval()
        self.x = torch.randn(5, 3, 224, 224)

    def step(self):
        return self.model(self.x)


class TrainStep:
    """One training step of a small MLP (Linear 64-128, ReLU, Linear 128-10,
    log_softmax + nll_loss, batch 32) with Adam: zero_grad, forward, backward,
    step. Besides aten ops, torch.profiler (and gpuprof) record its
    Optimizer ranges, the autograd engine's rows and the backward nodes'."""

    name = "train-step"

    def __init__(self):
        torch.manual_seed(0)
        self.model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
        self.opt = torch.optim.Adam(self.model.parameters(), lr=1e-3)
        self.x = torch.randn(32, 64)
        self.y = torch.randint(0, 10, (32,))

    def step(self):
        with torch.enable_grad():
            self.opt.zero_grad()
            logits = self.model(self.x)
            loss = torch.nn.functional.nll_loss(torch.nn.functional.log_softmax(logits, dim=1), self.y)
            loss.backward()
            self.opt.step()


def count_ops(wl):
    """Rows per step as torch.profiler records them, nested ones included: its
    aten ops, and for a training step its ranges, engine and node rows too
    (gpuprof probes every one of them).

    Counts the raw profiler events (one per RecordFunction, i.e. per dispatcher
    call or range, which is what both profilers pay for). prof.events() is one less per
    redispatch to a same-named op with no other child (e.g. div_.Scalar ->
    div_.Tensor inside mean), which EventList._remove_dup_nodes folds into its
    parent; that count is returned too.
    """
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        wl.step()
    events = list(prof.profiler.kineto_results.events())
    raw = [e.name() for e in events if e.name() != "[memory]"]
    folded = [e.name for e in prof.events() if e.name != "[memory]"]
    return len(raw), len(raw), len(folded), op_tree(events)


def start_ns(e):
    """An event's start (torch 1.13 keeps microseconds, 2.x nanoseconds)."""
    return e.start_ns() if hasattr(e, "start_ns") else 1000 * e.start_us()


def duration_ns(e):
    return e.duration_ns() if hasattr(e, "duration_ns") else 1000 * e.duration_us()


def op_tree(events):
    """Per aten op name, over one step: calls, direct child calls and all descendant calls.

    Nesting from the raw events' time ranges, per thread (every call, nothing
    folded, as gpuprof sees them). bench/overhead.py uses it to say how many
    nested exits each op's Self CPU and CPU total contain.
    """
    tree = {}
    by_thread = {}
    for e in events:
        if e.name().startswith("aten::"):
            by_thread.setdefault(e.start_thread_id(), []).append(e)
    for evs in by_thread.values():
        evs.sort(key=lambda e: (start_ns(e), -duration_ns(e)))
        stack = []  # (end_ns, name) of the open calls
        for e in evs:
            start = start_ns(e)
            while stack and stack[-1][0] <= start:
                stack.pop()
            for i, (_, name) in enumerate(stack):
                t = tree[name]
                t["descendants"] += 1
                if i == len(stack) - 1:
                    t["children"] += 1
            t = tree.setdefault(e.name(), {"calls": 0, "children": 0, "descendants": 0})
            t["calls"] += 1
            stack.append((start + duration_ns(e), e.name()))
    return tree


TICK = os.sysconf("SC_CLK_TCK")


def machine_busy():
    """Seconds of CPU time all CPUs have spent busy since boot (/proc/stat)."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / TICK


def proc_cpu(pid):
    """user + system CPU seconds of process pid (0 if it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def run_steps(wl, warmup, steps, helper_pid=None, after_warmup=None):
    """Times each step; returns a dict with per-step 'wall' and 'cpu' lists (seconds),
    'other' (CPU seconds the rest of the machine used meanwhile) and 'helper'
    (CPU seconds of helper_pid, the gpuprof process, meanwhile). after_warmup()
    is called between the warm-up steps and the timed ones.

    CPU time (CLOCK_PROCESS_CPUTIME_ID) counts the target's own user + kernel
    time, uprobe traps and single-steps included, and not the time it waits
    for a core; it is the primary figure because it moves much less than wall
    time when other processes compete for the CPUs.
    """
    for _ in range(warmup):
        wl.step()
    if after_warmup:
        after_warmup()
    wall, cpu = time.perf_counter, time.process_time
    w = [0.0] * (steps + 1)
    c = [0.0] * (steps + 1)
    busy0 = machine_busy()
    h0 = proc_cpu(helper_pid) if helper_pid else 0.0
    w[0], c[0] = wall(), cpu()
    for i in range(steps):
        wl.step()
        w[i + 1], c[i + 1] = wall(), cpu()
    h1 = proc_cpu(helper_pid) if helper_pid else 0.0
    busy1 = machine_busy()
    helper = h1 - h0
    return {"wall": [b - a for a, b in zip(w, w[1:])], "cpu": [b - a for a, b in zip(c, c[1:])],
            "other": max(0.0, (busy1 - busy0) - (c[-1] - c[0]) - helper), "helper": helper}


def attached(wl, rnd, purpose, variant):
    """Asks the harness to attach gpuprof's `variant`; returns the gpuprof pid once it traces."""
    send(f"ATTACH {wl.name} {rnd} {purpose} {variant}")
    line = sys.stdin.readline().split()
    if not line or line[0] != "GO":
        raise SystemExit(f"overhead_target: expected GO from harness, got {line!r}")
    return int(line[1])


def warmed():
    """Tells the harness the warm-up is done; returns once it says to time the steps.

    Some gpuprof variants reach their steady state only after ops have run:
    --record-shapes calibrates the TensorImpl layout on the first tensors, and
    until gpuprof hands the layout to BPF (at its reader's next wakeup, up to
    100 ms later) the entries past the raw-window budget carry no shapes, and
    cost less. The harness waits for that here, outside the timed steps."""
    send("WARM")
    expect("TIME")


def detached(steps):
    send(f"DETACH {steps}")
    expect("DETACHED")


def phase(wl, variant, warmup, steps, rnd):
    if variant == "baseline":
        return run_steps(wl, warmup, steps)
    if variant in TORCH_PROFILER_VARIANTS:
        with profile(activities=[ProfilerActivity.CPU], **TORCH_PROFILER_VARIANTS[variant]):
            # only the steps are timed: profiler start/stop and its
            # post-processing are excluded, as gpuprof's attach/detach are
            t = run_steps(wl, warmup, steps)
        return t
    # a gpuprof variant: the harness knows its arguments
    t = run_steps(wl, warmup, steps, helper_pid=attached(wl, rnd, "overhead", variant), after_warmup=warmed)
    detached(warmup + steps)
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--small-links", type=int, default=79)
    ap.add_argument("--small-steps", type=int, default=200)
    ap.add_argument("--small-warmup", type=int, default=20)
    ap.add_argument("--resnet-steps", type=int, default=8)
    ap.add_argument("--resnet-warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--train-steps", type=int, default=0, help="also time a training step (0: not)")
    ap.add_argument("--duration-recordings", type=int, default=20)
    ap.add_argument("--variant", action="append", required=True, dest="variants",
                    help="a variant to time, in the order of the first round (repeat)")
    ap.add_argument("--duration-variant", action="append", default=[], dest="duration_variants",
                    help="a gpuprof variant of the duration recordings (repeat; the two exit modes)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)  # forward-only workloads, inference mode

    workloads = [
        (SmallOps(a.small_links), a.small_warmup, a.small_steps),
        (ResNet18(), a.resnet_warmup, a.resnet_steps),
    ]
    if a.train_steps:
        workloads.append((TrainStep(), 3, a.train_steps))
    info = {"torch": torch.__version__, "torchvision": torchvision.__version__,
            "threads": torch.get_num_threads(), "workloads": {}}
    for wl, warmup, steps in workloads:
        for _ in range(max(warmup, 2)):
            wl.step()  # first-touch allocation, lazy init
        # torch.profiler nests events by their microsecond time ranges, so now and then
        # a step's table folds a call too many or too few (resnet18: 403 or 406 instead
        # of 405); the most common of five counts is the exact one (the raw call count
        # never varies)
        counts = [count_ops(wl) for _ in range(5)]
        modal = collections.Counter(c[2] for c in counts).most_common(1)[0][0]
        ops, events, folded, tree = next(c for c in counts if c[2] == modal)
        info["workloads"][wl.name] = {"ops_per_step": ops, "profiler_events_per_step": events,
                                      "table_ops_per_step": folded, "tree": tree,
                                      "steps": steps, "warmup": warmup, "wall": {}, "cpu": {}, "other": {}, "helper": {}}

    send(f"READY {os.getpid()}")
    for rnd in range(a.rounds):
        for wl, warmup, steps in workloads:
            # rotate the variant order each round so no variant always runs
            # first or last (drift and after-effects spread over all of them)
            first = rnd % len(a.variants)
            order = a.variants[first:] + a.variants[:first]
            for v in order:
                r = phase(wl, v, warmup, steps, rnd)
                for k in ("wall", "cpu", "other", "helper"):
                    info["workloads"][wl.name][k].setdefault(v, []).append(r[k])
    # then one-step resnet18 recordings, alternating the exit modes (ABBA), for the
    # harness's duration-agreement check: one step per recording, so that it can
    # take a low percentile over steps, as for the step times
    resnet = workloads[1][0]
    dv = a.duration_variants
    for i in range(a.duration_recordings if dv else 0):
        for variant in (dv if i % 2 == 0 else dv[::-1]):
            attached(resnet, i, "duration", variant)
            resnet.step()
            detached(1)
    info["duration_recordings"] = a.duration_recordings
    send("RESULT " + json.dumps(info))


if __name__ == "__main__":
    main()

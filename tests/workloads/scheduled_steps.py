"""A training-loop stand-in for schedule tests, profiled by torch.profiler
with the same schedule gpuprof is given.

Usage: scheduled_steps.py WORKDIR STEPS SCHEDULE

SCHEDULE is gpuprof's --schedule text (skip_first=..,wait=..,warmup=..,
active=..,repeat=..). Waits for WORKDIR/go (written once gpuprof is
attached), then runs STEPS steps inside torch.profiler.profile(schedule=
torch.profiler.schedule(...)); step i starts with one torch.frac (the step
op, aten::frac, called nowhere else) and then calls torch.mul i + 1 times,
so the aten::mul count of any set of steps says which steps they were.
prof.step() ends each step, as in a real loop. torch's on_trace_ready
stores, per cycle, the aten::mul and aten::frac counts of key_averages();
at the end WORKDIR/torch_cycles.json holds them with the steps torch's
schedule function calls RECORD or RECORD_AND_SAVE.
"""
import json
import os
import sys

import torch
import torch.profiler

from handshake import signal_file, wait_for_file


def main():
    workdir, steps, spec = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    params = {k: int(v) for k, v in (item.split("=") for item in spec.split(","))}
    schedule = torch.profiler.schedule(**params)
    recorded = [s for s in range(steps)
                if schedule(s) in (torch.profiler.ProfilerAction.RECORD,
                                   torch.profiler.ProfilerAction.RECORD_AND_SAVE)]
    cycles = []

    def on_trace_ready(prof):
        counts = {e.key: e.count for e in prof.key_averages() if e.key in ("aten::mul", "aten::frac")}
        cycles.append(counts)

    x = torch.ones(8, dtype=torch.float64)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=schedule,
                                on_trace_ready=on_trace_ready) as prof:
        for step in range(steps):
            y = torch.frac(x)
            for _ in range(step + 1):
                y = torch.mul(y, 1.0)
            prof.step()
    with open(os.path.join(workdir, "torch_cycles.json"), "w") as f:
        json.dump({"recorded_steps": recorded, "cycles": cycles}, f)
    signal_file(workdir, "done", "1")


if __name__ == "__main__":
    main()

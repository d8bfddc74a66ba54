"""Fidelity target: one resnet18 forward pass under torch.profiler, in step with a test.

The torch.profiler recipe workload (resnet18, weights None, input
torch.randn(5, 3, 224, 224)). Usage: resnet_region.py WORKDIR. The test and
this script take turns through files in WORKDIR:

  script: imports torch, builds the model, runs one forward pass (warm-up),
          then writes `ready` (its pid inside) and waits for `go`
  test:   attaches `gpuprof record -p PID`, waits for its "tracing" line,
          creates `go`
  script: runs `with torch.profiler.profile(CPU): model(inputs)`, then writes
          `region-done` and waits for `dump`; no torch op runs outside the
          profiled region while it waits
  test:   stops gpuprof (SIGINT), waits for it to exit, creates `dump`
  script: writes torch.profiler's key_averages() to `torch_ops.json` as
          {key: {count, self_cpu_time_total, cpu_time_total}} (us) and exits 0.

With --shapes-memory the region runs with record_shapes=True and
profile_memory=True, and the script also writes `torch_shapes.json`: the rows
of key_averages(group_by_input_shape=True) as a list of {key, input_shapes
(torch's str()), count, cpu_memory_usage, self_cpu_memory_usage} (bytes).

With --with-stack the region runs with with_stack=True, and the script also
writes `torch_stacks.json`: for each aten::conv2d call, torch's stack
(innermost first, as FunctionEvent.stack holds it).

With --torch-trace the script also writes torch.profiler's own
export_chrome_trace() of the region to `torch_trace.json` (bench/trace_size.py
compares sizes with it).

Every wait is bounded (WAIT_TIMEOUT_S): a broken test makes this script exit
with status 3 instead of hanging.
"""
import collections
import json
import os
import sys

from handshake import signal_file, wait_for_file  # noqa: E402

WAIT_TIMEOUT_S = 120.0






def main():
    workdir = sys.argv[1]
    shapes_memory = "--shapes-memory" in sys.argv[2:]
    with_stack = "--with-stack" in sys.argv[2:]
    torch_trace = "--torch-trace" in sys.argv[2:]
    import torch
    import torchvision
    from torch.profiler import ProfilerActivity, profile

    torch.manual_seed(0)
    model = torchvision.models.resnet18()
    inputs = torch.randn(5, 3, 224, 224)
    model(inputs)  # warm-up: first-call allocations and kernel selection
    many_dims = torch.ones(1, 2, 3, 4, 5, 6)
    many_dims.sum()
    signal_file(workdir, "ready", str(os.getpid()))

    wait_for_file(workdir, "go")
    with profile(activities=[ProfilerActivity.CPU], record_shapes=shapes_memory,
                 profile_memory=shapes_memory, with_stack=with_stack) as prof:
        model(inputs)
        if shapes_memory:
            # More than 5 dimensions: TensorImpl keeps such sizes out of line.
            many_dims.sum()
    signal_file(workdir, "region-done")

    wait_for_file(workdir, "dump")
    ops = {
        evt.key: {
            "count": evt.count,
            "self_cpu_time_total": evt.self_cpu_time_total,
            "cpu_time_total": evt.cpu_time_total,
        }
        for evt in prof.key_averages()
    }
    raw = collections.Counter(e.name() for e in prof.profiler.kineto_results.events())
    signal_file(workdir, "torch_raw_counts.json", json.dumps(raw, indent=1, sort_keys=True))
    if shapes_memory:
        for evt in prof.key_averages():
            ops[evt.key]["cpu_memory_usage"] = evt.cpu_memory_usage
            ops[evt.key]["self_cpu_memory_usage"] = evt.self_cpu_memory_usage
        groups = [{"key": evt.key, "input_shapes": str(evt.input_shapes), "count": evt.count,
                   "cpu_memory_usage": evt.cpu_memory_usage,
                   "self_cpu_memory_usage": evt.self_cpu_memory_usage}
                  for evt in prof.key_averages(group_by_input_shape=True)]
        signal_file(workdir, "torch_shapes.json", json.dumps(groups, indent=1))
        # torch's raw material for the memory columns, in absolute
        # microseconds: op intervals and CPU memory records. The test uses
        # them to know which records torch's microsecond intervals can
        # attribute either way.
        events = prof.profiler.kineto_results.events()
        intervals = [[e.name(), e.start_us(), e.start_us() + e.duration_us()]
                     for e in events if e.name() != "[memory]"]
        records = [[e.start_us(), e.nbytes()] for e in events
                   if e.name() == "[memory]" and str(e.device_type()).endswith("CPU")]
        signal_file(workdir, "torch_memory_raw.json",
                    json.dumps({"intervals": intervals, "records": records}))
    if with_stack:
        stacks = [list(evt.stack) for evt in prof.events() if evt.name == "aten::conv2d"]
        signal_file(workdir, "torch_stacks.json", json.dumps(stacks, indent=1))
    if torch_trace:
        prof.export_chrome_trace(os.path.join(workdir, "torch_trace.json"))
    signal_file(workdir, "torch_ops.json", json.dumps(ops, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

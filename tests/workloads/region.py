"""Fidelity target: a model's region under torch.profiler, in step with a test.

Usage: region.py WORKDIR [--workload NAME] [--shapes-memory] [--with-stack]
                 [--torch-trace] [--no-torch-profiler] [--repeat N]

Workloads (--workload, default resnet18):
  resnet18          torch.profiler's recipe model: torchvision resnet18
                    (weights None) on torch.randn(5, 3, 224, 224), one forward
  recipe            the same inside record_function("model_inference"), as the
                    recipe writes it
  mlp_sgd, mlp_adam three training steps of a small MLP (Linear 64-128, ReLU,
                    Linear 128-10, log_softmax + nll_loss) with SGD / Adam:
                    zero_grad, forward, backward, step
  transformer       a TransformerEncoder (d_model 64, 4 heads, 2 layers,
                    batch_first) in eval under no_grad: torch's fast path
  transformer_train three training steps of the same encoder with SGD
  tiny_transformer  d_model 32, 4 heads, 2 layers, a batch of 4 x 16, eval,
                    --repeat forwards (default 200): many tiny ops
  range_exception   a record_function range that an exception ends, caught

The test and this script take turns through files in WORKDIR:
  script: builds the workload, runs it once (warm-up), writes `ready` (its
          pid) and waits for `go`
  test:   attaches `gpuprof record -p PID`, waits for its "tracing" line,
          creates `go`
  script: runs the region `with torch.profiler.profile(CPU): ...` (plain,
          with --no-torch-profiler: then it writes `region_time.json`, the
          region's wall and CPU seconds), writes `region-done`, waits for
          `dump`; no torch op runs outside the region while it waits
  test:   stops gpuprof (SIGINT), waits for it, creates `dump`
  script: writes torch.profiler's key_averages() to `torch_ops.json` as
          {key: {count, self_cpu_time_total, cpu_time_total}} (us) and exits 0.

With --shapes-memory the region runs with record_shapes=True and
profile_memory=True, and the script also writes `torch_shapes.json`: the rows
of key_averages(group_by_input_shape=True) as a list of {key, input_shapes
(torch's str()), count, cpu_memory_usage, self_cpu_memory_usage} (bytes), and
`torch_memory_raw.json` (torch's op intervals and CPU memory records).

With --with-stack the region runs with with_stack=True, and the script also
writes `torch_stacks.json`: for each aten::conv2d call, torch's stack
(innermost first, as FunctionEvent.stack holds it). (torch 2.6's with_stack
crashes on nn.Module calls: tests use it on torch 1.13 only.)

With --torch-trace the script also writes torch.profiler's own
export_chrome_trace() of the region to `torch_trace.json`.

`torch_raw_counts.json` holds torch's raw event counts per name (before its
table folds same-name parents), and `torch_tree.json` torch's call tree:
for every event, [name, parent name or null, thread id, start us, end us].

Every wait is bounded (WAIT_TIMEOUT_S): a broken test makes this script exit
with status 3 instead of hanging.
"""
import argparse
import collections
import json
import os
import sys
import time

from handshake import signal_file, wait_for_file  # noqa: E402

WAIT_TIMEOUT_S = 120.0


def build(name, repeat):
    """(warm-up, region) callables of workload `name`."""
    import torch
    import torch.nn as nn
    from torch.profiler import record_function

    torch.manual_seed(0)
    if name not in ("resnet18", "recipe"):  # the recipe runs with torch's default threads
        torch.set_num_threads(1)

    if name in ("resnet18", "recipe"):
        import torchvision
        model = torchvision.models.resnet18()
        inputs = torch.randn(5, 3, 224, 224)
        many_dims = torch.ones(1, 2, 3, 4, 5, 6)

        def forward(extra=False):
            if name == "recipe":
                with record_function("model_inference"):
                    model(inputs)
            else:
                model(inputs)
            if extra:
                # More than 5 dimensions: TensorImpl keeps such sizes out of line.
                many_dims.sum()
        return (lambda: forward(True)), forward

    if name in ("mlp_sgd", "mlp_adam"):
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
        opt = (torch.optim.SGD(model.parameters(), lr=0.01) if name == "mlp_sgd"
               else torch.optim.Adam(model.parameters(), lr=1e-3))
        x = torch.randn(32, 64)
        y = torch.randint(0, 10, (32,))

        def steps(n=3):
            for _ in range(n):
                opt.zero_grad()
                loss = nn.functional.nll_loss(nn.functional.log_softmax(model(x), dim=1), y)
                loss.backward()
                opt.step()
        return (lambda: steps(1)), (lambda extra=False: steps())

    if name in ("transformer", "transformer_train", "tiny_transformer"):
        d_model, batch, seq = (32, 4, 16) if name == "tiny_transformer" else (64, 8, 20)
        layer = nn.TransformerEncoderLayer(d_model=d_model, nhead=4, dim_feedforward=2 * d_model,
                                           dropout=0.0, batch_first=True)
        model = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        src = torch.randn(batch, seq, d_model)
        if name == "transformer_train":
            opt = torch.optim.SGD(model.parameters(), lr=0.01)

            def steps(n=3):
                for _ in range(n):
                    opt.zero_grad()
                    model(src).sum().backward()
                    opt.step()
            return (lambda: steps(1)), (lambda extra=False: steps())
        model.eval()
        forwards = repeat if name == "tiny_transformer" else 1

        def forward(extra=False, n=forwards):
            with torch.no_grad():
                for _ in range(n):
                    model(src)
        return (lambda: forward(n=1)), forward

    if name == "range_exception":
        a = torch.ones(2, 3)
        b = torch.ones(4, 5)

        def region(extra=False):
            for _ in range(3):
                try:
                    with record_function("will_fail"):
                        torch.add(a, 1)
                        torch.mm(a, b)  # shape error: c10::Error through the range
                except RuntimeError:
                    pass
            torch.relu(a)
        return region, region

    raise SystemExit(f"region.py: unknown workload {name}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--workload", default="resnet18")
    parser.add_argument("--shapes-memory", action="store_true")
    parser.add_argument("--with-stack", action="store_true")
    parser.add_argument("--torch-trace", action="store_true")
    parser.add_argument("--no-torch-profiler", action="store_true")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args()
    workdir = args.workdir

    import torch
    from torch.profiler import ProfilerActivity, profile

    warm_up, region = build(args.workload, args.repeat)
    warm_up()  # first-call allocations and kernel selection
    signal_file(workdir, "ready", str(os.getpid()))

    wait_for_file(workdir, "go", WAIT_TIMEOUT_S)
    if args.no_torch_profiler:
        wall, cpu = time.perf_counter(), time.process_time()
        region()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        signal_file(workdir, "region_time.json", json.dumps({"wall_s": wall, "cpu_s": cpu}))
        signal_file(workdir, "region-done")
        wait_for_file(workdir, "dump", WAIT_TIMEOUT_S)
        return 0
    with profile(activities=[ProfilerActivity.CPU], record_shapes=args.shapes_memory,
                 profile_memory=args.shapes_memory, with_stack=args.with_stack) as prof:
        region(extra=args.shapes_memory)
    signal_file(workdir, "region-done")

    wait_for_file(workdir, "dump", WAIT_TIMEOUT_S)
    ops = {
        evt.key: {
            "count": evt.count,
            "self_cpu_time_total": evt.self_cpu_time_total,
            "cpu_time_total": evt.cpu_time_total,
        }
        for evt in prof.key_averages()
    }
    events = prof.profiler.kineto_results.events()
    raw = collections.Counter(e.name() for e in events)
    signal_file(workdir, "torch_raw_counts.json", json.dumps(raw, indent=1, sort_keys=True))
    tree = [[e.name, e.cpu_parent.name if e.cpu_parent else None, e.thread,
             e.time_range.start, e.time_range.end] for e in prof.events()]
    signal_file(workdir, "torch_tree.json", json.dumps(tree))
    if args.shapes_memory:
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
        # torch 1.13 keeps integer microseconds; 2.x nanoseconds, which its
        # key_averages() compares as float microseconds.
        def start_us(e):
            return e.start_ns() / 1000 if hasattr(e, "start_ns") else e.start_us()

        def end_us(e):
            return (e.start_ns() + e.duration_ns()) / 1000 if hasattr(e, "start_ns") else e.start_us() + e.duration_us()
        intervals = [[e.name(), start_us(e), end_us(e)] for e in events if e.name() != "[memory]"]
        records = [[start_us(e), e.nbytes()] for e in events
                   if e.name() == "[memory]" and str(e.device_type()).endswith("CPU")]
        signal_file(workdir, "torch_memory_raw.json",
                    json.dumps({"intervals": intervals, "records": records}))
    if args.with_stack:
        stacks = [list(evt.stack) for evt in prof.events() if evt.name == "aten::conv2d"]
        signal_file(workdir, "torch_stacks.json", json.dumps(stacks, indent=1))
    if args.torch_trace:
        prof.export_chrome_trace(os.path.join(workdir, "torch_trace.json"))
    signal_file(workdir, "torch_ops.json", json.dumps(ops, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

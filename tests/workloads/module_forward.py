"""A model's forwards, first under torch.profiler with a record_function
range per module call (the reference), then plain (what gpuprof records).

Usage: module_forward.py WORKDIR MODEL FORWARDS
  MODEL: resnet18 (torchvision, weights None, a 1 x 3 x 64 x 64 input) or
         encoder (nn.TransformerEncoder: d_model 32, 4 heads, 2 layers,
         batch_first, a 4 x 16 batch), both in eval under no_grad.

The script and the test take turns through files in WORKDIR:
  script: runs one forward (warm-up), then FORWARDS forwards under
          torch.profiler with forward pre/post hooks on every module that
          open and close record_function("module:<path>") (<path>: the
          model's class, then named_modules()'s dotted name: ResNet.layer1.0.conv1);
          removes the hooks; writes `reference.json`, then `ready`; waits for `go`
  test:   attaches `gpuprof record -p PID --with-modules`, creates `go`
  script: registers hooks that do nothing on every module (torch 2.x's
          TransformerEncoderLayer runs another path when hooks are registered),
          runs FORWARDS forwards back to back (no profiler, no op between
          them), writes `done`, waits for `exit` (no op runs meanwhile)

reference.json: {"named_modules": [path, ...] in named_modules() order,
"calls": {path: module calls}, "ops": {path: {aten op: calls}}} where an op
belongs to the innermost module range around it (torch's cpu_parent chain;
torch's table folds same-name only children, _remove_dup_nodes, before
this, as gpuprof's does), each count the one most forwards agree on times
FORWARDS (see reference()). Use FORWARDS of 3 or more.
"""
import json
import os
import sys

from handshake import signal_file, wait_for_file  # noqa: E402


def build(name):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if name == "resnet18":
        import torchvision
        return torchvision.models.resnet18().eval(), torch.randn(1, 3, 64, 64)
    if name == "encoder":
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        return nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval(), torch.randn(4, 16, 32)
    raise SystemExit(f"unknown model {name}")


def module_paths(model):
    root = type(model).__name__
    return {module: root + ("." + name if name else "") for name, module in model.named_modules()}


def reference(model, x, forwards):
    """Per module path: its calls and the aten ops inside it, from torch.profiler."""
    import torch
    from torch.profiler import record_function
    paths = module_paths(model)
    # One range object per module, made before profiling: torch 1.13's
    # record_function() runs torch.zeros(1) when made, which would be ops
    # of the reference the model never runs. (A module is never inside a
    # call of itself here, so its object is entered once at a time.)
    ranges = {module: record_function("module:" + path) for module, path in paths.items()}

    def pre(module, args):
        ranges[module].__enter__()

    def post(module, args, out):
        ranges[module].__exit__(None, None, None)

    handles = [m.register_forward_pre_hook(pre) for m in paths] + [m.register_forward_hook(post) for m in paths]
    with torch.no_grad(), torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(forwards):
            model(x)
    for h in handles:
        h.remove()
    # torch 1.13's range enter returns its handle as a tensor it makes with
    # at::empty once the range has begun: each range's first child, not
    # the model's (torch 2.x's handle is no tensor).
    handles_made = set()
    if torch.__version__.startswith("1."):
        for event in prof.events():
            if event.name.startswith("module:") and event.cpu_children:
                first = min(event.cpu_children, key=lambda e: e.time_range.start)
                if first.name == "aten::empty":
                    handles_made.add(id(first))
    # Counted per forward (the root module's range each event is in), then
    # each module's count per forward taken as the one most forwards agree
    # on: torch builds its event tree from microsecond times, and on a
    # rare tie puts an op in a neighbouring range (seen: one aten::empty
    # of a BatchNorm in 9 forwards). The model is deterministic: every
    # forward runs the same ops.
    root = "module:" + type(model).__name__
    per_forward = []  # [({path: calls}, {path: {op: calls}})]
    forward_of = {}
    for event in sorted(prof.events(), key=lambda e: e.time_range.start):
        if event.name == root:
            forward_of[id(event)] = len(per_forward)
            per_forward.append(({}, {}))
    for event in prof.events():
        if id(event) in handles_made:
            continue
        top = event
        while top.cpu_parent is not None:
            top = top.cpu_parent
        counts = per_forward[forward_of[id(top)]] if id(top) in forward_of else None
        if event.name.startswith("module:"):
            if counts is not None:
                path = event.name[len("module:"):]
                counts[0][path] = counts[0].get(path, 0) + 1
            continue
        if not event.name.startswith("aten::"):
            continue
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("module:"):
            parent = parent.cpu_parent
        if counts is None:
            raise SystemExit(f"{event.name} ran outside every forward")
        by_op = counts[1].setdefault(parent.name[len("module:"):], {})
        by_op[event.name] = by_op.get(event.name, 0) + 1
    assert len(per_forward) == forwards, (len(per_forward), forwards)

    def agreed(values):
        return max(set(values), key=values.count) * forwards

    calls = {}
    for path in {p for c, _ in per_forward for p in c}:
        calls[path] = agreed([c.get(path, 0) for c, _ in per_forward])
    ops = {}
    for path in {p for _, o in per_forward for p in o}:
        for op in {op for _, o in per_forward for op in o.get(path, {})}:
            n = agreed([o.get(path, {}).get(op, 0) for _, o in per_forward])
            if n:
                ops.setdefault(path, {})[op] = n
    return {"named_modules": list(paths.values()), "calls": calls, "ops": ops}


def main():
    workdir, name, forwards = sys.argv[1], sys.argv[2], int(sys.argv[3])
    import torch
    model, x = build(name)
    with torch.no_grad():
        model(x)  # warm-up
    ref = reference(model, x, forwards)
    with open(os.path.join(workdir, "reference.json"), "w") as f:
        json.dump(ref, f)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    # The same hooks as the reference's, doing nothing: torch 2.x's
    # TransformerEncoderLayer takes its fused fast path only when no hook is
    # registered, and the two runs must run the same code.
    for module in module_paths(model):
        module.register_forward_pre_hook(lambda module, args: None)
        module.register_forward_hook(lambda module, args, out: None)
    with torch.no_grad():
        for _ in range(forwards):
            model(x)
    signal_file(workdir, "done")
    wait_for_file(workdir, "exit")


if __name__ == "__main__":
    main()

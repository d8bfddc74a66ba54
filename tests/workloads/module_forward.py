"""A model's forwards, first under torch.profiler with a record_function
range per module call (the reference), then plain (what gpuprof records).

Usage: module_forward.py WORKDIR MODEL FORWARDS [MODE [REFERENCE_FORWARDS]]
  MODEL: resnet18 (torchvision, weights None, a 1 x 3 x 64 x 64 input) or
         encoder (nn.TransformerEncoder: d_model 32, 4 heads, 2 layers,
         batch_first, a 4 x 16 batch).
  MODE:  eval (the default: in eval under no_grad) or train (in train mode,
         each forward followed by `out.sum().backward()`, after one such
         step as warm-up, so that every measured step accumulates into
         existing gradients alike).
  REFERENCE_FORWARDS: how many the reference profiles (default FORWARDS,
         and at least 9: see reference()).

The script and the test take turns through files in WORKDIR:
  script: runs one forward (warm-up), then REFERENCE_FORWARDS forwards under
          torch.profiler with forward pre/post hooks on every module that
          open and close record_function("module:<path>") (<path>: the
          model's class, then named_modules()'s dotted name: ResNet.layer1.0.conv1);
          removes the hooks; writes `reference.json`, then `ready`; waits for `go`
  test:   attaches `gpuprof record -p PID --with-modules`, creates `go`
  script: registers hooks that do nothing on every module (torch 2.x's
          TransformerEncoderLayer runs another path when hooks are registered),
          runs FORWARDS forwards back to back (no profiler, no op between
          them), writes `done`, waits for `exit` (no op runs meanwhile);
          with train, when the test created `result` before `exit`, then
          writes `result.json` ({"grad_sum": the sum of every parameter's
          gradient, as float.hex()}) before it exits

reference.json: {"named_modules": [path, ...] in named_modules() order,
"calls": {path: module calls}, "ops": {path: {aten op: calls}}} where an op
belongs to the innermost module range around it (torch's cpu_parent chain;
train: an op of the backward pass, nested in an
"autograd::engine::evaluate_function: ..." call, belongs to the module of
the forward op that made the call's node, linked by torch's sequence
numbers (the last aten op of the forward, by start, with the node's
number: the one that made it, or an op nested in it), or to "[backward]"
when none has it (AccumulateGrad's -1); an op outside every range and
every engine call to "[no module]"; "ops" also counts the engine rows,
"autograd::engine::evaluate_function: X", by the same rule;
torch's table folds same-name only children, _remove_dup_nodes, before
this, as gpuprof's does), each count the one most forwards agree on times
FORWARDS (see reference()).
"""
import bisect
import json
import os
import sys

from handshake import signal_file, wait_for_file  # noqa: E402


def build(name, train):
    import torch
    import torch.nn as nn
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if name == "resnet18":
        import torchvision
        model, x = torchvision.models.resnet18(), torch.randn(1, 3, 64, 64)
    elif name == "encoder":
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0, batch_first=True)
        model, x = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False), torch.randn(4, 16, 32)
    else:
        raise SystemExit(f"unknown model {name}")
    return model.train(train), x


def step(model, x, train):
    """One forward (eval: under no_grad), and with train its backward."""
    import torch
    if train:
        model(x).sum().backward()
        return
    with torch.no_grad():
        model(x)


def module_paths(model):
    root = type(model).__name__
    return {module: root + ("." + name if name else "") for name, module in model.named_modules()}


ENGINE = "autograd::engine::evaluate_function: "


def ancestor(event, prefix):
    """The innermost event around event (itself included) named prefix..., or None."""
    while event is not None and not event.name.startswith(prefix):
        event = event.cpu_parent
    return event


def reference(model, x, forwards, train, scale):
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
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(forwards):
            step(model, x, train)
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
    starts = []  # the root ranges' starts: a step's events outside them (train) go by time
    by_start = sorted(prof.events(), key=lambda e: e.time_range.start)
    for event in by_start:
        if event.name == root:
            forward_of[id(event)] = len(per_forward)
            per_forward.append(({}, {}))
            starts.append(event.time_range.start)

    def module_of(event):
        """The path of the innermost module range around event, or "[no module]"."""
        parent = ancestor(event.cpu_parent, "module:")
        return parent.name[len("module:"):] if parent is not None else "[no module]"

    # torch 1.13 nests events by microsecond times, from clocks read at
    # other moments than the ops': an op in an engine call's last
    # microsecond may come out beside it (under no engine call, or under its
    # node alone, whose end may even pass the call's). Outside every module
    # range and engine call, nothing runs in a step's backward pass between
    # its engine calls: such an op is in the engine call of its thread that
    # began last before it, when that call began after the step's forward.
    engine_calls = {}
    for event in by_start:
        if event.name.startswith(ENGINE):
            engine_calls.setdefault(event.thread, []).append(event)

    def engine_of(event):
        engine = ancestor(event, ENGINE)
        if engine is not None or ancestor(event.cpu_parent, "module:") is not None:
            return engine
        calls = engine_calls.get(event.thread, [])
        t = event.time_range.start
        k = bisect.bisect_right([c.time_range.start for c in calls], t) - 1
        forward = bisect.bisect_right(starts, t) - 1  # the step's forward: its root range
        return calls[k] if k >= 0 and forward >= 0 and calls[k].time_range.start >= starts[forward] else None

    # A node's number -> the module of the forward op that made it: the
    # last aten op outside the engine, by start, that holds the number.
    module_of_node = {}
    for event in by_start:
        if event.name.startswith("aten::") and event.sequence_nr >= 0 and engine_of(event) is None:
            module_of_node[event.sequence_nr] = module_of(event)
    for event in prof.events():
        if id(event) in handles_made:
            continue
        top = event
        while top.cpu_parent is not None:
            top = top.cpu_parent
        if id(top) in forward_of:
            counts = per_forward[forward_of[id(top)]]
        elif train and starts and event.time_range.start >= starts[0]:
            counts = per_forward[bisect.bisect_right(starts, event.time_range.start) - 1]
        else:
            counts = None
        if event.name.startswith("module:"):
            if counts is not None:
                path = event.name[len("module:"):]
                counts[0][path] = counts[0].get(path, 0) + 1
            continue
        if not event.name.startswith(("aten::", ENGINE)):
            continue
        if counts is None:
            raise SystemExit(f"{event.name} ran outside every step")
        engine = engine_of(event)
        path = module_of(event) if engine is None else module_of_node.get(engine.sequence_nr, "[backward]")
        by_op = counts[1].setdefault(path, {})
        by_op[event.name] = by_op.get(event.name, 0) + 1
    assert len(per_forward) == forwards, (len(per_forward), forwards)

    # Each count is the one most forwards agree on, times `scale` (the
    # forwards gpuprof records): torch 1.13's profiler nests events by
    # their microsecond times, and now and then puts an op at a module's
    # edge in the neighbouring module, more often on a loaded machine (a CI
    # run of 5 forwards once lost the vote); of 9 or more, 5 must err alike.
    def agreed(values):
        return max(set(values), key=values.count) * scale

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
    train = (sys.argv[4] if len(sys.argv) > 4 else "eval") == "train"
    reference_forwards = int(sys.argv[5]) if len(sys.argv) > 5 else max(forwards, 9)
    model, x = build(name, train)
    step(model, x, train)  # warm-up
    ref = reference(model, x, reference_forwards, train, forwards)
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
    for _ in range(forwards):
        step(model, x, train)
    signal_file(workdir, "done")
    wait_for_file(workdir, "exit")
    # What the steps computed, when asked (after `exit`: no recording, and
    # no top's summary, which runs to the exit, holds these ops).
    if train and os.path.exists(os.path.join(workdir, "result")):
        with open(os.path.join(workdir, "result.json"), "w") as f:
            json.dump({"grad_sum": sum(float(p.grad.double().sum()) for p in model.parameters()).hex()}, f)


if __name__ == "__main__":
    main()

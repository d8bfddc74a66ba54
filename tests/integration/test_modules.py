"""report --modules: torchprof's layer table, from outside (docs/modules.md).

The reference is torch.profiler in the same process: forward hooks open a
record_function("module:<path>") per module call while it profiles a few
forwards (tests/workloads/module_forward.py); then the same forwards run
plain, with no hook, while `gpuprof record --with-modules` records them. For
every module the two agree exactly: its path (the model's class, then the
attribute names), its calls, and every aten op under it with its count; the
tree's order is named_modules()'s.
"""
import bisect
import json
import re
import signal
import time

import pytest

from chrome_trace_checks import export_chrome_trace, module_calls, op_calls, structural_problems
from conftest import parse_table, region_run, run_gpuprof, torch_table_name, touch, wait_for_file
from test_report_memory import READ_WHOLE, peak_rss_kib, report_as_whole, report_file_as_whole

FORWARDS = 5
# Training steps: the reference takes each count that most steps agree on
# (module_forward.py).
TRAIN_STEPS = 21


def parse_module_table(text, modules=None):
    """(module paths in table order, {path: calls}, {path: {op: calls}}) of
    `report --modules --show-events`. modules: the paths there may be (the
    synthetic nodes' too), when op rows without "::" may show ("detach")."""
    lines = text.splitlines()
    assert re.match(r"^Module +\| Self CPU total +\| CPU total +\| Number of Calls$", lines[0]), text
    assert re.match(r"^-+\|-+\|-+\|-+$", lines[1]), text
    order, calls, ops, stack = [], {}, {}, []
    for line in lines[2:]:
        cells = (line + " ").split(" | ")  # a synthetic node's empty calls cell ends its line in "|"
        assert len(cells) == 4, line
        lead, branch, name = re.match(r"^([│ ]*)(├── |└── )?(\S.*?)\s*$", cells[0]).groups()
        depth = len(lead) + 1 if branch else 0
        assert re.match(r"^[\d.]+(us|ms|s)$", cells[1].strip()) and re.match(r"^[\d.]+(us|ms|s)$", cells[2].strip()), line
        if modules is not None:
            is_op = ".".join(stack[:depth] + [name]) not in modules
        else:
            is_op = "::" in name or "#" in name
        if is_op:  # an op row (or an optimizer's range), one level under its module
            path = ".".join(stack[:depth])
            assert len(stack) == depth, (line, stack)
            ops.setdefault(path, {})[name] = int(cells[3])
            continue
        del stack[depth:]
        stack.append(name)
        path = ".".join(stack)
        order.append(path)
        calls[path] = int(cells[3]) if cells[3].strip() else None
    return order, calls, ops


def trace_ops_by_module(doc, modules):
    """{module path: {aten op: calls}} of a trace: each aten op slice counted
    in the innermost module slice around it on its thread."""
    by_thread = {}
    for m in modules:
        by_thread.setdefault((m["pid"], m["tid"]), []).append(
            (round(m["ts"] * 1000), round((m["ts"] + m["dur"]) * 1000), m["name"].removeprefix("nn.Module: ")))
    # torch's table folds a call into its parent when it is the parent's
    # only child and has its name (aten::div_ calling aten::div_): so do
    # the references' counts.
    spans = sorted(((e["pid"], e["tid"]), round(e["ts"] * 1000), -round((e["ts"] + e["dur"]) * 1000), k)
                   for k, e in enumerate(op_calls(doc)))
    calls = op_calls(doc)
    parent, children, stack = {}, {}, []
    for thread, start, neg_end, k in spans:
        while stack and (stack[-1][0] != thread or -stack[-1][2] <= start):
            stack.pop()
        if stack:
            parent[k] = stack[-1][3]
            children[stack[-1][3]] = children.get(stack[-1][3], 0) + 1
        stack.append((thread, start, neg_end, k))
    folded = {k for k, p in parent.items() if children[p] == 1 and calls[p]["name"] == calls[k]["name"]}
    out = {}
    for k, e in enumerate(calls):
        if not e["name"].startswith("aten::") or k in folded:
            continue
        start = round(e["ts"] * 1000)
        end = start + round(e["dur"] * 1000)
        around = [m for m in by_thread.get((e["pid"], e["tid"]), []) if m[0] <= start and end <= m[1]]
        if around:
            path = max(around, key=lambda m: (m[0], -m[1], m[2].count(".")))[2]  # the innermost
            out.setdefault(path, {}).setdefault(e["name"], 0)
            out[path][e["name"]] += 1
    return out


def check_forward_table(table, ref):
    """A `--modules --show-events` table of module_forward.py's forwards
    against its reference: the modules torch's ranges saw, in
    named_modules() order, no op outside them (the script runs none), none
    without a stack; every module's calls and aten ops exact. Returns the
    called modules' paths."""
    order, calls, ops = parse_module_table(table)
    called = [path for path in ref["named_modules"] if path in ref["calls"]]
    assert order == called, (order, called)
    assert {path: calls[path] for path in order} == {path: ref["calls"][path] for path in called}
    aten = {path: {op: n for op, n in by_op.items() if op.startswith("aten::")} for path, by_op in ops.items()}
    aten = {path: by_op for path, by_op in aten.items() if by_op}
    assert aten == ref["ops"], json.dumps({"gpuprof": aten, "torch.profiler": ref["ops"]}, indent=1)[:6000]
    return called


def check_streamed_is_whole(out):
    """report --modules and --chrome-trace (its module slices first) stream
    the recording (docs/report.md, "Memory"): they print the whole read's
    bytes, on stdout and stderr, and the trace is the whole read's file;
    the table compensated and raw, with each module's ops and cut to
    depths."""
    for args in (["--show-events"], ["--show-events", "--raw-times"], ["--depth", "1"]):
        assert report_as_whole(out, "--modules", *args).returncode == 0, args
    trace = out.with_suffix(".streamed.json")
    streamed_bytes, _ = report_file_as_whole(out, trace, "--chrome-trace", trace)
    assert b'"name":"nn.Module: ' in streamed_bytes
    trace.unlink()


def record_module_forward(procs, workdir, torch_env, model, *record_args, mode="eval", forwards=FORWARDS):
    """tests/workloads/module_forward.py's plain forwards (mode train: and
    their backward passes) recorded with --with-modules (and record_args):
    (the record file, its reference.json)."""
    target = procs.start_workload("module_forward.py", workdir, model, str(forwards), mode, torch_env=torch_env)
    wait_for_file(workdir, "ready", timeout=300, watch=[target])
    pid = int((workdir / "ready").read_text())
    ref = json.loads((workdir / "reference.json").read_text())
    out = workdir / "modules.gpuprof"
    gp = procs.start_gpuprof("record", "-p", str(pid), "--with-modules", *record_args, "-o", out)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
    touch(workdir, "go")
    wait_for_file(workdir, "done", timeout=300, watch=[target, gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()  # unharmed
    return out, ref


@pytest.mark.parametrize("model", ["resnet18", "encoder"])
def test_module_table_matches_torch_profiler(procs, workdir, torch_env, model):
    out, ref = record_module_forward(procs, workdir, torch_env, model)

    report = run_gpuprof("report", out, "--modules", "--show-events")
    assert report.returncode == 0, report.stderr
    assert "instance labels" not in report.stderr, report.stderr  # every module named by its attribute
    called = check_forward_table(report.stdout, ref)
    check_streamed_is_whole(out)

    # The Chrome trace's module slices: as many per module as torch's
    # ranges, each aten op inside its module's slice (the innermost one
    # around it), nested (no slice crosses another).
    doc, _ = export_chrome_trace(out, workdir / "modules.json")
    assert structural_problems(doc) == [], structural_problems(doc)[:5]
    modules = module_calls(doc)
    slice_calls = {}
    for m in modules:
        path = m["name"].removeprefix("nn.Module: ")
        slice_calls[path] = slice_calls.get(path, 0) + 1
    assert slice_calls == {path: ref["calls"][path] for path in called}, (slice_calls, ref["calls"])
    in_trace = trace_ops_by_module(doc, modules)
    assert in_trace == ref["ops"], [(path, op, in_trace.get(path, {}).get(op), ref["ops"].get(path, {}).get(op))
                                    for path in sorted(set(in_trace) | set(ref["ops"]))
                                    for op in sorted(set(in_trace.get(path, {})) | set(ref["ops"].get(path, {})))
                                    if in_trace.get(path, {}).get(op) != ref["ops"].get(path, {}).get(op)]

    # Folded stacks name module frames as the table does: every module's
    # path is a chain of frames (resnet18: no module name holds a dot).
    if model == "resnet18":
        folded = run_gpuprof("report", out, "--folded")
        assert folded.returncode == 0, folded.stderr
        # Each stack's module frames, outermost first (folded stacks write
        # spaces as underscores).
        module_chains = {tuple(frame.removeprefix("nn.Module:_")
                               for frame in line.rsplit(" ", 1)[0].split(";") if frame.startswith("nn.Module:_"))
                         for line in folded.stdout.splitlines()}
        for path in called:
            segments = tuple(path.split("."))
            assert any(chain[:len(segments)] == segments for chain in module_chains), (path, sorted(module_chains)[:5])
        assert "nn.Module:_Conv2d_" not in folded.stdout, folded.stdout[:2000]

    # --depth 0: the model alone.
    top = run_gpuprof("report", out, "--modules", "--depth", "0")
    assert top.returncode == 0, top.stderr
    assert top.stdout.splitlines()[2].startswith(called[0].split(".")[0] + " "), top.stdout
    assert len(top.stdout.splitlines()) == 3, top.stdout


ENGINE = "autograd::engine::evaluate_function: "
SYNTHETIC = ("[no module]", "[backward]")


@pytest.mark.parametrize("model", ["resnet18", "encoder"])
def test_backward_ops_are_charged_to_the_module_whose_forward_made_them(procs, workdir, torch_env, model):
    """Training steps (forward, then out.sum().backward()): every op of the
    backward pass is under the module whose forward op made its autograd
    node, as torch.profiler links them by sequence numbers in the
    reference run (module_forward.py); AccumulateGrad's (number -1) stay
    under [backward], the loss's under [no module]. Exact per module: each
    aten op and each engine row with its count; the module calls are the
    forwards' alone.

    torch 1.13 nests its events by microsecond times: there, a forward op at
    a module range's edge, or one that ties with a same-name neighbour
    (which torch's table then folds into it), comes out misplaced, step
    after step, in its reference tree. Its exact rows are those of the
    backward pass: the engine calls (each a whole call between the
    forwards) and the ops only the backward pass runs (aten::*_backward);
    the eval test above holds the forward ops of 1.13 exact."""
    out, ref = record_module_forward(procs, workdir, torch_env, model, mode="train", forwards=TRAIN_STEPS)
    report = run_gpuprof("report", out, "--modules", "--show-events")
    assert report.returncode == 0, report.stderr
    check_training_table(report.stdout, ref, torch_env)
    check_streamed_is_whole(out)


def check_training_table(table, ref, torch_env):
    """A `--modules --show-events` table of module_forward.py's training
    steps against its reference, on the rows the reference holds exactly
    for torch_env (the test above says which)."""
    if torch_env.libtorch_version == "1.13":
        def exact(op):
            return op.startswith(ENGINE) or (op.startswith("aten::") and op.endswith("_backward"))
    else:
        def exact(op):
            return op.startswith(("aten::", ENGINE))
    expected = {path: {op: n for op, n in by_op.items() if exact(op)} for path, by_op in ref["ops"].items()}
    expected = {path: by_op for path, by_op in expected.items() if by_op}
    called = [path for path in ref["named_modules"] if path in ref["calls"]]
    order, calls, ops = parse_module_table(table, set(called) | set(SYNTHETIC))
    assert order[:len(called)] == called and set(order[len(called):]) <= set(SYNTHETIC), (order, called)
    assert {path: calls[path] for path in called} == {path: ref["calls"][path] for path in called}
    counted = {path: {op: n for op, n in by_op.items() if exact(op)} for path, by_op in ops.items()}
    counted = {path: by_op for path, by_op in counted.items() if by_op}
    assert counted == expected, [(path, op, counted.get(path, {}).get(op), expected.get(path, {}).get(op))
                                 for path in sorted(set(counted) | set(expected))
                                 for op in sorted(set(counted.get(path, {})) | set(expected.get(path, {})))
                                 if counted.get(path, {}).get(op) != expected.get(path, {}).get(op)]
    # The links did place the backward pass: most engine calls are in modules.
    in_modules = sum(n for path in called for op, n in expected.get(path, {}).items() if op.startswith(ENGINE))
    left = sum(n for op, n in expected.get("[backward]", {}).items() if op.startswith(ENGINE))
    assert in_modules > left, (in_modules, left)


def train_to_the_end(procs, workdir, torch_env, steps, *, traced=None):
    """module_forward.py's `steps` training steps of the encoder, run to
    their end: (the gradient sum they left, the process). traced(pid) runs
    once the steps begin, beside them."""
    target = procs.start_workload("module_forward.py", workdir, "encoder", str(steps), "train", str(FORWARDS),
                                  torch_env=torch_env)
    wait_for_file(workdir, "ready", timeout=300, watch=[target])
    pid = int((workdir / "ready").read_text())
    if traced:
        traced(pid, target)
    else:
        touch(workdir, "go")
    wait_for_file(workdir, "done", timeout=300, watch=[target])
    touch(workdir, "result")
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()
    return json.loads((workdir / "result.json").read_text())["grad_sum"]


@pytest.mark.parametrize("stop", ["SIGKILL", "detach"])
def test_stopping_with_modules_midway_leaves_training_right(procs, tmp_path, torch_env, stop):
    """--with-modules probes the making of every autograd node (a probe on
    the ret of torch's node numbering, docs/modules.md): gpuprof killed
    (SIGKILL) or detached (Ctrl-C) in the middle of training steps leaves
    the target training to the same gradients as a run nobody traced."""
    steps = 400
    plain_dir, traced_dir = tmp_path / "plain", tmp_path / "traced"
    plain_dir.mkdir()
    traced_dir.mkdir()
    out = tmp_path / "midway.gpuprof"

    def trace_and_stop(pid, target):
        gp = procs.start_gpuprof("record", "-p", str(pid), "--with-modules", "-o", out)
        gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
        touch(traced_dir, "go")
        time.sleep(1.0)
        assert not (traced_dir / "done").exists(), "the steps ended before gpuprof was stopped: raise `steps`"
        if stop == "SIGKILL":
            gp.kill_hard()
            assert gp.popen.returncode == -signal.SIGKILL, gp.describe()
        else:
            gp.send(signal.SIGINT)
            assert gp.wait(timeout=120) == 0, gp.describe()

    plain = train_to_the_end(procs, plain_dir, torch_env, steps)
    traced = train_to_the_end(procs, traced_dir, torch_env, steps, traced=trace_and_stop)
    assert traced == plain, (traced, plain)
    if stop == "detach":  # the links were made while it ran: backward calls in modules
        report = run_gpuprof("report", out, "--modules", "--show-events", "--module-paths", "TransformerEncoder.layers.0.linear1")
        assert report.returncode == 0, report.stderr
        assert ENGINE + "AddmmBackward0" in report.stdout, report.stdout


def test_every_engine_call_is_in_the_tree_once(tmp_path_factory, torch_env):
    """Training steps (region.py mlp_sgd: forward, backward, SGD step) under
    torch.profiler and gpuprof --with-modules: every call of torch's
    autograd engine is in the tree once, as many of each as torch.profiler
    counts in the same run, in the module of its forward where linked
    (the test above says which), and only AccumulateGrad's (no number to
    link by) under [backward]."""
    with region_run(tmp_path_factory, "backward", workload="mlp_sgd", gpuprof_args=("--with-modules",),
                    torch_env=torch_env) as run:
        engine = {key: row["count"] for key, row in run.torch_ops.items() if key.startswith(ENGINE)}
        assert len(engine) > 1, run.torch_ops.keys()

        def engine_rows(*args):
            report = run_gpuprof("report", run.record_file, "--modules", "--show-events", *args)
            assert report.returncode == 0, report.stderr
            rows = {}
            for line in report.stdout.splitlines()[2:]:
                name, *_, calls = [cell.strip() for cell in line.split(" | ")]
                # As torch's table names it (long names cut), as torch_ops has them.
                name = torch_table_name(re.sub(r"^[│ ]*[├└]── ", "", name))
                if name.startswith(ENGINE):
                    rows[name] = rows.get(name, 0) + int(calls)
            return rows, report.stdout

        everywhere, text = engine_rows()
        assert everywhere == engine, (everywhere, engine)
        backward, text = engine_rows("--module-paths", "[backward]")
        assert text.splitlines()[2].startswith("[backward] "), text
        accumulate = {op: n for op, n in engine.items()
                      if op == torch_table_name(ENGINE + "torch::autograd::AccumulateGrad")}
        assert accumulate, engine
        assert backward == accumulate, (backward, engine)
        # None elsewhere: the whole op table has no more of them.
        table = parse_table(run_gpuprof("report", run.record_file, "--row-limit", "-1").stdout)
        assert {op: n for op, n in table.calls().items() if op.startswith("autograd::engine::")} == engine


def format_memory(nbytes):
    """torch's _format_memory (torch/autograd/profiler_util.py)."""
    for unit, size in (("Gb", 1024 ** 3), ("Mb", 1024 ** 2), ("Kb", 1024)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} b"


def test_streamed_module_table_is_exact_and_its_memory_flat(torch_env, tmp_path):
    """report --modules and --chrome-trace (module slices included) stream
    the events (docs/report.md, "Memory"): on a
    short and a 4x longer recording of two models on two threads
    (tests/workloads/module_loop.py: one trained, one in an inference loop),
    every module call and every op of a forward or of its backward is where
    the workload put it, counted exactly; the streamed table is the whole
    read's, byte for byte (and so is the trace); and report's peak memory
    does not grow with the events, while the whole read's grows by tens of
    MiB."""
    rss = {}
    for seconds in (1, 4):
        out = tmp_path / f"loop-{seconds}s.gpuprof"
        rec = run_gpuprof("record", "-q", "--with-modules", "-o", out, "--",
                          *torch_env.argv("module_loop.py", str(seconds)), timeout=300)
        assert rec.returncode == 0, rec.stderr
        train = int(re.search(r"^train (\d+)$", rec.stdout, re.M).group(1))
        infer = int(re.search(r"^infer (\d+)$", rec.stdout, re.M).group(1))
        report = run_gpuprof("report", out, "--modules", "--show-events")
        assert report.returncode == 0, report.stderr
        modules = ["Inferred", "Inferred.0", "Inferred.1", "Trained", "Trained.0", "Trained.1", "Trained.2"]
        order, calls, ops = parse_module_table(report.stdout, set(modules) | {"[no module]", "[backward]"})
        assert order == modules + ["[no module]", "[backward]"], report.stdout
        assert {path: calls[path] for path in modules} == {
            "Inferred": infer, "Inferred.0": infer, "Inferred.1": infer,
            "Trained": train, "Trained.0": train, "Trained.1": train, "Trained.2": train}, report.stdout
        assert ops["Inferred.0"]["aten::linear"] == infer and ops["Inferred.1"]["aten::tanh"] == infer, report.stdout
        for layer in ("Trained.0", "Trained.2"):
            assert ops[layer]["aten::linear"] == train, report.stdout
            assert ops[layer][ENGINE + "AddmmBackward0"] == train, report.stdout
        assert ops["Trained.1"]["aten::relu"] == train, report.stdout
        assert ops["Trained.1"][ENGINE + "ReluBackward0"] == train, report.stdout
        # Four parameters, each one AccumulateGrad per step.
        assert ops["[backward]"][ENGINE + "torch::autograd::AccumulateGrad"] == 4 * train, report.stdout
        check_streamed_is_whole(out)
        trace = tmp_path / "trace.json"
        rss[seconds] = (train, peak_rss_kib(out, "--modules"), peak_rss_kib(out, "--modules", env=READ_WHOLE),
                        peak_rss_kib(out, "--chrome-trace", trace),
                        peak_rss_kib(out, "--chrome-trace", trace, env=READ_WHOLE))
        trace.unlink()
    summary = (f"(train steps, peak RSS KiB of --modules streamed, read whole, --chrome-trace streamed, read "
               f"whole): 1 s {rss[1]}, 4 s {rss[4]}")
    print(summary)
    assert rss[4][0] > 2 * rss[1][0], summary
    # Streamed, what waits is a thread's calls until their Python stacks'
    # pairs come (about a flush interval's worth, its peak noisy from run
    # to run, and the worst wait grows a little with the recording's
    # length). The layer table holds about 300 bytes per waiting call: at
    # this project's VM's op rate on 2026-12-06 (2.6 times that of a week
    # before) up to 90,000 calls waited, and its peak grew by 6.7 MiB from
    # 1 s to 4 s in one run, by more than 8 in another: allow 16 MiB for it
    # (the whole read grew by 131 MiB in that run), 8 for the trace, which
    # holds less per call. Whole, each event costs tens of bytes: about
    # 77 KiB per training step more (with its inference steps) for the
    # table, 105 for the trace; more than 30 is growth with the events (a
    # fixed 100 MiB failed on a slow run of 989 steps more, 74 MiB).
    whole_growth_kib = 30 * (rss[4][0] - rss[1][0])
    assert rss[4][1] - rss[1][1] < 16384, summary
    assert rss[4][2] - rss[1][2] > whole_growth_kib, summary
    assert rss[4][3] - rss[1][3] < 8192, summary
    assert rss[4][4] - rss[1][4] > whole_growth_kib, summary


def test_module_memory_is_what_the_memory_counter_moved_in_its_calls(procs, workdir, torch_env):
    """With --profile-memory the layer table gets torchprof's memory columns:
    a module's CPU Mem is the bytes allocated minus released during its
    calls, which is what the Chrome trace's CPU memory counter (another
    path through the allocator events) moved over the module's slices."""
    out, ref = record_module_forward(procs, workdir, torch_env, "resnet18", "--profile-memory")
    report = run_gpuprof("report", out, "--modules")
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    header = [cell.strip() for cell in lines[0].split(" | ")]
    assert header == ["Module", "Self CPU total", "CPU total", "Self CPU Mem", "CPU Mem", "Number of Calls"], lines[0]
    table, stack = {}, []
    for line in lines[2:]:
        cells = [cell.strip() for cell in line.split(" | ")]
        lead, branch, name = re.match(r"^([│ ]*)(├── |└── )?(\S.*?)\s*$", line.split(" | ")[0]).groups()
        depth = len(lead) + 1 if branch else 0
        del stack[depth:]
        stack.append(name)
        table[".".join(stack)] = dict(zip(header, cells))

    doc, _ = export_chrome_trace(out, workdir / "memory.json")
    levels = sorted((round(e["ts"] * 1000), e["args"]["bytes"]) for e in doc["traceEvents"]
                    if e["ph"] == "C" and e["name"] == "CPU memory")
    assert levels, "no CPU memory counter"

    def level_at(ns):
        at = bisect.bisect_right(levels, (ns, float("inf")))
        return levels[at - 1][1] if at else 0

    moved = {}
    for m in module_calls(doc):
        start = round(m["ts"] * 1000)
        end = start + round(m["dur"] * 1000)
        path = m["name"].removeprefix("nn.Module: ")
        moved[path] = moved.get(path, 0) + level_at(end) - level_at(start)
    called = [path for path in ref["named_modules"] if path in ref["calls"]]
    assert set(moved) == set(called), (sorted(moved), called)
    want = {path: format_memory(moved[path]) for path in called}
    got = {path: table[path]["CPU Mem"] for path in called}
    assert got == want, [(path, got[path], want[path]) for path in called if got[path] != want[path]]
    # Something was allocated: the conv layers' outputs.
    assert moved["ResNet.conv1"] > 0, moved


def test_modules_need_stacks_and_known_paths(procs, workdir, tmp_path):
    target = procs.start_workload("module_forward.py", workdir, "resnet18", "1")
    wait_for_file(workdir, "ready", timeout=300, watch=[target])
    pid = int((workdir / "ready").read_text())
    plain, stacks = tmp_path / "plain.gpuprof", tmp_path / "stacks.gpuprof"
    for out, extra in ((plain, ()), (stacks, ("--with-stack",))):
        gp = procs.start_gpuprof("record", "-p", str(pid), "-o", out, *extra)
        gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
        gp.send(signal.SIGINT)
        assert gp.wait(timeout=120) == 0, gp.describe()
    touch(workdir, "go")
    wait_for_file(workdir, "done", timeout=300, watch=[target])
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()

    no_stacks = run_gpuprof("report", plain, "--modules")
    assert no_stacks.returncode == 2, no_stacks.stdout
    assert no_stacks.stderr == (f"gpuprof: error: --modules: {plain} has no Python stacks of op calls, which say "
                                "what module each op ran in: record with --with-modules\n")
    # A --with-stack recording with no op in it: no table, said.
    empty = run_gpuprof("report", stacks, "--modules")
    assert empty.returncode == 0 and empty.stdout == "No operator calls were recorded.\n", empty
    unknown = run_gpuprof("report", stacks, "--modules", "--module-paths", "ResNet.nope")
    assert unknown.returncode == 2 and "has no module ResNet.nope" in unknown.stderr, unknown.stderr
    for bad in (("--show-events",), ("--depth", "1"), ("--modules", "--folded"), ("--modules", "--depth", "-1")):
        refused = run_gpuprof("report", stacks, *bad)
        assert refused.returncode == 2, (bad, refused.stderr)
    system_wide = run_gpuprof("record", "-a", "--with-modules", "-o", tmp_path / "a.gpuprof")
    assert system_wide.returncode == 2 and "does not take --with-modules" in system_wide.stderr, system_wide.stderr

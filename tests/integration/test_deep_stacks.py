"""Python stacks deeper than gpuprof reads keep their root (issue 21, item 3).

deep_stack.py runs down LEVELS functions, each its own code object named
level_k, into spin(), which calls torch.mm and loops in pure Python: any
frame's name says how deep it is (level_k is frame k + 3 from the root,
spin() frame LEVELS + 3). gpuprof reads the innermost 64 and the outermost
64 frames of a stack (bpf/abi_common.h) and names those between with one frame,
"[N frames not read]" (docs/stacks.md). So in every stack, CPU sample or op
entry:
  * the outermost Python frame is the script's <module>, then main, then
    level_0 ... level_61 (the outermost 64);
  * deeper than 128: exactly one "[N frames not read]" frame right after
    them, then the innermost 64, the first of which, level_k, is frame k + 3:
    N = k + 3 - 65; the op entries (all in spin()) have N = LEVELS + 3 - 128;
  * not deeper (LEVELS 100: 103 frames): no such frame, every frame there;
and record and report say on stderr how many samples and op calls were cut.
"""
import json
import re
import signal

import pytest

from conftest import (Procs, TORCH_ENVS, parse_stack_table, run_gpuprof, touch, wait_for_file)
from chrome_trace_checks import frame_chain, op_calls

INNER = OUTER = 64  # bpf/abi_common.h: GP_PY_INNER_FRAMES, GP_PY_OUTER_FRAMES
SECONDS = 2
HZ = 499
DEEP, SHALLOW = 200, 100  # 203 and 103 frames under spin()
PYTHON_FRAME_RE = re.compile(r"^(?P<file>.+)\((?P<line>-?\d+)\): (?P<name>.+)$")
MARKER_RE = re.compile(r"^\[(?P<n>\d+) frames not read\]$")
LEVEL_RE = re.compile(r"^level_(?P<k>\d+)$")
CUT_NOTE_RE = re.compile(
    r"^gpuprof: (?:(?P<samples_cut>\d+) of (?P<samples>\d+) CPU samples)?(?: and )?"
    r"(?:(?P<entries_cut>\d+) of (?P<entries>\d+) op calls)? have Python stacks deeper than the 128 frames read: "
    r"their innermost 64 and outermost 64 frames are kept, a frame \[N frames not read\] stands for those "
    r"between \(docs/stacks.md\)$")


@pytest.fixture(scope="module", params=[(env, levels) for env in TORCH_ENVS for levels in (DEEP, SHALLOW)],
                ids=lambda p: f"{p[0]}-{p[1]}levels")
def deep_run(request, tmp_path_factory):
    """deep_stack.py recorded with -F and --with-stack from `go` to `done`."""
    torch_env, levels = request.param
    tmp = tmp_path_factory.mktemp(f"deep-{torch_env}-{levels}")
    workdir = tmp / "handshake"
    workdir.mkdir()
    procs = Procs(tmp)
    try:
        target = procs.start_workload("deep_stack.py", workdir, levels, SECONDS, torch_env=torch_env)
        pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
        out = tmp / "deep.gpuprof"
        gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, "-F", HZ, "--with-stack")
        gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
        touch(workdir, "go")
        done = json.loads(wait_for_file(workdir, "done", timeout=120, watch=[target, gp]))
        gp.send(signal.SIGINT)
        assert gp.wait(timeout=60) == 0, gp.describe()
        touch(workdir, "exit")
        assert target.wait(timeout=60) == 0, target.describe()
        assert done["depth"] == levels + 3
        yield {"levels": levels, "depth": done["depth"], "mm_calls": done["mm_calls"], "out": out,
               "stderr": gp.stderr(), "tmp": tmp}
    finally:
        procs.cleanup()


def python_frames(frames):
    """(name, frame) of the Python frames and markers of a stack, outermost first."""
    kept = []
    for frame in frames:
        m = PYTHON_FRAME_RE.match(frame)
        if m:
            kept.append((m.group("name"), frame))
        elif MARKER_RE.match(frame) or frame == "[outer frames not read]":
            kept.append((None, frame))
    return kept


def check_stack(frames, in_levels=False):
    """The checks of the module docstring on one stack (frames outermost
    first, folded frames with their spaces back); returns its true depth.
    in_levels: the stack must be under level_0 (an op's)."""
    stack = python_frames(frames)
    names = [name for name, _ in stack]
    assert names[:2] == ["<module>", "main"], frames
    assert stack[0][1].startswith("deep_stack.py("), frames
    markers = [i for i, (name, frame) in enumerate(stack) if name is None]
    if len(names) > 2 and not LEVEL_RE.match(names[2] or ""):
        # main's own calls, outside the levels (the handshake): shallow.
        assert not markers and len(stack) < 20 and not in_levels, frames
        return len(stack)
    if not markers:
        depth = len(stack)
        assert depth <= INNER + OUTER, frames
        expected = ["<module>", "main"] + [f"level_{k}" for k in range(depth - 2)]
        if names[-1] == "spin":
            expected[-1] = "spin"
        assert names == expected, frames
        return depth
    assert len(markers) == 1 and markers[0] == OUTER, frames
    assert names[2:OUTER] == [f"level_{k}" for k in range(OUTER - 2)], frames
    inner = names[OUTER + 1:]
    assert len(inner) == INNER, frames
    first = LEVEL_RE.match(inner[0])
    assert first, frames
    k = int(first.group("k"))
    expected_inner = [f"level_{j}" for j in range(k, k + INNER)]
    if inner[-1] == "spin":
        expected_inner[-1] = "spin"
    assert inner == expected_inner, frames
    n = int(MARKER_RE.match(stack[OUTER][1]).group("n"))
    assert n == k + 3 - (OUTER + 1), frames
    return OUTER + n + INNER


def unfold(frame):
    """A folded frame as gpuprof names it (folding turns spaces into _)."""
    m = re.match(r"^(.+\(-?\d+\)):_(.+)$", frame)
    if m:
        return f"{m.group(1)}: {m.group(2)}"
    m = re.match(r"^\[(\d+)_frames_not_read\]$", frame)
    return f"[{m.group(1)} frames not read]" if m else frame


def folded(out, *args):
    result = run_gpuprof("report", out, "--folded", *args)
    assert result.returncode == 0, result.stderr
    pairs = []
    for line in result.stdout.splitlines():
        stack, value = line.rsplit(" ", 1)
        pairs.append(([unfold(f) for f in stack.split(";")], int(value)))
    return pairs, result.stderr


def cut_note(stderr):
    notes = [CUT_NOTE_RE.match(line) for line in stderr.splitlines() if line.startswith("gpuprof: ")]
    notes = [m for m in notes if m]
    assert len(notes) <= 1, stderr
    if not notes:
        return None
    return {k: int(v) for k, v in notes[0].groupdict(default="0").items()}


def test_sample_stacks_keep_their_root(deep_run):
    samples, stderr = folded(deep_run["out"], "--metric", "samples")
    in_spin = cut = with_python = 0
    for frames, count in samples:
        if not python_frames(frames):
            continue  # torch's own threads
        depth = check_stack(frames)
        with_python += count
        cut += count if depth > INNER + OUTER else 0
        if [f for f in frames if PYTHON_FRAME_RE.match(f)][-1].endswith(": spin"):
            assert depth == deep_run["depth"], frames
            in_spin += count
    print(f"{with_python} samples with Python frames, {in_spin} in spin(), {cut} cut")
    assert in_spin > 0.5 * with_python, samples
    note = cut_note(deep_run["stderr"])
    if deep_run["levels"] == DEEP:
        assert note and note["samples_cut"] == cut and note["samples"] == with_python, deep_run["stderr"]
        assert cut_note(stderr) == note, stderr  # report says what record said
    else:
        assert cut == 0 and note is None, deep_run["stderr"]
        assert cut_note(stderr) is None, stderr


def test_op_stacks_keep_their_root(deep_run):
    """Folded op stacks and the Chrome trace (whole stacks), and the table's
    calls, grouped by whole stacks."""
    expected_n = deep_run["depth"] - INNER - OUTER
    # The table: rows grouped by their whole stacks; its Source Location
    # shows their innermost 5 frames (torch's table prints no more).
    table = run_gpuprof("report", deep_run["out"], "--group-by-stack-n", "300", "--row-limit", "-1")
    assert table.returncode == 0, table.stderr
    rows = parse_stack_table(table.stdout)
    calls = 0
    levels = deep_run["levels"]
    for name, n_calls, frames in rows:
        assert [PYTHON_FRAME_RE.match(f).group("name") for f in frames] == \
            ["spin"] + [f"level_{k}" for k in range(levels - 1, levels - 5, -1)], (name, frames)
        calls += n_calls
    assert sum(n for name, n, _ in rows if name == "aten::mm") == deep_run["mm_calls"], table.stdout
    note = cut_note(deep_run["stderr"])
    if expected_n > 0:
        assert note and note["entries_cut"] == note["entries"] == calls, deep_run["stderr"]
        assert cut_note(table.stderr) == note, table.stderr
    else:
        assert note is None and cut_note(table.stderr) is None, (deep_run["stderr"], table.stderr)
    # Folded self CPU time: each op path under its Python stack.
    stacks, _ = folded(deep_run["out"])
    op_stacks = [frames for frames, _ in stacks if "aten::mm" in frames]
    assert op_stacks, stacks
    for frames in op_stacks:
        assert check_stack(frames, in_levels=True) == deep_run["depth"], frames
    # The Chrome trace: every op's stack.
    trace = deep_run["tmp"] / "deep.json"
    made = run_gpuprof("report", deep_run["out"], "--chrome-trace", trace)
    assert made.returncode == 0, made.stderr
    doc = json.loads(trace.read_text())
    ops = [e for e in op_calls(doc) if e["name"] == "aten::mm"]
    assert len(ops) == deep_run["mm_calls"], len(ops)
    for e in ops:
        assert "sf" in e, e
        assert check_stack(list(frame_chain(doc, e["sf"])), in_levels=True) == deep_run["depth"], e

"""--with-stack and report --group-by-stack-n against torch.profiler(with_stack=True).

One resnet18 forward pass under torch.profiler(with_stack=True) while
gpuprof records it with --with-stack: the Python stacks gpuprof reads from
the interpreter's frames at every op entry must be torch's for the same
calls. torch's stack has one entry that is not a Python frame, the C
function the op was called through ("<built-in method conv2d of type
object at 0x...>"), which gpuprof does not list (docs/stacks.md); every
other entry, nn.Module entries included ("nn.Module: Conv2d_0"), must be
the same, in the same order.

torch 2.6's own with_stack=True crashes the process at its first nn.Module
call (a segfault in libtorch_python), so on torch 2.6 the answer is the one
torch 1.13 gives in shape: each of resnet18's 20 convolutions is called
once, from its own module (nn.Module: Conv2d_0 to Conv2d_19), under
torchvision's resnet.py and the workload's own frames.
"""
import collections
import json
import re

import pytest

from conftest import TARGET_PYTHON, TORCH_ENV_IDS, TORCH_ENVS, parse_stack_table, resnet_region_run, run_gpuprof

N = 5  # the issue's --group-by-stack-n 5


def python_entries(stack):
    return [entry for entry in stack if not entry.startswith("<built-in ")]


# Where torch.profiler(with_stack=True) works (see the top of this file).
TORCH_STACKS_WORK = {"torch1.13": True, "torch2.6": False}
RESNET18_CONVS = 20


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def stack_run(request, tmp_path_factory):
    torch_env = request.param
    torch_args = ("--with-stack",) if TORCH_STACKS_WORK[torch_env.id] else ()
    with resnet_region_run(tmp_path_factory, f"stacks-{torch_env}", *torch_args, gpuprof_args=("--with-stack",),
                           torch_env=torch_env) as run:
        run.torch_stacks = (json.loads((run.workdir / "torch_stacks.json").read_text()) if torch_args else None)
        yield run


def test_every_entry_has_its_stack(stack_run):
    stderr = stack_run.gpuprof.stderr()
    assert stack_run.stopped["lost"] == 0, stderr
    assert "entries without a Python stack" not in stderr, stderr
    assert "no Python stacks" not in stderr, stderr


def conv2d_stacks(stack_run):
    """gpuprof's --group-by-stack-n table: {aten::conv2d's top N frames: calls}."""
    report = run_gpuprof("report", stack_run.record_file, "--group-by-stack-n", str(N), "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    ours = collections.Counter()
    for name, calls, frames in parse_stack_table(report.stdout):
        if name == "aten::conv2d":
            ours[tuple(frames)] += calls
    return ours, report.stdout


def test_conv2d_top_frames_match_torch(stack_run):
    ours, text = conv2d_stacks(stack_run)
    if stack_run.torch_stacks is None:
        # The known answer: one call per convolution module, each its own group.
        assert sum(ours.values()) == RESNET18_CONVS and set(ours.values()) == {1}, text
        modules = sorted(f for top in ours for f in top if f.startswith("nn.Module: Conv2d_"))
        assert modules == sorted(f"nn.Module: Conv2d_{i}" for i in range(RESNET18_CONVS)), text
        return
    theirs = collections.Counter(tuple(python_entries(stack)[:N]) for stack in stack_run.torch_stacks)
    # resnet18 has 20 convolutions, each its own module: 20 groups of one call.
    assert sum(theirs.values()) == RESNET18_CONVS, stack_run.torch_stacks
    assert all(any(f.startswith("nn.Module: Conv2d_") for f in top) for top in theirs), theirs
    assert any("torchvision/models/resnet.py(" in f for top in theirs for f in top), theirs
    assert ours == theirs, (
        "aten::conv2d stacks differ from torch.profiler's (built-in entries left out):\n"
        f"only torch: {sorted(theirs - ours)}\nonly gpuprof: {sorted(ours - theirs)}\n{text}")


def mask_workload_lines(frames):
    """torch prints the frames already running when its profiling started
    (the workload's main and <module>) at their line of that moment, gpuprof
    at their first line (docs/stacks.md): compare those by function only."""
    return tuple(re.sub(r"^region\.py\(\d+\)", "region.py(N)", f) for f in frames)


def test_full_stacks_match_torch(stack_run):
    # Deeper than the table shows: the folded output of self time carries
    # each outermost call's whole Python stack, outermost first.
    folded = run_gpuprof("report", stack_run.record_file, "--folded")
    assert folded.returncode == 0, folded.stderr
    conv_prefixes = collections.Counter()
    for line in folded.stdout.splitlines():
        frames = line.rsplit(" ", 1)[0].split(";")
        if "aten::conv2d" in frames:
            conv_prefixes[mask_workload_lines(frames[:frames.index("aten::conv2d")])] += 1
    # A folded line is a distinct whole stack, so calls with equal stacks
    # would merge: what can be compared is the set of conv2d call stacks.
    # Each convolution is its own module, so that set has one stack per call.
    assert len(conv_prefixes) == RESNET18_CONVS, conv_prefixes
    # The region's stacks start in the workload's own frames and pass
    # through torchvision's model.
    assert all(top[0].startswith("region.py(") for top in conv_prefixes), conv_prefixes
    assert all(any(f.startswith("torchvision/models/resnet.py(") for f in top) for top in conv_prefixes), conv_prefixes
    if stack_run.torch_stacks is None:
        # The known answer (see the top of this file): each stack names
        # exactly one convolution module, and together they name each of
        # the 20 once.
        modules = [[f for f in top if f.startswith("nn.Module:_Conv2d_")] for top in conv_prefixes]
        assert all(len(named) == 1 for named in modules), modules
        assert sorted(named[0] for named in modules) == sorted(
            f"nn.Module:_Conv2d_{i}" for i in range(RESNET18_CONVS)), modules
        return
    theirs = collections.Counter(mask_workload_lines(reversed([e.replace(" ", "_") for e in python_entries(stack)]))
                                 for stack in stack_run.torch_stacks)
    # torch's 20 conv2d calls have 20 different stacks, so the sets compare
    # every call: equal sets are equal multisets here.
    assert sum(theirs.values()) == len(theirs) == RESNET18_CONVS, theirs
    assert set(conv_prefixes) == set(theirs), (
        f"only torch: {sorted(set(theirs) - set(conv_prefixes))}\n"
        f"only gpuprof: {sorted(set(conv_prefixes) - set(theirs))}")


def test_group_by_stack_needs_stacks(tmp_path):
    refused = run_gpuprof("record", "-p", "1", "--group-by-stack-n", "5")
    assert refused.returncode == 2, refused.stderr
    assert "--group-by-stack-n needs --with-stack" in refused.stderr
    plain = tmp_path / "plain.gpuprof"
    made = run_gpuprof("record", "-q", "-o", plain, "--", TARGET_PYTHON, "-c",
                       "import torch; torch.ones(3).sum()")
    assert made.returncode == 0, made.stderr
    report = run_gpuprof("report", plain, "--group-by-stack-n", "5")
    assert report.returncode == 2, report.stdout
    assert "record with --with-stack" in report.stderr, report.stderr

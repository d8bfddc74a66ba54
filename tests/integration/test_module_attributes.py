"""Module attribute names read from outside a running PyTorch process (docs/modules.md).

tests/workloads/module_tree.py builds torchvision's resnet18 and an
nn.TransformerEncoder, runs them once, and writes every (parent, child) pair
of named_modules() with the child's attribute name; build/tests/tools/module_names
(ModuleAttributes, python/module_attributes.h) must read each name from the
target's memory, exactly, on both torches (1.13: OrderedDict _modules under
CPython 3.11; 2.6: dict _modules under 3.13), say "not found" for a module
the parent does not hold, and leave the target running unharmed.
"""
import pytest

from conftest import REPO_ROOT, run_program, touch, wait_for_file

MODULE_NAMES = REPO_ROOT / "build" / "tests" / "tools" / "module_names"
# resnet18's 67 (parent, child) pairs and the two-layer encoder's 21
# (layers, 0, 1, and each layer's self_attn, out_proj, linear1, dropout,
# linear2, norm1, norm2, dropout1, dropout2): the same in torch 1.13 and 2.6.
PAIRS = 67 + 21


def read_pairs(text):
    """module_tree.py's `pairs`: {"PARENT:CHILD": name}, and the stranger's "PARENT:CHILD"."""
    expected, stranger = {}, None
    for line in text.splitlines():
        fields = line.split()
        if fields[0] == "stranger":
            stranger = f"{fields[1]}:{fields[2]}"
        else:
            expected[f"{fields[0]}:{fields[1]}"] = fields[2]
    return expected, stranger


def test_names_every_child_of_resnet18_and_a_transformer(procs, workdir, torch_env):
    if not MODULE_NAMES.is_file():
        pytest.fail(f"{MODULE_NAMES} is missing: build it (make -C {REPO_ROOT} build/tests/tools/module_names)")
    target = procs.start_workload("module_tree.py", workdir, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=(target,)))
    expected, stranger = read_pairs((workdir / "pairs").read_text())
    assert len(expected) == PAIRS
    assert {"conv1", "layer1", "fc", "0", "downsample", "self_attn", "out_proj", "norm2"} <= set(expected.values())

    result = run_program(MODULE_NAMES, pid, *expected, stranger)
    assert result.returncode == 0, result.stderr
    found = dict(line.split(" ", 1) for line in result.stdout.splitlines())
    wrong = {pair: (name, found.get(pair)) for pair, name in expected.items() if found.get(pair) != name}
    assert not wrong, f"(expected, read) where they differ: {wrong}"
    assert found == {**expected, stranger: "not found"}

    assert target.running()
    touch(workdir, "go")
    assert target.wait() == 0, target.describe()


def test_refuses_a_process_without_python(procs, workdir):
    """A process without CPython: a clear error, exit 1."""
    sleeper = procs.start(["sleep", "30"], "sleep")
    result = run_program(MODULE_NAMES, sleeper.pid, "1000:2000")
    assert result.returncode == 1
    assert result.stderr.startswith(f"module_names: no CPython in process {sleeper.pid}: ")

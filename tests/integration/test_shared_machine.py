"""gpuprof on a machine it shares: a second session, and another tracer's uprobes.

The kernel plants a pid-less uprobe's breakpoints (`record -a`, bpftrace,
perf probe) in every mapping of the probed file that may execute, gpuprof's
own read-only mapping of the library included. gpuprof must read the file's
true bytes: the same probe sites, the same counts as torch.profiler, real
times. Both tables (the `-p` session's and the system-wide one's) must be
right, on both torches (a CET-built libtorch's op bodies start with endbr64,
whose first byte an int3 replaces).
"""
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import (describe_count_diff, load_torch_ops, parse_table, parse_tracing_line, run_gpuprof,
                      run_profiled_region, touch, tracefs_dir, wait_for_file)
from test_system_wide import sections

# Exit probes of the default (emulated) mode (tests/unit/dispatcher_catalog_test.cpp):
# aten ops, backward nodes, the engine's evaluate_function and c10d's
# collectives; and of those, the single-stepped ones (rare nodes with no
# stack protector).
EXIT_PROBES = {"torch1.13": 3598, "torch2.6": 3900}
SINGLE_STEPPED_EXITS = {"torch1.13": 1, "torch2.6": 2}
# Ops without an exit site: torch::autograd::Error::apply and the
# collectives a backend only refuses (they only throw: 8 on 1.13, 6 on 2.6),
# and 1.13's _cudnn_rnn_backward.out (a tail jump).
EXITLESS = {"torch1.13": "10", "torch2.6": "7"}
LIBTORCH_FILES = {"torch1.13": "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0",
                  "torch2.6": "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0"}
# Ops of resnet18's forward that the foreign probes sit on.
FOREIGN_OPS = ("conv2d", "relu_", "add__Tensor", "max_pool2d", "linear")


def write_uprobe_events(path, line):
    """Appends one definition to tracefs's uprobe_events (O_APPEND without a seek, and
    never O_TRUNC: truncating would remove every other tracer's uprobes)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def libtorch_path(torch_env):
    return torch_env.root + LIBTORCH_FILES[torch_env.id]


def file_offsets(path, structs):
    """{struct: file offset of at::_ops::<struct>::call} (readelf, as perf probe computes it)."""
    sections_out = subprocess.run(["readelf", "-W", "-S", path], capture_output=True, text=True, check=True).stdout
    text = next(line for line in sections_out.splitlines() if " .text " in line).split()
    i = text.index(".text")
    addr, offset = int(text[i + 2], 16), int(text[i + 3], 16)
    symbols = subprocess.run(["readelf", "-W", "--dyn-syms", path], capture_output=True, text=True,
                             check=True).stdout
    out = {}
    for struct in structs:
        mangled = f"_ZN2at4_ops{len(struct)}{struct}4callE"
        value = next(int(line.split()[1], 16) for line in symbols.splitlines()
                     if line.split() and line.split()[-1].startswith(mangled))
        out[struct] = value - addr + offset
    return out


def region_counts_are_torchs(gp, workdir, context):
    torch_calls = {name: v["count"] for name, v in load_torch_ops(Path(workdir) / "torch_ops.json").items()}
    table = parse_table(gp.stdout())
    assert table.calls() == torch_calls, (
        f"{context}: counts differ from torch.profiler's:\n{describe_count_diff(table.calls(), torch_calls)}\n"
        f"{table.text}")
    return table


def check_probe_sites(gp, torch_env):
    stderr = gp.stderr()
    tracing = parse_tracing_line(stderr)
    assert tracing["exit_probes"] == EXIT_PROBES[torch_env.id], stderr
    assert tracing["single_stepped"] == SINGLE_STEPPED_EXITS[torch_env.id], stderr
    # -v: every entry site is one the kernel emulates (a push, after endbr64
    # on 2.6) but those of the functions that only throw (Error::apply, the
    # collectives a backend refuses).
    stepped = int(EXITLESS[torch_env.id]) - (1 if torch_env.id == "torch1.13" else 0)  # not the tail jump
    assert re.search(rf"^gpuprof: \d+ schemas read; \d+ ops without a ret; {stepped} entries single-stepped;",
                     stderr, re.M), stderr
    # -v names the library's own exit-less ops; none was called.
    exitless = re.findall(r"^gpuprof: (\d+) of \d+ ops ha(?:s|ve) no exit probe", stderr, re.M)
    assert exitless == [EXITLESS[torch_env.id]], stderr
    assert "without an exit probe" not in stderr, stderr


def heavy_rows_have_time(table):
    # The convolutions are most of resnet18's time: an op whose calls all
    # ended "by unwinding" at the next event would show ~0 self time.
    assert table.rows["aten::mkldnn_convolution"].self_cpu_pct > 30, table.text
    assert not [n for n in table.notes if "exception unwinding" in n], table.text


def test_two_sessions_on_one_target(procs, workdir, tmp_path, torch_env):
    target = procs.start_workload("region.py", workdir, "--workload", "resnet18", torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    everything = tmp_path / "all.gpuprof"
    system = procs.start_gpuprof("record", "-a", "-q", "-o", everything, "--row-limit", "-1", name="system")
    system.wait_for_stderr(rf"^gpuprof: process {pid} \(python3\) runs ", timeout=120, watch=[target])
    gp = procs.start_gpuprof("record", "-p", pid, "-v", "-o", tmp_path / "one.gpuprof", "--row-limit", "-1")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target, system])
    touch(workdir, "go")
    wait_for_file(workdir, "region-done", timeout=120, watch=[target, gp, system])
    for session in (gp, system):
        session.send(signal.SIGINT)
        assert session.wait(timeout=60) == 0, session.describe()
    touch(workdir, "dump")
    assert target.wait(timeout=60) == 0, target.describe()

    check_probe_sites(gp, torch_env)
    heavy_rows_have_time(region_counts_are_torchs(gp, workdir, "record -p beside record -a"))
    report = run_gpuprof("report", everything, "--pid", str(pid), "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    _, text = sections(report.stdout)[pid]
    torch_calls = {name: v["count"] for name, v in load_torch_ops(workdir / "torch_ops.json").items()}
    system_table = parse_table(text)
    assert system_table.calls() == torch_calls, (
        f"record -a beside record -p:\n{describe_count_diff(system_table.calls(), torch_calls)}")
    heavy_rows_have_time(system_table)


@pytest.fixture
def foreign_uprobes(torch_env):
    """Legacy (perf probe style) uprobes on op entries of the target's libtorch, enabled for every process."""
    tracefs = tracefs_dir()
    path = libtorch_path(torch_env)
    group = "gpuprof_test"
    events = tracefs / "uprobe_events"
    names = []
    try:
        for struct, offset in file_offsets(path, FOREIGN_OPS).items():
            name = f"op_{struct}_{torch_env.id.replace('.', '_')}"
            write_uprobe_events(events, f"p:{group}/{name} {path}:{offset:#x}\n")
            names.append(name)
            (tracefs / "events" / group / name / "enable").write_text("1")
        yield names
    finally:
        for name in names:
            enable = tracefs / "events" / group / name / "enable"
            if enable.exists():
                enable.write_text("0")
            write_uprobe_events(events, f"-:{group}/{name}\n")


def test_beside_a_foreign_uprobe(procs, workdir, tmp_path, torch_env, foreign_uprobes):
    run = run_profiled_region(procs, "region.py", workdir, tmp_path / "one.gpuprof", "--workload", "resnet18",
                              gpuprof_args=("-v",), torch_env=torch_env)
    check_probe_sites(run.gpuprof, torch_env)
    table = region_counts_are_torchs(run.gpuprof, workdir, "record -p beside legacy uprobes")
    heavy_rows_have_time(table)
    # The foreign probes fired (they were really there) and still are.
    hits = (tracefs_dir() / "uprobe_profile").read_text()
    for name in foreign_uprobes:
        m = re.search(rf"\b{name}\s+(\d+)", hits)
        assert m and int(m.group(1)) > 0, hits

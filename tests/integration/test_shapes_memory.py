"""--record-shapes and --profile-memory against torch.profiler on the same run.

One resnet18 forward pass (batch 5, the recipe's workload) under
torch.profiler(record_shapes=True, profile_memory=True) while gpuprof records
it with --record-shapes --profile-memory: for every (op, input shapes) group
torch prints, gpuprof prints the same shapes string and the same call count,
and per op CPU Mem and Self CPU Mem agree within 1%.

torch.profiler attributes memory by time interval at microsecond
granularity: a record counts for an op when its microsecond lies in the op's
[start_us, start_us + duration_us]. A record taken in the microsecond an op
(or an op nested in it) starts or ends, or the one after it ends, can thereby
count for the op or for its neighbour, whichever the truncation favours:
torch's own numbers for short nested ops (aten::empty inside empty_like,
~1-3 us) move by a whole tensor from run to run (1.5 MB of aten::empty's 97
MB in one run). gpuprof attributes each allocation to the op running on the
allocating thread, exactly. So each figure is compared within 1%, plus the
bytes of the records that torch's own data shows to be on such a boundary
(computed from torch's raw events of the same run; printed).
"""
import json
import re

import pytest

from conftest import TORCH_ENV_IDS, TORCH_ENVS, resnet_region_run, run_gpuprof, torch_table_name
from test_report_memory import report_as_whole

MEM_TOLERANCE = 0.01  # relative, per op, as the issue asks
_MEM_UNITS = {"b": 1, "Kb": 1024, "Mb": 1024 ** 2, "Gb": 1024 ** 3}


def parse_memory(text):
    """torch's _format_memory -> (bytes, half of the printed resolution)."""
    m = re.fullmatch(r"(-?[\d.]+) (b|Kb|Mb|Gb)", text.strip())
    assert m, f"not a memory size: {text!r}"
    unit = _MEM_UNITS[m.group(2)]
    return float(m.group(1)) * unit, (0 if unit == 1 else 0.005 * unit)


def boundary_bytes(raw):
    """{op name: (total, self) bytes torch may have attributed either way}.

    For each op event: the CPU memory records whose microsecond is the
    start, the end, or the microsecond after the end of the event (total),
    or of the event or any event nested in it on the same interval (self).
    """
    intervals = raw["intervals"]
    by_us = {}
    for us, nbytes in raw["records"]:
        by_us[us] = by_us.get(us, 0) + abs(nbytes)
    out = {}
    for name, start, end in intervals:
        edges = {start, end, end + 1}
        nested_edges = set(edges)
        for _, s2, e2 in intervals:
            if start <= s2 and e2 <= end:
                nested_edges |= {s2, e2, e2 + 1}
        total, self_ = out.get(name, (0, 0))
        out[name] = (total + sum(by_us.get(us, 0) for us in edges),
                     self_ + sum(by_us.get(us, 0) for us in nested_edges))
    return out


def parse_any_table(text):
    """A key_averages().table()-style table -> (headers, list of {header: cell}).

    Cells are separated by two or more spaces (torch's column spacing);
    labels and values contain single spaces at most ("Self CPU %",
    "4.45 Mb", "[[5, 3], []]"). Header labels wider than their column
    ("Self CUDA Mem" in 12) overflow it in torch's table too, so the
    header is split the same way rather than by the separator's dashes.
    """
    lines = text.splitlines()
    start = next(i for i in range(len(lines) - 2)
                 if lines[i].startswith("-") and "Name" in lines[i + 1])
    sep = lines[start]
    headers = re.split(r"\s{2,}", lines[start + 1].strip())
    rows = []
    for line in lines[start + 3:]:
        if line == sep:
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(headers), f"{line!r} does not have the {len(headers)} columns {headers}"
        rows.append(dict(zip(headers, cells)))
    return headers, rows


# The TensorImpl layout gpuprof must calibrate on each torch (measured by
# hand: research in docs/shapes-memory.md).
TENSOR_LAYOUTS = {"torch1.13": "ndim @72, sizes @80, numel @168", "torch2.6": "ndim @64, sizes @72, numel @160"}


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def shapes_run(request, tmp_path_factory):
    with resnet_region_run(tmp_path_factory, f"shapes-memory-{request.param}", "--shapes-memory",
                           gpuprof_args=("--record-shapes", "--profile-memory"), torch_env=request.param) as run:
        run.torch_env = request.param
        run.torch_groups = json.loads((run.workdir / "torch_shapes.json").read_text())
        raw = json.loads((run.workdir / "torch_memory_raw.json").read_text())
        run.torch_boundary = boundary_bytes(raw)
        run.torch_memory_records = raw["records"]
        yield run


def test_nothing_lost_and_layout_calibrated(shapes_run):
    stderr = shapes_run.gpuprof.stderr()
    assert shapes_run.stopped["lost"] == 0, stderr
    assert shapes_run.stopped["mem_lost"] == 0, stderr
    # gpuprof's window holds torch's (it attaches before the region and stops
    # after it, and nothing allocates outside the region): every allocator
    # call torch recorded, and no other.
    print(shapes_run.stopped, len(shapes_run.torch_memory_records))
    assert shapes_run.stopped["mem_events"] == len(shapes_run.torch_memory_records), stderr
    assert f"TensorImpl layout: {TENSOR_LAYOUTS[shapes_run.torch_env.id]}" in stderr, stderr


def test_same_shapes_and_counts_per_group(shapes_run):
    # Streamed (a forest waits for its shape pairs, its memory joined as it
    # comes): the whole read's bytes.
    report = report_as_whole(shapes_run.record_file, "--group-by-input-shape", "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    headers, rows = parse_any_table(report.stdout)
    assert headers[-1] == "Input Shapes", headers
    ours = {(r["Name"], r["Input Shapes"]): int(r["# of Calls"]) for r in rows}
    theirs = {(torch_table_name(g["key"]), g["input_shapes"]): g["count"]
              for g in shapes_run.torch_groups}
    assert any(shapes.startswith("[[5, 3, 224, 224], [64, 3, 7, 7]") for _, shapes in theirs), theirs
    # Sizes kept out of line (more than 5 dimensions) are read too.
    assert ours.get(("aten::sum", "[[1, 2, 3, 4, 5, 6], []]")) == 1, report.stdout
    # Every group torch prints, gpuprof prints with the same count; gpuprof's
    # table cuts shapes at 80 characters as torch's does, so compare cut.
    theirs_cut = {(name, shapes[:80]): count for (name, shapes), count in theirs.items()}
    missing = {k: v for k, v in theirs_cut.items() if ours.get(k) != v}
    extra = {k: v for k, v in ours.items() if k not in theirs_cut}
    assert not missing and not extra, (
        "groups differing from torch.profiler's (torch's count -> ours):\n" +
        "\n".join(f"  {k}: {v} -> {ours.get(k)}" for k, v in sorted(missing.items())) +
        "\nonly in gpuprof:\n" + "\n".join(f"  {k}: {v}" for k, v in sorted(extra.items())) +
        f"\n{report.stdout}")
    assert len(theirs) >= 20


def test_cpu_memory_per_op_within_one_percent(shapes_run):
    # Streamed (allocator events joined as they come): the whole read's bytes.
    report = report_as_whole(shapes_run.record_file, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    headers, rows = parse_any_table(report.stdout)
    assert "CPU Mem" in headers and "Self CPU Mem" in headers, headers
    ours = {r["Name"]: r for r in rows}
    torch_ops = shapes_run.torch_ops
    checked, off = [], []
    self_sum_torch = self_sum_ours = 0
    for name, t in torch_ops.items():
        if name == "[memory]":
            continue
        assert name in ours, f"{name} missing from gpuprof's table:\n{report.stdout}"
        for column, key in (("CPU Mem", "cpu_memory_usage"), ("Self CPU Mem", "self_cpu_memory_usage")):
            value, resolution = parse_memory(ours[name][column])
            expected = t[key]
            ambiguous = shapes_run.torch_boundary.get(name, (0, 0))[column == "Self CPU Mem"]
            checked.append(f"  {name} {column}: torch {expected} b, gpuprof {ours[name][column]}"
                           f" (torch's boundary records: {ambiguous} b)")
            if abs(value - expected) > MEM_TOLERANCE * abs(expected) + ambiguous + resolution:
                off.append(checked[-1])
        self_sum_torch += t["self_cpu_memory_usage"]
        self_sum_ours += parse_memory(ours[name]["Self CPU Mem"])[0]
    print("\n".join(checked))
    assert sum(abs(t["cpu_memory_usage"]) for t in torch_ops.values()) > 10 * 1024 ** 2, torch_ops
    assert not off, "memory differs from torch.profiler's by more than 1%:\n" + "\n".join(off)
    # The allowance only applies where torch's own data is ambiguous: where
    # it is not (no boundary record), the figures are compared strictly, and
    # that must be most of them, or this test would prove little.
    needed = [line for line in checked if "boundary records: 0 b" not in line]
    strict = len(checked) - len(needed)
    print(f"{len(checked)} figures compared, {strict} with no torch boundary record (strictly within 1%)")
    assert strict >= len(checked) // 2, checked


def format_memory(nbytes):
    """torch's _format_memory (torch/autograd/profiler_util.py), as the table prints sizes."""
    for unit in ("Gb", "Mb", "Kb"):
        if abs(nbytes) >= _MEM_UNITS[unit]:
            return f"{nbytes / _MEM_UNITS[unit]:.2f} {unit}"
    return f"{nbytes} b"


def max_running_sum(records):
    """The highest level of sum(nbytes) over torch's memory records, in their order."""
    level, peak = 0, None
    for _, nbytes in records:
        level += nbytes
        peak = level if peak is None else max(peak, level)
    return peak


def test_peak_is_torchs(shapes_run):
    # docs/shapes-memory.md: the peak is the highest net level of the CPU
    # tensor bytes the recording saw allocated and freed. torch records the
    # same allocator calls (ProfiledCPUMemoryReporter) in the same window,
    # frees included only for blocks it saw allocated: its running sum
    # (records in torch's order, which is time order on this one thread)
    # reaches the same maximum.
    records = shapes_run.torch_memory_records
    assert [us for us, _ in records] == sorted(us for us, _ in records), "torch's records are not in time order"
    expected = max_running_sum(records)
    report = report_as_whole(shapes_run.record_file)
    assert report.returncode == 0, report.stderr
    peak = re.search(r"^CPU tensor memory peak \(net of what the recording saw allocated and freed\): "
                     r"(-?[\d.]+ [KMG]?b) at ([\d.]+) s after the start, in (\S+)$", report.stdout, re.M)
    assert peak, report.stdout
    print(f"torch's peak {expected} b; gpuprof's line: {peak.group(0)}")
    assert peak.group(1) == format_memory(expected), (peak.group(0), expected)


def test_memory_sort_keys_need_memory(shapes_run, tmp_path):
    every = run_gpuprof("report", shapes_run.record_file, "--sort-by", "self_cpu_memory_usage", "--row-limit", "-1")
    assert every.returncode == 0, every.stderr
    ok = run_gpuprof("report", shapes_run.record_file, "--sort-by", "self_cpu_memory_usage", "--row-limit", "3")
    assert ok.returncode == 0, ok.stderr
    _, all_rows = parse_any_table(every.stdout)
    _, rows = parse_any_table(ok.stdout)
    assert len(all_rows) > 3, every.stdout  # or the limit would cut nothing
    assert rows == all_rows[:3], ok.stdout  # exactly the first 3 of the full sorted table
    values = [parse_memory(r["Self CPU Mem"])[0] for r in all_rows]
    assert values == sorted(values, reverse=True), every.stdout


def test_launch_mode_shapes_and_memory_from_the_first_op(tmp_path, torch_env):
    # In launch mode the loader maps libc10 after libtorch_cpu: the command
    # is stopped there too, so the first ops already have their allocations
    # and undefined tensors read as [] (a None bias passed on as an undefined
    # tensor, not torch's [0]-sized stand-in).
    out = tmp_path / "launch.gpuprof"
    code = ("import torch\n"
            "conv = torch.nn.Conv2d(3, 4, 3, bias=False)\n"
            "with torch.no_grad():\n"
            "    conv(torch.randn(2, 3, 8, 8))\n")
    result = run_gpuprof("record", "-q", "--record-shapes", "--profile-memory", "-o", out,
                         "--", *torch_env.python, "-c", code, timeout=180)
    assert result.returncode == 0, result.stderr
    report = report_as_whole(out, "--group-by-input-shape", "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    _, rows = parse_any_table(report.stdout)
    groups = {(r["Name"], r["Input Shapes"]): r for r in rows}
    conv = groups.get(("aten::convolution", "[[2, 3, 8, 8], [4, 3, 3, 3], [], [], [], [], [], [], []]"))
    assert conv, report.stdout
    assert conv["# of Calls"] == "1" and conv["CPU Mem"] == "1.12 Kb", report.stdout  # 2*4*6*6 floats, 4 bytes each
    # The very first ops (the module's parameter init) have shapes too.
    assert ("aten::empty", "[[], [], [], [], [], []]") in groups, report.stdout
    assert not [k for k in groups if "?" in k[1]], report.stdout

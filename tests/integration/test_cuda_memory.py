"""The CUDA memory path of --profile-memory, without a GPU.

PyTorch's CUDA caching allocator reports every block it hands out or takes
back through c10::reportMemoryUsageToProfiler (libc10), profiler or not;
gpuprof probes that function. Here the stand-in libtorch_cpu
(tests/fake_libtorch/fake_cuda_memory.cpp) calls the real one, in Debian's
libc10, from inside dispatcher-shaped ops, with a CUDA device (cuda:1), so
the probe, the attribution to the innermost op, the CUDA columns and the
peak are exercised exactly as on a GPU machine. One step:

  aten::cuda_step        reports +512 KiB itself, and a CPU-device report
                         (ignored: CPU memory comes from the CPU allocator)
    aten::cuda_malloc    +3 MiB
    aten::cuda_malloc    +1 MiB
    aten::cuda_free      -1 MiB
"""
import re

import pytest

from chrome_trace_checks import export_chrome_trace, innermost_call, op_calls, structural_problems, wrote_line
from conftest import FAKE_LIBTORCH, run_gpuprof, run_program
from test_report_memory import report_as_whole
from test_shapes_memory import parse_any_table

DRIVER = FAKE_LIBTORCH / "memory_driver"
STEPS = 10
KIB, MIB = 1 << 10, 1 << 20


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    assert DRIVER.exists(), f"{DRIVER} missing: run make"
    unprofiled = run_program(DRIVER, str(STEPS))
    assert unprofiled.returncode == 0, unprofiled.stderr
    out = tmp_path_factory.mktemp("cuda-memory") / "cuda.gpuprof"
    result = run_gpuprof("record", "--profile-memory", "-o", str(out), "--", DRIVER, str(STEPS))
    assert result.returncode == 0, result.stderr
    return unprofiled, result, out


def test_target_output_unchanged(recorded):
    unprofiled, result, _ = recorded
    assert unprofiled.stdout in result.stdout, result.stdout


def test_cuda_columns_attribute_to_the_innermost_op(recorded):
    _, result, _ = recorded
    headers, rows = parse_any_table(result.stdout)
    assert headers[-5:] == ["CPU Mem", "Self CPU Mem", "CUDA Mem", "Self CUDA Mem", "# of Calls"], headers
    table = {r["Name"]: r for r in rows}
    mb = STEPS  # each step's MiB figures, times the steps, print as "N.00 Mb"
    expected = {
        "aten::cuda_step": (f"{3.5 * mb:.2f} Mb", f"{0.5 * mb:.2f} Mb", STEPS),
        "aten::cuda_malloc": (f"{4 * mb:.2f} Mb", f"{4 * mb:.2f} Mb", 2 * STEPS),
        "aten::cuda_free": (f"{-1 * mb:.2f} Mb", f"{-1 * mb:.2f} Mb", STEPS),
    }
    for name, (total, self_, calls) in expected.items():
        row = table.get(name)
        assert row, f"{name} missing:\n{result.stdout}"
        assert (row["CUDA Mem"], row["Self CUDA Mem"], int(row["# of Calls"])) == (total, self_, calls), (
            f"{name}:\n{result.stdout}")
        # The CPU-device report went nowhere: no CPU memory anywhere.
        assert (row["CPU Mem"], row["Self CPU Mem"]) == ("0 b", "0 b"), result.stdout
    assert "[memory]" not in table, result.stdout
    stopped = re.search(r"; (\d+) memory events, (\d+) lost;", result.stderr)
    assert stopped and stopped.groups() == (str(4 * STEPS), "0"), result.stderr


def test_cuda_peak_and_sort_key(recorded):
    _, result, out = recorded
    # Totals as the allocator keeps them: the last step's 1 MiB block tops it.
    peak = re.search(r"^CUDA memory peak \(device 1, allocated\): (\S+ \S+) at [\d.]+ s after the start, "
                     r"in (\S+)$", result.stdout, re.M)
    assert peak, result.stdout
    assert peak.groups() == (f"{3.5 * (STEPS - 1) + 4:.2f} Mb", "aten::cuda_malloc"), peak.group(0)
    # Streamed (allocator events joined as they come): the whole read's bytes.
    report = report_as_whole(str(out), "--sort-by", "self_cuda_memory_usage")
    assert report.returncode == 0, report.stderr
    _, rows = parse_any_table(report.stdout)
    assert [r["Name"] for r in rows] == ["aten::cuda_malloc", "aten::cuda_step", "aten::cuda_free"], report.stdout


def test_memory_sort_key_without_memory_is_refused(tmp_path):
    out = tmp_path / "plain.gpuprof"
    result = run_gpuprof("record", "-q", "-o", str(out), "--", DRIVER, "2")
    assert result.returncode == 0, result.stderr
    report = run_gpuprof("report", str(out), "--sort-by", "cuda_memory_usage")
    assert report.returncode == 2, report
    assert report.stderr.strip() == ("gpuprof: error: sort key cuda_memory_usage needs a recording made "
                                     "with --profile-memory"), report.stderr
    grouped = run_gpuprof("report", str(out), "--group-by-input-shape")
    assert grouped.returncode == 2 and "--record-shapes" in grouped.stderr, grouped


def expected_cuda_levels():
    """(allocator total after the event, the op that made it) for each CUDA
    allocator event of the run, in order: per step +3 MiB, +1 MiB, -1 MiB in
    the nested ops, then +512 KiB in aten::cuda_step itself."""
    levels = []
    for step in range(STEPS):
        base = step * (3 * MIB + 512 * KIB)
        levels += [(base + 3 * MIB, "aten::cuda_malloc"), (base + 4 * MIB, "aten::cuda_malloc"),
                   (base + 3 * MIB, "aten::cuda_free"), (base + 3 * MIB + 512 * KIB, "aten::cuda_step")]
    return levels


def test_chrome_trace_counter_is_the_allocators_total(recorded, tmp_path):
    # docs/chrome-trace.md: a --profile-memory recording's trace has a
    # counter (ph "C") `CUDA memory (device N)`, the caching allocator's
    # total, one value per allocator event, at the event's moment. The run's
    # totals are known (the stand-in keeps them as the allocator does), so
    # the values are exact; the CPU-device report makes no counter.
    _, result, out = recorded
    trace = tmp_path / "memory.json"
    doc, export = export_chrome_trace(out, trace)
    assert structural_problems(doc) == []
    _, _, counts, _ = wrote_line(export.stderr)
    # 4 op calls and 4 CUDA allocator events a step, nothing else.
    assert {k: v for k, v in counts.items() if k != "events"} == {
        "calls": 4 * STEPS, "modules": 0, "samples": 0, "gpu": 0, "flows": 0, "counters": 4 * STEPS}, export.stderr
    stopped = re.search(r"; (\d+) memory events, 0 lost;", result.stderr)
    assert stopped and int(stopped.group(1)) == counts["counters"], result.stderr

    calls = op_calls(doc)
    (thread,) = {c["tid"] for c in calls}  # the driver runs its ops on one thread
    (pid,) = {c["pid"] for c in calls}
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert all((e["name"], e["cat"], e["pid"]) == ("CUDA memory (device 1)", "memory", pid) for e in counters), \
        counters[:4]
    assert [e["ts"] for e in counters] == sorted(e["ts"] for e in counters), "counter values out of time order"
    # Counters sit on no thread: the op running at each one's moment is looked
    # up on the driver's thread.
    levels = [(e["args"]["bytes"], innermost_call(doc, {**e, "tid": thread})) for e in counters]
    assert [(level, call and call["name"]) for level, call in levels] == expected_cuda_levels(), levels[:8]
    # The peak the table's footer names is the first counter value at the top.
    top = max(e["args"]["bytes"] for e in counters)
    first_at_top = next(e for e in counters if e["args"]["bytes"] == top)
    assert (f"CUDA memory peak (device 1, allocated): {top / MIB:.2f} Mb at {first_at_top['ts'] / 1e6:.3f} s "
            "after the start, in aten::cuda_malloc") in result.stdout.splitlines(), result.stdout

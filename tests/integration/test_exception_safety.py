"""C++ exceptions thrown through traced ops are safe and accounted for.

gpuprof uses no return probes (uretprobes abort the target when a C++
exception unwinds through the probed frame); an op left by an exception is
closed from the stack pointers instead. The target throws c10::Error (and a
few other errors) through traced ops 1000+ times while gpuprof is attached:
it must behave exactly as without gpuprof, and gpuprof must count the calls
and say that they ended by exception unwinding.
"""
import collections
import json
import re

import pytest

from chrome_trace_checks import span_ns, x_events
from conftest import (RECORD_VARIANTS, TORCH_ENV_IDS, TORCH_ENVS, parse_stopped_line, parse_table,
                      parse_tracing_line, run_gpuprof, run_workload, touch, wait_for_file)

MM_ERRORS = 1000
ERROR_REPEATS = 10  # exceptions.py's repeats of each other error kind
# The calls each error kind of exceptions.py throws through.
THROWING_OPS = {"mm_shape": ["aten::mm"], "bad_view": ["aten::view"], "index_out_of_range": ["aten::index_select"],
                "bad_cast": ["aten::add_"], "nested_linear": ["aten::linear", "aten::matmul", "aten::mm"]}


def trace_calls(record_file, trace_path):
    """(the trace's time zero in CLOCK_MONOTONIC ns, {op name: [(start, end) ns since then]})."""
    made = run_gpuprof("report", record_file, "--chrome-trace", trace_path)
    assert made.returncode == 0, made.stderr
    doc = json.loads(trace_path.read_text())
    zero = int(re.search(r"CLOCK_MONOTONIC (\d+) ns", doc["otherData"]["time zero"]).group(1))
    calls = collections.defaultdict(list)
    for e in x_events(doc, "cpu_op"):
        calls[e["name"]].append(span_ns(e))
    return zero, calls


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def baseline(request, tmp_path_factory):
    """The workload's result without gpuprof, on one torch: (torch_env, result, stdout)."""
    workdir = tmp_path_factory.mktemp(f"exceptions-baseline-{request.param}")
    touch(workdir, "go")
    run = run_workload(request.param, "exceptions.py", workdir, MM_ERRORS, timeout=120)
    assert run.returncode == 0, run.stderr
    return request.param, json.loads((workdir / "result.json").read_text()), run.stdout


@pytest.mark.parametrize("variant", RECORD_VARIANTS)
def test_exceptions_through_traced_ops(procs, workdir, tmp_path, baseline, variant):
    exit_mode, record_args = RECORD_VARIANTS[variant]
    torch_env, baseline_result, baseline_stdout = baseline
    record_file = tmp_path / "exceptions.gpuprof"
    target = procs.start_workload("exceptions.py", workdir, MM_ERRORS, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    gp = procs.start_gpuprof("record", "-p", pid, "-o", record_file, "--row-limit", "-1", *record_args)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    assert parse_tracing_line(gp.stderr())["exit_mode"] == exit_mode, gp.stderr()
    touch(workdir, "go")

    # The target runs to its end with gpuprof attached; its exit stops gpuprof.
    assert target.wait(timeout=180) == 0, target.describe()
    assert gp.wait(timeout=60) == 0, gp.describe()
    stopped = parse_stopped_line(gp.stderr())
    assert stopped["reason"] == "target exited", gp.stderr()
    assert stopped["lost"] == 0, gp.stderr()

    # The target saw exactly what it sees without gpuprof: every exception
    # caught, the same error messages, the same results.
    result = json.loads((workdir / "result.json").read_text())
    assert result["caught"] == {"mm_shape": MM_ERRORS, "bad_view": ERROR_REPEATS,
                                "index_out_of_range": ERROR_REPEATS, "bad_cast": ERROR_REPEATS,
                                "nested_linear": ERROR_REPEATS}
    assert result == baseline_result
    assert result["messages"]["mm_shape"] == ["mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)"]
    assert target.stdout() == baseline_stdout

    # gpuprof counted the calls the exceptions left, and said so. The nested
    # case throws from aten::mm under aten::matmul under aten::linear.
    table = parse_table(gp.stdout())
    calls = table.calls()
    assert calls.get("aten::mm") == MM_ERRORS + ERROR_REPEATS, table.text  # the workload's only mm calls
    assert calls.get("aten::view") == ERROR_REPEATS, table.text
    assert calls.get("aten::index_select") == ERROR_REPEATS, table.text
    assert calls.get("aten::add_") == ERROR_REPEATS, table.text
    assert calls.get("aten::linear") == ERROR_REPEATS, table.text
    assert calls.get("aten::matmul") == ERROR_REPEATS, table.text
    unwound = [int(m.group(1)) for note in table.notes
               if (m := re.match(r"gpuprof: (\d+) calls? ended by exception unwinding", note))]
    assert unwound, f"no exception-unwinding note:\n{gp.stdout()}"
    # Exactly the throwing calls: mm, view, index_select, add_, and
    # linear + matmul + mm for the nested case.
    assert unwound[0] == MM_ERRORS + 3 * ERROR_REPEATS + 3 * ERROR_REPEATS, gp.stdout()
    # An unwound call ends at the catch: nothing may be left open, and no
    # timing may come out negative or absurd.
    assert not [n for n in table.notes if "still running" in n], gp.stdout()
    # Each throwing call lies inside the Python statement that threw it
    # (entered after the workload's clock read before it, ended at the catch,
    # before the read in its except block): the times cannot be known
    # exactly, but this is as tight as the mechanism allows.
    brackets = json.loads((workdir / "brackets.json").read_text())
    zero, calls_by_name = trace_calls(record_file, tmp_path / "exceptions.json")
    for kind, ops in THROWING_OPS.items():
        for op in ops:
            spans = sorted((zero + start, zero + end) for start, end in calls_by_name[op])
            inside = [[s for s in spans if t0 <= s[0] <= s[1] <= t1] for t0, t1 in brackets[kind]]
            assert [len(found) for found in inside] == [1] * len(brackets[kind]), (kind, op)
    # The table's times are those calls': no more than their brackets.
    mm_brackets_us = sum(t1 - t0 for kind in ("mm_shape", "nested_linear") for t0, t1 in brackets[kind]) / 1e3
    assert 0 < table.rows["aten::mm"].cpu_total_us <= mm_brackets_us, (mm_brackets_us, table.text)

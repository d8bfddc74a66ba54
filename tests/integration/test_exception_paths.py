"""Exception paths PyTorch cannot be made to take on demand, in every exit mode.

A stand-in libtorch_cpu (tests/fake_libtorch, built by `make`) exports
dispatcher-shaped entry points that throw inside one traced op and catch
inside another, take a backtrace() from under ten traced frames, and sit at a
cancellation point while their thread is cancelled. gpuprof launches the
driver with its probes on that library; the driver's output must be exactly
that of a run without gpuprof, and the table must count every call.
"""
import re

import pytest

from conftest import FAKE_LIBTORCH, run_gpuprof, run_program

DRIVER = FAKE_LIBTORCH / "driver"
CALLS = 2000


@pytest.fixture(scope="module")
def unprofiled():
    assert DRIVER.exists(), f"{DRIVER} missing: run make"
    result = run_program(DRIVER, str(CALLS))
    assert result.returncode == 0, result.stderr
    assert "sleeper cancelled" in result.stdout
    return result.stdout


def table_rows(text):
    rows = {}
    for line in text.splitlines():
        m = re.match(r"^\s+(aten::\S+)\s+.*\s(\d+)\s*$", line)
        if m:
            rows[m.group(1)] = int(m.group(2))
    return rows


@pytest.mark.parametrize("exit_mode", ["emulated", "ret"])
def test_throw_catch_backtrace_and_cancel_under_gpuprof(tmp_path, unprofiled, exit_mode):
    out = tmp_path / "fake.gpuprof"
    result = run_gpuprof("record", "--exit-mode", exit_mode, "-o", str(out), "--", DRIVER, str(CALLS))
    context = f"stdout:\n{result.stdout}\nstderr:\n{result.stderr}"
    assert result.returncode == 0, context
    # The driver's own lines are unchanged: same sums, every exception caught
    # in the traced catcher, the same backtrace depth (a swapped return
    # address would cut it short), and the thread cancelled mid-op.
    driver_lines = [l for l in result.stdout.splitlines()
                    if l.startswith(("catcher ", "backtrace ", "sleeper "))]
    assert driver_lines == unprofiled.splitlines(), context
    assert re.search(rf"exits {'emulated' if exit_mode == 'emulated' else 'on ret'} \(", result.stderr), context
    rows = table_rows(result.stdout)
    assert rows.get("aten::catcher") == CALLS, context
    assert rows.get("aten::thrower") == CALLS, context
    # The recursive backtracer is one call after torch's same-name fold.
    assert rows.get("aten::backtracer") == 1, context
    m = re.search(r"^gpuprof: (\d+) calls ended by exception unwinding", result.stdout, re.M)
    assert m and int(m.group(1)) == CALLS // 2, context
    # The cancelled sleeper never returned: it is reported, not counted.
    assert re.search(r"^gpuprof: 1 call still running when recording stopped", result.stdout, re.M), context

    report = run_gpuprof("report", str(out))
    assert report.returncode == 0, report.stderr
    assert table_rows(report.stdout) == rows

"""The target replaces itself by exec while it is recorded: gpuprof ends
cleanly with a valid file either way, and the exec'd program runs right.

Probes belong to the process (pid) and the library file (inode), not to the
image: an exec'd program that maps the same libtorch_cpu again is traced
on (the op table is the same file's); one without torch just runs, and the
recording ends when it exits.
"""
import pytest

from conftest import parse_table, run_gpuprof, touch, wait_for_file


@pytest.mark.parametrize("into", ["torch", "sleep"])
def test_exec_mid_recording(procs, workdir, tmp_path, into):
    target = procs.start_workload("exec_into.py", workdir, into)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "e.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-o", out)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    assert target.wait(timeout=120) == 0, target.describe()  # the exec'd image's own checks passed
    assert gp.wait(timeout=60) == 0, gp.describe()
    assert "gpuprof: stopped (target exited)" in gp.stderr()
    report = run_gpuprof("report", out)
    assert report.returncode == 0 and "incomplete" not in report.stderr, report.stderr
    calls = parse_table(report.stdout).calls()
    assert calls.get("aten::add") == 500, calls
    if into == "torch":
        assert (workdir / "done").read_text() == "3000"
        assert calls.get("aten::cumsum") == 3000, calls
    else:
        assert "aten::cumsum" not in calls

"""record --follow-forks: the target's children (and theirs) are traced from
the moment gpuprof attaches to them; without it they run untraced. Either
way every process finishes with correct results."""
import json

import pytest

from conftest import parse_table, run_gpuprof, touch, wait_for_file


@pytest.mark.parametrize("follow", [True, False])
def test_children_are_traced_only_when_followed(procs, workdir, tmp_path, follow, torch_env):
    target = procs.start_workload("forking.py", workdir, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "f.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-o", out, *(["--follow-forks"] if follow else []))
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    # The children make their calls only once gpuprof follows them (its
    # `following PID` line comes after their probes are in), so that all of
    # them are traced; not followed, they go at once.
    for role in ("child", "grandchild"):
        child_pid = int(wait_for_file(workdir, f"pid-{role}", timeout=60, watch=[target]))
        if follow:
            gp.wait_for_stderr(rf"^gpuprof: following {child_pid} \(forked by \d+\): attach [\d.]+ ms$",
                               timeout=60, watch=[target])
        touch(workdir, f"go-{role}")
    assert target.wait(timeout=120) == 0, target.describe()  # every process's own checks passed
    assert gp.wait(timeout=60) == 0, gp.describe()  # stops when the target exits
    calls = parse_table(gp.stdout()).calls()
    assert calls.get("aten::add") == int((workdir / "calls-parent").read_text())
    made = {"aten::cumsum": int((workdir / "calls-child").read_text()),
            "aten::exp": int((workdir / "calls-grandchild").read_text())}
    if not follow:
        assert "aten::cumsum" not in calls and "aten::exp" not in calls, gp.stdout()
        assert "following" not in gp.stderr()
        return
    assert gp.stderr().count("gpuprof: following ") == 2, gp.stderr()
    assert "2 child processes followed" in gp.stderr()
    assert {op: calls.get(op, 0) for op in made} == made, calls
    # The report shows the children's threads apart from the parent's.
    trace = tmp_path / "f.json"
    assert run_gpuprof("report", out, "--chrome-trace", trace).returncode == 0
    tids = {e["tid"] for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"}
    assert len(tids) == 3, tids

"""gpuprof's table matches torch.profiler's on the recipe workload (resnet18).

One process, one forward pass, measured by both tools at once: gpuprof is
attached (-p) before the torch.profiler region starts and stopped after it
ends, and the workload runs no op outside the region while gpuprof is
attached, so both tools see exactly the same calls.
"""
import signal

from conftest import (load_torch_ops, parse_stopped_line, parse_table, parse_tracing_line,
                      run_gpuprof, torch_percentages, touch, wait_for_file)

SELF_PCT_THRESHOLD = 5.0  # compare Self CPU % for ops at least this heavy in torch's table
SELF_PCT_TOLERANCE = 3.0  # percentage points


def describe_diff(gp_calls, torch_calls):
    lines = []
    for name in sorted(set(gp_calls) | set(torch_calls)):
        g, t = gp_calls.get(name), torch_calls.get(name)
        if g != t:
            lines.append(f"  {name}: gpuprof {g}, torch.profiler {t}")
    return "\n".join(lines)


def test_resnet18_matches_torch_profiler(procs, workdir, tmp_path):
    record_file = tmp_path / "resnet.gpuprof"
    target = procs.start_workload("resnet_region.py", workdir)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    assert pid == target.pid

    gp = procs.start_gpuprof("record", "-p", pid, "-o", record_file, "--row-limit", "-1")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    wait_for_file(workdir, "region-done", timeout=120, watch=[target, gp])

    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "dump")
    assert target.wait(timeout=60) == 0, target.describe()

    gp_stderr = gp.stderr()
    tracing = parse_tracing_line(gp_stderr)
    assert tracing["pid"] == pid
    stopped = parse_stopped_line(gp_stderr)
    assert stopped["reason"] == "interrupted"
    assert stopped["lost"] == 0, f"events lost: the comparison would be meaningless\n{gp_stderr}"

    torch_ops = load_torch_ops(workdir / "torch_ops.json")
    gp_table = parse_table(gp.stdout())
    torch_calls = {name: v["count"] for name, v in torch_ops.items()}
    gp_calls = gp_table.calls()
    assert any(name.startswith("aten::") for name in torch_calls), torch_calls

    # Same op names, same number of calls for every one of them.
    assert gp_calls == torch_calls, (
        "per-op call counts differ between gpuprof and torch.profiler "
        f"(only differing ops shown):\n{describe_diff(gp_calls, torch_calls)}\n"
        f"gpuprof table:\n{gp_table.text}")

    # Self CPU % of the heavy ops, computed from torch's JSON as its table does.
    torch_pct = torch_percentages(torch_ops)
    heavy = {name: pct for name, pct in torch_pct.items() if pct >= SELF_PCT_THRESHOLD}
    assert heavy, f"no op has >= {SELF_PCT_THRESHOLD}% self CPU in torch's profile: {torch_pct}"
    report = "\n".join(f"  {name}: torch {pct:.2f}%, gpuprof {gp_table.rows[name].self_cpu_pct:.2f}%"
                       for name, pct in sorted(heavy.items(), key=lambda kv: -kv[1]))
    print("Self CPU % of the heavy ops:\n" + report)
    for name, pct in heavy.items():
        assert abs(gp_table.rows[name].self_cpu_pct - pct) <= SELF_PCT_TOLERANCE, (
            f"{name}: Self CPU % differs by more than {SELF_PCT_TOLERANCE} points:\n{report}")

    # `gpuprof report` on the same file prints what record printed.
    report_run = run_gpuprof("report", record_file, "--row-limit", "-1")
    assert report_run.returncode == 0, report_run.stderr
    assert "warning" not in report_run.stderr, report_run.stderr
    assert report_run.stdout == gp.stdout()

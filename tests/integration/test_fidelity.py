"""gpuprof's table matches torch.profiler's on the recipe workload (resnet18).

One process, one forward pass, measured by both tools at once: gpuprof is
attached (-p) before the torch.profiler region starts and stopped after it
ends, and the workload runs no op outside the region while gpuprof is
attached, so both tools see exactly the same calls. The run happens once per
exit mode (--exit-mode emulated, the default, and ret); each test checks one
property of it.
"""
import json

import pytest

import itertools

from conftest import EXIT_MODES, TORCH_ENVS, describe_count_diff, resnet_region_run, run_gpuprof, torch_percentages

SELF_PCT_THRESHOLD = 5.0  # compare Self CPU % for ops at least this heavy in torch's table
SELF_PCT_TOLERANCE = 3.0  # percentage points


@pytest.fixture(scope="module", params=list(itertools.product(EXIT_MODES, TORCH_ENVS)),
                ids=lambda p: f"{p[0]}-{p[1]}")
def resnet_run(request, tmp_path_factory):
    exit_mode, torch_env = request.param
    with resnet_region_run(tmp_path_factory, f"fidelity-{exit_mode}-{torch_env}", torch_env=torch_env,
                           gpuprof_args=("--exit-mode", exit_mode)) as run:
        assert run.tracing["exit_mode"] == exit_mode, run.gpuprof.stderr()
        yield run


def test_no_events_lost(resnet_run):
    assert resnet_run.stopped["lost"] == 0, resnet_run.gpuprof.stderr()
    # Every call torch.profiler saw is an entry and an exit event, and
    # nothing else ran while gpuprof was attached. Against torch's raw
    # events: its table folds a same-name only child into its parent
    # (aten::div_ 2 raw, 1 row), as gpuprof's does.
    raw = json.loads((resnet_run.workdir / "torch_raw_counts.json").read_text())
    assert resnet_run.stopped["events"] == 2 * sum(raw.values()), (resnet_run.stopped, raw)


def test_same_ops_and_call_counts(resnet_run):
    torch_calls = {name: v["count"] for name, v in resnet_run.torch_ops.items()}
    gp_calls = resnet_run.table.calls()
    assert len([n for n in torch_calls if n.startswith("aten::")]) >= 20, torch_calls
    if gp_calls != torch_calls:
        # Say whether torch's table post-processing explains the difference:
        # its raw events vs its table (EventList._remove_dup_nodes folds a
        # call into a parent of the same name when it is the only child).
        raw = json.loads((resnet_run.workdir / "torch_raw_counts.json").read_text())
        raw_notes = "\n".join(f"  {name}: torch.profiler raw events {raw.get(name)}"
                               for name in sorted(set(gp_calls) | set(torch_calls))
                               if gp_calls.get(name) != torch_calls.get(name))
        pytest.fail("per-op call counts differ between gpuprof and torch.profiler's table "
                    f"(only differing ops shown):\n{describe_count_diff(gp_calls, torch_calls)}\n"
                    f"{raw_notes}\ngpuprof table:\n{resnet_run.table.text}", pytrace=False)


def test_self_cpu_share_of_heavy_ops(resnet_run):
    # torch's Self CPU %, computed from its JSON as its table does.
    torch_pct = torch_percentages(resnet_run.torch_ops)
    rows = resnet_run.table.rows
    heavy = {name: pct for name, pct in torch_pct.items() if pct >= SELF_PCT_THRESHOLD}
    assert len(heavy) >= 2, f"expected several ops >= {SELF_PCT_THRESHOLD}% self CPU in torch: {torch_pct}"
    missing = sorted(set(heavy) - set(rows))
    assert not missing, f"heavy ops missing from gpuprof's table: {missing}\n{resnet_run.table.text}"
    summary = "\n".join(f"  {name}: torch {pct:.2f}%, gpuprof {rows[name].self_cpu_pct:.2f}%"
                        for name, pct in sorted(heavy.items(), key=lambda kv: -kv[1]))
    print("Self CPU % of the heavy ops:\n" + summary)
    off = [name for name, pct in heavy.items() if abs(rows[name].self_cpu_pct - pct) > SELF_PCT_TOLERANCE]
    assert not off, f"Self CPU % differs by more than {SELF_PCT_TOLERANCE} points for {off}:\n{summary}"


def test_total_self_cpu_time_close_to_torch(resnet_run):
    # Both measured the same forward pass; gpuprof's probes add a few us per op.
    torch_total = sum(v["self_cpu_time_total"] for v in resnet_run.torch_ops.values())
    gp_total = resnet_run.table.self_cpu_total_us
    print(f"Self CPU time total: torch {torch_total / 1e3:.3f} ms, gpuprof {gp_total / 1e3:.3f} ms")
    assert 0.8 * torch_total <= gp_total <= 1.25 * torch_total


def test_report_reprints_the_recorded_table(resnet_run):
    report = run_gpuprof("report", resnet_run.record_file, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    assert report.stderr == "", report.stderr  # a complete file: no warning
    assert report.stdout == resnet_run.gpuprof.stdout()

"""SIGKILL of gpuprof mid-recording harms neither the target nor the record file.

A recorder that dies without detaching must leave no probe behind (the
kernel drops BPF links with their last fd), the target must go on with
correct results at full speed, and the partial record file must still be
reportable (the reader stops at the last complete chunk and warns).
"""
import json
import re
import signal
import time

import pytest

from chrome_trace_checks import x_events
from conftest import (RECORD_VARIANTS, back_to_full_speed, live_bpf_link_ids, measure_beside_twin, measure_rate,
                      measure_recovered_rate, parse_table, pinned_together, run_gpuprof, speeds_after, start_twin, touch,
                      uprobe_events_mentioning, uprobe_links_of, wait_for_file, wait_until)

MIN_RECORDING_S = 1.0
# With probes the loop must be clearly slower than its twin on the same CPU
# (0.02-0.04x on the reference VM, 2026-11-26: every op call pays ~11 us of
# traps there), or its speed could not reveal leftover probes.
DURING_MAX_FRACTION = 0.6


@pytest.mark.parametrize("variant", RECORD_VARIANTS)
def test_sigkill_leaves_target_and_partial_file_usable(procs, workdir, tmp_path, busy_loop_baselines, variant,
                                                      torch_env):
    baseline_result, baseline_stdout = busy_loop_baselines(torch_env)
    record_file = tmp_path / "killed.gpuprof"
    target = procs.start_workload("busy_loop.py", workdir, torch_env=torch_env)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    before = measure_rate(workdir, "before", watch=[target])
    # The speeds that matter are compared with a never-profiled twin on the
    # same CPU at the same time (conftest.FULL_SPEED_FRACTION).
    twin = start_twin(procs, tmp_path, torch_env)

    gp = procs.start_gpuprof("record", "-p", target.pid, "-o", record_file, *RECORD_VARIANTS[variant][1])
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    attached_at = time.monotonic()
    size_at_attach = record_file.stat().st_size  # header, process info, op table
    links = uprobe_links_of(gp.pid)
    assert any(link["pid"] == target.pid and "libtorch_cpu" in link["path"] for link in links), links

    with pinned_together([target.pid, twin[0].pid]):
        during = measure_beside_twin(workdir, "during", [target, gp], twin)
    # At least MIN_RECORDING_S of recording, and events flushed to the file.
    wait_until(lambda: time.monotonic() - attached_at >= MIN_RECORDING_S
               and record_file.stat().st_size > size_at_attach,
               30, "a second of recording with events on disk", watch=[target, gp])
    gp.popen.send_signal(signal.SIGKILL)
    assert gp.wait(timeout=30) == -signal.SIGKILL

    # No probe is left: the kernel drops gpuprof's links with its fds...
    link_ids = {link["link_id"] for link in links}
    wait_until(lambda: not (link_ids & live_bpf_link_ids()), 30,
               f"gpuprof's BPF links {sorted(link_ids)} to be released", watch=[target])
    assert not uprobe_events_mentioning("gpuprof")
    # ...and the loop runs at its old speed again (conftest.FULL_SPEED_FRACTION).
    after = measure_recovered_rate(workdir, before, "after", watch=[target], twin=twin)
    speeds = (f"loop steps/s: before median {before['median']:.0f} (best {before['best']:.0f}), "
              f"during best {during['best']:.0f} (full speed {during['full_speed']:.0f}), after best {speeds_after(after)}")
    print(speeds)
    assert during["best"] < DURING_MAX_FRACTION * during["full_speed"], (
        "the loop was not measurably slower with gpuprof attached, so its speed cannot show "
        f"leftover probes: {speeds}")
    assert back_to_full_speed(before, after), f"the loop stayed slow after the kill: {speeds}"

    # The target finishes with the same results as a run without gpuprof.
    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()
    result = json.loads((workdir / "result.json").read_text())
    assert result["mismatches"] == 0, result
    assert result["reference"] == baseline_result["reference"]
    assert target.stdout() == baseline_stdout

    # The partial file reports, with a warning.
    report = run_gpuprof("report", record_file)
    assert report.returncode == 0, report.stderr
    warnings = [line for line in report.stderr.splitlines() if line.startswith("gpuprof: warning:")]
    assert warnings and "incomplete" in warnings[0], report.stderr
    table = parse_table(report.stdout)
    calls = table.calls()
    # How many of the loop's calls reached the disk before the kill depends
    # on where the kill fell among the writer's flushes (at least every
    # 250 ms): unknowable. What is known is the loop's order: its complete
    # chunks hold an unbroken stretch of it, every add followed by its mul,
    # a dot after every 100 of them (busy_loop.py's cycle), no call missing.
    trace = tmp_path / "killed.json"
    assert run_gpuprof("report", record_file, "--chrome-trace", trace).returncode == 0
    loop_calls = [e["name"] for e in sorted(x_events(json.loads(trace.read_text()), "cpu_op"), key=lambda e: e["ts"])
                  if e["name"] in ("aten::add", "aten::mul", "aten::dot")]
    assert loop_calls, report.stdout  # the file had grown past its header: events of the loop are in it
    cycle = ["aten::add", "aten::mul"] * 100 + ["aten::dot"]
    assert any(loop_calls == [cycle[(k + i) % len(cycle)] for i in range(len(loop_calls))]
               for k in range(len(cycle))), f"not a stretch of the loop: {loop_calls[:20]}...{loop_calls[-20:]}"
    assert calls.get("aten::add", 0) == loop_calls.count("aten::add"), report.stdout
    assert calls.get("aten::mul", 0) == loop_calls.count("aten::mul"), report.stdout
    if variant == "shapes+memory+stacks":
        # Shapes and memory of the complete chunks report too.
        grouped = run_gpuprof("report", record_file, "--group-by-input-shape", "--row-limit", "-1")
        assert grouped.returncode == 0, grouped.stderr
        assert re.search(r"^ *aten::add .* \[\[16\], \[\], \[\]\] *$", grouped.stdout, re.M), grouped.stdout
        assert "CPU Mem" in grouped.stdout, grouped.stdout
        # And so do the Python stacks of the complete chunks.
        stacked = run_gpuprof("report", record_file, "--group-by-stack-n", "2", "--row-limit", "-1")
        assert stacked.returncode == 0, stacked.stderr
        assert "Source Location" in stacked.stdout and ".py(" in stacked.stdout, stacked.stdout

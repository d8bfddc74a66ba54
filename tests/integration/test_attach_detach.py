"""Twenty attach/detach cycles on one live process.

Every recording must see the target's ops, attach and detach must be quick,
and the target must not notice: same results as without gpuprof, and full
speed once the last gpuprof is gone.
"""
import json
import os
import signal
import time

from conftest import (back_to_full_speed, live_bpf_link_ids, machine_snapshot, measure_rate,
                      measure_recovered_rate, parse_stopped_line, parse_table, parse_tracing_line, run_gpuprof, touch,
                      uprobe_links_of, wait_for_file, wait_until)

CYCLES = 20
RECORD_S = 0.3
# gpuprof's own attach and detach times (its "attach X ms" / "detach X ms").
# On an idle 2-core VM they are ~20-80 ms and ~70-220 ms; another busy
# PyTorch process on the same machine can triple both. The environment
# variable is for such shared machines only; the bound itself is the spec.
MAX_ATTACH_PLUS_DETACH_MS = float(os.environ.get("GPUPROF_TEST_MAX_ATTACH_DETACH_MS", "500"))


def test_twenty_attach_detach_cycles(procs, workdir, tmp_path, busy_loop_baseline):
    baseline_result, baseline_stdout = busy_loop_baseline
    target = procs.start_workload("busy_loop.py", workdir)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    before = measure_rate(workdir, "before", watch=[target])

    timings = []
    snapshots = []  # machine_snapshot() after the first slow cycle
    link_ids = set()
    for cycle in range(CYCLES):
        record_file = tmp_path / f"cycle{cycle}.gpuprof"
        if cycle % 2 == 0:
            # Stopped by -d.
            run = run_gpuprof("record", "-p", target.pid, "-d", RECORD_S, "-o", record_file, timeout=60)
            rc, stdout, stderr, reason = run.returncode, run.stdout, run.stderr, "duration"
        else:
            # Stopped by SIGINT (Ctrl-C).
            gp = procs.start_gpuprof("record", "-p", target.pid, "-o", record_file)
            gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
            link_ids |= {link["link_id"] for link in uprobe_links_of(gp.pid)}
            time.sleep(RECORD_S)
            gp.send(signal.SIGINT)
            rc = gp.wait(timeout=60)
            stdout, stderr, reason = gp.stdout(), gp.stderr(), "interrupted"
        context = f"cycle {cycle}: exit {rc}\nstderr:\n{stderr}\nstdout:\n{stdout}"
        assert rc == 0, context
        assert target.running(), f"the target died during {context}\n{target.describe()}"
        tracing = parse_tracing_line(stderr)
        stopped = parse_stopped_line(stderr)
        assert tracing["pid"] == target.pid, context
        assert stopped["reason"] == reason, context
        assert stopped["lost"] == 0, context
        calls = parse_table(stdout).calls()
        assert calls.get("aten::add", 0) > 0 and calls.get("aten::mul", 0) > 0, context
        timings.append((tracing["attach_ms"], stopped["detach_ms"], calls["aten::add"], calls["aten::mul"]))
        if tracing["attach_ms"] + stopped["detach_ms"] >= MAX_ATTACH_PLUS_DETACH_MS and not snapshots:
            snapshots.append(f"after cycle {cycle}:\n{machine_snapshot()}")

    print("attach ms / detach ms / aten::add calls / aten::mul calls per cycle:")
    for cycle, (attach_ms, detach_ms, adds, muls) in enumerate(timings):
        print(f"  {cycle:2d}: {attach_ms:7.1f} {detach_ms:7.1f} {adds:7d} {muls:7d}")
    slow = [(c, a, d) for c, (a, d, _, _) in enumerate(timings) if a + d >= MAX_ATTACH_PLUS_DETACH_MS]
    assert not slow, (f"attach + detach took {MAX_ATTACH_PLUS_DETACH_MS} ms or more (cycle, attach ms, "
                      f"detach ms): {slow}\n" + "\n".join(snapshots))

    # Nothing left behind: no link of the SIGINT-stopped runs, full speed.
    assert link_ids, "no uprobe_multi links seen while gpuprof was attached"
    wait_until(lambda: not (link_ids & live_bpf_link_ids()), 30, "gpuprof's BPF links to be released",
               watch=[target])
    after = measure_recovered_rate(workdir, before, "after", watch=[target])
    speeds = (f"loop ops/s: before median {before['median']:.0f}, after best "
              + ", ".join(f"{r['best']:.0f}" for r in after))
    print(speeds)
    assert back_to_full_speed(before, after), f"the loop stayed slow after {CYCLES} cycles: {speeds}"

    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()
    result = json.loads((workdir / "result.json").read_text())
    assert result["mismatches"] == 0, result
    assert result["reference"] == baseline_result["reference"]
    assert target.stdout() == baseline_stdout

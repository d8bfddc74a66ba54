"""record --schedule / --step-op / --step-time / --on-cycle / --rotate / --keep.

The schedule tests run torch.profiler inside the target with the very same
schedule (tests/workloads/scheduled_steps.py): step i calls aten::frac (the
step op) once and aten::mul i + 1 times, so the aten::mul count of a file
says exactly which steps it holds. gpuprof must record the same steps as
torch's schedule function, cycle by cycle as torch's on_trace_ready sees
them, with one ProfilerStep#N frame per recorded step.
"""
import collections
import gzip
import json
import re
import signal
import time
from pathlib import Path

import pytest

from conftest import HOST_TORCH, parse_table, run_gpuprof, touch, wait_for_file, wait_until

STEPS = 20
SCHEDULES = [
    "skip_first=1,wait=1,warmup=1,active=2,repeat=2",
    "wait=2,warmup=0,active=3,repeat=0",  # no warmup, cycles for ever: the last one is cut at the end
    "skip_first=3,wait=0,warmup=2,active=1,repeat=3",
    "wait=0,warmup=0,active=4,repeat=2",  # cycles back to back
]


def run_scheduled(procs, workdir, tmp_path, spec, *gpuprof_args):
    target = procs.start_workload("scheduled_steps.py", workdir, str(STEPS), spec)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    gp = procs.start_gpuprof("record", "-p", pid, "--schedule", spec, "--step-op", "aten::frac", *gpuprof_args)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    wait_for_file(workdir, "done", timeout=120, watch=[target, gp])
    assert target.wait(timeout=60) == 0, target.describe()
    assert gp.wait(timeout=60) == 0, gp.describe()  # stops: target exited
    return json.loads((workdir / "torch_cycles.json").read_text()), gp


def report_table(path):
    result = run_gpuprof("report", path)
    assert result.returncode == 0, result.stderr
    return parse_table(result.stdout)


def mul_count(steps):
    return sum(step + 1 for step in steps)


def step_frames(path, tmp_path):
    """(gpuprof's step numbers, the target's own ProfilerStep#N ranges) in a
    recording's trace. The workload runs torch.profiler with the same
    schedule, whose prof.step() opens record_function("ProfilerStep#N")
    ranges: gpuprof records those too (their table row is ProfilerStep*,
    shared with its own steps, as key_averages() folds them); its own step
    frames carry args.step."""
    trace = tmp_path / (Path(path).name + ".json")
    result = run_gpuprof("report", path, "--chrome-trace", trace)
    assert result.returncode == 0, result.stderr
    events = [e for e in json.loads(trace.read_text())["traceEvents"]
              if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]
    ours = sorted(e["args"]["step"] for e in events if "step" in e["args"])
    assert all(int(e["name"].split("#")[1]) == e["args"]["step"] for e in events if "step" in e["args"])
    return ours, [e for e in events if "step" not in e["args"]]


@pytest.mark.parametrize("spec", SCHEDULES)
def test_schedule_records_the_steps_torch_records(procs, workdir, tmp_path, spec):
    whole = tmp_path / "all.gpuprof"
    torch_run, gp = run_scheduled(procs, workdir, tmp_path, spec, "-o", whole,
                                  "--on-cycle", str(tmp_path / "cycle_{cycle}.gpuprof"), "-q")
    recorded = torch_run["recorded_steps"]
    assert recorded, "the schedule records no step in the run: a useless case"

    # The whole recording: exactly torch's recorded steps.
    table = report_table(whole)
    calls = table.calls()
    assert calls.get("aten::mul") == mul_count(recorded), (recorded, table.text)
    assert calls.get("aten::frac") == len(recorded), table.text
    # Its trace names each step frame after its step, as torch does.
    ours, theirs = step_frames(whole, tmp_path)
    assert ours == recorded
    assert calls.get("ProfilerStep*") == len(ours) + len(theirs), table.text

    # One file per cycle, each holding what torch's on_trace_ready saw.
    cycles = torch_run["cycles"]
    written = re.findall(r"^gpuprof: cycle (\d+) \(steps (\d+)-(\d+)\): wrote (\S+)$", gp.stderr(), re.M)
    assert [int(c) for c, _, _, _ in written] == list(range(len(cycles))), gp.stderr()
    for (cycle, first, last, path), torch_counts in zip(written, cycles):
        got = report_table(path).calls()
        assert got.get("aten::mul") == torch_counts["aten::mul"], (cycle, got, torch_counts)
        assert got.get("aten::frac") == torch_counts["aten::frac"], (cycle, got, torch_counts)
        in_cycle = [s for s in recorded if int(first) <= s <= int(last)]
        assert got.get("aten::mul") == mul_count(in_cycle)
        ours, theirs = step_frames(path, tmp_path)
        assert ours == in_cycle
        assert got.get("ProfilerStep*") == len(ours) + len(theirs)


def test_on_cycle_formats(procs, workdir, tmp_path):
    """Each cycle as a table, folded stacks and a gzipped trace; no other file without -o."""
    spec = "wait=1,warmup=1,active=2,repeat=2"
    outputs = {}
    for ext in ("txt", "folded", "json.gz"):
        sub = tmp_path / ext.replace(".", "_")
        sub.mkdir()
        hand = sub / "handshake"
        hand.mkdir()
        torch_run, gp = run_scheduled(procs, hand, tmp_path, spec, "--on-cycle", str(sub / f"c{{cycle}}.{ext}"))
        outputs[ext] = (sub, torch_run, gp)
        files = sorted(p.name for p in sub.iterdir() if p.is_file())
        assert files == [f"c0.{ext}", f"c1.{ext}"], (files, gp.stderr())  # no partial record left
        assert "; wrote 2 cycle files" in gp.stderr(), gp.stderr()
        assert (sub / f"c0.{ext}").stat().st_mode & 0o777 == 0o600
    sub, torch_run, _ = outputs["txt"]
    for cycle, torch_counts in enumerate(torch_run["cycles"]):
        table = parse_table((sub / f"c{cycle}.txt").read_text())
        assert table.calls()["aten::mul"] == torch_counts["aten::mul"]
    sub, torch_run, _ = outputs["folded"]
    for cycle in range(2):
        lines = (sub / f"c{cycle}.folded").read_text().splitlines()
        assert lines and all(re.fullmatch(r".+ \d+", line) for line in lines), lines
        # The muls of a step, under gpuprof's step frame (and the target's own
        # ProfilerStep range, when the range began in a recorded step).
        assert any(re.fullmatch(r"ProfilerStep\*(;ProfilerStep#\d+)?;aten::mul \d+", line) for line in lines), lines
    sub, torch_run, _ = outputs["json.gz"]
    for cycle in range(2):
        events = json.loads(gzip.decompress((sub / f"c{cycle}.json.gz").read_bytes()))["traceEvents"]
        steps = [e["name"] for e in events if "step" in e.get("args", {})]
        assert len(steps) == 2, steps
        muls = sum(1 for e in events if e.get("name") == "aten::mul")
        assert muls == torch_run["cycles"][cycle]["aten::mul"]


# --step-time: the two schedules of the defect report (steps of 0.5 s here
# instead of 1 s), the loop's iterations timed by the loop itself.
STEP_TIME_S = 0.5
STEP_TIME_CASES = {
    "active=2": ("wait=1,active=2,repeat=1", [(0, 1, 2)]),
    "three-cycles": ("wait=1,active=1,repeat=3", [(0, 1, 1), (1, 3, 3), (2, 5, 5)]),
}


def trace_of(path, out):
    made = run_gpuprof("report", path, "--chrome-trace", out)
    assert made.returncode == 0, made.stderr
    doc = json.loads(out.read_text())
    zero = int(re.search(r"CLOCK_MONOTONIC (\d+) ns", doc["otherData"]["time zero"]).group(1))
    calls = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    return zero, calls


def check_step_time_cycles(tmp_path, whole, stderr, cycles, iterations):
    """Every cycle output holds exactly the whole recording's calls that start
    in its steps; no call outlasts a step; nothing unwound; the loop's own
    timing of its sigmoid calls brackets the count."""
    written = re.findall(r"^gpuprof: cycle (\d+) \(steps (\d+)-(\d+)\): wrote (\S+)$", stderr, re.M)
    assert [(int(c), int(a), int(b)) for c, a, b, _ in written] == cycles, stderr
    whole_zero, whole_calls = trace_of(whole, tmp_path / "whole.json")
    assert not [e for e in whole_calls if e.get("args", {}).get("unwound")], "a call marked unwound"
    assert max(e["dur"] for e in whole_calls) <= STEP_TIME_S * 1e6, max(e["dur"] for e in whole_calls)
    whole_table = report_table(whole)
    assert not [n for n in whole_table.notes if "exception unwinding" in n], whole_table.text
    in_cycles = 0
    for cycle, first, last, path in written:
        zero, calls = trace_of(path, tmp_path / f"cycle{cycle}.json")
        # The cycle file starts at its first step; the steps are the schedule's.
        start, end = zero, zero + (int(last) - int(first) + 1) * int(STEP_TIME_S * 1e9)
        expected = collections.Counter(e["name"] for e in whole_calls
                                       if start <= whole_zero + e["ts"] * 1000 < end)
        got = collections.Counter(e["name"] for e in calls)
        assert got == expected, (cycle, got, expected)
        if not expected:  # a cycle in which the target called no op (launch mode: still importing)
            empty = run_gpuprof("report", path)
            assert empty.returncode == 0 and "No operator calls were recorded" in empty.stdout, empty.stdout
            assert not any(t0 < end and t1 >= start for t0, t1 in iterations), (cycle, start, end)
            continue
        table = report_table(path)
        assert {k: v for k, v in table.calls().items()} == dict(expected), (cycle, table.text)
        assert max(e["dur"] for e in calls) <= STEP_TIME_S * 1e6
        # 50 mm per iteration; the first and last iteration may be cut by the edges.
        sigmoids = got["aten::sigmoid"]
        assert 50 * (sigmoids - 1) <= got["aten::mm"] <= 50 * (sigmoids + 1), (cycle, got)
        # The loop's own clock: every sigmoid it made inside the window, and
        # at most the two straddling the window's edges besides.
        inside = sum(1 for t0, t1 in iterations if t0 >= start and t1 < end)
        touching = sum(1 for t0, t1 in iterations if t1 >= start and t0 < end)
        assert inside <= got["aten::sigmoid"] <= touching <= inside + 2, (cycle, inside, got, touching)
        in_cycles += sum(got.values())
    # The whole file holds nothing but the cycles' calls.
    assert in_cycles == len(whole_calls), (in_cycles, len(whole_calls))


@pytest.mark.parametrize("case", STEP_TIME_CASES)
def test_step_time_cycles_hold_exactly_their_steps(procs, workdir, tmp_path, torch_env, case):
    spec, cycles = STEP_TIME_CASES[case]
    seconds = STEP_TIME_S * (cycles[-1][2] + 1) + 1.5
    target = procs.start_workload("sigmoid_mm_loop.py", workdir, str(seconds), torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    whole = tmp_path / "whole.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", whole, "--schedule", spec,
                             "--step-time", str(STEP_TIME_S), "--on-cycle", str(tmp_path / "c{cycle}.gpuprof"))
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    assert target.wait(timeout=120) == 0, target.describe()
    assert gp.wait(timeout=60) == 0, gp.describe()  # the target's exit stops it
    iterations = json.loads((workdir / "iterations.json").read_text())["sigmoid"]
    check_step_time_cycles(tmp_path, whole, gp.stderr(), cycles, iterations)


def test_step_time_in_launch_mode(tmp_path):
    spec, cycles = STEP_TIME_CASES["three-cycles"]
    whole = tmp_path / "whole.gpuprof"
    run = run_gpuprof("record", "-q", "-o", whole, "--schedule", spec, "--step-time", str(STEP_TIME_S),
                      "--on-cycle", str(tmp_path / "c{cycle}.gpuprof"), "--",
                      *HOST_TORCH.argv("sigmoid_mm_loop.py", tmp_path, str(STEP_TIME_S * 6 + 1.5), "--now"),
                      timeout=120)
    assert run.returncode == 0, run.stderr
    iterations = json.loads((tmp_path / "iterations.json").read_text())["sigmoid"]
    check_step_time_cycles(tmp_path, whole, run.stderr, cycles, iterations)


def test_rotate_keeps_the_last_files(procs, workdir, tmp_path):
    """--rotate SIZE --keep N: only the last N files stay, each a complete recording."""
    target = procs.start_workload("busy_loop.py", workdir)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    out = tmp_path / "long.gpuprof"
    gp = procs.start_gpuprof("record", "-p", target.pid, "-o", out, "--rotate", "2M", "--keep", "2")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    wait_until(lambda: (tmp_path / "long.gpuprof.5").exists(), 60, "a fifth file", watch=[target, gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    names = sorted((p.name for p in tmp_path.glob("long.gpuprof*")), key=lambda n: int(n.rsplit(".", 1)[1]))
    numbers = [int(n.rsplit(".", 1)[1]) for n in names]
    assert len(names) == 2 and numbers[1] == numbers[0] + 1 and numbers[0] >= 4, names
    assert f"; wrote {out}.1 to {out}.{numbers[1]} (the last 2 kept)" in gp.stderr(), gp.stderr()
    for name in names:
        path = tmp_path / name
        assert path.stat().st_mode & 0o777 == 0o600
        result = run_gpuprof("report", path)
        assert result.returncode == 0 and "incomplete" not in result.stderr, result.stderr
        assert parse_table(result.stdout).calls().get("aten::add", 0) > 0
    # A file closes at the first check (every 100 ms) after it holds 2 MiB: the
    # busy loop writes some 8 MB/s here, so one check's worth more at most.
    assert 2 << 20 <= (tmp_path / names[0]).stat().st_size <= 6 << 20
    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()


def test_rotate_by_time(procs, workdir, tmp_path):
    target = procs.start_workload("busy_loop.py", workdir)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    out = tmp_path / "t.gpuprof"
    result = run_gpuprof("record", "-p", target.pid, "-o", out, "-d", "1.9", "--rotate", "0.5", "-q")  # seconds
    assert result.returncode == 0, result.stderr
    # 1.9 s of tracing after an attach of a few hundred ms (the first file
    # starts before it): 4 or 5 files of 0.5 s.
    names = sorted(p.name for p in tmp_path.glob("t.gpuprof*"))
    assert names in ([f"t.gpuprof.{n}" for n in range(1, k + 1)] for k in (4, 5)), names
    total = sum(report_table(tmp_path / name).calls().get("aten::add", 0) for name in names)
    assert total > 100
    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()


@pytest.mark.parametrize("args, message", [
    (["--schedule", "active=2"], r"--schedule needs what a step is: --step-op NAME or --step-time SECONDS"),
    (["--schedule", "wait=1", "--step-time", "1"], r"active=N \(N >= 1\) is required"),
    (["--schedule", "active=1,bogus=2", "--step-time", "1"], r"unknown key 'bogus'"),
    (["--schedule", "active=x", "--step-time", "1"], r"active=x: not a whole number"),
    (["--schedule", "active=1", "--step-time", "1", "--on-cycle", "out.json"], r"must contain \{cycle\}"),
    (["--schedule", "active=1", "--step-time", "1", "--on-cycle", "o{cycle}.csv"], r"unknown extension"),
    (["--rotate", "100B"], r"--rotate 100B: give a size"),
    (["--rotate", "0.01"], r"--rotate 0.01: give a size \(64K and up: 512K, 100M, 2G\) or seconds"),
    (["--rotate", "1M", "--chrome-trace", "x.json"], r"--rotate splits the recording"),
])
def test_schedule_option_errors(args, message, tmp_path):
    result = run_gpuprof("record", "-p", "1", "-o", tmp_path / "x.gpuprof", *args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert re.search(message, result.stderr), result.stderr


def test_unknown_step_op_is_refused_before_tracing(procs, workdir, tmp_path):
    target = procs.start_workload("busy_loop.py", workdir)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    result = run_gpuprof("record", "-p", target.pid, "-o", tmp_path / "x.gpuprof", "-d", "1",
                         "--schedule", "active=1", "--step-op", "aten::no_such_op")
    assert result.returncode == 1
    assert "--step-op aten::no_such_op: no such op in this libtorch_cpu" in result.stderr, result.stderr
    assert target.running()
    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()

"""record --schedule / --step-op / --step-time / --on-cycle / --rotate / --keep.

The schedule tests run torch.profiler inside the target with the very same
schedule (tests/workloads/scheduled_steps.py): step i calls aten::frac (the
step op) once and aten::mul i + 1 times, so the aten::mul count of a file
says exactly which steps it holds. gpuprof must record the same steps as
torch's schedule function, cycle by cycle as torch's on_trace_ready sees
them, with one ProfilerStep#N frame per recorded step.
A `.json` cycle output holds exactly the whole recording's events of its
cycle's steps. overload_steps.py's known sequence of step-op calls checks
`--step-op` given an op's name, one overload, and twice; its CPU spins
check that -F keeps samples of recorded steps only; launch_driver with the
stand-in CUPTI, that launches and GPU times are kept for recorded steps only.
"""
import collections
import gzip
import json
import os
import re
import signal
import time
from pathlib import Path

import pytest

from chrome_trace_checks import span_ns, structural_problems, time_zero_ns
from conftest import (HOST_TORCH, assert_samples_match_cpu_time, parse_stopped_line, parse_table, run_gpuprof,
                      run_program, touch, wait_for_file, wait_until)
from test_cuda_launches import DRIVER as LAUNCH_DRIVER, EXPECTED as LAUNCHES, STEPS as LAUNCH_STEPS, check_launches
from test_cupti import (EXPECTED as KERNELS, EXPECTED_CUDA_COLUMNS, GPU_TOTAL_US, SHIM, STAND_IN, cuda_columns,
                        expected_cuda_cells, kernel_rows)

STEPS = 20
SCHEDULES = [
    "skip_first=1,wait=1,warmup=1,active=2,repeat=2",
    "wait=2,warmup=0,active=3,repeat=0",  # no warmup, cycles for ever: the last one is cut at the end
    "skip_first=3,wait=0,warmup=2,active=1,repeat=3",
    "wait=0,warmup=0,active=4,repeat=2",  # cycles back to back
]


def run_scheduled(procs, workdir, tmp_path, spec, *gpuprof_args, torch_env=HOST_TORCH):
    target = procs.start_workload("scheduled_steps.py", workdir, str(STEPS), spec, torch_env=torch_env)
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
    events = [e for e in export_trace(path, tmp_path / (Path(path).name + ".json"))["traceEvents"]
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
    written = cycles_written(gp.stderr())
    assert [c for c, _, _, _ in written] == list(range(len(cycles))), gp.stderr()
    for (cycle, first, last, path), torch_counts in zip(written, cycles):
        got = report_table(path).calls()
        assert got.get("aten::mul") == torch_counts["aten::mul"], (cycle, got, torch_counts)
        assert got.get("aten::frac") == torch_counts["aten::frac"], (cycle, got, torch_counts)
        in_cycle = [s for s in recorded if first <= s <= last]
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


def export_trace(path, out):
    """report PATH --chrome-trace OUT: the trace."""
    made = run_gpuprof("report", path, "--chrome-trace", out)
    assert made.returncode == 0, made.stderr
    return json.loads(Path(out).read_text())


def trace_of(path, out):
    doc = export_trace(path, out)
    calls = [e for e in doc["traceEvents"] if e.get("ph") == "X" and e.get("cat") == "cpu_op"]
    return time_zero_ns(doc), calls


def cycles_written(stderr):
    """[(cycle, first step, last step, path)] of the `gpuprof: cycle N (steps A-B): wrote PATH` lines."""
    return [(int(c), int(a), int(b), path) for c, a, b, path in
            re.findall(r"^gpuprof: cycle (\d+) \(steps (\d+)-(\d+)\): wrote (\S+)$", stderr, re.M)]


def check_step_time_cycles(tmp_path, whole, stderr, cycles, iterations):
    """Every cycle output holds exactly the whole recording's calls that start
    in its steps; no call outlasts a step; nothing unwound; the loop's own
    timing of its sigmoid calls brackets the count."""
    written = cycles_written(stderr)
    assert [(c, a, b) for c, a, b, _ in written] == cycles, stderr
    whole_zero, whole_calls = trace_of(whole, tmp_path / "whole.json")
    assert not [e for e in whole_calls if e.get("args", {}).get("unwound")], "a call marked unwound"
    assert max(e["dur"] for e in whole_calls) <= STEP_TIME_S * 1e6, max(e["dur"] for e in whole_calls)
    whole_table = report_table(whole)
    assert not [n for n in whole_table.notes if "exception unwinding" in n], whole_table.text
    in_cycles = 0
    for cycle, first, last, path in written:
        zero, calls = trace_of(path, tmp_path / f"cycle{cycle}.json")
        # The cycle file starts at its first step; the steps are the schedule's.
        start, end = zero, zero + (last - first + 1) * int(STEP_TIME_S * 1e9)
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


# The rotation tests run fixed_count.py: exactly N calls of aten::add spread
# over SECONDS, and no other op while gpuprof records. At a switch the call
# running then (one at most: one thread, and aten::add calls no other op) is
# in neither file: the old file counts it "still running when recording
# stopped (not counted)", the new one "already running when recording began
# (their exits were ignored)" (docs/schedules.md: "a file's first op calls
# may be exits without entries"). So the files together hold exactly N calls
# less the ones their notes say were cut.
STILL_RUNNING_RE = re.compile(r"^gpuprof: (\d+) calls? still running when recording stopped \(not counted\)$", re.M)
ALREADY_RUNNING_RE = re.compile(r"^gpuprof: (\d+) ops? (?:was|were) already running when recording began", re.M)


def note_count(regex, text):
    m = regex.search(text)
    return int(m.group(1)) if m else 0


def rotated_files(out):
    """out.1, out.2, ... as they are on disk, in order."""
    return sorted(out.parent.glob(out.name + ".*"), key=lambda p: int(p.name.rsplit(".", 1)[1]))


def record_fixed_count(procs, workdir, tmp_path, n, seconds, *rotate_args, save_to=None):
    """fixed_count.py's N calls recorded from before the first to after the
    last, split by `record --rotate ...`; the recording stops (SIGINT) once
    the workload is done. save_to: a directory where each rotated file is
    hard-linked as soon as it appears, so that the files --keep deletes can
    still be read (the link keeps the inode; gpuprof deletes a file only
    after it closed it, --keep files later). Returns gpuprof's Proc and the
    base path."""
    target = procs.start_workload("fixed_count.py", workdir, str(n), str(seconds))
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "rot.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-o", out, *rotate_args)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")

    def save():
        if save_to is not None:
            for path in rotated_files(out):
                if not (save_to / path.name).exists():
                    os.link(path, save_to / path.name)

    def done():
        save()
        return (workdir / "done").exists()

    wait_until(done, 120, "fixed_count.py to make its calls", watch=[target, gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    save()  # a file begun after the last look (small files switch often) is still there: --keep keeps the last
    touch(workdir, "check")  # its result checks run ops of their own: after the stop
    assert target.wait(timeout=60) == 0, target.describe()
    return gp, out


def assert_files_hold_the_calls(paths, n, stderr):
    """The files of one rotated recording of fixed_count.py's N calls hold
    them all, but for the calls running at a switch, which their notes name."""
    numbers = [int(p.name.rsplit(".", 1)[1]) for p in paths]
    assert numbers == list(range(1, len(paths) + 1)), numbers
    adds, still_running, already_running = [], [], []
    for path in paths:
        result = run_gpuprof("report", path)
        assert result.returncode == 0 and "incomplete" not in result.stderr, result.stderr
        assert path.stat().st_mode & 0o777 == 0o600
        if "No operator calls were recorded" in result.stdout:  # the target idle after its calls
            calls, notes = {}, result.stdout
        else:
            table = parse_table(result.stdout)
            calls, notes = table.calls(), "\n".join(table.notes)
        assert set(calls) <= {"aten::add"}, (path, result.stdout)
        adds.append(calls.get("aten::add", 0))
        still_running.append(note_count(STILL_RUNNING_RE, notes))
        already_running.append(note_count(ALREADY_RUNNING_RE, notes))
    files = list(zip([p.name for p in paths], adds, still_running, already_running))
    # The call cut by a switch is the one the next file saw end; nothing ran
    # before the first file or after the last.
    assert already_running == [0] + still_running[:-1] and still_running[-1] == 0, files
    assert all(cut <= 1 for cut in still_running), files  # one thread, one call at a time
    assert sum(adds) == n - sum(still_running), files
    # Each call is an entry and an exit in some file, the cut ones too.
    assert parse_stopped_line(stderr)["events"] == 2 * n, stderr
    assert parse_stopped_line(stderr)["lost"] == 0, stderr
    return files


def test_rotate_keeps_the_last_files(procs, workdir, tmp_path):
    """--rotate SIZE --keep N: only the last N files stay, each a complete
    recording; all the files, the deleted ones too, hold every call."""
    saved = tmp_path / "saved"
    saved.mkdir()
    # 60,000 calls over 5 s: a file holds some 9,000 calls (100 KiB with its
    # dictionaries, some 60 KiB of them, the rest op events at ~2 bytes each:
    # record format 6) and is full after 0.75 s, so 6 or 7 files, each
    # deleted by --keep 2 some 1.5 s after it appeared: time enough to link it.
    n, seconds, size = 60000, 5, 100 << 10
    gp, out = record_fixed_count(procs, workdir, tmp_path, n, seconds, "--rotate", "100K", "--keep", "2",
                                 save_to=saved)
    kept = rotated_files(out)
    every = rotated_files(saved / out.name)
    assert len(every) >= 5, [p.name for p in every]
    assert [p.name for p in kept] == [p.name for p in every[-2:]], ([p.name for p in kept], gp.stderr())
    assert all(p.stat().st_ino == (saved / p.name).stat().st_ino for p in kept)
    assert f"; wrote {out}.1 to {out}.{len(every)} (the last 2 kept)" in gp.stderr(), gp.stderr()
    files = assert_files_hold_the_calls(every, n, gp.stderr())
    # A file closes at the first check (every 100 ms) after it holds 100 KiB;
    # the writer's buffers (64 KiB per chunk type) go out at the close: at
    # this pace (12,000 calls a second) one check's worth of calls and the
    # buffers more at most. The last file is closed
    # by the stop, not by its size.
    for path in every[:-1]:
        assert size <= path.stat().st_size <= size + (128 << 10) + 2 * (64 << 10), (path.name, files)


def assert_switched_by_time(paths, seconds, recorded_s, tmp_path):
    """Each file of a --rotate SECONDS recording spans SECONDS at least (its
    start, the trace's time zero, to the next file's): a switch comes at the
    first check (every 100 ms) after that, later on a busy machine, so the
    count is bounded from above only by the rule; from below, the workload's
    own calls outlast a switch."""
    starts = [trace_of(path, tmp_path / (path.name + ".json"))[0] for path in paths]
    spans = [(b - a) / 1e9 for a, b in zip(starts, starts[1:])]
    assert all(span >= seconds for span in spans), spans
    assert 2 <= len(paths) <= recorded_s / seconds + 1, ([p.name for p in paths], recorded_s)


def test_rotate_by_time(procs, workdir, tmp_path):
    """--rotate SECONDS: a file per SECONDS of recording, all of them holding every call."""
    started = time.monotonic()
    gp, out = record_fixed_count(procs, workdir, tmp_path, 20000, 2, "--rotate", "0.5")
    recorded_s = time.monotonic() - started  # more than gpuprof's recording, from before it started
    paths = rotated_files(out)
    assert_switched_by_time(paths, 0.5, recorded_s, tmp_path)
    assert_files_hold_the_calls(paths, 20000, gp.stderr())


# Every unit docs/schedules.md lists for --rotate, in a real run, with
# amounts small enough that the files switch, so that a unit read as another
# shows: 0.006m read as MiB would be refused (under 64K), 0.0001G is 105 KiB.
@pytest.mark.parametrize("limit, seconds", [("0.0001h", 0.36), ("0.006m", 0.36), ("0.3s", 0.3)])
def test_rotate_time_units(procs, workdir, tmp_path, limit, seconds):
    started = time.monotonic()
    gp, out = record_fixed_count(procs, workdir, tmp_path, 5000, 1.5, "--rotate", limit)
    recorded_s = time.monotonic() - started
    paths = rotated_files(out)
    assert_switched_by_time(paths, seconds, recorded_s, tmp_path)
    assert_files_hold_the_calls(paths, 5000, gp.stderr())


# A file's dictionaries alone take some 60 KiB compressed (record format 6:
# the op table of libtorch_cpu), and 5000 calls some 20 KiB of op events, so
# each limit below is passed within a check or two; 0.0000625G read as MiB
# or KiB would be refused (under 64K).
@pytest.mark.parametrize("limit, size", [("0.0000625G", int(0.0000625 * (1 << 30))), ("66K", 66 << 10),
                                         ("0.0625M", 1 << 16)])
def test_rotate_size_units(procs, workdir, tmp_path, limit, size):
    gp, out = record_fixed_count(procs, workdir, tmp_path, 5000, 1.5, "--rotate", limit)
    paths = rotated_files(out)
    assert len(paths) >= 2, [p.name for p in paths]
    for path in paths[:-1]:  # closed by their size (the last one by the stop)
        assert path.stat().st_size >= size, (path.name, path.stat().st_size, size)
    assert_files_hold_the_calls(paths, 5000, gp.stderr())


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


# --------------------------------------------------------------------------
# --on-cycle TEMPLATE.json: each cycle's Chrome trace.


def absolute_x_events(doc):
    """The complete events of a trace (calls, step frames, the target's own
    ranges) as a multiset of texts with their times in CLOCK_MONOTONIC ns
    (each trace counts from its own start) and without the call ids (each
    file numbers its own events)."""
    zero = time_zero_ns(doc)
    texts = collections.Counter()
    for e in doc["traceEvents"]:
        if e["ph"] == "X":
            start, end = span_ns(e)
            args = {k: v for k, v in e.get("args", {}).items() if k != "call"}
            texts[json.dumps({**e, "ts": zero + start, "dur": end - start, "args": args}, sort_keys=True)] += 1
    return texts


def step_frame_spans(doc):
    """{step: [start, end] in CLOCK_MONOTONIC ns} of gpuprof's own step frames."""
    zero = time_zero_ns(doc)
    return {e["args"]["step"]: tuple(zero + t for t in span_ns(e)) for e in doc["traceEvents"]
            if e["ph"] == "X" and "step" in e.get("args", {})}


@pytest.mark.parametrize("spec", [SCHEDULES[0], SCHEDULES[3]], ids=["with-gaps", "back-to-back"])
def test_on_cycle_json_holds_exactly_its_cycles_events(procs, workdir, tmp_path, torch_env, spec):
    """docs/schedules.md: `.json` writes each cycle as a Chrome trace, which
    holds exactly what the whole recording (-o) holds for that cycle's
    steps: every complete event of the whole trace that starts in the cycle's
    steps (from its first step frame's start to its last one's end: the
    next step's op starts there), at the same CLOCK_MONOTONIC times; the
    cycles together hold all of it. Back-to-back cycles meet at one instant;
    a call running there ends at the cut in both files."""
    whole = tmp_path / "all.gpuprof"
    torch_run, gp = run_scheduled(procs, workdir, tmp_path, spec, "-o", whole, "-q",
                                  "--on-cycle", str(tmp_path / "cycle_{cycle}.json"), torch_env=torch_env)
    written = cycles_written(gp.stderr())
    assert [(cycle, path) for cycle, _, _, path in written] == [
        (cycle, str(tmp_path / f"cycle_{cycle}.json")) for cycle in range(len(torch_run["cycles"]))], gp.stderr()
    whole_doc = export_trace(whole, tmp_path / "all.json")
    whole_events = absolute_x_events(whole_doc)
    frames = step_frame_spans(whole_doc)
    assert sorted(frames) == torch_run["recorded_steps"], sorted(frames)
    in_cycles = collections.Counter()
    problems = {"whole": structural_problems(whole_doc)}
    for (cycle, first, last, path), torch_counts in zip(written, torch_run["cycles"]):
        doc = json.loads(Path(path).read_text())
        problems[path] = structural_problems(doc)
        assert Path(path).stat().st_mode & 0o777 == 0o600
        steps = [s for s in torch_run["recorded_steps"] if first <= s <= last]
        assert sorted(step_frame_spans(doc)) == steps, (cycle, sorted(step_frame_spans(doc)))
        start, end = frames[steps[0]][0], frames[steps[-1]][1]
        expected = collections.Counter({text: n for text, n in whole_events.items()
                                        if start <= json.loads(text)["ts"] < end})
        got = absolute_x_events(doc)
        assert got == expected, (cycle, f"missing: {list((expected - got).elements())[:3]}",
                                 f"extra: {list((got - expected).elements())[:3]}")
        muls = sum(1 for e in doc["traceEvents"] if e["ph"] == "X" and e["name"] == "aten::mul")
        assert muls == mul_count(steps) == torch_counts["aten::mul"], (cycle, muls, torch_counts)
        in_cycles += got
    assert in_cycles == whole_events
    # Nested per thread, as docs/chrome-trace.md says every trace is. The
    # target's own torch.profiler range (its ProfilerStep#N) opens in
    # prof.step() at the end of a step and ends after the next step's op:
    # it goes on into the next step, so gpuprof's step frames have a track
    # of their own (on the thread's, torch 1.13 gave "slice [428.268,
    # 753.733] on (29020, 29020) overlaps its parent's end 520.533").
    assert all(found == [] for found in problems.values()), problems


# --------------------------------------------------------------------------
# --step-op: an op's name, one overload, repeated.
#
# overload_steps.py's iteration i calls aten::add.out (O) once,
# aten::add.Tensor (T) i + 1 times, aten::mul.Tensor (M) once. Each call of
# a step op starts a step (calls before the first belong to none), so with
# --schedule skip_first=3,active=4,repeat=1 (steps 3 to 6 recorded):
#   aten::add (every overload): [O] [T M] [O] ([T] [T M]) [O] ([T]) [T] [T M] ...
#       steps 3-6 = [T] [T M] [O] [T]: 4 add, 1 mul
#   aten::add.out: one step per iteration: iterations 3-6: 5+6+7+8 = 26 add, 4 mul
#   aten::add.Tensor: O | [T M O] [T] [T M O] ([T] [T] [T M O]) ([T]) ...
#       steps 3-6 = [T] [T] [T M O] [T]: 5 add, 1 mul
#   aten::add.out and aten::mul: [O T] [M] [O T T] ([M] [O T T T] [M] [O T T T T]) ...
#       steps 3-6: 9 add, 2 mul
STEP_OP_ITERATIONS = 8
STEP_OP_SCHEDULE = "skip_first=3,active=4,repeat=1"
STEP_OP_CASES = {
    "name": (("aten::add",), {"aten::add": 4, "aten::mul": 1}),
    "overload-out": (("aten::add.out",), {"aten::add": 26, "aten::mul": 4}),
    "overload-Tensor": (("aten::add.Tensor",), {"aten::add": 5, "aten::mul": 1}),
    "repeated": (("aten::add.out", "aten::mul"), {"aten::add": 9, "aten::mul": 2}),
}


def run_overload_steps(procs, workdir, torch_env, iterations, spin_s, *gpuprof_args):
    """overload_steps.py under `record -p PID GPUPROF_ARGS` from before its
    first step op to its exit; both must exit 0."""
    target = procs.start_workload("overload_steps.py", workdir, str(iterations), str(spin_s), torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    gp = procs.start_gpuprof("record", "-p", pid, "-q", *gpuprof_args)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    assert target.wait(timeout=120) == 0, target.describe()
    assert gp.wait(timeout=60) == 0, gp.describe()  # the target's exit stops it
    return gp, json.loads((workdir / "iterations.json").read_text())


@pytest.mark.parametrize("case", STEP_OP_CASES)
def test_step_op_is_a_name_or_one_overload_and_repeats(procs, workdir, tmp_path, torch_env, case):
    """docs/schedules.md: `--step-op NAME` (repeatable): each call of that
    op starts a step; NAME is the table's name (every overload) or one
    overload (`aten::add.Tensor`). The recorded steps hold exactly the calls
    the rule puts in them (the table: the four cases differ), one step frame
    each."""
    step_ops, expected = STEP_OP_CASES[case]
    whole = tmp_path / "steps.gpuprof"
    run_overload_steps(procs, workdir, torch_env, STEP_OP_ITERATIONS, 0, "-o", whole, "--schedule", STEP_OP_SCHEDULE,
                       *[arg for op in step_ops for arg in ("--step-op", op)])
    table = report_table(whole)
    assert table.calls() == {**expected, "ProfilerStep*": 4}, table.text
    assert step_frames(whole, tmp_path) == ([3, 4, 5, 6], []), table.text


# --------------------------------------------------------------------------
# --schedule with -F, and with CUDA launches: only what falls in recorded steps.

SAMPLED_ITERATIONS = 6
SAMPLED_SCHEDULE = "skip_first=2,active=3,repeat=1"  # steps (iterations) 2, 3 and 4
SPIN_S = 0.25  # CPU time each iteration spins
SAMPLE_HZ = 199


def test_samples_only_in_recorded_steps(procs, workdir, tmp_path, torch_env):
    """docs/schedules.md: CPU samples are kept when their time falls in a
    recorded step. overload_steps.py spins SPIN_S of CPU in every step: the
    recording holds samples inside its recorded steps' frames only, as many
    as HZ x the CPU time the workload measured over those steps (the
    tightest bound sampling allows: conftest's), where steps 0, 1 and 5
    would add some 50 each."""
    whole = tmp_path / "sampled.gpuprof"
    gp, iterations = run_overload_steps(procs, workdir, torch_env, SAMPLED_ITERATIONS, SPIN_S, "-o", whole,
                                        "-F", str(SAMPLE_HZ), "--schedule", SAMPLED_SCHEDULE,
                                        "--step-op", "aten::add.out")
    doc = export_trace(whole, tmp_path / "sampled.json")
    frames = step_frame_spans(doc)
    assert sorted(frames) == [2, 3, 4], sorted(frames)
    zero = time_zero_ns(doc)
    samples = [zero + span_ns(e)[0] for e in doc["traceEvents"] if e["ph"] == "i"]
    outside = [t for t in samples if not any(start <= t <= end for start, end in frames.values())]
    assert outside == [], (len(outside), len(samples))
    assert parse_stopped_line(gp.stderr())["samples"] == len(samples), gp.stderr()
    cpu_ns, runs = iterations["cpu_ns"], iterations["runs"]
    assert_samples_match_cpu_time(len(samples), SAMPLE_HZ, (cpu_ns[5] - cpu_ns[2]) / 1e9, runs=runs[5] - runs[2],
                                  why=f"(steps 2-4; per iteration {[b - a for a, b in zip(cpu_ns, cpu_ns[1:])]} ns)")


LAUNCH_SCHEDULE = "skip_first=2,active=3,repeat=1"
LAUNCH_RECORDED = 3


def test_cuda_launches_and_gpu_times_only_in_recorded_steps(tmp_path):
    """docs/schedules.md: CUDA launches are kept when their time falls in a
    recorded step, GPU activities when their launch was recorded.
    launch_driver's step (tests/integration/test_cuda_launches.py) starts
    with aten::cuda_linear; with the stand-in CUPTI each step's 6 launches
    and 9 GPU activities (15.7 us) are known: exactly 3 steps' worth of each
    table. The command's own output is unchanged."""
    env = {"GPUPROF_CUPTI_LIBRARY": str(STAND_IN)}
    alone = run_program(LAUNCH_DRIVER, str(LAUNCH_STEPS), env={**env, "CUDA_INJECTION64_PATH": str(SHIM)})
    assert alone.returncode == 0 and "injection ok" in alone.stdout, alone.stdout + alone.stderr
    out = tmp_path / "steps.gpuprof"
    result = run_gpuprof("record", "-q", "-o", out, "--schedule", LAUNCH_SCHEDULE, "--step-op", "aten::cuda_linear",
                         "--", LAUNCH_DRIVER, str(LAUNCH_STEPS), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stdout == alone.stdout, result.stdout
    stopped = re.search(r"; (\d+) CUDA launches, (\d+) lost", result.stderr)
    assert stopped and stopped.groups() == (str(6 * LAUNCH_RECORDED), "0"), result.stderr

    def per_recorded(n):  # a count over all of launch_driver's steps -> over the recorded ones
        assert n % LAUNCH_STEPS == 0
        return n // LAUNCH_STEPS * LAUNCH_RECORDED

    def in_step(op):
        # The launch main() makes outside every op lies inside the step's
        # frame: the innermost call there, as torch.profiler charges it to
        # its ProfilerStep#N range.
        return "ProfilerStep*" if op == "[no op]" else op

    check_launches(out, {(in_step(op), *rest): per_recorded(n) for (op, *rest), n in LAUNCHES.items()}, outside=0)
    rows, footer, text = kernel_rows(out)
    assert rows == {(in_step(op), kernel, per_recorded(calls),
                     f"{float(total.removesuffix('us')) / LAUNCH_STEPS * LAUNCH_RECORDED:.3f}us", avg)
                    for op, kernel, calls, total, avg in KERNELS}, text
    assert footer[0] == (f"{9 * LAUNCH_RECORDED} GPU activities, {15.7 * LAUNCH_RECORDED:.3f}us of GPU time "
                         f"(0 launched outside any op, 0 whose launch was not seen)"), text
    # The op table with its CUDA columns: the steps' ops and torch's kernel
    # rows (test_cupti.py's EXPECTED_CUDA_COLUMNS), without launch_driver's
    # last op (called after its last step: unrecorded); the step frames'
    # row holds the launch outside ops (0.7 us a step) and all of the step.
    share = LAUNCH_RECORDED / LAUNCH_STEPS
    rows, _, text = cuda_columns(out)
    assert rows == {
        "ProfilerStep*": expected_cuda_cells(0.7 * LAUNCH_RECORDED, 15.7 * LAUNCH_RECORDED, LAUNCH_RECORDED,
                                             GPU_TOTAL_US * share),
        **{name: expected_cuda_cells(self_us * share, total_us * share, per_recorded(calls), GPU_TOTAL_US * share)
           for name, (self_us, total_us, calls) in EXPECTED_CUDA_COLUMNS.items()
           if name != "aten::cuda_launch_errors"}}, text

#!/usr/bin/env python3
"""report's memory and speed against the events of a recording.

    sudo /usr/bin/python3 bench/report_memory.py [--seconds 2,8] [--keep DIR] [--part N ...]

Records tests/workloads/small_op_loop.py (the most op events per second)
for each number of seconds, then runs on each file, one after the other:
  - `gpuprof report FILE`: the op table, which streams the events (a first
    read for the probe costs, a second that aggregates as it reads;
    docs/report.md, "Memory");
  - `gpuprof report FILE --folded`: the folded stacks, streamed too (a
    thread's calls wait until the thread is at rest; docs/record-file.md,
    "Streaming reads");
  - the same with GPUPROF_REPORT_READ_WHOLE=1 (the test hook that reads the
    recording whole), for comparison;
  - `gpuprof report FILE --pprof OUT`: the pprof profile, streamed too (the
    folded stacks' sums, one per column), and the same read whole;
  - `gpuprof report FILE --chrome-trace OUT`: the Chrome trace, streamed
    too (each thread's calls go to a temporary file until the end), and the
    same read whole;
  - `gpuprof report FILE --speedscope OUT`: the speedscope profile, from
    the same replay of each thread's calls (each thread's events to a
    temporary file of their own), and the same read whole.
Then, for each number of seconds, `gpuprof record -a` of two such loops
(and whatever else runs torch on the machine meanwhile) and on that file:
  - `gpuprof report FILE`: a table per process, streamed (an aggregate per
    process), and the same read whole;
  - `gpuprof report FILE --pid PID` (the first loop's), streamed, and the
    same read whole;
  - `gpuprof report FILE --folded`: each process's stacks under its root
    frame, streamed (stack sums per process), and the same read whole.
Then, for each number of seconds, `gpuprof record --with-modules` of
tests/workloads/module_loop.py (a model trained on one thread, another in
an inference loop on a second) and on that file:
  - `gpuprof report FILE --modules`: the layer table, streamed (each
    thread's settled calls into the module tree), and the same read whole;
  - `gpuprof report FILE --chrome-trace OUT`: the Chrome trace with its
    module slices, streamed, and the same read whole;
  - `gpuprof report FILE --group-by-stack-n 2`: the table grouped by the
    top two Python frames of each call, streamed (calls wait for their
    entry stacks), and the same read whole.
Then, for each number of seconds, `gpuprof record --record-shapes` of the
loop and on that file:
  - `gpuprof report FILE --chrome-trace OUT`: the trace with each call's
    input shapes, streamed, and the same read whole;
  - the same with `--ops '^aten::add$'`, streamed;
  - `gpuprof report FILE --group-by-input-shape`: the table grouped by
    input shape, streamed, and the same read whole.
Then, for each number of seconds, `gpuprof record --profile-memory` of the
loop and on that file:
  - `gpuprof report FILE`: the table with its memory columns, streamed
    (each call joined with the allocator events of its moments), and the
    same read whole.
Then, for each number of seconds, `gpuprof record -- launch_driver STEPS`
(tests/fake_libtorch/launch_driver, 10,000 steps per second given, with
the stand-in CUPTI of tests/fake_cupti: per step 6 launches and 9 GPU
activities through the real CUPTI shim) and on that file:
  - `gpuprof report FILE`: the table with its CUDA columns, streamed, and
    the same read whole;
  - `--gpu`, the GPU records sorted through temporary files (analyze/
    sorted_gpu_time.h), streamed, and the same read whole;
  - `--kernels`, `--launches` and `--chrome-trace OUT` (each GPU activity
    joined to its launch and spilled per stream), streamed, and the same
    read whole;
  - `--chrome-trace OUT --ops '^aten::cuda_linear$'` (each launch and GPU
    activity kept by the call it ran in or that launched it, the calls
    joined with them as they come), streamed, and the same read whole.
Then, for each number of seconds, `gpuprof record -a --with-stack` of two
such loops and on that file:
  - `--folded`, `--pprof OUT` and `--group-by-stack-n 2`, every process's
    stacks under its entries' Python frames, streamed (each process's
    events and entry stacks renumbered as they come: analyze/pairs_first.h),
    and the same read whole;
  - cut by `--pid` to the first loop: `--chrome-trace OUT`, `--speedscope
    OUT` and `--modules`, streamed, and the same read whole.
`--part N` (repeatable: 1 loop, 2 record -a, 3 modules, 4 shapes, 5
memory, 6 GPU, 7 record -a --with-stack) runs only those parts. With
`--baseline GPUPROF` (another gpuprof build, e.g. of the commit before a
change: `git worktree add`, `make`), each mode runs `--repeat N` times
(default 3) with this build and with that one, turn about, on the same
file: the bench prints each one's best wall time and their ratio, and the
ratio of their median times (page faults slow some runs and not others, so
a change that saves them can show in the median and not in the best). The bench prints each one's peak RSS (wait4's ru_maxrss), wall time and events per
second, and, between the shortest and the longest recording, the RSS each
grew by per million more events. Flat memory is 0 KB per million events.
"""
import argparse
import functools
import os
import pathlib
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from record_size import GPUPROF, LOOP, record  # noqa: E402

MODULE_LOOP = pathlib.Path(__file__).resolve().parent.parent / "tests" / "workloads" / "module_loop.py"
LAUNCH_DRIVER = GPUPROF.parent / "tests" / "fake_libtorch" / "launch_driver"
STAND_IN_CUPTI = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"


def record_system_wide(seconds, workdir, label, extra=()):
    """`gpuprof record -a -d SECONDS` (extra: more record options) while two
    loops run: (record file, the first loop's pid)."""
    out = workdir / f"{label}.gpuprof"
    loops = []
    try:
        for i in range(2):
            ready = workdir / f"ready-{label}-{i}"
            loops.append((subprocess.Popen([sys.executable, str(LOOP), str(seconds + 60), str(ready)],
                                           stdout=subprocess.DEVNULL), ready))
        deadline = time.monotonic() + 120
        for loop, ready in loops:
            while not ready.exists() or not ready.read_text():
                if loop.poll() is not None or time.monotonic() > deadline:
                    sys.exit("report_memory: the loops did not start")
                time.sleep(0.1)
        rec = subprocess.run([str(GPUPROF), "record", "-a", "-q", *extra, "-d", str(seconds), "-o", str(out)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if rec.returncode != 0:
            sys.exit(f"report_memory: gpuprof record -a failed ({rec.returncode}): {rec.stderr}")
        return out, loops[0][0].pid
    finally:
        for loop, _ in loops:
            loop.send_signal(signal.SIGKILL)
            loop.wait()


def record_modules(seconds, workdir, label):
    """`gpuprof record --with-modules -- module_loop.py SECONDS` (two
    models on two threads, one trained): the record file."""
    out = workdir / f"{label}.gpuprof"
    rec = subprocess.run([str(GPUPROF), "record", "-q", "--with-modules", "-o", str(out), "--", sys.executable,
                          str(MODULE_LOOP), str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
    if rec.returncode != 0:
        sys.exit(f"report_memory: gpuprof record --with-modules failed ({rec.returncode}): {rec.stderr}")
    return out


def record_loop_with(option, seconds, workdir, label):
    """`gpuprof record OPTION -- small_op_loop.py SECONDS`: the record file."""
    out = workdir / f"{label}.gpuprof"
    rec = subprocess.run([str(GPUPROF), "record", "-q", option, "-o", str(out), "--", sys.executable,
                          str(LOOP), str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if rec.returncode != 0:
        sys.exit(f"report_memory: gpuprof record {option} failed ({rec.returncode}): {rec.stderr}")
    return out


def record_gpu(steps, workdir, label):
    """`gpuprof record -- launch_driver STEPS` with the stand-in CUPTI: the
    record file."""
    out = workdir / f"{label}.gpuprof"
    rec = subprocess.run([str(GPUPROF), "record", "-q", "-o", str(out), "--", str(LAUNCH_DRIVER), str(steps)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         env={**os.environ, "GPUPROF_CUPTI_LIBRARY": str(STAND_IN_CUPTI)})
    if rec.returncode != 0:
        sys.exit(f"report_memory: gpuprof record -- launch_driver failed ({rec.returncode}): {rec.stderr}")
    return out


def run_report(args, env=None, gpuprof=GPUPROF):
    """(peak RSS in KiB, wall seconds) of one `gpuprof report` run."""
    start = time.monotonic()
    proc = subprocess.Popen([str(gpuprof), "report", *args], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, **(env or {})})
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    err = proc.stderr.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"report_memory: gpuprof report {' '.join(args)} failed: {err}")
    return usage.ru_maxrss, wall


def run_mode(args, env, baseline, repeat):
    """One report mode: (peak RSS in KiB, wall seconds); with a baseline
    build, (this build's peak RSS, its best wall seconds, the baseline's
    best, the ratio of their median wall seconds) over `repeat` turns, each
    build once per turn, so that both meet the VM's phases alike."""
    if baseline is None:
        return run_report(args, env)
    ours, theirs = [], []
    for _ in range(repeat):
        ours.append(run_report(args, env))
        theirs.append(run_report(args, env, gpuprof=baseline))
    our_walls, their_walls = [wall for _, wall in ours], [wall for _, wall in theirs]
    return (max(rss for rss, _ in ours), min(our_walls), min(their_walls),
            statistics.median(our_walls) / statistics.median(their_walls))


def measure(path):
    """measure_file(path) in a child process: decoding the events in this one
    would grow its RSS, which the gpuprof processes it forks would inherit in
    their ru_maxrss."""
    out = subprocess.run([sys.executable, "-c",
                          "import sys; sys.path.insert(0, sys.argv[1]); from record_size import measure_file; "
                          "print(*measure_file(__import__('pathlib').Path(sys.argv[2])))",
                          str(pathlib.Path(__file__).resolve().parent), str(path)],
                         check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), int(out[1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", default="2,8", help="recording lengths, comma-separated")
    parser.add_argument("--keep", type=pathlib.Path, help="keep the record files in this directory")
    parser.add_argument("--part", type=int, action="append", choices=range(1, 8),
                        help="run only this part (1 loop, 2 record -a, 3 modules, 4 shapes, 5 memory, 6 GPU, "
                             "7 record -a --with-stack); repeatable")
    parser.add_argument("--baseline", type=pathlib.Path,
                        help="another gpuprof build: time each mode with both, turn about")
    parser.add_argument("--repeat", type=int, default=3, help="with --baseline: turns per mode (default 3)")
    args = parser.parse_args()
    if args.baseline and not os.access(args.baseline, os.X_OK):
        sys.exit(f"report_memory: --baseline {args.baseline}: not an executable")
    if args.repeat < 1:
        sys.exit("report_memory: --repeat must be at least 1")
    if os.geteuid() != 0:
        sys.exit("report_memory: run as root (gpuprof record attaches BPF probes)")
    lengths = [int(s) for s in args.seconds.split(",")]
    parts = set(args.part or range(1, 8))
    if len(lengths) < 2:
        sys.exit("report_memory: give two lengths or more, e.g. --seconds 2,8")
    whole = {"GPUPROF_REPORT_READ_WHOLE": "1"}
    # mode: (arguments after FILE, environment); {out} and {pprof} are files in the work directory
    modes = {"table (streamed)": ([], None),
             "--folded (streamed)": (["--folded"], None),
             "--folded (whole)": (["--folded"], whole),
             "--pprof (streamed)": (["--pprof", "{pprof}"], None),
             "--pprof (whole)": (["--pprof", "{pprof}"], whole),
             "--chrome-trace (streamed)": (["--chrome-trace", "{out}"], None),
             "--chrome-trace (whole)": (["--chrome-trace", "{out}"], whole),
             "--speedscope (streamed)": (["--speedscope", "{out}"], None),
             "--speedscope (whole)": (["--speedscope", "{out}"], whole)}
    part = functools.partial(measure_part, baseline=args.baseline, repeat=args.repeat)
    with tempfile.TemporaryDirectory(prefix="report_memory.") as tmp:
        workdir = args.keep or pathlib.Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        # record -p of the loop.
        part(lengths, workdir, modes,
                     lambda seconds: (record(GPUPROF, seconds, workdir, f"loop-{seconds}s")[0], None),
                     "{seconds} s recording", 1 in parts)
        # record -a: a table per process.
        system_modes = {"-a table (streamed)": (["--row-limit", "-1"], None),
                        "-a table (whole)": (["--row-limit", "-1"], whole),
                        "-a --pid (streamed)": (["--pid", "{pid}"], None),
                        "-a --pid (whole)": (["--pid", "{pid}"], whole),
                        "-a --folded (streamed)": (["--folded"], None),
                        "-a --folded (whole)": (["--folded"], whole),
                        "-a --folded --pid (streamed)": (["--folded", "--pid", "{pid}"], None),
                        "-a --folded --pid (whole)": (["--folded", "--pid", "{pid}"], whole),
                        "-a --chrome-trace --pid (streamed)": (["--chrome-trace", "{out}", "--pid", "{pid}"], None),
                        "-a --chrome-trace --pid (whole)": (["--chrome-trace", "{out}", "--pid", "{pid}"], whole)}
        part(lengths, workdir, system_modes,
                     lambda seconds: record_system_wide(seconds, workdir, f"all-{seconds}s"),
                     "{seconds} s record -a of two loops", 2 in parts)
        # record --with-modules: the layer table.
        module_modes = {"--modules (streamed)": (["--modules"], None),
                        "--modules (whole)": (["--modules"], whole),
                        "--chrome-trace (streamed)": (["--chrome-trace", "{out}"], None),
                        "--chrome-trace (whole)": (["--chrome-trace", "{out}"], whole),
                        "--group-by-stack-n (streamed)": (["--group-by-stack-n", "2"], None),
                        "--group-by-stack-n (whole)": (["--group-by-stack-n", "2"], whole)}
        part(lengths, workdir, module_modes,
                     lambda seconds: (record_modules(seconds, workdir, f"modules-{seconds}s"), None),
                     "{seconds} s record --with-modules of tests/workloads/module_loop.py", 3 in parts)
        # record --record-shapes: input shapes in the trace and the table.
        shape_modes = {"--chrome-trace (streamed)": (["--chrome-trace", "{out}"], None),
                       "--chrome-trace (whole)": (["--chrome-trace", "{out}"], whole),
                       "--chrome-trace --ops (streamed)": (["--chrome-trace", "{out}", "--ops", "^aten::add$"], None),
                       "--group-by-input-shape (streamed)": (["--group-by-input-shape"], None),
                       "--group-by-input-shape (whole)": (["--group-by-input-shape"], whole)}
        part(lengths, workdir, shape_modes,
                     lambda seconds: (record_loop_with("--record-shapes", seconds, workdir, f"shapes-{seconds}s"),
                                      None),
                     "{seconds} s record --record-shapes", 4 in parts)
        # record --profile-memory: the table's memory columns, the trace's memory counter.
        memory_modes = {"memory table (streamed)": ([], None),
                        "memory table (whole)": ([], whole),
                        "memory --chrome-trace (streamed)": (["--chrome-trace", "{out}"], None),
                        "memory --chrome-trace (whole)": (["--chrome-trace", "{out}"], whole)}
        part(lengths, workdir, memory_modes,
                     lambda seconds: (record_loop_with("--profile-memory", seconds, workdir, f"memory-{seconds}s"),
                                      None),
                     "{seconds} s record --profile-memory", 5 in parts)
        # launch_driver with the stand-in CUPTI: GPU activities.
        gpu_modes = {"CUDA table (streamed)": ([], None),
                     "CUDA table (whole)": ([], whole),
                     "--kernels (streamed)": (["--kernels"], None),
                     "--kernels (whole)": (["--kernels"], whole),
                     "--gpu (streamed)": (["--gpu"], None),
                     "--gpu (whole)": (["--gpu"], whole),
                     "--launches (streamed)": (["--launches"], None),
                     "--launches (whole)": (["--launches"], whole),
                     "GPU --chrome-trace (streamed)": (["--chrome-trace", "{out}"], None),
                     "GPU --chrome-trace (whole)": (["--chrome-trace", "{out}"], whole),
                     "GPU --chrome-trace --ops (streamed)": (["--chrome-trace", "{out}", "--ops", "^aten::cuda_linear$"],
                                                             None),
                     "GPU --chrome-trace --ops (whole)": (["--chrome-trace", "{out}", "--ops", "^aten::cuda_linear$"],
                                                          whole)}
        part(lengths, workdir, gpu_modes,
                     lambda seconds: (record_gpu(10000 * seconds, workdir, f"gpu-{seconds}"), None),
                     "launch_driver {seconds}0,000 steps", 6 in parts)
        # record -a --with-stack: one process's outputs, its entry stacks renumbered.
        stack_modes = {f"-a --with-stack {name} ({how})": (output, env)
                       for name, output in (("--folded", ["--folded"]), ("--pprof", ["--pprof", "{pprof}"]),
                                            ("--group-by-stack-n", ["--group-by-stack-n", "2"]),
                                            ("--chrome-trace --pid", ["--chrome-trace", "{out}", "--pid", "{pid}"]),
                                            ("--speedscope --pid", ["--speedscope", "{out}", "--pid", "{pid}"]),
                                            ("--modules --pid", ["--modules", "--pid", "{pid}"]))
                       for how, env in (("streamed", None), ("whole", whole))}
        part(lengths, workdir, stack_modes,
                     lambda seconds: record_system_wide(seconds, workdir, f"stacks-{seconds}s", ["--with-stack"]),
                     "{seconds} s record -a --with-stack of two loops", 7 in parts)


def measure_part(lengths, workdir, modes, record_for, title, wanted=True, baseline=None, repeat=1):
    """One part of the bench (unless not wanted: --part): for each length, record_for(seconds) gives
    (record file, the first loop's pid or None); every mode runs on it
    ({out}, {pprof} and {pid} filled in; with the baseline build too:
    run_mode), and its figures are printed, then how each mode's RSS grew
    from the shortest to the longest."""
    if not wanted:
        return
    results = []  # (events, bytes, {mode: (rss, wall)})
    out = workdir / "report_memory.trace.json"
    pprof = workdir / "report_memory.pb.gz"
    for seconds in lengths:
        path, pid = record_for(seconds)
        events, size = measure(path)
        runs = {mode: run_mode([str(path), *[a.format(out=out, pprof=pprof, pid=pid) for a in extra]], env,
                               baseline, repeat)
                for mode, (extra, env) in modes.items()}
        out.unlink(missing_ok=True)
        pprof.unlink(missing_ok=True)
        results.append((events, size, runs))
        print(f"{title.format(seconds=seconds)}: {events:,} op events, {size:,} bytes")
        print_runs(runs, events)
    print_growth(results, modes)


def print_runs(runs, events):
    for mode, (rss, wall, *baseline) in runs.items():
        line = f"  {mode:34} peak RSS {rss / 1024:8.1f} MiB  {wall:6.2f} s  {events / wall / 1e6:6.1f} M events/s"
        if baseline:
            line += (f"  baseline {baseline[0]:6.2f} s  {events / baseline[0] / 1e6:6.1f} M events/s"
                     f"  time ratio {wall / baseline[0]:5.2f}  of medians {baseline[1]:5.2f}")
        print(line)


def print_growth(results, modes):
    """The RSS each mode grew by between the shortest and the longest recording."""
    (e0, _, r0), (e1, _, r1) = results[0], results[-1]
    print(f"RSS growth from {e0:,} to {e1:,} events:")
    for mode in modes:
        grew = r1[mode][0] - r0[mode][0]
        print(f"  {mode:34} {grew / 1024:+8.1f} MiB, {grew * 1e6 / (e1 - e0):+8.0f} KiB per million events")


if __name__ == "__main__":
    main()

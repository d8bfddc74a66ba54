"""report's op table, --folded, --pprof, --chrome-trace and --speedscope stream the events
(docs/report.md, "Memory"; docs/record-file.md, "Streaming reads"): their
peak memory does not grow with the recording, and what they print is what
the whole read prints.

Real recordings of tests/workloads/small_op_loop.py (one torch.add per loop
turn, plus one before the loop) on both torches: a short and a 4x longer
one. The table's aten::add calls are exactly the adds the loop made; the
peak RSS of `report`, `report --folded`, `report --pprof`, `report
--chrome-trace` and `report --speedscope` on the long recording is within a few MiB of that on the
short one, while the whole read (GPUPROF_REPORT_READ_WHOLE=1, the test
hook) grows by tens of MiB for the same events. RSS is measured by a small interpreter that runs report and
reads wait4's ru_maxrss (a child forked from pytest would count pytest's
memory).

Recordings of tests/workloads/nested_threads.py (nested ops and a range on
three threads), with and without --with-stack and CPU samples, and with
--record-shapes: the streamed
--folded (self time, and samples when recorded) prints, on stdout and
stderr, the same bytes as the whole read, and --pprof, --chrome-trace
(streamed: no module frames in these stacks) and --speedscope write the
same file."""
import gzip
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import GPUPROF, TARGET_PYTHON, parse_table, run_gpuprof, wait_until

# The test hook that makes report read every recording whole.
READ_WHOLE = {"GPUPROF_REPORT_READ_WHOLE": "1"}



def report_as_whole(path, *args):
    """`report PATH ARGS`, streamed and read whole (READ_WHOLE): the same
    exit code, stdout and stderr. The streamed run's CompletedProcess."""
    streamed = run_gpuprof("report", path, *args, timeout=300)
    whole = run_gpuprof("report", path, *args, timeout=300, env=READ_WHOLE)
    assert streamed.returncode == whole.returncode, (args, streamed.stderr, whole.stderr)
    assert streamed.stdout == whole.stdout, args
    assert streamed.stderr == whole.stderr, args
    return streamed


def report_file_as_whole(path, written, *args, read=Path.read_bytes):
    """`report PATH ARGS`, which writes the file `written`, streamed and read
    whole (READ_WHOLE): both succeed, with the same file (as `read` reads
    it) and the same stderr. The streamed file's contents, and the streamed
    run's stderr."""
    streamed = run_gpuprof("report", path, *args, timeout=300)
    assert streamed.returncode == 0, streamed.stderr
    streamed_contents = read(written)
    whole = run_gpuprof("report", path, *args, timeout=300, env=READ_WHOLE)
    assert whole.returncode == 0, whole.stderr
    assert streamed_contents == read(written), args
    assert streamed.stderr == whole.stderr, (args, streamed.stderr, whole.stderr)
    return streamed_contents, streamed.stderr


PEAK_RSS = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
sys.stderr.write(err.decode())
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def reads_of(path, *report_args, status=0):
    """How many times `report PATH ARGS` opened the recording (strace): a
    streamed output reads it once for what comes around the events and once
    for the events, and a third time, for the threads that ran ops, only
    when it joins records to calls by their thread (docs/report.md). The
    report must exit with `status`."""
    log = Path(path).with_suffix(".strace")
    run = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat", "-o", log, GPUPROF, "report", path,
                          *map(str, report_args)], capture_output=True, text=True, timeout=300)
    assert run.returncode == status, run.stderr
    return sum(f'"{path}"' in line for line in log.read_text().splitlines())


def peak_rss_kib(*report_args, env=None, status=0, error=None):
    """report's peak RSS; it must exit with `status`, and say `error` (a
    regex) when given."""
    run = subprocess.run([TARGET_PYTHON, "-c", PEAK_RSS, str(GPUPROF), "report", *map(str, report_args)],
                         capture_output=True, text=True, timeout=300,
                         env=None if env is None else {**os.environ, **env})
    assert run.returncode == 0, run.stderr
    exit_status, kib = map(int, run.stdout.split())
    assert exit_status == status, run.stderr
    if error is not None:
        assert re.search(error, run.stderr), run.stderr
    return kib


def record_loop(torch_env, tmp_path, seconds, *record_args):
    """small_op_loop.py recorded for `seconds` (record_args: more record
    options): (record file, its loop turns)."""
    out = tmp_path / f"loop-{seconds}s.gpuprof"
    rec = run_gpuprof("record", "-q", *record_args, "-o", out, "--",
                      *torch_env.argv("small_op_loop.py", str(seconds)), timeout=300)
    assert rec.returncode == 0, rec.stderr
    loops = re.search(r"^loops (\d+)$", rec.stdout, re.M)
    assert loops, rec.stdout
    return out, int(loops.group(1))


def test_table_memory_is_flat_in_the_events(torch_env, tmp_path):
    runs = []
    for seconds in (1, 4):
        path, loops = record_loop(torch_env, tmp_path, seconds)
        report = run_gpuprof("report", path, "--row-limit", "-1")
        assert report.returncode == 0, report.stderr
        table = parse_table(report.stdout)
        # One torch.add per loop turn and one before: every call counted.
        assert table.calls()["aten::add"] == loops + 1, report.stdout
        folded = run_gpuprof("report", path, "--folded")
        assert folded.returncode == 0, folded.stderr
        assert re.search(r"^aten::add \d+$", folded.stdout, re.M), folded.stdout
        trace = tmp_path / "trace.json"
        profile = tmp_path / "profile.pb.gz"
        speedscope = tmp_path / "profile.speedscope.json"
        runs.append((loops, peak_rss_kib(path), peak_rss_kib(path, "--folded"),
                     peak_rss_kib(path, "--folded", env=READ_WHOLE), peak_rss_kib(path, "--chrome-trace", trace),
                     peak_rss_kib(path, "--pprof", profile), peak_rss_kib(path, "--pprof", profile, env=READ_WHOLE),
                     peak_rss_kib(path, "--speedscope", speedscope),
                     peak_rss_kib(path, "--speedscope", speedscope, env=READ_WHOLE),
                     # Several files (docs/fleet.md): the file twice, one table.
                     peak_rss_kib(path, path), peak_rss_kib(path, path, env=READ_WHOLE),
                     peak_rss_kib(path, path, "--folded"), peak_rss_kib(path, path, "--pprof", profile),
                     peak_rss_kib(path, path, "--chrome-trace", trace),
                     # --gpu reads whole, but says a CPU-only recording has
                     # no GPU times after a read that holds no events.
                     peak_rss_kib(path, "--gpu", status=2, error=r"^gpuprof: error: --gpu: .* has no GPU times"),
                     peak_rss_kib(path, "--gpu", status=2, env=READ_WHOLE)))
        both = report_as_whole(path, path, "--row-limit", "-1")
        assert "2 recordings, 2 processes, one table:" in both.stdout, both.stdout
        assert parse_table(both.stdout).calls()["aten::add"] == 2 * (loops + 1), both.stdout
        # Every add in its thread's evented profile: one opened, one closed.
        profile_doc = json.loads(speedscope.read_text())
        frames = [frame["name"] for frame in profile_doc["shared"]["frames"]]
        opened = [frames[e["frame"]] for p in profile_doc["profiles"] for e in p["events"] if e["type"] == "O"]
        assert opened.count("aten::add") == loops + 1, (loops, len(opened))
        trace.unlink()
        profile.unlink()
        speedscope.unlink()
    (short_loops, short_table, short_folded, short_whole, short_trace, short_pprof, short_pprof_whole,
     short_speedscope, short_speedscope_whole, short_many, short_many_whole, short_many_folded, short_many_pprof,
     short_many_trace, short_gpu, short_gpu_whole), \
        (long_loops, long_table, long_folded, long_whole, long_trace, long_pprof, long_pprof_whole,
         long_speedscope, long_speedscope_whole, long_many, long_many_whole, long_many_folded, long_many_pprof,
         long_many_trace, long_gpu, long_gpu_whole) = runs
    assert long_loops > 2 * short_loops, runs
    summary = (f"aten::add calls {short_loops + 1} -> {long_loops + 1}: table peak RSS {short_table} -> "
               f"{long_table} KiB, --folded {short_folded} -> {long_folded} KiB, --folded read whole "
               f"{short_whole} -> {long_whole} KiB, --chrome-trace {short_trace} -> {long_trace} KiB, "
               f"--pprof {short_pprof} -> {long_pprof} KiB, --pprof read whole {short_pprof_whole} -> "
               f"{long_pprof_whole} KiB, --speedscope {short_speedscope} -> {long_speedscope} KiB, "
               f"--speedscope read whole {short_speedscope_whole} -> {long_speedscope_whole} KiB, two files "
               f"{short_many} -> {long_many} KiB, read whole {short_many_whole} -> {long_many_whole} KiB, two files' "
               f"--folded {short_many_folded} -> {long_many_folded} KiB, --pprof {short_many_pprof} -> "
               f"{long_many_pprof} KiB, --chrome-trace {short_many_trace} -> {long_many_trace} KiB, --gpu's error "
               f"{short_gpu} -> {long_gpu} KiB, read whole {short_gpu_whole} -> {long_gpu_whole} KiB")
    print(summary)
    # Whole, each op event costs ~90 bytes of report's memory (two per add);
    # streamed, none: allow 4 MiB of allocator noise.
    assert long_table - short_table < 4096, summary
    assert long_folded - short_folded < 4096, summary
    assert long_trace - short_trace < 4096, summary
    assert long_pprof - short_pprof < 4096, summary
    assert long_speedscope - short_speedscope < 4096, summary
    assert long_speedscope_whole - short_speedscope_whole > 40 * (long_loops - short_loops) * 2 / 1024, summary
    assert long_many - short_many < 4096, summary
    assert long_many_folded - short_many_folded < 4096, summary
    assert long_many_pprof - short_many_pprof < 4096, summary
    assert long_many_trace - short_many_trace < 4096, summary
    assert long_gpu - short_gpu < 4096, summary
    # Read whole, --gpu's error came after every event was held: 32 bytes
    # each, in a vector that doubles, so the growth between the runs depends
    # on where the doublings fall (8.1 MiB for 193,000 more adds once, under
    # 24 bytes an event); but the long run holds all of its events above
    # what the streamed error's read holds.
    assert long_gpu_whole - long_gpu > 24 * (long_loops + 1) * 2 / 1024, summary
    # Read whole, one file at a time: as one file read whole.
    assert long_many_whole - short_many_whole > 40 * (long_loops - short_loops) * 2 / 1024, summary
    assert long_whole - short_whole > 40 * (long_loops - short_loops) * 2 / 1024, summary
    assert long_pprof_whole - short_pprof_whole > 40 * (long_loops - short_loops) * 2 / 1024, summary


def test_streamed_shapes_trace_and_table_are_whole_and_their_memory_flat(torch_env, tmp_path):
    """record --record-shapes: the streamed --chrome-trace gives every
    aten::add of the loop its input shapes, writes the whole read's file,
    with --ops too; the streamed table grouped by input shape counts every
    add in one row, as the whole read prints it; the peak memory of each
    does not grow with the recording, while the whole read's does."""
    rss = {}
    for seconds in (1, 4):
        out, loops = record_loop(torch_env, tmp_path, seconds, "--record-shapes")
        trace = tmp_path / "trace.json"
        streamed_bytes, _ = report_file_as_whole(out, trace, "--chrome-trace", trace)
        # Every add, the one before the loop too, with its two 1-element inputs.
        adds = [line for line in streamed_bytes.splitlines() if b'"cat":"cpu_op","name":"aten::add",' in line]
        assert len(adds) == loops + 1, (len(adds), loops)
        assert all(b'"Input Dims":[[1],[1]' in line for line in adds), [a for a in adds if b"[[1],[1]" not in a][:3]
        # --ops: the adds alone (not the ones() before them), shapes and all.
        ops = ("--chrome-trace", trace, "--ops", "^aten::add$")
        ops_bytes, _ = report_file_as_whole(out, trace, *ops)
        kept = [line for line in ops_bytes.splitlines() if b'"cat":"cpu_op"' in line]
        assert len(kept) == loops + 1 and all(b'"name":"aten::add"' in line for line in kept), len(kept)
        grouped = report_as_whole(out, "--group-by-input-shape", "--row-limit", "-1")
        assert grouped.returncode == 0, grouped.stderr
        lines = grouped.stdout.splitlines()
        titles = re.split(r"\s{2,}", next(line for line in lines if "# of Calls" in line).strip())
        add = [re.split(r"\s{2,}", line.strip()) for line in lines if line.strip().startswith("aten::add  ")]
        assert len(add) == 1 and add[0][titles.index("Input Shapes")] == "[[1], [1], []]", grouped.stdout
        assert add[0][titles.index("# of Calls")] == str(loops + 1), grouped.stdout
        rss[seconds] = (loops, peak_rss_kib(out, "--chrome-trace", trace),
                        peak_rss_kib(out, "--chrome-trace", trace, env=READ_WHOLE), peak_rss_kib(out, *ops),
                        peak_rss_kib(out, "--group-by-input-shape"),
                        peak_rss_kib(out, "--group-by-input-shape", env=READ_WHOLE))
    summary = (f"(adds, trace peak RSS KiB, read whole, --ops, --group-by-input-shape, read whole): "
               f"1 s {rss[1]}, 4 s {rss[4]}")
    print(summary)
    assert rss[4][0] > 2 * rss[1][0], summary
    # Read whole, each add (its events, its allocator events, its stack
    # pair) costs about 480 bytes: more than 200 per add more is growth with
    # the events (a fixed 30 MiB failed on a run of 53,000 adds more, 24.5
    # MiB).
    whole_growth_kib = (rss[4][0] - rss[1][0]) * 200 / 1024
    assert rss[4][1] - rss[1][1] < 4096, summary
    assert rss[4][2] - rss[1][2] > whole_growth_kib, summary
    assert rss[4][3] - rss[1][3] < 4096, summary
    assert rss[4][4] - rss[1][4] < 4096, summary
    assert rss[4][5] - rss[1][5] > whole_growth_kib, summary


@pytest.mark.parametrize("extra", [[], ["-F", "997"], ["--with-stack"], ["--with-stack", "-F", "997"],
                                   ["--record-shapes"]],
                         ids=["plain", "samples", "with-stack", "with-stack-samples", "shapes"])
def test_streamed_outputs_print_the_whole_reads_bytes(torch_env, tmp_path, extra):
    out = tmp_path / "nested.gpuprof"
    rec = run_gpuprof("record", "-q", "-o", out, *extra, "--", *torch_env.argv("nested_threads.py", "1"),
                      timeout=300)
    assert rec.returncode == 0, rec.stderr
    assert re.search(r"^turns \d+$", rec.stdout, re.M), rec.stdout
    # The table grouped by stack or input shape: the whole read's rows.
    grouped = {"--with-stack": ["--group-by-stack-n", "2"], "--record-shapes": ["--group-by-input-shape"]}
    for flag, args in grouped.items():
        if flag in extra:
            table = report_as_whole(out, *args, "--row-limit", "-1")
            assert table.returncode == 0 and "aten::addmm" in table.stdout, table.stderr
            assert ("nested_threads.py" if flag == "--with-stack" else "[[") in table.stdout, table.stdout
    samples = [["--folded", "--metric", "samples"]] if "-F" in extra else []
    for args in (["--folded"], ["--folded", "--raw-times"], *samples):
        streamed = report_as_whole(out, *args)
        assert streamed.returncode == 0, streamed.stderr
        lines = streamed.stdout.splitlines()
        if "samples" in args:
            # Samples in the threads' ops, and outside them.
            assert any(";aten::addmm;" in line for line in lines), streamed.stdout
            assert any("aten::" not in line for line in lines), streamed.stdout
            continue
        # Nested paths of every thread's ops, under Python frames with --with-stack.
        assert any(line.startswith("aten::linear;aten::addmm ") or ";aten::linear;aten::addmm " in line
                   for line in lines), streamed.stdout
        assert any("matmul_turn;aten::matmul;" in line for line in lines), streamed.stdout
        assert any("aten::log_softmax" in line for line in lines), streamed.stdout
        if "--with-stack" in extra:
            assert any("nested_threads.py" in line.split(";")[0] for line in lines), streamed.stdout
    # The pprof profile, compensated and raw: the same profile, and the same
    # line about it on stderr (its size on disk included).
    profile = tmp_path / "profile.pb.gz"
    for args in (["--pprof", profile], ["--pprof", profile, "--raw-times"]):
        streamed_bytes, said = report_file_as_whole(out, profile, *args,
                                                    read=lambda p: gzip.decompress(p.read_bytes()))
        assert b"aten::addmm" in streamed_bytes and b"matmul_turn" in streamed_bytes
        if "-F" in extra:
            assert b"samples" in streamed_bytes
        if "--with-stack" in extra:
            assert b"nested_threads.py" in streamed_bytes
        assert re.search(r"^gpuprof: wrote \S+ from \S+: [1-9]\d* samples of [24] sample types", said, re.M), said
    # The Chrome trace (streamed: no module frames here), whole and cut by
    # --time-range: the same file, and the same line about it on stderr.
    trace = tmp_path / "trace.json"
    for args in (["--chrome-trace", trace], ["--chrome-trace", trace, "--time-range", "0.5:"]):
        streamed_bytes, _ = report_file_as_whole(out, trace, *args)
        assert b'"name":"aten::addmm"' in streamed_bytes and b'"name":"matmul_turn"' in streamed_bytes
        if "-F" in extra:
            assert b'"cat":"cpu_sample"' in streamed_bytes
        if "--record-shapes" in extra:  # torch.nn.Linear's input, weight and bias
            assert re.search(rb'"name":"aten::linear".*?"Input Dims":\[\[\d+,\d+\],\[\d+,\d+\],\[\d+\]\]',
                             streamed_bytes), streamed_bytes[:2000]
    # --ops (streamed too: a call's ancestors are in its forest), whole and
    # cut: the calls that match and what they hold, the samples in them.
    for args in (["--chrome-trace", trace, "--ops", "matmul_turn"],
                 ["--chrome-trace", trace, "--ops", "^aten::linear$", "--time-range", "0.5:"]):
        streamed_bytes, _ = report_file_as_whole(out, trace, *args)
        names = set(re.findall(rb'"cat":"(?:cpu_op|user_annotation)","name":"([^"]+)"', streamed_bytes))
        if "matmul_turn" in args:
            assert b"matmul_turn" in names and b"aten::matmul" in names and b"aten::addmm" not in names, names
            if "-F" in extra:
                assert b'"cat":"cpu_sample"' in streamed_bytes
        else:
            assert b"aten::addmm" in names and b"matmul_turn" not in names, names
    # The speedscope profile (from the same replay of each thread's calls):
    # the same file, and the same line about it on stderr.
    speedscope = tmp_path / "profile.speedscope.json"
    streamed_bytes, said = report_file_as_whole(out, speedscope, "--speedscope", speedscope)
    assert b'{"name":"aten::addmm"}' in streamed_bytes and b'{"name":"matmul_turn"}' in streamed_bytes
    assert streamed_bytes.count(b'"type":"evented"') == 3, said  # the three threads' op calls
    assert (b'"type":"sampled"' in streamed_bytes) == ("-F" in extra), said
    if "--with-stack" in extra:
        assert re.search(rb'\{"name":"nested_threads\.py\(\d+\)', streamed_bytes), streamed_bytes[-2000:]


def test_streamed_folded_memory_is_flat_with_stacks_and_samples(torch_env, tmp_path):
    """With --with-stack and -F, the streamed --folded keeps neither the
    entry stacks nor anything per event, for either metric; nor does the
    table grouped by stack (--group-by-stack-n)."""
    rss = {}
    text_kib = {}  # the size of --folded --metric samples
    for seconds in (1, 4):
        out = tmp_path / f"nested-{seconds}s.gpuprof"
        rec = run_gpuprof("record", "-q", "-o", out, "--with-stack", "-F", "997", "--",
                          *torch_env.argv("nested_threads.py", str(seconds)), timeout=300)
        assert rec.returncode == 0, rec.stderr
        folded = run_gpuprof("report", out, "--folded", "--metric", "samples")
        assert folded.returncode == 0, folded.stderr
        text_kib[seconds] = len(folded.stdout.encode()) / 1024
        profile = tmp_path / "profile.pb.gz"
        rss[seconds] = (peak_rss_kib(out, "--folded"), peak_rss_kib(out, "--folded", "--metric", "samples"),
                        peak_rss_kib(out, "--folded", env=READ_WHOLE), peak_rss_kib(out, "--pprof", profile),
                        peak_rss_kib(out, "--pprof", profile, env=READ_WHOLE),
                        peak_rss_kib(out, "--group-by-stack-n", "2"),
                        peak_rss_kib(out, "--group-by-stack-n", "2", env=READ_WHOLE))
    summary = (f"peak RSS KiB (self time, samples, read whole, --pprof, --pprof read whole, --group-by-stack-n, "
               f"read whole): 1 s {rss[1]}, 4 s {rss[4]}; --folded --metric samples KiB: {text_kib}")
    print(summary)
    assert rss[4][0] - rss[1][0] < 4096, summary
    # --metric samples keeps the CPU samples (24 bytes each), as every
    # streamed read does, and the distinct stacks (docs/report.md,
    # "Memory"): their text, held once, and the paths that sum them. Which
    # leaves and Python frames the samples hit varies from run to run (3-5
    # MB of text for either length on torch 2.6, 2026-12-02), so the bound
    # follows the text: 4 MiB, plus three times the text it grew.
    assert rss[4][1] - rss[1][1] < 4096 + 3 * max(0.0, text_kib[4] - text_kib[1]), summary
    assert rss[4][3] - rss[1][3] < 4096, summary
    # The whole read grows by tens of MiB for the same events.
    assert rss[4][2] - rss[1][2] > 30 * 1024, summary
    assert rss[4][4] - rss[1][4] > 30 * 1024, summary
    assert rss[4][5] - rss[1][5] < 4096, summary
    assert rss[4][6] - rss[1][6] > 30 * 1024, summary


@pytest.mark.parametrize("extra", [[], ["--with-stack"]], ids=["plain", "with-stack"])
def test_streamed_outputs_of_chosen_processes_memory_is_flat(torch_env, procs, tmp_path, extra):
    """--folded, --pprof and --chrome-trace of a record -a recording, cut by
    --pid/--comm, stream (cli/report_reads.h), and with entry stacks so do
    they, --folded and the table grouped by stack of every process,
    --speedscope and --modules (the pairs
    renumbered to each process's events as they come: analyze/pairs_first.h):
    from 1 s to 4 s of two small-op loops their peak RSS stays flat, where
    the whole read's grows with the events."""
    rss, events = {}, {}
    profile, trace = tmp_path / "chosen.pb.gz", tmp_path / "chosen.json"
    for seconds in (1, 4):
        loops = []
        for i in range(2):
            ready = tmp_path / f"ready-{seconds}-{i}"
            loops.append((procs.start_workload("small_op_loop.py", str(seconds + 300), str(ready), name=f"loop-{i}",
                                               torch_env=torch_env), ready))
        for loop, ready in loops:
            wait_until(lambda: ready.exists() and ready.read_text(), 180, "the loop to start", watch=[loop])
        out = tmp_path / f"all-{seconds}s.gpuprof"
        rec = run_gpuprof("record", "-a", "-q", *extra, "-d", str(seconds), "-o", out, timeout=300)
        for loop, _ in loops:
            assert loop.running(), loop.describe()
            loop.kill_hard()
        assert rec.returncode == 0, rec.stderr
        stopped = re.search(r"^gpuprof: stopped \(duration\); detach [\d.]+ ms; (\d+) events, 0 lost", rec.stderr, re.M)
        assert stopped, rec.stderr
        events[seconds] = int(stopped.group(1))
        pid = loops[0][1].read_text()
        chosen = {"--folded": ("--folded", "--pid", pid), "--pprof": ("--pprof", profile, "--comm", "python3"),
                  "--chrome-trace": ("--chrome-trace", trace, "--pid", pid)}
        if extra:
            chosen.update({"--folded (all)": ("--folded",), "--speedscope": ("--speedscope", trace, "--pid", pid),
                           "--modules": ("--modules", "--pid", pid),
                           "--group-by-stack-n (all)": ("--group-by-stack-n", "2")})
        rss[seconds] = {output: (peak_rss_kib(out, *args), peak_rss_kib(out, *args, env=READ_WHOLE))
                        for output, args in chosen.items()}
    summary = f"peak RSS KiB (streamed, read whole): 1 s {rss[1]}, 4 s {rss[4]}; events {events}"
    print(summary)
    # The whole read holds every event (tens of bytes each, 57 to 79 in
    # docs/report.md's bench): 20 bytes per event more is its least.
    grown_kib = 20 * (events[4] - events[1]) / 1024
    assert events[4] > 2 * events[1], summary
    for output in rss[1]:
        assert rss[4][output][0] - rss[1][output][0] < 4096, (output, summary)
        assert rss[4][output][1] - rss[1][output][1] > grown_kib, (output, summary)


def test_streamed_memory_table_is_whole_and_its_memory_flat(torch_env, tmp_path):
    """record --profile-memory --with-stack: the streamed table (each call's tensor bytes
    joined from the allocator events as they come, analyze/streamed_call_figures.h)
    counts every aten::add of the loop, gives it the bytes of the tensors it
    made, and prints the whole read's bytes, peak line included; its peak
    memory does not grow with the recording, while the whole read's does.
    --folded and --pprof, which count no allocator event, stream too, and
    so do the table grouped by stack and the Chrome trace with its memory
    counter."""
    rss = {}
    for seconds in (1, 4):
        out, loops = record_loop(torch_env, tmp_path, seconds, "--profile-memory", "--with-stack")
        table = report_as_whole(out, "--row-limit", "-1", "--sort-by", "self_cpu_memory_usage")
        assert table.returncode == 0, table.stderr
        lines = table.stdout.splitlines()
        titles = re.split(r"\s{2,}", next(line for line in lines if "# of Calls" in line).strip())
        rows = {cells[0]: cells for cells in (re.split(r"\s{2,}", line.strip()) for line in lines)
                if len(cells) == len(titles)}
        add = rows["aten::add"]
        assert add[titles.index("# of Calls")] == str(loops + 1), table.stdout
        # Each add makes one 1-element float32 tensor: 4 bytes (torch's
        # "b" under 1 KiB; "Kb"/"Mb" above it, two decimals).
        assert add[titles.index("Self CPU Mem")] != "0 b", table.stdout
        assert "CPU tensor memory peak" in table.stdout, table.stdout
        # Grouped by stack, each forest waits for its entry stacks too: every
        # add under the loop's own line.
        grouped = report_as_whole(out, "--row-limit", "-1", "--group-by-stack-n", "1")
        assert grouped.returncode == 0, grouped.stderr
        assert re.search(rf"^\s*aten::add\s.*\s{loops + 1}\s+small_op_loop\.py\(\d+\): main\s*$", grouped.stdout,
                         re.M), grouped.stdout
        # --folded and --pprof use no allocator event: they stream and drop them.
        folded = report_as_whole(out, "--folded")
        assert folded.returncode == 0, folded.stderr
        # --with-stack: the adds under the loop's Python frames.
        assert re.search(r"^small_op_loop.py\(1\):_<module>;small_op_loop.py\(\d+\):_main;aten::add \d+$",
                         folded.stdout, re.M), folded.stdout
        profile = tmp_path / "profile.pb.gz"
        report_file_as_whole(out, profile, "--pprof", profile, read=lambda p: gzip.decompress(p.read_bytes()))
        # The table joins the allocator events to calls by thread: a read for
        # the threads that ran ops. Those that drop them do without it.
        assert [reads_of(out, *args) for args in ((), ("--folded",), ("--pprof", profile))] == [3, 2, 2]
        # The Chrome trace's memory counter: the CPU level after every
        # allocation and release, put in time order as the chunks come
        # (analyze/time_ordered_mem_events.h). Each add allocates its result
        # and releases the last one's, as do the two ones() (and their
        # empty()) before the loop: 2 x (adds + 2) levels.
        trace_path = tmp_path / "trace.json"
        trace, _ = report_file_as_whole(out, trace_path, "--chrome-trace", trace_path,
                                        read=lambda p: json.loads(p.read_bytes()))
        levels = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "CPU memory"]
        assert len(levels) == 2 * (loops + 1 + 2), (len(levels), loops)
        assert all(e["args"]["bytes"] >= 0 for e in levels), levels[:5]
        rss[seconds] = (loops, peak_rss_kib(out), peak_rss_kib(out, env=READ_WHOLE), peak_rss_kib(out, "--folded"),
                        peak_rss_kib(out, "--chrome-trace", trace_path),
                        peak_rss_kib(out, "--chrome-trace", trace_path, env=READ_WHOLE),
                        peak_rss_kib(out, "--group-by-stack-n", "1"))
    summary = (f"(adds, table peak RSS KiB, read whole, --folded, --chrome-trace, read whole, --group-by-stack-n): "
               f"1 s {rss[1]}, 4 s {rss[4]}")
    print(summary)
    assert rss[4][0] > 2 * rss[1][0], summary
    # Read whole, each add (its events, its allocator events, its stack
    # pair) costs about 480 bytes: more than 200 per add more is growth with
    # the events (a fixed 30 MiB failed on a run of 53,000 adds more, 24.5
    # MiB).
    whole_growth_kib = (rss[4][0] - rss[1][0]) * 200 / 1024
    assert rss[4][1] - rss[1][1] < 4096, summary
    assert rss[4][2] - rss[1][2] > whole_growth_kib, summary
    assert rss[4][3] - rss[1][3] < 4096, summary
    assert rss[4][4] - rss[1][4] < 4096, summary
    assert rss[4][5] - rss[1][5] > whole_growth_kib, summary
    assert rss[4][6] - rss[1][6] < 4096, summary

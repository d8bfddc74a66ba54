"""Chrome/Perfetto trace export (report --chrome-trace, record --chrome-trace).

One resnet18 forward pass, profiled by torch.profiler (record_shapes) and by
gpuprof (--record-shapes --profile-memory --with-stack -F 199) at once: the
trace must be a well-formed Trace Event Format document (the same
structural checks as the C++ unit tests), hold exactly torch's raw op calls
(one X event per call, same counts), with torch's "Input Dims", one counter
value per counted memory event and one instant per CPU sample that the
recording counted, with their stacks; a cut (--ops, --time-range, both,
and --pid/--comm of a `record -a` file) must hold exactly the whole trace's
events that its rule keeps (chrome_trace_checks.py); `-` writes the same
document to stdout, .gz compresses it; and the real viewer (speedscope, in
headless Chromium) opens it and the folded stacks of the same recording.
`record --chrome-trace` with --ops and --time-range writes, byte for byte,
what report writes with the same cuts (sigmoid_mm_loop.py); `unwound: true`
marks exactly the calls exceptions.py's exceptions ended.
"""
import collections
import json
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import (TARGET_PYTHON, TORCH_ENV_IDS, TORCH_ENVS, Procs, RegionRun, TorchEnv, record_to_exit,
                      resnet_region_run, run_gpuprof, run_program, touch, wait_for_file)

from chrome_trace_checks import (export_chrome_trace, frame_chain, in_time_range, op_calls, size_text, span_ns,
                                 structural_problems, time_zero_ns, trace_events, trace_stats, track_names, tracks_of,
                                 under_ops, wrote_line, x_events)
from speedscope_viewer import VIEWER, load_in_speedscope
from test_exception_safety import ERROR_REPEATS, THROWING_OPS
from test_report_memory import report_file_as_whole
from test_system_wide import finish_counts, start_counts


@dataclass
class Traced:
    """The resnet18 region's run, and the torch it ran on."""
    run: RegionRun
    torch_env: TorchEnv

    @property
    def record_file(self):
        return self.run.record_file


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def region(request, tmp_path_factory):
    with resnet_region_run(tmp_path_factory, f"chrome-trace-{request.param}", "--shapes-memory",
                           gpuprof_args=("--record-shapes", "--profile-memory", "--with-stack", "-F", "199"),
                           torch_env=request.param) as run:
        yield Traced(run, request.param)


def assert_cut(whole, cut, keep, always_pids=(), without_call=False):
    """A cut of `whole` (--time-range, --ops, --pid/--comm) holds exactly
    the events of `whole` that keep() holds, as a multiset (stacks compared
    by their frames' names: sf ids are numbered per trace), and names
    exactly the tracks those events sit on."""
    assert structural_problems(cut) == []
    expected, got = trace_events(whole, keep, without_call), trace_events(cut, without_call=without_call)
    assert got == expected, (f"missing: {list((expected - got).elements())[:5]}\n"
                             f"extra: {list((got - expected).elements())[:5]}")
    assert track_names(cut) == tracks_of(whole, keep, always_pids), (track_names(cut), tracks_of(whole, keep))
    return expected


def kinds(events):
    """How many of each ph a trace_events() multiset holds."""
    return collections.Counter(json.loads(e)["ph"] for e in events.elements())


def memory_not_counted(record_file):
    """The releases the report says it did not count (of tensors allocated
    before the recording started): they make no counter value."""
    report = run_gpuprof("report", str(record_file))
    assert report.returncode == 0, report.stderr
    m = re.search(r"^Not counted: (\d+) releases of tensors allocated before the recording started", report.stdout,
                  re.M)
    return int(m.group(1)) if m else 0, report.stdout


def format_memory(n):
    """torch's table format of a byte count (torch.autograd.profiler_util._format_memory)."""
    for unit, size in (("Gb", 1 << 30), ("Mb", 1 << 20), ("Kb", 1 << 10)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n} b"


def test_trace_holds_torchs_op_calls_with_shapes_memory_and_samples(region, tmp_path):
    doc, result = export_chrome_trace(region.record_file, tmp_path / "resnet.json")
    assert structural_problems(doc) == []
    calls = x_events(doc, "cpu_op")
    # One complete event per call: torch's raw (unfolded) calls of the region.
    raw = json.loads((region.run.workdir / "torch_raw_counts.json").read_text())
    torch_counts = {name: n for name, n in raw.items() if name.startswith("aten::")}
    ours = collections.Counter(e["name"] for e in calls)
    assert ours == collections.Counter(torch_counts), (ours, torch_counts)
    # torch's "Input Dims" (record_shapes): the stem convolution's.
    first_conv = min((e for e in calls if e["name"] == "aten::conv2d"), key=lambda e: e["ts"])
    assert first_conv["args"]["Input Dims"][:2] == [[5, 3, 224, 224], [64, 3, 7, 7]], first_conv
    assert first_conv["dur"] > 0 and isinstance(first_conv["args"]["call"], int)
    # Every CPU sample gpuprof counted when it stopped is an instant event.
    stopped = region.run.stopped
    samples = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert len(samples) == stopped["samples"], (len(samples), stopped)
    # One counter value per memory event recorded, but for the releases of
    # tensors allocated before the recording (not counted, as in the table);
    # all CPU memory (no CUDA here), peaking where the report's peak is.
    not_counted, report = memory_not_counted(region.record_file)
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert len(counters) == stopped["mem_events"] - not_counted, (len(counters), stopped, not_counted)
    assert {e["name"] for e in counters} == {"CPU memory"}, counters[:3]
    peak = max(counters, key=lambda e: (e["args"]["bytes"], -e["ts"]))  # the first to reach it
    assert (f"CPU tensor memory peak (net of what the recording saw allocated and freed): "
            f"{format_memory(peak['args']['bytes'])} at {peak['ts'] / 1e6:.3f} s after the start,") in report, \
        (peak, report)
    # The recording began while region.py waited in main() for `go`: a
    # main-thread sample's outermost frame is the module's line that calls
    # main() (a sample names the line running then); torch's intra-op worker
    # threads have no Python frames.
    script = (Path(__file__).resolve().parents[1] / "workloads" / "region.py").read_text().splitlines()
    main_call = f"region.py({script.index('    sys.exit(main())') + 1}): <module>"
    pid = region.run.tracing["pid"]
    for s in samples:
        stack = frame_chain(doc, s["sf"])
        assert (stack[0] == main_call) == (s["tid"] == pid), (s, stack)
    # --with-stack: a call carries its entry's Python stack, each frame at
    # its function's first line (docs/stacks.md): every conv2d is called
    # from nn.Conv2d._conv_forward, under region.py's module.
    conv_forward = run_program(*region.torch_env.python, "-c",
                               "import torch; print(torch.nn.Conv2d._conv_forward.__code__.co_firstlineno)",
                               timeout=120)
    assert conv_forward.returncode == 0, conv_forward.stderr
    for conv in (e for e in calls if e["name"] == "aten::conv2d"):
        stack = frame_chain(doc, conv["sf"])
        assert (stack[0], stack[-1]) == ("region.py(1): <module>",
                                         f"torch/nn/modules/conv.py({conv_forward.stdout.strip()}): _conv_forward"), \
            stack


def test_ops_keeps_the_matched_calls_what_they_call_and_their_samples(region, tmp_path):
    whole, _ = export_chrome_trace(region.record_file, tmp_path / "whole.json")
    # Anchored (exactly aten::conv2d, .gz output), searched (any op whose
    # name holds batch_norm: aten::batch_norm, aten::_batch_norm_impl_index,
    # aten::native_batch_norm), and an op nested in others (conv2d ->
    # convolution -> _convolution -> mkldnn_convolution: its callers stay out).
    for pattern, out in (("^aten::conv2d$", "convs.json.gz"), ("batch_norm", "bn.json"),
                         ("mkldnn_convolution", "mkldnn.json")):
        cut, _ = export_chrome_trace(region.record_file, tmp_path / out, "--ops", pattern)
        assert_cut(whole, cut, under_ops(whole, pattern), always_pids=[region.run.tracing["pid"]])
        assert cut["otherData"]["ops"] == pattern, cut["otherData"]
        # What the comparison covered (were the rule and gpuprof both to keep
        # nothing, they would agree): every call the pattern matches.
        matched = collections.Counter(e["name"] for e in op_calls(whole) if re.search(pattern, e["name"]))
        assert {name: n for name, n in collections.Counter(e["name"] for e in op_calls(cut)).items()
                if name in matched} == matched
    # conv2d's calls are where most CPU time goes: the rule for samples is
    # exercised (a sample inside a convolution is kept, its stack whole).
    assert kinds(trace_events(whole, under_ops(whole, "^aten::conv2d$")))["i"] > 0


def time_range_around_a_sample(doc):
    """A range (ns) that holds the middle CPU sample and a memory counter,
    and starts and ends exactly on a call's end and a call's start (both
    ends are included): from the end of the last call that ended before the
    sample, to the start of the first call that starts 10 ms after it and
    after the first counter value that follows it."""
    samples = sorted((e for e in doc["traceEvents"] if e["ph"] == "i"), key=lambda e: e["ts"])
    sample_ns = span_ns(samples[len(samples) // 2])[0]
    counter_ns = min(span_ns(e)[0] for e in doc["traceEvents"] if e["ph"] == "C" and span_ns(e)[0] >= sample_ns)
    spans = [span_ns(c) for c in op_calls(doc)]
    from_ns = max(end for start, end in spans if end < sample_ns)
    until_ns = min(start for start, end in spans if start > max(sample_ns + 10_000_000, counter_ns))
    return from_ns, until_ns


def seconds(ns):
    """A --time-range bound: ns written exactly as seconds."""
    return f"{ns // 10**9}.{ns % 10**9:09d}"


def test_time_range_keeps_what_overlaps_it_whole(region, tmp_path):
    whole, _ = export_chrome_trace(region.record_file, tmp_path / "whole.json")
    pid = region.run.tracing["pid"]
    from_ns, until_ns = time_range_around_a_sample(whole)
    for text, keep in ((f"{seconds(from_ns)}:{seconds(until_ns)}", in_time_range(from_ns, until_ns)),
                       (f"{seconds(from_ns)}:", in_time_range(from_ns, None)),
                       (f":{seconds(until_ns)}", in_time_range(None, until_ns))):
        cut, _ = export_chrome_trace(region.record_file, tmp_path / "cut.json", "--time-range", text)
        kept = assert_cut(whole, cut, keep, always_pids=[pid])
        # What the comparison covered: calls, samples and counters, and the
        # calls on the bounds (ending at FROM, starting at UNTIL).
        assert set(kinds(kept)) == {"X", "i", "C"}, (text, kinds(kept))
        spans = [span_ns(c) for c in op_calls(cut)]
        assert (text.endswith(":") or any(start == until_ns for start, end in spans)) and \
            (text.startswith(":") or any(end == from_ns for start, end in spans)), (text, from_ns, until_ns)
    # With --ops: what both keep.
    ops = under_ops(whole, "conv")
    both = in_time_range(from_ns, until_ns)
    cut, _ = export_chrome_trace(region.record_file, tmp_path / "conv-cut.json", "--ops", "conv", "--time-range",
                    f"{seconds(from_ns)}:{seconds(until_ns)}")
    assert_cut(whole, cut, lambda e: ops(e) and both(e), always_pids=[pid])


def test_trace_to_standard_output(region, tmp_path):
    # `-`: the same document as a file gets, on stdout; the `wrote` line
    # says "the trace" and no size (no file on disk).
    made = run_gpuprof("report", str(region.record_file), "--chrome-trace", "-", "--ops", "relu")
    assert made.returncode == 0, made.stderr
    export_chrome_trace(region.record_file, tmp_path / "relu.json", "--ops", "relu")
    assert made.stdout == (tmp_path / "relu.json").read_text()
    written, source, counts, size = wrote_line(made.stderr)
    assert (written, source, counts, size) == ("the trace", str(region.record_file),
                                               trace_stats(json.loads(made.stdout)), None), made.stderr


def test_pid_and_comm_are_refused_on_the_recording_of_one_process(region, tmp_path):
    # They choose processes of a record -a file; region's file is `record -p`.
    tracing = region.run.tracing
    for args in (["--pid", str(tracing["pid"])], ["--comm", tracing["comm"]]):
        out = tmp_path / "one.json"
        refused = run_gpuprof("report", str(region.record_file), "--chrome-trace", str(out), *args)
        assert refused.returncode == 2 and refused.stdout == "" and not out.exists(), refused
        assert refused.stderr == (f"gpuprof: error: --pid/--comm choose processes of a system-wide recording "
                                  f"(record -a); {region.record_file} records process {tracing['pid']} "
                                  f"({tracing['comm']}) alone\n"), refused.stderr


@dataclass
class SystemWide:
    record_file: Path
    pids: dict  # torch_counts.py's name -> pid


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def system_wide(request, tmp_path_factory):
    """`record -a -F 99` while two torch_counts.py processes run their loops
    (and whatever else runs on this shared machine)."""
    tmp = tmp_path_factory.mktemp(f"chrome-trace-all-{request.param}")
    workdir = tmp / "handshake"
    workdir.mkdir()
    procs = Procs(tmp)
    try:
        runs = {name: start_counts(procs, workdir, name, steps, torch_env=request.param)
                for name, steps in (("a", 200), ("b", 300))}
        record_file = tmp / "all.gpuprof"
        gp = procs.start_gpuprof("record", "-a", "-F", "99", "-q", "-o", record_file)
        gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120, watch=[proc for proc, _ in runs.values()])
        touch(workdir, "go")
        finish_counts(workdir, runs, [gp])
        gp.send(signal.SIGINT)
        assert gp.wait(timeout=120) == 0, gp.describe()
        yield SystemWide(record_file, {name: pid for name, (_, pid) in runs.items()})
    finally:
        procs.cleanup()


def test_pid_and_comm_cut_a_system_wide_trace_to_those_processes(system_wide, tmp_path):
    whole, _ = export_chrome_trace(system_wide.record_file, tmp_path / "all.json")
    a, b = system_wide.pids["a"], system_wide.pids["b"]
    processes = {pid: name for (what, pid, _), name in track_names(whole).items() if what == "process_name"}
    python3 = {pid for pid, name in processes.items() if name == f"python3 ({pid})"}
    assert {a, b} <= python3, processes
    # --pid and --comm: a process must match both; repeated: any of them.
    for args, pids in ((["--pid", a], {a}), (["--pid", a, "--pid", b], {a, b}),
                       (["--comm", "python3"], python3), (["--pid", b, "--comm", "python3"], {b})):
        cut, _ = export_chrome_trace(system_wide.record_file, tmp_path / "cut.json", *map(str, args))
        # Streamed (chosen_processes_stream.h): the whole read's file, byte for byte.
        report_file_as_whole(system_wide.record_file, tmp_path / "cut.json", "--chrome-trace", tmp_path / "cut.json",
                             *map(str, args))
        # The calls' ids are their entries' indices among the events of the
        # processes kept: renumbered; everything else is as in the whole.
        assert_cut(whole, cut, lambda e: e["pid"] in pids, without_call=True)
        # What the comparison covered: each of our processes' op calls and
        # samples (its loop takes most of a CPU-second: about 80 at 99 Hz).
        for pid in pids & {a, b}:
            assert {"X", "i"} <= {e["ph"] for e in cut["traceEvents"] if e["pid"] == pid}, (args, pid)
    none = run_gpuprof("report", str(system_wide.record_file), "--chrome-trace", str(tmp_path / "none.json"),
                       "--pid", str(a), "--comm", "no-such-command")
    assert none.returncode == 2 and f"gpuprof: error: no process of {system_wide.record_file} matches --pid/--comm" \
        in none.stderr and not (tmp_path / "none.json").exists(), none.stderr


def test_bad_arguments_are_refused_with_the_reason(region, tmp_path):
    for args, code, message in [
        (["--time-range", "3:1"], 2, "--time-range 3:1: END is before START"),
        (["--time-range", "soon"], 2, "--time-range soon: no ':'"),
        (["--ops", "aten::(conv"], 2, "--ops aten::(conv: not a regular expression"),
    ]:
        result = run_gpuprof("report", str(region.record_file), "--chrome-trace", str(tmp_path / "x.json"), *args)
        assert result.returncode == code and message in result.stderr, (args, result.stderr)
    unwritable = run_gpuprof("report", str(region.record_file), "--chrome-trace", "/nonexistent-dir/t.json")
    assert unwritable.returncode == 1, unwritable.stderr
    assert "gpuprof: error: cannot create /nonexistent-dir/t.json: No such file or directory" in unwritable.stderr
    alone = run_gpuprof("report", str(region.record_file), "--ops", "conv")
    assert alone.returncode != 0 and "--chrome-trace" in alone.stderr, alone.stderr
    mixed = run_gpuprof("report", str(region.record_file), "--chrome-trace", str(tmp_path / "y.json"), "--folded")
    assert mixed.returncode != 0 and "excludes" in mixed.stderr, mixed.stderr


# Three matmuls on the main thread, one on a thread that names itself
# "gp_worker" (prctl PR_SET_NAME, as torch names its autograd threads).
NAMED_THREAD_SCRIPT = """
import ctypes, threading, torch
x = torch.ones(4, 4)
[x.matmul(x) for _ in range(3)]
def worker():
    ctypes.CDLL(None).prctl(15, b"gp_worker", 0, 0, 0)
    x.matmul(x)
t = threading.Thread(target=worker)
t.start()
t.join()
"""


def test_record_writes_the_trace_and_still_prints_the_table(tmp_path):
    out = tmp_path / "t.gpuprof"
    trace = tmp_path / "t.json"
    result = run_gpuprof("record", "-o", str(out), "--chrome-trace", str(trace), "--",
                         TARGET_PYTHON, "-c", NAMED_THREAD_SCRIPT)
    assert result.returncode == 0, result.stderr
    assert "aten::matmul" in result.stdout and "Self CPU time total" in result.stdout, result.stdout
    doc = json.loads(trace.read_text())
    assert structural_problems(doc) == []
    matmuls = [e for e in x_events(doc, "cpu_op") if e["name"] == "aten::matmul"]
    assert len(matmuls) == 4
    # Thread tracks carry the threads' own names (their comm).
    names = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(names[e["tid"]] for e in matmuls) == ["gp_worker", "python3", "python3", "python3"], names


def test_gpu_tracks_and_flow_arrows_from_the_cupti_shim(tmp_path):
    # The stand-in CUPTI plays the GPU (tests/integration/test_cupti.py has
    # the per-step plan): 10 steps of 3 scale kernels + 1 reduce kernel + 1
    # memcpy in ops, 2 graph kernels + 1 memset in aten::cuda_replay, and 1
    # kernel launched outside any op.
    from conftest import FAKE_LIBTORCH, GPUPROF
    stand_in = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"
    out = tmp_path / "gpu.gpuprof"
    made = run_gpuprof("record", "-q", "-o", str(out), "--chrome-trace", str(tmp_path / "gpu.json"), "--",
                       FAKE_LIBTORCH / "launch_driver", "10", env={"GPUPROF_CUPTI_LIBRARY": str(stand_in)})
    assert made.returncode == 0, made.stderr
    doc = json.loads((tmp_path / "gpu.json").read_text())
    assert structural_problems(doc) == []
    events = doc["traceEvents"]
    by_cat = collections.Counter(e["cat"] for e in events if e["ph"] == "X")
    assert (by_cat["kernel"], by_cat["gpu_memcpy"], by_cat["gpu_memset"]) == (70, 10, 10), by_cat
    assert by_cat["cuda_runtime"] == 60, by_cat  # the uprobes' launches
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    gpu = {}
    for e in events:
        if e["ph"] == "X" and e["cat"] in ("kernel", "gpu_memcpy", "gpu_memset"):
            assert processes[e["pid"]] == "GPU 0" and names[(e["pid"], e["tid"])] == f"stream {e['tid']}", e
            gpu[(e["pid"], e["tid"], e["ts"])] = e
    # One arrow per activity (every launch was seen): from the launching
    # thread, inside the op that launched it when there was one, to the
    # activity's start.
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert len(starts) == len(ends) == 90
    ops = [e for e in events if e["ph"] == "X" and e["cat"] == "cpu_op"]
    inside_ops = 0
    for fid, s in starts.items():
        f = ends[fid]
        assert (f["pid"], f["tid"], f["ts"]) in gpu, f
        assert s["pid"] == doc_pid(events) and s["ts"] <= f["ts"], (s, f)
        inside_ops += any(o["tid"] == s["tid"] and o["ts"] <= s["ts"] <= o["ts"] + o["dur"] for o in ops)
    assert inside_ops == 80, inside_ops  # all but the 10 kernels launched outside any op


def doc_pid(events):
    return next(e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"
                and not e["args"]["name"].startswith("GPU "))


def test_speedscope_opens_the_trace_and_the_folded_stacks(region, tmp_path):
    # The resnet18 demo's recording: its Chrome trace and its folded stacks,
    # each opened in the real viewer; screenshots stay under the test's tmp
    # directory (printed on failure).
    trace = tmp_path / "resnet.json"
    export_chrome_trace(region.record_file, trace)
    names = ("aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::max_pool2d", "aten::linear")
    shown = load_in_speedscope(trace, tmp_path / "trace.png", *names)
    for name in names:
        assert f"found: {name}" in shown, shown
    folded = tmp_path / "resnet.folded"
    made = run_gpuprof("report", str(region.record_file), "--folded")
    assert made.returncode == 0, made.stderr
    folded.write_text(made.stdout)
    shown = load_in_speedscope(folded, tmp_path / "folded.png", "aten::conv2d", "aten::mkldnn_convolution",
                               "aten::addmm")
    assert "found: aten::addmm" in shown, shown


def test_speedscope_refuses_what_is_not_a_profile(tmp_path):
    # The harness must be able to fail: a file speedscope cannot import.
    garbage = tmp_path / "garbage.json"
    garbage.write_bytes(b"\x00\x01not a profile\xff" * 10)
    result = subprocess.run(["node", str(VIEWER / "load_in_speedscope.mjs"), str(garbage), str(tmp_path / "g.png"),
                             "aten::conv2d"], capture_output=True, text=True, timeout=150)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Unrecognized format" in result.stderr, result.stderr


# --------------------------------------------------------------------------
# record --chrome-trace with --ops and --time-range.

CUT_LOOP_S = 2.0  # sigmoid_mm_loop.py's loop, from `go`
CUT_OPS = "sigmoid"
# Inside the loop, which starts within milliseconds of the recording (the
# test creates `go` once gpuprof says it traces): sigmoid calls before it,
# in it and after it.
CUT_FROM_NS, CUT_UNTIL_NS = 500_000_000, 1_500_000_000


def test_record_writes_the_cut_trace_report_writes(procs, workdir, tmp_path, torch_env):
    """docs/record.md: `record --chrome-trace OUT` with `--ops` and
    `--time-range` writes, when the recording stops, the very trace that
    `report FILE --chrome-trace OUT` with the same cuts writes from the same
    recording: byte for byte; and that is what the cuts' rules keep of the
    whole trace."""
    target = procs.start_workload("sigmoid_mm_loop.py", workdir, str(CUT_LOOP_S), torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    record_file, recorded = tmp_path / "loop.gpuprof", tmp_path / "recorded.json"
    cuts = ("--ops", CUT_OPS, "--time-range", f"{seconds(CUT_FROM_NS)}:{seconds(CUT_UNTIL_NS)}")
    gp = record_to_exit(procs, target, pid, workdir, "-q", "-o", record_file, "--chrome-trace", recorded, *cuts,
                        timeout=120)
    doc = json.loads(recorded.read_text())
    written, source, counts, size = wrote_line(gp.stderr())
    assert (written, source, counts, size) == (str(recorded), str(record_file), trace_stats(doc),
                                               size_text(recorded)), gp.stderr()
    export_chrome_trace(record_file, tmp_path / "reported.json", *cuts)
    assert recorded.read_bytes() == (tmp_path / "reported.json").read_bytes()

    whole, _ = export_chrome_trace(record_file, tmp_path / "whole.json")
    ops, in_range = under_ops(whole, CUT_OPS), in_time_range(CUT_FROM_NS, CUT_UNTIL_NS)
    assert_cut(whole, doc, lambda e: ops(e) and in_range(e), always_pids=[pid])
    # What the comparison covered: both cuts cut. The loop's other calls
    # (mm, relu) are out, and sigmoid calls on both sides of the range too.
    sigmoids = [e for e in op_calls(whole) if e["name"] == "aten::sigmoid"]
    kept = collections.Counter(e["name"] for e in op_calls(doc))
    assert set(kept) == {"aten::sigmoid"}, kept
    assert 0 < kept["aten::sigmoid"] < len(sigmoids), (kept, len(sigmoids))
    assert kept["aten::sigmoid"] == sum(map(in_range, sigmoids))


# --------------------------------------------------------------------------
# Calls ended by exception unwinding: `unwound: true`.

UNWOUND_MM_ERRORS = 20  # exceptions.py's mismatched torch.mm calls


def test_unwound_marks_exactly_the_calls_an_exception_ended(procs, workdir, tmp_path, torch_env):
    """docs/chrome-trace.md: a call that ended by exception unwinding has
    `args.unwound: true`. exceptions.py throws through known ops
    (test_exception_safety.py's THROWING_OPS) inside statements it brackets
    with its own clock: every call of those ops inside its kind's brackets
    carries it, and no other call (the ops those calls completed before the
    throw, the checksum's) has the field at all."""
    record_file = tmp_path / "exceptions.gpuprof"
    target = procs.start_workload("exceptions.py", workdir, str(UNWOUND_MM_ERRORS), torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    record_to_exit(procs, target, pid, workdir, "-q", "-o", record_file, timeout=180)
    doc, _ = export_chrome_trace(record_file, tmp_path / "exceptions.json")
    assert structural_problems(doc) == []
    zero = time_zero_ns(doc)
    brackets = json.loads((workdir / "brackets.json").read_text())

    def thrown_through(call):
        start, end = (zero + t for t in span_ns(call))
        return any(call["name"] in ops and any(t0 <= start and end <= t1 for t0, t1 in brackets[kind])
                   for kind, ops in THROWING_OPS.items())

    calls = x_events(doc, "cpu_op")
    unwound = [e for e in calls if "unwound" in e["args"]]
    assert all(e["args"]["unwound"] is True for e in unwound), unwound[:3]
    assert [e["args"]["call"] for e in unwound] == [e["args"]["call"] for e in calls if thrown_through(e)]
    # Each statement threw through its ops once: the calls counted exactly.
    expected = collections.Counter()
    for kind, ops in THROWING_OPS.items():
        for op in ops:
            expected[op] += UNWOUND_MM_ERRORS if kind == "mm_shape" else ERROR_REPEATS
    assert collections.Counter(e["name"] for e in unwound) == expected

"""Chrome/Perfetto trace export (report --chrome-trace, record --chrome-trace).

One resnet18 forward pass, profiled by torch.profiler (record_shapes) and by
gpuprof (--record-shapes --profile-memory --with-stack -F 199) at once: the
trace must be a well-formed Trace Event Format document (the same
structural checks as the C++ unit tests), hold exactly torch's raw op calls
(one X event per call, same counts), with torch's "Input Dims", memory
counters and CPU samples whose stacks reach the workload's Python frames;
--ops and --time-range cut it down, .gz compresses it; and the real viewer
(speedscope, in headless Chromium) opens it and the folded stacks of the
same recording.
"""
import collections
import gzip
import json
import re
import subprocess
from pathlib import Path

import pytest

from conftest import TARGET_PYTHON, TORCH_ENV_IDS, TORCH_ENVS, resnet_region_run, run_gpuprof

from chrome_trace_checks import structural_problems, x_events


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def region(request, tmp_path_factory):
    with resnet_region_run(tmp_path_factory, f"chrome-trace-{request.param}", "--shapes-memory",
                           gpuprof_args=("--record-shapes", "--profile-memory", "--with-stack", "-F", "199"),
                           torch_env=request.param) as run:
        yield run


def export(record_file, out, *args):
    result = run_gpuprof("report", str(record_file), "--chrome-trace", str(out), *args)
    assert result.returncode == 0, result.stderr
    assert re.search(rf"^gpuprof: wrote {re.escape(str(out))} from ", result.stderr, re.M), result.stderr
    opener = gzip.open if str(out).endswith(".gz") else open
    with opener(out, "rt", encoding="utf-8") as f:
        return json.load(f), result


def test_trace_holds_torchs_op_calls_with_shapes_memory_and_samples(region, tmp_path):
    doc, result = export(region.record_file, tmp_path / "resnet.json")
    assert structural_problems(doc) == []
    calls = x_events(doc, "cpu_op")
    # One complete event per call: torch's raw (unfolded) calls of the region.
    raw = json.loads((region.workdir / "torch_raw_counts.json").read_text())
    torch_counts = {name: n for name, n in raw.items() if name.startswith("aten::")}
    ours = collections.Counter(e["name"] for e in calls)
    assert ours == collections.Counter(torch_counts), (ours, torch_counts)
    # torch's "Input Dims" (record_shapes): the stem convolution's.
    first_conv = min((e for e in calls if e["name"] == "aten::conv2d"), key=lambda e: e["ts"])
    assert first_conv["args"]["Input Dims"][:2] == [[5, 3, 224, 224], [64, 3, 7, 7]], first_conv
    assert first_conv["dur"] > 0 and isinstance(first_conv["args"]["call"], int)
    # Memory counters (--profile-memory) and CPU samples (-F) with stacks.
    counters = [e for e in doc["traceEvents"] if e["ph"] == "C"]
    assert counters and all(e["name"] == "CPU memory" for e in counters), counters[:3]
    assert max(e["args"]["bytes"] for e in counters) > 5 * 64 * 112 * 112 * 4  # the stem conv's output
    samples = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert len(samples) > 5, len(samples)
    frames = doc["stackFrames"]

    def chain(sf):
        names = []
        while sf:
            names.append(frames[sf]["name"])
            sf = frames[sf].get("parent")
        return names

    assert any(any("region.py" in name for name in chain(s["sf"])) for s in samples)
    # --with-stack: calls carry their entry's Python stack.
    assert any("torch/nn/modules/conv.py" in name for name in chain(first_conv["sf"])), chain(first_conv["sf"])
    assert f"{len(calls)} op calls" in result.stderr, result.stderr


def test_ops_and_time_range_cut_the_trace_down(region, tmp_path):
    whole, _ = export(region.record_file, tmp_path / "whole.json")
    convs, _ = export(region.record_file, tmp_path / "convs.json.gz", "--ops", "^aten::conv2d$")
    assert structural_problems(convs) == []
    kept = collections.Counter(e["name"] for e in x_events(convs, "cpu_op"))
    # Every aten::conv2d call and the calls nested in it; nothing else.
    assert kept["aten::conv2d"] == sum(1 for e in x_events(whole, "cpu_op") if e["name"] == "aten::conv2d")
    assert "aten::mkldnn_convolution" in kept and "aten::relu" not in kept and "aten::linear" not in kept, kept
    assert (tmp_path / "convs.json.gz").stat().st_size < (tmp_path / "whole.json").stat().st_size / 10
    # A time range: what overlaps it, kept whole.
    starts = sorted(e["ts"] for e in x_events(whole, "cpu_op"))
    middle = starts[len(starts) // 2] / 1e6
    cut, _ = export(region.record_file, tmp_path / "cut.json", "--time-range", f"{middle}:{middle + 0.002}")
    assert structural_problems(cut) == []
    cut_calls = x_events(cut, "cpu_op")
    assert 0 < len(cut_calls) < len(x_events(whole, "cpu_op"))
    for e in cut_calls:
        assert e["ts"] + e["dur"] >= middle * 1e6 - 0.001 and e["ts"] <= (middle + 0.002) * 1e6 + 0.001, e


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


VIEWER = Path(__file__).resolve().parent.parent / "viewer"


def load_in_speedscope(profile, screenshot, *names):
    """tests/viewer/load_in_speedscope.mjs: the real speedscope (npm) in
    headless Chromium (Debian's) imports the file the way a user does and
    lists every name; scripts/setup.sh installs both."""
    assert (VIEWER / "node_modules" / "speedscope").is_dir(), \
        "tests/viewer/node_modules missing: run scripts/setup.sh (npm ci --prefix tests/viewer)"
    assert Path("/usr/bin/chromium").exists(), "/usr/bin/chromium missing: run scripts/setup.sh"
    result = subprocess.run(["node", str(VIEWER / "load_in_speedscope.mjs"), str(profile), str(screenshot), *names],
                            capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"speedscope: imported {profile}" in result.stdout, result.stdout
    assert screenshot.stat().st_size > 10_000, screenshot  # a rendered flame graph, not a blank page
    return result.stdout


def test_speedscope_opens_the_trace_and_the_folded_stacks(region, tmp_path):
    # The resnet18 demo's recording: its Chrome trace and its folded stacks,
    # each opened in the real viewer; screenshots stay under the test's tmp
    # directory (printed on failure).
    trace = tmp_path / "resnet.json"
    export(region.record_file, trace)
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

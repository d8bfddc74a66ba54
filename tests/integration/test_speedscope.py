"""report --speedscope (docs/speedscope.md): a resnet18 recording (with
--with-stack and -F) in speedscope's own format, checked call by call and
sample by sample against the Chrome trace of the same file, and opened in the
real speedscope with one frame per op."""
import collections
import json
import re

import pytest

from chrome_trace_checks import frame_chain, op_calls, span_ns
from conftest import TORCH_ENV_IDS, TORCH_ENVS, resnet_region_run, run_gpuprof
from speedscope_viewer import load_in_speedscope

SAMPLE_HZ = 199


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def exported(request, tmp_path_factory):
    """(speedscope document, Chrome trace document, report's stderr, the
    speedscope file) of one resnet18 recording."""
    with resnet_region_run(tmp_path_factory, f"speedscope-{request.param}",
                           gpuprof_args=("--with-stack", "-F", str(SAMPLE_HZ)), torch_env=request.param) as run:
        out = run.record_file.parent / "run.speedscope.json"
        made = run_gpuprof("report", str(run.record_file), "--speedscope", str(out))
        assert made.returncode == 0, made.stderr
        trace = run.record_file.parent / "run.json"
        chrome = run_gpuprof("report", str(run.record_file), "--chrome-trace", str(trace))
        assert chrome.returncode == 0, chrome.stderr
        yield json.loads(out.read_text()), json.loads(trace.read_text()), made.stderr, out


def profiles_of(doc, kind):
    """{tid: profile} of one type ("evented" or "sampled")."""
    out = {}
    for p in doc["profiles"]:
        if p["type"] == kind:
            m = re.search(r"\((\d+)\): (ops|CPU samples)$", p["name"])
            assert m, p["name"]
            out[int(m.group(1))] = p
    return out


def replay(doc, profile, op_names):
    """An evented profile's calls as (name, start ns, end ns, Python frames
    open under it, op frames open under it), in start order; asserts the
    events are in time order and every close matches the open frame."""
    names = [f["name"] for f in doc["shared"]["frames"]]
    stack, calls, last = [], [], profile["startValue"]
    for e in profile["events"]:
        assert e["at"] >= last, e
        last = e["at"]
        if e["type"] == "O":
            below = [names[f] for f, _, _ in stack]
            stack.append((e["frame"], e["at"], len(calls)))
            calls.append([names[e["frame"]], e["at"], None,
                          tuple(n for n in below if n not in op_names), tuple(n for n in below if n in op_names)])
        else:
            assert e["type"] == "C" and stack and stack[-1][0] == e["frame"], (e, stack[-1:])
            _, _, index = stack.pop()
            calls[index][2] = e["at"]
    assert not stack, stack
    assert last == profile["endValue"]
    return [tuple(c) for c in calls if c[0] in op_names]


def test_every_call_and_sample_as_the_chrome_trace_has_it(exported):
    doc, trace, stderr, _ = exported
    assert doc["$schema"] == "https://www.speedscope.app/file-format-schema.json"
    calls = op_calls(trace)
    op_names = {e["name"] for e in calls}
    by_tid = collections.defaultdict(list)
    for e in calls:
        by_tid[e["tid"]].append(e)
    evented = profiles_of(doc, "evented")
    assert set(evented) == set(by_tid)
    for tid, profile in evented.items():
        got = replay(doc, profile, op_names)
        want = sorted(by_tid[tid], key=lambda e: (span_ns(e)[0], -span_ns(e)[1]))
        assert [(n, s, e) for n, s, e, _, _ in got] == [(e["name"], *span_ns(e)) for e in want]
        for (_, _, _, python, ops_below), e in zip(got, want):
            if not ops_below:  # an outermost call: under its entry's Python stack
                assert python == frame_chain(trace, e.get("sf")), e
        assert any(python for _, _, _, python, _ in got), "no call under Python frames (--with-stack)"

    # Samples: the Chrome trace's stack (Python frames, native leaf, kernel
    # frames) with the op calls running on the thread then put in after the
    # Python frames, outermost first.
    samples = collections.defaultdict(list)
    for e in trace["traceEvents"]:
        if e["ph"] == "i" and e.get("cat") == "cpu_sample":
            samples[e["tid"]].append(e)
    sampled = profiles_of(doc, "sampled")
    assert set(sampled) == set(samples)
    names = [f["name"] for f in doc["shared"]["frames"]]
    period = 1_000_000_000 // SAMPLE_HZ
    for tid, profile in sampled.items():
        want = sorted(samples[tid], key=lambda e: e["ts"])
        assert profile["weights"] == [period] * len(want)
        for stack, e in zip(profile["samples"], want, strict=True):
            got = [names[f] for f in stack]
            t = span_ns(e)[0]
            running = [c["name"] for c in sorted(by_tid[tid], key=lambda c: (span_ns(c)[0], -span_ns(c)[1]))
                       if span_ns(c)[0] <= t <= span_ns(c)[1]]
            chain = frame_chain(trace, e["sf"])
            python = [n for n in chain if n not in op_names]
            assert [n for n in got if n not in op_names] == python, (got, chain)
            assert [n for n in got if n in op_names] == running, (got, running)
    n_calls, n_samples = len(calls), sum(len(v) for v in samples.values())
    assert re.search(rf"\.gpuprof: {len(doc['profiles'])} profiles \({n_calls} op calls, {n_samples} samples\), "
                     rf"{len(doc['shared']['frames'])} frames, [\d.]+ [kM]B\n", stderr), stderr


def test_speedscope_shows_one_frame_per_op(exported, tmp_path):
    # The real viewer: it imports the file, and its Sandwich table lists each
    # frame once (the Chrome trace's frames, keyed by args, are one per call).
    doc, _, _, out = exported
    names = ("aten::conv2d", "aten::batch_norm", "aten::relu_", "aten::max_pool2d", "aten::linear",
             "aten::mkldnn_convolution")
    shown = load_in_speedscope(out, tmp_path / "speedscope.png", *names)
    for name in names:
        assert f"found: {name}" in shown, shown
    listed = int(re.search(r"\((\d+) frames listed\)", shown).group(1))
    assert listed == len(doc["shared"]["frames"]), shown


def test_bad_arguments_are_refused(exported, tmp_path):
    _, _, _, out = exported
    both = run_gpuprof("report", str(out.parent / "resnet18.gpuprof"), "--speedscope", str(tmp_path / "a.json"),
                       "--chrome-trace", str(tmp_path / "b.json"))
    assert both.returncode == 2 and re.search(r"--(speedscope|chrome-trace) excludes --(chrome-trace|speedscope)",
                                              both.stderr), both.stderr
    table = run_gpuprof("report", str(out.parent / "resnet18.gpuprof"), "--speedscope", str(tmp_path / "a.json"),
                        "--row-limit", "3")
    assert table.returncode == 2 and "--row-limit" in table.stderr, table.stderr
    nowhere = run_gpuprof("report", str(out.parent / "resnet18.gpuprof"), "--speedscope",
                          str(tmp_path / "no" / "such" / "dir.json"))
    assert nowhere.returncode == 1 and "no/such/dir.json" in nowhere.stderr, nowhere.stderr

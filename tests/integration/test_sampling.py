"""CPU sampling (record -F HZ): known answers on a real PyTorch process.

mm_dominated.py spends about 70% of its CPU time inside torch.mm (aten::mm)
and the rest in pure Python, and measures the split itself with its thread's CPU
clock. gpuprof's samples must put the same share under aten::mm (op tracing
on), and, with --no-ops, the same share in the BLAS kernel that mm runs.
"""
import json
import re
import signal

import pytest

from conftest import run_gpuprof, touch, wait_for_file

SECONDS = 4
TOLERANCE_POINTS = 5.0


def record_workload(procs, workdir, tmp_path, *args):
    target = procs.start_workload("mm_dominated.py", workdir, SECONDS)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "sampled.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, *args)
    gp.wait_for_stderr(r"^gpuprof: (tracing|sampling) ", timeout=60, watch=[target])
    touch(workdir, "go")
    truth = json.loads(wait_for_file(workdir, "truth.json", timeout=120, watch=[target, gp]))
    gp.send(signal.SIGINT)  # before the interpreter's teardown, which is no part of the loop
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()
    stderr = gp.stderr()
    m = re.search(r"; (\d+) events, (\d+) lost; (\d+) samples, (\d+) lost;", stderr)
    assert m, stderr
    events, lost, samples, samples_lost = map(int, m.groups())
    assert lost == 0 and samples_lost == 0, stderr
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples")
    assert folded.returncode == 0, folded.stderr
    stacks = {}
    for line in folded.stdout.splitlines():
        stack, count = line.rsplit(" ", 1)
        stacks[stack] = int(count)
    assert sum(stacks.values()) == samples, (samples, folded.stdout)
    return truth, events, samples, stacks, stderr


def test_samples_under_the_dominant_op(procs, workdir, tmp_path):
    truth, events, samples, stacks, stderr = record_workload(procs, workdir, tmp_path, "-F", "499")
    assert events > 0, stderr
    # 499 Hz for ~SECONDS of one busy thread: hundreds of samples.
    assert samples >= 0.5 * 499 * truth["cpu_s"], (samples, truth)
    under_mm = sum(c for s, c in stacks.items() if s.split(";")[0] == "aten::mm")
    share = 100.0 * under_mm / samples
    print(f"aten::mm: truth {100 * truth['mm_fraction']:.1f}% of the thread's CPU time, "
          f"samples {share:.1f}% ({under_mm} of {samples})")
    assert 0.5 < truth["mm_fraction"] < 0.9, truth  # the workload is what it claims
    assert abs(share - 100 * truth["mm_fraction"]) <= TOLERANCE_POINTS, (share, truth)
    # Below the op: the BLAS kernel it runs, by name.
    assert any(s.startswith("aten::mm;") and "sgemm" in s for s in stacks), stacks


def test_no_ops_samples_only(procs, workdir, tmp_path):
    truth, events, samples, stacks, stderr = record_workload(procs, workdir, tmp_path, "-F", "999", "--no-ops")
    assert events == 0, stderr  # no op probes at all
    assert re.search(r"^gpuprof: sampling \d+ \(\S+\) at 999 Hz on \d+ CPUs, no op tracing", stderr, re.M), stderr
    assert samples >= 0.5 * 999 * truth["cpu_s"], (samples, truth)
    # No op frames: every stack is a native leaf (and [kernel]).
    assert not [s for s in stacks if s.startswith("aten::")], stacks
    in_blas = sum(c for s, c in stacks.items() if "libblas" in s.split(";")[0] or "sgemm" in s)
    share = 100.0 * in_blas / samples
    print(f"BLAS leaf: {share:.1f}% of {samples} samples; torch.mm {100 * truth['mm_fraction']:.1f}% of CPU time")
    # mm's time is its BLAS kernel but for the dispatch around it.
    assert abs(share - 100 * truth["mm_fraction"]) <= TOLERANCE_POINTS, (share, truth)


def test_sampling_options_are_checked(tmp_path):
    bad = run_gpuprof("record", "-p", "1", "--no-ops")
    assert bad.returncode == 2 and "--no-ops records CPU samples only" in bad.stderr, bad.stderr
    bad = run_gpuprof("record", "-p", "1", "-F", "0")
    assert bad.returncode == 2, bad.stderr

"""Output files hold command lines, paths and code locations: record files
and traces are created owner-only (0600) unless --mode says otherwise."""
import os
import stat

from conftest import TARGET_PYTHON, run_gpuprof

CODE = "import torch; torch.ones(3) + 1"


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_record_file_and_trace_are_owner_only_by_default(tmp_path):
    out, trace = tmp_path / "a.gpuprof", tmp_path / "a.json"
    old = os.umask(0)  # a permissive umask must not widen them
    try:
        result = run_gpuprof("record", "-q", "-o", str(out), "--chrome-trace", str(trace), "--",
                             TARGET_PYTHON, "-c", CODE)
    finally:
        os.umask(old)
    assert result.returncode == 0, result.stderr
    assert (mode_of(out), mode_of(trace)) == (0o600, 0o600)
    # report's trace too, and --mode widens it on request.
    again = tmp_path / "b.json.gz"
    made = run_gpuprof("report", str(out), "--chrome-trace", str(again), "--mode", "640")
    assert made.returncode == 0, made.stderr
    assert mode_of(again) == 0o640


def test_mode_applies_to_both_files_and_bad_modes_are_refused(tmp_path):
    out, trace = tmp_path / "c.gpuprof", tmp_path / "c.json"
    result = run_gpuprof("record", "-q", "-o", str(out), "--chrome-trace", str(trace), "--mode", "644", "--",
                         TARGET_PYTHON, "-c", CODE)
    assert result.returncode == 0, result.stderr
    assert (mode_of(out), mode_of(trace)) == (0o644, 0o644)
    bad = run_gpuprof("record", "-q", "-o", str(tmp_path / "d.gpuprof"), "--mode", "4755", "--",
                      TARGET_PYTHON, "-c", CODE)
    assert bad.returncode == 2 and "--mode 4755: want octal permission bits" in bad.stderr, bad.stderr
    assert not (tmp_path / "d.gpuprof").exists()  # refused before anything ran
    alone = run_gpuprof("report", str(out), "--mode", "600")
    assert alone.returncode != 0 and "--chrome-trace" in alone.stderr, alone.stderr


def test_a_previous_recording_at_the_output_path_is_kept_as_old(tmp_path):
    # perf's convention for the default name and -o alike (a recording was
    # silently replaced with -o): the previous file becomes FILE.old, once.
    out = tmp_path / "run.gpuprof"
    first = run_gpuprof("record", "-q", "-o", str(out), "--", TARGET_PYTHON, "-c", CODE)
    assert first.returncode == 0, first.stderr
    first_bytes = out.read_bytes()
    second = run_gpuprof("record", "-q", "-o", str(out), "--", TARGET_PYTHON, "-c", CODE + "; torch.zeros(2)")
    assert second.returncode == 0, second.stderr
    assert (tmp_path / "run.gpuprof.old").read_bytes() == first_bytes
    assert "aten::zeros" in run_gpuprof("report", str(out)).stdout
    assert "aten::zeros" not in run_gpuprof("report", str(tmp_path / "run.gpuprof.old")).stdout
    # A device is written to as it is, never renamed.
    null = run_gpuprof("record", "-q", "-o", "/dev/null", "--", TARGET_PYTHON, "-c", CODE)
    assert null.returncode == 0, null.stderr
    assert os.path.exists("/dev/null") and not os.path.exists("/dev/null.old")

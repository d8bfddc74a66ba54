"""Launch mode (`gpuprof record -- CMD`) and the CLI's error paths.

In launch mode the probes must be in place before the command's first op:
first_ops.py runs a distinctive op sequence as the very first ops of the
process and then the same sequence under torch.profiler, so gpuprof must
count exactly twice what torch.profiler counts, for every op.

Errors are one `gpuprof: error: ...` line and a non-zero exit, never a
crash (exit status < 128, no signal).
"""
import re

import pytest

from conftest import (HOST_TORCH, TORCH_ENV_IDS, TORCH_ENVS, describe_count_diff, error_lines, load_torch_ops,
                      parse_stopped_line, parse_table, parse_tracing_line, run_gpuprof)

LOGADDEXP_CALLS = 13  # first_ops.py's constants
HYPOT_CALLS = 5


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def launch_run(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(f"launch-{request.param}")
    record_file = tmp / "launch.gpuprof"
    run = run_gpuprof("record", "-o", record_file, "--row-limit", "-1", "--",
                      *request.param.argv("first_ops.py", tmp), timeout=120)
    return run, record_file, tmp


def check_first_ops_run(run, workdir, exit_mode):
    context = f"exit {run.returncode}\nstderr:\n{run.stderr}\nstdout:\n{run.stdout}"
    assert run.returncode == 0, context
    assert error_lines(run.stderr) == [], context
    tracing = parse_tracing_line(run.stderr)
    assert tracing["exit_mode"] == exit_mode, context
    assert re.search(rf"^gpuprof: {tracing['pid']} exited with status 0$", run.stderr, re.M), context
    assert parse_stopped_line(run.stderr)["reason"] == "target exited", context
    # The command's own output comes first (same stdout), then the table.
    assert re.match(r"first_ops: done \S+\n", run.stdout), context

    torch_calls = {name: v["count"] for name, v in load_torch_ops(workdir / "torch_ops.json").items()}
    assert torch_calls.get("aten::zeros") == 1 and torch_calls.get("aten::logaddexp") == LOGADDEXP_CALLS \
        and torch_calls.get("aten::hypot") == HYPOT_CALLS, torch_calls
    expected = {name: 2 * count for name, count in torch_calls.items()}
    gp_calls = parse_table(run.stdout).calls()
    assert gp_calls == expected, (
        "gpuprof must count every op of first_ops.py's two runs of its sequence, i.e. twice "
        f"torch.profiler's count (the first run starts with the process's first op):\n"
        f"{describe_count_diff(gp_calls, expected)}\n{run.stdout}")


def test_launch_counts_every_op_from_the_first(launch_run):
    run, _, workdir = launch_run
    check_first_ops_run(run, workdir, "emulated")  # the default exit mode


def test_launch_counts_every_op_from_the_first_ret_mode(tmp_path, torch_env):
    run = run_gpuprof("record", "-o", tmp_path / "launch.gpuprof", "--row-limit", "-1", "--exit-mode", "ret",
                      "--", *torch_env.argv("first_ops.py", tmp_path), timeout=120)
    check_first_ops_run(run, tmp_path, "ret")


def test_launched_command_exit_status_is_reported(tmp_path):
    run = run_gpuprof("record", "-o", tmp_path / "f.gpuprof", "-q", "--",
                      *HOST_TORCH.argv("first_ops.py", tmp_path, "7"), timeout=120)
    context = f"exit {run.returncode}\nstderr:\n{run.stderr}\nstdout:\n{run.stdout}"
    pid = parse_tracing_line(run.stderr)["pid"]
    assert re.search(rf"^gpuprof: {pid} exited with status 7$", run.stderr, re.M), context
    assert run.returncode == 0, context  # the recording itself worked
    assert run.stdout.startswith("first_ops: done"), context  # -q: no table
    assert "Self CPU time total" not in run.stdout, context


def assert_one_line_error(run, *patterns):
    context = f"exit {run.returncode}\nstderr:\n{run.stderr}\nstdout:\n{run.stdout}"
    assert 0 < run.returncode < 128, context  # an error, not a crash
    errors = error_lines(run.stderr)
    assert len(errors) == 1, context
    for pattern in patterns:
        assert re.search(pattern, errors[0]), context
    assert "Self CPU time total" not in run.stdout, context
    return errors[0]


def test_nonexistent_command(tmp_path):
    run = run_gpuprof("record", "-o", tmp_path / "f.gpuprof", "--", "/nonexistent/gpuprof-test-cmd")
    assert_one_line_error(run, r"/nonexistent/gpuprof-test-cmd", r"No such file")
    assert run.stderr.strip().count("\n") == 0, run.stderr  # nothing but that line


def test_command_that_never_loads_torch(tmp_path):
    run = run_gpuprof("record", "-o", tmp_path / "f.gpuprof", "--", "/bin/true")
    error = assert_one_line_error(run, r"libtorch_cpu", r"nothing was profiled")
    assert run.stderr.rstrip().endswith(error), run.stderr  # the error is the last word


def test_no_such_process(tmp_path):
    run = run_gpuprof("record", "-p", "999999", "-o", tmp_path / "f.gpuprof")
    assert_one_line_error(run, r"no such process", r"999999")
    assert run.stderr.strip().count("\n") == 0, run.stderr


def test_process_without_libtorch(procs, tmp_path):
    sleeper = procs.start(["sleep", "60"], "sleep")
    run = run_gpuprof("record", "-p", sleeper.pid, "-o", tmp_path / "f.gpuprof")
    assert_one_line_error(run, rf"\b{sleeper.pid}\b", r"sleep", r"no libtorch_cpu")
    assert run.stderr.strip().count("\n") == 0, run.stderr
    assert sleeper.running()


def flip(data, offset):
    data[offset] ^= 0xFF


def corrupt_variants(good):
    """(name, bytes) of broken versions of a good record file."""
    n = len(good)
    variants = {}
    for name, offset in [("magic", 0), ("version", 9), ("header_size", 12),
                         ("first_chunk_type", 16), ("first_chunk_crc", 28),
                         ("middle", n // 2), ("near_end", n - 5)]:
        data = bytearray(good)
        flip(data, offset)
        variants[f"flipped_{name}"] = bytes(data)
    variants["truncated_header"] = good[:10]
    variants["empty"] = b""
    return variants


def assert_rejected(run, bad):
    assert_one_line_error(run, re.escape(str(bad)))
    assert run.returncode == 1, run
    assert run.stderr.strip().count("\n") == 0, run.stderr
    assert run.stdout == "", run.stdout


@pytest.mark.parametrize("variant", ["flipped_magic", "flipped_version", "flipped_header_size",
                                     "flipped_first_chunk_type", "flipped_first_chunk_crc",
                                     "truncated_header", "empty"])
def test_report_rejects_damaged_file(launch_run, tmp_path, variant):
    # A damaged header or first chunk leaves nothing to report.
    _, record_file, _ = launch_run
    good = record_file.read_bytes()
    assert run_gpuprof("report", record_file).returncode == 0
    bad = tmp_path / f"{variant}.gpuprof"
    bad.write_bytes(corrupt_variants(good)[variant])
    assert_rejected(run_gpuprof("report", bad), bad)


@pytest.mark.parametrize("variant", ["flipped_middle", "flipped_near_end"])
def test_report_skips_a_damaged_chunk_unless_strict(launch_run, tmp_path, variant):
    # docs/report.md, "Corrupt recordings": a corrupt chunk after the ones
    # every report needs is skipped and said; --strict refuses the file.
    # The middle of the file may fall in one of those (the op table is
    # large): then it is refused either way.
    _, record_file, _ = launch_run
    bad = tmp_path / f"{variant}.gpuprof"
    bad.write_bytes(corrupt_variants(record_file.read_bytes())[variant])
    assert_rejected(run_gpuprof("report", bad, "--strict"), bad)
    run = run_gpuprof("report", bad)
    if variant == "flipped_middle" and run.returncode == 1:
        assert_rejected(run, bad)
        return
    assert run.returncode == 0, run
    assert re.search(rf"^gpuprof: warning: {re.escape(str(bad))}: corrupt chunk \d+ \(\w+\) at offset \d+: "
                     r"checksum mismatch; skipped: lost ", run.stderr, re.M), run.stderr
    assert "Self CPU time total:" in run.stdout, run.stdout
    if variant == "flipped_near_end":  # the END chunk
        assert "is incomplete (its END chunk was corrupt)" in run.stderr, run.stderr


@pytest.mark.parametrize("path", ["/etc/passwd", "/bin/true"])
def test_report_rejects_foreign_file(path):
    run = run_gpuprof("report", path)
    assert_one_line_error(run, re.escape(path), r"not a gpuprof record file")
    assert run.returncode == 1
    assert run.stderr.strip().count("\n") == 0, run.stderr


def test_report_missing_file(tmp_path):
    run = run_gpuprof("report", tmp_path / "nope.gpuprof")
    assert_one_line_error(run, r"nope\.gpuprof")

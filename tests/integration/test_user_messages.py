"""What a user is told (issue 21, items 6, 8 and 11). A mistake gets one
`gpuprof: error:` line that says what is allowed and which --help to read,
exit 2:

  * `-d -1`, `-d 0`: "a number of seconds above 0" (CLI11's own check
    printed a range up to DBL_MAX that included the rejected 0);
  * a mistyped command: the nearest one suggested, or the list;
  * an error about a command's option points to that command's --help;
  * -F: one rule for record and top, the kernel's current maximum
    (kernel.perf_event_max_sample_rate), and a warning above 10 kHz;
  * a view of data the recording cannot hold (`--launches` without
    libcudart, `--kernels` without the CUPTI shim): an error, as
    `--metric self_cuda_time` already was, not a table that exits 0;
  * --version names the commit and the build date (item 11);
  * a trace cut that keeps no op call says how long the recording is;
  * --help (item 7): examples first, options in named groups, every line
    wrapped to the terminal (or $COLUMNS), no CLI11 "Needs:"/"Excludes:".
  * a disk that fills (issue 21, item 5): mid-recording, an error that says
    the file is valid up to its last complete chunk and that `gpuprof report
    FILE` reads it, which it does without calling gpuprof killed; full from
    the start, an error and no file left behind.

The privilege messages of launch mode and -a are in test_privileges.py.
"""
import datetime
import errno
import fcntl
import json
import os
import re
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

from conftest import REPO_ROOT, TARGET_PYTHON, error_lines, parse_table, run_gpuprof

KERNEL_MAX_HZ = int(Path("/proc/sys/kernel/perf_event_max_sample_rate").read_text())


@pytest.mark.parametrize("value", ["-1", "0", "abc"])
def test_duration_must_be_seconds_above_zero(value, tmp_path):
    result = run_gpuprof("record", "-d", value, "-o", str(tmp_path / "x"), "--", "/usr/bin/true")
    assert result.returncode == 2, result
    assert error_lines(result.stderr) == [
        f"gpuprof: error: --duration: must be a number of seconds above 0, not {value} "
        "(see gpuprof record --help)"], result.stderr


@pytest.mark.parametrize("typed, said", [
    ("recrod", "unknown command 'recrod': did you mean 'record'?"),
    ("reprot", "unknown command 'reprot': did you mean 'report'?"),
    ("tpo", "unknown command 'tpo': did you mean 'top'?"),
    ("calib", "unknown command 'calib': did you mean 'calibrate'?"),
    ("trace", "unknown command 'trace': the commands are record, report, top, calibrate"),
])
def test_a_mistyped_command_is_named(typed, said):
    result = run_gpuprof(typed, "-p", "1")
    assert result.returncode == 2, result
    assert error_lines(result.stderr) == [f"gpuprof: error: {said} (see gpuprof --help)"], result.stderr


@pytest.mark.parametrize("command", ["record", "report", "top", "calibrate"])
def test_an_option_error_points_to_its_commands_help(command):
    result = run_gpuprof(command, "--no-such-option")
    assert result.returncode == 2, result
    assert error_lines(result.stderr) == [
        f"gpuprof: error: The following argument was not expected: --no-such-option (see gpuprof {command} --help)"
    ], result.stderr


@pytest.mark.parametrize("command", ["record", "top"])
def test_sample_rate_is_bounded_by_the_kernel_alike_in_record_and_top(command, tmp_path):
    over = run_gpuprof(command, "-F", str(KERNEL_MAX_HZ + 1), "-p", "1")
    assert over.returncode == 2, over
    assert error_lines(over.stderr) == [
        f"gpuprof: error: --freq: {KERNEL_MAX_HZ + 1} Hz is more than the kernel allows now: at most "
        f"{KERNEL_MAX_HZ} (kernel.perf_event_max_sample_rate, which the kernel lowers when sampling takes too "
        f"long) (see gpuprof {command} --help)"], over.stderr
    zero = run_gpuprof(command, "-F", "0", "-p", "1")
    assert zero.returncode == 2, zero
    assert error_lines(zero.stderr) == [
        f"gpuprof: error: --freq: must be a whole number of Hz, 1 or more, not 0 (see gpuprof {command} --help)"
    ], zero.stderr


def test_a_high_sample_rate_is_warned_about(tmp_path):
    # 20 kHz is allowed (top refused anything over 10 kHz, record took up to
    # 100 kHz): it is recorded, with one warning before the start line.
    out = tmp_path / "fast.gpuprof"
    result = run_gpuprof("record", "-q", "--no-ops", "-F", "20000", "-o", str(out), "--", "/usr/bin/sleep", "0.2")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("gpuprof: warning:")]
    assert warnings == [
        "gpuprof: warning: -F 20000: above 10000 Hz the target pays for every sample and the machine may not "
        "deliver the rate (the stop line counts what was lost); perf's default is 4000 Hz"], result.stderr
    assert out.stat().st_size > 0


@pytest.fixture(scope="module")
def cpu_only_recording(tmp_path_factory):
    """A real torch job recorded without libcudart (a CPU-only PyTorch):
    (path, seconds the record command took)."""
    out = tmp_path_factory.mktemp("cpu-only") / "cpu.gpuprof"
    began = time.monotonic()
    made = run_gpuprof("record", "-q", "-o", str(out), "--", TARGET_PYTHON, "-c",
                       "import torch; torch.ones(4).add(1)")
    took = time.monotonic() - began
    assert made.returncode == 0, made.stderr
    return out, took


@pytest.mark.parametrize("view, said", [
    (("--launches",), "--launches: {out} has no CUDA launches: the target had no libcudart mapped while recording "
                      "(a CPU-only PyTorch, or a CUDA runtime linked statically)"),
    (("--kernels",), "--kernels: {out} has no GPU times: the target did not have gpuprof's CUPTI shim loaded "
                     "(record -- CMD injects it; for -p, start the job with CUDA_INJECTION64_PATH=<dir of gpuprof>/"
                     "libgpuprof_cupti.so; see docs/cuda.md)"),
    (("--folded", "--metric", "self_cuda_time"),
     "--metric self_cuda_time: {out} has no GPU times: the target did not have gpuprof's CUPTI shim loaded "
     "(record -- CMD injects it; for -p, start the job with CUDA_INJECTION64_PATH=<dir of gpuprof>/"
     "libgpuprof_cupti.so; see docs/cuda.md)"),
    (("--gpu",), "--gpu: {out} has no GPU times: the target did not have gpuprof's CUPTI shim loaded "
                 "(record -- CMD injects it; for -p, start the job with CUDA_INJECTION64_PATH=<dir of gpuprof>/"
                 "libgpuprof_cupti.so; see docs/cuda.md)"),
])
def test_a_cuda_view_of_a_cpu_only_recording_is_an_error(cpu_only_recording, view, said):
    out, _ = cpu_only_recording
    result = run_gpuprof("report", str(out), *view)
    assert result.returncode == 2 and not result.stdout, result
    assert error_lines(result.stderr) == ["gpuprof: error: " + said.format(out=out)], result.stderr


def test_an_empty_time_range_cut_says_the_recordings_length(cpu_only_recording, tmp_path):
    out, took = cpu_only_recording
    whole = tmp_path / "whole.json"
    assert run_gpuprof("report", str(out), "--chrome-trace", str(whole)).returncode == 0
    last_end_s = max(e["ts"] + e.get("dur", 0) for e in json.loads(whole.read_text())["traceEvents"]
                     if e["ph"] in ("X", "i")) / 1e6
    cut = run_gpuprof("report", str(out), "--chrome-trace", str(tmp_path / "cut.json"), "--time-range", "1000:1001")
    assert cut.returncode == 0, cut.stderr
    m = re.fullmatch(rf"gpuprof: warning: no op call matched --time-range 1000:1001; {re.escape(str(out))} spans "
                     r"0 to ([\d.]+) s", cut.stderr.splitlines()[-1])
    assert m, cut.stderr
    # From the start of the recording to its detach: after its last event,
    # within the record command's own run.
    assert last_end_s - 0.0005 <= float(m.group(1)) <= took, (m.group(0), last_end_s, took)


def test_version_names_the_commit_and_the_build_date():
    # A bug report needs the build: --version names the commit it was built
    # from (one of this repository's) and the day.
    result = run_gpuprof("--version")
    assert result.returncode == 0, result
    m = re.fullmatch(r"gpuprof \d+\.\d+\.\d+ \(commit ([0-9a-f]{7,40})(-dirty)?, built (\d{4}-\d{2}-\d{2})\)\n",
                     result.stdout)
    assert m, result.stdout
    known = subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", m.group(1) + "^{commit}"], capture_output=True)
    assert known.returncode == 0, f"{m.group(1)} is no commit of {REPO_ROOT}"
    built = datetime.date.fromisoformat(m.group(3))
    assert built <= datetime.datetime.now(datetime.timezone.utc).date(), m.group(0)


HELP_GROUPS = {
    "record": ["Positionals", "Target", "What to record", "Output", "Push", "Table", "Advanced"],
    "report": ["Positionals", "What to print", "Table", "Modules", "System-wide recordings", "Several recordings", "Advanced"],
    "top": ["Positionals", "Target", "View", "Advanced"],
    "calibrate": ["Options"],
}


def help_sections(text):
    """The section headings of a help text ("Examples:", "Target:", ...), in order."""
    return [line[:-1] for line in text.splitlines() if re.fullmatch(r"[A-Z][A-Za-z -]*:", line)]


def help_on_a_terminal(command, columns):
    """`gpuprof COMMAND --help` with stdout on a pseudo-terminal COLUMNS wide."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, columns, 0, 0))
    env = {**os.environ, "COLUMNS": "200"}  # the terminal's width wins
    proc = subprocess.run([str(REPO_ROOT / "build" / "gpuprof"), command, "--help"], stdout=slave,
                          stderr=subprocess.PIPE, env=env, timeout=30)
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the terminal's other side is closed and drained
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.returncode == 0, proc.stderr
    return b"".join(chunks).decode().replace("\r\n", "\n")


@pytest.mark.parametrize("command", sorted(HELP_GROUPS))
def test_help_puts_examples_first_groups_options_and_fits_the_terminal(command):
    narrow = run_gpuprof(command, "--help", env={"COLUMNS": "80"})
    assert narrow.returncode == 0, narrow.stderr
    text = narrow.stdout
    sections = help_sections(text)
    assert sections == ["Examples"] + HELP_GROUPS[command], sections
    assert "Other options" not in sections  # every option has its group
    assert all(len(line) <= 80 for line in text.splitlines()), [l for l in text.splitlines() if len(l) > 80]
    assert "Needs:" not in text and "Excludes:" not in text, text
    # Wider: the descriptions use the width.
    wide = run_gpuprof(command, "--help", env={"COLUMNS": "120"}).stdout
    assert all(len(line) <= 120 for line in wide.splitlines())
    if command != "calibrate":
        assert max(len(line) for line in wide.splitlines()) > 80, wide
        assert len(wide.splitlines()) < len(text.splitlines())
    # On a terminal, its width, whatever $COLUMNS says.
    assert help_on_a_terminal(command, 100) == run_gpuprof(command, "--help", env={"COLUMNS": "100"}).stdout


# --------------------------------------------------------------------------
# A full disk: a tmpfs of SMALL_DISK_KB made for the test. Op events take
# about 2 bytes each on disk (record format 6, compressed), so LONG_ADD_LOOP's
# 8 s of calls fill 384 KiB (128 KiB of it the recorder's reserve) within
# seconds, while tens of thousands of calls fit before that.

SMALL_DISK_KB = 384
# Long enough to fill the small disk many times over (tens of MB of events).
LONG_ADD_LOOP = ("import time, torch\na = torch.ones(3)\nend = time.monotonic() + 8\n"
                 "while time.monotonic() < end: torch.add(a, a)")


@pytest.fixture
def small_disk(tmp_path):
    mount_point = tmp_path / "small_disk"
    mount_point.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SMALL_DISK_KB}k", "tmpfs", str(mount_point)], check=True)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


def test_a_disk_that_fills_while_recording_leaves_a_file_report_reads(small_disk):
    record_file = small_disk / "run.gpuprof"
    result = run_gpuprof("record", "-o", record_file, "--", TARGET_PYTHON, "-c", LONG_ADD_LOOP, timeout=180)
    assert result.returncode == 1, result.stderr
    assert error_lines(result.stderr) == [
        f"gpuprof: error: cannot write {record_file}: No space left on device; {record_file} is valid up to "
        f"its last complete chunk: gpuprof report {record_file} reads it"], result.stderr
    assert result.stdout == ""  # no table: the recording failed
    report = run_gpuprof("report", record_file)
    assert report.returncode == 0, report.stderr
    assert "killed" not in report.stdout + report.stderr and "incomplete" not in report.stderr, report.stderr
    assert "gpuprof: warning: the disk filled: the recording stops there" in report.stdout + report.stderr
    # Every chunk written before the disk filled: tens of thousands of calls
    # fit in it (a file cut at its start would hold none).
    assert parse_table(report.stdout).calls()["aten::add"] > 10000, report.stdout
    # The command runs on to its end, gpuprof waiting for it, as after -d.
    assert re.search(r"^gpuprof: waiting for \d+ to exit", result.stderr, re.M), result.stderr


def test_a_disk_full_from_the_start_leaves_no_file(small_disk):
    fd = os.open(small_disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)  # a short write fills the last page, the next one fails
    except OSError as e:
        assert e.errno == errno.ENOSPC
    finally:
        os.close(fd)
    record_file = small_disk / "run.gpuprof"
    result = run_gpuprof("record", "-o", record_file, "--", TARGET_PYTHON, "-c", "import torch; torch.ones(3)",
                         timeout=180)
    assert result.returncode == 1, result.stderr
    assert error_lines(result.stderr) == [
        f"gpuprof: error: cannot write {record_file}: No space left on device"], result.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]

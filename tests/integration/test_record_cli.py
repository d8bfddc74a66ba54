"""`gpuprof record`'s own options, as docs/record.md, docs/report.md and the README document them.

  * the default output (`./gpuprof.data`, the previous one kept as
    `gpuprof.data.old`), and `report` reading it without a FILE;
  * SIGTERM and SIGHUP to `record -p`: the file is complete (it reports
    without a warning, the same table), the target runs on with its results
    unchanged;
  * the table options of record (`--sort-by`, `--row-limit`,
    `--group-by-input-shape`, `--group-by-stack-n`, both groupings): record
    prints what `report FILE` prints with the same options, and the grouped
    rows hold the known calls of tests/workloads/table_options.py;
  * the sort keys on a real recording: rows in the key's order, and
    `--row-limit N` the first N rows of the unlimited table;
  * `--metric` without `--folded` and `--folded --row-limit`: refused;
  * `-v`: libbpf's log and the probe details, on nothing else;
  * launch mode after the stop: after -d or Ctrl-C gpuprof waits for the
    command (a second Ctrl-C kills gpuprof and leaves the command running),
    after SIGTERM it leaves at once; the command's output is unchanged;
  * the progress line (issue 21, item 2): on a terminal, redrawn in place
    about once a second with counts that only grow and end at the stop
    line's, erased before every other line, cut to the terminal's width;
    none with -q or when stderr is not a terminal.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from chrome_trace_checks import op_calls
from conftest import (GPUPROF, HOST_TORCH, TARGET_PYTHON, WORKLOADS, counter_notes, parse_stopped_line, parse_table, parse_time_us,
                      parse_tracing_line, run_gpuprof, touch, wait_for_file, wait_until)

TABLE_WORKLOAD = "table_options.py"
WORKLOAD_SOURCE = (WORKLOADS / TABLE_WORKLOAD).read_text()


def workload_constant(name):
    """A count of table_options.py, read from its source (one definition of the answer)."""
    m = re.search(rf"^{name} = (\d+)$", WORKLOAD_SOURCE, re.M)
    assert m, f"{TABLE_WORKLOAD} defines no {name}"
    return int(m.group(1))


def def_line(function):
    """The line of table_options.py where `function` is defined."""
    found = [i for i, line in enumerate(WORKLOAD_SOURCE.splitlines(), 1) if line.startswith(f"def {function}(")]
    assert len(found) == 1, f"{TABLE_WORKLOAD}: `def {function}(` on lines {found}"
    return found[0]


HYPOT_A_SMALL = workload_constant("HYPOT_A_SMALL")
HYPOT_B_SMALL = workload_constant("HYPOT_B_SMALL")
HYPOT_B_SQUARE = workload_constant("HYPOT_B_SQUARE")
LOGADDEXP_CALLS = workload_constant("LOGADDEXP_CALLS")
ATAN2_CALLS = workload_constant("ATAN2_CALLS")
SIZE = workload_constant("SIZE")

# The Source Location entries of the hypot calls, innermost first: the path
# relative to the script's directory, and each function at its first line
# (`co_firstlineno`, docs/stacks.md), the module's being line 1.
SITE_A = f"{TABLE_WORKLOAD}({def_line('call_site_a')}): call_site_a"
SITE_B = f"{TABLE_WORKLOAD}({def_line('call_site_b')}): call_site_b"
CALLS_SITES = f"{TABLE_WORKLOAD}({def_line('main')}): main"
ENTRY = f"{TABLE_WORKLOAD}(1): <module>"
SMALL, SQUARE = "[[8], [8]]", "[[4, 4], [4, 4]]"  # hypot's input shapes

# --------------------------------------------------------------------------
# Tables with repeated names (grouped), and their extra columns.


@dataclass
class GroupedRow:
    cells: dict  # header label -> the cell's text, stripped
    source_location: list = field(default_factory=list)  # frames, innermost first

    @property
    def name(self):
        return self.cells["Name"]

    @property
    def calls(self):
        return int(self.cells["# of Calls"])


def parse_rows(text):
    """Every row of a table in order, grouped ones included (parse_table keys
    rows by name, which repeat when a table is grouped); a Source Location
    column's further frames are the lines under its row."""
    lines = text.splitlines()
    start = next((i for i in range(len(lines) - 2) if lines[i].startswith("-") and "Name" in lines[i + 1]), None)
    assert start is not None, f"no table in:\n{text}"
    sep, header = lines[start], lines[start + 1]
    runs = [(m.start(), m.end()) for m in re.finditer(r"-+", sep)]
    labels = [header[s:e].strip() for s, e in runs]
    rows = []
    for line in lines[start + 3:]:
        if line == sep:
            return rows
        cells = {label: line[s:e].strip() for label, (s, e) in zip(labels, runs)}
        location = cells.get("Source Location")
        if cells["Name"]:
            rows.append(GroupedRow(cells, [location] if location else []))
        elif location:  # a further frame of the row above
            rows[-1].source_location.append(location)
    raise AssertionError(f"table without its closing separator:\n{text}")


_MEMORY_UNITS = {"b": 1, "Kb": 1024, "Mb": 1024 ** 2, "Gb": 1024 ** 3}


def parse_memory_bytes(text):
    """torch's memory cells: `224 b`, `80.00 Kb`, `-304.78 Kb`."""
    m = re.fullmatch(r"(-?[\d.]+) (b|Kb|Mb|Gb)", text)
    assert m, f"not a memory size: {text!r}"
    return float(m.group(1)) * _MEMORY_UNITS[m.group(2)]


# Sort key -> the column it sorts by, and how to read that column's cells.
SORT_COLUMNS = {
    "cpu_time_total": ("CPU total", parse_time_us),
    "self_cpu_time_total": ("Self CPU", parse_time_us),
    "cpu_time": ("CPU time avg", parse_time_us),
    "count": ("# of Calls", int),
    "cpu_memory_usage": ("CPU Mem", parse_memory_bytes),
    "self_cpu_memory_usage": ("Self CPU Mem", parse_memory_bytes),
}


def assert_sorted_by(rows, sort_key, text):
    """The rows' values of the key's column never increase down the table
    (a displayed value is rounded, and rounding keeps the order)."""
    column, parse = SORT_COLUMNS[sort_key]
    values = [parse(row.cells[column]) for row in rows]
    out_of_order = [(rows[i].name, values[i], rows[i + 1].name, values[i + 1])
                    for i in range(len(values) - 1) if values[i] < values[i + 1]]
    assert not out_of_order, f"--sort-by {sort_key}: {column} rises from row to row: {out_of_order}\n{text}"


def hypot_calls(rows):
    """{(input shapes, source location): calls} of the aten::hypot rows (each
    part None when its column is not in the table)."""
    found = {}
    for row in rows:
        if row.name == "aten::hypot":
            key = (row.cells.get("Input Shapes"), tuple(row.source_location) if "Source Location" in row.cells
                   else None)
            assert key not in found, f"two aten::hypot rows for {key}"
            found[key] = row.calls
    return found


def sort_key_of(table_args):
    return table_args[table_args.index("--sort-by") + 1] if "--sort-by" in table_args else "cpu_time_total"


def row_limit_of(table_args):
    return int(table_args[table_args.index("--row-limit") + 1]) if "--row-limit" in table_args else 100


def without_row_limit(table_args):
    args = list(table_args)
    if "--row-limit" in args:
        del args[args.index("--row-limit"):args.index("--row-limit") + 2]
    return (*args, "--row-limit", "-1")


def report(record_file, *args):
    result = run_gpuprof("report", record_file, *args)
    assert result.returncode == 0, result.stderr
    return result


def record_table_workload(torch_env, record_file, *record_args):
    """`record ... -- table_options.py` (launch mode: the whole script is traced)."""
    result = run_gpuprof("record", "-o", record_file, *record_args, "--", *torch_env.argv(TABLE_WORKLOAD),
                         timeout=180)
    assert result.returncode == 0, f"{result.stderr}\n{result.stdout}"
    assert "table_options: ok" in result.stderr.splitlines(), result.stderr
    stopped = parse_stopped_line(result.stderr)
    assert (stopped["reason"], stopped["lost"]) == ("target exited", 0), result.stderr
    return result


# --------------------------------------------------------------------------
# record's table options: what record prints is what report prints.

# name -> (recording options, table options, the aten::hypot rows of the
# grouping: {(input shapes, source location): calls}).
TABLE_CASES = {
    # The README's headline example.
    "readme-input-shape": (
        ("--record-shapes", "--profile-memory"),
        ("--group-by-input-shape", "--sort-by", "self_cpu_memory_usage", "--row-limit", "8"),
        {(SMALL, None): HYPOT_A_SMALL + HYPOT_B_SMALL, (SQUARE, None): HYPOT_B_SQUARE}),
    # README/docs/stacks.md: --group-by-stack-n 5 with --sort-by self_cpu_time_total.
    "stack-n-5": (
        ("--with-stack",),
        ("--group-by-stack-n", "5", "--sort-by", "self_cpu_time_total", "--row-limit", "-1"),
        # The workload lingers 0.5 s after its ops: without it, CPython 3.13 (the chroot)
        # may free its __main__ code before gpuprof names the frames (docs/stacks.md, "Limits").
        {(None, (SITE_A, CALLS_SITES, ENTRY)): HYPOT_A_SMALL,
         (None, (SITE_B, CALLS_SITES, ENTRY)): HYPOT_B_SMALL + HYPOT_B_SQUARE}),
    # Both groupings: three rows, one per (shapes, top frame).
    "shape-and-stack": (
        ("--record-shapes", "--with-stack"),
        ("--group-by-input-shape", "--group-by-stack-n", "1", "--sort-by", "cpu_time", "--row-limit", "-1"),
        {(SMALL, (SITE_A,)): HYPOT_A_SMALL, (SMALL, (SITE_B,)): HYPOT_B_SMALL,
         (SQUARE, (SITE_B,)): HYPOT_B_SQUARE}),
    "sort-count-row-limit-3": (
        (),
        ("--sort-by", "count", "--row-limit", "3"),
        {(None, None): HYPOT_A_SMALL + HYPOT_B_SMALL + HYPOT_B_SQUARE}),
}


@pytest.mark.parametrize("case", list(TABLE_CASES))
def test_record_prints_what_report_prints(torch_env, tmp_path, case):
    record_args, table_args, expected_hypot = TABLE_CASES[case]
    record_file = tmp_path / "table.gpuprof"
    recorded = record_table_workload(torch_env, record_file, *record_args, *table_args)
    reported = report(record_file, *table_args)
    # docs/record.md: "the table is printed: the same table `gpuprof report FILE` prints" (notes included).
    assert recorded.stdout == reported.stdout, (
        f"record printed:\n{recorded.stdout}\nreport {' '.join(table_args)} printed:\n{reported.stdout}")

    # The rows are right: the whole table of the same grouping holds the
    # known calls, in the key's order, and the printed one is its first N rows.
    full_text = report(record_file, *without_row_limit(table_args)).stdout
    full = parse_rows(full_text)
    assert hypot_calls(full) == expected_hypot, full_text
    assert_sorted_by(full, sort_key_of(table_args), full_text)
    printed = parse_rows(recorded.stdout)
    limit = row_limit_of(table_args)
    assert printed == (full[:limit] if limit >= 0 else full), (
        f"--row-limit {limit}: not the first rows of the whole table\n{recorded.stdout}\n{full_text}")
    assert len(printed) == (min(limit, len(full)) if limit >= 0 else len(full))


# --------------------------------------------------------------------------
# Sort keys and --row-limit on one real recording.


@pytest.fixture(scope="module")
def memory_recording(tmp_path_factory):
    """table_options.py recorded with --profile-memory (the memory sort keys
    need it), on torch 1.13: sorting and cutting read only the file."""
    record_file = tmp_path_factory.mktemp("sort-keys") / "memory.gpuprof"
    record_table_workload(HOST_TORCH, record_file, "-q", "--profile-memory")
    return record_file


@pytest.mark.parametrize("sort_key", ["self_cpu_time_total", "cpu_time", "count", "cpu_memory_usage"])
def test_sort_key_orders_rows_and_row_limit_keeps_the_first(memory_recording, sort_key):
    full_text = report(memory_recording, "--sort-by", sort_key, "--row-limit", "-1").stdout
    full = parse_rows(full_text)
    calls = {row.name: row.calls for row in full}
    assert (calls["aten::hypot"], calls["aten::logaddexp"], calls["aten::atan2"]) == (
        HYPOT_A_SMALL + HYPOT_B_SMALL + HYPOT_B_SQUARE, LOGADDEXP_CALLS, ATAN2_CALLS), full_text
    # logaddexp and atan2 each allocate one float32 result of SIZE elements per call.
    memory = {row.name: parse_memory_bytes(row.cells["CPU Mem"]) for row in full}
    assert (memory["aten::logaddexp"], memory["aten::atan2"]) == (LOGADDEXP_CALLS * SIZE * 4,
                                                                   ATAN2_CALLS * SIZE * 4), full_text
    assert_sorted_by(full, sort_key, full_text)
    # Every cut is the head of the whole table, with the same footer and notes.
    full_lines = full_text.splitlines()
    footer_at = next(i for i, line in enumerate(full_lines) if line.startswith("Self CPU time total:"))
    for limit in range(len(full) + 1):
        cut_text = report(memory_recording, "--sort-by", sort_key, "--row-limit", str(limit)).stdout
        assert parse_rows(cut_text) == full[:limit], f"--row-limit {limit}:\n{cut_text}\nwhole:\n{full_text}"
        cut_lines = cut_text.splitlines()
        assert cut_lines[-(len(full_lines) - footer_at):] == full_lines[footer_at:], cut_text
    # A limit past the end prints every row.
    assert report(memory_recording, "--sort-by", sort_key, "--row-limit", str(len(full) + 5)).stdout == full_text


# --------------------------------------------------------------------------
# Refused combinations (docs/folded.md "Errors and notes").


@pytest.mark.parametrize("args,message", [
    (("--metric", "self_cpu_time"), "gpuprof: error: --metric requires --folded (see gpuprof report --help)"),
    (("--metric", "samples"), "gpuprof: error: --metric requires --folded (see gpuprof report --help)"),
    (("--folded", "--row-limit", "5"), "gpuprof: error: --row-limit excludes --folded (see gpuprof report --help)"),
    (("--folded", "--row-limit", "-1"), "gpuprof: error: --row-limit excludes --folded (see gpuprof report --help)"),
], ids=["metric-self_cpu_time", "metric-samples", "folded-row-limit-5", "folded-row-limit-all"])
def test_refused_table_and_folded_mixes(memory_recording, args, message):
    result = run_gpuprof("report", memory_recording, *args)
    assert (result.returncode, result.stdout, result.stderr) == (2, "", message + "\n"), result


# --------------------------------------------------------------------------
# The default output file.


def run_gpuprof_in(procs, directory, *args):
    """gpuprof run to completion in `directory` (the default file names are relative to it)."""
    gp = procs.start_gpuprof(*args, cwd=directory)
    assert gp.wait(timeout=180) == 0, gp.describe()
    return gp


def test_default_output_is_gpuprof_data_and_the_previous_one_is_kept_as_old(procs, tmp_path):
    """docs/record.md: `-o` defaults to `gpuprof.data` in the working
    directory, the previous one renamed `gpuprof.data.old`; `report`
    without FILE reads `./gpuprof.data`. Three recordings, each with its own
    number of hypot calls, tell the files apart."""
    kept = {}
    for run, hypot_calls_made in enumerate((3, 5, 7)):
        code = f"import torch; a = torch.ones(3); [torch.hypot(a, a) for _ in range({hypot_calls_made})]"
        gp = run_gpuprof_in(procs, tmp_path, "record", "-q", "--", TARGET_PYTHON, "-c", code)
        assert parse_stopped_line(gp.stderr())["path"] == "gpuprof.data", gp.stderr()
        expected_files = ["gpuprof.data", "gpuprof.data.old"] if run else ["gpuprof.data"]
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("gpuprof.data")) == expected_files
        if run:  # the previous recording, byte for byte: renamed, not rewritten
            assert (tmp_path / "gpuprof.data.old").read_bytes() == kept[run - 1]
        kept[run] = (tmp_path / "gpuprof.data").read_bytes()
        table = parse_table(run_gpuprof_in(procs, tmp_path, "report", "--row-limit", "-1").stdout())
        assert table.calls()["aten::hypot"] == hypot_calls_made, table.text
        assert table.text == report(tmp_path / "gpuprof.data", "--row-limit", "-1").stdout


# --------------------------------------------------------------------------
# SIGTERM and SIGHUP to record -p.

FIXED_COUNT_CALLS = 1000


@pytest.mark.parametrize("sig,reason", [(signal.SIGTERM, "terminated"), (signal.SIGHUP, "hangup")],
                         ids=["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_finish_the_file_and_leave_the_target_running(procs, workdir, tmp_path, torch_env,
                                                                         sig, reason):
    """docs/record.md: recording stops on SIGTERM and SIGHUP as on Ctrl-C:
    probes removed, events drained, the file finished, the table printed;
    the target (attached with -p) runs on with unchanged results."""
    target = procs.start_workload("fixed_count.py", workdir, str(FIXED_COUNT_CALLS), "0", torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    record_file = tmp_path / "signalled.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-o", record_file, "--row-limit", "-1")
    gp.wait_for_stderr(r"^gpuprof: tracing ", watch=[target])
    touch(workdir, "go")
    assert int(wait_for_file(workdir, "done", timeout=120, watch=[target, gp])) == FIXED_COUNT_CALLS
    gp.send(sig)
    assert gp.wait(timeout=60) == 0, gp.describe()

    stderr = gp.stderr()
    assert parse_tracing_line(stderr)["pid"] == pid
    stopped = parse_stopped_line(stderr)
    # One entry and one exit event per call, nothing else ran from `go` on.
    assert (stopped["reason"], stopped["events"], stopped["lost"], stopped["path"]) == (
        reason, 2 * FIXED_COUNT_CALLS, 0, str(record_file)), stderr
    table = parse_table(gp.stdout())
    assert table.calls() == {"aten::add": FIXED_COUNT_CALLS}, table.text
    assert counter_notes(table) == [], table.text  # nothing running at the stop, nothing lost
    # Complete: a killed recorder's file reports with a warning; this one
    # reports silently, the very table record printed.
    reported = run_gpuprof("report", record_file, "--row-limit", "-1")
    assert (reported.returncode, reported.stderr, reported.stdout) == (0, "", gp.stdout())
    # The target outlived gpuprof, and its results are right (it checks every one).
    assert target.running(), target.describe()
    touch(workdir, "check")
    assert target.wait(timeout=60) == 0, target.describe()


# --------------------------------------------------------------------------
# -v.

NO_EXIT_PROBE_RE = re.compile(r"^gpuprof: (\d+) of (\d+) ops? (?:has|have) no exit probe "
                              r"\(no `ret` found in the body\): (.+)$")
SUMMARY_RE = re.compile(r"^gpuprof: (\d+) schemas read; (\d+) ops without a ret; (\d+) entries single-stepped; ")
# The probe calibration at attach (docs/overhead.md, "Compensation").
CALIBRATION_RE = re.compile(r"^gpuprof: [\d.]+ us of probe time removed per call \(.*\), calibrated at attach ")
DETACH_CALIBRATION_RE = re.compile(r"^gpuprof: calibrated through the recording: [\d.]+ us per call from \d+ rounds "
                                   r"\(at attach: [\d.]+ us\)$")
# docs/record.md: in Debian's 1.13, aten::_cudnn_rnn_backward.out's body ends in a tail jump.
KNOWN_WITHOUT_EXIT = {"torch1.13": "aten::_cudnn_rnn_backward.out"}
VERBOSE_HYPOT_CALLS = 3


def without_verbose_lines(lines):
    """stderr lines but -v's own, numbers (pids, times) blanked."""
    return [re.sub(r"\d+(\.\d+)?", "N", line) for line in lines
            if not (line.startswith("libbpf: ") or NO_EXIT_PROBE_RE.match(line) or SUMMARY_RE.match(line)
                    or CALIBRATION_RE.match(line) or DETACH_CALIBRATION_RE.match(line))]


def test_verbose_adds_libbpf_log_and_probe_details_only(tmp_path, torch_env):
    """docs/record.md: `-v` prints probe details (the ops without an exit
    probe, by name, and the probes' calibrated cost) and libbpf's log; the
    recording is the same."""
    code = f"import torch; a = torch.ones(3); [torch.hypot(a, a) for _ in range({VERBOSE_HYPOT_CALLS})]"
    runs = {}
    for verbose in (False, True):
        record_file = tmp_path / f"verbose-{verbose}.gpuprof"
        result = run_gpuprof("record", *(["-v"] if verbose else []), "-q", "-o", record_file, "--",
                             *torch_env.python, "-c", code, timeout=180)
        assert result.returncode == 0, result.stderr
        table = parse_table(report(record_file, "--row-limit", "-1").stdout)
        assert table.calls()["aten::hypot"] == VERBOSE_HYPOT_CALLS, table.text
        # The file name blanked: the two runs' stderr is compared below.
        runs[verbose] = result.stderr.replace(str(record_file), "FILE").splitlines(), table

    quiet, _ = runs[False]
    verbose, _ = runs[True]
    assert not [line for line in quiet if line.startswith("libbpf: ") or NO_EXIT_PROBE_RE.match(line)
                or SUMMARY_RE.match(line) or CALIBRATION_RE.match(line) or DETACH_CALIBRATION_RE.match(line)], \
        "\n".join(quiet)
    # libbpf's log: its length is libbpf's business; that it is there is ours.
    assert any(line.startswith("libbpf: loading object ") for line in verbose), "\n".join(verbose[:20])
    ops = parse_tracing_line("\n".join(verbose))["ops"]
    no_exit = [m for m in map(NO_EXIT_PROBE_RE.match, verbose) if m]
    summary = [m for m in map(SUMMARY_RE.match, verbose) if m]
    details = "\n".join(line for line in verbose if not line.startswith("libbpf: "))
    calibration = [line for line in verbose if CALIBRATION_RE.match(line)]
    at_detach = [line for line in verbose if DETACH_CALIBRATION_RE.match(line)]
    assert len(no_exit) == 1 and len(summary) == 1 and len(calibration) == 1 and len(at_detach) == 1, details
    count, of_ops, names = int(no_exit[0].group(1)), int(no_exit[0].group(2)), no_exit[0].group(3).split(", ")
    # The first 3 named, then "..." for the rest (the collectives a backend
    # only refuses have no `ret` either: docs/fleet.md, "Collectives").
    named = names[:-1] if count > 3 else names
    assert (of_ops, len(named), int(summary[0].group(2))) == (ops, min(count, 3), count), details
    assert names[-1:] == (["..."] if count > 3 else names[-1:]), details
    if torch_env.id in KNOWN_WITHOUT_EXIT:
        assert KNOWN_WITHOUT_EXIT[torch_env.id] in names, names
    # Apart from -v's lines, the two runs said the same (pids and times aside).
    assert without_verbose_lines(verbose) == without_verbose_lines(quiet), (
        f"{without_verbose_lines(quiet)}\n{without_verbose_lines(verbose)}")
    assert runs[True][1].calls() == runs[False][1].calls()


# --------------------------------------------------------------------------
# Launch mode after the stop.

LINGERING_CALLS = 7  # lingering_command.py's hypot calls
# -d in launch mode counts from the command's start: long enough for it to
# import torch and make its calls first (`import torch` alone took up to
# 7 s in the torch 2.6 chroot with this shared machine loaded, 2026-11-26).
LINGERING_DURATION_S = 20
WAITING_RE = r"^gpuprof: waiting for (\d+) to exit \(Ctrl-C again leaves it running\)$"
# How gpuprof is stopped -> (the signals sent, the stop line's reason,
# whether gpuprof waits for the command, gpuprof's exit status).
LAUNCH_STOPS = {
    "ctrl-c": ((signal.SIGINT,), "interrupted", True, 0),
    "duration": ((), "duration", True, 0),
    # The second Ctrl-C comes while gpuprof waits: it kills gpuprof (the
    # default action, its signals given back), not the command.
    "ctrl-c-twice": ((signal.SIGINT, signal.SIGINT), "interrupted", False, -signal.SIGINT),
    # The same when gpuprof starts with SIGINT ignored, as a script's
    # `gpuprof record -- CMD &` does (and this test run, started so).
    "ctrl-c-twice-sigint-ignored": ((signal.SIGINT, signal.SIGINT), "interrupted", False, -signal.SIGINT),
    "sigterm": ((signal.SIGTERM,), "terminated", False, 0),
}


def trace_op_calls(record_file, out):
    """The op calls of a recording, one per call: its Chrome trace's complete events."""
    made = run_gpuprof("report", record_file, "--chrome-trace", out)
    assert made.returncode == 0, made.stderr
    return op_calls(json.loads(Path(out).read_text()))


def process_gone_or_zombie(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("stop", list(LAUNCH_STOPS))
def test_launch_mode_after_the_stop(procs, workdir, tmp_path, torch_env, stop):
    """docs/record.md: in launch mode, when the stop came from -d or Ctrl-C,
    gpuprof waits for CMD to exit (a second Ctrl-C leaves it running); on
    SIGTERM it leaves at once and CMD runs on. Either way the recording is
    finished at the stop and the command runs to its end, its output
    unchanged. (Ctrl-C here is SIGINT to gpuprof alone, as `kill -INT`: a
    terminal's Ctrl-C would signal the command too, which shares gpuprof's
    process group.)"""
    signals, reason, waits, status = LAUNCH_STOPS[stop]
    record_file = tmp_path / "lingering.gpuprof"
    duration = ("-d", str(LINGERING_DURATION_S)) if stop == "duration" else ()
    gp = procs.start_gpuprof("record", "-o", record_file, "--row-limit", "-1", *duration, "--",
                             *torch_env.argv("lingering_command.py", workdir, str(LINGERING_CALLS)),
                             sigint=signal.SIG_IGN if stop.endswith("-sigint-ignored") else signal.SIG_DFL)
    wait_for_file(workdir, "made", timeout=180, watch=[gp])
    pid = parse_tracing_line(gp.stderr())["pid"]
    procs.track_pid(pid)  # not ours to wait for: killed at teardown if it is left
    if signals:
        gp.send(signals[0])
    gp.wait_for_stderr(rf"^gpuprof: stopped \({reason}\)", timeout=LINGERING_DURATION_S + 60)
    if waits or len(signals) == 2:
        assert int(gp.wait_for_stderr(WAITING_RE).group(1)) == pid, gp.stderr()
    if len(signals) == 2:
        gp.send(signals[1])
    if not waits:  # gone at once, the command left running
        assert gp.wait(timeout=60) == status, gp.describe()
    # The command is still at its `release` file, waited for or not.
    time.sleep(1.0)  # time for gpuprof to leave if it was (wrongly) not waiting
    assert not process_gone_or_zombie(pid), gp.describe()
    assert gp.running() == waits, gp.describe()
    touch(workdir, "release")
    if waits:
        # gpuprof stays until the command has exited: it reaped it.
        assert gp.wait(timeout=60) == status, gp.describe()
        assert (workdir / "finished").exists() and not Path(f"/proc/{pid}").exists(), gp.describe()
    else:
        wait_for_file(workdir, "finished")
        wait_until(lambda: process_gone_or_zombie(pid), 60, f"the command {pid} to exit")

    stderr = gp.stderr()
    stopped = parse_stopped_line(stderr)
    assert (stopped["reason"], stopped["lost"], stopped["path"]) == (reason, 0, str(record_file)), stderr
    assert len(re.findall(WAITING_RE, stderr, re.M)) == (1 if waits or len(signals) == 2 else 0), stderr
    reported = report(record_file, "--row-limit", "-1")
    table = parse_table(reported.stdout)
    assert table.calls()["aten::hypot"] == LINGERING_CALLS, (
        f"{table.text}\n(-d: did {LINGERING_DURATION_S} s pass before the command made its calls?)")
    # Every call of the recording ended before the stop (the command sat in
    # Python's sleep): entry and exit of each, nothing lost, cut or unwound.
    assert counter_notes(table) == [], table.text
    assert stopped["events"] == 2 * len(trace_op_calls(record_file, tmp_path / "lingering.json")), stderr
    # stdout: the command's line, the table (the one `report` prints), the
    # command's last line, whether gpuprof was still there to see it or not.
    assert gp.stdout() == (f"lingering: made {LINGERING_CALLS} hypot calls\n" + reported.stdout +
                           "lingering: released\n"), gp.stdout()


# --------------------------------------------------------------------------
# The progress line on a terminal.

ERASE = "\r\x1b[K"  # column 0, clear to the end of the line
PROGRESS_RE = re.compile(
    r"gpuprof: (?P<elapsed>\d+)s, (?P<rate>\d+) ops/s, (?P<events>\d+) events(?:, (?P<samples>\d+) samples)?"
    r"(?:, (?P<gpu>\d+) GPU records)?, (?P<mb>[\d.]+) MB, (?P<lost>\d+) lost")
# A line drawn: the erase, then the text up to the next control character.
DRAWN_RE = re.compile(re.escape(ERASE) + r"(gpuprof: \d+s, [^\r\n\x1b]*)")
SYSTEM_STOPPED_SAMPLES_RE = re.compile(r"^gpuprof: stopped \(duration\);.*; (\d+) samples, \d+ lost;", re.M)
# Runs for a few seconds of its own clock after torch is imported, whatever the machine's load.
TIMED_ADD_LOOP = ("import time, torch\na = torch.ones(3)\nend = time.monotonic() + 4\n"
                  "while time.monotonic() < end: torch.add(a, a)")


def run_on_terminal(tmp_path, *args, columns=200, timeout=180):
    """gpuprof ARGS with its stderr on a pseudo-terminal `columns` wide and
    its stdout in a file; returns (exit status, all written to the terminal,
    with the terminal's \\r\\n as \\n, stdout)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    stdout_path = tmp_path / "on_terminal.stdout"
    with open(stdout_path, "wb") as out:
        proc = subprocess.Popen([str(GPUPROF), *map(str, args)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=slave, start_new_session=True)
    os.close(slave)
    written = bytearray()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 1.0)[0]:
                continue
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: gpuprof and what it launched closed the terminal
                break
            if not data:
                break
            written += data
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"gpuprof {' '.join(map(str, args))} did not finish within {timeout} s:\n{written.decode()}")
    finally:
        os.close(master)
    status = proc.wait(timeout=30)
    return status, written.decode(errors="replace").replace("\r\n", "\n"), stdout_path.read_text()


def progress_lines(terminal):
    """The progress lines drawn, in order, each checked to be erased (or
    redrawn) before anything else is written: no message shares its line."""
    drawn = list(DRAWN_RE.finditer(terminal))
    for m in drawn:
        assert terminal.startswith(ERASE, m.end()), \
            f"progress line {m.group(1)!r} not erased before what follows: {terminal[m.end():m.end() + 80]!r}"
    return [m.group(1) for m in drawn]


def without_progress(terminal):
    """What the terminal shows once every progress line is erased: the plain lines."""
    return DRAWN_RE.sub("", terminal).replace(ERASE, "")


def assert_growing_to(progress, field, final):
    values = [int(p[field]) for p in progress]
    assert values == sorted(values), f"{field} went down: {values}"
    assert values[-1] == final, f"the last progress line's {field} {values[-1]} != the stop line's {final}"


def test_progress_line_on_a_terminal_counts_up_to_the_stop_line(tmp_path):
    """docs/record.md: launch mode with -F, its stderr a terminal: lines
    drawn about once a second (at least two while the 4 s loop runs, plus
    the last one), each with every field, events and samples never going
    down and ending at the stop line's counts; erased before each other line."""
    status, terminal, stdout = run_on_terminal(tmp_path, "record", "-F", "99", "-o", tmp_path / "run.gpuprof",
                                               "--", TARGET_PYTHON, "-c", TIMED_ADD_LOOP)
    assert status == 0, terminal
    lines = progress_lines(terminal)
    progress = [PROGRESS_RE.fullmatch(line) for line in lines]
    assert all(progress), lines
    while_recording = [p for p in progress[:-1] if int(p["events"]) > 0]
    assert len(while_recording) >= 2, lines
    assert all(p["samples"] is not None for p in progress), lines
    plain = without_progress(terminal)
    assert "\x1b" not in plain and "\r" not in plain, repr(plain)
    stopped = parse_stopped_line(plain)
    assert stopped["reason"] == "target exited", plain
    assert_growing_to(progress, "events", stopped["events"])
    assert_growing_to(progress, "samples", stopped["samples"])
    assert_growing_to(progress, "elapsed", int(progress[-1]["elapsed"]))
    assert float(progress[-1]["mb"]) > 0 and max(int(p["rate"]) for p in while_recording) > 0, lines
    assert "aten::add" in stdout  # the table, on stdout as ever


def test_progress_line_of_record_all_and_cut_to_a_narrow_terminal(tmp_path):
    """record -a (samples only, no torch needed) on a terminal 40 columns
    wide: every line drawn is the start of a full progress line, at most 39
    characters (never wrapped); at 200 columns the samples count grows to the stop line's."""
    status, terminal, _ = run_on_terminal(tmp_path, "record", "-a", "--no-ops", "-F", "49", "-d", "3", "-q",
                                          "-o", tmp_path / "narrow.gpuprof", columns=40)
    assert status == 0, terminal
    assert progress_lines(terminal) == [], "-q: no progress line"
    status, terminal, _ = run_on_terminal(tmp_path, "record", "-a", "--no-ops", "-F", "49", "-d", "3",
                                          "-o", tmp_path / "narrow.gpuprof", columns=40)
    assert status == 0, terminal
    narrow = progress_lines(terminal)
    assert len(narrow) >= 3 and all(len(line) == 39 for line in narrow), narrow
    assert all(line.startswith("gpuprof: ") and ", " in line for line in narrow), narrow
    status, terminal, _ = run_on_terminal(tmp_path, "record", "-a", "--no-ops", "-F", "49", "-d", "3",
                                          "-o", tmp_path / "wide.gpuprof")
    assert status == 0, terminal
    progress = [PROGRESS_RE.fullmatch(line) for line in progress_lines(terminal)]
    assert len(progress) >= 3 and all(progress), terminal
    stopped = SYSTEM_STOPPED_SAMPLES_RE.search(without_progress(terminal))
    assert stopped, terminal
    assert_growing_to(progress, "samples", int(stopped.group(1)))


def test_no_progress_line_when_stderr_is_not_a_terminal(tmp_path):
    """stderr a pipe (run_gpuprof): the stderr lines as before, no control characters."""
    result = run_gpuprof("record", "-o", tmp_path / "run.gpuprof", "--", TARGET_PYTHON, "-c", TIMED_ADD_LOOP,
                         timeout=180)
    assert result.returncode == 0, result.stderr
    assert "ops/s" not in result.stderr and "\x1b" not in result.stderr and "\r" not in result.stderr, result.stderr
    assert parse_stopped_line(result.stderr)["events"] > 0

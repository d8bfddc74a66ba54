"""report A B ... (docs/fleet.md): two processes of a job, each recorded by
its own `gpuprof record -p` at the same time, read back as one table and as
the straggler view (--by pid, --by file). The processes make a known number
of aten::add calls each (tests/workloads/fixed_count.py), one three times as
many as the other; the exact figures come from each file alone (its pprof
profile, in ns), so every number printed for the pair is checked to the
digit."""
import collections
import gzip
import json
import re

import pytest

from conftest import TORCH_ENV_IDS, TORCH_ENVS, Procs, parse_stopped_line, run_gpuprof, touch, wait_for_file
from pprof_reader import decode, per_leaf_op, table_time
from test_report_memory import report_as_whole, report_file_as_whole

CALLS = {"a": 3000, "b": 1000}


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def pair(request, tmp_path_factory):
    """{name: (record file, pid, exact (calls, self ns) of aten::add)} of the two processes."""
    tmp = tmp_path_factory.mktemp(f"many-{request.param}")
    procs = Procs(tmp)
    try:
        started = {}
        for name, calls in CALLS.items():
            workdir = tmp / name
            workdir.mkdir()
            target = procs.start_workload("fixed_count.py", workdir, str(calls), "1", name=f"target-{name}",
                                          torch_env=request.param)
            started[name] = (workdir, target)
        runs = {}
        for name, (workdir, target) in started.items():
            pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
            record = tmp / f"{name}.gpuprof"
            gp = procs.start_gpuprof("record", "-p", pid, "-o", record, "-q", name=f"gpuprof-{name}")
            gp.wait_for_stderr(r"^gpuprof: tracing ", watch=[target])
            runs[name] = (workdir, target, gp, record, pid)
        for workdir, target, gp, _, _ in runs.values():
            touch(workdir, "go")
        out = {}
        for name, (workdir, target, gp, record, pid) in runs.items():
            assert int(wait_for_file(workdir, "done", timeout=120, watch=[target, gp])) == CALLS[name]
            gp.send(2)  # SIGINT
            assert gp.wait(timeout=60) == 0, gp.describe()
            assert parse_stopped_line(gp.stderr())["lost"] == 0, gp.stderr()
            touch(workdir, "check")
            assert target.wait(timeout=60) == 0, target.describe()
            profile = tmp / f"{name}.pb"
            made = run_gpuprof("report", str(record), "--pprof", str(profile))
            assert made.returncode == 0, made.stderr
            out[name] = (record, pid, per_leaf_op(decode(profile))["aten::add"])
        yield out
    finally:
        procs.cleanup()


def table_row(text, op):
    m = re.search(rf"^\s*{re.escape(op)}\s+(\S+)%\s+(\S+)\s+(\S+)%\s+(\S+)\s+(\S+)\s+(\d+)\s*$", text, re.M)
    assert m, text
    return m.groups()


def test_one_table_of_both(pair):
    report = run_gpuprof("report", *(str(r) for r, _, _ in pair.values()), "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    exact = [ns for _, _, (_, ns) in pair.values()]
    self_pct, self_cpu, _, _, _, calls = table_row(report.stdout, "aten::add")
    # Exactly the two processes' calls, nothing else ran from `go` on.
    assert int(calls) == sum(CALLS.values()), report.stdout
    assert self_cpu == table_time(sum(exact) / 1000), (self_cpu, exact)
    assert self_pct == "100.00", report.stdout
    assert "2 recordings, 2 processes, one table:" in report.stdout
    for record, pid, _ in pair.values():
        assert re.search(rf"^  {re.escape(str(record))}: \S+:{pid} \(", report.stdout, re.M), report.stdout
        # Each file's compensation is its own, said once per file.
        assert re.search(rf"^gpuprof: {re.escape(str(record))}: \S+:{pid} \(\S+\): [\d.]+ us of probe time removed",
                         report.stdout, re.M), report.stdout


@pytest.mark.parametrize("by", ["pid", "file"])
def test_straggler_view(pair, by):
    report = run_gpuprof("report", *(str(r) for r, _, _ in pair.values()), "--by", by)
    assert report.returncode == 0, report.stderr
    groups = re.findall(r"^  \d+\. (.+)$", report.stdout, re.M)
    assert len(groups) == 2, report.stdout
    if by == "pid":
        assert [int(re.search(r":(\d+) \(", g).group(1)) for g in groups] == [pid for _, pid, _ in pair.values()]
    else:
        assert groups == [str(r) for r, _, _ in pair.values()]
    exact = [ns for _, _, (_, ns) in pair.values()]
    row = re.search(r"^aten::add\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(.+)$", report.stdout, re.M)
    assert row, report.stdout
    calls, total, low, median, high, slowest = row.groups()
    assert int(calls) == sum(CALLS.values())
    # Of two groups the median is their mean, rounded down to the ns.
    assert (total, low, median, high) == (table_time(sum(exact) / 1000), table_time(min(exact) / 1000),
                                          table_time(sum(exact) // 2 / 1000), table_time(max(exact) / 1000))
    assert slowest == groups[exact.index(max(exact))]


def test_streamed_tables_are_the_whole_reads(pair):
    """The table and the straggler views read each file as a stream, one
    after the other (docs/fleet.md): the same bytes as every file read
    whole, compensated and raw."""
    files = [str(r) for r, _, _ in pair.values()]
    for args in (["--row-limit", "-1"], ["--raw-times"], ["--by", "pid"], ["--by", "file"]):
        report = report_as_whole(*files, *args)
        assert report.returncode == 0 and "aten::add" in report.stdout, (args, report.stderr)


def test_streamed_folded_is_the_whole_reads(pair):
    """--folded of both files reads each as a stream, one after the other
    (docs/fleet.md): the same bytes as every file read whole, compensated
    and raw; each file's stacks under its own name, as its own --folded
    prints them, its aten::add self time exactly its own."""
    files = [str(r) for r, _, _ in pair.values()]
    for args in ([], ["--raw-times"]):
        both = report_as_whole(*files, "--folded", *args)
        assert both.returncode == 0, (args, both.stderr)
        alone = []
        for name in files:
            own = run_gpuprof("report", name, "--folded", *args)
            assert own.returncode == 0, own.stderr
            alone += [f"{name};{line}" for line in own.stdout.splitlines()]
        assert both.stdout.splitlines() == sorted(alone), (args, both.stdout)
        if not args:
            # The exact self time of each file's calls (its pprof, in ns), in us
            # as folded stacks truncate it.
            for record, _, (_, ns) in pair.values():
                assert f"{record};aten::add {ns // 1000}" in both.stdout.splitlines(), (ns, both.stdout)


def test_streamed_trace_is_the_whole_reads(pair, tmp_path):
    """--chrome-trace of both files reads each as a stream in turn, its
    calls spilled: the same bytes as every file read whole, with --ops too;
    each process's track holds exactly its aten::add calls."""
    files = [str(r) for r, _, _ in pair.values()]
    trace = tmp_path / "both.json"
    report_file_as_whole(files[0], trace, files[1], "--chrome-trace", trace, "--ops", "^aten::add$")
    report_file_as_whole(files[0], trace, files[1], "--chrome-trace", trace)
    events = json.loads(trace.read_text())["traceEvents"]
    adds = collections.Counter(e["pid"] for e in events if e.get("cat") == "cpu_op" and e["name"] == "aten::add")
    assert adds == {pid: CALLS[name] for name, (_, pid, _) in pair.items()}, adds


def test_refusals(pair):
    files = [str(r) for r, _, _ in pair.values()]
    rank = run_gpuprof("report", *files, "--by", "rank")
    # Neither process had a RANK in its environment (test_job_ranks.py has some).
    assert rank.returncode == 2 and "--by rank: no job rank (" in rank.stderr, rank.stderr
    launches = run_gpuprof("report", *files, "--launches")
    assert launches.returncode == 2 and "--launches reads one recording" in launches.stderr, launches.stderr
    missing = run_gpuprof("report", files[0], files[0] + ".missing")
    assert missing.returncode == 1 and missing.stdout == "" and ".missing" in missing.stderr, missing.stderr


def test_one_pprof_of_both(pair, tmp_path):
    """--pprof over both files: each process's stacks labelled with its pid
    and file, its values its own file's, exactly."""
    out = tmp_path / "both.pb.gz"
    files = [str(r) for r, _, _ in pair.values()]
    # Each file read as a stream in turn: the profile of both read whole,
    # compensated and raw.
    for args in ([], ["--raw-times"]):
        report_file_as_whole(files[0], out, files[1], "--pprof", out, *args,
                             read=lambda p: gzip.decompress(p.read_bytes()))
    made = run_gpuprof("report", *files, "--pprof", str(out))
    assert made.returncode == 0, made.stderr
    assert f"gpuprof: wrote {out} from 2 recordings: 2 samples of 2 sample types, 1 functions" in made.stderr
    doc = decode(out)
    assert doc["sample_types"] == ["calls/count", "self_cpu/nanoseconds"]
    got = {(s["labels"]["recording"], s["labels"]["pid"]): (s["stack"], s["values"]) for s in doc["samples"]}
    assert got == {(str(record), pid): (["aten::add"], [calls, ns]) for record, pid, (calls, ns) in pair.values()}
    assert [calls for _, _, (calls, _) in pair.values()] == list(CALLS.values())

"""Distributed ranks (docs/fleet.md, "Ranks"): processes of a job carry
RANK, LOCAL_RANK and WORLD_SIZE in their environment, as torchrun gives
them; gpuprof reads them from outside (/proc/PID/environ) and labels its
output with them. Three copies of tests/workloads/fixed_count.py, each
making a known number of aten::add calls: rank 0 recorded by `record -p`,
rank 1 started by `record -- CMD` (its environment read once it has
exec'd), and one without RANK (`record -p`). On both torches."""
import os
import re
import shutil

import pytest

from conftest import TORCH_ENV_IDS, TORCH_ENVS, Procs, run_gpuprof, touch, wait_for_file
from pprof_reader import decode, per_leaf_op

JOB_VARIABLES = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "GROUP_RANK", "TORCHELASTIC_RUN_ID",
                 "MASTER_ADDR", "MASTER_PORT")
# name: (aten::add calls, its job variables, how it is recorded)
RUNS = {
    "rank0": (300, {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2"}, "attach"),
    "rank1": (100, {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}, "launch"),
    "plain": (50, {}, "attach"),
}


def environment(job):
    """This test's environment without any job variable, then `job`'s."""
    base = {k: v for k, v in os.environ.items() if k not in JOB_VARIABLES}
    return {**base, **job}


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def job(request, tmp_path_factory):
    """{name: record file} of the three runs, each of which made exactly its
    calls and exited 0."""
    tmp = tmp_path_factory.mktemp(f"ranks-{request.param}")
    procs = Procs(tmp)
    try:
        runs = {}
        for name, (calls, variables, how) in RUNS.items():
            workdir = tmp / name
            workdir.mkdir()
            record = tmp / f"{name}.gpuprof"
            args = request.param.argv("fixed_count.py", str(workdir), str(calls), "0")
            if how == "launch":
                # gpuprof passes its own environment on to the command.
                gp = procs.start_gpuprof("record", "-q", "-o", record, "--", *args, name=f"gpuprof-{name}",
                                         env=environment(variables))
                wait_for_file(workdir, "ready", timeout=180, watch=[gp])  # after the probes went in
                target = None
            else:
                target = procs.start(args, f"target-{name}", env=environment(variables))
                pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
                gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", record, name=f"gpuprof-{name}")
                gp.wait_for_stderr(r"^gpuprof: tracing ", watch=[target])
            runs[name] = (workdir, target, gp, record)
        for workdir, _, _, _ in runs.values():
            touch(workdir, "go")
        for name, (workdir, target, gp, record) in runs.items():
            watch = [gp] + ([target] if target else [])
            assert int(wait_for_file(workdir, "done", timeout=120, watch=watch)) == RUNS[name][0]
            # Its checks run under gpuprof: it never harms its target. The
            # target's exit stops gpuprof.
            touch(workdir, "check")
            if target:
                assert target.wait(timeout=60) == 0, target.describe()
            assert gp.wait(timeout=60) == 0, gp.describe()
            if not target:
                assert re.search(r"^gpuprof: \d+ exited with status 0$", gp.stderr(), re.M), gp.stderr()
        yield {name: record for name, (_, _, _, record) in runs.items()}
    finally:
        procs.cleanup()


def test_each_report_says_its_rank(job):
    for name, line in [("rank0", "Rank 0 of 2 (local rank 0)"), ("rank1", "Rank 1 of 2 (local rank 1)")]:
        report = run_gpuprof("report", str(job[name]))
        assert report.returncode == 0, report.stderr
        assert report.stdout.startswith(line + "\n"), report.stdout
        assert re.search(rf"^\s*aten::add\s.*\s{RUNS[name][0]}\s*$", report.stdout, re.M), report.stdout
    plain = run_gpuprof("report", str(job["plain"]))
    assert plain.returncode == 0, plain.stderr
    assert not re.search(r"^Rank ", plain.stdout, re.M), plain.stdout
    assert re.search(rf"^\s*aten::add\s.*\s{RUNS['plain'][0]}\s*$", plain.stdout, re.M), plain.stdout


def test_by_rank_puts_the_ranks_side_by_side(job):
    # rank 1's file first: the ranks are in their order all the same.
    report = run_gpuprof("report", str(job["rank1"]), str(job["rank0"]), "--by", "rank")
    assert report.returncode == 0, report.stderr
    assert re.findall(r"^  \d+\. (.+)$", report.stdout, re.M) == ["rank 0", "rank 1"], report.stdout
    row = re.search(r"^aten::add\s+(\d+)\s+\S+\s+\S+\s+\S+\s+\S+\s+(rank \d)$", report.stdout, re.M)
    assert row and int(row.group(1)) == RUNS["rank0"][0] + RUNS["rank1"][0], report.stdout
    calls = report.stdout.split("Calls per rank:\n", 1)[1]
    assert re.search(r"^Name\s+rank 0\s+rank 1$", calls, re.M), report.stdout
    per_rank = re.search(r"^aten::add\s+(\d+)\s+(\d+)$", calls, re.M)
    assert per_rank and [int(c) for c in per_rank.groups()] == [RUNS["rank0"][0], RUNS["rank1"][0]], report.stdout
    # One table of both lists each process with its rank.
    both = run_gpuprof("report", str(job["rank0"]), str(job["rank1"]))
    assert both.returncode == 0, both.stderr
    for name, line in [("rank0", "Rank 0 of 2 (local rank 0)"), ("rank1", "Rank 1 of 2 (local rank 1)")]:
        assert re.search(rf"^  {re.escape(str(job[name]))}: \S+:\d+ \(\S+\): {re.escape(line)}$", both.stdout,
                         re.M), both.stdout


def test_a_directory_stands_for_its_recordings(job, tmp_path):
    # report DIR: its record files (by their magic, whatever their names),
    # sorted by name; other files are not recordings.
    ranks = tmp_path / "ranks"
    ranks.mkdir()
    shutil.copy(job["rank1"], ranks / "b-rank1.gpuprof")
    shutil.copy(job["rank0"], ranks / "a-rank0.data")
    (ranks / "notes.txt").write_text("not a recording\n")
    listed = run_gpuprof("report", str(ranks / "a-rank0.data"), str(ranks / "b-rank1.gpuprof"), "--by", "rank")
    assert listed.returncode == 0, listed.stderr
    whole = run_gpuprof("report", str(ranks), "--by", "rank")
    assert whole.returncode == 0, whole.stderr
    assert whole.stdout == listed.stdout and whole.stderr == listed.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("not a recording\n")
    refused = run_gpuprof("report", str(empty))
    assert refused.returncode == 1 and refused.stdout == "", refused
    assert refused.stderr == f"gpuprof: error: {empty} is a directory without gpuprof record files\n"


def test_by_rank_refuses_a_file_without_rank(job):
    report = run_gpuprof("report", str(job["rank0"]), str(job["plain"]), "--by", "rank")
    assert report.returncode == 2 and report.stdout == "", report
    assert "--by rank: no job rank (" in report.stderr and f"for {job['plain']}: " in report.stderr, report.stderr
    assert str(job["rank0"]) not in report.stderr, report.stderr


def test_pprof_labels_the_rank(job, tmp_path):
    for name in RUNS:
        out = tmp_path / f"{name}.pb"
        made = run_gpuprof("report", str(job[name]), "--pprof", str(out))
        assert made.returncode == 0, made.stderr
        doc = decode(out)
        assert per_leaf_op(doc)["aten::add"][0] == RUNS[name][0]
        for sample in doc["samples"]:
            labels = sample["labels"]
            variables = RUNS[name][1]
            if variables:
                assert (labels["rank"], labels["local_rank"], labels["world_size"]) == (
                    int(variables["RANK"]), int(variables["LOCAL_RANK"]), int(variables["WORLD_SIZE"])), labels
            else:
                assert not {"rank", "local_rank", "world_size"} & set(labels), labels


def test_record_a_reads_each_processs_rank(procs, tmp_path, torch_env):
    """record -a: each process's rank, read as it is first seen (and again
    once it maps libtorch), under its own section of the report. Other
    processes of the machine may be in the file too: only these are checked."""
    out = tmp_path / "all.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    runs = {}
    for name, calls, variables in [("rank0", 200, {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2"}),
                                   ("rank1", 70, {"RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"}),
                                   ("plain", 30, {})]:
        workdir = tmp_path / name
        workdir.mkdir()
        target = procs.start(torch_env.argv("fixed_count.py", str(workdir), str(calls), "0"), f"target-{name}",
                             env=environment(variables))
        pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target, gp]))
        gp.wait_for_stderr(rf"^gpuprof: process {pid} \(", timeout=120, watch=[target])
        runs[name] = (workdir, target, pid, calls, variables)
    for workdir, *_ in runs.values():
        touch(workdir, "go")
    for name, (workdir, target, pid, calls, _) in runs.items():
        assert int(wait_for_file(workdir, "done", timeout=120, watch=[target, gp])) == calls
        touch(workdir, "check")
        assert target.wait(timeout=60) == 0, target.describe()
    gp.send(2)  # SIGINT
    assert gp.wait(timeout=120) == 0, gp.describe()
    report = run_gpuprof("report", out, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    sections = {int(m.group(1)): m.group(0) for m in re.finditer(r"^== Process (\d+) .*?(?=^== Process |\Z)",
                                                                  report.stdout, re.M | re.S)}
    for name, (_, _, pid, calls, variables) in runs.items():
        section = sections[pid]
        ranks = re.findall(r"^   (Rank .*)$", section, re.M)
        if variables:
            assert ranks == [f"Rank {variables['RANK']} of 2 (local rank {variables['LOCAL_RANK']})"], section
        else:
            assert ranks == [], section
        assert re.search(rf"^\s*aten::add\s.*\s{calls}\s*$", section, re.M), section


def test_folded_of_several_files_roots_each_at_its_rank_or_file(job):
    merged = run_gpuprof("report", str(job["plain"]), str(job["rank0"]), "--folded")
    assert merged.returncode == 0, merged.stderr
    lines = merged.stdout.splitlines()
    for name, root in [("rank0", "rank 0;"), ("plain", f"{job['plain']};")]:
        alone = run_gpuprof("report", str(job[name]), "--folded")
        assert alone.returncode == 0, alone.stderr
        assert sorted(line[len(root):] for line in lines if line.startswith(root)) == sorted(alone.stdout.splitlines())
    assert len(lines) == sum(len(run_gpuprof("report", str(job[n]), "--folded").stdout.splitlines())
                             for n in ("plain", "rank0")), merged.stdout

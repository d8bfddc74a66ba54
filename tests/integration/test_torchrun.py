"""A real distributed job (docs/fleet.md, "A torchrun job"): torchrun
starts two ranks of tests/workloads/ddp_steps.py on the gloo backend (CPU),
each a training loop with a known number of collectives; gpuprof records it
from outside, on both torches:

- one `record -a` over the whole job: a section per rank, each labelled with
  the rank torchrun put in its environment, with the loop's ops and its
  collectives (c10d::ProcessGroupGloo::allreduce, ::barrier, c10d::Work::wait)
  counted exactly;
- two `record -p` sessions, one per rank, merged by `report A B --by rank`:
  the same counts, per rank; by `--folded`, each rank's stacks under its
  root; by `--chrome-trace`, one process track per rank holding exactly its
  own file's trace, shifted onto wall-clock time, inside the window the test
  measured and in the order the collectives impose.

Each rank's result (its parameters, equal on both ranks when their
gradients were averaged) is compared: gpuprof never harms the job."""
import collections
import decimal
import json
import re
import socket
import time

import pytest

from conftest import TORCH_ENV_IDS, TORCH_ENVS, Procs, run_gpuprof, touch, wait_for_file
from test_report_memory import report_file_as_whole

STEPS = 30
WORLD = 2
# Per rank, on the thread that runs the loop: 2 gradients all-reduced per
# step, one barrier, one wait per collective (ddp_steps.py), one forward
# addmm per step. (torch 1.13's gloo sometimes calls Work::wait once on
# another thread of the rank too: its table counts it; the test counts it
# from the trace.)
EXPECTED_CALLS = {
    "c10d::ProcessGroupGloo::allreduce": 2 * STEPS,
    "c10d::ProcessGroupGloo::barrier": 1,
    "c10d::Work::wait": 2 * STEPS + 1,
    "aten::addmm": STEPS,
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_job(procs, torch_env, workdir):
    """torchrun with WORLD ranks of ddp_steps.py; {rank: pid} once each is ready."""
    argv = torch_env.argv("torchrun.py", "--nnodes", "1", "--nproc_per_node", str(WORLD), "--master_addr",
                          "127.0.0.1", "--master_port", str(free_port()),
                          f"{torch_env.workloads}/ddp_steps.py", str(workdir), str(STEPS))
    job = procs.start(argv, "torchrun")
    pids = {rank: int(wait_for_file(workdir, f"ready.{rank}", timeout=180, watch=[job])) for rank in range(WORLD)}
    return job, pids


def finish_job(job, workdir, watch=()):
    """Waits for every rank's loop, then lets them leave; their results agree."""
    results = [wait_for_file(workdir, f"done.{rank}", timeout=180, watch=[job, *watch]) for rank in range(WORLD)]
    return results


def calls_by_thread(recording, tmp_path):
    """{pid: {tid: Counter(op: calls)}} of a recording, from its Chrome trace."""
    trace = tmp_path / (recording.name + ".json")
    made = run_gpuprof("report", recording, "--chrome-trace", trace)
    assert made.returncode == 0, made.stderr
    calls = collections.defaultdict(lambda: collections.defaultdict(collections.Counter))
    for event in json.loads(trace.read_text())["traceEvents"]:
        if event.get("ph") == "X" and event.get("cat") == "cpu_op":
            calls[event["pid"]][event["tid"]][event["name"]] += 1
    return calls


def check_rank_threads(threads):
    """The loop's thread (the one that all-reduced) made exactly the loop's
    calls; returns the rank's Work::wait calls on all its threads."""
    loop = [tid for tid, calls in threads.items() if calls["c10d::ProcessGroupGloo::allreduce"]]
    assert len(loop) == 1, threads
    calls = threads[loop[0]]
    assert {op: calls[op] for op in EXPECTED_CALLS} == EXPECTED_CALLS, threads
    return sum(calls["c10d::Work::wait"] for calls in threads.values())


def calls_of(table):
    """{op: calls} of a report table's rows."""
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s*(\S+)\s.*\s(\d+)\s*$", table, re.M)}


def test_record_a_shows_each_rank_and_its_collectives(procs, tmp_path, torch_env):
    out = tmp_path / "job.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    workdir = tmp_path / "job"
    workdir.mkdir()
    job, pids = start_job(procs, torch_env, workdir)
    for pid in pids.values():
        gp.wait_for_stderr(rf"^gpuprof: process {pid} \(", timeout=120, watch=[job])
    touch(workdir, "go")
    results = finish_job(job, workdir, watch=[gp])
    gp.send(2)  # SIGINT
    assert gp.wait(timeout=120) == 0, gp.describe()
    touch(workdir, "check")
    assert job.wait(timeout=120) == 0, job.describe()
    assert results[0] == results[1], results
    report = run_gpuprof("report", out, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    sections = {int(m.group(1)): m.group(0) for m in re.finditer(r"^== Process (\d+) .*?(?=^== Process |\Z)",
                                                                  report.stdout, re.M | re.S)}
    by_thread = calls_by_thread(out, tmp_path)
    for rank, pid in pids.items():
        section = sections[pid]
        assert re.findall(r"^   Rank (\d+) of (\d+) \(local rank (\d+)", section, re.M) == \
            [(str(rank), str(WORLD), str(rank))], section
        waits = check_rank_threads(by_thread[pid])
        calls = calls_of(section)
        assert {op: calls.get(op) for op in EXPECTED_CALLS} == {**EXPECTED_CALLS, "c10d::Work::wait": waits}, section
    # The one file's trace: each rank's track named after its rank, the ranks
    # first and in rank order (as with one file per rank), then any other
    # process with events (torchrun's agent), by pid.
    events = json.loads((tmp_path / (out.name + ".json")).read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    order = sorted((e["args"]["sort_index"], e["pid"]) for e in events
                   if e["ph"] == "M" and e["name"] == "process_sort_index")
    for rank, pid in pids.items():
        assert names[pid] == f"rank {rank}: python3 ({pid})", names
    assert [pid for _, pid in order][:WORLD] == [pids[rank] for rank in range(WORLD)], (order, pids)
    assert not any(name.startswith("rank ") for pid, name in names.items() if pid not in pids.values()), names


RecordedJob = collections.namedtuple("RecordedJob", "files window")


@pytest.fixture(scope="module", params=TORCH_ENVS, ids=TORCH_ENV_IDS)
def two_files(request, tmp_path_factory):
    """The job recorded by one `record -p` per rank: files [of rank 0, of
    rank 1], and the wall-clock window (CLOCK_REALTIME ns) that holds every
    rank's loop: from before `go` to after both `done` files."""
    torch_env = request.param
    tmp = tmp_path_factory.mktemp(f"torchrun-{torch_env.id}")
    procs = Procs(tmp)
    try:
        workdir = tmp / "job"
        workdir.mkdir()
        job, pids = start_job(procs, torch_env, workdir)
        files, recorders = [], []
        for rank, pid in pids.items():
            files.append(tmp / f"rank{rank}.gpuprof")
            recorders.append(procs.start_gpuprof("record", "-p", pid, "-q", "-o", files[-1], name=f"gpuprof-{rank}"))
        for gp in recorders:
            gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[job])
        go_ns = time.time_ns()
        touch(workdir, "go")
        results = finish_job(job, workdir, watch=recorders)
        done_ns = time.time_ns()
        touch(workdir, "check")
        assert job.wait(timeout=120) == 0, job.describe()
        for gp in recorders:  # each rank's exit stops its recorder
            assert gp.wait(timeout=60) == 0, gp.describe()
        assert results[0] == results[1], results
        yield RecordedJob(files, (go_ns, done_ns))
    finally:
        procs.cleanup()


def test_two_record_p_files_merge_by_rank(two_files, tmp_path):
    two_files = two_files.files
    expected = []
    for recording in two_files:
        (pid, threads), = calls_by_thread(recording, tmp_path).items()
        expected.append({**EXPECTED_CALLS, "c10d::Work::wait": check_rank_threads(threads)})
    # rank 1's file first: the ranks come out in their order all the same.
    report = run_gpuprof("report", two_files[1], two_files[0], "--by", "rank", "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    assert re.findall(r"^  \d+\. (.+)$", report.stdout, re.M) == ["rank 0", "rank 1"], report.stdout
    calls = report.stdout.split("Calls per rank:\n", 1)[1]
    assert re.search(r"^Name\s+rank 0\s+rank 1$", calls, re.M), report.stdout
    per_rank = {m.group(1): [int(m.group(2)), int(m.group(3))]
                for m in re.finditer(r"^(\S+)\s+(\d+)\s+(\d+)$", calls, re.M)}
    assert {op: per_rank.get(op) for op in EXPECTED_CALLS} == \
        {op: [expected[0][op], expected[1][op]] for op in EXPECTED_CALLS}, report.stdout
    # The merged table: both ranks' calls, and the rank slowest at each op named.
    merged = report.stdout.split("Calls per rank:\n", 1)[0]
    for op in EXPECTED_CALLS:
        row = re.search(rf"^{re.escape(op)}\s+(\d+)\s.*\s(rank \d)$", merged, re.M)
        assert row and int(row.group(1)) == expected[0][op] + expected[1][op], (op, report.stdout)


def test_folded_of_both_files_puts_each_rank_under_its_own_root(two_files):
    two_files = two_files.files
    # Each rank's stacks are exactly its own file's, under "rank N".
    merged = run_gpuprof("report", two_files[1], two_files[0], "--folded")
    assert merged.returncode == 0, merged.stderr
    lines = merged.stdout.splitlines()
    assert lines == sorted(lines, key=lambda line: line.rsplit(" ", 1)[0].encode()), merged.stdout
    for rank, recording in enumerate(two_files):
        alone = run_gpuprof("report", recording, "--folded")
        assert alone.returncode == 0, alone.stderr
        root = f"rank {rank};"
        assert sorted(line[len(root):] for line in lines if line.startswith(root)) == sorted(alone.stdout.splitlines())
        assert any("c10d::ProcessGroupGloo::allreduce" in line for line in alone.stdout.splitlines()), alone.stdout
    assert all(line.startswith(("rank 0;", "rank 1;")) for line in lines), merged.stdout
    # --by prints a table: it does not go with --folded.
    refused = run_gpuprof("report", two_files[0], two_files[1], "--folded", "--by", "rank")
    assert refused.returncode == 2 and "--by prints a table; --folded puts each recording under" in refused.stderr


def trace_events(path):
    """The events of a Chrome trace and its otherData, times as exact decimals."""
    doc = json.loads(path.read_text(), parse_float=decimal.Decimal)
    return doc["traceEvents"], doc["otherData"]


def ns(us):
    """A trace's microseconds (exact decimals) as integer nanoseconds."""
    return int(us * 1000)


def test_chrome_trace_of_both_files_aligns_the_ranks_on_wall_clock_time(two_files, tmp_path):
    files, (go_ns, done_ns) = two_files
    merged_path = tmp_path / "job.json"
    # rank 1's file first: the tracks come out in rank order all the same.
    # Each file streamed in turn: the bytes of both read whole, --ops too.
    for ops in (["--ops", "allreduce"], []):
        report_file_as_whole(files[1], merged_path, files[0], "--chrome-trace", merged_path, *ops)
    made = run_gpuprof("report", files[1], files[0], "--chrome-trace", merged_path)
    assert made.returncode == 0, made.stderr
    assert re.search(rf"wrote {re.escape(str(merged_path))} from 2 recordings: \d+ trace events", made.stderr), \
        made.stderr
    merged, other = trace_events(merged_path)
    recordings = {r["rank"]: r for r in other["recordings"]}
    assert sorted(recordings) == [0, 1], other
    assert "NTP" in other["alignment"], other
    zero_ns = int(re.search(r"CLOCK_REALTIME (\d+) ns", other["time zero"]).group(1))
    names = {e["pid"]: e["args"]["name"] for e in merged if e["ph"] == "M" and e["name"] == "process_name"}
    # One process track per rank, named after it, and no other.
    pids = {rank: r["pid"] for rank, r in recordings.items()}
    assert names == {pids[rank]: f"rank {rank}: python3 ({pids[rank]})" for rank in (0, 1)}, names
    order = {e["pid"]: e["args"]["sort_index"] for e in merged if e["ph"] == "M" and e["name"] == "process_sort_index"}
    assert order[pids[0]] < order[pids[1]], order
    loop_calls = {}
    for rank, recording in enumerate(files):
        alone_path = tmp_path / f"rank{rank}.json"
        alone_made = run_gpuprof("report", recording, "--chrome-trace", alone_path)
        assert alone_made.returncode == 0, alone_made.stderr
        alone, _ = trace_events(alone_path)
        shift = recordings[rank]["shift_ns"]
        assert {e["pid"] for e in alone if e["ph"] != "M"} == {pids[rank]}
        # Exactly the rank's own events: the same names, kinds, threads and
        # durations, each later by the rank's shift to the nanosecond.
        def key(e, by):
            return (e["ph"], e.get("cat"), e["name"], e["tid"], ns(e["ts"]) - by, ns(e.get("dur", 0)))
        mine = sorted(key(e, shift) for e in merged if e["ph"] != "M" and e["pid"] == pids[rank])
        assert mine == sorted(key(e, 0) for e in alone if e["ph"] != "M"), rank
        assert collections.Counter(name for ph, cat, name, *_ in mine if cat == "cpu_op")["aten::addmm"] == STEPS
        # The loop thread's collectives, on wall-clock time.
        loop_tid, = {e["tid"] for e in merged
                     if e["pid"] == pids[rank] and e["name"] == "c10d::ProcessGroupGloo::allreduce"}
        calls = collections.defaultdict(list)
        for e in merged:
            if e["ph"] == "X" and e["pid"] == pids[rank] and e["tid"] == loop_tid:
                calls[e["name"]].append((zero_ns + ns(e["ts"]), zero_ns + ns(e["ts"] + e["dur"])))
        loop_calls[rank] = {name: sorted(spans) for name, spans in calls.items()}
        # Every call of the loop ran between `go` and both ranks' `done`.
        for name in EXPECTED_CALLS:
            assert len(loop_calls[rank][name]) == EXPECTED_CALLS[name], (rank, name)
            assert all(go_ns <= start and end <= done_ns for start, end in loop_calls[rank][name]), \
                (rank, name, go_ns, loop_calls[rank][name][0], loop_calls[rank][name][-1], done_ns)
    # Both ranks ran on this host: their files' CLOCK pairs are one offset
    # between its clocks, each pair read as one moment (base/clock_pair.h:
    # the tightest of eight bracketed reads, tens of ns). Two reads in a row
    # preempted between them put a rank's whole timeline that much off.
    offsets = {rank: int(m.group(1)) - int(m.group(2)) for rank, r in recordings.items()
               for m in [re.fullmatch(r"CLOCK_REALTIME (\d+) ns, CLOCK_MONOTONIC (\d+) ns", r["start"])]}
    assert abs(offsets[0] - offsets[1]) <= 1000, offsets
    # An all-reduce completes only once every rank has issued it: each rank's
    # k-th wait ends after the other rank's k-th all-reduce began (and the
    # barrier's wait after the other's barrier began), on the shared clock.
    for rank, other_rank in ((0, 1), (1, 0)):
        waits = loop_calls[rank]["c10d::Work::wait"]
        issued = loop_calls[other_rank]["c10d::ProcessGroupGloo::allreduce"] + \
            loop_calls[other_rank]["c10d::ProcessGroupGloo::barrier"]
        for k, ((issue_start, _), (_, wait_end)) in enumerate(zip(issued, waits)):
            assert issue_start <= wait_end, (rank, k, issue_start, wait_end, offsets)
    # --by prints a table: it does not go with --chrome-trace.
    refused = run_gpuprof("report", files[0], files[1], "--chrome-trace", tmp_path / "x.json", "--by", "rank")
    assert refused.returncode == 2 and "--by prints a table; --chrome-trace gives each rank" in refused.stderr

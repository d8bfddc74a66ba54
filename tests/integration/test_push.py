"""record --push (docs/fleet.md, "Pushing to Pyroscope"): each cycle's
profile POSTed to a Pyroscope server's /ingest, checked against a receiver
written here that holds each request to Pyroscope's documented ingest API
(query name/from/until/format, the pprof in the multipart field `profile`)
and decodes the profiles with the npm pprof-format decoder and `go tool
pprof`. The target is tests/workloads/fixed_count.py: N aten::add calls
over a few seconds, so the pushed cycles' calls must add up to N exactly.
A dead server costs the recording and the job nothing. record -a pushes one
profile per process and cycle, each with that process's labels."""
import email.parser
import email.policy
import http.server
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

from conftest import HOST_TORCH, TARGET_PYTHON, run_gpuprof, touch, wait_for_file, wait_until
from pprof_reader import decode, per_leaf_op
from test_report_memory import report_as_whole

CALLS = 3000
SECONDS = 4


class Receiver:
    """A local HTTP server that keeps every request made to it."""

    def __init__(self, status=200):
        self.requests = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((self.path, dict(self.headers), body))
                self.send_response(status)
                self.end_headers()
                self.wfile.write(b"ok" if status == 200 else b"refused")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def multipart_files(headers, body):
    """{field: bytes} of a multipart/form-data body."""
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + headers["Content-Type"].encode() + b"\r\n\r\n" + body)
    assert message.is_multipart(), headers
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()}


def record_pushing(procs, workdir, tmp_path, torch_env, url, *extra, env=None):
    """fixed_count.py recorded by record -p --push URL (gpuprof's environment
    with env); (gpuprof, record file, pid)."""
    target = procs.start(torch_env.argv("fixed_count.py", str(workdir), str(CALLS), str(SECONDS)), "target")
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    out = tmp_path / "run.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, "--push", url, *extra,
                             env=None if env is None else {**os.environ, **env})
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
    touch(workdir, "go")
    assert int(wait_for_file(workdir, "done", timeout=120, watch=[target, gp])) == CALLS
    touch(workdir, "check")
    assert target.wait(timeout=60) == 0, target.describe()  # its results checked: unharmed
    return gp, out, pid


def test_each_cycle_is_pushed_and_the_cycles_add_up(procs, workdir, tmp_path, torch_env):
    receiver = Receiver()
    try:
        gp, out, pid = record_pushing(procs, workdir, tmp_path, torch_env, receiver.url, "--push-every", "1",
                                      "--push-app", "train.cpu")
        assert gp.wait(timeout=60) == 0, gp.describe()
    finally:
        receiver.close()
    sent = re.search(rf"^gpuprof: pushed (\d+) profiles? to {re.escape(receiver.url)}$", gp.stderr(), re.M)
    assert sent and int(sent.group(1)) == len(receiver.requests) >= SECONDS, gp.stderr()
    hostname = socket.gethostname()
    total, spans = 0, []
    for i, (path, headers, body) in enumerate(receiver.requests):
        url = urllib.parse.urlsplit(path)
        assert url.path == "/ingest", path
        query = urllib.parse.parse_qs(url.query, strict_parsing=True)
        assert set(query) == {"name", "from", "until", "format", "spyName"}, query
        assert query["name"] == [f"train.cpu{{pid={pid},comm=python3,hostname={hostname}}}"], query
        assert query["format"] == ["pprof"] and query["spyName"] == ["gpuprof"], query
        start, until = int(query["from"][0]), int(query["until"][0])
        assert start <= until <= time.time() + 1, query
        spans.append((start, until))
        files = multipart_files(headers, body)
        assert set(files) == {"profile"}, files.keys()
        profile = tmp_path / f"push{i}.pb"
        profile.write_bytes(files["profile"])
        total += per_leaf_op(decode(profile)).get("aten::add", (0, 0))[0]
        if i == 0:  # the real pprof reads it too
            raw = subprocess.run(["go", "tool", "pprof", "-raw", str(profile)], capture_output=True, text=True,
                                 timeout=120)
            assert raw.returncode == 0 and "aten::add" in raw.stdout, raw.stderr
    assert spans == sorted(spans), spans
    # Every call in exactly one cycle: the cycles add up to the whole file.
    whole = per_leaf_op(decode_file(out, tmp_path))["aten::add"][0]
    assert total == whole == CALLS, (total, whole)


def test_cycle_files_a_killed_gpuprof_left_are_removed(procs, workdir, tmp_path):
    # SIGKILL leaves a pusher's unsent cycle files in TMPDIR: the next
    # record --push removes those whose gpuprof is gone (its pid ended, or is
    # another program's now) and keeps a running gpuprof's.
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    ended_pid = procs.start(["/bin/true"], "ended")  # a pid that no longer runs
    ended_pid.wait(timeout=10)
    # A program named gpuprof that runs: its files are a live pusher's.
    shutil.copy("/bin/sleep", tmp_path / "gpuprof")
    running = procs.start([tmp_path / "gpuprof", "600"], "running-gpuprof")
    wait_until(lambda: open(f"/proc/{running.pid}/comm").read().strip() == "gpuprof", 10, "a running gpuprof")
    left = [tmpdir / f"gpuprof-push-{ended_pid.pid}-3.gpuprof", tmpdir / f"gpuprof-push-{os.getpid()}-1.gpuprof"]
    kept = [tmpdir / f"gpuprof-push-{running.pid}-2.gpuprof", tmpdir / "gpuprof-push-notes.txt"]
    for path in left + kept:
        path.write_bytes(b"GPUPROF\0")
    receiver = Receiver()
    try:
        gp, _, _ = record_pushing(procs, workdir, tmp_path, HOST_TORCH, receiver.url, "--push-every", "1",
                                  env={"TMPDIR": str(tmpdir)})
        assert gp.wait(timeout=60) == 0, gp.describe()
    finally:
        receiver.close()
    assert f"gpuprof: removed 2 cycle files that a killed gpuprof left in {tmpdir}" in gp.stderr().splitlines(), \
        gp.stderr()
    # Its own cycle files are gone once pushed: what is left is what it kept.
    assert sorted(tmpdir.iterdir()) == sorted(kept), list(tmpdir.iterdir())
    assert len(receiver.requests) >= SECONDS


def decode_file(recording, tmp_path):
    profile = tmp_path / "whole.pb"
    made = run_gpuprof("report", recording, "--pprof", profile)
    assert made.returncode == 0, made.stderr
    return decode(profile)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("server", ["none", "refusing"])
def test_a_dead_or_refusing_server_costs_the_recording_nothing(procs, workdir, tmp_path, torch_env, server):
    receiver = Receiver(status=503) if server == "refusing" else None
    url = receiver.url if receiver else f"http://127.0.0.1:{free_port()}"  # nothing listens there
    try:
        gp, out, _ = record_pushing(procs, workdir, tmp_path, torch_env, url, "--push-every", "1")
        started = time.monotonic()
        assert gp.wait(timeout=60) == 0, gp.describe()
        # The stop waits at most its deadline for what is still queued.
        assert time.monotonic() - started < 20, gp.stderr()
    finally:
        if receiver:
            receiver.close()
    line = re.search(rf"^gpuprof: pushed 0 profiles to {re.escape(url)}; (\d+) not sent: (.*)$", gp.stderr(), re.M)
    assert line and int(line.group(1)) >= SECONDS, gp.stderr()
    assert ("the server answered 503" if receiver else "ouldn't connect") in line.group(2) or \
        "the stop came before" in line.group(2), line.group(2)
    # The recording is whole all the same.
    assert per_leaf_op(decode_file(out, tmp_path))["aten::add"][0] == CALLS


@pytest.mark.parametrize("args, message", [
    (["-p", "1", "--push", "http://127.0.0.1:4040"],
     "--push sends a profile per cycle: give --schedule (its cycles) or --push-every SECONDS"),
    (["-p", "1", "--push", "ftp://host", "--push-every", "5"], "--push ftp://host: give the server's http:// or "
                                                               "https:// URL"),
    (["-a", "--push", "http://127.0.0.1:4040"],
     "-a --push sends a profile per process and cycle: give --push-every SECONDS (its cycles)"),
    (["-p", "1", "--push", "http://127.0.0.1:4040", "--push-every", "5", "--schedule", "active=1",
      "--step-time", "1"], "--schedule excludes --push-every"),
])
def test_push_options_are_checked_before_anything_attaches(args, message):
    result = run_gpuprof("record", *args)
    assert result.returncode == 2 and message in result.stderr, result


def test_ctrl_c_stops_a_pushing_recording_as_any_other(procs, workdir, tmp_path, torch_env):
    """SIGINT (and SIGTERM) are the session's: the sender thread never takes
    one, so a Ctrl-C stops the recording cleanly, sends what is queued and
    leaves the target running."""
    receiver = Receiver()
    try:
        target = procs.start(torch_env.argv("fixed_count.py", str(workdir), str(CALLS * 4), str(SECONDS * 4)),
                             "target")
        pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
        out = tmp_path / "run.gpuprof"
        gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, "--push", receiver.url, "--push-every", "1")
        gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
        touch(workdir, "go")
        deadline = time.monotonic() + 60
        while len(receiver.requests) < 2 and time.monotonic() < deadline:  # mid-run, cycles already sent
            time.sleep(0.1)
        gp.send(signal.SIGINT)
        assert gp.wait(timeout=60) == 0, gp.describe()
        assert target.running(), target.describe()
        assert re.search(r"^gpuprof: stopped \(interrupted\)", gp.stderr(), re.M), gp.stderr()
        sent = re.search(rf"^gpuprof: pushed (\d+) profiles? to {re.escape(receiver.url)}$", gp.stderr(), re.M)
        assert sent and int(sent.group(1)) == len(receiver.requests) >= 2, gp.stderr()
        assert int(wait_for_file(workdir, "done", timeout=120, watch=[target])) == CALLS * 4
        touch(workdir, "check")
        assert target.wait(timeout=60) == 0, target.describe()
    finally:
        receiver.close()


# A busy process without torch: spins until WORKDIR/stop-spinner exists.
SPINNER = """
import os, sys
stop = os.path.join(sys.argv[1], "stop-spinner")
open(os.path.join(sys.argv[1], "spinner-ready"), "w").close()
x = 0
while not os.path.exists(stop):
    for i in range(20000):
        x = (x * 31 + i) % 1000003
"""
NAME = re.compile(r"^gpuprof\.(?P<app>[^{]+)\{pid=(?P<pid>\d+),comm=(?P<comm>[^,}]+),hostname=(?P<host>[^,}]+)"
                  r"(?P<rank>,rank=\d+,local_rank=\d+,world_size=\d+)?\}$")


def test_record_a_pushes_one_profile_per_process_and_cycle(procs, workdir, tmp_path, torch_env):
    """record -a --push-every: each window's record file holds every process
    seen; each process that ran an op or was sampled in it is a profile of
    its own, labelled as record -p's are. The traced torch process's cycles
    add up exactly to the whole recording's calls; a sampled process
    without torch (the spinner) gets its own profiles, of samples only.
    Other processes of the machine may be pushed too: only these are checked."""
    receiver = Receiver()
    try:
        spinner = procs.start([TARGET_PYTHON, "-c", SPINNER, str(workdir)], "spinner")
        wait_for_file(workdir, "spinner-ready", timeout=60, watch=[spinner])
        target = procs.start(torch_env.argv("fixed_count.py", str(workdir), str(CALLS), str(SECONDS)), "target",
                             env={**os.environ, "RANK": "1", "LOCAL_RANK": "0", "WORLD_SIZE": "2"})
        pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
        out = tmp_path / "all.gpuprof"
        gp = procs.start_gpuprof("record", "-a", "-F", "49", "-q", "-o", out, "--push", receiver.url,
                                 "--push-every", "1")
        # Found at the start (its line comes first), traced once this line is out.
        gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120, watch=[target])
        assert re.search(rf"^gpuprof: process {pid} \(", gp.stderr(), re.M), gp.stderr()
        touch(workdir, "go")
        assert int(wait_for_file(workdir, "done", timeout=120, watch=[target, gp])) == CALLS
        touch(workdir, "check")
        assert target.wait(timeout=60) == 0, target.describe()
        touch(workdir, "stop-spinner")
        assert spinner.wait(timeout=30) == 0, spinner.describe()
        gp.send(signal.SIGINT)
        assert gp.wait(timeout=120) == 0, gp.describe()
    finally:
        receiver.close()
    sent = re.search(rf"^gpuprof: pushed (\d+) profiles? to {re.escape(receiver.url)}$", gp.stderr(), re.M)
    assert sent and int(sent.group(1)) == len(receiver.requests), gp.stderr()
    hostname = socket.gethostname()
    target_calls, target_cycles, spinner_cycles = 0, 0, 0
    for i, (path, headers, body) in enumerate(receiver.requests):
        url = urllib.parse.urlsplit(path)
        assert url.path == "/ingest", path
        query = urllib.parse.parse_qs(url.query, strict_parsing=True)
        assert set(query) == {"name", "from", "until", "format", "spyName", "sampleRate"}, query
        assert query["format"] == ["pprof"] and query["spyName"] == ["gpuprof"] and query["sampleRate"] == ["49"]
        name = NAME.match(query["name"][0])
        assert name and name["host"] == hostname and name["app"] == name["comm"], query["name"]
        assert int(query["from"][0]) <= int(query["until"][0]) <= time.time() + 1, query
        if int(name["pid"]) not in (pid, spinner.pid):
            continue
        files = multipart_files(headers, body)
        assert set(files) == {"profile"}, files.keys()
        profile = tmp_path / f"push{i}.pb"
        profile.write_bytes(files["profile"])
        doc = decode(profile)
        # One process per profile: its own labels on every sample.
        assert {s["labels"]["pid"] for s in doc["samples"]} == {int(name["pid"])}, doc["samples"][:3]
        if int(name["pid"]) == pid:
            assert name["comm"] == "python3" and name["rank"] == ",rank=1,local_rank=0,world_size=2", query["name"]
            target_calls += per_leaf_op(doc).get("aten::add", (0, 0))[0]
            target_cycles += 1
            if target_cycles == 1:  # the real pprof reads it too
                raw = subprocess.run(["go", "tool", "pprof", "-raw", str(profile)], capture_output=True,
                                     text=True, timeout=120)
                assert raw.returncode == 0 and "aten::add" in raw.stdout, raw.stderr
        else:
            assert name["comm"] == "python3" and name["rank"] is None, query["name"]
            # Samples only: no op ran there.
            assert all(s["values"][0] == 0 and s["values"][1] == 0 for s in doc["samples"]), doc["samples"][:3]
            assert sum(s["values"][2] for s in doc["samples"]) > 0, doc["samples"][:3]
            spinner_cycles += 1
    assert target_cycles >= SECONDS and spinner_cycles >= SECONDS, (target_cycles, spinner_cycles)
    # Every call in exactly one cycle: the cycles add up to the whole file's.
    whole = tmp_path / "whole.pb"
    made = run_gpuprof("report", out, "--pid", str(pid), "--pprof", whole)
    assert made.returncode == 0, made.stderr
    assert target_calls == per_leaf_op(decode(whole))["aten::add"][0] == CALLS, (target_calls, gp.stderr())
    # The file's windows end with CUT events, every process's: its tables
    # and folded stacks, streamed, are the whole read's bytes.
    for args in ([], ["--pid", str(pid)], ["--folded"], ["--folded", "--metric", "samples"]):
        report = report_as_whole(out, *args)
        assert report.returncode == 0, (args, report.stderr)
        assert (f"-{pid};" if "--folded" in args else f"== Process {pid} (python3)") in report.stdout, \
            (args, report.stdout)

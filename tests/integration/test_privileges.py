"""gpuprof with file capabilities (CAP_BPF, CAP_PERFMON) instead of root:
it works on the invoking user's own processes and refuses, before
attaching anything, a process that user could not ptrace."""
import os
import pwd
import re
import signal
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conftest import (GPUPROF, WORKLOADS, assert_samples_match_cpu_time, cpu_between, error_lines,
                      live_bpf_link_ids, parse_table, run_gpuprof, touch, tracefs_dir, wait_for_file)

USER = "gpuprof-test"


@pytest.fixture(scope="module")
def test_user():
    """An unprivileged system user (created once; left for the next run)."""
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        made = subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", USER],
                              capture_output=True, text=True)
        assert made.returncode == 0, made.stderr
    return USER


@pytest.fixture
def user_tmp():
    """A directory the test user can reach (pytest's tmp dirs are root's, 0700)."""
    d = Path(tempfile.mkdtemp(prefix="gpuprof-privileges-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def capable_gpuprof(user_tmp):
    """A copy of gpuprof the test user can run, with the capabilities and without them."""
    d = user_tmp / "bin"
    d.mkdir(mode=0o755)
    shutil.copy(GPUPROF, d / "gpuprof")
    shutil.copy(GPUPROF.parent / "libgpuprof_cupti.so", d / "libgpuprof_cupti.so")
    plain = d / "gpuprof-plain"
    shutil.copy(GPUPROF, plain)
    for f in (d / "gpuprof", plain):
        f.chmod(0o755)
    setcap = subprocess.run(["setcap", "cap_bpf,cap_perfmon+ep", d / "gpuprof"], capture_output=True, text=True)
    assert setcap.returncode == 0, f"setcap failed (libcap2-bin, a filesystem with xattrs): {setcap.stderr}"
    return d / "gpuprof", plain


def as_user(user, *argv, **kwargs):
    return ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *map(str, argv)]


def shared_dir(tmp_path, name):
    d = tmp_path / name
    d.mkdir()
    d.chmod(0o777)
    return d


def test_capabilities_watch_own_processes_only(procs, user_tmp, test_user, capable_gpuprof):
    tmp_path = user_tmp
    gpuprof, _ = capable_gpuprof
    print("yama ptrace_scope:", open("/proc/sys/kernel/yama/ptrace_scope").read().strip()
          if os.path.exists("/proc/sys/kernel/yama/ptrace_scope") else "(no yama)")

    # Root's process: refused before anything is attached.
    root_dir = shared_dir(tmp_path, "root")
    root_target = procs.start_workload("busy_loop.py", root_dir)
    wait_for_file(root_dir, "ready", timeout=120, watch=[root_target])
    links_before = live_bpf_link_ids()
    refused = subprocess.run(as_user(test_user, gpuprof, "record", "-p", root_target.pid, "-d", "1", "-o",
                                     root_dir / "r.gpuprof"), capture_output=True, text=True, timeout=60)
    assert refused.returncode == 1, refused
    uid = pwd.getpwnam(test_user).pw_uid
    assert f"gpuprof: error: {test_user} (uid {uid}) " in refused.stderr, refused.stderr
    assert (f"may not watch process {root_target.pid} of root (uid 0): the kernel would not let this user ptrace "
            f"it" in refused.stderr), refused.stderr
    assert "tracing" not in refused.stderr
    assert not (live_bpf_link_ids() - links_before)
    assert not (root_dir / "r.gpuprof").exists()
    assert root_target.running()

    # The user's own process: recorded, with samples and stacks. The
    # workload counts its torch.mm calls between `go` and truth.json, and
    # sleeps around them: the recording holds exactly those calls, and the
    # samples of exactly the CPU time between the two readings.
    own_dir = shared_dir(tmp_path, "own")
    own_target = procs.start(as_user(test_user, "/usr/bin/python3", WORKLOADS / "mm_dominated.py", own_dir, "2"),
                             "own_target", cwd=WORKLOADS)
    pid = int(wait_for_file(own_dir, "ready", timeout=120, watch=[own_target]))
    assert pid == own_target.pid
    out = own_dir / "own.gpuprof"
    gp = procs.start(as_user(test_user, gpuprof, "record", "-p", pid, "-F", "99", "--with-stack", "-o", out),
                     "gpuprof", cwd=own_dir)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[own_target])
    between = cpu_between(pid, own_dir, watch=[own_target, gp])
    truth = between.truth
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    assert "warning" not in gp.stderr(), gp.stderr()
    assert parse_table(gp.stdout()).calls().get("aten::mm") == truth["mm_calls"], (gp.stdout(), truth)
    stopped = re.search(r"; (\d+) samples, (\d+) lost;", gp.stderr())
    assert stopped and stopped.group(2) == "0", gp.stderr()
    assert_samples_match_cpu_time(int(stopped.group(1)), 99, between.cpu_s, runs=between.runs)
    assert os.stat(out).st_uid == uid  # written as the user, not as root
    # --with-stack as the user: the calls' Python stacks name the workload.
    folded = run_gpuprof("report", out, "--folded")
    assert folded.returncode == 0, folded.stderr
    mm_stacks = [line for line in folded.stdout.splitlines() if line.rsplit(" ", 1)[0].endswith(";aten::mm")]
    assert mm_stacks and all("mm_dominated.py(" in line.split(";")[0] for line in mm_stacks), folded.stdout
    touch(own_dir, "exit")
    assert own_target.wait(timeout=60) == 0, own_target.describe()
    touch(root_dir, "stop")
    assert root_target.wait(timeout=60) == 0, root_target.describe()


def test_without_capabilities_the_reason_is_given(tmp_path, test_user, capable_gpuprof):
    _, plain = capable_gpuprof
    result = subprocess.run(as_user(test_user, plain, "record", "-p", "1", "-d", "1", "-o", tmp_path / "x"),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result
    assert ("gpuprof: error: gpuprof needs root or the capabilities CAP_BPF and CAP_PERFMON (this process lacks "
            "CAP_BPF and CAP_PERFMON)") in result.stderr, result.stderr
    assert "setcap cap_bpf,cap_perfmon+ep" in result.stderr


@pytest.mark.parametrize("mode_args, mode", [
    (("--", "/usr/bin/true"), "launch mode (-- CMD)"),
    (("-a",), "-a (every process)"),
])
def test_without_capabilities_root_only_modes_ask_for_root(tmp_path, test_user, capable_gpuprof, mode_args, mode):
    # Launch mode and -a need root whatever the capabilities (tracefs is
    # root's): setcap would not help, so it is not suggested.
    _, plain = capable_gpuprof
    result = subprocess.run(as_user(test_user, plain, "record", "-d", "1", "-o", tmp_path / "x", *mode_args),
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, result
    assert error_lines(result.stderr) == [
        f"gpuprof: error: {mode} needs root: run it with sudo (file capabilities are enough only for -p PID on "
        "your own processes; this process lacks CAP_BPF and CAP_PERFMON: docs/privileges.md)"], result.stderr


def test_launch_mode_needs_root_to_read_tracefs(user_tmp, test_user, capable_gpuprof):
    """Launch mode finds the mmap tracepoint in tracefs, which is root's: a
    capable gpuprof run by a user says so (and what to do instead) before the
    command runs a single line."""
    gpuprof, _ = capable_gpuprof
    work = shared_dir(user_tmp, "launch")
    marker = work / "command-ran"
    tracefs = tracefs_dir()  # mounted, as root sees it
    assert (os.stat(tracefs).st_mode & 0o777) == 0o700, f"{tracefs} is expected to be root's (mode 0700)"
    result = subprocess.run(as_user(test_user, gpuprof, "record", "-q", "-o", work / "f.gpuprof", "--",
                                    "/usr/bin/python3", "-c", f"open({str(marker)!r}, 'w')"),
                            capture_output=True, text=True, timeout=60, cwd=work)
    assert result.returncode == 1, result
    assert error_lines(result.stderr) == [
        "gpuprof: error: the mmap tracepoint that launch mode and -a watch library loads with is found in tracefs "
        "(/sys/kernel/tracing), which only root may read: run gpuprof as root for `-- CMD` and `-a`; with "
        "capabilities, start the command yourself and use -p PID (docs/privileges.md)"], result.stderr
    assert not marker.exists(), "the command ran unprofiled"

"""record -p PID --inject-cupti (docs/injection.md): gpuprof's CUPTI shim
loaded through ptrace into a running job that was not started with
CUDA_INJECTION64_PATH, then the same probes and join as for a job started
with it.

The jobs: tests/fake_libtorch's launch_driver (launches with known counts,
the stand-in libcupti of tests/fake_cupti loaded as torch loads libcupti)
and tests/workloads/inject_target.py on both torches (a job that launches
through the stand-in, one in a loop of system calls, one of several
threads). Each checks its own results (bytes read back, float sums) and
prints them: they must be what they are without gpuprof. SIGKILL of gpuprof
at every step of the injection leaves the job running and whole, and the
refusals (another tracer, a seccomp filter, no right to ptrace, a stopped
process) say why and touch nothing.
"""
import os
import re
import shlex
import shutil
import signal
import subprocess
import time

import pytest

from conftest import (FAKE_LIBTORCH, GPUPROF, HOST_TORCH, parse_table, record_to_exit, run_gpuprof, touch,
                      wait_for_file, wait_until)
from test_cupti import EXPECTED, EXPECTED_CUDA_COLUMNS, STEPS, cuda_columns, expected_cuda_cells, kernel_rows

DRIVER = FAKE_LIBTORCH / "launch_driver"
STAND_IN = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"
SHIM_PREFIX = "libgpuprof_cupti"
N = 40  # inject_target.py's rounds after `go`
THREADS = 4  # inject_target.py's
DORMANT = "the shim is dormant until gpuprof's probes go in"  # then it switches CUPTI on (docs/cuda.md)
TRACING = "gpuprof: CUPTI shim: is tracing kernels, memcpy and memset"


def shim_mapped(pid):
    with open(f"/proc/{pid}/maps") as maps:
        return any(SHIM_PREFIX in line for line in maps)


def tracers_of(pid):
    """{tid: TracerPid} of every thread of pid."""
    tracers = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as status:
                for line in status:
                    if line.startswith("TracerPid:"):
                        tracers[int(tid)] = int(line.split()[1])
        except FileNotFoundError:
            pass
    return tracers


def untraced(pid):
    return all(tracer == 0 for tracer in tracers_of(pid).values())


def start_target(procs, workdir, tmp_path, mode, torch_env=HOST_TORCH, env=None):
    """inject_target.py MODE N, ready; the stand-in copied under tmp_path
    (which the torch 2.x chroot sees at the same path) and named by
    GPUPROF_CUPTI_LIBRARY, for the shim to open once loaded."""
    stand_in = tmp_path / STAND_IN.name
    shutil.copy(STAND_IN, stand_in)
    target = procs.start_workload("inject_target.py", workdir, stand_in, mode, str(N), torch_env=torch_env,
                                  env={**os.environ, "GPUPROF_CUPTI_LIBRARY": str(stand_in), **(env or {})})
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    assert not shim_mapped(pid)
    return target, pid


def loaded_line(pid):
    return f"gpuprof: loaded the CUPTI shim into process {pid}: {DORMANT}"


def assert_loaded_and_traced(gp, pid):
    """gpuprof loaded the shim, dormant, and it traced for the recording."""
    lines = gp.stderr().splitlines()
    assert loaded_line(pid) in lines and TRACING in lines, gp.stderr()


def op_calls(out):
    report = run_gpuprof("report", str(out))
    assert report.returncode == 0, report.stderr
    return parse_table(report.stdout).calls(), report.stdout


def test_injected_shim_gives_the_times_a_shim_started_job_gets(procs, workdir, tmp_path):
    # The same job and counts as test_cupti's test_attached_to_a_job_started_with_the_shim,
    # but started without CUDA_INJECTION64_PATH: the tables must be the same.
    env = {**os.environ, "GPUPROF_CUPTI_LIBRARY": str(STAND_IN), "LAUNCH_DRIVER_CUPTI_WITHOUT_SHIM": "1"}
    alone = subprocess.run([DRIVER, str(STEPS)], env=env, capture_output=True, text=True, timeout=60)
    assert alone.returncode == 0, alone.stderr
    target = procs.start([DRIVER, str(STEPS), workdir / "ready", workdir / "go"], "launch_driver", env=env)
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    assert not shim_mapped(pid)
    out = tmp_path / "injected.gpuprof"
    gp = record_to_exit(procs, target, pid, workdir, "--inject-cupti", "-q", "-o", out)
    assert_loaded_and_traced(gp, pid)
    assert target.stdout() == alone.stdout, target.describe()
    rows, _, text = kernel_rows(out)
    assert rows == EXPECTED, text
    rows, _, text = cuda_columns(out, "--sort-by", "self_cuda_time_total")
    assert rows == {name: expected_cuda_cells(*want) for name, want in EXPECTED_CUDA_COLUMNS.items()}, text


def test_injected_into_a_torch_job(procs, workdir, tmp_path, torch_env):
    target, pid = start_target(procs, workdir, tmp_path, "gpu", torch_env)
    out = tmp_path / "gpu.gpuprof"
    gp = record_to_exit(procs, target, pid, workdir, "--inject-cupti", "-q", "-o", out, timeout=120)
    assert_loaded_and_traced(gp, pid)
    assert target.stdout() == f"gpu {N}\n", target.describe()
    rows, _, text = kernel_rows(out)
    assert rows == {("[no op]", "traced_kernel", N, f"{N:.3f}us", "1.000us")}, text
    rows, _, text = cuda_columns(out)
    assert rows == {"aten::add": expected_cuda_cells(0, 0, N, N * 1.0),
                    "traced_kernel": expected_cuda_cells(N * 1.0, N * 1.0, N, N * 1.0)}, text


@pytest.mark.parametrize("mode, op, calls", [("syscalls", "aten::sub", N), ("threads", "aten::mul", THREADS * N)])
def test_injected_into_busy_jobs(procs, workdir, tmp_path, torch_env, mode, op, calls):
    # The loop of system calls runs while gpuprof looks for a safe point and
    # loads the shim; so do the threads, passing tokens through queues.
    target, pid = start_target(procs, workdir, tmp_path, mode, torch_env)
    out = tmp_path / f"{mode}.gpuprof"
    gp = record_to_exit(procs, target, pid, workdir, "--inject-cupti", "-q", "-o", out, timeout=120)
    assert_loaded_and_traced(gp, pid)
    want = f"syscalls {N}\n" if mode == "syscalls" else f"threads {THREADS} {N}\n"
    assert target.stdout() == want, target.describe()
    counts, text = op_calls(out)
    assert counts[op] == calls, text


# The injection's steps (target/library_injection.h), and whether the shim
# gets loaded when gpuprof is killed there: from "release" on, the thread
# runs the trampoline by itself.
STEPS_AND_LOAD = [("hold", False), ("write", False), ("registers", False), ("release", True), ("wait", True)]


@pytest.mark.parametrize("step, loads", STEPS_AND_LOAD, ids=[s for s, _ in STEPS_AND_LOAD])
def test_sigkill_of_gpuprof_at_every_step(procs, workdir, tmp_path, step, loads):
    target, pid = start_target(procs, workdir, tmp_path, "syscalls")
    gp = procs.start_gpuprof("record", "-p", str(pid), "--inject-cupti", "-q", "-o", str(tmp_path / "k.gpuprof"),
                             env={**os.environ, "GPUPROF_TEST_INJECT_PAUSE_AT": step})
    gp.wait_for_stderr(rf"^gpuprof: test: paused at step {step}$", timeout=60, watch=[target])
    if step in ("write", "registers", "release"):
        assert not untraced(pid), "a thread is held at this step"
    gp.send(signal.SIGKILL)
    gp.wait(timeout=10)
    wait_until(lambda: untraced(pid), 10, "every thread let go", watch=[target])
    if loads:
        wait_until(lambda: shim_mapped(pid), 10, "the shim loaded by the trampoline", watch=[target])
    else:
        time.sleep(1)
        assert not shim_mapped(pid)
    touch(workdir, "go")
    assert target.wait(timeout=60) == 0, target.describe()
    assert target.stdout() == f"syscalls {N}\n", target.describe()


def refused(pid, *prefix):
    """record -p PID --inject-cupti that must fail before touching pid: its stderr."""
    argv = [str(GPUPROF), "record", "-p", str(pid), "--inject-cupti", "-q", "-o", "/dev/null"]
    if prefix:  # capsh ... -- -c 'exec gpuprof ...'
        argv = [*prefix, "-c", "exec " + shlex.join(argv)]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stderr
    assert not shim_mapped(pid)
    return run.stderr


def finishes(target, workdir):
    touch(workdir, "go")
    assert target.wait(timeout=60) == 0, target.describe()
    assert target.stdout() == f"syscalls {N}\n", target.describe()


def test_refused_when_another_tracer_holds_the_job(procs, workdir, tmp_path):
    target, pid = start_target(procs, workdir, tmp_path, "syscalls")
    # A debugger stand-in: PTRACE_SEIZE of the main thread, then waits.
    tracer = procs.start(["/usr/bin/python3", "-c", f"""
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(0x4206, {pid}, None, None) != 0:
    sys.exit("seize failed: %d" % ctypes.get_errno())
print("seized", flush=True)
time.sleep(600)
"""], "tracer")
    wait_until(lambda: "seized" in tracer.stdout(), 30, "the tracer seized", watch=[tracer])
    stderr = refused(pid)
    assert (f"gpuprof: error: cannot load the CUPTI shim into process {pid}: process {pid} is traced by process "
            f"{tracer.pid} (python3), and a process has one tracer at a time; detach that debugger or tracer "
            "first") in stderr.splitlines(), stderr
    tracer.kill_hard()
    finishes(target, workdir)


def test_refused_under_a_seccomp_filter(procs, workdir, tmp_path):
    target, pid = start_target(procs, workdir, tmp_path, "syscalls", env={"INJECT_TARGET_SECCOMP": "1"})
    stderr = refused(pid)
    assert (f"gpuprof: error: cannot load the CUPTI shim into process {pid}: process {pid} runs under a seccomp "
            "filter: loading a library makes system calls (openat, mmap) the filter may forbid, and a filter "
            "may kill the process for one") in stderr.splitlines(), stderr
    finishes(target, workdir)


def test_refused_without_the_right_to_ptrace(procs, workdir, tmp_path):
    # Another user's process, and gpuprof without CAP_SYS_PTRACE.
    target = procs.start(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "sleep", "600"],
                         "sleep")
    wait_until(lambda: open(f"/proc/{target.pid}/comm").read().strip() == "sleep", 10, "sleep started")
    stderr = refused(target.pid, "capsh", "--drop=cap_sys_ptrace", "--")
    assert (f"gpuprof: error: cannot load the CUPTI shim into process {target.pid}: the kernel does not let "
            f"gpuprof ptrace process {target.pid}: tracing another user's process needs CAP_SYS_PTRACE (run "
            "gpuprof as root), and a process that made itself undumpable (prctl PR_SET_DUMPABLE 0) needs it too"
            ) in stderr.splitlines(), stderr
    assert target.running()


def test_refused_while_the_job_is_stopped(procs, workdir, tmp_path):
    target, pid = start_target(procs, workdir, tmp_path, "syscalls")
    os.kill(pid, signal.SIGSTOP)
    wait_until(lambda: tracers_of(pid) and "T" in open(f"/proc/{pid}/stat").read().split()[2], 10, "stopped")
    stderr = refused(pid)
    assert re.search(rf"^gpuprof: error: cannot load the CUPTI shim into process {pid}: process {pid} is stopped "
                     r"\(T \(stopped\)\); continue it first \(kill -CONT\)$", stderr, re.M), stderr
    os.kill(pid, signal.SIGCONT)
    finishes(target, workdir)


def test_gives_up_on_a_job_that_never_blocks(procs, workdir, tmp_path):
    # No thread enters a blocking call: after 5 s gpuprof lets every thread
    # go, unchanged, and says why.
    target, pid = start_target(procs, workdir, tmp_path, "spin")
    stderr = refused(pid)
    assert (f"gpuprof: error: cannot load the CUPTI shim into process {pid}: no thread of process {pid} entered a "
            "blocking system call (read, poll, a futex wait, a sleep...) within 5000 ms: gpuprof loads libraries "
            "only from such a point, where the thread holds no lock the loading needs") in stderr.splitlines(), stderr
    assert untraced(pid)
    touch(workdir, "go")
    assert target.wait(timeout=60) == 0, target.describe()
    assert target.stdout() == f"spin {N}\n", target.describe()


def test_second_gpuprof_is_refused_while_one_injects(procs, workdir, tmp_path):
    target, pid = start_target(procs, workdir, tmp_path, "syscalls")
    first = procs.start_gpuprof("record", "-p", str(pid), "--inject-cupti", "-q", "-o", str(tmp_path / "a.gpuprof"),
                                env={**os.environ, "GPUPROF_TEST_INJECT_PAUSE_AT": "registers"})
    first.wait_for_stderr(r"^gpuprof: test: paused at step registers$", timeout=60, watch=[target])
    stderr = refused(pid)
    assert f"process {pid} is traced by process {first.pid} (gpuprof)" in stderr, stderr
    first.send(signal.SIGKILL)
    first.wait(timeout=10)
    wait_until(lambda: untraced(pid), 10, "every thread let go", watch=[target])
    finishes(target, workdir)


def test_nothing_to_inject_into_a_job_that_has_the_shim(procs, workdir, tmp_path):
    # Attach, detach, attach again: the injected shim switches CUPTI on for
    # each recording (and off between them, docs/cuda.md).
    target, pid = start_target(procs, workdir, tmp_path, "syscalls")
    first = run_gpuprof("record", "-p", str(pid), "--inject-cupti", "-q", "-d", "1", "-o", str(tmp_path / "1.gpuprof"))
    assert first.returncode == 0, first.stderr
    assert loaded_line(pid) in first.stderr.splitlines() and TRACING in first.stderr.splitlines(), first.stderr
    second = run_gpuprof("record", "-p", str(pid), "--inject-cupti", "-q", "-d", "1", "-o", str(tmp_path / "2.gpuprof"))
    assert second.returncode == 0, second.stderr
    assert re.search(rf"^gpuprof: process {pid} has the CUPTI shim already \(\S+{SHIM_PREFIX}\S*\.so\): nothing to "
                     "inject$", second.stderr, re.M), second.stderr
    assert TRACING in second.stderr.splitlines(), second.stderr
    finishes(target, workdir)

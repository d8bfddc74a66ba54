"""record -a and top -a: every PyTorch process on the machine.

Known answers come from torch.profiler inside each process
(torch_counts.py): each process runs its own number of mm/add/relu calls
under torch.profiler, and gpuprof's section for that process must count
exactly those calls. A busy process without torch must show in the CPU
samples only. Processes started after gpuprof, and a second libtorch_cpu
file (a copy loaded through LD_LIBRARY_PATH), must be traced as well; a
SIGKILLed `record -a` must leave every process running with right results
and no probe behind.
"""
import contextlib
import gzip
import json
import math
import os
import re
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from chrome_trace_checks import export_chrome_trace
from pprof_reader import decode, per_leaf_op
from conftest import (CHROOT_TORCH, GPUPROF, HOST_TORCH, TARGET_PYTHON, WORKLOADS, assert_samples_match_cpu_time,
                      bpf_link_ids_of, live_bpf_link_ids, parse_table, process_cpu_ns, run_gpuprof, touch, wait_for_file,
                      wait_until)
from test_cuda_launches import DRIVER, STEPS as LAUNCH_STEPS, check_launches
from test_report_memory import READ_WHOLE, report_as_whole, report_file_as_whole
from test_top import REFRESH_LATENESS_S, Tmux, start_loop

OPS = ("aten::mm", "aten::add", "aten::relu")
HZ = 99  # the sampling rate of the tests that check samples
LIBTORCH = Path("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0")
# The torch 2.x chroot's, as the host (and gpuprof) names it.
CHROOT_LIBTORCH = Path(str(CHROOT_TORCH.root) + "/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.2.6.0")
# A busy process without torch: spins until WORKDIR/stop-spinner exists.
# It also notes, in WORKDIR/spinner-unrun, each stretch of 100 turns (~10
# us) that was charged more than 1 ms of CPU time: "CPU time at its end,
# seconds charged". Time charged that it did not compute is time its vCPU
# did not run (the host ran something else): this VM reports no steal time
# (/proc/stat's steal stays 0), so the guest charges it to whoever was on
# the vCPU, while the sampling timer, which did not run either, takes one
# late sample for all the periods it missed.
SPINNER = """
import os, sys, time
stop = os.path.join(sys.argv[1], "stop-spinner")
unrun = open(os.path.join(sys.argv[1], "spinner-unrun"), "w", buffering=1)
open(os.path.join(sys.argv[1], "spinner-ready"), "w").close()
x = turn = 0
cpu = time.thread_time()
while turn % 256 or not os.path.exists(stop):
    for i in range(100):
        x = (x * 31 + i) % 1000003
    now = time.thread_time()
    if now - cpu > 0.001:
        unrun.write(f"{now} {now - cpu}\\n")
    cpu = now
    turn += 1
"""


def spinner_unrun_s(workdir, from_cpu_s, to_cpu_s):
    """Seconds of CPU time the spinner was charged without running (SPINNER)
    while its CPU time went from from_cpu_s to to_cpu_s."""
    lines = (Path(workdir) / "spinner-unrun").read_text().split("\n")
    return sum(float(seconds) for at, seconds in (line.split() for line in lines if line.count(" ") == 1)
               if from_cpu_s < float(at) <= to_cpu_s)


STOPPED_RE = re.compile(
    r"^gpuprof: stopped \((?P<reason>[^)]*)\); detach [\d.]+ ms; (?P<events>\d+) events, (?P<lost>\d+) lost"
    r"(?:; (?P<samples>\d+) samples, (?P<samples_lost>\d+) lost)?"
    # Other jobs on the machine may launch CUDA kernels (a stand-in's, here).
    r"(?:; (?P<launches>\d+) CUDA launches, (?P<launches_lost>\d+) lost)?; (?P<seen>\d+) processes seen, "
    r"(?P<traced>\d+) traced; wrote ", re.M)


def process_state(pid):
    """The state letter of /proc/PID/stat (R, S, T, Z...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def stop_and_wait(proc):
    """SIGSTOPs proc and waits until it is stopped: its CPU time no longer moves."""
    proc.send(signal.SIGSTOP)
    wait_until(lambda: process_state(proc.pid) == "T", 30, f"{proc.name} to stop", watch=[proc])


def run_delay_s(pid):
    """Seconds the live threads of pid waited, runnable, for a CPU (schedstat)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that has just exited
            total += int((task / "schedstat").read_text().split()[1])
    return total / 1e9


@dataclass
class CpuUse:
    cpu_s: float  # CPU time
    waited_s: float  # time runnable but waiting for a CPU (run_delay)

    def __sub__(self, other):
        return CpuUse(self.cpu_s - other.cpu_s, self.waited_s - other.waited_s)


def cpu_use_now(pid):
    return CpuUse(process_cpu_ns(pid) / 1e9, run_delay_s(pid))


def cpu_use_at_exit(proc, timeout=60):
    """The CPU use of a process that has exited, read while it is a zombie (not
    yet reaped): /proc/PID/stat's utime + stime, threads gone before it
    included, in clock ticks (the kernel scales them to the exact runtime);
    its main thread's wait for a CPU."""
    wait_until(lambda: process_state(proc.pid) == "Z", timeout, f"{proc.name} to exit")
    fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return CpuUse((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), run_delay_s(proc.pid))


# cpu_use_at_exit() counts in clock ticks: up to one tick off, i.e. this many
# samples at HZ, besides the last partial period of the process's thread.
def tick_slack(hz):
    return 1 + hz / os.sysconf("SC_CLK_TCK")


def assert_samples_match_shared_cpu_time(samples, hz, uses, slack=1.0, why="", unrun=0.0):
    """assert_samples_match_cpu_time() for processes (their CpuUse list) that
    may have shared a CPU with others: gpuprof samples each CPU every 1/HZ s
    and keeps whoever runs there then, so while a process time-shares a CPU
    it is sampled at a tick with the chance of its share: binomial. Over a
    stretch where it ran c s and waited w s, the variance is HZ c w / (c + w)
    samples, at most HZ x min(c, w) (seen here: 0.91-1.09 x for ~130-600 due
    among 5 busy processes on 2 CPUs; 1.00-1.01 x for the same processes run
    one at a time). Four standard deviations are allowed besides conftest's
    tolerance. unrun: the share of their CPU time charged while their vCPU
    did not run (spinner_unrun_s()), which no sample can see."""
    cpu_s = sum(use.cpu_s for use in uses) * (1 - unrun)
    variance = hz * sum(min(use.cpu_s, use.waited_s) for use in uses)
    assert_samples_match_cpu_time(samples, hz, cpu_s, slack=slack + 4 * math.sqrt(variance),
                                  why=f"(waited {[round(use.waited_s, 3) for use in uses]} s; "
                                      f"{unrun:.3f} of the CPU time not run) {why}")


def samples_of(roots, pid):
    """Samples of one process, under whatever comm it had (a chroot's
    process is `chroot` until it execs its python3)."""
    return sum(count for root, count in roots.items() if root.rsplit("-", 1)[-1] == str(pid))


def start_counts(procs, workdir, name, steps, env=None, torch_env=HOST_TORCH):
    proc = procs.start_workload("torch_counts.py", workdir, name, str(steps), name=f"counts-{name}", env=env,
                                torch_env=torch_env)
    pid = int(wait_for_file(workdir, f"ready-{name}", timeout=180, watch=[proc]))
    return proc, pid


def finish_counts(workdir, runs, watch, cpu_uses=None):
    """Waits for each process's truth, lets it exit, checks its results; {name: truth}.
    cpu_uses: a dict that gets each process's CpuUse over its life."""
    truths = {}
    for name, (proc, pid) in runs.items():
        truths[name] = json.loads(wait_for_file(workdir, f"truth-{name}", timeout=180, watch=[proc, *watch]))
        assert truths[name]["pid"] == pid
    for name, (proc, pid) in runs.items():
        touch(workdir, f"exit-{name}")
        if cpu_uses is not None:
            cpu_uses[name] = cpu_use_at_exit(proc)
        assert proc.wait(timeout=60) == 0, proc.describe()
        assert truths[name]["ok"], truths[name]
    return truths


def sections(report_text):
    """The per-process sections of a system-wide table: {pid: (header, table text)}."""
    out = {}
    for block in re.split(r"\n(?=== Process )", report_text):
        m = re.match(r"== Process (\d+) \(([^)]*)\): (.*)", block)
        if m:
            out[int(m.group(1))] = (block.splitlines()[0], block)
    return out


def folded_roots(path, *extra):
    """report --folded --metric samples, summed per root frame (streamed, as
    the whole read prints it)."""
    folded = report_as_whole(path, "--folded", "--metric", "samples", *extra)
    assert folded.returncode == 0, folded.stderr
    roots = {}
    for line in folded.stdout.splitlines():
        stack, count = line.rsplit(" ", 1)
        roots[stack.split(";")[0]] = roots.get(stack.split(";")[0], 0) + int(count)
    return roots


def test_every_torch_process_gets_its_own_table(procs, workdir, tmp_path):
    early, early_pid = start_counts(procs, workdir, "early", 300)
    spinner = procs.start([TARGET_PYTHON, "-c", SPINNER, str(workdir)], "spinner")
    wait_for_file(workdir, "spinner-ready", timeout=60, watch=[spinner])
    # The spinner is held stopped while sampling starts and ends, so that its
    # CPU time read then is the CPU time it had at those moments.
    stop_and_wait(spinner)
    out = tmp_path / "all.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-F", str(HZ), "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120, watch=[early])  # printed once sampling is on
    spinner_use_before = cpu_use_now(spinner.pid)
    # The early process waits for `go`: it uses next to no CPU until then.
    early_use_before = cpu_use_now(early_pid)
    spinner.send(signal.SIGCONT)
    # Two more start after gpuprof: their libtorch_cpu is the same file,
    # already probed; the kernel puts the probes in as they map it.
    runs = {"early": (early, early_pid)}
    runs["late1"] = start_counts(procs, workdir, "late1", 500)
    runs["late2"] = start_counts(procs, workdir, "late2", 700)
    # A torch 2.6 process in a plain chroot: another libtorch file, named in
    # its maps as the host sees it, with its CPython 3.13 frames.
    runs["chroot"] = start_counts(procs, workdir, "chroot", 600, torch_env=CHROOT_TORCH)
    libtorch_of = {name: CHROOT_LIBTORCH if name == "chroot" else LIBTORCH for name in runs}
    touch(workdir, "go")
    cpu_uses = {}
    truths = finish_counts(workdir, runs, [gp], cpu_uses=cpu_uses)
    cpu_uses["early"] -= early_use_before
    time.sleep(1)  # the spinner alone for a moment
    stop_and_wait(spinner)
    spinner_use = cpu_use_now(spinner.pid) - spinner_use_before
    # The share of CPU time the machine charged without running it then (SPINNER).
    unrun = spinner_unrun_s(workdir, spinner_use_before.cpu_s, spinner_use_before.cpu_s + spinner_use.cpu_s) / \
        spinner_use.cpu_s
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    spinner.send(signal.SIGCONT)
    touch(workdir, "stop-spinner")
    assert spinner.wait(timeout=30) == 0, spinner.describe()
    stderr = gp.stderr()
    m = STOPPED_RE.search(stderr)
    assert m and int(m.group("lost")) == 0 and int(m.group("samples_lost")) == 0, stderr
    # At least ours: other torch jobs may share the machine.
    assert int(m.group("traced")) >= len(runs), stderr
    assert "not traced" not in stderr, stderr
    for name, (proc, pid) in runs.items():
        assert re.search(rf"^gpuprof: process {pid} \(python3\) runs {re.escape(str(libtorch_of[name]))}$", stderr,
                         re.M), (name, stderr)

    report = report_as_whole(out, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    # The folded self times too, compensated and raw: every process's ops under its root.
    for args in (["--folded"], ["--folded", "--raw-times"]):
        folded = report_as_whole(out, *args)
        assert folded.returncode == 0, folded.stderr
        for name, (proc, pid) in runs.items():
            assert re.search(rf"^[^;\n]+-{pid};(?:[^\n]*;)?aten::mm \d+$", folded.stdout, re.M), (name, folded.stdout)
    found = sections(report.stdout)
    for name, (proc, pid) in runs.items():
        assert pid in found, (name, pid, report.stdout)
        header, text = found[pid]
        assert f"torch_counts.py {workdir} {name}" in header, header
        assert f"libtorch_cpu: {libtorch_of[name]}" in text, text
        calls = parse_table(text).calls()
        for op in OPS:
            assert calls.get(op) == truths[name]["calls"][op], (name, op, calls, truths[name])
    # The spinner ran no op: no section, but its samples are there.
    assert spinner.popen.pid not in found, report.stdout
    assert re.search(rf"Processes with CPU samples only \(\d+\): .*\b{spinner.popen.pid} python3 \(\d+\)",
                     report.stdout), report.stdout
    roots = folded_roots(out)
    # Every process is sampled every 1/HZ s of its CPU time while sampling
    # is on: the spinner for the CPU time it had between start and stop.
    assert_samples_match_shared_cpu_time(samples_of(roots, spinner.pid), HZ, [spinner_use], why=f"spinner; {roots}",
                                         unrun=unrun)
    # Its interpreter was found: its samples carry its Python frames.
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples", "--pid", str(spinner.popen.pid)).stdout
    assert re.search(r"^python3-\d+;<string>\(\d+\):_<module>", folded, re.M), folded[:2000]
    # The torch processes: the late ones from their start, the early one
    # from when sampling started, each to its exit (before gpuprof stopped).
    # The host takes a vCPU whoever runs on it, so each lost about the
    # spinner's share of its CPU time unrun. Three CI runs (2026-11-28,
    # 12-01, 12-04) had them at 0.71 to 0.81 x their due and gpuprof at
    # 2-3 x its own: a sample woke gpuprof, whose switch caught the other
    # CPU's sample (test_samples_do_not_wake_record_a_one_by_one).
    print("samples / due (spinner, then torch processes):",
          *(f"{name} {samples_of(roots, pid) / (HZ * use.cpu_s):.3f}" for name, pid, use in
            [("spinner", spinner.pid, spinner_use), *((name, pid, cpu_uses[name]) for name, (_, pid) in runs.items())]),
          f"; unrun {unrun:.4f}")
    for name, (proc, pid) in runs.items():
        assert_samples_match_shared_cpu_time(samples_of(roots, pid), HZ, [cpu_uses[name]], slack=tick_slack(HZ),
                                             why=f"{name}; {roots}", unrun=unrun)
    # No tighter bound on their sum: their deviations are not independent.
    # A CI run (2026-11-28) had all four at about 0.81 x their due while the
    # spinner and every one alone passed, so whatever slowed the machine
    # then moved them together, and a sum judged as if they cancel fails.
    # The chroot's CPython 3.13 was found and walked.
    chroot_pid = runs["chroot"][1]
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples", "--pid", str(chroot_pid)).stdout
    assert re.search(rf"^python3-{chroot_pid};torch_counts\.py\(\d+\):_<module>", folded, re.M), folded[:2000]

    # --pid / --comm choose processes; the table is then that process's.
    one = report_as_whole(out, "--pid", str(runs["late1"][1]), "--row-limit", "-1")
    assert one.returncode == 0, one.stderr
    assert list(sections(one.stdout)) == [runs["late1"][1]], one.stdout
    assert folded_roots(out, "--pid", str(spinner.popen.pid)) == {
        f"python3-{spinner.popen.pid}": roots[f"python3-{spinner.popen.pid}"]}
    # Two processes, one of each torch, by pid, sorted and raw.
    two = report_as_whole(out, "--pid", str(runs["early"][1]), "--pid", str(chroot_pid), "--sort-by",
                                   "self_cpu_time_total", "--raw-times")
    assert set(sections(two.stdout)) == {runs["early"][1], chroot_pid}, two.stdout
    python = report_as_whole(out, "--comm", "python3")
    # Every one of ours (and whatever else ran python3 with torch meanwhile).
    assert python.returncode == 0 and {pid for _, pid in runs.values()} <= set(sections(python.stdout)), python.stdout
    none = report_as_whole(out, "--comm", "no-such-command")
    assert none.returncode == 2, none.stdout
    assert "no process of" in none.stderr and f"{early_pid} python3" in none.stderr, none.stderr

    # The pprof profile streams the events too (each process's stacks on
    # their own, the sampled spinner's too): the whole read's bytes.
    profile = tmp_path / "all.pb"
    profile_bytes, _ = report_file_as_whole(out, profile, "--pprof", profile)
    assert b"aten::mm" in profile_bytes

    # One trace process per process, named, with its own op events; the
    # trace streams the events, and is the whole read's file.
    trace_path = tmp_path / "all.json"
    report_file_as_whole(out, trace_path, "--chrome-trace", trace_path)
    events = json.loads(trace_path.read_text())["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("ph") == "M" and e["name"] == "process_name"}
    for name, (proc, pid) in runs.items():
        assert names.get(pid) == f"python3 ({pid})", names
        mm = [e for e in events if e.get("ph") == "X" and e["pid"] == pid and e["name"] == "aten::mm"]
        assert len(mm) == truths[name]["calls"]["aten::mm"], (name, len(mm))


def wakeups(pid):
    """Times the threads of pid have gone to sleep and been woken (their
    voluntary context switches)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):
            total += int(re.search(r"^voluntary_ctxt_switches:\s+(\d+)", (task / "status").read_text(), re.M).group(1))
    return total


def test_samples_do_not_wake_record_a_one_by_one(procs, workdir, tmp_path):
    # A sample woke gpuprof onto the other CPU, whose timer fired during the
    # switch and charged gpuprof its sample, not the process it displaced:
    # a run's torch processes had 0.7 x their due samples (docs/system-wide.md).
    # Now gpuprof reads the sample ring on its loop's turns (every 100 ms
    # when nothing else wakes it), woken only by a process's first sample.
    # A busy process keeps one CPU sampled at 999 Hz: a wakeup per sample
    # would be 999 a second.
    hz, seconds = 999, 3.0
    spinner = procs.start([TARGET_PYTHON, "-c", SPINNER, str(workdir)], "spinner")
    wait_for_file(workdir, "spinner-ready", timeout=60, watch=[spinner])
    out = tmp_path / "all.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "--no-ops", "-F", str(hz), "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    spinner_before, woken_before, start = cpu_use_now(spinner.pid), wakeups(gp.pid), time.monotonic()
    time.sleep(seconds)
    woken, elapsed = wakeups(gp.pid) - woken_before, time.monotonic() - start
    spinner_use = cpu_use_now(spinner.pid) - spinner_before
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    touch(workdir, "stop-spinner")
    assert spinner.wait(timeout=30) == 0, spinner.describe()
    m = STOPPED_RE.search(gp.stderr())
    assert m and int(m.group("samples_lost")) == 0, gp.stderr()
    # The spinner kept a CPU busy (and sampled) for most of the window.
    assert spinner_use.cpu_s > 0.5 * elapsed, spinner_use
    # A turn per 100 ms, plus a wakeup per process seen (its first sample,
    # its fork and its exit: other jobs of the shared machine come and go),
    # plus a few for the signal and the ready line.
    allowed = elapsed / 0.1 + 3 * int(m.group("seen")) + 10
    assert woken <= allowed, (f"gpuprof woke {woken} times in {elapsed:.2f} s (allowed {allowed:.0f}) while "
                              f"the spinner ran {spinner_use.cpu_s:.2f} s at {hz} Hz", gp.stderr())
    print(f"gpuprof woke {woken} times in {elapsed:.2f} s (allowed {allowed:.0f}); "
          f"{int(m.group('seen'))} processes seen")


def test_pid_and_comm_choose_the_streamed_folded_stacks_and_pprof(procs, workdir, tmp_path):
    # docs/report.md, "Memory": --folded, --pprof and --speedscope of a
    # record -a recording stream with --pid/--comm too: the chosen processes'
    # stacks, the whole read's bytes and notes, and each op's calls exactly
    # theirs (the Chrome trace: test_chrome_trace.py).
    runs = {name: start_counts(procs, workdir, name, steps, torch_env=env)
            for name, steps, env in (("a", 200, HOST_TORCH), ("b", 300, CHROOT_TORCH))}
    out = tmp_path / "all.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-F", str(HZ), "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120, watch=[proc for proc, _ in runs.values()])
    touch(workdir, "go")
    truths = finish_counts(workdir, runs, [gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    a, b = (str(runs[name][1]) for name in ("a", "b"))
    profile = tmp_path / "chosen.pb.gz"
    for choice, names in ((["--pid", a], ("a",)), (["--pid", a, "--pid", b], ("a", "b")),
                          (["--pid", b, "--comm", "python3"], ("b",)), (["--comm", "python3"], ("a", "b"))):
        ours = {f"python3-{runs[name][1]}" for name in names}
        exact = "--comm" not in choice or "--pid" in choice  # --comm alone: other python3 jobs too
        for metric in (["--folded"], ["--folded", "--metric", "samples"]):
            folded = report_as_whole(out, *metric, *choice)
            assert folded.returncode == 0, (choice, folded.stderr)
            roots = {line.split(";")[0] for line in folded.stdout.splitlines()}
            assert roots == ours if exact else ours <= roots, (choice, metric, roots)
            if metric == ["--folded"]:
                for name in names:
                    assert re.search(rf"^python3-{runs[name][1]};(?:[^\n]*;)?aten::mm \d+$", folded.stdout, re.M), \
                        (choice, name, folded.stdout[:2000])
        report_file_as_whole(out, profile, "--pprof", profile, *choice, read=lambda p: gzip.decompress(p.read_bytes()))
        # --speedscope streams the chosen processes too (chosen_processes_stream.h).
        speedscope = tmp_path / "chosen.speedscope.json"
        report_file_as_whole(out, speedscope, "--speedscope", speedscope, *choice)
        calls = per_leaf_op(decode(profile))
        for op in OPS:
            due = sum(truths[name]["calls"][op] for name in names)
            assert calls[op][0] == due if exact else calls[op][0] >= due, (choice, op, calls, truths)
    # None chosen: the error lists what each process did, as the whole read.
    for output in (["--folded"], ["--pprof", profile]):
        none = report_as_whole(out, *output, "--pid", a, "--comm", "no-such-command")
        assert none.returncode == 2 and f"gpuprof: error: no process of {out} matches --pid/--comm; it has: " \
            in none.stderr, none.stderr


def test_two_libtorch_files_are_both_traced(procs, workdir, tmp_path):
    # A copy of libtorch_cpu under another path is another file: the kernel
    # does not share probes between them, so gpuprof must attach to each.
    copy_dir = tmp_path / "other-torch"
    copy_dir.mkdir()
    copy = copy_dir / "libtorch_cpu.so.1.13"
    shutil.copyfile(LIBTORCH, copy)
    out = tmp_path / "two.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    runs = {"system": start_counts(procs, workdir, "system", 400),
            "copy": start_counts(procs, workdir, "copy", 600,
                                 env={**os.environ, "LD_LIBRARY_PATH": str(copy_dir)})}
    maps = Path(f"/proc/{runs['copy'][1]}/maps").read_text()
    assert str(copy) in maps and str(LIBTORCH) not in maps, "the copy is not what the process loaded"
    touch(workdir, "go")
    truths = finish_counts(workdir, runs, [gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    stderr = gp.stderr()
    for path in (LIBTORCH, copy):
        assert re.search(rf"^gpuprof: tracing {re.escape(str(path))}: \d+ ops", stderr, re.M), (path, stderr)
    report = report_as_whole(out, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    found = sections(report.stdout)
    for name, path in (("system", LIBTORCH), ("copy", copy)):
        header, text = found[runs[name][1]]
        assert f"libtorch_cpu: {path}" in text, text
        calls = parse_table(text).calls()
        for op in OPS:
            assert calls.get(op) == truths[name]["calls"][op], (name, op, calls, truths[name])


COUNTS_STEPS_MIDWAY = 8000


# The stop reason each detaching signal gets on the stop line (docs/record.md).
STOP_REASONS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated", signal.SIGHUP: "hangup"}


@pytest.mark.parametrize("stop,stack_args", [
    (signal.SIGKILL, ()), (signal.SIGINT, ()), (signal.SIGKILL, ("--with-stack",)), (signal.SIGINT, ("--with-stack",)),
    (signal.SIGTERM, ()), (signal.SIGHUP, ())],
    ids=["sigkill-ops", "detach-ops", "sigkill-with-stack", "detach-with-stack", "sigterm-ops", "sighup-ops"])
def test_stopping_record_a_midway_leaves_every_process_right(procs, workdir, tmp_path, stop, stack_args):
    # gpuprof killed, or detaching (Ctrl-C, SIGTERM, SIGHUP), while two
    # processes run their loops under its probes (with --with-stack: walking
    # their Python frames at every op entry too).
    runs = {name: start_counts(procs, workdir, name, COUNTS_STEPS_MIDWAY) for name in ("a", "b")}
    record_file = tmp_path / "killed.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-F", "99", *stack_args, "-q", "-o", record_file)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    # Its own links: other sessions on this machine hold links of theirs.
    links = bpf_link_ids_of(gp.pid)
    assert links, "gpuprof holds no BPF link while tracing"
    size_at_start = record_file.stat().st_size
    touch(workdir, "go")
    time.sleep(1.0)  # in the middle of both loops, probes firing
    # Events on disk before the stop (a loaded machine may not have flushed
    # any yet after 1 s; the killed file can only hold what was written).
    wait_until(lambda: record_file.stat().st_size > size_at_start, 30, "events written to the record file",
               watch=[gp])
    assert all(proc.running() for proc, _ in runs.values())
    gp.send(stop)
    status = gp.wait(timeout=60)
    assert stop == signal.SIGKILL or status == 0, gp.describe()
    if stop != signal.SIGKILL:
        assert re.search(rf"^gpuprof: stopped \({STOP_REASONS[stop]}\);", gp.stderr(), re.M), gp.stderr()
    finish_counts(workdir, runs, [])  # right results, exit 0
    wait_until(lambda: not (links & live_bpf_link_ids()), 10, "gpuprof's BPF links to be released")
    # What was written before the kill reads, with both processes in it.
    # Streamed, a killed recorder's file (no END chunk) prints what the whole read does.
    report = report_as_whole(tmp_path / "killed.gpuprof", "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    found = sections(report.stdout)
    # DEFECT: a SIGKILLed `record -a` file (no END chunk) sometimes reports
    # as one process: a single table of every process's ops merged, no
    # `== Process` sections (2 of 3 runs on 2026-11-25 while other tests
    # loaded the machine; the SIGINT file always has them).
    assert {pid for _, pid in runs.values()} <= set(found), report.stdout
    if stop == signal.SIGKILL:
        # A killed gpuprof leaves the file as far as it had written it; which
        # of the last events made it is not knowable from outside.
        return
    for name, (proc, pid) in runs.items():
        # Detached midway: the window holds each process's calls from `go`
        # (both were traced before it) to the detach, i.e. the first p calls
        # of the sequence mm, add, relu, relu repeated. Where the detach
        # falls in it depends on scheduling on a shared machine; that it
        # falls within the loop is known (1 s into loops of several seconds).
        calls = parse_table(found[pid][1]).calls()
        recorded = {op: calls.get(op, 0) for op in OPS}
        p = sum(recorded.values())
        steps, rest = divmod(p, 4)
        prefix = {"aten::mm": steps + (rest >= 1), "aten::add": steps + (rest >= 2),
                  "aten::relu": 2 * steps + max(0, rest - 2)}
        assert recorded == prefix, (name, recorded, found[pid][1])
        assert 0 < steps < COUNTS_STEPS_MIDWAY, (name, recorded)


def test_bad_system_wide_arguments_say_why(tmp_path):
    both = run_gpuprof("record", "-a", "-p", "1")
    assert both.returncode != 0 and "excludes" in both.stderr, both.stderr
    shapes = run_gpuprof("record", "-a", "--record-shapes", "-o", tmp_path / "x")
    assert shapes.returncode == 2 and "-a (system-wide) does not take --record-shapes" in shapes.stderr, shapes.stderr
    lines = run_gpuprof("top", "-a", "--lines")
    assert lines.returncode == 2 and "--lines" in lines.stderr, lines.stderr
    # --pid on the recording of one process says what it is.
    one = tmp_path / "one.gpuprof"
    rec = run_gpuprof("record", "-o", one, "-q", "--", TARGET_PYTHON, "-c",
                      "import torch; torch.add(torch.ones(2), 1)")
    assert rec.returncode == 0, rec.stderr
    wrong = run_gpuprof("report", one, "--pid", "1")
    assert wrong.returncode == 2 and "system-wide recording (record -a)" in wrong.stderr, wrong.stderr


def mains_calls(doc, pid):
    """{op: calls} of the process's op calls in the trace whose Python stack
    ends in torch_counts.py's main, and {op: calls} of the others."""
    frames = doc["stackFrames"]
    in_main, other = {}, {}
    for e in doc["traceEvents"]:
        if e.get("ph") != "X" or e.get("cat") != "cpu_op" or e["pid"] != pid or e["name"] not in OPS:
            continue
        sf = e.get("sf")
        leaf = frames[sf]["name"] if sf else ""
        into = in_main if re.fullmatch(r"torch_counts\.py\(\d+\): main", leaf) else other
        into[e["name"]] = into.get(e["name"], 0) + 1
    return in_main, other


def test_record_a_with_stack_gives_each_process_its_python_stacks(procs, workdir, tmp_path):
    # record -a --with-stack: each process's op entries carry its own
    # interpreter's frames (torch 1.13 under CPython 3.11, torch 2.6 under
    # 3.13 in the chroot: two frame layouts in one recording). Every mm,
    # add and relu call of each process is under its main(), exactly as
    # many as torch.profiler counted there, none without it.
    out = tmp_path / "stacks.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "--with-stack", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    runs = {"host": start_counts(procs, workdir, "host", 300),
            "chroot": start_counts(procs, workdir, "chroot", 400, torch_env=CHROOT_TORCH)}
    touch(workdir, "go")
    truths = finish_counts(workdir, runs, [gp])
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    doc, _ = export_chrome_trace(out, tmp_path / "stacks.json")
    # Streamed, the trace is the whole read's file, stacks and all.
    whole = run_gpuprof("report", out, "--chrome-trace", tmp_path / "whole.json", env=READ_WHOLE)
    assert whole.returncode == 0, whole.stderr
    assert (tmp_path / "whole.json").read_bytes() == (tmp_path / "stacks.json").read_bytes()
    # Streamed (each process's entry stacks renumbered as they come:
    # analyze/pairs_first.h), the whole read's tables.
    grouped = report_as_whole(out, "--group-by-stack-n", "1", "--row-limit", "-1")
    assert grouped.returncode == 0, grouped.stderr
    found = sections(grouped.stdout)
    for name, (_, pid) in runs.items():
        in_main, other = mains_calls(doc, pid)
        assert in_main == truths[name]["calls"] and other == {}, (name, in_main, other, truths[name])
        # The table groups them by that frame too (key_averages(group_by_stack_n=1)).
        _, text = found[pid]
        assert "Source Location" in text and re.search(r"torch_counts\.py\(\d+\): main", text), text
    # Its entry stacks do not change the streamed table (whole or --pid, read
    # whole then: the note on stacks cut counts the chosen process's calls)
    # nor --folded (streamed, each process's entry stacks renumbered as they
    # come: analyze/pairs_first.h), every process's or one's, under main().
    for args in (["--row-limit", "-1"], ["--pid", str(runs["chroot"][1])], ["--folded"],
                 ["--folded", "--pid", str(runs["host"][1])]):
        report = report_as_whole(out, *args)
        assert report.returncode == 0 and "aten::mm" in report.stdout, (args, report.stderr)
        if "--folded" in args:
            assert re.search(r"^python3-\d+;.*torch_counts\.py\(\d+\):_main;aten::mm \d+$", report.stdout, re.M), \
                report.stdout[:3000]
    profile = tmp_path / "stacks.pb.gz"
    streamed_profile, _ = report_file_as_whole(out, profile, "--pprof", profile,
                                               read=lambda p: gzip.decompress(p.read_bytes()))
    assert b"torch_counts.py" in streamed_profile and b"aten::mm" in streamed_profile
    # One process's modules are asked for with --pid; two at once are refused.
    modules = run_gpuprof("report", out, "--modules")
    assert modules.returncode == 2 and "choose one with --pid PID" in modules.stderr, modules.stderr
    one = run_gpuprof("report", out, "--modules", "--pid", str(runs["host"][1]))
    assert one.returncode == 0 and "[no module]" in one.stdout, one.stderr


def module_calls(table):
    """A layer table's models: {model: (its calls, [(layer's kind, its calls)])},
    a layer's kind its label without the instance number (Linear_1: Linear)."""
    models, last = {}, None
    for m in re.finditer(r"^((?:├── |└── )?)([A-Za-z]+)(?:_\d+)?\s+\|.*\|\s*(\d+)$", table, re.M):
        branch, label, calls = m.groups()
        if branch:
            models[last][1].append((label, int(calls)))
        else:
            last = label
            models[label] = (int(calls), [])
    return models


def test_record_a_with_stack_streams_each_processes_modules_trace_and_speedscope(procs, tmp_path):
    """record -a --with-stack of two models on two threads in each of two
    processes (tests/workloads/module_loop.py, torch 1.13 and 2.6 at once):
    each process's layer table (--modules --pid) counts every forward of
    each model and layer, and it, the Chrome trace with its module slices
    and the speedscope profile stream (their entry stacks renumbered as
    they come: analyze/chosen_processes_stream.h) into the whole read's
    bytes."""
    out = tmp_path / "modules.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "--with-stack", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    loops = {name: procs.start_workload("module_loop.py", "3", name=f"modules-{name}", torch_env=env)
             for name, env in (("host", HOST_TORCH), ("chroot", CHROOT_TORCH))}
    for loop in loops.values():
        assert loop.wait(timeout=180) == 0, loop.describe()
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    trace, speedscope = tmp_path / "trace.json", tmp_path / "profile.speedscope.json"
    for name, loop in loops.items():
        said = {key: int(value) for key, value in re.findall(r"^(train|infer|pid) (\d+)$", loop.stdout(), re.M)}
        pid = str(said["pid"])
        table = report_as_whole(out, "--modules", "--pid", pid)
        assert table.returncode == 0, (name, table.stderr)
        train, infer = said["train"], said["infer"]
        assert module_calls(table.stdout) == {
            "Trained": (train, [("Linear", train), ("ReLU", train), ("Linear", train)]),
            "Inferred": (infer, [("Linear", infer), ("Tanh", infer)])}, (name, said, table.stdout)
        events = report_as_whole(out, "--modules", "--show-events", "--raw-times", "--pid", pid)
        assert events.returncode == 0 and "aten::linear" in events.stdout, (name, events.stderr)
        doc, _ = report_file_as_whole(out, trace, "--chrome-trace", trace, "--pid", pid)
        slices = {model: doc.count(b'"cat":"python_function","name":"nn.Module: %s"' % model.encode())
                  for model in ("Trained", "Inferred")}
        assert slices == {"Trained": train, "Inferred": infer}, (name, said, slices)
        profile, _ = report_file_as_whole(out, speedscope, "--speedscope", speedscope, "--pid", pid)
        assert b'{"name":"aten::linear"}' in profile and b"module_loop.py" in profile, (name, profile[-2000:])


def test_top_a_lists_processes_and_drills_into_one(procs, workdir, tmp_path):
    target, pid = start_loop(procs, workdir, steps=10 ** 8)
    touch(workdir, "go")
    other, other_pid = start_counts(procs, workdir, "idle", 10)
    tmux = Tmux(tmp_path, width=150, height=30)
    try:
        tmux.start(f"{GPUPROF} top -a -i 0.5; echo TOP-EXITED $?; sleep 60")
        screen = tmux.wait_for(rf"^[> ]\s*{pid}\s+python3\s+[\d.]+\s+\d+ ", timeout=120)
        assert re.search(r"^gpuprof top -a - \d+ processes, [2-9]\d* running PyTorch", screen, re.M), screen
        assert re.search(rf"^[> ]\s*{other_pid}\s+python3 ", screen, re.M), screen
        # Select the loop (the busiest is first; move until it is marked).
        for _ in range(10):
            if re.search(rf"^>\s*{pid}\s", tmux.screen(), re.M):
                break
            tmux.keys("Down")
            time.sleep(0.3)
        assert re.search(rf"^>\s*{pid}\s", tmux.screen(), re.M), tmux.screen()
        tmux.keys("Enter")
        screen = tmux.wait_for(r"^aten::mm ")
        assert re.search(rf"^gpuprof top - {pid} \(python3\)", screen, re.M), screen
        # Its times are compensated, as top -p's (docs/top.md): by the
        # calibration top -a made before its first probes went in.
        assert re.search(r", probes -\d+\.\d\d us/call\s*$", screen, re.M), screen
        tmux.keys("Escape")
        tmux.wait_for(r"^gpuprof top -a - ")
        tmux.keys("q")
        tmux.wait_for(r"^TOP-EXITED 0$")
        assert target.running(), target.describe()
    finally:
        tmux.kill()
    touch(workdir, "exit-idle")
    assert other.wait(timeout=60) == 0, other.describe()


def test_short_lived_processes_keep_their_name_and_python_frames(procs, workdir, tmp_path):
    # Processes that live ~0.2 s: gpuprof reads each one's first sample
    # within ms (it wakes gpuprof), so it names the process and walks its
    # Python frames while it runs; the name also travels with the sample for
    # one that is gone already.
    out = tmp_path / "short.gpuprof"
    hz = 199
    gp = procs.start_gpuprof("record", "-a", "-F", str(hz), "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: system-wide: ", timeout=120)
    cpu_uses = {}
    for _ in range(12):
        short = procs.start([TARGET_PYTHON, "-c", "import time\nt = time.monotonic()\n"
                             "while time.monotonic() - t < 0.2:\n    sum(range(1000))\n"], "short")
        cpu_uses[short.pid] = cpu_use_at_exit(short)
        assert short.wait(timeout=60) == 0, short.describe()
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    roots = folded_roots(out)
    # Each was sampled for its whole life, under its own name (other jobs
    # of the shared machine may have run beside it: the binomial bound).
    ours = {k: v for k, v in roots.items() if "python3" in k}
    for pid, use in cpu_uses.items():
        assert_samples_match_shared_cpu_time(roots.get(f"python3-{pid}", 0), hz, [use], slack=tick_slack(hz),
                                             why=f"pid {pid}; {ours}")
    assert_samples_match_shared_cpu_time(sum(roots.get(f"python3-{pid}", 0) for pid in cpu_uses), hz,
                                         list(cpu_uses.values()), slack=len(cpu_uses) * tick_slack(hz), why=str(ours))
    # docs/system-wide.md: first samples are read within ms, which covers
    # processes that live tens of ms: each of these (~0.2 s of its own code)
    # has samples in its <module>.
    # DEFECT: on this shared 2-core machine only 3 or 5 of the 12 had them
    # while other tests ran (all 12 when it was quieter; 2026-11-25).
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples", "--comm", "python3").stdout
    with_frames = {int(m.group(1)) for m in re.finditer(r"^python3-(\d+);<string>\(\d+\):_<module>", folded, re.M)}
    assert set(cpu_uses) <= with_frames, (sorted(cpu_uses), sorted(with_frames))


def test_cuda_launches_of_a_torch_process(procs, workdir, tmp_path):
    # The stand-in libtorch_cpu of test_cuda_launches.py, which launches
    # through the real libcudart: a third libtorch file, its process's
    # libcudart probed with that process's pid; every launch charged to its op.
    target = procs.start([DRIVER, str(LAUNCH_STEPS), workdir / "ready", workdir / "go"], "launch_driver")
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    out = tmp_path / "launches.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-q", "-o", out)
    gp.wait_for_stderr(rf"^gpuprof: process {pid}: CUDA launches: 6 entry points in \S*libcudart", timeout=120,
                       watch=[target])
    touch(workdir, "go")
    assert target.wait(timeout=60) == 0, target.describe()
    assert f"launches {6 * LAUNCH_STEPS} unexpected errors 0" in target.stdout(), target.describe()
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()
    check_launches(out)
    # Streamed, launches are counted per thread and charged to their process at the end.
    report = report_as_whole(out)
    header, text = sections(report.stdout)[pid]
    assert f"{6 * LAUNCH_STEPS} CUDA launches" in text, text
    # So does the trace, the launches put aside in file order: each on its
    # process's track.
    trace = tmp_path / "launches.json"
    trace_bytes, _ = report_file_as_whole(out, trace, "--chrome-trace", trace)
    launches = [e for e in json.loads(trace_bytes)["traceEvents"] if e.get("cat") == "cuda_runtime"]
    assert sum(e["pid"] == pid for e in launches) == 6 * LAUNCH_STEPS, len(launches)


# top -a's process list (top_view.cpp): a header line, a blank line, the
# column titles, then one row per process in fixed columns: the selection
# mark, PID, COMMAND, CPU %, OPS/S, LAUNCHES/S, the command line.
TOP_A_HEADER_RE = re.compile(r"gpuprof top -a - (\d+) processes, (\d+) running PyTorch \(traced\) - ([\d.]+) s"
                             r"(?P<paused> - paused)?$")
TOP_A_TITLES = f"{'PID':>8}  {'COMMAND':<16}  {'CPU %':>7}  {'OPS/S':>10}  {'LAUNCHES/S':>10}  COMMAND LINE"
TOP_A_ROW_RE = re.compile(r"(?P<mark>[ >])(?P<pid>[ \d]{6}\d)  (?P<comm>.{16})  (?P<cpu>.{7})  (?P<ops>.{10})  "
                          r"(?P<launches>.{10})(?:  (?P<cmdline>.*))?")
TOP_A_BATCH_WIDTH = 200  # --batch prints lines of up to 200 columns
CMDLINE_COLUMN = 61  # where the command line starts in a row


@dataclass
class ListedProcess:
    pid: int
    comm: str
    cpu: str
    ops: str
    launches: str
    cmdline: str
    marked: bool


def process_list(text):
    """One top -a list (a --batch refresh or a screen): (header match, [ListedProcess] in list order)."""
    lines = text.strip("\n").splitlines()
    header = TOP_A_HEADER_RE.match(lines[0]) if lines else None
    assert header and len(lines) >= 3 and lines[1] == "" and lines[2].rstrip() == TOP_A_TITLES, text
    rows = []
    for line in lines[3:]:
        m = TOP_A_ROW_RE.fullmatch(line)
        if not m:  # the screen's help line (or a row broken over lines: the header's count tells)
            continue
        rows.append(ListedProcess(int(m["pid"]), m["comm"].rstrip(), m["cpu"].strip(), m["ops"].strip(),
                                  m["launches"].strip(), m["cmdline"] or "", m["mark"] == ">"))
    return header, rows


def batch_blocks(stdout):
    """Each refresh of top -a --batch."""
    return re.split(r"\n(?=gpuprof top -a - )", stdout.strip())


def test_top_a_batch_lists_the_processes(procs, workdir, tmp_path):
    # docs/system-wide.md: `top -a -b -n K` prints the list K times: every
    # PyTorch process (traced: OPS/S, first, by ops/s), and with -F HZ every
    # sampled process too (OPS/S "-", after them, by CPU %).
    idle = {"idle": start_counts(procs, workdir, "idle", 10),
            "idle26": start_counts(procs, workdir, "idle26", 10, torch_env=CHROOT_TORCH)}
    loopdir = tmp_path / "loop"
    loopdir.mkdir()
    loop, loop_pid = start_loop(procs, loopdir, steps=10 ** 8)
    touch(loopdir, "go")
    # A process whose command line holds a newline near its start (idle, traced).
    newline = procs.start([TARGET_PYTHON, "-X", "note\nover two lines", WORKLOADS / "torch_counts.py", workdir, "nl",
                           "10"], "counts-nl")
    wait_for_file(workdir, "ready-nl", timeout=180, watch=[newline])
    spinner_file = tmp_path / "spinner.py"
    spinner_file.write_text(SPINNER)
    spinner = procs.start([TARGET_PYTHON, spinner_file, str(workdir)], "spinner")
    wait_for_file(workdir, "spinner-ready", timeout=60, watch=[spinner])
    command_lines = {pid: " ".join(proc.argv) for proc, pid in idle.values()}
    # The chroot's process exec'd its python3: its own argv, as the chroot names its files.
    command_lines[idle["idle26"][1]] = " ".join(CHROOT_TORCH.argv("torch_counts.py", str(workdir), "idle26", "10")[2:])
    command_lines[spinner.pid] = " ".join(spinner.argv)
    command_lines[loop_pid] = " ".join(loop.argv)

    def check(rows, pids, first):
        for pid in pids:
            row = next((r for r in rows if r.pid == pid), None)
            assert row and row.comm == "python3" and not row.marked, (pid, rows)
            # Cut at the batch width; a row never ends in blanks.
            assert row.cmdline == command_lines[pid][:TOP_A_BATCH_WIDTH - CMDLINE_COLUMN].rstrip(" "), \
                (row, command_lines[pid])
        for proc, pid in idle.values():  # waiting for `go`: no op at all, no libcudart
            assert next(r for r in rows if r.pid == pid).ops == "0", rows
        assert all(r.launches == "-" for r in rows if r.pid in pids), rows
        # The loop runs throughout (how fast depends on the CPU it gets on a
        # shared machine): at least one op ends in each 1 s interval, but
        # the first, which begins before the attach to every libtorch file
        # (the chroot's too) and may hold little time after it.
        assert first or int(next(r for r in rows if r.pid == loop_pid).ops) >= 1, rows
        traced = [r for r in rows if r.ops != "-"]
        assert rows[:len(traced)] == traced, rows
        ops = [int(r.ops) for r in traced]
        assert ops == sorted(ops, reverse=True), rows

    printed = []
    for args, refreshes in ((("-n", "3"), 3), (("-n", "2", "-F", str(HZ)), 2)):
        began = time.monotonic()
        result = run_gpuprof("top", "-a", "-b", "-i", "1", *args, timeout=180)
        ran_s = time.monotonic() - began
        assert result.returncode == 0, result.stderr
        lists = [process_list(block) for block in batch_blocks(result.stdout)]
        assert len(lists) == refreshes, result.stdout
        # --interval 1: a refresh comes a second after the one before, or a
        # little later (the first: after the start, which the attach to
        # every libtorch file follows; the header shows the time since the
        # start to 0.1 s).
        assert ran_s >= refreshes, ran_s
        elapsed = [float(header[3]) for header, _ in lists]
        assert elapsed[0] >= 1, elapsed
        assert all(1 - 0.1 <= b - a <= 1 + REFRESH_LATENESS_S + 0.05 for a, b in zip(elapsed, elapsed[1:])), elapsed
        printed.append(result.stdout)
        for k, (header, rows) in enumerate(lists):
            sampled = "-F" in args
            check(rows, [pid for _, pid in idle.values()] + [loop_pid] + ([spinner.pid] if sampled else []), k == 0)
            spinner_row = next((r for r in rows if r.pid == spinner.pid), None)
            if not sampled:  # no torch: only sampling finds it
                assert spinner_row is None, rows
                continue
            # Its CPU % is read from /proc/PID/stat at each refresh; no bound
            # is knowable here: its share of 2 busy CPUs, and the moments of
            # the reads (not those of the interval's ends) on a loaded machine.
            assert (spinner_row.ops, spinner_row.launches) == ("-", "-") and float(spinner_row.cpu) >= 0, spinner_row
            others = [-1.0 if r.cpu == "-" else float(r.cpu) for r in rows if r.ops == "-"]
            assert others == sorted(others, reverse=True), rows
    touch(workdir, "stop-spinner")
    assert spinner.wait(timeout=30) == 0, spinner.describe()
    # The idle ones run their steps now, unharmed: right results, exit 0.
    touch(workdir, "go")
    finish_counts(workdir, {**idle, "nl": (newline, newline.pid)}, [])
    assert loop.running(), loop.describe()
    # The header counts the processes listed, one row (one line) each, and the traced ones.
    # A command line is printed on one line, its newlines as spaces (the
    # row of the process started as `python3 -X "note\nover two lines" ...`
    # took two lines: top -a -b had N processes in the header and N + 1
    # lines under the titles, and the screen's list likewise).
    for stdout in printed:
        for block in batch_blocks(stdout):
            header, rows = process_list(block)
            lines = block.strip().splitlines()[3:]
            assert (int(header[1]), int(header[2])) == (len(lines), sum(r.ops != "-" for r in rows)), block
            assert len(rows) == len(lines), block


def test_top_a_keys_move_the_selection_one_row(procs, workdir, tmp_path):
    # docs/top.md, docs/system-wide.md: Up/Down (j/k) select, Enter shows
    # the selected process's op table, Esc goes back; p pauses. With a
    # 10 min interval no refresh comes during the test, so every process is
    # at 0 ops/s and unknown CPU %: the list is in pid order and only grows
    # at its end (a process started later has a higher pid), so the rows
    # above stay where they are and a key must move the mark by exactly one.
    for name in ("a", "b", "c"):  # at least three rows
        start_counts(procs, workdir, name, 10)
    tmux = Tmux(tmp_path, width=200, height=40)

    def listed():
        """(pids in list order, the marked one, the header match) of the list
        on the screen; None while it shows something else (a redraw halfway)."""
        try:
            header, rows = process_list(tmux.screen())
        except AssertionError:
            return None
        marked = [r.pid for r in rows if r.marked]
        return ([r.pid for r in rows], marked[0], header) if len(marked) == 1 else None

    def wait_listed(condition, what):
        return wait_until(lambda: seen if (seen := listed()) and condition(*seen) else None, 60, what)

    try:
        tmux.start(f"{GPUPROF} top -a -i 600; echo TOP-EXITED $?; sleep 60")
        pids, marked, _ = wait_listed(lambda pids, marked, header: len(pids) >= 3, "three processes listed")
        assert pids == sorted(pids) and marked == pids[0], (pids, marked)
        for keys, expected in ((["j"], 1), (["j"], 2), (["k"], 1), (["Up"], 0),
                               (["k", "j"], 1),  # k on the first row stays there
                               (["Down"], 2)):
            before = marked
            tmux.keys(*keys)
            pids, marked, _ = wait_listed(lambda pids, marked, header: marked != before,
                                          f"the mark to move from {before} ({keys})")
            assert marked == pids[expected], (keys, pids, before, marked)
        tmux.keys("Enter")
        drilled = tmux.wait_for(r"Esc: back to the process list$")
        assert re.search(rf"^gpuprof top - {marked} \(", drilled, re.M), drilled
        tmux.keys("Escape")
        # Back on the list, the same process still selected.
        assert wait_listed(lambda pids, now_marked, header: True, "the list again")[1] == marked, tmux.screen()
        tmux.keys("p")
        wait_listed(lambda pids, marked, header: header["paused"], "the list paused")
        tmux.keys("p")
        wait_listed(lambda pids, marked, header: not header["paused"], "the pause to end")
        tmux.keys("q")
        tmux.wait_for(r"^TOP-EXITED 0$")
    finally:
        tmux.kill()
    # The op table's own help line, then the way back, each on its line
    # (they were printed on one line, "... p pause  tab Python
    # linesEsc: back to the process list": render_top's help line ends
    # without a newline, and system_top.cpp appended to it).
    assert re.search(r"^Esc: back to the process list$", drilled, re.M), drilled


def test_pid_and_comm_choose_the_launches_of_those_processes(procs, workdir, tmp_path):
    """docs/system-wide.md: `--pid` and `--comm` (repeatable; both: a process
    must match both) keep only those processes, for every output, here
    `report --launches`. Two stand-in drivers (test_cuda_launches.py's
    per-step launches) run 10 and 20 steps under one `record -a`, each under
    a command name of its own (a symlink to launch_driver: the kernel names
    the process after the file it executed), unique to this test run so that
    no other job's process matches."""
    from test_cuda_launches import EXPECTED as LAUNCHES, parse_launch_table
    steps = {"a": LAUNCH_STEPS, "b": 2 * LAUNCH_STEPS}
    comms = {name: f"ld{name}{os.getpid() % 10 ** 7}" for name in steps}  # at most 15 characters, as comm
    targets, pids = {}, {}
    for name in steps:
        link = tmp_path / comms[name]
        link.symlink_to(DRIVER)
        targets[name] = procs.start([link, str(steps[name]), workdir / f"ready-{name}", workdir / "go"],
                                    f"driver-{name}")
        pids[name] = int(wait_for_file(workdir, f"ready-{name}", timeout=60, watch=[targets[name]]))
        assert Path(f"/proc/{pids[name]}/comm").read_text().strip() == comms[name]
    out = tmp_path / "launches.gpuprof"
    gp = procs.start_gpuprof("record", "-a", "-q", "-o", out)
    for name, pid in pids.items():
        gp.wait_for_stderr(rf"^gpuprof: process {pid}: CUDA launches: 6 entry points in \S*libcudart", timeout=120,
                           watch=list(targets.values()))
    touch(workdir, "go")
    for name, target in targets.items():
        assert target.wait(timeout=60) == 0, target.describe()
        assert f"steps {steps[name]} launches {6 * steps[name]} unexpected errors 0" in target.stdout(), \
            target.describe()
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=120) == 0, gp.describe()

    a, b = str(pids["a"]), str(pids["b"])
    for args, names in ((["--pid", a], ("a",)), (["--pid", b], ("b",)), (["--pid", a, "--pid", b], ("a", "b")),
                        (["--comm", comms["b"]], ("b",)), (["--comm", comms["a"], "--comm", comms["b"]], ("a", "b")),
                        (["--pid", a, "--comm", comms["a"]], ("a",))):
        # Streamed (chosen_processes_stream.h), as the whole read prints it.
        report = report_as_whole(out, "--launches", *args)
        assert report.returncode == 0, (args, report.stderr)
        rows, footer = parse_launch_table(report.stdout)
        # These drivers' steps together: each row their steps' worth.
        chosen_steps = sum(steps[name] for name in names)
        expected = {key: n // LAUNCH_STEPS * chosen_steps for key, n in LAUNCHES.items()}
        assert rows == expected, (args, report.stdout)
        assert re.match(rf"{sum(expected.values())} CUDA launches \({chosen_steps} outside any op\) through ",
                        footer[0]), (args, report.stdout)
    # Every process's, streamed too: these drivers' rows at least (other
    # jobs of the machine may launch as well).
    every, _ = parse_launch_table(report_as_whole(out, "--launches").stdout)
    for key, n in LAUNCHES.items():
        assert every.get(key, 0) >= n // LAUNCH_STEPS * sum(steps.values()), (key, every)
    mismatch = report_as_whole(out, "--launches", "--pid", a, "--comm", comms["b"])
    assert (mismatch.returncode, mismatch.stdout) == (2, ""), mismatch
    assert f"gpuprof: error: no process of {out} matches --pid/--comm" in mismatch.stderr, mismatch.stderr

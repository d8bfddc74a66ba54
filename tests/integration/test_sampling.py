"""CPU sampling (record -F HZ): known answers on a real PyTorch process.

mm_dominated.py spends about 70% of its CPU time inside torch.mm (aten::mm)
and the rest in pure Python, and measures the split itself with its thread's
CPU clock. gpuprof's samples must put the same share under aten::mm (op
tracing on), and, with --no-ops, the same share in the BLAS kernel that mm
runs. two_functions.py splits pure Python work 70/30 between two functions:
the samples' Python frames must split the same way and name the right file,
lines and functions.
"""
import os
import re
import signal
import time
from pathlib import Path

import pytest

from conftest import (CHROOT_TORCH, HOST_TORCH, TARGET_PYTHON, assert_samples_match_cpu_time, cpu_between,
                      pyenv_python, run_gpuprof, touch, wait_for_file)

SECONDS = 4
TOLERANCE_POINTS = 5.0


def folded_samples(out):
    """`report OUT --folded --metric samples` as (stack, count) pairs."""
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples")
    assert folded.returncode == 0, folded.stderr
    pairs = []
    for line in folded.stdout.splitlines():
        stack, count = line.rsplit(" ", 1)
        pairs.append((stack, int(count)))
    return pairs


def record_workload(procs, workdir, tmp_path, *args, torch_env=HOST_TORCH):
    target = procs.start_workload("mm_dominated.py", workdir, SECONDS, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "sampled.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, *args)
    gp.wait_for_stderr(r"^gpuprof: (tracing|sampling) ", timeout=60, watch=[target])
    # The target's CPU time while sampled: it waits for `go` (asleep) when
    # these are read, so the readings and gpuprof's attach and stop enclose
    # the same CPU time.
    between = cpu_between(pid, workdir, watch=[target, gp])
    truth = between.truth
    truth["sampled_cpu_s"], truth["sampled_runs"] = between.cpu_s, between.runs
    gp.send(signal.SIGINT)  # before the interpreter's teardown, which is no part of the loop
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()
    stderr = gp.stderr()
    m = re.search(r"; (\d+) events, (\d+) lost; (\d+) samples, (\d+) lost;", stderr)
    assert m, stderr
    events, lost, samples, samples_lost = map(int, m.groups())
    assert lost == 0 and samples_lost == 0, stderr
    stacks = dict(folded_samples(out))
    assert sum(stacks.values()) == samples, (samples, stacks)
    return truth, events, samples, stacks, stderr


def test_samples_under_the_dominant_op(procs, workdir, tmp_path, torch_env):
    truth, events, samples, stacks, stderr = record_workload(procs, workdir, tmp_path, "-F", "499",
                                                             torch_env=torch_env)
    assert events > 0, stderr
    assert_samples_match_cpu_time(samples, 499, truth["sampled_cpu_s"], why=str(truth), runs=truth["sampled_runs"])
    # Python frames come first, then the op path: its outermost op decides.
    def outermost_op(stack):
        return next((f for f in stack.split(";") if f.startswith("aten::")), None)
    under_mm = sum(c for s, c in stacks.items() if outermost_op(s) == "aten::mm")
    share = 100.0 * under_mm / samples
    print(f"aten::mm: truth {100 * truth['mm_fraction']:.1f}% of the thread's CPU time, "
          f"samples {share:.1f}% ({under_mm} of {samples})")
    assert 0.5 < truth["mm_fraction"] < 0.9, truth  # the workload is what it claims
    assert abs(share - 100 * truth["mm_fraction"]) <= TOLERANCE_POINTS, (share, truth)
    # Below the op: the BLAS kernel it runs, by name.
    assert any(outermost_op(s) == "aten::mm" and "sgemm" in s for s in stacks), stacks
    # Above the op: the workload's Python frames, outermost (<module>) first.
    assert any(s.split(";")[0].endswith(":_<module>") and "mm_dominated.py(" in s
               and outermost_op(s) == "aten::mm" for s in stacks), stacks


def test_no_ops_samples_only(procs, workdir, tmp_path):
    truth, events, samples, stacks, stderr = record_workload(procs, workdir, tmp_path, "-F", "999", "--no-ops")
    assert events == 0, stderr  # no op probes at all
    assert re.search(r"^gpuprof: sampling \d+ \(\S+\) at 999 Hz on \d+ CPUs, no op tracing", stderr, re.M), stderr
    assert_samples_match_cpu_time(samples, 999, truth["sampled_cpu_s"], why=str(truth), runs=truth["sampled_runs"])
    # No op frames: Python frames, then the native leaf (and [kernel]).
    assert not [s for s in stacks if "aten::" in s], stacks
    def leaf(stack):
        frames = [f for f in stack.split(";") if f != "[kernel]"]
        return frames[-1]
    in_blas = sum(c for s, c in stacks.items() if "libblas" in leaf(s) or "sgemm" in leaf(s))
    share = 100.0 * in_blas / samples
    print(f"BLAS leaf: {share:.1f}% of {samples} samples; torch.mm {100 * truth['mm_fraction']:.1f}% of CPU time")
    # mm's time is its BLAS kernel but for the dispatch around it.
    assert abs(share - 100 * truth["mm_fraction"]) <= TOLERANCE_POINTS, (share, truth)


def test_sampling_options_are_checked(tmp_path):
    bad = run_gpuprof("record", "-p", "1", "--no-ops")
    assert bad.returncode == 2 and "--no-ops records CPU samples only" in bad.stderr, bad.stderr
    bad = run_gpuprof("record", "-p", "1", "-F", "0")
    assert bad.returncode == 2, bad.stderr


# Debian's 3.11 (with torch), the pyenv 3.12 and 3.13 of this machine's
# image (3.12's C shim frames, 3.13's _Py_DebugOffsets), and Debian trixie's
# 3.13 in the torch 2.x chroot (its files as the host sees them). By minor
# version, or the torch environment that runs it.
INTERPRETERS = {"3.11-debian": HOST_TORCH, "3.12": 12, "3.13": 13, "3.13-chroot": CHROOT_TORCH}


def interpreter(key):
    """The interpreter's argv."""
    which = INTERPRETERS[key]
    return list(which.python) if not isinstance(which, int) else [pyenv_python(which)]


def start_with(procs, key, script, *args):
    which = INTERPRETERS[key]
    if isinstance(which, int):
        return procs.start_workload(script, *args, python=pyenv_python(which))
    return procs.start_workload(script, *args, torch_env=which)


@pytest.mark.parametrize("version", INTERPRETERS)
def test_python_frames_known_answer(procs, workdir, tmp_path, version):
    # two_functions.py: pure Python, 70% of its CPU time in seventy(), 30%
    # in thirty() (its own thread-CPU-clock measurement). The samples' Python
    # frames must split the same way, naming the right file, lines and
    # functions in torch's Source Location form, "path(line): name". The
    # script does not import torch: --no-ops samples any process.
    target = start_with(procs, version, "two_functions.py", workdir, SECONDS)
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    out = tmp_path / "python.gpuprof"
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out, "-F", "999", "--no-ops")
    gp.wait_for_stderr(r"^gpuprof: sampling ", timeout=60, watch=[target])
    between = cpu_between(pid, workdir, watch=[target, gp])  # asleep until `go`, as in record_workload
    truth = between.truth
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()
    assert "without Python frames" not in gp.stderr(), gp.stderr()
    samples = int(re.search(r"; (\d+) samples, 0 lost;", gp.stderr()).group(1))
    assert_samples_match_cpu_time(samples, 999, between.cpu_s, runs=between.runs)
    # Spaces become "_" in folded frames, as in torch's export_stacks.
    frame_re = re.compile(r"^(?P<file>.+)\((?P<line>\d+)\):_(?P<name>\S+)$")
    in_function = {"seventy": 0, "thirty": 0}
    total = 0
    for stack, count in folded_samples(out):
        line = f"{stack} {count}"
        total += count
        frames = stack.split(";")
        python = [frame_re.match(f) for f in frames]
        python = [m for m in python if m]
        assert python, f"a sample of a Python thread without Python frames: {line}"
        # Outermost first: the module code (<module>) and main() come first.
        assert python[0].group("name") == "<module>", line
        innermost = python[-1]
        name = innermost.group("name")
        if name in in_function:
            # torch's short form: relative to sys.path[0], the script's directory.
            assert innermost.group("file") == os.path.basename(truth["file"]), line
            first, last = truth["lines"][name]
            assert first <= int(innermost.group("line")) <= last, (line, truth["lines"])
            in_function[name] += count
    shares = {name: 100.0 * n / total for name, n in in_function.items()}
    print(f"samples: {shares} of {total}; truth: seventy {100 * truth['seventy']:.1f}%, "
          f"thirty {100 * truth['thirty']:.1f}%")
    for name in in_function:
        assert abs(shares[name] - 100 * truth[name]) <= TOLERANCE_POINTS, (shares, truth)


def test_kernel_stacks(tmp_path):
    # A thread that lives in read(2) of /dev/urandom: most samples interrupt
    # it in the kernel, and those carry the kernel stack, outermost first,
    # below the native leaf (the libc read), in perf's "name_[k]" form.
    out, cpu = tmp_path / "kernel.gpuprof", tmp_path / "cpu"
    code = ("import os, time, resource, sys\n"
            "f = os.open('/dev/urandom', os.O_RDONLY)\n"
            "end = time.monotonic() + 3\n"
            "while time.monotonic() < end:\n"
            "    os.read(f, 1 << 16)\n"
            "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
            "open(sys.argv[1], 'w').write(repr(ru.ru_utime + ru.ru_stime))\n")
    made = run_gpuprof("record", "-q", "-F", "499", "--no-ops", "-o", out, "--", TARGET_PYTHON, "-c", code, cpu)
    assert made.returncode == 0, made.stderr
    samples = folded_samples(out)
    total = in_kernel = in_read = 0
    for stack, count in samples:
        line = f"{stack} {count}"
        frames = stack.split(";")
        total += count
        assert "[kernel]" not in frames, f"an in-kernel sample without its kernel stack: {line}"
        kernel = [i for i, f in enumerate(frames) if f.endswith("_[k]")]
        if not kernel:
            continue
        in_kernel += count
        # Kernel frames come last, after every user frame.
        assert kernel == list(range(kernel[0], len(frames))), line
        kernel_frames = frames[kernel[0]:]
        # read(2) enters at the syscall entry point and goes through a *read* function.
        if (any(f.startswith(("do_syscall_64", "entry_SYSCALL_64")) for f in kernel_frames)
                and any("read" in f for f in kernel_frames)):
            in_read += count
    print(f"{in_kernel} of {total} samples in the kernel, {in_read} in read(2)")
    assert_launched_samples(total, 499, cpu)
    assert in_kernel >= 0.5 * total, samples
    assert in_read >= 0.5 * total, samples


# A 1.5 s spin that writes its process's CPU time (every thread, from the
# exec) to argv[1] as its last act: samples of a launched command are due
# for all of it, from the exec (the interpreter's own start-up included).
LOOP = ("import time\n"
        "def spin():\n"
        "    end = time.monotonic() + 1.5\n"
        "    while time.monotonic() < end:\n"
        "        pass\n"
        "spin()\n"
        "import resource, sys\n"
        "ru = resource.getrusage(resource.RUSAGE_SELF)\n"
        "open(sys.argv[1], 'w').write(repr(ru.ru_utime + ru.ru_stime))\n")

# What a launched command runs after LOOP's reading: the interpreter's
# teardown, a few milliseconds (measured here: 2-6 samples at 499 Hz).
TEARDOWN_SAMPLES = 10


def assert_launched_samples(samples, hz, cpu_file):
    assert_samples_match_cpu_time(samples, hz, float(Path(cpu_file).read_text()), slack=TEARDOWN_SAMPLES,
                                  why="(from the exec)")


@pytest.mark.parametrize("version", ["3.12", "3.13", "3.13-chroot"])
def test_launched_no_ops_finds_the_interpreter_late(tmp_path, version):
    # `record --no-ops -- CMD` samples from the exec, before the interpreter
    # is up; its frames must show up once it is (looked for every 100 ms).
    # Sampling is on before the exec: every CPU-second of the command is
    # sampled (the samples' count matches its whole CPU time).
    out, cpu = tmp_path / "launched.gpuprof", tmp_path / "cpu"
    made = run_gpuprof("record", "-F", "499", "--no-ops", "-o", out, "--", *interpreter(version), "-c", LOOP, cpu)
    assert made.returncode == 0, made.stderr
    assert "without Python frames" not in made.stderr, made.stderr
    assert "CPU samples. Read them with: gpuprof report" in made.stdout, made.stdout
    samples = folded_samples(out)
    total = sum(n for _, n in samples)
    assert_launched_samples(total, 499, cpu)
    in_spin = sum(n for stack, n in samples if stack.startswith("<string>(6):_<module>;<string>(4):_spin;"))
    print(f"{in_spin} of {total} samples in spin()")
    # The rest: the interpreter's start-up and teardown, ~0.1 s of 1.6.
    assert in_spin >= 0.85 * total, samples


def test_unsupported_interpreter_gets_native_samples(tmp_path):
    # CPython 3.10 has another frame layout: a clear message, and samples
    # with native frames only (libpython's functions), nothing made up.
    out, cpu = tmp_path / "py310.gpuprof", tmp_path / "cpu"
    made = run_gpuprof("record", "-F", "499", "--no-ops", "-o", out, "--", pyenv_python(10), "-c", LOOP, cpu)
    assert made.returncode == 0, made.stderr
    assert re.search(r"^gpuprof: samples without Python frames: CPython 3\.10 is not supported "
                     r"\(3\.11 to 3\.13\)", made.stderr, re.M), made.stderr
    samples = folded_samples(out)
    for stack, _ in samples:
        assert not re.search(r"\(\d+\):_", stack), f"a Python frame from 3.10: {stack}"
    total = sum(n for _, n in samples)
    assert_launched_samples(total, 499, cpu)
    in_libpython = sum(n for stack, n in samples if "libpython3.10" in stack)
    assert in_libpython >= 0.5 * total, samples


def test_no_ops_attaches_to_a_process_without_torch(procs, workdir, tmp_path):
    # -p PID --no-ops needs no libtorch_cpu; op tracing still does, and says
    # how to sample instead.
    target = procs.start_workload("two_functions.py", workdir, "4", python=pyenv_python(13))
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    traced = run_gpuprof("record", "-p", pid, "-d", "1", "-o", tmp_path / "ops.gpuprof")
    assert traced.returncode == 1, traced.stderr
    assert "has no libtorch_cpu mapped" in traced.stderr and "--no-ops" in traced.stderr, traced.stderr
    # Sampled from before `go` to after its truth: the samples are those of
    # the CPU time it used in between (read from schedstat, as above),
    # however much of a CPU a busy machine left it.
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-F", "199", "--no-ops", "-o", tmp_path / "samples.gpuprof")
    gp.wait_for_stderr(r"^gpuprof: sampling ", timeout=60, watch=[target])
    between = cpu_between(pid, workdir, watch=[target, gp], timeout=60)
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    m = re.search(r"; \d+ events, 0 lost; (\d+) samples, 0 lost;", gp.stderr())
    assert m, gp.stderr()
    assert_samples_match_cpu_time(int(m.group(1)), 199, between.cpu_s, runs=between.runs)
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()


def test_lost_samples_are_said_with_the_folded_samples(procs, tmp_path):
    """Samples the ring buffer had no room for (issue 21, item 8): --folded
    --metric samples says on stderr how many were lost and what share of
    those taken, as the table's notes do. gpuprof is stopped (SIGSTOP) while
    it samples a spinning process at 10 kHz: the 4 MiB sample ring holds
    about 28000 to 46000 samples of a shallow stack (46000 kept, none lost,
    in 6 s on 2026-11-26's VM, where the kernel throttled the rate to
    ~7 kHz), 15 s bring over 100000, so the kernel drops thousands for
    certain."""
    spinner = procs.start([TARGET_PYTHON, "-c", "while True: pass"], "spinner")
    out = tmp_path / "lossy.gpuprof"
    gp = procs.start_gpuprof("record", "-p", spinner.pid, "--no-ops", "-F", "10000", "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: sampling ", timeout=60, watch=[spinner])
    gp.send(signal.SIGSTOP)
    time.sleep(15)
    gp.send(signal.SIGCONT)
    time.sleep(0.5)
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    m = re.search(r"; (\d+) samples, (\d+) lost", gp.stderr())
    assert m, gp.stderr()
    kept, lost = map(int, m.groups())
    assert lost > 1000, gp.stderr()  # the ring's size and the 6 s say thousands (above)
    folded = run_gpuprof("report", out, "--folded", "--metric", "samples")
    assert folded.returncode == 0, folded.stderr
    assert sum(int(line.rsplit(" ", 1)[1]) for line in folded.stdout.splitlines()) == kept, folded.stdout
    share = f"{100 * lost / (lost + kept):.1f}%"
    note = (f"gpuprof: {lost} CPU samples lost ({share} of the {lost + kept} taken; sample ring buffer full): "
            "sample counts are short by that much; try a lower -F")
    assert note in folded.stderr.splitlines(), folded.stderr
    # The table of the same recording says the same (it has no ops: --no-ops).
    table = run_gpuprof("report", out)
    assert note in table.stdout.splitlines() + table.stderr.splitlines(), table.stdout + table.stderr


def test_samples_in_jit_code_are_named_jit(tmp_path, torch_env):
    """oneDNN's convolution kernels are JIT code in anonymous executable
    memory: their samples are `[jit]`, none `[unknown]` (issue 21, item 10:
    81 of ~120 convolution samples were `[unknown]`). How many samples land
    in the kernels is the machine's business; that they are named is not."""
    out = tmp_path / "conv.gpuprof"
    made = run_gpuprof("record", "-q", "--no-ops", "-F", "499", "-o", out, "--",
                       *torch_env.argv("conv_loop.py", "2"), timeout=180)
    assert made.returncode == 0, made.stderr
    # The loop's samples: those under conv_loop.py's own frame (a sample at
    # the command's exec, in an image already gone from its maps, can only
    # be [unknown], and belongs to no loop).
    leaves = {}
    for stack, count in folded_samples(out):
        if "conv_loop.py(" not in stack:
            continue
        leaf = stack.split(";")[-1]
        leaves[leaf] = leaves.get(leaf, 0) + count
    unknown = leaves.get("[unknown]", 0)
    jit = sum(n for leaf, n in leaves.items() if leaf == "[jit]" or leaf.startswith("[jit] "))
    assert unknown == 0 and jit > 0, sorted(leaves.items(), key=lambda kv: -kv[1])[:15]

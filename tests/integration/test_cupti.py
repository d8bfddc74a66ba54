"""GPU times from the CUPTI injection shim (cupti_shim/), without a GPU.

The shim (build/libgpuprof_cupti.so) is what a CUDA driver loads from
CUDA_INJECTION64_PATH at cuInit. Here launch_driver plays that driver (it
dlopens the library CUDA_INJECTION64_PATH names and calls its
InitializeInjection), and a stand-in libcupti (tests/fake_cupti/) plays
CUPTI: inside each of the fake ops' launches (tests/fake_libtorch/
fake_cuda_launch.cpp) it hands the shim a correlation id on the launching
thread and queues a kernel record of known duration, delivered after each
step. gpuprof attaches to the shim's USDT probes and must charge exactly the
planted GPU time to the op whose launch made it, joined by correlation id.
Per step:

  aten::cuda_linear   reduce_kernel 5.0 us, a memcpy HtoD 1.5 us
    aten::cuda_add    3 x scale_kernel<float> 1.0 us
  aten::cuda_replay   one graph launch: graph_kernel_a 2.0 us, graph_kernel_b 3.0 us
  (no op)             scale_kernel<float> 0.7 us
"""
import os
import re
import signal

from conftest import FAKE_LIBTORCH, GPUPROF, run_gpuprof, run_program, touch, wait_for_file

DRIVER = FAKE_LIBTORCH / "launch_driver"
FAKE_CUPTI = GPUPROF.parent / "tests" / "fake_cupti"
STAND_IN = FAKE_CUPTI / "libcupti.so.13"
SHIM = GPUPROF.parent / "libgpuprof_cupti.so"
STEPS = 10
SCALE = "void gpuprof_test::scale_kernel<float>(float*, float, int)"
REDUCE = "gpuprof_test::reduce_kernel(float const*, float*, int)"
# (op, kernel, calls, GPU total, GPU avg) as `report --kernels` prints them
EXPECTED = {
    ("aten::cuda_linear", REDUCE, STEPS, f"{5 * STEPS:.3f}us", "5.000us"),
    ("aten::cuda_add", SCALE, 3 * STEPS, f"{3 * STEPS:.3f}us", "1.000us"),
    ("aten::cuda_replay", "graph_kernel_b", STEPS, f"{3 * STEPS:.3f}us", "3.000us"),
    ("aten::cuda_replay", "graph_kernel_a", STEPS, f"{2 * STEPS:.3f}us", "2.000us"),
    ("aten::cuda_linear", "[memcpy HtoD]", STEPS, f"{1.5 * STEPS:.3f}us", "1.500us"),
    ("[no op]", SCALE, STEPS, f"{0.7 * STEPS:.3f}us", "0.700us"),
}
WITH_STAND_IN = {"GPUPROF_CUPTI_LIBRARY": str(STAND_IN)}


def kernel_rows(out):
    report = run_gpuprof("report", str(out), "--kernels")
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("---")]
    assert len(rules) == 3, report.stdout
    assert re.split(r"\s{2,}", lines[rules[0] + 1].strip()) == ["Operator", "Kernel", "Calls", "GPU total",
                                                                 "GPU avg"], report.stdout
    rows = set()
    for line in lines[rules[1] + 1:rules[2]]:
        op, kernel, calls, total, avg = re.split(r"\s{2,}", line.strip())
        rows.add((op, kernel, int(calls), total, avg))
    return rows, lines[rules[2] + 1:], report.stdout


def test_shim_checks_itself_against_the_stand_in():
    # cupti_driver loads the shim as the driver does and checks, through the
    # stand-in, what it asked CUPTI for, in each state the shim can end in.
    driver = FAKE_CUPTI / "cupti_driver"
    cases = [
        ("1", {}), ("1", {"GPUPROF_CUPTI_LIBRARY": str(STAND_IN)}),
        ("3", {"FAKE_CUPTI_TAKEN": "1"}), ("2", {"GPUPROF_CUPTI": "0"}),
        ("4", {"GPUPROF_CUPTI_LIBRARY": "/nonexistent/libcupti.so"}),
        ("5", {"FAKE_CUPTI_FAIL": "cuptiActivityEnable"}),
        # Variants without an optional function, and without a required one.
        ("1", {"LD_LIBRARY_PATH": str(FAKE_CUPTI / "noflush")}),
        ("4", {"LD_LIBRARY_PATH": str(FAKE_CUPTI / "nots")}),
    ]
    for state, env in cases:
        run = run_program(driver, f"--check={state}", SHIM, "3", env=env)
        assert run.returncode == 0 and "PASS: all checks" in run.stdout, (state, env, run.stdout, run.stderr)


def test_launched_command_gets_the_shim_and_gpu_times(tmp_path):
    # record -- CMD sets CUDA_INJECTION64_PATH to the shim next to gpuprof.
    alone = run_program(DRIVER, str(STEPS), env={**WITH_STAND_IN, "CUDA_INJECTION64_PATH": str(SHIM)})
    assert alone.returncode == 0 and "injection ok" in alone.stdout, alone.stdout + alone.stderr
    out = tmp_path / "gpu.gpuprof"
    result = run_gpuprof("record", "-o", str(out), "--", DRIVER, str(STEPS), env=WITH_STAND_IN)
    assert result.returncode == 0, result.stderr
    assert alone.stdout in result.stdout, result.stdout  # the target's own output, unchanged
    assert "gpuprof-cupti: tracing kernels, memcpy and memset" in result.stderr, result.stderr
    assert re.search(r"^gpuprof: CUPTI shim probes in \S*libgpuprof_cupti\.so$", result.stderr, re.M), result.stderr
    assert "gpuprof: CUPTI shim: is tracing kernels, memcpy and memset" in result.stderr, result.stderr
    rows, footer, text = kernel_rows(out)
    assert rows == EXPECTED, text
    assert footer[0] == (f"{8 * STEPS} GPU activities, {15.2 * STEPS:.3f}us of GPU time ({STEPS} launched "
                         f"outside any op, 0 whose launch was not seen)"), text
    assert len(footer) == 1, text  # no warnings
    # The same GPU time as folded stacks (torch's export_stacks with
    # self_cuda_time_total): each op path with what its calls launched.
    folded = run_gpuprof("report", str(out), "--folded", "--metric", "self_cuda_time")
    assert folded.returncode == 0, folded.stderr
    assert folded.stdout.splitlines() == [
        f"aten::cuda_linear {int(6.5 * STEPS)}",       # reduce 5.0 + memcpy 1.5 per step
        f"aten::cuda_linear;aten::cuda_add {3 * STEPS}",
        f"aten::cuda_replay {5 * STEPS}",              # the graph's two kernels
    ], folded.stdout
    assert f"gpuprof: {int(0.7 * STEPS)} us of GPU time launched outside any op" in folded.stderr, folded.stderr


def start_driver(procs, workdir, env):
    target = procs.start([DRIVER, str(STEPS), workdir / "ready", workdir / "go"], "launch_driver",
                         env={**os.environ, **env})
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    return target, pid


def record_attached(procs, workdir, out, env):
    """launch_driver started with env and waiting; record -p until it exits."""
    target, pid = start_driver(procs, workdir, env)
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", out)
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    assert target.wait(timeout=60) == 0, target.describe()
    assert gp.wait(timeout=60) == 0, gp.describe()
    return target, gp


def test_attached_to_a_job_started_with_the_shim(procs, workdir, tmp_path):
    # -p PID: the job was started with CUDA_INJECTION64_PATH (docs/cuda.md).
    out = tmp_path / "attached.gpuprof"
    _, gp = record_attached(procs, workdir, out, {**WITH_STAND_IN, "CUDA_INJECTION64_PATH": str(SHIM)})
    assert "gpuprof: CUPTI shim: is tracing" in gp.stderr(), gp.stderr()
    rows, _, text = kernel_rows(out)
    assert rows == EXPECTED, text


def test_cupti_taken_by_another_subscriber(procs, workdir, tmp_path):
    # torch.profiler holds CUPTI: the shim steps aside, and gpuprof says so.
    out = tmp_path / "taken.gpuprof"
    target, gp = record_attached(procs, workdir, out, {**WITH_STAND_IN, "CUDA_INJECTION64_PATH": str(SHIM),
                                                       "FAKE_CUPTI_TAKEN": "1"})
    assert "CUPTI is taken by another subscriber" in target.stderr(), target.describe()
    assert ("gpuprof: warning: no GPU times: the CUPTI shim found CUPTI taken by another subscriber "
            "(torch.profiler?)") in gp.stderr(), gp.stderr()
    rows, footer, text = kernel_rows(out)
    assert rows == set(), text
    assert any("gpuprof_cupti_state 3" in line for line in footer), text


def test_without_the_shim_report_says_how_to_get_it(tmp_path):
    # Without the stand-in the driver loads no injection library (as a job
    # started without CUDA_INJECTION64_PATH): no shim, and report says how.
    out = tmp_path / "plain.gpuprof"
    made = run_gpuprof("record", "-q", "-o", str(out), "--", DRIVER, "2")
    assert made.returncode == 0, made.stderr
    assert "CUPTI shim" not in made.stderr, made.stderr
    report = run_gpuprof("report", str(out), "--kernels")
    assert report.returncode == 0, report.stderr
    assert report.stdout.startswith("No GPU times: the target did not have gpuprof's CUPTI shim loaded "
                                    "(record -- CMD injects it; for -p, start the job with "
                                    "CUDA_INJECTION64_PATH="), report.stdout


def test_sigkill_of_gpuprof_leaves_the_job_running(procs, workdir, tmp_path):
    # The shim fires its probes only while gpuprof's links hold the
    # semaphores up; gpuprof dying drops them and the job goes on alone.
    steps = 20000
    target = procs.start([DRIVER, str(steps), workdir / "ready", workdir / "go"], "launch_driver",
                         env={**os.environ, **WITH_STAND_IN, "CUDA_INJECTION64_PATH": str(SHIM)})
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", tmp_path / "killed.gpuprof")
    gp.wait_for_stderr(r"^gpuprof: CUPTI shim probes in ", timeout=60, watch=[target])
    touch(workdir, "go")
    gp.send(signal.SIGKILL)
    assert target.wait(timeout=120) == 0, target.describe()
    assert f"steps {steps} launches {6 * steps} unexpected errors 0" in target.stdout(), target.describe()

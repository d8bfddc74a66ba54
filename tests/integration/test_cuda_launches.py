"""CUDA kernel launches by uprobe (record traces them with the ops), without a GPU.

The stand-in libtorch_cpu (tests/fake_libtorch/fake_cuda_launch.cpp) calls
the REAL libcudart of /usr/local/cuda from inside dispatcher-shaped ops,
with host-side kernel functions named like device kernels. There is no
driver here, so every launch returns cudaErrorInsufficientDriver and runs
nothing, but gpuprof's entry probes on cudaLaunchKernel,
cudaLaunchKernelExC and cudaGraphLaunch see exactly the calls a GPU machine
would. One step of launch_driver:

  aten::cuda_linear      1 reduce_kernel (cudaLaunchKernelExC, grid (7,1,1), block (256,2,1), stream 0x52)
    aten::cuda_add       3 scale_kernel<float> (cudaLaunchKernel, grid (3,2,3), block (128,1,1), stream 0x51)
  aten::cuda_replay      1 graph launch (cudaGraphLaunch, stream 0x53)
  (no op)                1 scale_kernel<float> (cudaLaunchKernel, grid (1,1,1), block (32,1,1), default stream)

With LAUNCH_DRIVER_LIBCUDA (the toolkit's stub libcuda, whose functions all
return CUDA_ERROR_STUB_LIBRARY), each step also launches through the driver
API, as Triton does:

  aten::cuda_driver_launch  2 cuLaunchKernel (CUfunction 0xf00d0001, grid (2,1,1), block (64,2,1), stream 0x61)
                            1 cuLaunchKernelEx (CUfunction 0xf00d0002, grid (9,8,7), block (32,1,1), stream 0x62)
"""
import os
import re
import shutil
import signal

import pytest

from conftest import FAKE_LIBTORCH, GPUPROF, record_launch_driver, run_gpuprof, run_program, touch, wait_for_file
from test_report_memory import READ_WHOLE, peak_rss_kib, reads_of, report_as_whole, report_file_as_whole

DRIVER = FAKE_LIBTORCH / "launch_driver"
SHIM = GPUPROF.parent / "libgpuprof_cupti.so"
FAKE_CUPTI_LIBRARY = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"
STEPS = 10
SCALE = "void gpuprof_test::scale_kernel<float>(float*, float, int)"
REDUCE = "gpuprof_test::reduce_kernel(float const*, float*, int)"
# (op, kernel, API, grid, block, stream) -> launches
EXPECTED = {
    ("aten::cuda_add", SCALE, "cudaLaunchKernel", "(3, 2, 3)", "(128, 1, 1)", "0x51"): 3 * STEPS,
    ("aten::cuda_linear", REDUCE, "cudaLaunchKernelExC", "(7, 1, 1)", "(256, 2, 1)", "0x52"): STEPS,
    ("aten::cuda_replay", "[CUDA graph]", "cudaGraphLaunch", "-", "-", "0x53"): STEPS,
    ("[no op]", SCALE, "cudaLaunchKernel", "(1, 1, 1)", "(32, 1, 1)", "default"): STEPS,
}


STUB_LIBCUDA = "/usr/local/cuda/lib64/stubs/libcuda.so"
WITH_DRIVER_API = {"LAUNCH_DRIVER_LIBCUDA": STUB_LIBCUDA}
EXPECTED_WITH_DRIVER_API = {
    **EXPECTED,
    ("aten::cuda_driver_launch", "[CUfunction 0xf00d0001]", "cuLaunchKernel", "(2, 1, 1)", "(64, 2, 1)",
     "0x61"): 2 * STEPS,
    ("aten::cuda_driver_launch", "[CUfunction 0xf00d0002]", "cuLaunchKernelEx", "(9, 8, 7)", "(32, 1, 1)",
     "0x62"): STEPS,
}


def parse_launch_table(text):
    """Rows of `report --launches`: columns split on runs of 2+ spaces."""
    lines = text.splitlines()
    seps = [i for i, line in enumerate(lines) if line.startswith("---")]
    assert len(seps) == 3, text
    header = re.split(r"\s{2,}", lines[seps[0] + 1].strip())
    assert header == ["Operator", "Kernel", "Launched with", "Grid", "Block", "Stream", "Launches"], text
    rows = {}
    for line in lines[seps[1] + 1:seps[2]]:
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == 7, line
        rows[tuple(cells[:6])] = int(cells[6])
    return rows, lines[seps[2] + 1:]


# EXPECTED's rows as the table prints them: most launches first, ties by
# operator, then kernel and API, in byte order ("[no op]" sorts before
# "aten::"), as docs/cuda.md's example shows them.
IN_TABLE_ORDER = [
    ("aten::cuda_add", SCALE, "cudaLaunchKernel", "(3, 2, 3)", "(128, 1, 1)", "0x51"),
    ("[no op]", SCALE, "cudaLaunchKernel", "(1, 1, 1)", "(32, 1, 1)", "default"),
    ("aten::cuda_linear", REDUCE, "cudaLaunchKernelExC", "(7, 1, 1)", "(256, 2, 1)", "0x52"),
    ("aten::cuda_replay", "[CUDA graph]", "cudaGraphLaunch", "-", "-", "0x53"),
]


def check_launches(out, expected=EXPECTED, through=r"\S*libcudart\.so\.\d+", outside=STEPS, from_cupti=0):
    # Streamed (without GPU activities) or read whole: the same output.
    report = report_as_whole(str(out), "--launches")
    assert report.returncode == 0, report.stderr
    rows, footer = parse_launch_table(report.stdout)
    assert rows == expected, report.stdout
    total = sum(expected.values())
    named = f"; {from_cupti} named from CUPTI, their probe finding no symbol" if from_cupti else ""
    assert re.match(rf"{total} CUDA launches \({outside} outside any op{named}\) through {through}$",
                    footer[0]), report.stdout
    return report


def test_launched_command(tmp_path):
    assert DRIVER.exists(), f"{DRIVER} missing: run make"
    unprofiled = run_program(DRIVER, str(STEPS))
    assert unprofiled.returncode == 0, unprofiled.stderr
    assert f"launches {6 * STEPS} unexpected errors 0" in unprofiled.stdout, unprofiled.stdout
    out = tmp_path / "launches.gpuprof"
    result = run_gpuprof("record", "-o", str(out), "--", DRIVER, str(STEPS))
    assert result.returncode == 0, result.stderr
    # The target saw the same launches and the same results.
    assert unprofiled.stdout in result.stdout, result.stdout
    assert re.search(r"^gpuprof: CUDA launches: 6 entry points in \S*libcudart\.so\.\d+$", result.stderr,
                     re.M), result.stderr
    stopped = re.search(r"; (\d+) CUDA launches, (\d+) lost", result.stderr)
    assert stopped and stopped.groups() == (str(6 * STEPS), "0"), result.stderr
    # The op table says where to look.
    assert f"{6 * STEPS} CUDA kernel launches: gpuprof report {out} --launches" in result.stdout, result.stdout
    check_launches(out)


def test_attached_to_a_running_process(procs, workdir, tmp_path):
    # -p PID on a process started without anything special.
    out = tmp_path / "attached.gpuprof"
    target, _ = record_launch_driver(procs, workdir, out, STEPS)
    assert f"launches {6 * STEPS} unexpected errors 0" in target.stdout(), target.describe()
    check_launches(out)
    # The Chrome trace streams the recording, launches put aside in file
    # order: the whole read's file, one slice per launch. With --ops too,
    # each launch waiting for the call it ran in: cuda_add's three.
    trace = tmp_path / "attached.json"
    trace_bytes, _ = report_file_as_whole(out, trace, "--chrome-trace", trace)
    assert trace_bytes.count(b'"cat":"cuda_runtime"') == 6 * STEPS
    ops_bytes, _ = report_file_as_whole(out, trace, "--chrome-trace", trace, "--ops", "^aten::cuda_add$")
    assert ops_bytes.count(b'"cat":"cuda_runtime"') == 3 * STEPS


def test_streamed_launch_table_memory_is_flat_in_the_launches(tmp_path):
    """report --launches streams a recording without GPU activities: every
    launch counted under its op as the whole read counts it, and the peak
    memory the same from 80,000 to 320,000 steps (1,440,000 more launches
    and their calls), while the whole read's grows. What a streamed read
    holds is how far the launches lag their events in the file (the
    recorder writes them every 100 ms or so), so the shorter run must last
    longer than that: launch_driver ran 20,000 steps in less on this
    project's VM on 2026-12-06, and the streamed read of 80,000 then peaked
    5 to 7 MiB above it, that of 320,000 1 MiB above 80,000's."""
    rss = {}
    for steps in (80000, 320000):
        out = tmp_path / f"steps-{steps}.gpuprof"
        result = run_gpuprof("record", "-q", "-o", str(out), "--", DRIVER, str(steps), timeout=300)
        assert result.returncode == 0, result.stderr
        assert f"launches {6 * steps} unexpected errors 0" in result.stdout, result.stdout
        check_launches(out, {row: n // STEPS * steps for row, n in EXPECTED.items()}, outside=steps)
        rss[steps] = (peak_rss_kib(out, "--launches"), peak_rss_kib(out, "--launches", env=READ_WHOLE))
    summary = f"--launches peak RSS KiB (streamed, read whole): 80000 steps {rss[80000]}, 320000 steps {rss[320000]}"
    print(summary)
    assert rss[320000][0] - rss[80000][0] < 4096, summary
    assert rss[320000][1] - rss[80000][1] > 160 * 1024, summary


def test_sigkill_of_gpuprof_leaves_the_target_running(procs, workdir, tmp_path):
    # Many steps; gpuprof dies mid-run: the probes go with it and the
    # target finishes with the same output as alone.
    steps = 20000
    target = procs.start([DRIVER, str(steps), workdir / "ready", workdir / "go"], "launch_driver")
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[target]))
    gp = procs.start_gpuprof("record", "-p", pid, "-q", "-o", tmp_path / "killed.gpuprof")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    touch(workdir, "go")
    gp.wait_for_stderr(r"^gpuprof: CUDA launches: ", timeout=60, watch=[target])
    gp.send(signal.SIGKILL)
    assert target.wait(timeout=120) == 0, target.describe()
    assert f"steps {steps} launches {6 * steps} unexpected errors 0" in target.stdout(), target.describe()


def test_launches_is_refused_with_table_options(tmp_path):
    bad = run_gpuprof("report", str(tmp_path / "x.gpuprof"), "--launches", "--sort-by", "cpu_time_total")
    assert bad.returncode == 2 and "excludes" in bad.stderr, bad.stderr


def test_driver_api_launches_of_a_running_process(procs, workdir, tmp_path):
    # -p PID on a process that launches through libcuda directly (Triton's
    # way) besides libcudart: both libraries are probed, each launch is
    # charged to its op with its CUfunction, grid, block and stream.
    alone = run_program(DRIVER, str(STEPS), env=WITH_DRIVER_API)
    assert alone.returncode == 0 and f"launches {9 * STEPS} unexpected errors 0" in alone.stdout, alone.stdout
    out = tmp_path / "driver.gpuprof"
    target, gp = record_launch_driver(procs, workdir, out, STEPS, WITH_DRIVER_API)
    assert target.stdout() == alone.stdout, target.describe()
    assert re.search(r"^gpuprof: CUDA driver API launches: 4 entry points in \S*/stubs/libcuda\.so$",
                     gp.stderr(), re.M), gp.stderr()
    check_launches(out, EXPECTED_WITH_DRIVER_API)


def test_driver_api_launches_of_a_launched_command(tmp_path):
    # record -- CMD: CUDA maps libcuda, then the CUPTI shim at cuInit; the
    # shim's stop attaches libcuda too, before any launch.
    env = {**WITH_DRIVER_API, "GPUPROF_CUPTI_LIBRARY": str(FAKE_CUPTI_LIBRARY)}
    alone = run_program(DRIVER, str(STEPS), env={**env, "CUDA_INJECTION64_PATH": str(SHIM)})
    assert alone.returncode == 0 and f"launches {9 * STEPS} unexpected errors 0" in alone.stdout, alone.stdout
    out = tmp_path / "driver.gpuprof"
    result = run_gpuprof("record", "-o", str(out), "--", DRIVER, str(STEPS), env=env)
    assert result.returncode == 0, result.stderr
    assert alone.stdout in result.stdout, result.stdout
    assert "gpuprof: CUDA driver API launches: 4 entry points in " in result.stderr, result.stderr
    # The stand-in CUPTI names the driver launches' kernels (as Triton's are
    # named) and publishes their correlation ids, but driver launches keep
    # their CUfunction: CUPTI names only runtime launches the probes could
    # not name (launch_table.h; on a GPU the driver launches' ids did not
    # follow their probe hits, docs/gpu.md).
    check_launches(out, EXPECTED_WITH_DRIVER_API)


def test_every_copy_of_libcudart_is_probed(procs, workdir, tmp_path):
    # torchvision ships its own libcudart (libcudart.<hash>.so.13) beside
    # torch's: a process maps both, and launches go through either. Seen on
    # an H200 with torch 2.11 (docs/gpu.md): with one copy probed, resnet18's
    # launches through the other were unnamed driver calls. Here the driver
    # loads a copy under such a name and makes 2 launches per step through it.
    copy = tmp_path / "libcudart.0123abcd.so.13"
    shutil.copy("/usr/local/cuda/lib64/libcudart.so.13", copy)
    env = {"LAUNCH_DRIVER_SECOND_LIBCUDART": str(copy)}
    alone = run_program(DRIVER, str(STEPS), env=env)
    assert alone.returncode == 0 and f"launches {8 * STEPS} unexpected errors 0" in alone.stdout, alone.stdout
    out = tmp_path / "copies.gpuprof"
    target, gp = record_launch_driver(procs, workdir, out, STEPS, env)
    assert target.stdout() == alone.stdout, target.describe()
    probed = re.findall(r"^gpuprof: CUDA launches: 6 entry points in (\S+)$", gp.stderr(), re.M)
    assert sorted(probed) == sorted([os.path.realpath("/usr/local/cuda/lib64/libcudart.so.13"), str(copy)]), \
        gp.stderr()
    stopped = re.search(r"; (\d+) CUDA launches, (\d+) lost", gp.stderr())
    assert stopped and stopped.groups() == (str(8 * STEPS), "0"), gp.stderr()
    # main's own launch, grid (1, 1, 1), and the copy's two, grid (2, 1, 1): one row of mixed shapes.
    expected = {key: n for key, n in EXPECTED.items() if key[0] != "[no op]"}
    expected[("[no op]", SCALE, "cudaLaunchKernel", "mixed", "mixed", "default")] = 3 * STEPS
    check_launches(out, expected, through=r"\S*/libcudart\S*\.so\.13, \S*/libcudart\S*\.so\.13", outside=3 * STEPS)


@pytest.fixture(scope="module")
def launch_mode_recording(tmp_path_factory):
    """launch_driver STEPS recorded in launch mode, once for the module."""
    out = tmp_path_factory.mktemp("launches") / "launches.gpuprof"
    made = run_gpuprof("record", "-q", "-o", str(out), "--", DRIVER, str(STEPS))
    assert made.returncode == 0, made.stderr
    return out


def test_only_outputs_that_join_launches_read_the_threads_of_the_ops(launch_mode_recording, tmp_path):
    # Streamed outputs read the recording twice (around the events, then
    # the events); --launches and the trace's --ops, which place each launch
    # in the call its thread was in, read a third time for the threads that
    # ran ops. The others drop the launches: no third read.
    out, trace, profile = launch_mode_recording, tmp_path / "trace.json", tmp_path / "profile.pb.gz"
    reads = {args: reads_of(out, *args) for args in [
        (), ("--folded",), ("--pprof", profile), ("--chrome-trace", trace),
        ("--launches",), ("--chrome-trace", trace, "--ops", "^aten::cuda_add$")]}
    assert list(reads.values()) == [2, 2, 2, 2, 3, 3], reads


@pytest.mark.parametrize("limit", [0, 1, 3, 4, 100, -1, None], ids=lambda n: f"row-limit-{n}")
def test_row_limit_keeps_the_first_rows(launch_mode_recording, limit):
    # --row-limit N: the first N rows of the whole table, in its order, and
    # the footer (totals over every row) says how many rows it left out.
    # None: no option, report's default limit (100) then.
    assert set(IN_TABLE_ORDER) == set(EXPECTED)
    report = run_gpuprof("report", str(launch_mode_recording), "--launches",
                         *(() if limit is None else ("--row-limit", str(limit))))
    assert report.returncode == 0, report.stderr
    rows, footer = parse_launch_table(report.stdout)
    shown = IN_TABLE_ORDER if limit is None or limit < 0 else IN_TABLE_ORDER[:limit]
    assert list(rows.items()) == [(key, EXPECTED[key]) for key in shown], report.stdout
    more = len(IN_TABLE_ORDER) - len(shown)
    cut = re.escape(f"; {more} more rows (--row-limit -1 shows all)") if more else ""
    assert len(footer) == 1 and re.fullmatch(
        rf"{6 * STEPS} CUDA launches \({STEPS} outside any op\) through \S*libcudart\.so\.\d+{cut}",
        footer[0]), report.stdout

"""gpuprof top against a live PyTorch process: --batch refreshes with the
running ops and plausible counts, the full-screen view driven in tmux (sort,
filter, quit, terminal restored), the target finishing with the same result,
and a launched command ending top with a summary."""
import re
import shutil
import subprocess
import time

import pytest

from conftest import GPUPROF, TARGET_PYTHON, WORKLOADS, run_gpuprof, touch, wait_for_file

STEPS = 40000


def start_loop(procs, workdir, steps=STEPS):
    target = procs.start_workload("matmul_loop.py", workdir, str(steps))
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    return target, pid


def tables(text):
    """Each refresh of --batch output: (status line, second line, GPU line (or ""), {name: (self %,
    self, total, avg, [self CUDA,] calls)})."""
    out = []
    for block in re.split(r"\n(?=gpuprof top - )", text.strip()):
        lines = block.strip("\n").splitlines()
        assert lines[0].startswith("gpuprof top - "), block
        header = next(i for i, line in enumerate(lines) if line.startswith("Name"))
        columns = len(re.split(r"\s{2,}", lines[header].strip()))
        rows = {}
        for line in lines[header + 1:]:
            cells = re.split(r"\s{2,}", line.strip())
            if len(cells) == columns:
                rows[cells[0]] = tuple(cells[1:])
        out.append((lines[0], lines[1], lines[2], rows))
    return out


def test_batch_refreshes_show_the_running_ops(procs, workdir):
    target, pid = start_loop(procs, workdir)
    touch(workdir, "go")
    result = run_gpuprof("top", "-p", str(pid), "-b", "-n", "3", "-i", "0.5", timeout=120)
    assert result.returncode == 0, result.stderr
    refreshes = tables(result.stdout)
    assert len(refreshes) == 3, result.stdout
    for status, second, _, rows in refreshes:
        assert re.match(rf"gpuprof top - {pid} \(python3\), \d+ threads?, CPU [\d.]+%, \d+ ops/s, 0 events lost$",
                        status), status
        assert "sorted by self_cpu_time_total" in second, second
        # Times are compensated for the probes (docs/top.md): by the
        # calibration gpuprof made at attach, a few us per call.
        assert re.search(r", probes -\d+\.\d\d us/call$", second), second
        # Every step is one matmul (-> mm), one add, one relu (-> clamp_min),
        # one div: the per-interval counts agree within the step that
        # straddles the interval's edge. How many steps an interval holds
        # depends on the CPU the loop gets on a shared machine (seen here:
        # 50 to 240 in 0.5 s); it runs through all three refreshes, so at
        # least one each.
        mm = int(rows["aten::mm"][4])
        assert mm >= 1, rows
        # The ops/s of the status line is the interval's calls (every row: batch
        # mode shows them all) over its length, which the second line shows
        # to 0.1 s: the two agree to within those roundings.
        ops_per_s = int(re.search(r", (\d+) ops/s,", status).group(1))
        interval_s = float(re.match(r"last ([\d.]+) s of ", second).group(1))
        calls = sum(int(cells[4]) for cells in rows.values())
        assert calls / (interval_s + 0.05) - 0.5 <= ops_per_s <= calls / (interval_s - 0.05) + 0.5, (
            status, second, calls)
        for name in ("aten::matmul", "aten::add", "aten::relu", "aten::div"):
            assert abs(int(rows[name][4]) - mm) <= 2, (name, rows)
        # Sorted by self time, largest first.
        selves = [float(re.match(r"([\d.]+)%", cells[0]).group(1)) for cells in rows.values()]
        assert selves == sorted(selves, reverse=True), rows
    assert "gpuprof: stopped (quit)" in result.stderr, result.stderr
    # The target goes on, unharmed, and ends with the result it computes alone.
    assert target.wait(timeout=300) == 0, target.describe()
    assert target.stdout().strip() == expected_checksum(), target.stdout()


_CHECKSUM = {}


def expected_checksum():
    if "v" not in _CHECKSUM:
        code = ("import sys; sys.argv = ['x', '', '%d'];" % STEPS +
                "import handshake; handshake.wait_for_file = lambda *a, **k: None;" +
                "handshake.signal_file = lambda *a, **k: None; import matmul_loop; matmul_loop.main()")
        result = subprocess.run([TARGET_PYTHON, "-c", code], capture_output=True, text=True, timeout=300,
                                cwd=WORKLOADS, env={"PYTHONPATH": str(WORKLOADS), "PATH": "/usr/bin:/bin"})
        assert result.returncode == 0, result.stderr
        _CHECKSUM["v"] = result.stdout.strip()
    return _CHECKSUM["v"]


def test_a_launched_command_ends_top_with_a_summary(tmp_path):
    result = run_gpuprof("top", "-b", "-i", "60", "--", TARGET_PYTHON, "-c",
                         "import torch; x = torch.ones(8, 8); [x.matmul(x) for _ in range(50)]", timeout=120)
    assert result.returncode == 0, result.stderr
    assert "gpuprof: stopped (target exited)" in result.stderr, result.stderr
    (status, second, _, rows), = tables(result.stdout[result.stdout.index("gpuprof top - "):])
    assert second.startswith("since start") and "stopped (target exited)" in second, second
    assert rows["aten::matmul"][4] == "50", rows


def test_bad_arguments_say_why(tmp_path):
    for args, message in [(["top"], "give -p PID, -- COMMAND or -a"),
                          (["top", "-p", "1", "--sort-by", "self_cuda_memory_usage"], "unknown sort key"),
                          (["top", "-p", "1", "--ring-buffer", "3"], "power of two")]:
        result = run_gpuprof(*args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)


class Tmux:
    """One tmux server of our own (-L), one window of a fixed size."""

    servers = 0

    def __init__(self, tmp_path, width=110, height=30):
        assert shutil.which("tmux"), "tmux missing: run scripts/setup.sh"
        Tmux.servers += 1  # a server of its own each time: a killed one takes a moment to go
        self.socket = f"gpuprof-test-{tmp_path.name}-{Tmux.servers}"
        self.width, self.height = width, height

    def run(self, *args):
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30)

    def start(self, command):
        r = self.run("new-session", "-d", "-s", "t", "-x", str(self.width), "-y", str(self.height), command)
        assert r.returncode == 0, r.stderr

    def screen(self, history=False):
        """The visible screen; with history, the scrollback too, wrapped lines joined."""
        extra = ["-J", "-S", "-500"] if history else []
        return self.run("capture-pane", "-p", "-t", "t", *extra).stdout

    def keys(self, *keys):
        assert self.run("send-keys", "-t", "t", *keys).returncode == 0

    def wait_for(self, pattern, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            screen = self.screen()
            if re.search(pattern, screen, re.M):
                return screen
            time.sleep(0.2)
        pytest.fail(f"never saw {pattern!r} on the screen:\n{self.screen()}")

    def kill(self):
        self.run("kill-server")


def test_full_screen_view_in_tmux(procs, workdir, tmp_path):
    target, pid = start_loop(procs, workdir, steps=10 ** 8)
    touch(workdir, "go")
    tmux = Tmux(tmp_path)
    try:
        tmux.start(f"{GPUPROF} top -p {pid} -i 0.5 -F 99; echo TOP-EXITED $?; sleep 60")
        screen = tmux.wait_for(r"^aten::mm ")
        assert re.search(rf"^gpuprof top - {pid} \(python3\)", screen, re.M), screen
        assert "sorted by self_cpu_time_total" in screen and screen.rstrip().endswith("tab Python lines"), screen
        assert tmux.run("display", "-p", "-t", "t", "#{alternate_on}").stdout.strip() == "1"
        # A resize redraws at the new width: the name column widens.
        narrow = next(line for line in screen.splitlines() if line.startswith("Name"))
        assert tmux.run("resize-window", "-t", "t", "-x", "160").returncode == 0
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            wide = next((line for line in tmux.screen().splitlines() if line.startswith("Name")), "")
            if len(wide.rstrip()) > len(narrow.rstrip()):
                break
            time.sleep(0.1)
        assert len(wide.rstrip()) > len(narrow.rstrip()), (narrow, wide)
        tmux.keys("s")
        tmux.wait_for(r"sorted by cpu_time_total")
        tmux.keys("6")
        tmux.wait_for(r"sorted by count")
        tmux.keys("/", "c", "l", "a", "m", "p", "Enter")
        screen = tmux.wait_for(r"filter 'clamp'")
        names = [line.split()[0] for line in screen.splitlines() if line.startswith("aten::")]
        assert names == ["aten::clamp_min"], screen
        tmux.keys("t")
        tmux.wait_for(r"^since start")
        # tab: the hottest Python lines by CPU samples (-F 99): the loop's line.
        tmux.keys("/", "Enter", "Tab")
        screen = tmux.wait_for(r"Python lines by CPU samples at 99 Hz")
        tmux.wait_for(r"matmul_loop\.py\(\d+\): main")
        tmux.keys("q")
        tmux.wait_for(r"^TOP-EXITED 0$")
        screen = tmux.screen(history=True)
        # The terminal is back: normal screen, and the summary printed there.
        assert tmux.run("display", "-p", "-t", "t", "#{alternate_on}").stdout.strip() == "0"
        assert "stopped (quit)" in screen, screen
        assert target.running(), target.describe()
    finally:
        tmux.kill()


def test_ctrl_c_and_the_target_exiting_restore_the_terminal(procs, workdir, tmp_path):
    # Ctrl-C: the screen goes, the summary says why.
    target, pid = start_loop(procs, workdir, steps=10 ** 8)
    touch(workdir, "go")
    tmux = Tmux(tmp_path, width=80, height=24)
    try:
        tmux.start(f"{GPUPROF} top -p {pid} -i 0.5; echo TOP-EXITED $?; sleep 60")
        tmux.wait_for(r"^aten::mm ")
        tmux.keys("C-c")
        tmux.wait_for(r"^TOP-EXITED 0$")
        screen = tmux.screen(history=True)
        assert "stopped (interrupted)" in screen, screen
        assert tmux.run("display", "-p", "-t", "t", "#{alternate_on}").stdout.strip() == "0"
        assert target.running(), target.describe()
    finally:
        tmux.kill()
    # An error (no such process): said on the normal screen, terminal restored.
    tmux = Tmux(tmp_path, width=80, height=24)
    try:
        tmux.start(f"{GPUPROF} top -p 999999; echo TOP-EXITED $?; sleep 60")
        screen = tmux.wait_for(r"^TOP-EXITED 1$")
        assert "gpuprof: error: " in screen and "999999" in screen, screen
        assert tmux.run("display", "-p", "-t", "t", "#{alternate_on}").stdout.strip() == "0"
    finally:
        tmux.kill()
    # A launched command that ends: top ends with the summary since the start.
    tmux = Tmux(tmp_path, width=100, height=30)
    try:
        tmux.start(f"{GPUPROF} top -i 0.5 -- {TARGET_PYTHON} -c "
                   "'import torch, time; x = torch.ones(8, 8); [(x.matmul(x), time.sleep(0.01)) for _ in range(150)]'"
                   "; echo TOP-EXITED $?; sleep 60")
        tmux.wait_for(r"^TOP-EXITED 0$", timeout=90)
        screen = tmux.screen(history=True)
        assert "stopped (target exited)" in screen, screen
        assert re.search(r"^aten::matmul .* 150\s*$", screen, re.M), screen
        assert tmux.run("display", "-p", "-t", "t", "#{alternate_on}").stdout.strip() == "0"
    finally:
        tmux.kill()


def test_gpu_figures_with_the_cupti_shim(tmp_path):
    # The stand-in CUPTI (tests/fake_cupti, docs/cuda.md) plants known kernel
    # times: per step cuda_linear 6.5 us of its own, cuda_add 3 us,
    # cuda_replay 5.5 us; top -- CMD injects the shim as record does.
    from conftest import FAKE_LIBTORCH
    stand_in = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"
    result = run_gpuprof("top", "-b", "-i", "60", "--sort-by", "self_cuda_time_total", "--",
                         FAKE_LIBTORCH / "launch_driver", "10", env={"GPUPROF_CUPTI_LIBRARY": str(stand_in)})
    assert result.returncode == 0, result.stderr
    # The launched command shares top's stdout: its own lines come first.
    assert result.stdout.startswith("injection ok\nsteps 10 launches 60 unexpected errors 0\n"), result.stdout
    (status, second, gpu_line, rows), = tables(result.stdout[result.stdout.index("gpuprof top - "):])
    assert status.endswith(", 0 events lost"), status
    assert re.match(r"GPU busy [\d.]+% \(1 device\), \d+ kernels/s$", gpu_line), gpu_line
    assert "sorted by self_cuda_time_total" in second, second
    header = next(line for line in result.stdout.splitlines() if line.startswith("Name"))
    assert re.split(r"\s{2,}", header.strip())[-2:] == ["Self CUDA", "# Calls"], header
    self_cuda = {name: cells[4] for name, cells in rows.items()}
    assert self_cuda["aten::cuda_linear"] == "65.000us", rows
    assert self_cuda["aten::cuda_add"] == "30.000us", rows
    assert self_cuda["aten::cuda_replay"] == "55.000us", rows
    assert list(rows)[:3] == ["aten::cuda_linear", "aten::cuda_replay", "aten::cuda_add"], rows

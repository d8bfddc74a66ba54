"""gpuprof top against a live PyTorch process: --batch refreshes with the
running ops and plausible counts at the --interval asked for, the
full-screen view driven in tmux (sort, the number keys and the filter on a
paused table, quit, terminal restored), the target finishing with the same
result, a launched command ending top with a summary, the Python lines view
in batch (--lines), and the GPU figures of a job started with the CUPTI shim
(the stand-in's planted times)."""
import os
import re
import shutil
import subprocess
import time

import pytest

from conftest import (FAKE_LIBTORCH, GPUPROF, HOST_TORCH, TARGET_PYTHON, WORKLOADS, parse_stopped_line,
                      parse_time_us, parse_tracing_line, run_gpuprof, touch, wait_for_file)

STEPS = 40000
# How late a refresh may come after its interval: the session's loop looks
# at the clock at least every 100 ms (kPollTimeoutMs), the second line shows
# the interval to 0.1 s, and on this shared 2-core machine gpuprof may wait
# for a CPU for a while (0.25 s allowed): -i 0.5 printing 1.0 would fail.
REFRESH_LATENESS_S = 0.1 + 0.05 + 0.25


def start_loop(procs, workdir, steps=STEPS):
    target = procs.start_workload("matmul_loop.py", workdir, str(steps))
    pid = int(wait_for_file(workdir, "ready", timeout=120, watch=[target]))
    return target, pid


def start_until_stop(procs, workdir, torch_env=HOST_TORCH):
    """matmul_until_stop.py, warmed up and waiting for `go`: (process, pid)."""
    target = procs.start_workload("matmul_until_stop.py", workdir, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=180, watch=[target]))
    return target, pid


def stop_until_stop(workdir, target):
    """Ends matmul_until_stop.py: the number of steps it ran after `go`."""
    touch(workdir, "stop")
    steps = int(wait_for_file(workdir, "steps", timeout=60, watch=[target]))
    assert target.wait(timeout=60) == 0, target.describe()
    return steps


def elapsed_of(second_line):
    """The `of Y s` of a second status line: seconds since top began tracing."""
    return float(re.search(r" of ([\d.]+) s, ", second_line).group(1))


def tables(text):
    """Each refresh of --batch output (or a screen): (status line, second line, GPU line (or ""),
    {name: (self %, self, total, avg, [self CUDA,] calls)} in the order shown)."""
    out = []
    for block in re.split(r"\n(?=gpuprof top - )", text.strip()):
        lines = block.strip("\n").splitlines()
        assert lines[0].startswith("gpuprof top - "), block
        header = next(i for i, line in enumerate(lines) if line.startswith("Name"))
        columns = len(re.split(r"\s{2,}", lines[header].strip()))
        rows = {}
        for line in lines[header + 1:]:
            if not line.strip():  # the rows end there (a screen's help line comes after)
                break
            cells = re.split(r"\s{2,}", line.strip())
            if len(cells) == columns:
                rows[cells[0]] = tuple(cells[1:])
        out.append((lines[0], lines[1], lines[2], rows))
    return out


def test_batch_refreshes_show_the_running_ops(procs, workdir):
    target, pid = start_loop(procs, workdir)
    touch(workdir, "go")
    began = time.monotonic()
    result = run_gpuprof("top", "-p", str(pid), "-b", "-n", "3", "-i", "0.5", timeout=120)
    ran_s = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    refreshes = tables(result.stdout)
    assert len(refreshes) == 3, result.stdout
    # --interval 0.5: each refresh covers the half second since the one
    # before, no less, and comes at the first look at the clock after it;
    # the first one's starts with the recording's clock, which starts as
    # the probes go in (their attach time is printed). The intervals follow
    # each other, so the time since the start (`of Y s`) is their sum, to
    # the printed 0.1 s. Three of them cannot take less than 1.5 s.
    assert ran_s >= 3 * 0.5, ran_s
    intervals = [float(re.match(r"last ([\d.]+) s of ", second).group(1)) for _, second, _, _ in refreshes]
    attach_s = parse_tracing_line(result.stderr)["attach_ms"] / 1000
    assert 0.5 <= intervals[0] <= 0.5 + REFRESH_LATENESS_S + attach_s, (intervals, attach_s)
    assert all(0.5 <= s <= 0.5 + REFRESH_LATENESS_S for s in intervals[1:]), intervals
    for k, (_, second, _, _) in enumerate(refreshes):
        assert abs(elapsed_of(second) - sum(intervals[:k + 1])) <= 0.05 * (k + 2), (intervals, second)
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
    # The command sleeps 1 s after it has loaded libtorch_cpu (where the
    # probes go in); -i 60: it ends before the first refresh.
    result = run_gpuprof("top", "-b", "-i", "60", "--", TARGET_PYTHON, "-c",
                         "import torch, time; x = torch.ones(8, 8); time.sleep(1); [x.matmul(x) for _ in range(50)]",
                         timeout=120)
    assert result.returncode == 0, result.stderr
    assert "gpuprof: stopped (target exited)" in result.stderr, result.stderr
    (status, second, _, rows), = tables(result.stdout[result.stdout.index("gpuprof top - "):])
    assert second.startswith("since start") and "stopped (target exited)" in second, second
    assert rows["aten::matmul"][4] == "50", rows
    # The summary is since the start, to the end: at least the 1 s sleep,
    # and its ops/s are the calls it shows over that time (it ended at the
    # last refresh: "since start (0.0 s) of 0.0 s" and "0 ops/s" here).
    seconds = float(re.match(r"since start \(([\d.]+) s\) of ", second).group(1))
    ops_per_s = int(re.search(r", (\d+) ops/s,", status).group(1))
    calls = sum(int(cells[4]) for cells in rows.values())
    assert seconds >= 1.0 and calls / (seconds + 0.05) - 0.5 <= ops_per_s <= calls / (seconds - 0.05) + 0.5, (
        status, second, calls)


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
        # Named by this pytest's pid too: another test session on the machine
        # has the same tmp_path names.
        self.socket = f"gpuprof-test-{os.getpid()}-{tmp_path.name}-{Tmux.servers}"
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

    def steady_table(self, pattern, timeout=60):
        """The op table on the screen once `pattern` (a regex, or a function of
        the screen) holds and two captures in a row show the same rows: top
        redraws over the old screen, so one capture may catch a redraw
        halfway. (second status line, {name: cells} in screen order)."""
        matches = pattern if callable(pattern) else lambda screen: re.search(pattern, screen, re.M)
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            screen = self.screen()
            if matches(screen):
                (_, second, _, rows), = tables(screen)
                if last is not None and list(rows.items()) == list(last.items()):
                    return second, rows
                last = rows
            else:
                last = None
            time.sleep(0.1)
        pytest.fail(f"never saw {pattern!r} on a steady screen:\n{self.screen()}")

    def top_paused_on_the_loop(self, pid, workdir):
        """`top -p PID -i 0.5` started on a loop waiting at `go` (echoing
        TOP-EXITED and its status when it ends), the loop let go, and paused
        once aten::mm shows: steady_table() of the paused interval."""
        self.start(f"{GPUPROF} top -p {pid} -i 0.5; echo TOP-EXITED $?; sleep 60")
        # The status line shows once the probes are in: every step is traced.
        self.wait_for(rf"^gpuprof top - {pid} \(python3\)", timeout=120)
        touch(workdir, "go")
        self.wait_for(r"^aten::mm ")
        self.keys("p")
        return self.steady_table(r", PAUSED, ")

    def summary_when_the_loop_stops(self, workdir, target):
        """The loop stopped (stop_until_stop) under top_paused_on_the_loop():
        top ends with its summary. (the loop's steps, the scrollback, the
        summary in it)."""
        steps = stop_until_stop(workdir, target)
        self.wait_for(r"^TOP-EXITED 0$")
        history = self.screen(history=True)
        return steps, history, history[history.rindex("gpuprof top - "):history.index("TOP-EXITED")]

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


# The number keys (docs/top.md: `2`-`6` sort by that column): the sort key
# the second line then names, and the column it orders, counted in the cells
# after Name (Self CPU %, Self CPU, CPU total, CPU avg, # Calls).
SORT_KEYS = {"2": ("self_cpu_time_total", 0), "3": ("self_cpu_time_total", 1), "4": ("cpu_time_total", 2),
             "5": ("cpu_time", 3), "6": ("count", 4)}
COUNT_COLUMN = 4


def cell_value(cell):
    """A table cell as a number: a percentage, a count or a time (us)."""
    if cell.endswith("%"):
        return float(cell[:-1])
    return int(cell) if cell.isdigit() else parse_time_us(cell)


def assert_sorted_by(rows, column):
    """rows (screen order) go largest first by `column`, ties in name order
    (top_view.cpp) where equal cells mean equal values: counts, and Self CPU
    or CPU total under 1 ms, shown to the ns the table holds (a percentage,
    an average, or a time in ms is rounded: equal cells may hide an order)."""
    values = [cell_value(cells[column]) for cells in rows.values()]
    assert values == sorted(values, reverse=True), (column, rows)
    names = list(rows)
    for a, b in zip(names, names[1:]):
        cell = rows[a][column]
        exact = column == COUNT_COLUMN or (column in (1, 2) and cell.endswith("us"))
        if exact and cell == rows[b][column]:
            assert a < b, (column, rows)


def test_keys_on_a_paused_table(procs, workdir, tmp_path, torch_env):
    # docs/top.md: `p` pauses the display (data keeps coming); `2`-`6` sort
    # by that column; `/` filters (Enter applies, Esc cancels, an empty
    # filter shows all). A paused screen holds one interval's table, so each
    # key must show exactly its rows, only reordered or filtered; and the
    # summary since the start, when the loop ends while still paused, must
    # count every step the loop ran, those of the paused time included.
    target, pid = start_until_stop(procs, workdir, torch_env)
    tmux = Tmux(tmp_path, width=110, height=40)
    try:
        second, frozen = tmux.top_paused_on_the_loop(pid, workdir)
        assert "sorted by self_cpu_time_total" in second, second
        # All rows fit (40 lines: 4 above the rows, the help line below), so
        # every sort shows all of them.
        assert "aten::mm" in frozen and len(frozen) <= 40 - 5, frozen
        assert_sorted_by(frozen, 1)
        # Two refreshes (0.5 s each) later, the same interval is still shown.
        interval = second.split(" of ")[0]
        later, rows = tmux.steady_table(lambda screen: ", PAUSED, " in screen and
                                        elapsed_of(screen.splitlines()[1]) >= elapsed_of(second) + 1.0)
        assert later.split(" of ")[0] == interval, (second, later)
        assert list(rows.items()) == list(frozen.items()), (frozen, rows)
        for key in "62453":
            sort, column = SORT_KEYS[key]
            tmux.keys(key)
            _, rows = tmux.steady_table(rf"sorted by {sort}, ")
            assert rows == frozen, (key, frozen, rows)
            assert_sorted_by(rows, column)
            if sort == "self_cpu_time_total":  # the sort it was paused with: the same order
                assert list(rows) == list(frozen), (key, frozen, rows)
        # Esc cancels a filter being typed: the table as it was.
        tmux.keys("/", "a", "d", "d")
        tmux.wait_for(r"^filter: /add_  \(Enter: apply, Esc: cancel\)$")
        tmux.keys("Escape")
        second, rows = tmux.steady_table(r"tab Python lines$")
        assert "filter" not in second and list(rows.items()) == list(frozen.items()), (second, rows)
        # Enter applies it: exactly the rows whose names hold it.
        tmux.keys("/", "a", "d", "d", "Enter")
        second, rows = tmux.steady_table(r", filter 'add', ")
        adds = {name: cells for name, cells in frozen.items() if "add" in name}
        assert "aten::add" in adds and list(rows.items()) == list(adds.items()), (frozen, rows)
        # Esc while typing another keeps the one in force.
        tmux.keys("/", "m", "m")
        tmux.wait_for(r"^filter: /mm_  \(Enter: apply, Esc: cancel\)$")
        tmux.keys("Escape")
        second, rows = tmux.steady_table(r"tab Python lines$")
        assert ", filter 'add', " in second and list(rows.items()) == list(adds.items()), (second, rows)
        # An empty filter shows all again.
        tmux.keys("/", "Enter")
        second, rows = tmux.steady_table(lambda screen: "filter '" not in screen and
                                         re.search(r"tab Python lines$", screen, re.M))
        assert list(rows.items()) == list(frozen.items()), rows
        # The loop ends while the screen is paused: top ends with the summary.
        steps, history, summary = tmux.summary_when_the_loop_stops(workdir, target)
    finally:
        tmux.kill()
    (_, second, _, rows), = tables(summary)
    assert second.startswith("since start (") and second.endswith(" - stopped (target exited)"), second
    calls = {name: int(cells[COUNT_COLUMN]) for name, cells in rows.items()}
    assert {op: calls.get(op) for op in ("aten::matmul", "aten::mm", "aten::add", "aten::relu", "aten::div")} == {
        op: steps for op in ("aten::matmul", "aten::mm", "aten::add", "aten::relu", "aten::div")}, (steps, calls)
    # Every call the probes saw is in the summary: two events each.
    # The full screen stops on q, as its help says; so does its start line.
    assert re.search(r"^gpuprof: tracing .*; q to stop$", history, re.M), history
    stopped = parse_stopped_line(history)
    # top keeps no file: its stop line names none.
    assert (stopped["reason"], stopped["lost"], stopped["path"]) == ("target exited", 0, None), history
    assert stopped["events"] == 2 * sum(calls.values()), (stopped, calls)


def test_python_lines_in_batch(procs, workdir, torch_env):
    # docs/top.md: `--lines` starts on the Python lines view and with
    # --batch prints it: the CPU samples by innermost Python frame, each
    # line's share of the interval's samples; without -F the view says how
    # to turn sampling on.
    target, pid = start_until_stop(procs, workdir, torch_env)
    touch(workdir, "go")
    result = run_gpuprof("top", "-p", str(pid), "-b", "-n", "2", "-i", "1", "-F", "99", "--lines", timeout=120)
    assert result.returncode == 0, result.stderr
    source = (WORKLOADS / "matmul_until_stop.py").read_text().splitlines()
    first = source.index("    while not os.path.exists(stop):") + 1
    step_line = source.index("        x = (x @ w + 1).relu() / 2") + 1
    loop_lines = {f"matmul_until_stop.py({n}): main" for n in range(first, source.index("            return 3") + 2)}
    blocks = re.split(r"\n(?=gpuprof top - )", result.stdout.strip())
    assert len(blocks) == 2, result.stdout
    for block in blocks:
        lines = block.strip().splitlines()
        assert re.match(rf"gpuprof top - {pid} \(python3\), ", lines[0]), block
        assert re.match(r"last [\d.]+ s of [\d.]+ s, Python lines by CPU samples at 99 Hz, ", lines[1]), block
        assert lines[3] == "   Samples         %  Python line (innermost frame)", block
        matches = [re.fullmatch(r" *(\d+) +([\d.]+)%  (.+)", line) for line in lines[4:]]
        assert matches and all(matches), block
        rows = [m.groups() for m in matches]
        total = sum(int(samples) for samples, _, _ in rows)
        assert [share for _, share, _ in rows] == [f"{100 * int(samples) / total:.2f}" for samples, _, _ in rows], block
        # The loop's step line, where it spends its time (in the ops it
        # calls), comes first; any other sample is another line of the loop,
        # os.path.exists of its stop check (the innermost Python frame
        # there), or, from a thread without Python frames (torch's intra-op
        # workers), a native leaf in brackets. That the loop was sampled at
        # all in the second: it is runnable throughout, on 2 CPUs.
        assert rows[0][2] == f"matmul_until_stop.py({step_line}): main", block
        assert [int(samples) for samples, _, _ in rows] == sorted((int(s) for s, _, _ in rows), reverse=True), block
        assert all(line in loop_lines or re.fullmatch(r"<frozen genericpath>\(\d+\): exists|\[.+\]", line)
                   for _, _, line in rows), block
    off = run_gpuprof("top", "-p", str(pid), "-b", "-n", "1", "-i", "0.5", "--lines", timeout=120)
    assert off.returncode == 0, off.stderr
    lines = off.stdout.strip().splitlines()
    assert re.match(r"last [\d.]+ s of [\d.]+ s, Python lines by CPU samples, ", lines[1]), off.stdout
    assert lines[3:] == ["   Samples         %  Python line (innermost frame)",
                         "(sampling is off: start top with -F 99 to see where the CPU time goes by Python line)"], \
        off.stdout
    stop_until_stop(workdir, target)


def test_gpu_figures_of_a_job_started_with_the_cupti_shim(procs, workdir):
    # docs/top.md: a `-p` job started with CUDA_INJECTION64_PATH has the
    # shim: top shows the GPU line and Self CUDA. The stand-in CUPTI plants
    # known times (test_cupti.py): per step cuda_linear 6.5 us of its own,
    # cuda_add 3 us, cuda_replay 5.5 us, and 7 kernels (3 + 1 scale_kernel,
    # reduce_kernel, the graph's 2), besides a memcpy and a memset. Records
    # reach top in batches, before or after their call completes, so an
    # interval's Self CUDA may lack a straddling step's; since the start
    # (the summary when the job exits) every figure is exact.
    steps = 10000
    stand_in = GPUPROF.parent / "tests" / "fake_cupti" / "libcupti.so.13"
    shim = GPUPROF.parent / "libgpuprof_cupti.so"
    driver = procs.start([FAKE_LIBTORCH / "launch_driver", str(steps), workdir / "ready", workdir / "go"],
                         "launch_driver", env={**os.environ, "GPUPROF_CUPTI_LIBRARY": str(stand_in),
                                               "CUDA_INJECTION64_PATH": str(shim)})
    pid = int(wait_for_file(workdir, "ready", timeout=60, watch=[driver]))
    top = procs.start_gpuprof("top", "-p", pid, "-b", "-i", "0.5", "--sort-by", "self_cuda_time_total")
    tracing = top.wait_for_stderr(r"^gpuprof: tracing .*$", timeout=60, watch=[driver])
    # Batch mode reads no keys: Ctrl-C stops it, and its start line says so.
    assert tracing[0].endswith("; Ctrl-C to stop"), tracing[0]
    touch(workdir, "go")
    assert driver.wait(timeout=120) == 0, driver.describe()
    assert top.wait(timeout=60) == 0, top.describe()
    assert driver.stdout() == f"injection ok\nsteps {steps} launches {6 * steps} unexpected errors 0\n", \
        driver.describe()
    assert "gpuprof: CUPTI shim: is tracing" in top.stderr(), top.describe()
    *refreshes, (status, second, gpu_line, rows) = tables(top.stdout())
    # Each refresh has the GPU line from the first GPU record on (whether
    # the first refreshes, around `go`, had one is a matter of timing).
    with_gpu = [bool(gpu) for _, _, gpu, _ in refreshes]
    assert with_gpu == sorted(with_gpu), top.stdout()
    for _, refresh_second, refresh_gpu, _ in refreshes:
        assert "sorted by self_cuda_time_total" in refresh_second, refresh_second
        assert not refresh_gpu or re.fullmatch(r"GPU busy [\d.]+% \(1 device\), \d+ kernels/s", refresh_gpu), \
            refresh_gpu
    assert re.match(rf"gpuprof top - {pid} \(launch_driver\), .*, 0 events lost$", status), status
    m = re.fullmatch(r"since start \(([\d.]+) s\) of [\d.]+ s, sorted by self_cuda_time_total, .* - "
                     r"stopped \(target exited\)", second)
    assert m, second
    planted_us = {"aten::cuda_linear": 6.5, "aten::cuda_replay": 5.5, "aten::cuda_add": 3.0,
                  "aten::cuda_launch_errors": 0.0}
    calls = {"aten::cuda_linear": steps, "aten::cuda_replay": steps, "aten::cuda_add": steps,
             "aten::cuda_launch_errors": 1}
    shown = {name: (rows[name][4], int(rows[name][5])) for name in planted_us if name in rows}
    # Every GPU record reaches top (its stop line below says none was
    # lost), so the figures since the start are the planted ones, exactly.
    # (They were 0.65-2.8% short while top's live join scanned every launch
    # it held for each call that completed: main's own launch, outside every
    # op, is held for 10 s, so the loop slowed as they piled up, drained the
    # GPU ring less often than record's, and the ring overflowed.)
    expected_ms = {name: us * calls[name] / 1000 for name, us in planted_us.items()}
    assert {name: n for name, (_, n) in shown.items()} == calls, rows
    assert {name: text for name, (text, _) in shown.items()} == {
        name: f"{ms:.3f}ms" if ms >= 1 else f"{ms * 1000:.3f}us" for name, ms in expected_ms.items()}, rows
    assert list(rows) == list(planted_us), rows
    # kernels/s is the 7 per step over the time shown (to 0.1 s), rounded.
    seconds = float(m.group(1))
    kernels_per_s = int(re.fullmatch(r"GPU busy [\d.]+% \(1 device\), (\d+) kernels/s", gpu_line).group(1))
    assert 7 * steps / (seconds + 0.05) - 0.5 <= kernels_per_s <= 7 * steps / max(seconds - 0.05, 1e-9) + 0.5, (
        gpu_line, second)
    # gpuprof's own stop line: two events per op call, and the launches
    # (6 per step: the 4 of cuda_linear, the graph's, main's own); no GPU
    # record lost (the line would end "; N GPU records lost (ring buffer
    # full)").
    stopped = re.search(r"^gpuprof: stopped \(target exited\); detach [\d.]+ ms; (\d+) events, 0 lost; "
                        r"(\d+) CUDA launches, 0 lost$", top.stderr(), re.M)
    assert stopped, top.stderr()
    assert (int(stopped[1]), int(stopped[2])) == (2 * sum(calls.values()), 6 * steps), (stopped[0], calls)


def screen_table(screen):
    """The op table on a screen: (column headers after Name, [(name, cells)] in screen order)."""
    lines = screen.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("Name"))
    headers = re.split(r"\s{2,}", lines[header].strip())[1:]
    rows = []
    for line in lines[header + 1:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(headers) + 1, (line, headers)
        rows.append((cells[0], cells[1:]))
    return headers, rows


# docs/top.md, "Narrow terminals": the columns each width keeps for a sort
# key (the unit tests hold the rule; here, what the screen shows).
NARROW_COLUMNS = {
    (70, "count"): ["Self CPU %", "Self CPU", "CPU total", "# Calls"],
    (60, "count"): ["Self CPU %", "Self CPU", "CPU total", "# Calls"],
    (70, "cpu_time"): ["Self CPU", "CPU total", "CPU avg", "# Calls"],
    (60, "cpu_time"): ["Self CPU", "CPU total", "CPU avg", "# Calls"],
}
SORT_KEY_COLUMN = {"count": "# Calls", "cpu_time": "CPU avg"}


def test_narrow_terminals_cut_no_number(procs, workdir, tmp_path):
    # Issue 21, item 4: at 70 columns `# Calls` read `18` for 1865, and at
    # 60 it was gone while being the sort key. A paused screen holds one
    # interval's table, so the same rows at 200 columns are the full-width
    # figures: every cell a narrow screen shows must be one of them,
    # exactly, in the column of the same name, the sort key's column among
    # them; the name may end in `…`. Then the summary top prints when it
    # ends fits the terminal too.
    target, pid = start_until_stop(procs, workdir)
    tmux = Tmux(tmp_path, width=200, height=40)
    try:
        tmux.top_paused_on_the_loop(pid, workdir)

        def steady(pattern, width, want_headers=None):
            """The table once two captures agree, at `width` columns (and,
            given want_headers, once it has them: right after a resize tmux
            shows the old screen cut to the new width until top redraws)."""
            assert tmux.run("resize-window", "-t", "t", "-x", str(width)).returncode == 0
            deadline = time.monotonic() + 30
            last = None
            while time.monotonic() < deadline:
                screen = tmux.screen()
                lines = screen.splitlines()
                if re.search(pattern, screen, re.M) and any(l.startswith("Name") for l in lines) and \
                        max(len(l.rstrip()) for l in lines) <= width:
                    try:
                        table = screen_table(screen)
                    except AssertionError:  # a row cut mid-cell by the resize, before top redrew
                        table = None
                    if table is not None and table == last and (want_headers is None or table[0] == want_headers):
                        return screen, table
                    last = table
                time.sleep(0.1)
            pytest.fail(f"no steady {width}-column screen with {pattern!r}:\n{tmux.screen()}")

        full_width_headers = ["Self CPU %", "Self CPU", "CPU total", "CPU avg", "# Calls"]
        for key, sort in (("6", "count"), ("5", "cpu_time")):
            tmux.keys(key)
            # Back from 60 columns, tmux reflows the old screen's lines to
            # 200 until top redraws: two captures of it agree, so wait for
            # the full-width headers too.
            _, (all_headers, full) = steady(rf"sorted by {sort}, ", 200, full_width_headers)
            assert all_headers == full_width_headers, all_headers
            assert any(name == "aten::mm" for name, _ in full), full
            for width in (70, 60):
                screen, (headers, rows) = steady(rf"sorted by {sort}, ", width, NARROW_COLUMNS[width, sort])
                assert headers == NARROW_COLUMNS[width, sort] and SORT_KEY_COLUMN[sort] in headers, (width, screen)
                assert len(rows) == len(full), (width, screen)
                for (name, cells), (full_name, full_cells) in zip(rows, full):
                    assert name == full_name or (name.endswith("…") and full_name.startswith(name[:-1])), \
                        (width, name, full_name)
                    assert cells == [full_cells[all_headers.index(h)] for h in headers], (width, name, cells, full_cells)
        # The summary at the end, on a 60-column terminal: every line fits
        # (the scrollback's lines joined back: a wrapped line is one), and
        # its counts are the loop's steps, uncut.
        assert tmux.run("resize-window", "-t", "t", "-x", "60").returncode == 0
        steps, history, summary = tmux.summary_when_the_loop_stops(workdir, target)
    finally:
        tmux.kill()
    summary_lines = [line for line in summary.splitlines() if not line.startswith("gpuprof: ")]
    assert all(len(line.rstrip()) <= 60 for line in summary_lines), summary
    headers, rows = screen_table(summary)
    assert "# Calls" in headers, summary
    calls = {name: int(cells[headers.index("# Calls")]) for name, cells in rows}
    assert [calls.get(op) for op in ("aten::matmul", "aten::mm", "aten::add", "aten::relu", "aten::div")] == \
        [steps] * 5, (steps, summary)
    # top keeps no file: nothing says it wrote one.
    assert "wrote" not in history, history


@pytest.mark.parametrize("model", ["resnet18", "encoder"])
def test_module_view_matches_torch_profiler(procs, workdir, torch_env, model):
    # top --with-modules --modules --show-events (docs/modules.md, "Live"):
    # the summary at the target's exit is report --modules' layer table of
    # the same forwards, exact against torch.profiler's per-module ranges
    # (test_modules.py has the reference's long story).
    from test_modules import FORWARDS, check_forward_table
    ref, table = top_module_summary(procs, workdir, torch_env, model, FORWARDS, "eval")
    check_forward_table(table, ref)


@pytest.mark.parametrize("model", ["resnet18", "encoder"])
def test_module_view_places_the_backward_pass_as_report_does(procs, workdir, torch_env, model):
    # Training steps: each backward call in the module whose forward op
    # made its node (docs/modules.md, "How a backward op finds its module"),
    # checked against torch.profiler's sequence-number links as
    # test_modules.py checks report --modules.
    from test_modules import TRAIN_STEPS, check_training_table
    ref, table = top_module_summary(procs, workdir, torch_env, model, TRAIN_STEPS, "train")
    check_training_table(table, ref, torch_env)


def top_module_summary(procs, workdir, torch_env, model, forwards, mode):
    """(reference.json, the module table of top's summary) of
    module_forward.py's steps under `top --with-modules --modules --show-events`."""
    import json
    target = procs.start_workload("module_forward.py", workdir, model, str(forwards), mode, torch_env=torch_env)
    pid = int(wait_for_file(workdir, "ready", timeout=300, watch=[target]))
    ref = json.loads((workdir / "reference.json").read_text())
    # One refresh far away: the batch output is the summary alone.
    gp = procs.start_gpuprof("top", "-p", str(pid), "--with-modules", "--modules", "--show-events", "--batch",
                             "-i", "600")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=120, watch=[target])
    touch(workdir, "go")
    wait_for_file(workdir, "done", timeout=300, watch=[target, gp])
    touch(workdir, "exit")
    assert target.wait(timeout=60) == 0, target.describe()  # unharmed
    assert gp.wait(timeout=60) == 0, gp.describe()
    out = gp.stdout()
    assert re.search(r"^since start \([\d.]+ s\) of [\d.]+ s, modules by their ops' CPU time \(as report "
                     r"--modules\).* - stopped \(target exited\)$", out, re.M), out
    return ref, out[out.index("\nModule ") + 1:]


def test_module_view_keys(procs, workdir, tmp_path):
    # m switches to the module view and back, e lists each module's ops; the
    # loop calls no module: its ops are under [no module].
    target, pid = start_loop(procs, workdir, steps=10 ** 8)
    touch(workdir, "go")
    tmux = Tmux(tmp_path)
    try:
        tmux.start(f"{GPUPROF} top -p {pid} -i 0.5 --with-modules; echo TOP-EXITED $?; sleep 60")
        screen = tmux.wait_for(r"^aten::mm ")
        assert screen.rstrip().endswith("tab Python lines  m modules"), screen
        tmux.keys("m")
        screen = tmux.wait_for(r"^\[no module\] ")
        assert re.search(r"^Module +\| Self CPU total +\| CPU total +\| Number of Calls$", screen, re.M), screen
        assert "modules by their ops' CPU time" in screen and screen.rstrip().endswith("m ops  e module's ops"), \
            screen
        assert not re.search(r"aten::mm", screen), screen
        tmux.keys("e")
        screen = tmux.wait_for(r"^├── aten::mm +\|")
        tmux.keys("t")
        tmux.wait_for(r"^since start")
        tmux.keys("m")
        tmux.wait_for(r"^Name ")
        tmux.keys("q")
        tmux.wait_for(r"^TOP-EXITED 0$")
        assert target.running(), target.describe()
    finally:
        tmux.kill()


def test_module_view_needs_with_modules():
    for args, message in [(["--modules"], "--modules requires --with-modules"),
                          (["-a", "--with-modules"], "--with-modules shows one process's modules: use top -p PID "
                                                     "--with-modules")]:
        result = run_gpuprof("top", *([] if "-a" in args else ["-p", "1"]), *args)
        assert result.returncode == 2 and message in result.stderr, (args, result.stderr)

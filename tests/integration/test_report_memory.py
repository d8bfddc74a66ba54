"""report's op table streams the events (docs/report.md, "Memory"): its peak
memory does not grow with the recording, and its counts stay exact.

Real recordings of tests/workloads/small_op_loop.py (one torch.add per loop
turn, plus one before the loop) on both torches: a short and a 4x longer
one. The table's aten::add calls are exactly the adds the loop made; the
peak RSS of `report` on the long recording is within a few MiB of that on
the short one, while an output that reads the recording whole (--folded)
grows by tens of MiB for the same events. RSS is measured by a small
interpreter that runs report and reads wait4's ru_maxrss (a child forked
from pytest would count pytest's memory)."""
import re
import subprocess

from conftest import GPUPROF, TARGET_PYTHON, parse_table, run_gpuprof

PEAK_RSS = """
import os, subprocess, sys
proc = subprocess.Popen(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
err = proc.stderr.read()
_, status, usage = os.wait4(proc.pid, 0)
if os.waitstatus_to_exitcode(status) != 0:
    sys.exit(err.decode())
print(usage.ru_maxrss)
"""


def peak_rss_kib(*report_args):
    run = subprocess.run([TARGET_PYTHON, "-c", PEAK_RSS, str(GPUPROF), "report", *map(str, report_args)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return int(run.stdout)


def record_loop(torch_env, tmp_path, seconds):
    out = tmp_path / f"loop-{seconds}s.gpuprof"
    rec = run_gpuprof("record", "-q", "-o", out, "--", *torch_env.argv("small_op_loop.py", str(seconds)),
                      timeout=300)
    assert rec.returncode == 0, rec.stderr
    loops = re.search(r"^loops (\d+)$", rec.stdout, re.M)
    assert loops, rec.stdout
    return out, int(loops.group(1))


def test_table_memory_is_flat_in_the_events(torch_env, tmp_path):
    runs = []
    for seconds in (1, 4):
        path, loops = record_loop(torch_env, tmp_path, seconds)
        report = run_gpuprof("report", path, "--row-limit", "-1")
        assert report.returncode == 0, report.stderr
        table = parse_table(report.stdout)
        # One torch.add per loop turn and one before: every call counted.
        assert table.calls()["aten::add"] == loops + 1, report.stdout
        runs.append((loops, peak_rss_kib(path), peak_rss_kib(path, "--folded")))
    (short_loops, short_table, short_whole), (long_loops, long_table, long_whole) = runs
    assert long_loops > 2 * short_loops, runs
    summary = (f"aten::add calls {short_loops + 1} -> {long_loops + 1}: table peak RSS {short_table} -> "
               f"{long_table} KiB, --folded {short_whole} -> {long_whole} KiB")
    print(summary)
    # Whole, each op event costs ~90 bytes of report's memory (two per add);
    # streamed, none: allow 4 MiB of allocator noise.
    assert long_table - short_table < 4096, summary
    assert long_whole - short_whole > 40 * (long_loops - short_loops) * 2 / 1024, summary

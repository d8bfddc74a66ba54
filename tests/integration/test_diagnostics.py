"""Nothing is lost silently: what the recorder could not attach, read or name,
and what the ring buffer dropped, is counted in the record file and shown
under the table with a hint of what to change."""
import re
import signal
import subprocess
import time

from conftest import GPUPROF, parse_stopped_line, run_gpuprof, touch, wait_for_file

TORCH_ONELINER = ("import torch\n"
                  "x = torch.ones(64, dtype=torch.float64)\n"
                  "for _ in range(20000):\n"
                  "    x = torch.add(x, 1.0)\n"
                  "assert float(x[0]) == 20001.0\n")


def test_recorder_warnings_are_kept_in_the_file_and_shown_under_the_table(tmp_path):
    out = tmp_path / "w.gpuprof"
    result = run_gpuprof("record", "-o", out, "--", "/usr/bin/python3", "-c", TORCH_ONELINER,
                         env={"CUDA_INJECTION64_PATH": "/nonexistent/other_injection.so"})
    assert result.returncode == 0, result.stderr
    warning = ("gpuprof: warning: CUDA_INJECTION64_PATH is already set (/nonexistent/other_injection.so): "
               "gpuprof's CUPTI shim is not injected, no GPU times")
    assert warning in result.stderr.splitlines()
    assert warning in result.stdout.splitlines(), result.stdout  # record's own table
    report = run_gpuprof("report", out)
    assert report.returncode == 0, report.stderr
    assert warning in report.stdout.splitlines(), report.stdout
    # A plain run has no such line.
    plain = run_gpuprof("record", "-o", tmp_path / "p.gpuprof", "--", "/usr/bin/python3", "-c", TORCH_ONELINER)
    assert plain.returncode == 0, plain.stderr
    assert "warning" not in plain.stdout


def test_ring_buffer_overflow_is_counted_with_a_hint(procs, workdir, tmp_path):
    """A collector that cannot keep up (stopped here with SIGSTOP) loses events: counted, with the fix."""
    target = procs.start_workload("busy_loop.py", workdir)
    wait_for_file(workdir, "ready", timeout=120, watch=[target])
    out = tmp_path / "o.gpuprof"
    gp = procs.start_gpuprof("record", "-p", target.pid, "-o", out, "--ring-buffer", "1")
    gp.wait_for_stderr(r"^gpuprof: tracing ", timeout=60, watch=[target])
    gp.send(signal.SIGSTOP)
    time.sleep(1.0)  # the loop makes some 8 MB of events a second: 1 MiB fills at once
    gp.send(signal.SIGCONT)
    time.sleep(0.3)
    gp.send(signal.SIGINT)
    assert gp.wait(timeout=60) == 0, gp.describe()
    stopped = parse_stopped_line(gp.stderr())
    lost = stopped["lost"]
    assert lost > 1000, gp.stderr()
    expected = f"gpuprof: {lost} events lost (ring buffer full); counts are low; try a larger --ring-buffer"
    assert expected in gp.stdout().splitlines(), gp.stdout()
    report = run_gpuprof("report", out)
    assert expected in report.stdout.splitlines(), report.stdout
    touch(workdir, "stop")
    assert target.wait(timeout=60) == 0, target.describe()


def test_samples_without_symbols_are_counted(tmp_path):
    """The count under the table is exactly the samples whose leaf has no symbol in the folded stacks."""
    out = tmp_path / "s.gpuprof"
    result = run_gpuprof("record", "-F", "999", "-q", "-o", out, "--", "/usr/bin/python3", "-c", TORCH_ONELINER)
    assert result.returncode == 0, result.stderr
    # Bytes: a frame read from a code object the exiting interpreter was
    # freeing can hold any bytes (folded names are the target's, not ours).
    folded = subprocess.run([GPUPROF, "report", out, "--folded", "--metric", "samples"], capture_output=True,
                            timeout=120)
    assert folded.returncode == 0, folded.stderr
    unresolved = 0
    for line in folded.stdout.decode(errors="replace").splitlines():
        stack, value = line.rsplit(" ", 1)
        frames = stack.split(";")
        if any(f == "[unknown]" or re.fullmatch(r"[^;!]+\+0x[0-9a-f]+", f) for f in frames):
            unresolved += int(value)
    report = run_gpuprof("report", out)
    m = re.search(r"^gpuprof: (\d+) CPU samples or CUDA launches are in code without a symbol", report.stdout, re.M)
    if unresolved == 0:
        assert m is None, report.stdout
    else:
        assert m and int(m.group(1)) == unresolved, (unresolved, report.stdout)
    assert unresolved > 0, "python3.11's static functions have no symbols: some samples land there"

"""Nothing is lost silently: what the recorder could not attach, read or name,
and what the ring buffer dropped, is counted in the record file and shown
under the table with a hint of what to change; a corrupt chunk of a record
file is skipped and named on stderr, the rest reported (`--strict` refuses)."""
import collections
import re
import struct
import signal
import subprocess
import time

from conftest import GPUPROF, parse_stopped_line, parse_table, run_gpuprof, touch, wait_for_file
from record_chunks import OP_EVENTS, OP_TABLE, op_events, record_chunks

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


ENTRY, RANGE_BEGIN = 1, 6  # the events that open a call (bpf/op_tracer_abi.h)


def op_table_names(payload):
    """The op names of a version 5 OP_TABLE payload: u32 count, then per op three
    strings (name, overload, symbol) and u32 arg count, tensor args and kind."""
    (count,), pos, names = struct.unpack_from("<I", payload, 0), 4, []
    for _ in range(count):
        strings = []
        for _ in range(3):
            (n,) = struct.unpack_from("<I", payload, pos)
            strings.append(payload[pos + 4:pos + 4 + n].decode())
            pos += 4 + n
        names.append(strings[0])
        pos += 12
    return names


def calls_opened(chunk_type, payload, names):
    """The calls each op name begins in an events payload."""
    calls = collections.Counter()
    for kind, op_id in op_events(chunk_type, payload):
        if kind in (ENTRY, RANGE_BEGIN):
            calls[names[op_id]] += 1
    return calls


def test_a_corrupt_events_chunk_is_skipped_and_named_and_strict_refuses(tmp_path):
    """docs/report.md, "Corrupt recordings": one flipped byte inside an OP_EVENTS chunk in the
    middle of a real recording costs that chunk's calls and nothing else."""
    out = tmp_path / "c.gpuprof"
    result = run_gpuprof("record", "-q", "-o", out, "--", "/usr/bin/python3", "-c", TORCH_ONELINER)
    assert result.returncode == 0, result.stderr
    whole = run_gpuprof("report", out, "--row-limit", "-1")
    assert whole.returncode == 0 and "warning" not in whole.stderr, whole.stderr
    data = bytearray(out.read_bytes())
    chunks = record_chunks(data)
    names = op_table_names(next(payload for _, t, payload, _ in chunks if t == OP_TABLE))
    events = [(i, off, payload, stored) for i, (off, t, payload, stored) in enumerate(chunks) if t == OP_EVENTS]
    assert len(events) >= 3, f"{len(events)} OP_EVENTS chunks: the workload should make many"
    number, offset, payload, stored = events[len(events) // 2]
    lost = calls_opened(OP_EVENTS, payload, names)
    assert sum(lost.values()) > 0
    data[offset + 16 + stored // 2] ^= 0x01
    out.write_bytes(bytes(data))

    report = run_gpuprof("report", out, "--row-limit", "-1")
    assert report.returncode == 0, report.stderr
    first_event = struct.unpack_from("<Q", payload, 0)[0]
    said = (f"gpuprof: warning: {out}: corrupt chunk {number + 1} (OP_EVENTS) at offset {offset}: checksum mismatch; "
            f"skipped: lost the op events of a chunk (from event {first_event} on: the next such chunk says how many)")
    assert report.stderr.splitlines() == [said], report.stderr
    before, after = parse_table(whole.stdout).calls(), parse_table(report.stdout).calls()
    expected = {name: before[name] - lost[name] for name in before if before[name] > lost[name]}
    assert after == expected, (lost, before, after)

    strict = run_gpuprof("report", out, "--strict")
    assert strict.returncode == 1 and strict.stdout == "", strict.stdout
    assert strict.stderr.splitlines() == [
        f"gpuprof: error: {out}: corrupt chunk {number + 1} at offset {offset}: checksum mismatch"], strict.stderr

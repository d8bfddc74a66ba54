#!/usr/bin/env python3
"""Record file size per op event, and the recorder's CPU per event.

    sudo /usr/bin/python3 bench/record_size.py [--seconds 5] [--baseline GPUPROF] [--keep DIR]

Runs tests/workloads/small_op_loop.py (torch.add on 1-element tensors, the
smallest ops: the most events per second), attaches `gpuprof record -p PID
-d SECONDS` to it, and prints for the file it wrote:
  - bytes per op event: the file's size over the op events in it;
  - the version 5 figure for the same events: the file as the version 5
    writer would have written it (every chunk's payload before compression,
    op events as 32-byte raw events), computed from the chunks themselves;
  - the gpuprof process's CPU time (user + system, from wait4) per op event:
    that of a 1 s recording taken from it, over the events it recorded more
    (attaching costs the same in both).
With --baseline, the same for another gpuprof build (e.g. one of format
version 5) run right after on the same loop, for a like-with-like CPU
figure. docs/record-file.md, "Size", has the figures of this VM.
"""
import argparse
import os
import pathlib
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from record_chunks import EVENTS, OP_EVENTS, RAW_EVENT_BYTES, op_events, record_chunks  # noqa: E402

GPUPROF = ROOT / "build" / "gpuprof"
LOOP = ROOT / "tests" / "workloads" / "small_op_loop.py"


def measure_file(path):
    """(op events, file bytes, bytes of the same file in format version 5)."""
    data = path.read_bytes()
    if data[:8] != b"GPUPROF\0":
        sys.exit(f"record_size: {path} is not a record file")
    events, v5_bytes = 0, 16
    for _, chunk_type, payload, _ in record_chunks(data):
        count = len(op_events(chunk_type, payload)) if chunk_type in (EVENTS, OP_EVENTS) else 0
        events += count
        v5_bytes += 16 + (count * RAW_EVENT_BYTES if chunk_type == OP_EVENTS else len(payload))
    return events, len(data), v5_bytes


def record(gpuprof, seconds, workdir, label):
    """Records the loop for `seconds`: (record file, gpuprof's CPU seconds)."""
    ready = workdir / f"ready-{label}"
    out = workdir / f"{label}.gpuprof"
    loop = subprocess.Popen([sys.executable, str(LOOP), str(seconds + 60), str(ready)],
                            stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() or not ready.read_text():
            if loop.poll() is not None or time.monotonic() > deadline:
                sys.exit("record_size: the loop did not start")
            time.sleep(0.1)
        rec = subprocess.Popen([str(gpuprof), "record", "-p", str(loop.pid), "-d", str(seconds), "-o", str(out)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(rec.pid, 0)
        rec.returncode = os.waitstatus_to_exitcode(status)
        err = rec.stderr.read().decode()
        if rec.returncode != 0:
            sys.exit(f"record_size: {gpuprof} record failed ({rec.returncode}): {err}")
        return out, usage.ru_utime + usage.ru_stime
    finally:
        loop.send_signal(signal.SIGKILL)
        loop.wait()


def report(label, gpuprof, seconds, workdir):
    """Records the loop for 1 s and for 1 + seconds: the file figures of the
    long run, and the CPU per event of what the long run recorded more (the
    attach, the symbols and the probe calibration cost the same in both)."""
    short, short_cpu = record(gpuprof, 1, workdir, label + "-short")
    path, cpu_s = record(gpuprof, 1 + seconds, workdir, label)
    short_events = measure_file(short)[0]
    events, size, v5 = measure_file(path)
    if events <= short_events:
        sys.exit(f"record_size: {path} holds no more op events than the 1 s recording")
    print(f"{label}: {gpuprof}")
    print(f"  op events        {events:,} in {1 + seconds} s")
    print(f"  file             {size:,} bytes, {size / events:.2f} bytes per op event")
    print(f"  as version 5     {v5:,} bytes, {v5 / events:.2f} bytes per op event")
    print(f"  gpuprof CPU      {cpu_s:.2f} s ({short_cpu:.2f} s for {short_events:,} events in 1 s): "
          f"{(cpu_s - short_cpu) * 1e9 / (events - short_events):.0f} ns per op event recorded more")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--baseline", type=pathlib.Path, help="another gpuprof build to measure the same way")
    parser.add_argument("--keep", type=pathlib.Path, help="keep the record files in this directory")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("record_size: run as root (gpuprof record attaches BPF probes)")
    with tempfile.TemporaryDirectory(prefix="record_size.") as tmp:
        workdir = args.keep or pathlib.Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        report("this build", GPUPROF, args.seconds, workdir)
        if args.baseline:
            report("baseline", args.baseline, args.seconds, workdir)


if __name__ == "__main__":
    main()

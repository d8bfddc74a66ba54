#!/usr/bin/env python3
"""Chrome trace size: gpuprof's against torch.profiler's, for the same region.

    sudo /usr/bin/python3 bench/trace_size.py [--python /usr/bin/python3] [--chroot ROOT] [--keep DIR]

Runs tests/workloads/region.py (one resnet18 forward pass, batch 5,
224x224) with torch.profiler (CPU) around the region and `gpuprof record -p
PID` attached over the same region, then compares torch's
prof.export_chrome_trace() of the region with `gpuprof report
--chrome-trace` of the recording: the same information (every op call as a
complete event on its thread, process and thread tracks), plain and
gzipped. Prints both sizes, the ratio and the op calls each trace holds.
Exit status 1 if gpuprof's trace is larger than torch's.

torch's export depends on its build: Debian's torch 1.13 (CPU, no Kineto)
writes its legacy EventList trace (a bare event list, integer microseconds,
empty args); Kineto builds (torch 2.x: --chroot /srv/gpuprof-trixie, the
torch 2.6 of scripts/torch2-chroot.sh) write bigger events (External id,
Record function id, ...), like with like. The script prints which it got.
With --chroot the workload runs in that chroot (copied in; the handshake
directory must be under /tmp, which the chroot shares).
"""
import argparse
import gzip
import json
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPUPROF = ROOT / "build" / "gpuprof"
WORKLOADS = ROOT / "tests" / "workloads"
CHROOT_WORKLOADS = "/opt/gpuprof-tests/workloads"
TIMEOUT_S = 180


def wait_for(path, procs):
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        for p in procs:
            if p.poll() is not None:
                sys.exit(f"trace_size: {p.args[0]} exited with {p.returncode} before {path.name}")
        if time.monotonic() > deadline:
            sys.exit(f"trace_size: timed out waiting for {path}")
        time.sleep(0.01)


def wait_for_stderr_line(proc, prefix):
    deadline = time.monotonic() + TIMEOUT_S
    seen = []
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            sys.exit("trace_size: gpuprof exited before tracing:\n" + "".join(seen))
        seen.append(line)
        if line.startswith(prefix):
            return
    sys.exit("trace_size: gpuprof did not start tracing:\n" + "".join(seen))


def events(trace):
    """A trace's events: torch's legacy export is a bare list."""
    return trace if isinstance(trace, list) else trace["traceEvents"]


def op_calls(trace):
    return sum(1 for e in events(trace) if e.get("ph") == "X" and e.get("name", "").startswith("aten::"))


def gzipped_size(path):
    return len(gzip.compress(path.read_bytes(), compresslevel=6))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", default="/usr/bin/python3", help="interpreter with torch and torchvision")
    parser.add_argument("--chroot", metavar="ROOT", help="run --python in this chroot (torch 2.x, Kineto)")
    parser.add_argument("--keep", help="keep the traces in this directory")
    args = parser.parse_args()
    work = pathlib.Path(args.keep or tempfile.mkdtemp(prefix="gpuprof-trace-size-"))
    work.mkdir(parents=True, exist_ok=True)
    handshake = work / "handshake"
    handshake.mkdir(exist_ok=True)
    for name in ("ready", "go", "region-done", "dump", "torch_ops.json"):
        (handshake / name).unlink(missing_ok=True)
    if args.chroot:
        inside = pathlib.Path(args.chroot) / CHROOT_WORKLOADS.lstrip("/")
        shutil.rmtree(inside, ignore_errors=True)
        shutil.copytree(WORKLOADS, inside, ignore=shutil.ignore_patterns("__pycache__"))
        argv = ["chroot", args.chroot, args.python, f"{CHROOT_WORKLOADS}/region.py"]
    else:
        argv = [args.python, str(WORKLOADS / "region.py")]
    target = subprocess.Popen(argv + [str(handshake), "--torch-trace"], stdout=subprocess.DEVNULL)
    recording = work / "resnet.gpuprof"
    try:
        wait_for(handshake / "ready", [target])
        gp = subprocess.Popen([str(GPUPROF), "record", "-p", str(target.pid), "-q", "-o", str(recording)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        wait_for_stderr_line(gp, "gpuprof: tracing ")
        (handshake / "go").touch()
        wait_for(handshake / "region-done", [target])
        gp.send_signal(signal.SIGINT)
        if gp.wait(timeout=TIMEOUT_S) != 0:
            sys.exit(f"trace_size: gpuprof record failed:\n{gp.stderr.read()}")
        (handshake / "dump").touch()
        if target.wait(timeout=TIMEOUT_S) != 0:
            sys.exit(f"trace_size: the workload failed ({target.returncode})")
    finally:
        if target.poll() is None:
            target.kill()
    ours = work / "gpuprof_trace.json"
    made = subprocess.run([str(GPUPROF), "report", str(recording), "--chrome-trace", str(ours)],
                          capture_output=True, text=True, timeout=TIMEOUT_S)
    if made.returncode != 0:
        sys.exit(f"trace_size: gpuprof report failed:\n{made.stderr}")
    theirs = handshake / "torch_trace.json"
    ours_doc, theirs_doc = json.loads(ours.read_text()), json.loads(theirs.read_text())
    rows = [("torch.profiler export_chrome_trace", theirs, op_calls(theirs_doc)),
            ("gpuprof report --chrome-trace", ours, op_calls(ours_doc))]
    kind = "legacy EventList (no Kineto)" if isinstance(theirs_doc, list) else "Kineto"
    torch_version = subprocess.run(argv[:-1] + ["-c", "import torch; print(torch.__version__)"],
                                   capture_output=True, text=True).stdout.strip()
    print(f"resnet18 forward (batch 5), same region, this machine; torch {torch_version}, its trace: {kind}")
    print(f"{'trace':40} {'op calls':>9} {'bytes':>12} {'gzipped':>10}")
    for name, path, calls in rows:
        print(f"{name:40} {calls:9d} {path.stat().st_size:12d} {gzipped_size(path):10d}")
    ratio = ours.stat().st_size / theirs.stat().st_size
    gz_ratio = gzipped_size(ours) / gzipped_size(theirs)
    print(f"gpuprof / torch.profiler: {ratio:.2f}x plain, {gz_ratio:.2f}x gzipped")
    if not args.keep:
        for path in (ours, theirs, recording):
            path.unlink(missing_ok=True)
    return 0 if ratio <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())

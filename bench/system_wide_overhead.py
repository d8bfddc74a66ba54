"""What `gpuprof record -a` costs processes that do not use torch.

Two non-torch workloads, measured with no gpuprof, then under `record -a`
(op tracing of PyTorch processes only), then under `record -a -F 99` (CPU
samples of every process too), in interleaved rounds so that machine drift
hits every variant alike:

  spinner  a pure-Python loop (no torch) that measures its own speed on
           request: the median of 4 windows of 0.5 s, in loop turns per
           second. Under -F its samples walk its Python frames.
  exec     this script running /bin/true N times (fork, exec, the dynamic
           loader's executable mmaps): every executable mmap on the
           machine passes gpuprof's library-load tracepoint, which keeps
           only libtorch_cpu and libcudart, in the kernel.

Prints each variant's median over the rounds as a ratio to no gpuprof
(speed: higher is better; time per exec: lower is better), and the raw
figures. The goal (issue 10): nothing beyond the sampling rate.

Usage: sudo /usr/bin/python3 bench/system_wide_overhead.py [--rounds 5] [--execs 300]
"""
import argparse
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
GPUPROF = ROOT / "build" / "gpuprof"
TIMEOUT_S = 120

SPINNER = r"""
import json, os, statistics, sys, time
work = sys.argv[1]
open(os.path.join(work, "ready"), "w").close()
x = 0
while not os.path.exists(os.path.join(work, "stop")):
    requests = [f for f in os.listdir(work) if f.startswith("measure-")]
    if not requests:
        for i in range(20000):
            x = (x * 31 + i) % 1000003
        continue
    label = requests[0][len("measure-"):]
    os.unlink(os.path.join(work, requests[0]))
    windows = []
    for _ in range(4):
        turns, t0 = 0, time.monotonic()
        while time.monotonic() - t0 < 0.5:
            for i in range(2000):
                x = (x * 31 + i) % 1000003
            turns += 1
        windows.append(turns / (time.monotonic() - t0))
    tmp = os.path.join(work, ".rate.tmp")
    with open(tmp, "w") as f:
        json.dump(statistics.median(windows), f)
    os.rename(tmp, os.path.join(work, "rate-" + label))
"""

VARIANTS = [("none", None), ("record -a", ["record", "-a", "-q", "-o", "/dev/null"]),
            ("record -a -F 99", ["record", "-a", "-F", "99", "-q", "-o", "/dev/null"])]


def wait_for(path, proc, what):
    deadline = time.monotonic() + TIMEOUT_S
    while not path.exists():
        if proc.poll() is not None:
            sys.exit(f"{what} exited ({proc.returncode}) before {path.name}")
        if time.monotonic() > deadline:
            sys.exit(f"timed out waiting for {path}")
        time.sleep(0.01)


def start_gpuprof(argv):
    proc = subprocess.Popen([str(GPUPROF), *argv], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            sys.exit(f"gpuprof {' '.join(argv)} exited before it started")
        if line.startswith("gpuprof: system-wide: "):
            return proc
    sys.exit("gpuprof did not start")


def exec_seconds(n):
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(["/bin/true"], check=True)
    return (time.perf_counter() - t0) / n


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--execs", type=int, default=300)
    args = parser.parse_args()
    if not GPUPROF.exists():
        sys.exit(f"{GPUPROF} is missing: run make first")
    work = pathlib.Path(tempfile.mkdtemp(prefix="gpuprof-system-wide-"))
    spinner = subprocess.Popen(["/usr/bin/python3", "-c", SPINNER, str(work)])
    try:
        wait_for(work / "ready", spinner, "the spinner")
        speed = {name: [] for name, _ in VARIANTS}
        execs = {name: [] for name, _ in VARIANTS}
        for r in range(args.rounds):
            for name, argv in VARIANTS:
                gp = start_gpuprof(argv) if argv else None
                label = f"{r}-{name.replace(' ', '_')}"
                (work / f"measure-{label}").touch()
                wait_for(work / f"rate-{label}", spinner, "the spinner")
                speed[name].append(json.loads((work / f"rate-{label}").read_text()))
                execs[name].append(exec_seconds(args.execs))
                if gp:
                    gp.send_signal(2)
                    gp.wait(timeout=TIMEOUT_S)
                    if gp.returncode != 0:
                        sys.exit(f"gpuprof {' '.join(argv)} failed: {gp.stderr.read()}")
            print(f"round {r + 1}/{args.rounds}: " +
                  ", ".join(f"{n} {speed[n][-1]:.0f} turns/s {execs[n][-1] * 1e6:.0f} us/exec" for n, _ in VARIANTS),
                  flush=True)
    finally:
        (work / "stop").touch()
        spinner.wait(timeout=TIMEOUT_S)
    base_speed = statistics.median(speed["none"])
    base_exec = statistics.median(execs["none"])
    print(f"\nnon-torch processes under gpuprof, medians of {args.rounds} interleaved rounds "
          f"(spinner: turns/s, higher is better; exec: us per /bin/true, lower is better)")
    for name, _ in VARIANTS:
        s, e = statistics.median(speed[name]), statistics.median(execs[name])
        print(f"  {name:16s} spinner {s:9.0f}/s ({s / base_speed:.3f}x)   exec {e * 1e6:7.0f} us ({e / base_exec:.3f}x)")


if __name__ == "__main__":
    main()

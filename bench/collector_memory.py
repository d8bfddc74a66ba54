#!/usr/bin/env python3
"""The collector's memory over a long recording: is it flat?

    sudo /usr/bin/python3 bench/collector_memory.py [--minutes 30] [--interval 10]
         [--output /dev/null] [-- RECORD OPTIONS...]

Starts tests/workloads/busy_loop.py (small torch ops: some 250,000 op events
a second under probes on a 2-vCPU VM), attaches `gpuprof record -p PID -o
OUTPUT` with the given options (default: -F 99 --with-stack --record-shapes,
the mode that keeps the most state: frames, stacks, shapes), and samples
gpuprof's VmRSS and RssAnon (/proc/PID/status) every INTERVAL seconds for
MINUTES. -o /dev/null (the default) measures the collector alone: a record
file grows with the events by design (bounded with --rotate/--keep). Prints
the samples per minute, RSS at 1 minute, half-way and the end, the maximum,
the least-squares slope over the second half (KiB per minute) and a verdict:
"flat" when the second half grew less than 1 MiB. Checks at the end that the
loop is alive and its results were never disturbed.
"""
import argparse
import os
import platform
import socket
import statistics
import sys
import time

from loop_bench import BusyLoop, attach, detach

WHO = "collector_memory"
FLAT_GROWTH_KIB = 1024


def status_kib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon"):
                fields[key] = int(value.split()[0])
    return fields


def slope_kib_per_min(points):
    xs = [t / 60 for t, _ in points]
    ys = [kib for _, kib in points]
    mx, my = statistics.mean(xs), statistics.mean(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--interval", type=float, default=10)
    parser.add_argument("--output", default="/dev/null")
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("record_options", nargs="*", default=["-F", "99", "--with-stack", "--record-shapes"])
    args = parser.parse_args()
    print(f"{socket.gethostname()}: {os.cpu_count()} CPUs, kernel {platform.release()}, "
          f"{time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
    loop = BusyLoop(args.python, WHO, max_run_s=args.minutes * 60 + 300)
    try:
        argv = ["record", "-p", loop.pid, "-o", args.output, "-q", *args.record_options]
        print("gpuprof " + " ".join(map(str, argv)), flush=True)
        gp, _ = attach(argv, WHO)
        start = time.monotonic()
        points = []
        print(f"{'min':>6} {'VmRSS MiB':>10} {'RssAnon MiB':>12}", flush=True)
        while (elapsed := time.monotonic() - start) < args.minutes * 60:
            if gp.poll() is not None:
                sys.exit(f"{WHO}: gpuprof exited early:\n{gp.stderr.read()}")
            kib = status_kib(gp.pid)
            points.append((elapsed, kib["VmRSS"], kib["RssAnon"]))
            print(f"{elapsed / 60:6.2f} {kib['VmRSS'] / 1024:10.1f} {kib['RssAnon'] / 1024:12.1f}", flush=True)
            time.sleep(args.interval)
        rest = detach(gp, WHO)
        rate = loop.rate("end")
        result = loop.stop()
    finally:
        loop.kill()
    rss = [(t, v) for t, v, _ in points]
    at = lambda minute: min(rss, key=lambda p: abs(p[0] - minute * 60))[1] / 1024  # noqa: E731
    second_half = [p for p in rss if p[0] >= args.minutes * 30]
    growth = second_half[-1][1] - second_half[0][1]
    slope = slope_kib_per_min(second_half)
    print(f"VmRSS: {at(1):.1f} MiB at 1 min, {at(args.minutes / 2):.1f} MiB at {args.minutes / 2:g} min, "
          f"{rss[-1][1] / 1024:.1f} MiB at the end, max {max(v for _, v in rss) / 1024:.1f} MiB")
    # Growth per window of a third of the run: the caches fill and then cycle
    # (collect/sample_collector.cpp, keep_bounded), so growth should die out.
    third = args.minutes * 20
    for k in range(3):
        window = [v for t, v in rss if k * third <= t < (k + 1) * third + 1e-9]
        if len(window) > 1:
            print(f"minutes {k * third / 60:4.1f}-{(k + 1) * third / 60:4.1f}: {window[-1] - window[0]:+6d} KiB")
    print(f"second half: {growth:+d} KiB, slope {slope:+.1f} KiB/min -> "
          f"{'flat' if abs(growth) < FLAT_GROWTH_KIB else 'GROWING'}")
    print(rest.strip().splitlines()[-1] if rest.strip() else "")
    print(f"loop at the end: {rate:.0f} steps/s; cycles {result['cycles']}, mismatches {result['mismatches']}")
    return 0 if result["mismatches"] == 0 and abs(growth) < FLAT_GROWTH_KIB else 1


if __name__ == "__main__":
    sys.exit(main())

"""Threads target: ops in 3 Python threads plus the main thread, under torch.profiler.

Usage: threads_region.py WORKDIR

Same file protocol as region.py: warm up, write `ready` (pid), wait
for `go`; run the region; write `region-done`; wait for `dump`; write
`torch_ops.json` ({key: {count, self_cpu_time_total, cpu_time_total}}) and
exit 0. It also writes `torch_raw_counts.json`: {name: count} of
torch.profiler's raw events before its table post-processing.

torch.profiler in torch 1.13 records only the thread that enabled it (its
RecordFunction callbacks are thread-local unless on-demand, which 1.13's
Python API cannot select), so every thread profiles itself: the main thread
enters `with torch.profiler.profile(activities=[CPU])`, starts three
threads, and each of them runs its op mix inside its own
`torch.profiler.profile(activities=[CPU])`; after a barrier all four run
their mixes concurrently, ITERATIONS times, each with nested ops of its own:
  thread "linear":  F.linear with bias  (linear -> t -> transpose; addmm)
  thread "matmul":  3-d @ 2-d matmul    (matmul -> reshape/view/mm ...)
  thread "softmax": F.log_softmax + F.gelu
  main:             F.conv2d + F.max_pool2d
The threads are started and joined inside the main thread's region, and the
four profiles are summed op by op into torch_ops.json (and the raw counts
into torch_raw_counts.json).

torch 2.x cannot run a profiler per thread at once (the threads' profilers
fail with "Can't disable Kineto profiler when it's not running"), and its
profiler too records only the thread that enabled it. There the counts are
the known answer instead: before `ready`, each op mix runs once under
torch.profiler in the main thread; its counts times ITERATIONS, summed over
the mixes, are what the four threads' region must show (times are 0). Python releases the GIL inside torch ops, so on
two cores the threads' ops really interleave. torch.set_num_threads(1) keeps
intra-op worker threads out of the picture.
Every wait is bounded (WAIT_TIMEOUT_S); a timeout exits with status 3.
"""
import collections
import json
import os
import sys
import threading

from handshake import signal_file, wait_for_file  # noqa: E402

WAIT_TIMEOUT_S = 120.0
ITERATIONS = 150






def main():
    workdir = sys.argv[1]
    import torch
    import torch.nn.functional as F
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x_lin, w_lin, b_lin = torch.randn(8, 32), torch.randn(16, 32), torch.randn(16)
    x_mm, w_mm = torch.randn(4, 8, 32), torch.randn(32, 8)
    x_sm = torch.randn(8, 64)
    x_conv, w_conv = torch.randn(1, 3, 16, 16), torch.randn(4, 3, 3, 3)

    def linear_work(iterations=ITERATIONS):
        for _ in range(iterations):
            F.linear(x_lin, w_lin, b_lin)

    def matmul_work(iterations=ITERATIONS):
        for _ in range(iterations):
            torch.matmul(x_mm, w_mm)

    def softmax_work(iterations=ITERATIONS):
        for _ in range(iterations):
            F.gelu(F.log_softmax(x_sm, dim=1))

    def conv_work(iterations=ITERATIONS):
        for _ in range(iterations):
            F.max_pool2d(F.conv2d(x_conv, w_conv), 2)

    workers = [linear_work, matmul_work, softmax_work]
    for work in workers + [conv_work]:  # warm-up, unprofiled and untraced
        work()

    def profiled(work):
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            work()
        return prof

    def summarize(prof, times=1):
        averages = {evt.key: (evt.count * times, evt.self_cpu_time_total, evt.cpu_time_total)
                    for evt in prof.key_averages()}
        raw = collections.Counter(e.name() for e in prof.profiler.kineto_results.events())
        return averages, collections.Counter({k: v * times for k, v in raw.items()})

    profile_per_thread = torch.__version__.startswith("1.")
    profiles = []  # (key_averages(), raw event counts) of each thread's profiler
    if not profile_per_thread:  # the known answer: one iteration of each mix, times ITERATIONS
        for work in workers + [conv_work]:
            profiles.append(summarize(profiled(lambda: work(1)), times=ITERATIONS))
    signal_file(workdir, "ready", str(os.getpid()))

    wait_for_file(workdir, "go")
    errors = []

    with profile(activities=[ProfilerActivity.CPU]) as main_prof:
        barrier = threading.Barrier(len(workers) + 1, timeout=WAIT_TIMEOUT_S)

        def run(work):
            try:
                barrier.wait()
                if profile_per_thread:
                    profiles.append(summarize(profiled(work)))
                else:
                    work()
            except Exception as e:  # reported below, after the region
                errors.append(repr(e))

        threads = [threading.Thread(target=run, args=(w,), name=w.__name__) for w in workers]
        for t in threads:
            t.start()
        barrier.wait()
        conv_work()
        for t in threads:
            t.join(WAIT_TIMEOUT_S)
    signal_file(workdir, "region-done")
    if errors or any(t.is_alive() for t in threads) or len(profiles) != len(workers) + (not profile_per_thread):
        sys.stderr.write("threads_region.py: thread errors %r\n" % errors)
        return 1

    wait_for_file(workdir, "dump")
    if profile_per_thread:
        profiles.append(summarize(main_prof))
    ops = {}
    raw = collections.Counter()
    for averages, raw_counts in profiles:
        raw.update(raw_counts)
        for key, (count, self_us, total_us) in averages.items():
            op = ops.setdefault(key, {"count": 0, "self_cpu_time_total": 0.0, "cpu_time_total": 0.0})
            op["count"] += count
            op["self_cpu_time_total"] += self_us
            op["cpu_time_total"] += total_us
    signal_file(workdir, "torch_raw_counts.json", json.dumps(raw, indent=1, sort_keys=True))
    signal_file(workdir, "torch_ops.json", json.dumps(ops, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Launch-mode target for the streamed outputs: nested ops on three threads.

Usage: gpuprof record [--with-stack] [-F HZ] -- python3 nested_threads.py SECONDS

No handshake: run as `record -- CMD`. The main thread and two more run, for
SECONDS each, ops that nest (F.linear: linear -> t -> transpose, addmm;
matmul of a 3-d by a 2-d tensor: matmul -> reshape, view, mm; log_softmax),
some inside a record_function range, from Python functions of their own (so
--with-stack gives each thread its own stacks). Prints `turns N` (all
threads together) and exits 0.
"""
import sys
import threading
import time

import torch
import torch.nn.functional as F

SECONDS = float(sys.argv[1])


def linear_turns(x, w, b, counts, slot):
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        F.linear(x, w, b)
        counts[slot] += 1


def matmul_turns(a, m, counts, slot):
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        with torch.autograd.profiler.record_function("matmul_turn"):
            torch.matmul(a, m)
        counts[slot] += 1


def softmax_turns(x, counts, slot):
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        F.log_softmax(x, dim=1)
        counts[slot] += 1


def main():
    torch.set_num_threads(1)
    x, w, b = torch.randn(4, 8), torch.randn(8, 8), torch.randn(8)
    a, m = torch.randn(2, 4, 8), torch.randn(8, 8)
    counts = [0, 0, 0]
    threads = [threading.Thread(target=linear_turns, args=(x, w, b, counts, 0)),
               threading.Thread(target=matmul_turns, args=(a, m, counts, 1))]
    for t in threads:
        t.start()
    softmax_turns(x, counts, 2)
    for t in threads:
        t.join()
    print(f"turns {sum(counts)}")


main()

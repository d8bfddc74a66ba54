"""Launch-mode target for the streamed module table: two models on two threads.

Usage: gpuprof record --with-modules -- python3 module_loop.py SECONDS

No handshake: run as `record -- CMD`. For SECONDS, the main thread trains a
small MLP (Trained, an nn.Sequential of Linear, ReLU, Linear: forward, a sum outside
the model, backward, an SGD step), and a second thread runs a Tanh model
(Inferred: Linear, Tanh) in an inference loop, with no op between
its calls. The main thread starts training only after the first inference
forward, so Inferred's first call starts first (the layer table puts the
models in that order, docs/modules.md). Prints `train N` and `infer M` (the forwards of each model),
then `pid P` (its own, for a record -a of it), and exits 0.
"""
import os
import sys
import threading
import time

import torch

SECONDS = float(sys.argv[1])


class Trained(torch.nn.Sequential):
    pass


class Inferred(torch.nn.Sequential):
    pass


def infer(model, x, counts, first_done):
    end = time.monotonic() + SECONDS
    with torch.no_grad():
        model(x)
        counts["infer"] += 1
        first_done.set()
        while time.monotonic() < end:
            model(x)
            counts["infer"] += 1


def main():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    mlp = Trained(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    tanh = Inferred(torch.nn.Linear(8, 8), torch.nn.Tanh())
    optimizer = torch.optim.SGD(mlp.parameters(), lr=0.01)
    x = torch.randn(4, 8)
    counts = {"train": 0, "infer": 0}
    first_inference = threading.Event()
    other = threading.Thread(target=infer, args=(tanh, x, counts, first_inference))
    other.start()
    # Without this wait, which model's first call comes first is a race
    # (stop 46's CI put Trained first).
    first_inference.wait()
    end = time.monotonic() + SECONDS
    while time.monotonic() < end:
        optimizer.zero_grad()
        mlp(x).sum().backward()
        optimizer.step()
        counts["train"] += 1
    other.join()
    print(f"train {counts['train']}")
    print(f"infer {counts['infer']}")
    print(f"pid {os.getpid()}")


main()

"""Reads what bench/gpu_inject_check.sh brought back from a GPU machine
(gpu_inject_check.tar.gz unpacked) and prints docs/gpu.md's figures.

Usage: gpu_inject_compare.py DIR

Per model: each phase's median step time over the two baseline phases'
mean (base_again over base: the noise of one process), so the dormant
shim's cost, gpuprof's and torch.profiler's, all in one process on one warm
GPU; then the traced phase's recording against torch.profiler's phase of
as many steps: GPU activities per name, Self CUDA per op.
"""
import json
import os
import statistics
import sys

from gpu_compare import compare_with_torch_profiler


def median_ms(path):
    with open(path) as f:
        return statistics.median(json.load(f)) * 1e3


def compare(root, model):
    d = os.path.join(root, model)
    print(f"## {model}")
    medians = {p: median_ms(f"{d}/{p}.steps.json") for p in ("base", "base_again", "dormant", "traced", "dormant_again",
                                                          "torch") if os.path.exists(f"{d}/{p}.steps.json")}
    base = (medians["base"] + medians["base_again"]) / 2
    for phase, t in medians.items():
        print(f"  {phase:14s} {t:8.3f} ms  x{t / base:.3f} of the baselines' mean")
    if not os.path.exists(f"{d}/torch.json") or not os.path.exists(f"{d}/kernels.txt"):
        print("  (no torch.profiler or traced recording to compare)")
        return
    compare_with_torch_profiler(f"{d}/torch.json", f"{d}/kernels.txt", f"{d}/table.txt")


def main():
    root = sys.argv[1]
    for model in ("resnet18", "transformer"):
        if os.path.isdir(os.path.join(root, model)):
            compare(root, model)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

from gpu_compare import columns, us


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
    with open(f"{d}/torch.json") as f:
        torch_side = json.load(f)
    with open(f"{d}/kernels.txt") as f:
        kernel_rows = columns(f.read(), "Operator")
    ours = {}
    for row in kernel_rows:
        ours[row["Kernel"]] = ours.get(row["Kernel"], 0) + int(row["Calls"])
    theirs = torch_side["kernels"]
    same = sorted(k for k in theirs if ours.get(k) == theirs[k])
    differ = [k for k in sorted(set(ours) | set(theirs)) if ours.get(k) != theirs.get(k)]
    print(f"GPU activities: gpuprof {sum(ours.values())} in {len(ours)} names, torch.profiler "
          f"{sum(theirs.values())} in {len(theirs)} names; {len(same)} names with equal counts")
    for k in differ:
        print(f"  differ: gpuprof {ours.get(k, 0):6d}  torch {theirs.get(k, 0):6d}  {k[:110]}")
    with open(f"{d}/table.txt") as f:
        table = columns(f.read(), "Name")
    gp_ops = {r["Name"]: r for r in table if "::" in r["Name"] and " " not in r["Name"]}
    total = sum(o["self_cuda_us"] for o in torch_side["ops"].values())
    print("Self CUDA per op (ops with >= 1% of torch.profiler's total), us:")
    for name, o in sorted(torch_side["ops"].items(), key=lambda kv: -kv[1]["self_cuda_us"]):
        if o["self_cuda_us"] < 0.01 * total:
            continue
        g = gp_ops.get(name)
        mine = us(g["Self CUDA"]) if g else 0.0
        calls = f"{g['# of Calls'] if g else '-'}/{o['count']}"
        print(f"  {name:42s} {calls:>16s} {mine:10.1f} {o['self_cuda_us']:10.1f} {mine / o['self_cuda_us']:7.3f}")


def main():
    root = sys.argv[1]
    for model in ("resnet18", "transformer"):
        if os.path.isdir(os.path.join(root, model)):
            compare(root, model)
    return 0


if __name__ == "__main__":
    sys.exit(main())

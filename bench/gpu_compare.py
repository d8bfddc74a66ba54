"""Reads what bench/gpu_check.sh brought back from a GPU machine and prints
the comparisons of docs/gpu.md.

Usage: gpu_compare.py DIR   (gpu_check.tar.gz unpacked)

Per model: step-time ratios of the runs of the one call (dormant shim,
gpuprof attached, torch.profiler, each over the mean of the two baseline
runs); GPU kernels per name, gpuprof's recording (--kernels) against
torch.profiler's events of the same steps (count equal?); Self CUDA per op
(gpuprof's table against key_averages(), the ratio), for ops with at least
1% of the GPU time.
"""
import json
import os
import re
import statistics
import sys


def columns(text, first_label):
    """Rows of a gpuprof table as dicts, from the header line that starts
    with first_label: cells are separated by two spaces or more (a header
    label may be wider than its dashes, as in torch.profiler's tables)."""
    lines = text.splitlines()
    for i in range(1, len(lines) - 1):
        if lines[i - 1].startswith("-") and lines[i].strip().startswith(first_label):
            sep, labels = lines[i - 1], re.split(r"\s{2,}", lines[i].strip())
            break
    else:
        raise SystemExit(f"no table headed {first_label!r}")
    rows = []
    for line in lines[i + 2:]:
        if line == sep:
            break
        cells = re.split(r"\s{2,}", line.strip())
        assert len(cells) == len(labels), (labels, line)
        rows.append(dict(zip(labels, cells)))
    return rows


def us(cell):
    m = re.fullmatch(r"([\d.]+)(us|ms|s)", cell)
    return float(m.group(1)) * {"us": 1, "ms": 1e3, "s": 1e6}[m.group(2)] if m else 0.0


def median_ms(path):
    with open(path) as f:
        return statistics.median(json.load(f)) * 1e3


def compare(root, model):
    d = os.path.join(root, model)
    print(f"## {model}")
    base = (median_ms(f"{d}/base/steps.json") + median_ms(f"{d}/base2/steps.json")) / 2
    print(f"step time, median: base {median_ms(f'{d}/base/steps.json'):.3f} ms, "
          f"base2 {median_ms(f'{d}/base2/steps.json'):.3f} ms")
    for run in ("dormant", "gpuprof", "torch"):
        t = median_ms(f"{d}/{run}/steps.json")
        print(f"  {run:8s} {t:8.3f} ms  x{t / base:.3f} of the baselines' mean")
    compare_with_torch_profiler(f"{d}/torch/torch.json", f"{d}/gpuprof/kernels.txt", f"{d}/gpuprof/table.txt")


def compare_with_torch_profiler(torch_json, kernels_txt, table_txt):
    """gpuprof's recording (report --kernels, and the op table sorted by
    self_cuda_time_total) against torch.profiler's figures of the same
    steps (gpu_check.py's torch.json): GPU activities per name, Self CUDA
    per op for the ops with at least 1% of the GPU time."""
    with open(torch_json) as f:
        torch_side = json.load(f)
    with open(kernels_txt) as f:
        kernel_rows = columns(f.read(), "Operator")
    ours = {}
    for row in kernel_rows:
        ours[row["Kernel"]] = ours.get(row["Kernel"], 0) + int(row["Calls"])
    theirs = torch_side["kernels"]
    same = sorted(k for k in theirs if ours.get(k) == theirs[k])
    differ = sorted(set(ours) | set(theirs))
    differ = [k for k in differ if ours.get(k) != theirs.get(k)]
    print(f"GPU activities: gpuprof {sum(ours.values())} in {len(ours)} names, torch.profiler "
          f"{sum(theirs.values())} in {len(theirs)} names; {len(same)} names with equal counts")
    for k in differ:
        print(f"  differ: gpuprof {ours.get(k, 0):6d}  torch {theirs.get(k, 0):6d}  {k[:110]}")
    with open(table_txt) as f:
        table = columns(f.read(), "Name")
    gp_ops = {r["Name"]: r for r in table if "::" in r["Name"] and " " not in r["Name"]}
    total = sum(o["self_cuda_us"] for o in torch_side["ops"].values())
    print("Self CUDA per op (ops with >= 1% of torch.profiler's total), us:")
    print(f"  {'op':42s} {'calls gp/torch':>16s} {'gpuprof':>10s} {'torch':>10s} {'ratio':>7s}")
    for name, o in sorted(torch_side["ops"].items(), key=lambda kv: -kv[1]["self_cuda_us"]):
        if o["self_cuda_us"] < 0.01 * total:
            continue
        g = gp_ops.get(name)
        mine = us(g["Self CUDA"]) if g else 0.0
        calls = f"{g['# of Calls'] if g else '-'}/{o['count']}"
        print(f"  {name:42s} {calls:>16s} {mine:10.1f} {o['self_cuda_us']:10.1f} "
              f"{mine / o['self_cuda_us']:7.3f}")


def main():
    root = sys.argv[1]
    for model in ("resnet18", "transformer"):
        if os.path.isdir(os.path.join(root, model)):
            compare(root, model)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A CUDA workload for checking gpuprof on a GPU machine (docs/gpu.md).

Usage: gpu_check.py MODEL STEPS WORKDIR [--warmup N] [--torch-profiler]
                    [--handshake]

MODEL is resnet18 (inference: forward passes under no_grad, batch 32 of
3x224x224) or transformer (a training step: a 4-layer encoder, d_model 512,
8 heads, batch 16 of 128 tokens, forward, backward, AdamW). Runs --warmup
steps (cuDNN's and the allocator's first calls), then STEPS timed steps,
each ended by torch.cuda.synchronize(), and writes to WORKDIR:

  steps.json    the timed steps' wall times (s), for ratios between runs;
  torch.json    with --torch-profiler: torch.profiler (CPU and CUDA
                activities) around the timed steps: per op its count and
                Self CUDA time (us), and per GPU kernel (memcpy and memset
                included) its count, for comparison with gpuprof's
                recording of the same steps;
  torch.txt     with --torch-profiler: key_averages().table().

--handshake: after the warm-up, writes WORKDIR/ready (its pid) and waits
for WORKDIR/go, so that `gpuprof record -p PID` attaches before the timed
steps and records exactly them (the process exits after them).
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "workloads"))
from handshake import signal_file, wait_for_file  # noqa: E402


def resnet18_step(device):
    import torch
    import torchvision
    model = torchvision.models.resnet18().to(device).eval()
    x = torch.randn(32, 3, 224, 224, device=device)

    def step():
        with torch.no_grad():
            model(x)
    return step


def transformer_step(device):
    import torch
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    model = torch.nn.TransformerEncoder(layer, num_layers=4, enable_nested_tensor=False).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = torch.randn(16, 128, 512, device=device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        model(x).square().mean().backward()
        optimizer.step()
    return step


def cuda_time(evt, self_time):
    # torch 2.x renamed cuda_* to device_*; 1.13 has only the former.
    names = ("self_device_time_total", "self_cuda_time_total") if self_time else \
        ("device_time_total", "cuda_time_total")
    for name in names:
        if hasattr(evt, name):
            return float(getattr(evt, name))
    return 0.0


def timed_steps(step, sync, steps, workdir, device, torch_profiler):
    """STEPS steps, each ended by sync(): their wall times (s). With
    torch_profiler, under torch.profiler (CPU and CUDA activities), whose
    figures go to WORKDIR/torch.json (per op its count, Self CUDA and Self
    CPU; per GPU activity name its count) and torch.txt (its table)."""
    prof = None
    if torch_profiler:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device == "cuda" else [])
        prof = profile(activities=activities)
        prof.__enter__()
    times = []
    for _ in range(steps):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    if prof is None:
        return times
    prof.__exit__(None, None, None)
    ops = {}
    for row in prof.key_averages():
        if str(row.device_type).endswith("CPU"):
            ops[row.key] = {"count": row.count, "self_cuda_us": cuda_time(row, True),
                            "self_cpu_us": float(row.self_cpu_time_total)}
    kernels = {}
    for evt in prof.events():
        if not str(evt.device_type).endswith("CPU"):
            kernels[evt.name] = kernels.get(evt.name, 0) + 1
    with open(os.path.join(workdir, "torch.json"), "w") as f:
        json.dump({"ops": ops, "kernels": kernels}, f, indent=1, sort_keys=True)
    with open(os.path.join(workdir, "torch.txt"), "w") as f:
        f.write(prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=-1))
    return times


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=("resnet18", "transformer"))
    parser.add_argument("steps", type=int)
    parser.add_argument("workdir")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--torch-profiler", action="store_true")
    parser.add_argument("--handshake", action="store_true")
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script where there is no GPU")
    args = parser.parse_args()
    import torch
    torch.backends.cudnn.benchmark = False  # the same kernels in every run
    step = (resnet18_step if args.model == "resnet18" else transformer_step)(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    for _ in range(args.warmup):
        step()
    sync()
    if args.handshake:
        signal_file(args.workdir, "ready", str(os.getpid()))
        wait_for_file(args.workdir, "go", timeout=300)
    times = timed_steps(step, sync, args.steps, args.workdir, args.device, args.torch_profiler)
    with open(os.path.join(args.workdir, "steps.json"), "w") as f:
        json.dump(times, f)
    print(f"{args.model}: {args.steps} steps, median {statistics.median(times) * 1e3:.3f} ms", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One CUDA job, one process, every state of gpuprof's CUPTI shim in turn
(docs/gpu.md): no shim, the shim loaded into it while it runs
(`record -p --inject-cupti`) and dormant, traced by `gpuprof record -p`,
dormant again, and torch.profiler; the step times of each phase, measured
in the same process on the same warm GPU, give each state's cost, and the
traced and torch.profiler phases (the same number of steps) compare
kernel by kernel.

Usage: gpu_inject_check.py MODEL STEPS WORKDIR [--warmup N] [--device cuda]

MODEL and the steps as bench/gpu_check.py's. Phases, in order: base,
base_again, dormant, traced, dormant_again, torch. Before each phase it
writes WORKDIR/PHASE.ready (its pid) and waits for WORKDIR/PHASE.go (the
orchestrator, bench/gpu_inject_check.sh, changes the shim's state
meanwhile); then STEPS steps, each ended by torch.cuda.synchronize(), their
wall times to PHASE.steps.json. The torch phase runs under torch.profiler (CPU and
CUDA activities) and writes torch.json and torch.txt as gpu_check.py does.
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "workloads"))
from gpu_check import resnet18_step, timed_steps, transformer_step  # noqa: E402
from handshake import signal_file, wait_for_file  # noqa: E402

PHASES = ("base", "base_again", "dormant", "traced", "dormant_again", "torch")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=("resnet18", "transformer"))
    parser.add_argument("steps", type=int)
    parser.add_argument("workdir")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--device", default="cuda", help="cpu: a dry run of the script where there is no GPU")
    args = parser.parse_args()
    import torch
    torch.backends.cudnn.benchmark = False  # the same kernels in every phase
    step = (resnet18_step if args.model == "resnet18" else transformer_step)(args.device)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    for _ in range(args.warmup):
        step()
    sync()
    for phase in PHASES:
        signal_file(args.workdir, f"{phase}.ready", str(os.getpid()))
        wait_for_file(args.workdir, f"{phase}.go", timeout=300)
        times = timed_steps(step, sync, args.steps, args.workdir, args.device, phase == "torch")
        with open(os.path.join(args.workdir, f"{phase}.steps.json"), "w") as f:
            json.dump(times, f)
        print(f"{args.model} {phase}: {args.steps} steps, median {statistics.median(times) * 1e3:.3f} ms", flush=True)
    signal_file(args.workdir, "done", str(os.getpid()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""One op in a loop, timed with no profiler, under torch.profiler, and then
for an outside profiler (bench/torch_profiler_distortion.py).

Prints JSON lines: {"phase": "alone" | "torch_profiler", "us_per_call": ...,
"torch_self_us_per_call": ...}. Then signals `ready` (with its pid), waits for
`go`, runs --calls calls once more (timed: phase "outside") and signals
`done`.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from handshake import signal_file, wait_for_file  # noqa: E402


def build(op):
    import torch
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if op == "aten::_transform_bias_rescale_qkv":
        # The fast path of nn.TransformerEncoderLayer (eval, d_model 32, 4
        # heads, batch 4 x 16): what region.py's tiny_transformer calls.
        qkv, bias = torch.randn(4, 16, 96), torch.randn(96)
        return lambda: torch._transform_bias_rescale_qkv(qkv, bias, 4)
    if op == "aten::select":
        x = torch.randn(8, 16, 32)
        return lambda: x.select(0, 3)
    if op == "aten::mm":
        a, b = torch.randn(64, 32), torch.randn(32, 96)
        return lambda: torch.mm(a, b)
    raise SystemExit(f"op_alone.py: no loop for {op}")


def timed(call, n):
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n * 1e6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("workdir")
    parser.add_argument("--op", default="aten::_transform_bias_rescale_qkv")
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    import torch
    from torch.profiler import ProfilerActivity, profile

    call = build(args.op)
    with torch.no_grad():
        timed(call, args.calls)  # warm-up
        print(json.dumps({"phase": "alone", "us_per_call": timed(call, args.calls)}), flush=True)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            us = timed(call, args.calls)
        rows = [e for e in prof.key_averages() if e.key == args.op]
        self_us = rows[0].self_cpu_time_total / rows[0].count if rows else None
        total_us = rows[0].cpu_time_total / rows[0].count if rows else None
        print(json.dumps({"phase": "torch_profiler", "us_per_call": us, "torch_self_us_per_call": self_us,
                          "torch_total_us_per_call": total_us}), flush=True)
        signal_file(args.workdir, "ready", str(os.getpid()))
        wait_for_file(args.workdir, "go")
        us = timed(call, args.calls)
        print(json.dumps({"phase": "outside", "us_per_call": us}), flush=True)
        signal_file(args.workdir, "done")
        wait_for_file(args.workdir, "exit")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A CUDA job for bench/shim_switch_check.sh: matmuls until told to stop,
and the job's own torch.profiler when told to.

Usage: shim_switch_job.py WORKDIR [DEVICE]   (cuda; cpu for a dry run)

Writes WORKDIR/ready (its pid) once CUDA is up, then loops x @ x (1000 x
1000). For each file profN that appears in WORKDIR it runs torch.profiler
(CPU and CUDA activities) around 50 matmuls and writes profN.done: the
number of GPU events torch.profiler got. For longN, the profile lasts 3 s
of matmuls and longN.done holds "EVENTS MATMULS started S after asked,
ran S" (EVENTS equal to MATMULS when the profile is whole). Exits when WORKDIR/stop appears.
"""
import os
import sys
import time

import torch
from torch.profiler import ProfilerActivity, profile


def gpu_events(prof):
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def main():
    workdir = sys.argv[1]
    device = sys.argv[2] if len(sys.argv) > 2 else "cuda"
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    x = torch.rand(1000, 1000, device=device)
    sync()
    with open(os.path.join(workdir, "ready.partial"), "w") as f:
        f.write(f"{os.getpid()}\n")
    os.rename(os.path.join(workdir, "ready.partial"), os.path.join(workdir, "ready"))
    done = set()
    while not os.path.exists(os.path.join(workdir, "stop")):
        for _ in range(20):
            x @ x
        sync()
        for name in ("prof1", "prof2", "prof3", "long1"):
            if name in done or not os.path.exists(os.path.join(workdir, name)):
                continue
            matmuls = 0
            asked = time.monotonic()
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                started = time.monotonic()
                end = started + (3 if name.startswith("long") else 0)
                while matmuls < 50 or time.monotonic() < end:
                    x @ x
                    matmuls += 1
                    if matmuls % 100 == 0:
                        sync()
                sync()
            with open(os.path.join(workdir, name + ".partial"), "w") as f:
                f.write(f"{gpu_events(prof)} {matmuls} started {started - asked:.3f}s after asked, "
                        f"ran {time.monotonic() - started:.3f}s\n" if name.startswith("long") else
                        f"{gpu_events(prof)}\n")
            os.rename(os.path.join(workdir, name + ".partial"), os.path.join(workdir, name + ".done"))
            done.add(name)
        time.sleep(0.001)
    return 0


if __name__ == "__main__":
    sys.exit(main())

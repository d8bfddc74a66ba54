"""A data-parallel training loop with a known number of collectives, one
process per rank, as torchrun starts them (RANK, WORLD_SIZE and the store's
address in the environment).

Usage: ddp_steps.py WORKDIR STEPS

Joins the gloo process group, writes `ready.RANK` (its pid) and waits for
`go`; then STEPS steps of a small linear model: forward (one aten::addmm),
backward, and each of its two gradients summed over the ranks by
dist.all_reduce (a synchronous collective: one enqueue and one wait per
call), averaged, and applied by SGD. Then one dist.barrier(). So each rank
issues exactly 2 x STEPS all-reduces and 1 barrier, and waits on 2 x STEPS
+ 1 works (docs/fleet.md, "Collectives"). It writes `done.RANK` (its
parameters' sum, which averaged gradients make equal on every rank) and
waits for `check` before it leaves the group and exits 0.
"""
import os
import sys

from debian_distributed import mend_workers
from handshake import signal_file, wait_for_file


def main():
    workdir, steps = sys.argv[1], int(sys.argv[2])
    import torch
    import torch.distributed as dist

    torch.set_num_threads(1)
    mend_workers()
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(rank)  # different data per rank; the same model
    model = torch.nn.Linear(8, 4)
    with torch.no_grad():
        for i, p in enumerate(model.parameters()):
            p.copy_(torch.linspace(-1, 1, p.numel()).reshape(p.shape) * (i + 1))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    x, target = torch.randn(16, 8), torch.randn(16, 4)
    signal_file(workdir, f"ready.{rank}", str(os.getpid()))
    wait_for_file(workdir, "go")
    for _ in range(steps):
        optimizer.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), target)
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
            p.grad /= world
        optimizer.step()
    dist.barrier()
    with torch.no_grad():
        total = sum(float(p.double().sum()) for p in model.parameters())
    signal_file(workdir, f"done.{rank}", repr(total))
    wait_for_file(workdir, "check")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())

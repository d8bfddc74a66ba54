"""Mends for two defects of Debian's torch packages that stop
torch.distributed before any collective runs (torchrun.py and the
distributed workloads use them); neither changes what a job computes or
how its processes are started.

- torch 1.13 on CPython 3.11: torchrun's `--redirects`/`--tee` parse "0" to
  None (the Std flag enum's zero member is no longer iterated) and it fails
  with "'NoneType' object has no attribute 'get'": None is read as Std.NONE.
- torch 2.6 is built without libuv, while TCPStore asks for it by default
  ("use_libuv was requested but PyTorch was build without libuv support"):
  the stores of torchrun's agent and of init_process_group's rendezvous are
  made without it.
"""
import sys

import torch


def mend_torchrun():
    """In torchrun's own process (its agent)."""
    if torch.__version__.startswith("1."):
        import torch.distributed.elastic.multiprocessing as multiprocessing
        from torch.distributed.elastic.multiprocessing import api

        to_map = api.to_map

        def to_map_none_is_std_none(val_or_map, local_world_size):
            return to_map(api.Std.NONE if val_or_map is None else val_or_map, local_world_size)

        multiprocessing.to_map = to_map_none_is_std_none  # start_processes calls it from here
    else:
        import torch.distributed.elastic.rendezvous.c10d_rendezvous_backend as c10d_backend
        import torch.distributed.elastic.rendezvous.static_tcp_rendezvous as static_backend
        c10d_backend.TCPStore = static_backend.TCPStore = _tcp_store_without_libuv()


def mend_workers():
    """In each worker, before init_process_group."""
    if not torch.__version__.startswith("1."):
        __import__("torch.distributed.rendezvous")
        # The module: torch.distributed.rendezvous, as an attribute, is its function.
        sys.modules["torch.distributed.rendezvous"].TCPStore = _tcp_store_without_libuv()


def _tcp_store_without_libuv():
    from torch.distributed import TCPStore

    def tcp_store(*args, **kwargs):
        kwargs.setdefault("use_libuv", False)
        return TCPStore(*args, **kwargs)

    return tcp_store

"""gpuprof's CUPTI shim inside a real torch process, driven by hand.

Usage: cupti_by_hand.py WORKDIR SHIM STAND_IN initialize|load-only N

This machine has no GPU, so this script plays the CUDA driver and the GPU,
through ctypes, with the stand-in libcupti of tests/fake_cupti (its hooks:
tests/fake_cupti/fake_cupti_hooks.h):

  * it loads STAND_IN, then SHIM (build/libgpuprof_cupti.so), as the driver
    loads the file CUDA_INJECTION64_PATH names at cuInit. `initialize` then
    plays another tracer already attached to the shim (another gpuprof
    session: it raises the shim's USDT semaphores, as the kernel does for
    that session's probes, and keeps them up) and calls the shim's
    InitializeInjection, as the driver does next (the shim finds the
    stand-in through GPUPROF_CUPTI_LIBRARY and, a tracer being there,
    switches CUPTI on at once: state 1); `load-only` never calls it (state
    0: loaded, not initialized). A STAND_IN that names no file is a machine
    without libcupti: the shim finds none (state 4) and nothing is launched;
  * before `ready`, before the gpuprof under test attaches, it launches on
    stream 7 a kernel of QUEUED_BEHIND_S seconds, then QUEUED kernels
    `queued_kernel` of 4 us each. A stream runs its work in order (the
    stand-in models that), so those start QUEUED_BEHIND_S after their
    launch, long after gpuprof attached, while their launches happened
    before it did (CUPTI records them: the other tracer had it on);
  * it writes `ready` (its pid) and waits for `go`;
  * N times: torch.add(a, b), then a launch of `traced_kernel` (1 us) on
    stream 8 from Python, outside every op; no other op runs after `go`;
  * it hands every queued record to the shim (fake_cupti_deliver, as CUPTI
    hands over a buffer) and exits 0.

With `initialize`, a recording from `ready` to the exit holds: the long
kernel left out (it began before the recording), the QUEUED queued kernels
under "[launch not seen]", N traced kernels under "[no op]", N aten::add
calls. With `load-only` it holds no GPU record at all.
"""
import ctypes
import os
import struct
import sys

from handshake import signal_file, wait_for_file

QUEUED_BEHIND_S = 600  # far longer than any attach takes, however busy the machine
QUEUED = 2
QUEUED_KERNEL_NS = 4000
TRACED_KERNEL_NS = 1000
RUNTIME_DOMAIN = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000


def shim_semaphores(path):
    """The addresses, in this process, of the semaphores the shim's stapsdt
    notes name (as libbpf finds them for a uprobe's ref_ctr_offset)."""
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3a)
    sections = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = sections[shstrndx][4]
    semaphores = set()
    for name, _, _, _, offset, size in sections:
        if elf[names_at + name:elf.index(b"\0", names_at + name)] != b".note.stapsdt":
            continue
        at = offset
        while at + 12 <= offset + size:
            namesz, descsz, kind = struct.unpack_from("<III", elf, at)
            desc = at + 12 + (namesz + 3) // 4 * 4
            _, _, semaphore = struct.unpack_from("<QQQ", elf, desc)
            if kind == 3 and semaphore:
                semaphores.add(semaphore)
            at = desc + (descsz + 3) // 4 * 4
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:  # the load bias: where its first page is mapped
        base = min(int(line.split("-")[0], 16) for line in maps if line.split()[-1] == real)
    return [base + semaphore for semaphore in sorted(semaphores)]


def main():
    workdir, shim_path, stand_in_path, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
    assert mode in ("initialize", "load-only"), mode
    import torch

    torch.set_num_threads(1)
    # The shim opens the libcupti this names: the stand-in loaded here (one
    # copy: dlopen of the same path returns the same library).
    os.environ["GPUPROF_CUPTI_LIBRARY"] = stand_in_path
    stand_in = ctypes.CDLL(stand_in_path) if os.path.exists(stand_in_path) else None
    shim = ctypes.CDLL(shim_path)
    if stand_in:
        stand_in.fake_cupti_launch.restype = ctypes.c_uint64
        stand_in.fake_cupti_launch.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint64,
                                               ctypes.c_uint32, ctypes.c_uint32]

    def launch(kernel, duration_ns, stream):
        if stand_in:
            stand_in.fake_cupti_launch(RUNTIME_DOMAIN, CUDA_LAUNCH_KERNEL, kernel, duration_ns, 0, stream)

    if mode == "initialize":
        for address in shim_semaphores(shim_path):
            ctypes.c_ushort.from_address(address).value += 1
        if shim.InitializeInjection() != 1:
            return 2
    launch(b"long_kernel", QUEUED_BEHIND_S * 1_000_000_000, 7)
    for _ in range(QUEUED):
        launch(b"queued_kernel", QUEUED_KERNEL_NS, 7)
    a = torch.ones(8)
    b = torch.full((8,), 2.0)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    # No other op from here to the exit: the recording holds N aten::add calls
    # (torch.add of two tensors calls no other op on torch 1.13 and 2.6).
    for _ in range(n):
        torch.add(a, b)
        launch(b"traced_kernel", TRACED_KERNEL_NS, 8)
    if stand_in:
        stand_in.fake_cupti_deliver()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A torch job that gpuprof loads its CUPTI shim into while it runs
(`record -p PID --inject-cupti`, docs/injection.md).

Usage: inject_target.py WORKDIR STAND_IN MODE N

It writes `ready` (its pid) once torch is imported, then:

  gpu       loads STAND_IN (tests/fake_cupti's libcupti) as torch loads
            libcupti, and waits for `go`; then N times: torch.add, and a
            launch of `traced_kernel` (1 us) through the stand-in from
            Python, outside every op; hands the records over and prints
            "gpu N".
  syscalls  until `go`: torch.add, 4 KiB written to a pipe and read back,
            in a loop (gpuprof takes one of its reads as the safe point);
            then exactly N times the same with torch.sub; prints
            "syscalls N".
  spin      until `go`: torch.add and a look for `go` (stat), no call that
            blocks (gpuprof finds no safe point and must give up); then
            exactly N times torch.sub; prints "spin N".
  threads   THREADS threads pass tokens through queues (futex waits) and
            compute a float sum, with torch.add, until `go`; then each does
            exactly N rounds with torch.mul; prints "threads THREADS N".

With INJECT_TARGET_SECCOMP=1 it first installs a seccomp filter that
allows every system call (gpuprof must refuse a job under any filter).

Every byte read back and every float sum is checked against what it must
be (a sum computed before `ready`): the first difference is printed and the
exit status is 4. The job's results must be the same whether or not gpuprof
loaded anything into it.
"""
import ctypes
import math
import os
import queue
import sys
import threading

from handshake import signal_file, wait_for_file

THREADS = 4
RUNTIME_DOMAIN = 2  # CUPTI_CB_DOMAIN_RUNTIME_API
CUDA_LAUNCH_KERNEL = 211  # CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000
TRACED_KERNEL_NS = 1000


def float_sum():
    return sum(math.sin(i * 0.001) * math.sqrt(i) for i in range(2000))


REFERENCE = float_sum()


def fail(what):
    print("DIFFERENT: " + what, flush=True)
    os._exit(4)


def gpu(torch, workdir, stand_in_path, n):
    # The shim opens the libcupti this names: the one loaded here.
    os.environ["GPUPROF_CUPTI_LIBRARY"] = stand_in_path
    stand_in = ctypes.CDLL(stand_in_path)
    stand_in.fake_cupti_launch.restype = ctypes.c_uint64
    stand_in.fake_cupti_launch.argtypes = [ctypes.c_uint32, ctypes.c_uint32, ctypes.c_char_p, ctypes.c_uint64,
                                           ctypes.c_uint32, ctypes.c_uint32]
    a, b = torch.ones(8), torch.full((8,), 2.0)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    for _ in range(n):
        torch.add(a, b)
        stand_in.fake_cupti_launch(RUNTIME_DOMAIN, CUDA_LAUNCH_KERNEL, b"traced_kernel", TRACED_KERNEL_NS, 0, 8)
    stand_in.fake_cupti_deliver()
    print(f"gpu {n}", flush=True)


def syscalls(torch, workdir, n):
    r, w = os.pipe()
    a, b = torch.ones(8), torch.full((8,), 2.0)
    go = os.path.join(workdir, "go")

    def round_trip(i, op):
        op(a, b)
        data = bytes([i % 251]) * 4096
        os.write(w, data)
        got = b""
        while len(got) < len(data):
            got += os.read(r, len(data) - len(got))
        if got != data:
            fail(f"pipe round trip {i}")

    signal_file(workdir, "ready", str(os.getpid()))
    i = 0
    while not os.path.exists(go):
        round_trip(i, torch.add)
        i += 1
    for i in range(n):
        round_trip(i, torch.sub)
    if float_sum() != REFERENCE:
        fail("float sum")
    print(f"syscalls {n}", flush=True)


def spin(torch, workdir, n):
    a, b = torch.ones(8), torch.full((8,), 2.0)
    go = os.path.join(workdir, "go")
    signal_file(workdir, "ready", str(os.getpid()))
    while not os.path.exists(go):
        torch.add(a, b)
    for _ in range(n):
        torch.sub(a, b)
    print(f"spin {n}", flush=True)


def threads(torch, workdir, n):
    a, b = torch.ones(8), torch.full((8,), 2.0)
    go = threading.Event()
    queues = [queue.Queue() for _ in range(THREADS)]

    def worker(k):
        inbox, outbox = queues[k], queues[(k + 1) % THREADS]
        if k == 0:
            outbox.put(0)
        while not go.is_set():
            try:
                token = inbox.get(timeout=0.01)
                outbox.put(token + 1)
            except queue.Empty:
                pass
            torch.add(a, b)
            if float_sum() != REFERENCE:
                fail(f"float sum in thread {k}")
        for _ in range(n):
            torch.mul(a, b)
            if float_sum() != REFERENCE:
                fail(f"float sum in thread {k}")

    workers = [threading.Thread(target=worker, args=(k,)) for k in range(THREADS)]
    for t in workers:
        t.start()
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")
    go.set()
    for t in workers:
        t.join()
    print(f"threads {THREADS} {n}", flush=True)


def install_seccomp_filter():
    class SockFilter(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                    ("k", ctypes.c_uint32)]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(SockFilter))]

    allow = (SockFilter * 1)(SockFilter(0x06, 0, 0, 0x7fff0000))  # BPF_RET|BPF_K, SECCOMP_RET_ALLOW
    prog = SockFprog(1, allow)
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        sys.exit("seccomp filter: errno %d" % ctypes.get_errno())


def main():
    workdir, stand_in_path, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    if os.environ.get("INJECT_TARGET_SECCOMP") == "1":
        install_seccomp_filter()
    import torch

    torch.set_num_threads(1)
    if mode == "gpu":
        gpu(torch, workdir, stand_in_path, n)
    elif mode == "syscalls":
        syscalls(torch, workdir, n)
    elif mode == "spin":
        spin(torch, workdir, n)
    elif mode == "threads":
        threads(torch, workdir, n)
    else:
        sys.exit(f"unknown mode {mode}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

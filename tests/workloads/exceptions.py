"""Exception-safety target: c10::Error thrown through traced ops, caught in Python.

Usage: exceptions.py WORKDIR [MM_ERRORS]

  1. computes a deterministic checksum (float64 matrix-vector iterations);
  2. writes `ready` (its pid) and waits for `go` (the test attaches gpuprof
     first, or creates `go` at once for the unprofiled baseline run);
  3. raises and catches, through traced aten ops:
       - MM_ERRORS (default 1000) x torch.mm with mismatched shapes
         (RuntimeError from c10::Error, thrown inside aten::mm);
       - a few other kinds (ERROR_REPEATS each): a bad view (inside
         aten::view), an index out of range (inside aten::index_select), a
         dtype that cannot be cast (inside aten::add_), and a shape error
         three ops deep (aten::linear -> aten::matmul -> aten::mm);
  4. computes the checksum again, writes `result.json` ({checksum_before,
     checksum_after, caught: {kind: n}, messages: {kind: [first lines]}})
     and `brackets.json` ({kind: [[t0, t1], ...]}: CLOCK_MONOTONIC ns
     read just before each throwing statement and in its except block, so
     that the throwing calls, entered after t0 and ended at the catch, lie
     inside) and prints `checksum <hex>`; exits 0 only if every exception
     was caught and both checksums agree.

Every wait is bounded (WAIT_TIMEOUT_S); a timeout exits with status 3.
"""
import json
import os
import sys
import time

from handshake import signal_file, wait_for_file  # noqa: E402

WAIT_TIMEOUT_S = 120.0
ERROR_REPEATS = 10






def main():
    workdir = sys.argv[1]
    mm_errors = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    import torch

    torch.set_num_threads(1)

    def checksum():
        g = torch.Generator().manual_seed(1234)
        a = torch.randn(64, 64, generator=g, dtype=torch.float64) / 8
        x = torch.ones(64, dtype=torch.float64)
        for i in range(20):
            x = torch.tanh(torch.mv(a, x)) + 0.01 * i
        return float(x.sum()).hex()

    before = checksum()
    a23 = torch.ones(2, 3)
    b45 = torch.ones(4, 5)
    six = torch.arange(6)
    three = torch.arange(3.0)
    far_index = torch.tensor([10])
    complex_one = torch.ones(3, dtype=torch.complex64)
    signal_file(workdir, "ready", str(os.getpid()))
    wait_for_file(workdir, "go")

    cases = [
        ("mm_shape", mm_errors, RuntimeError, lambda: torch.mm(a23, b45)),
        ("bad_view", ERROR_REPEATS, RuntimeError, lambda: six.view(4, 5)),
        ("index_out_of_range", ERROR_REPEATS, IndexError, lambda: torch.index_select(three, 0, far_index)),
        ("bad_cast", ERROR_REPEATS, RuntimeError, lambda: torch.ones(3).add_(complex_one)),
        ("nested_linear", ERROR_REPEATS, RuntimeError, lambda: torch.nn.functional.linear(a23, b45)),
    ]
    caught = {}
    messages = {}
    brackets = {}
    for kind, repeats, error_type, action in cases:
        caught[kind] = 0
        brackets[kind] = []
        seen = []
        for _ in range(repeats):
            t0 = time.monotonic_ns()
            try:
                action()
            except error_type as e:
                brackets[kind].append((t0, time.monotonic_ns()))
                caught[kind] += 1
                first_line = str(e).splitlines()[0] if str(e) else ""
                if first_line not in seen:
                    seen.append(first_line)
        messages[kind] = seen

    after = checksum()
    result = {"checksum_before": before, "checksum_after": after, "caught": caught, "messages": messages}
    signal_file(workdir, "result.json", json.dumps(result, indent=1, sort_keys=True))
    signal_file(workdir, "brackets.json", json.dumps(brackets))
    print("checksum %s" % after)
    expected = {kind: repeats for kind, repeats, _, _ in cases}
    if caught != expected or before != after:
        sys.stderr.write("exceptions.py: caught %r, expected %r; checksums %s, %s\n"
                         % (caught, expected, before, after))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Launch-mode target for the table options: ops with known counts, shapes and call sites.

Usage: gpuprof record ... -- python3 table_options.py

No handshake: run as `record -- CMD`, it is traced from its first op. After
`import torch` it makes its inputs, then:

  * from call_site_a(): HYPOT_A_SMALL calls of torch.hypot on (8,) tensors;
  * from call_site_b(): HYPOT_B_SMALL calls on (8,) tensors, then
    HYPOT_B_SQUARE calls on (4, 4) tensors;
  * LOGADDEXP_CALLS calls of torch.logaddexp on (SIZE,) tensors (each
    allocates its result: the memory columns get real values);
  * ATAN2_CALLS calls of torch.atan2 on (SIZE,) tensors.

So aten::hypot has HYPOT_A_SMALL + HYPOT_B_SMALL + HYPOT_B_SQUARE calls:
grouped by input shape, [[8], [8]] holds HYPOT_A_SMALL + HYPOT_B_SMALL and
[[4, 4], [4, 4]] HYPOT_B_SQUARE; grouped by the top Python frame, the line
in call_site_a holds HYPOT_A_SMALL and the one in call_site_b
HYPOT_B_SMALL + HYPOT_B_SQUARE; grouped by both, three rows. No other code
calls hypot, logaddexp or atan2 (torch's import and the tensor factories do
not), so those counts are the tables' exact answer. (A Source Location
entry names a function at its first line, docs/stacks.md: call_site_a's,
call_site_b's, main's `def` lines and the module's line 1.)

It checks the hypot results and prints `table_options: ok` on stderr (its
stdout is the one gpuprof prints its table to) and exits 0, or 1 on a wrong
result; nothing waits.
"""
import sys
import time

import torch

HYPOT_A_SMALL = 7
HYPOT_B_SMALL = 3
HYPOT_B_SQUARE = 4
LOGADDEXP_CALLS = 13
ATAN2_CALLS = 5
SIZE = 4096


def call_site_a(x):
    results = []
    for _ in range(HYPOT_A_SMALL):
        results.append(torch.hypot(x, x))
    return results


def call_site_b(x, square):
    results = []
    for t in [x] * HYPOT_B_SMALL + [square] * HYPOT_B_SQUARE:
        results.append(torch.hypot(t, t))
    return results


def flat(values):
    """tolist()'s nested lists, flattened in Python."""
    return [v for item in values for v in (flat(item) if isinstance(item, list) else [item])]


def main():
    torch.set_num_threads(1)
    x = torch.ones(8)
    square = torch.ones(4, 4)
    big = torch.ones(SIZE)
    results = call_site_a(x) + call_site_b(x, square)
    for _ in range(LOGADDEXP_CALLS):
        results.append(torch.logaddexp(big, big))
    for _ in range(ATAN2_CALLS):
        results.append(torch.atan2(big, big))
    # Checked after the counted ops (tolist() runs resolve_conj/resolve_neg, nothing counted); printed
    # on stderr, as stdout is shared with gpuprof's table.
    hypots = results[:HYPOT_A_SMALL + HYPOT_B_SMALL + HYPOT_B_SQUARE]
    ok = all(abs(value - 2 ** 0.5) < 1e-6 for r in hypots for value in flat(r.tolist()))
    # One write, line and newline: print() writes them apart, and gpuprof's
    # own lines on the same stderr can land between them.
    sys.stderr.write(f"table_options: {'ok' if ok else 'WRONG RESULTS'}\n")
    # Stay a moment, interpreter whole, while gpuprof names the Python
    # frames of the last entries (its reader wakes every 100 ms): a CPython
    # 3.13 that finalizes right after its ops may free its __main__ code
    # first, and the outermost frame then reads as [unknown Python frame]
    # (docs/stacks.md, "Limits").
    time.sleep(0.5)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

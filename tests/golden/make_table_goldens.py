#!/usr/bin/python3
"""Writes the op-table golden files with torch's own table code.

Run with Debian's /usr/bin/python3 (the one with torch 1.13), from anywhere:

    /usr/bin/python3 tests/golden/make_table_goldens.py

For each case it writes tests/golden/table_<case>.in (the rows, sort key and
row limit, read by tests/unit/op_table_test.cpp) and table_<case>.txt (what
torch's EventList.table() returns for them; the C++ formatter must return the
same bytes).

The rows become real FunctionEventAvg objects, filled in the way
key_averages() leaves them for a CPU-only profile (node_id -1, input_shapes
"", stack []), and go through EventList.table() -> _build_table unmodified.
Times are nanoseconds on our side; torch holds microseconds, so each becomes
ns / 1000.0, the same double the C++ side computes.

torch sorts stably over key_averages() order; gpuprof breaks ties by name, so
the rows are handed to torch in name order and both sides agree on ties.

Before writing, check_against_live_profile() profiles a small model and
asserts that objects built this way print exactly what
prof.key_averages().table() prints, for every sort key.
"""

import os
import sys

import torch
from torch.autograd.profiler_util import EventList, FunctionEventAvg

GOLDEN_DIR = os.path.dirname(os.path.abspath(__file__))
SORT_KEYS = ["cpu_time_total", "self_cpu_time_total", "cpu_time", "count"]


def make_avg(name, calls, cpu_total_ns, self_cpu_ns):
    avg = FunctionEventAvg()
    avg.key = name
    avg.count = calls
    avg.cpu_time_total = cpu_total_ns / 1000.0
    avg.self_cpu_time_total = self_cpu_ns / 1000.0
    avg.node_id = -1  # what FunctionEvent has outside torch.distributed
    avg.input_shapes = ""  # key_averages() without group_by_input_shapes
    avg.stack = []  # key_averages() with group_by_stack_n=0
    return avg


def torch_table(rows, sort_by, row_limit):
    """rows: (name, calls, cpu_total_ns, self_cpu_ns) in any order."""
    avgs = [make_avg(*row) for row in sorted(rows, key=lambda row: row[0])]
    events = EventList(avgs, use_cuda=False, profile_memory=False, with_flops=False)
    return events.table(sort_by=sort_by, row_limit=row_limit)


def check_against_live_profile():
    from torch.profiler import ProfilerActivity, profile, record_function

    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(8, 32)
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        with record_function("## step ##"):
            for _ in range(3):
                model(x).softmax(-1).sum()
    averages = prof.key_averages()
    rebuilt = EventList(
        [make_avg(e.key, e.count, e.cpu_time_total * 1000, e.self_cpu_time_total * 1000)
         for e in averages],
        use_cuda=False, profile_memory=False, with_flops=False)
    for key in SORT_KEYS:
        for limit in (100, 5):
            real = averages.table(sort_by=key, row_limit=limit)
            ours = rebuilt.table(sort_by=key, row_limit=limit)
            if real != ours:
                sys.exit("rebuilt FunctionEventAvg objects print differently from a real "
                         f"profile (sort_by={key}, row_limit={limit}):\n{real}\n{ours}")


# A torch 1.13 CPU profile of a small CNN (conv, relu, flatten, linear,
# softmax, sum; twice, under record_function), captured once and frozen so
# that regenerating changes nothing. Microseconds, as torch recorded them.
REAL_CNN_US = [
    ("aten::zeros", 1, 139, 105), ("aten::empty", 6, 10, 10), ("aten::zero_", 1, 29, 29),
    ("## forward ##", 1, 1637, 48), ("aten::conv2d", 2, 484, 204),
    ("aten::convolution", 2, 479, 20), ("aten::_convolution", 2, 459, 12),
    ("aten::mkldnn_convolution", 2, 447, 442), ("aten::as_strided_", 2, 1, 1),
    ("aten::relu", 2, 31, 11), ("aten::clamp_min", 2, 20, 20), ("aten::flatten", 2, 50, 41),
    ("aten::_reshape_alias", 2, 9, 9), ("aten::linear", 2, 513, 6), ("aten::t", 2, 11, 7),
    ("aten::transpose", 2, 4, 3), ("aten::as_strided", 6, 1, 1), ("aten::addmm", 2, 496, 484),
    ("aten::expand", 2, 3, 3), ("aten::copy_", 2, 9, 9), ("aten::resolve_conj", 4, 0, 0),
    ("aten::softmax", 2, 251, 64), ("aten::_softmax", 2, 187, 187), ("aten::sum", 2, 60, 56),
    ("aten::fill_", 2, 4, 4),
]
REAL_CNN = [(name, calls, total * 1000, self * 1000) for name, calls, total, self in REAL_CNN_US]

# Nanosecond times across torch's unit switches (us < 1000 <= ms < 1e6 <= s),
# and halfway points: 1234500 ns is 1.2345 ms, whose double decides the digit.
TIME_RANGES = [
    ("op::zero", 3, 0, 0),
    ("op::one_ns", 1, 1, 1),
    ("op::sub_us", 7, 999, 499),
    ("op::one_us", 1, 1000, 1000),
    ("op::just_under_ms", 3, 999999, 999999),
    ("op::one_ms", 1, 1000000, 1000000),
    ("op::half_ms_tie", 2, 1234500, 1234500),
    ("op::ms_avg_tie", 2, 2469000, 1000500),
    ("op::just_under_s", 1, 999999999, 123456789),
    ("op::one_s", 1, 1000000000, 2500),
    ("op::half_s_tie", 1, 1234500000, 1234500000),
    ("op::hours", 3, 12345678901234, 9876543210987),
]

# Averages and percentages that land exactly on a rounding tie in binary:
# 1000 ns / 16 = 0.0625 us ("0.062", ties to even), 3000 ns / 16 = 0.1875 us,
# and shares of 0.125% and 0.375% of a 800 us self total. 9 ns / 6 calls is
# 0.0015 us: (9 / 1000.0) / 6 prints "0.001us", (9 / 6) / 1000.0 "0.002us".
ROUNDING_TIES = [
    ("tie::avg_9ns_over_6", 6, 9, 0),
    ("tie::avg_0.0625", 16, 1000, 1000),
    ("tie::avg_0.1875", 16, 3000, 3000),
    ("tie::share_0.125", 1, 1000, 1000),
    ("tie::share_0.375", 1, 3000, 3000),
    ("tie::rest", 1, 792000, 792000),  # self total 800 us
]

# Name lengths around torch's cut: names of 52 or more characters keep 52 and
# get "..." (a 52-character name too); 51 characters print whole.
LONG_NAMES = [
    ("aten::" + "x" * 44, 1, 5000, 5000),  # 50
    ("aten::" + "y" * 45, 2, 6000, 6000),  # 51
    ("aten::" + "z" * 46, 3, 7000, 7000),  # 52
    ("aten::" + "w" * 47, 4, 8000, 8000),  # 53
    ("aten::_scaled_dot_product_efficient_attention_backward_with_extra_words", 5, 9000, 9000),
    ("aten::mm", 6, 10000, 4000),
]

# Python counts code points, not bytes, for widths and the cut.
UNICODE_NAMES = [
    ("## förward ✓ ##", 1, 20000, 5000),
    ("## 前向传播 ##", 2, 12000, 12000),
    ("## " + "é" * 60 + " ##", 1, 3000, 3000),
    ("aten::add", 4, 1500, 1500),
]

# torch's share is time * 100.0 / total: 1980 ns of 3200 ns is 61.875% and
# prints "61.88%"; time / total * 100.0 would print "61.87%".
SHARE_ORDER = [("op::big", 1, 1980, 1980), ("op::small", 1, 1220, 1220)]

# The footer is Python's sum() of the self-time doubles in sorted order:
# 7.342ms here, where the exact sum (and the ascending-order sum) is a
# 7.3415 ms tie that prints 7.341ms. Names ascend with the times so that
# summing in name order would also print 7.341ms.
FOOTER_FLOAT_SUM = [
    ("op::e", 1, 2475910, 2475910),
    ("op::d", 1, 2132099, 2132099),
    ("op::c", 1, 1875509, 1875509),
    ("op::b", 1, 550538, 550538),
    ("op::a", 1, 307444, 307444),
]

# Equal keys everywhere: ties fall back to name order.
TIES = [
    ("c::op", 2, 4000, 1000),
    ("a::op", 2, 4000, 2000),
    ("b::op", 4, 8000, 1000),
    ("d::op", 1, 2000, 2000),
    ("e::op", 4, 4000, 1000),
]


def many_rows(n):
    return [(f"op::generated_{i:03d}", 1 + i % 7, 1000 * (i * 37 % 101) + i, 500 * (i * 37 % 101))
            for i in range(n)]


# (case name, what it checks, rows, sort key, row limit)
CASES = [
    ("real_cnn_cpu_time_total", "a real CPU profile, torch's usual call", REAL_CNN,
     "cpu_time_total", 100),
    ("real_cnn_self_cpu_time_total", "a real profile by self time, first 10", REAL_CNN,
     "self_cpu_time_total", 10),
    ("real_cnn_cpu_time", "a real profile by average time, every row", REAL_CNN, "cpu_time", -1),
    ("real_cnn_count", "a real profile by call count (many ties)", REAL_CNN, "count", 100),
    ("time_ranges", "us, ms and s ranges, unit switches, halfway values", TIME_RANGES,
     "cpu_time_total", 100),
    ("time_ranges_by_self", "the same by self time", TIME_RANGES, "self_cpu_time_total", 100),
    ("rounding_ties", "averages and shares on exact binary ties", ROUNDING_TIES,
     "cpu_time_total", 100),
    ("share_order", "shares multiply by 100 before dividing", SHARE_ORDER,
     "cpu_time_total", 100),
    ("footer_float_sum", "the footer rounds torch's float sum, not the exact one",
     FOOTER_FLOAT_SUM, "cpu_time_total", 100),
    ("long_names", "names cut at 52 characters plus '...'", LONG_NAMES, "cpu_time_total", 100),
    ("long_name_hidden", "a name outside row_limit still sets the width", LONG_NAMES, "count", 2),
    ("unicode_names", "widths and cuts in code points", UNICODE_NAMES, "cpu_time_total", 100),
    ("short_names", "a name column narrower than the others",
     [("mm", 3, 3000, 3000), ("t", 1, 10, 10)], "cpu_time_total", 100),
    ("single_row", "one row", [("aten::conv2d", 1, 1234567, 1234567)], "cpu_time_total", 100),
    ("ties_cpu_time_total", "equal totals in name order", TIES, "cpu_time_total", 100),
    ("ties_self_cpu_time_total", "equal self times in name order", TIES,
     "self_cpu_time_total", 100),
    ("ties_cpu_time", "equal averages in name order", TIES, "cpu_time", 100),
    ("ties_count", "equal counts in name order", TIES, "count", 100),
    ("row_limit_3", "row_limit below the row count", REAL_CNN, "cpu_time_total", 3),
    ("row_limit_0", "row_limit 0: header and footer only", TIES, "cpu_time_total", 0),
    ("default_limit_120_rows", "torch's default row_limit of 100 cuts 120 rows",
     many_rows(120), "self_cpu_time_total", 100),
    ("zero_times", "all times zero: shares print NaN",
     [("op::a", 2, 0, 0), ("op::b", 1, 0, 0)], "count", 100),
    ("huge_count", "a count wider than its column", [("op::hot", 123456789012345, 5000000000000,
                                                      5000000000000), ("op::cold", 1, 1, 1)],
     "count", 100),
]


def write_case(name, description, rows, sort_by, row_limit):
    base = os.path.join(GOLDEN_DIR, f"table_{name}")
    with open(base + ".in", "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# Input of table_{name}.txt, written by make_table_goldens.py: do not edit.\n")
        f.write(f"# {description}\n")
        f.write(f"sort_by\t{sort_by}\n")
        f.write(f"row_limit\t{row_limit}\n")
        f.write("# calls\tcpu_total_ns\tself_cpu_ns\tname\n")
        for row_name, calls, total_ns, self_ns in rows:
            assert "\t" not in row_name and "\n" not in row_name
            f.write(f"{calls}\t{total_ns}\t{self_ns}\t{row_name}\n")
    with open(base + ".txt", "w", encoding="utf-8", newline="\n") as f:
        f.write(torch_table(rows, sort_by, row_limit))


def main():
    assert torch.__version__.startswith("1.13"), f"goldens are torch 1.13's; got {torch.__version__}"
    check_against_live_profile()
    for old in os.listdir(GOLDEN_DIR):
        if old.startswith("table_") and (old.endswith(".in") or old.endswith(".txt")):
            os.remove(os.path.join(GOLDEN_DIR, old))
    for case in CASES:
        write_case(*case)
    print(f"wrote {len(CASES)} table cases to {GOLDEN_DIR}")


if __name__ == "__main__":
    main()

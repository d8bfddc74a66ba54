#!/usr/bin/python3
"""Writes the op-table golden files with torch's own table code.

Run with Debian's /usr/bin/python3 (the one with torch 1.13), from anywhere:

    /usr/bin/python3 tests/golden/make_table_goldens.py

For each case it writes tests/golden/table_<case>.in (the rows and options,
read by tests/unit/op_table_test.cpp) and table_<case>.txt (what torch's
EventList.table() returns for them; the C++ formatter must return the same
bytes).

The rows become real FunctionEventAvg objects, filled in the way
key_averages() leaves them for a CPU profile (node_id -1, stack [], memory
fields, and input_shapes "" when not grouped by input shape or the real list
of lists when grouped), and go through EventList.table() -> _build_table
unmodified, with profile_memory as the case says. Times are nanoseconds on
our side; torch holds microseconds, so each becomes ns / 1000.0, the same
double the C++ side computes. Memory is bytes on both sides.

torch sorts stably over key_averages() order; gpuprof breaks ties by name,
then by str(input_shapes), so the rows are handed to torch in that order and
both sides agree on ties.

Before writing, check_against_live_profile() profiles a small model and
asserts that objects built this way print exactly what
prof.key_averages().table() prints for every sort key: once CPU-only, once
with record_shapes and profile_memory, grouped by input shape.
"""

import os
import sys
from collections import namedtuple

import torch
from torch.autograd.profiler_util import EventList, FunctionEventAvg

GOLDEN_DIR = os.path.dirname(os.path.abspath(__file__))
TIME_SORT_KEYS = ["cpu_time_total", "self_cpu_time_total", "cpu_time", "count"]
MEMORY_SORT_KEYS = ["cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage",
                    "self_cuda_memory_usage"]

# One key_averages() row. Memory is in bytes (signed). shapes is None when the
# profile is not grouped by input shape, else torch's list of lists ([] for an
# op without arguments); gpuprof holds str(shapes) and len(shapes) > 0.
Row = namedtuple("Row", "name calls cpu_total_ns self_cpu_ns cpu_mem self_cpu_mem cuda_mem "
                 "self_cuda_mem shapes", defaults=(0, 0, 0, 0, None))


def shapes_text(row):
    return "" if row.shapes is None else str(row.shapes)


def make_avg(row):
    avg = FunctionEventAvg()
    avg.key = row.name
    avg.count = row.calls
    avg.cpu_time_total = row.cpu_total_ns / 1000.0
    avg.self_cpu_time_total = row.self_cpu_ns / 1000.0
    avg.cpu_memory_usage = row.cpu_mem
    avg.self_cpu_memory_usage = row.self_cpu_mem
    avg.cuda_memory_usage = row.cuda_mem
    avg.self_cuda_memory_usage = row.self_cuda_mem
    avg.node_id = -1  # what FunctionEvent has outside torch.distributed
    # key_averages() without group_by_input_shape and without record_shapes
    # leaves "" here; gpuprof has no shapes then and prints no column.
    avg.input_shapes = "" if row.shapes is None else row.shapes
    avg.stack = []  # key_averages() with group_by_stack_n=0
    return avg


def torch_table(rows, sort_by, row_limit, profile_memory):
    """rows: Rows in any order."""
    ordered = sorted(rows, key=lambda row: (row.name, shapes_text(row)))
    events = EventList([make_avg(row) for row in ordered], use_cuda=False,
                       profile_memory=profile_memory, with_flops=False)
    return events.table(sort_by=sort_by, row_limit=row_limit)


def rebuild(averages, profile_memory, grouped):
    """Rows from a real key_averages(), as FunctionEventAvg objects built here."""
    rows = [Row(e.key, e.count, e.cpu_time_total * 1000, e.self_cpu_time_total * 1000,
                e.cpu_memory_usage, e.self_cpu_memory_usage, e.cuda_memory_usage,
                e.self_cuda_memory_usage, e.input_shapes if grouped else None)
            for e in averages]
    return EventList([make_avg(row) for row in rows], use_cuda=False,
                     profile_memory=profile_memory, with_flops=False)


def check_same(averages, rebuilt, keys, what):
    for key in keys:
        for limit in (100, 5):
            real = averages.table(sort_by=key, row_limit=limit)
            ours = rebuilt.table(sort_by=key, row_limit=limit)
            if real != ours:
                sys.exit("rebuilt FunctionEventAvg objects print differently from a real "
                         f"{what} profile (sort_by={key}, row_limit={limit}):\n{real}\n{ours}")


def check_against_live_profile():
    from torch.profiler import ProfilerActivity, profile, record_function

    model = torch.nn.Sequential(torch.nn.Linear(32, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    x = torch.randn(8, 32)

    def step():
        with record_function("## step ##"):
            for _ in range(3):
                out = model(x).softmax(-1)
                out.sum()
        # Freed outside any op: torch's top-level "[memory]" row.
        del out

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    averages = prof.key_averages()
    check_same(averages, rebuild(averages, False, False), TIME_SORT_KEYS, "CPU-only")

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True) as prof:
        step()
    averages = prof.key_averages(group_by_input_shape=True)
    assert any(e.key == "[memory]" for e in averages), "no [memory] row to check"
    assert any(e.cpu_memory_usage != 0 for e in averages), "no memory recorded"
    check_same(averages, rebuild(averages, True, True), TIME_SORT_KEYS + MEMORY_SORT_KEYS,
               "shapes-and-memory")


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


# A torch 1.13 profile of a small CNN with record_shapes=True and
# profile_memory=True, key_averages(group_by_input_shape=True): rows of one
# name with different shapes (aten::as_strided, aten::resolve_conj), ops
# without arguments ("## forward ##", [memory]: a tensor freed outside any
# op), negative self memory. Captured once and frozen; microseconds, as torch
# recorded them, and bytes.
REAL_CNN_SHAPES_MEMORY_US = [
    ("aten::zeros", 1, 91, 42, 4, 0, 0, 0, [[], [], [], [], []]),
    ("aten::empty", 7, 32, 32, 234404, 234404, 0, 0, [[], [], [], [], [], []]),
    ("aten::zero_", 1, 27, 27, 0, 0, 0, 0, [[1]]),
    ("## forward ##", 1, 1529, 256, 115360, -346088, 0, 0, []),
    ("aten::conv2d", 2, 476, 8, 230400, 0, 0, 0,
     [[4, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], []]),
    ("aten::convolution", 2, 468, 34, 230400, 0, 0, 0,
     [[4, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], [], [], []]),
    ("aten::_convolution", 2, 434, 17, 230400, 0, 0, 0,
     [[4, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], [], [], [], [], [], [], []]),
    ("aten::mkldnn_convolution", 2, 417, 406, 230400, 0, 0, 0,
     [[4, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], []]),
    ("aten::as_strided_", 2, 4, 4, 0, 0, 0, 0, [[4, 8, 30, 30], [], [], []]),
    ("aten::relu", 2, 40, 16, 230400, 0, 0, 0, [[4, 8, 30, 30]]),
    ("aten::clamp_min", 2, 24, 24, 230400, 230400, 0, 0, [[4, 8, 30, 30], []]),
    ("aten::flatten", 2, 28, 18, 0, 0, 0, 0, [[4, 8, 30, 30], [], []]),
    ("aten::_reshape_alias", 2, 10, 10, 0, 0, 0, 0, [[4, 8, 30, 30], [], []]),
    ("aten::linear", 2, 484, 7, 320, 0, 0, 0, [[4, 7200], [10, 7200], [10]]),
    ("aten::t", 2, 15, 8, 0, 0, 0, 0, [[10, 7200]]),
    ("aten::transpose", 2, 7, 5, 0, 0, 0, 0, [[10, 7200], [], []]),
    ("aten::as_strided", 2, 2, 2, 0, 0, 0, 0, [[10, 7200], [], [], []]),
    ("aten::addmm", 2, 462, 441, 320, 320, 0, 0, [[10], [4, 7200], [7200, 10], [], []]),
    ("aten::expand", 2, 5, 5, 0, 0, 0, 0, [[10], [], []]),
    ("aten::as_strided", 2, 0, 0, 0, 0, 0, 0, [[10], [], [], []]),
    ("aten::copy_", 2, 16, 16, 0, 0, 0, 0, [[4, 10], [4, 10], []]),
    ("aten::resolve_conj", 2, 0, 0, 0, 0, 0, 0, [[4, 10]]),
    ("aten::resolve_conj", 2, 0, 0, 0, 0, 0, 0, [[4, 7200]]),
    ("aten::softmax", 2, 159, 35, 320, 0, 0, 0, [[4, 10], [], []]),
    ("aten::_softmax", 2, 124, 124, 320, 320, 0, 0, [[4, 10], [], []]),
    ("aten::sum", 2, 84, 80, 8, 8, 0, 0, [[4, 10], []]),
    ("aten::as_strided", 2, 0, 0, 0, 0, 0, 0, [[], [], [], []]),
    ("aten::fill_", 2, 4, 4, 0, 0, 0, 0, [[1, 1], []]),
    ("[memory]", 1, 0, 0, -4000, -4000, 0, 0, []),
]
REAL_CNN_SHAPES_MEMORY = [Row(name, calls, total * 1000, self * 1000, *rest)
                          for name, calls, total, self, *rest in REAL_CNN_SHAPES_MEMORY_US]

KB, MB, GB = 1024, 1024 ** 2, 1024 ** 3

# _format_memory across its unit switches (b < 1024 <= Kb < 1 Mb <= Mb < 1 Gb
# <= Gb, on the magnitude, so negatives too), just under each switch (which
# rounds up into "1024.00"), values whose '{:.2f}' digit is decided by the
# double (1.125 and 1.375 units are exact binary ties: even digit), and the
# int64 ends. CPU only: no row has self CUDA memory, so no CUDA columns.
MEMORY_UNITS = [
    Row("mem::zero", 1, 1000, 1000, 0, 0),
    Row("mem::572_b", 1, 1000, 1000, 572, -572),
    Row("mem::1023_b", 1, 1000, 1000, 1023, -1023),
    Row("mem::1_kb", 1, 1000, 1000, KB, -KB),
    Row("mem::1535_b", 1, 1000, 1000, 1535, -1535),
    Row("mem::tie_1.125_kb", 1, 1000, 1000, 1152, -1152),
    Row("mem::tie_1.375_kb", 1, 1000, 1000, 1408, -1408),
    Row("mem::minus_3156_b", 1, 1000, 1000, -3156, 3156),
    Row("mem::19.53_kb", 1, 1000, 1000, 20000, 19999),
    Row("mem::just_under_mb", 1, 1000, 1000, MB - 1, -(MB - 1)),
    Row("mem::1_mb", 1, 1000, 1000, MB, -MB),
    Row("mem::tie_1.125_mb", 1, 1000, 1000, 1179648, -1179648),
    Row("mem::94.79_mb", 1, 1000, 1000, 99393536, 99393535),
    Row("mem::just_under_gb", 1, 1000, 1000, GB - 1, -(GB - 1)),
    Row("mem::1_gb", 1, 1000, 1000, GB, -GB),
    Row("mem::tie_2.625_gb", 1, 1000, 1000, 2818572288, -2818572288),
    Row("mem::petabyte", 1, 1000, 1000, 2 ** 50, 2 ** 50 + 1),
    Row("mem::int64_max", 1, 1000, 1000, 2 ** 63 - 1, 0),
    Row("mem::int64_min", 1, 1000, 1000, -2 ** 63, 0),
]

# CUDA memory columns come with any self_cuda_memory_usage > 0, even one in a
# row that row_limit hides.
CUDA_MEMORY = [
    Row("aten::empty", 4, 8000, 8000, 4096, 4096, 2 * MB, 2 * MB),
    Row("aten::conv2d", 2, 50000, 1000, 0, 0, 3 * MB + 1, 0),
    Row("aten::cudnn_convolution", 2, 49000, 49000, 0, 0, 3 * MB + 1, 3 * MB + 1),
    Row("aten::add_", 8, 4000, 4000, 0, 0, 0, 0),
    Row("aten::to", 1, 900000, 100, 0, 0, 1536 * MB, -1),
]

# CUDA memory recorded, but no row has positive *self* CUDA memory: torch
# prints no CUDA memory columns (its test is self_cuda_memory_usage > 0).
CUDA_MEMORY_NOT_SELF = [
    Row("aten::empty", 4, 8000, 8000, 4096, 4096, 0, 0),
    Row("## step ##", 1, 90000, 78000, 0, -4096, 5 * MB, -5 * MB),
    Row("aten::linear", 2, 4000, 4000, 0, 0, 5 * MB, 0),
]

# Grouped by input shape: one name with several shapes, an op without
# arguments ([]), and a shapes string of 100 characters: the column is 80
# wide and the string is cut to 80, without "...".
LONG_SHAPES = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
                23, 24, 25, 26, 27, 28, 29, 30], [7]]
assert len(str(LONG_SHAPES)) > 80
INPUT_SHAPES = [
    Row("aten::add", 3, 3000, 3000, shapes=[[5, 3], [5, 3], []]),
    Row("aten::add", 1, 2000, 2000, shapes=[[10, 3], [10, 3], []]),
    Row("aten::add", 2, 1000, 1000, shapes=[[], [], []]),
    Row("aten::cat", 1, 900, 900, shapes=LONG_SHAPES),
    Row("## step ##", 1, 9000, 2100, shapes=[]),
    Row("aten::empty", 5, 500, 500, shapes=[[], [], [], [], [], []]),
]

# Widths: the shapes column is the longest string plus 4, here under 80;
# every row counts, shown or not.
SHORT_SHAPES = [
    Row("aten::relu", 2, 4000, 4000, shapes=[[8, 16]]),
    Row("aten::mm", 1, 9000, 9000, shapes=[[8, 16], [16, 4]]),
    Row("aten::t", 1, 100, 100, shapes=[[16, 4]]),
]

# Grouped, but no op had arguments: len(input_shapes) is 0 everywhere and
# torch prints no Input Shapes column.
NO_ARGUMENT_SHAPES = [
    Row("## step ##", 1, 9000, 4000, shapes=[]),
    Row("## data ##", 2, 5000, 5000, shapes=[]),
]

# Shapes and memory together, with CUDA memory, a [memory] row (allocations
# outside any op: no time, count = events, no arguments), and equal memory
# keys among rows of one name with different shapes ("[[10, 3]]" sorts before
# "[[5, 3]]" by bytes) and among different names, for every memory key.
MEMORY_SHAPES_TIES = [
    Row("aten::add", 2, 3000, 3000, 2400, 2400, 0, 0, [[5, 3], [5, 3], []]),
    Row("aten::add", 2, 3000, 3000, 2400, 2400, 0, 0, [[10, 3], [10, 3], []]),
    Row("aten::mul", 1, 2000, 2000, 2400, 1200, 512, 512, [[5, 3], []]),
    Row("aten::empty", 4, 800, 800, 0, 0, 4096, 4096, [[], [], [], [], [], []]),
    Row("aten::linear", 1, 9000, 1000, 0, -1200, 4096, 0, [[5, 3], [3, 3], [3]]),
    Row("## step ##", 1, 20000, 6000, -2400, -2400, 512, 0, []),
    Row("[memory]", 3, 0, 0, -1048576, -1048576, -4096, -4096, []),
]


def many_rows(n):
    return [(f"op::generated_{i:03d}", 1 + i % 7, 1000 * (i * 37 % 101) + i, 500 * (i * 37 % 101))
            for i in range(n)]


# (case name, what it checks, rows, sort key, row limit[, profile_memory])
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
    ("memory_units", "memory columns: b/Kb/Mb/Gb switches, negatives, rounding",
     MEMORY_UNITS, "cpu_time_total", 100, True),
    ("memory_not_recorded", "memory values but no profile_memory: no memory columns",
     MEMORY_UNITS, "cpu_time_total", 100, False),
    ("cuda_memory", "CUDA memory columns from a hidden row's self CUDA memory",
     CUDA_MEMORY, "count", 2, True),
    ("cuda_memory_not_self", "no CUDA memory columns without positive self CUDA memory",
     CUDA_MEMORY_NOT_SELF, "cpu_time_total", 100, True),
    ("input_shapes", "Input Shapes column: several shapes per name, [], a cut string",
     INPUT_SHAPES, "cpu_time_total", 100),
    ("input_shapes_hidden_long", "a long shapes string outside row_limit sets the width",
     INPUT_SHAPES, "count", 2),
    ("input_shapes_short", "a shapes column narrower than 80", SHORT_SHAPES,
     "cpu_time_total", 100),
    ("input_shapes_no_arguments", "grouped, but no op had arguments: no shapes column",
     NO_ARGUMENT_SHAPES, "self_cpu_time_total", 100),
    ("real_cnn_shapes_memory", "a real grouped profile with memory, torch's usual call",
     REAL_CNN_SHAPES_MEMORY, "cpu_time_total", 100, True),
    ("real_cnn_shapes_memory_by_self_memory", "a real grouped profile by self CPU memory",
     REAL_CNN_SHAPES_MEMORY, "self_cpu_memory_usage", 100, True),
    ("real_cnn_shapes_memory_count", "a real grouped profile by count (ties by shapes)",
     REAL_CNN_SHAPES_MEMORY, "count", -1, True),
    ("real_cnn_shapes_no_memory", "a real grouped profile without profile_memory",
     REAL_CNN_SHAPES_MEMORY, "cpu_time", 100, False),
] + [(f"memory_ties_{key}", f"sorted by {key}: ties by name, then shapes",
      MEMORY_SHAPES_TIES, key, 100, True) for key in MEMORY_SORT_KEYS] + [
    ("memory_ties_time_key", "shapes and memory sorted by a time key", MEMORY_SHAPES_TIES,
     "self_cpu_time_total", 100, True),
    ("memory_units_by_cpu_memory", "int64 extremes sort as integers", MEMORY_UNITS,
     "cpu_memory_usage", -1, True),
]


def write_case(name, description, rows, sort_by, row_limit, profile_memory=False):
    rows = [Row(*row) for row in rows]
    grouped = rows[0].shapes is not None
    assert all((row.shapes is not None) == grouped for row in rows), name
    base = os.path.join(GOLDEN_DIR, f"table_{name}")
    with open(base + ".in", "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# Input of table_{name}.txt, written by make_table_goldens.py: do not edit.\n")
        f.write(f"# {description}\n")
        f.write(f"sort_by\t{sort_by}\n")
        f.write(f"row_limit\t{row_limit}\n")
        f.write(f"profile_memory\t{int(profile_memory)}\n")
        f.write(f"group_by_input_shape\t{int(grouped)}\n")
        f.write("# calls\tcpu_total_ns\tself_cpu_ns\tcpu_mem\tself_cpu_mem\tcuda_mem\t"
                "self_cuda_mem\thas_inputs\tinput_shapes\tname\n")
        for row in rows:
            for text in (row.name, shapes_text(row)):
                assert "\t" not in text and "\n" not in text
            has_inputs = row.shapes is not None and len(row.shapes) > 0
            f.write(f"{row.calls}\t{row.cpu_total_ns}\t{row.self_cpu_ns}\t{row.cpu_mem}\t"
                    f"{row.self_cpu_mem}\t{row.cuda_mem}\t{row.self_cuda_mem}\t"
                    f"{int(has_inputs)}\t{shapes_text(row)}\t{row.name}\n")
    with open(base + ".txt", "w", encoding="utf-8", newline="\n") as f:
        f.write(torch_table(rows, sort_by, row_limit, profile_memory))


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

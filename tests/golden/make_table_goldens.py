#!/usr/bin/python3
"""Writes the op-table golden files with torch's own table code.

Run with Debian's /usr/bin/python3 (the one with torch 1.13), from anywhere:

    /usr/bin/python3 tests/golden/make_table_goldens.py

For each case it writes tests/golden/table_<case>.in (the rows and options,
read by tests/unit/op_table_test.cpp) and table_<case>.txt (what torch's
EventList.table() returns for them; the C++ formatter must return the same
bytes).

The rows become real FunctionEventAvg objects, filled in the way
key_averages() leaves them for a CPU profile (node_id -1, memory fields,
input_shapes "" when not grouped by input shape or the real list of lists
when grouped, stack [] when not grouped by stack or the top frames,
innermost first, when grouped), and go through EventList.table() ->
_build_table unmodified, with profile_memory as the case says. Times are nanoseconds on
our side; torch holds microseconds, so each becomes ns / 1000.0, the same
double the C++ side computes. Memory is bytes on both sides.

torch sorts stably over key_averages() order; gpuprof breaks ties by name,
then by str(input_shapes), then by the stack (frame by frame), so the rows
are handed to torch in that order and both sides agree on ties.

Before writing, check_against_live_profile() profiles a small model and
asserts that objects built this way print exactly what
prof.key_averages().table() prints for every sort key: once CPU-only, once
with record_shapes and profile_memory, grouped by input shape, and once
with with_stack, grouped by the top 5 frames (with and without input
shapes).
"""

import os
import sys
from collections import namedtuple

import torch
from torch.autograd import DeviceType
from torch.autograd.profiler_util import EventList, FunctionEventAvg

GOLDEN_DIR = os.path.dirname(os.path.abspath(__file__))
TIME_SORT_KEYS = ["cpu_time_total", "self_cpu_time_total", "cpu_time", "count"]
CUDA_SORT_KEYS = ["cuda_time_total", "self_cuda_time_total", "cuda_time"]
MEMORY_SORT_KEYS = ["cpu_memory_usage", "self_cpu_memory_usage", "cuda_memory_usage",
                    "self_cuda_memory_usage"]

# One key_averages() row. Memory is in bytes (signed). shapes is None when the
# profile is not grouped by input shape, else torch's list of lists ([] for an
# op without arguments); gpuprof holds str(shapes) and len(shapes) > 0. stack
# is torch's evt.stack: () when not grouped by stack, else the group's top
# frames, innermost first (() too for calls without Python frames).
#
# GPU times (kineto's, gpuprof's from the CUPTI shim): self_cuda_ns and
# cuda_total_ns; on_gpu marks torch's kernel rows (device_type CUDA: a
# kernel, memcpy or memset name, no CPU time).
Row = namedtuple("Row", "name calls cpu_total_ns self_cpu_ns cpu_mem self_cpu_mem cuda_mem "
                 "self_cuda_mem shapes stack self_cuda_ns cuda_total_ns on_gpu",
                 defaults=(0, 0, 0, 0, None, (), 0, 0, False))


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
    avg.cuda_time_total = row.cuda_total_ns / 1000.0
    avg.self_cuda_time_total = row.self_cuda_ns / 1000.0
    # A kernel row: kineto's device event (is_legacy stays False), which is
    # what _build_table sums for its "Self CUDA time total".
    avg.device_type = DeviceType.CUDA if row.on_gpu else DeviceType.CPU
    avg.node_id = -1  # what FunctionEvent has outside torch.distributed
    # key_averages() without group_by_input_shape and without record_shapes
    # leaves "" here; gpuprof has no shapes then and prints no column.
    avg.input_shapes = "" if row.shapes is None else row.shapes
    # key_averages() keeps evt.stack[:group_by_stack_n]: [] when not grouped.
    avg.stack = list(row.stack)
    return avg


def torch_table(rows, sort_by, row_limit, profile_memory):
    """rows: Rows in any order."""
    ordered = sorted(rows, key=lambda row: (row.name, shapes_text(row), list(row.stack), row.on_gpu))
    events = EventList([make_avg(row) for row in ordered], use_cuda=False,
                       profile_memory=profile_memory, with_flops=False)
    return events.table(sort_by=sort_by, row_limit=row_limit)


def rebuild(averages, profile_memory, grouped):
    """Rows from a real key_averages(), as FunctionEventAvg objects built here."""
    rows = [Row(e.key, e.count, e.cpu_time_total * 1000, e.self_cpu_time_total * 1000,
                e.cpu_memory_usage, e.self_cpu_memory_usage, e.cuda_memory_usage,
                e.self_cuda_memory_usage, e.input_shapes if grouped else None, tuple(e.stack))
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

    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, with_stack=True) as prof:
        step()
    averages = prof.key_averages(group_by_stack_n=5)
    assert any(len(e.stack) == 5 for e in averages), "no 5-frame stack to check"
    assert any("nn.Module: Linear_0" in e.stack for e in averages), "no module frame"
    assert len({e.key for e in averages}) < len(averages), "no name split by its stack"
    check_same(averages, rebuild(averages, False, False), TIME_SORT_KEYS, "with-stack")
    averages = prof.key_averages(group_by_input_shape=True, group_by_stack_n=5)
    check_same(averages, rebuild(averages, False, True), TIME_SORT_KEYS, "with-stack-and-shapes")


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


# Stacks (record --with-stack, report --group-by-stack-n N): torch's
# evt.stack, innermost first. The source column is as wide as the longest
# frame of any row plus 4, at most 75; longer frames keep their last 72
# code points after "...". Frames of 75 code points print whole, 76 get cut.
def frame_of_length(length, line, function):
    """A frame "<dirs>/model.py(LINE): FUNCTION" of exactly `length` code points."""
    head = "/home/user/venv/lib/python3.10/site-packages/"
    tail = f"/model.py({line}): {function}"
    frame = head + "x" * (length - len(head) - len(tail)) + tail
    assert len(frame) == length
    return frame


CONV_STACK = ("torch/nn/modules/conv.py(454): _conv_forward",
              "torch/nn/modules/conv.py(462): forward", "nn.Module: Conv2d_0",
              "torch/nn/modules/container.py(202): forward", "nn.Module: Sequential_0")
LINEAR_STACK = ("torch/nn/modules/linear.py(113): forward", "nn.Module: Linear_0",
                "torch/nn/modules/container.py(202): forward", "nn.Module: Sequential_0",
                "train.py(31): step")
LONG_STACK = (frame_of_length(120, 114, "forward"), frame_of_length(76, 20, "wrapped"),
              frame_of_length(75, 21, "inner"), "nn.Module: CustomBlock_0",
              frame_of_length(74, 9, "outer"))
STEP_STACK = ("torch/autograd/profiler.py(487): __enter__", "train.py(30): step",
              "train.py(44): main", "train.py(48): <module>",
              "<frozen runpy>(88): _run_code")
STACK_BASIC = [
    Row("## step ##", 1, 900000, 60000, stack=STEP_STACK),
    Row("aten::conv2d", 2, 400000, 8000, stack=CONV_STACK),
    Row("aten::mkldnn_convolution", 2, 380000, 370000, stack=CONV_STACK),
    Row("aten::empty", 4, 5000, 5000, stack=CONV_STACK),
    Row("aten::empty", 2, 3000, 3000, stack=LINEAR_STACK),
    Row("aten::linear", 2, 420000, 5000, stack=LINEAR_STACK),
    Row("aten::addmm", 2, 410000, 400000, stack=LONG_STACK),
    Row("aten::relu", 2, 20000, 20000, stack=LONG_STACK[1:]),
]

# Stacks with input shapes: calls without Python frames (autograd's thread)
# have an empty stack and still get the blank line; stacks shorter than 5
# (an op called from the script's top level); one name and shapes split by
# stack, with equal counts, so that ties fall back to the stack. The longest
# frame (55 code points: a 59-wide column) is in the row with the least time.
SCRIPT = ("train.py(12): <module>",)
STACK_MIXED = [
    Row("aten::add", 2, 3000, 3000, shapes=[[5, 3], [5, 3], []],
        stack=("model.py(20): forward", "nn.Module: Block_0", "train.py(9): step") + SCRIPT),
    Row("aten::add", 2, 2000, 2000, shapes=[[5, 3], [5, 3], []],
        stack=("model.py(20): forward", "nn.Module: Block_1", "train.py(9): step") + SCRIPT),
    Row("aten::add", 2, 1000, 1000, shapes=[[5, 3], [5, 3], []], stack=()),
    Row("aten::add", 2, 1500, 1500, shapes=[[5, 3], [5, 3], []],
        stack=("model.py(20): forward",)),
    Row("aten::mul", 2, 4000, 4000, shapes=[[5, 3], []], stack=SCRIPT),
    Row("aten::ones", 1, 700, 600, shapes=[[], [], [], [], []],
        stack=("<built-in method ones of type object at 0x7f7d6212d1e0>",) + SCRIPT),
    Row("autograd::engine::evaluate_function: AddBackward0", 2, 9000, 3000, shapes=[],
        stack=()),
    Row("## step ##", 2, 30000, 7000, shapes=[], stack=("train.py(9): step",) + SCRIPT),
]

# Memory columns and a [memory] row (allocator events outside every op: no
# stack) beside stacks and shapes.
STACK_MIXED_MEMORY = [row._replace(cpu_mem=2400 * i, self_cpu_mem=1200 * i - 600)
                      for i, row in enumerate(STACK_MIXED)] + [
    Row("[memory]", 3, 0, 0, -4096, -4096, shapes=[], stack=()),
]

# group_by_stack_n=8 keeps 8 frames, torch prints 5; the widest frame is the
# 7th, which never prints but sets the width.
DEEP_STACK = tuple(f"deep.py({i}): level_{i}" for i in range(1, 9))
STACK_DEEPER_THAN_5 = [
    Row("aten::mm", 3, 3000, 3000, stack=DEEP_STACK[:6] + ("deep.py(7): " + "w" * 50,) +
        DEEP_STACK[7:]),
    Row("aten::bmm", 1, 5000, 5000, stack=DEEP_STACK),
    Row("aten::t", 2, 100, 100, stack=DEEP_STACK[2:]),
]

# Frames short enough that the column (14 wide) is narrower than its
# 15-character header: Python pads but never cuts, so the header line runs
# one column further than the separators.
STACK_NARROW = [
    Row("aten::mm", 1, 3000, 3000, stack=("a.py(1): f", "a.py(2): g")),
    Row("aten::t", 1, 1000, 1000, stack=("a.py(3): h",)),
]

# Widths and trim_path's cut count code points: 2- and 3-byte UTF-8 frames,
# one of them 90 code points long.
STACK_UNICODE = [
    Row("## förward ✓ ##", 1, 20000, 5000,
        stack=("modèle.py(3): förward", "nn.Module: Réseau_0", "训练.py(7): 主函数")),
    Row("aten::add", 4, 1500, 1500,
        stack=("/données/" + "é" * 60 + "/训练.py(12): étape", "训练.py(7): 主函数")),
]

# Grouped by stack, but no call had Python frames: no Source Location
# column and no blank lines, as when not grouped.
STACK_ALL_EMPTY = [
    Row("autograd::engine::evaluate_function: MmBackward0", 2, 9000, 1000),
    Row("aten::mm", 4, 8000, 8000),
]


# A torch 1.13 CPU profile with with_stack=True of a small CNN (conv, relu,
# flatten, linear, softmax, sum; twice, under record_function),
# key_averages(group_by_stack_n=5): names split by stack (aten::empty three
# times, aten::as_strided twice), stacks shorter than 5, torch's frames of
# C functions and nn.Modules. Captured once and frozen; microseconds, as
# torch recorded them. (torch 1.13 prints a function's def line for frames
# entered while profiling, and the current line for frames already running.)
_ZEROS = ["<built-in method zeros of type object at 0x7fe14d32d1e0>",
          "torch/autograd/profiler.py(478): __init__", "train.py(17): step",
          "train.py(23): <module>"]
_ENTER = ["<built-in method _record_function_enter of PyCapsule object at 0x7fe12bb09920>",
          "torch/_ops.py(437): __call__", "torch/autograd/profiler.py(487): __enter__",
          "train.py(17): step", "train.py(23): <module>"]
_CONV = ["<built-in method conv2d of type object at 0x7fe14d32d1e0>",
         "torch/nn/modules/conv.py(454): _conv_forward", "torch/nn/modules/conv.py(462): forward",
         "nn.Module: Conv2d_0", "train.py(10): forward"]
_NET = ["train.py(10): forward", "nn.Module: Net_0", "train.py(17): step",
        "train.py(23): <module>"]
_LINEAR = ["<built-in function linear>", "torch/nn/modules/linear.py(113): forward",
           "nn.Module: Linear_0", "train.py(10): forward", "nn.Module: Net_0"]
_SUM = ["<built-in method sum of Tensor object at 0x7fe12b6c1f90>", "train.py(17): step",
        "train.py(23): <module>"]
REAL_CNN_STACK_US = [
    ("aten::zeros", 1, 17, 14, _ZEROS), ("aten::empty", 1, 2, 2, _ZEROS),
    ("aten::zero_", 1, 1, 1, _ZEROS), ("## forward ##", 1, 860, 168, _ENTER),
    ("aten::empty", 1, 0, 0, _ENTER), ("aten::conv2d", 2, 214, 4, _CONV),
    ("aten::convolution", 2, 210, 10, _CONV), ("aten::_convolution", 2, 200, 9, _CONV),
    ("aten::mkldnn_convolution", 2, 191, 186, _CONV), ("aten::empty", 4, 5, 5, _CONV),
    ("aten::as_strided_", 2, 0, 0, _CONV),
    ("aten::relu", 2, 20, 7,
     ["<built-in method relu of type object at 0x7fe14d32d1e0>"] + _NET),
    ("aten::clamp_min", 2, 13, 13,
     ["<built-in method relu of type object at 0x7fe14d32d1e0>"] + _NET),
    ("aten::flatten", 2, 14, 11,
     ["<built-in method flatten of type object at 0x7fe14d32d1e0>"] + _NET),
    ("aten::_reshape_alias", 2, 3, 3,
     ["<built-in method flatten of type object at 0x7fe14d32d1e0>"] + _NET),
    ("aten::linear", 2, 419, 5, _LINEAR), ("aten::t", 2, 7, 3, _LINEAR),
    ("aten::transpose", 2, 3, 3, _LINEAR), ("aten::as_strided", 4, 1, 1, _LINEAR),
    ("aten::addmm", 2, 407, 402, _LINEAR), ("aten::expand", 2, 2, 2, _LINEAR),
    ("aten::copy_", 2, 3, 3, _LINEAR), ("aten::resolve_conj", 4, 0, 0, _LINEAR),
    ("aten::softmax", 2, 9, 3,
     ["<built-in method softmax of Tensor object at 0x7fe12b6c1ef0>"] + _NET),
    ("aten::_softmax", 2, 6, 6,
     ["<built-in method softmax of Tensor object at 0x7fe12b6c1ef0>"] + _NET),
    ("aten::sum", 2, 16, 16, _SUM), ("aten::as_strided", 2, 0, 0, _SUM),
    ("aten::fill_", 2, 0, 0, _SUM),
]
REAL_CNN_STACK = [Row(name, calls, total * 1000, self * 1000, stack=tuple(stack))
                  for name, calls, total, self, stack in REAL_CNN_STACK_US]


# GPU times (the CUPTI shim), a CUDA resnet-like step: op rows with Self CUDA
# (kernels they launched themselves) and CUDA total (with nested ops'),
# kernel, memcpy and memset rows (no CPU time; one call per activity), ops
# without GPU time, and a kernel launched outside every op (a GPU row whose
# time no op row has). The footer and the Self CUDA % denominator are the
# GPU rows' sum: 1.234567 ms + ... here.
CONV_KERNEL = ("void cudnn::cnn::implicit_convolve_sgemm<float, float, 1024, 5, 5, 3, 3, 3, 1, "
               "false, false, true>(int, int, int, float const*, int, float*, float const*, "
               "kernel_conv_params, unsigned long long, int, float, float, int, float const*, "
               "float const*, bool, int, int)")
ELEMENTWISE = ("void at::native::vectorized_elementwise_kernel<4, at::native::"
               "(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, c10::Scalar, "
               "c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() const::"
               "{lambda()#8}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2> >"
               "(int, at::native::(anonymous namespace)::launch_clamp_scalar(at::TensorIteratorBase&, "
               "c10::Scalar, c10::Scalar, at::native::detail::ClampLimits)::{lambda()#1}::operator()() "
               "const::{lambda()#8}::operator()() const::{lambda(float)#1}, at::detail::Array<char*, 2>)")
GEMM = "ampere_sgemm_32x32_sliced1x4_tn"
CUDA_TIMES = [
    Row("aten::conv2d", 2, 60000, 2000, self_cuda_ns=0, cuda_total_ns=1234567),
    Row("aten::cudnn_convolution", 2, 58000, 58000, self_cuda_ns=1234567, cuda_total_ns=1234567),
    Row(CONV_KERNEL, 2, 0, 0, self_cuda_ns=1234567, cuda_total_ns=1234567, on_gpu=True),
    Row("aten::relu", 2, 9000, 3000, self_cuda_ns=0, cuda_total_ns=15001),
    Row("aten::clamp_min", 2, 6000, 6000, self_cuda_ns=15001, cuda_total_ns=15001),
    Row(ELEMENTWISE, 2, 0, 0, self_cuda_ns=15001, cuda_total_ns=15001, on_gpu=True),
    Row("aten::linear", 2, 30000, 1000, self_cuda_ns=0, cuda_total_ns=96000),
    Row("aten::addmm", 2, 29000, 29000, self_cuda_ns=96000, cuda_total_ns=96000),
    Row(GEMM, 2, 0, 0, self_cuda_ns=96000, cuda_total_ns=96000, on_gpu=True),
    Row("aten::copy_", 1, 40000, 40000, self_cuda_ns=250000, cuda_total_ns=250000),
    Row("Memcpy HtoD (Pageable -> Device)", 1, 0, 0, self_cuda_ns=250000, cuda_total_ns=250000,
        on_gpu=True),
    Row("aten::zero_", 3, 3000, 3000, self_cuda_ns=1500, cuda_total_ns=1500),
    Row("Memset (Device)", 3, 0, 0, self_cuda_ns=1500, cuda_total_ns=1500, on_gpu=True),
    Row("aten::empty", 9, 900, 900),
    Row("aten::view", 4, 0, 0),  # zero CPU and GPU time: ties and NaN-free shares
    Row("void launched_outside_ops_kernel()", 5, 0, 0, self_cuda_ns=7, cuda_total_ns=7,
        on_gpu=True),
]

# Kernel rows with memory columns and input shapes (grouped: kernel rows'
# shapes are "[]", no arguments).
CUDA_TIMES_SHAPES_MEMORY = [
    Row("aten::add", 2, 3000, 3000, 0, 0, 4096, 4096, [[5, 3], [5, 3], []], self_cuda_ns=2000,
        cuda_total_ns=2000),
    Row("aten::add", 1, 2000, 2000, 0, 0, 8192, 8192, [[10, 3], [10, 3], []], self_cuda_ns=1999,
        cuda_total_ns=1999),
    Row("void at::native::elementwise_kernel<128, 2>(int)", 3, 0, 0, 0, 0, 0, 0, [],
        self_cuda_ns=3999, cuda_total_ns=3999, on_gpu=True),
    Row("## step ##", 1, 9000, 4000, 0, 0, 0, -12288, [], cuda_total_ns=3999),
]

# A kernel row and an op row of one name: gpuprof keeps them apart, the op
# row first on ties.
CUDA_SAME_NAME = [
    Row("triton_poi_fused_add_0", 2, 5000, 5000, self_cuda_ns=3000, cuda_total_ns=3000),
    Row("triton_poi_fused_add_0", 2, 0, 0, self_cuda_ns=3000, cuda_total_ns=3000, on_gpu=True),
]


def many_rows(n):
    return [(f"op::generated_{i:03d}", 1 + i % 7, 1000 * (i * 37 % 101) + i, 500 * (i * 37 % 101))
            for i in range(n)]


# (case name, what it checks, rows, sort key, row limit[, profile_memory
# [, group_by_stack_n]])
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
    ("stack_basic", "Source Location column: 5 frames a row, a name split by stack, trim_path",
     STACK_BASIC, "cpu_time_total", 100, False, 5),
    ("stack_basic_row_limit_2", "only the shown rows get frame lines", STACK_BASIC,
     "self_cpu_time_total", 2, False, 5),
    ("stack_row_limit_0", "row_limit 0 with stacks: header and footer only", STACK_BASIC,
     "cpu_time_total", 0, False, 5),
    ("stack_mixed", "empty and short stacks, input shapes, count ties broken by stack",
     STACK_MIXED, "count", -1, False, 5),
    ("stack_mixed_hidden_width", "a frame outside row_limit still sets the width",
     STACK_MIXED, "cpu_time_total", 3, False, 5),
    ("stack_mixed_memory", "stacks with memory columns and a [memory] row",
     STACK_MIXED_MEMORY, "self_cpu_memory_usage", 100, True, 5),
    ("stack_deeper_than_5", "group_by_stack_n 8: 5 frames print, all set the width",
     STACK_DEEPER_THAN_5, "cpu_time_total", 100, False, 8),
    ("stack_narrow_column", "a source column narrower than its header", STACK_NARROW,
     "cpu_time_total", 100, False, 5),
    ("stack_unicode", "frame widths and trim_path in code points", STACK_UNICODE,
     "cpu_time_total", 100, False, 5),
    ("stack_all_empty", "grouped by stack, no frames anywhere: no column", STACK_ALL_EMPTY,
     "cpu_time_total", 100, False, 5),
    ("real_cnn_stack", "a real with_stack profile, torch's usual call", REAL_CNN_STACK,
     "cpu_time_total", 100, False, 5),
    ("real_cnn_stack_count", "a real with_stack profile by count (ties by stack)",
     REAL_CNN_STACK, "count", -1, False, 5),
] + [(f"cuda_times_{key}", f"CUDA time columns and kernel rows by {key}", CUDA_TIMES, key, 100)
     for key in TIME_SORT_KEYS + CUDA_SORT_KEYS] + [
    ("cuda_times_row_limit_3", "a hidden kernel row still counts in the footer", CUDA_TIMES,
     "cpu_time_total", 3),
    ("cuda_times_shapes_memory", "CUDA times with memory columns and input shapes",
     CUDA_TIMES_SHAPES_MEMORY, "self_cuda_time_total", 100, True),
    ("cuda_times_same_name", "an op row and a kernel row of one name", CUDA_SAME_NAME,
     "cuda_time_total", 100),
    ("cuda_times_zero", "GPU rows all zero: no CUDA columns (torch asks for > 0)",
     [Row("aten::add", 1, 1000, 1000), Row("k()", 1, 0, 0, on_gpu=True)], "cpu_time_total", 100),
]


def write_case(name, description, rows, sort_by, row_limit, profile_memory=False,
               group_by_stack_n=0):
    rows = [Row(*row) for row in rows]
    grouped = rows[0].shapes is not None
    assert all((row.shapes is not None) == grouped for row in rows), name
    # key_averages() keeps at most N frames, and none when not grouped.
    assert all(len(row.stack) <= group_by_stack_n for row in rows), name
    base = os.path.join(GOLDEN_DIR, f"table_{name}")
    with open(base + ".in", "w", encoding="utf-8", newline="\n") as f:
        f.write(f"# Input of table_{name}.txt, written by make_table_goldens.py: do not edit.\n")
        f.write(f"# {description}\n")
        f.write(f"sort_by\t{sort_by}\n")
        f.write(f"row_limit\t{row_limit}\n")
        f.write(f"profile_memory\t{int(profile_memory)}\n")
        f.write(f"group_by_input_shape\t{int(grouped)}\n")
        # Written only when grouped by stack, so that the files of the
        # cases without stacks keep their bytes.
        if group_by_stack_n > 0:
            f.write(f"group_by_stack_n\t{group_by_stack_n}\n")
        # Likewise only with GPU rows or times: rows then carry three more
        # fields after self_cuda_mem.
        gpu = any(row.on_gpu or row.self_cuda_ns or row.cuda_total_ns for row in rows)
        if gpu:
            f.write("gpu_times\t1\n")
        f.write("# calls\tcpu_total_ns\tself_cpu_ns\tcpu_mem\tself_cpu_mem\tcuda_mem\t"
                "self_cuda_mem\t" + ("on_gpu\tself_cuda_ns\tcuda_total_ns\t" if gpu else "") +
                "has_inputs\tinput_shapes\tname")
        f.write("\tstack frames, innermost first\n" if group_by_stack_n > 0 else "\n")
        for row in rows:
            for text in (row.name, shapes_text(row)) + tuple(row.stack):
                assert "\t" not in text and "\n" not in text
            # An empty frame would vanish as a trailing empty field.
            assert all(row.stack), name
            has_inputs = row.shapes is not None and len(row.shapes) > 0
            f.write(f"{row.calls}\t{row.cpu_total_ns}\t{row.self_cpu_ns}\t{row.cpu_mem}\t"
                    f"{row.self_cpu_mem}\t{row.cuda_mem}\t{row.self_cuda_mem}\t")
            if gpu:
                f.write(f"{int(row.on_gpu)}\t{row.self_cuda_ns}\t{row.cuda_total_ns}\t")
            f.write(f"{int(has_inputs)}\t{shapes_text(row)}\t{row.name}")
            f.write("".join("\t" + frame for frame in row.stack) + "\n")
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

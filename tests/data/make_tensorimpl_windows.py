#!/usr/bin/python3
"""Writes tests/data/tensorimpl_windows_torch<VERSION>.txt: real TensorImpl
memory for tests/unit/tensor_layout_test.cpp.

In raw mode the BPF side copies GP_RAW_WINDOW_WORDS (32) words from the start
of every TensorImpl an operator receives (bpf/op_tracer_abi.h), and userspace finds
the field offsets in them (userspace/torch/tensor_layout.h). This script makes the
same windows from tensors of this process: for torch 1.13, Tensor._cdata is
the TensorImpl*, so ctypes can read the 256 bytes directly. The tensors cover
what operators see: 0-dim, undefined, 1..8 dims (more than 5 are stored out
of line), zero-sized, transposed, sliced, expanded, channels_last, resized,
views with a storage offset, autograd leaves and results, sparse, and many
dtypes.

Run with Debian's torch (not the python3 first on PATH):
    /usr/bin/python3 tests/data/make_tensorimpl_windows.py
Output lines are deterministic apart from pointers, reference counts and the
heap bytes past the end of the object, which are part of the window BPF reads
and so are kept as they are.
"""

import ctypes
import os
import struct
import sys

import torch

WINDOW_WORDS = 32  # GP_RAW_WINDOW_WORDS in bpf/op_tracer_abi.h


def undefined_tensor_impl_address():
    # Python turns undefined tensors into None, but operators receive
    # references to this singleton (e.g. an undefined grad or bias).
    libc10 = ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", "libc10.so"))
    symbol = ctypes.c_void_p.in_dll(libc10, "_ZN3c1019UndefinedTensorImpl10_singletonE")
    return ctypes.addressof(symbol)


def cases():
    """(name, tensor or None for the undefined singleton), in a fixed order."""
    torch.manual_seed(0)
    g = torch.randn  # float32
    out = []

    def add(name, t):
        out.append((name, t))

    add("undefined_singleton", None)
    add("scalar_f32", torch.tensor(3.5))
    add("scalar_i64", torch.tensor(7))
    add("scalar_bool", torch.tensor(True))
    add("scalar_f64_requires_grad", torch.tensor(1.0, dtype=torch.float64, requires_grad=True))

    add("1d_7", torch.arange(7))
    add("1d_1", g(1))
    add("1d_empty", torch.empty(0))
    add("1d_1000_f16", torch.ones(1000, dtype=torch.float16))
    add("1d_slice_step2", torch.arange(20)[3:17:2])

    add("2d_3x4", g(3, 4))
    add("2d_4x3_f64", g(4, 3, dtype=torch.float64))
    add("2d_1x5", g(1, 5))
    add("2d_5x1", g(5, 1))
    add("2d_2x2_i32", torch.zeros(2, 2, dtype=torch.int32))
    add("2d_64x128_bf16", g(64, 128).to(torch.bfloat16))
    add("2d_0x3", torch.empty(0, 3))
    add("2d_512x2048", torch.empty(512, 2048))
    add("2d_transposed_3x4", g(4, 3).t())
    add("2d_column_slice", g(6, 8)[:, ::2])
    add("2d_narrow_offset", g(10, 6).narrow(0, 3, 4))
    add("2d_expanded", g(1, 6).expand(4, 6))
    add("2d_complex64", torch.zeros(3, 5, dtype=torch.complex64))
    add("2d_uint8", torch.zeros(9, 11, dtype=torch.uint8))
    add("2d_bool", torch.zeros(2, 13, dtype=torch.bool))
    add("2d_requires_grad_leaf", g(7, 3, requires_grad=True))
    add("2d_parameter", torch.nn.Parameter(g(16, 8)))
    leaf = g(5, 4, requires_grad=True)
    add("2d_grad_fn_result", leaf * 2)
    add("2d_diagonal_view", g(6, 6).diagonal().unsqueeze(1).expand(6, 2))
    add("2d_sparse_coo", torch.sparse_coo_tensor(torch.tensor([[0, 1], [2, 0]]),
                                                  torch.tensor([1.0, 2.0]), (3, 4)))
    resized = torch.empty(2, 1, 3, 1, 2, 2)
    resized.resize_(3, 4)  # out-of-line storage moved back inline
    add("2d_resized_from_6d", resized)

    add("3d_2x3x4", g(2, 3, 4))
    add("3d_4x0x2", torch.empty(4, 0, 2))
    add("3d_7x1x3_i8", torch.zeros(7, 1, 3, dtype=torch.int8))
    add("3d_unsqueezed_1x5x1", g(5).unsqueeze(0).unsqueeze(2))
    add("3d_permuted", g(2, 3, 4).permute(2, 0, 1))

    add("4d_2x3x5x7", g(2, 3, 5, 7))
    add("4d_channels_last", g(2, 3, 4, 5).to(memory_format=torch.channels_last))
    add("4d_8x16x32x32", torch.empty(8, 16, 32, 32))
    add("4d_sliced", g(3, 4, 5, 6)[1:, :, 2:4, ::3])

    add("5d_2x3x4x5x6", g(2, 3, 4, 5, 6))
    add("5d_ones", g(1, 1, 1, 1, 1))
    add("5d_transposed", g(2, 3, 4, 5, 6).transpose(1, 3))
    add("5d_i64", torch.zeros(3, 1, 4, 1, 5, dtype=torch.int64))

    add("6d_2x1x3x1x2x2", torch.empty(2, 1, 3, 1, 2, 2))
    add("7d", torch.empty(2, 2, 2, 2, 2, 2, 3))
    add("8d_permuted", torch.empty(1, 2, 3, 4, 1, 2, 3, 2).permute(7, 6, 5, 4, 3, 2, 1, 0))
    add("6d_zero_size", torch.empty(2, 0, 2, 2, 2, 2))
    return out


def main():
    if not torch.__version__.startswith("1.13"):
        # _cdata is the TensorImpl* in 1.13; check before trusting it elsewhere.
        sys.exit(f"torch {torch.__version__}: _cdata meaning not checked for this version")
    version = ".".join(torch.__version__.split(".")[:2])
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        f"tensorimpl_windows_torch{version}.txt")
    undefined = undefined_tensor_impl_address()
    lines = [
        f"# TensorImpl windows from torch {torch.__version__} "
        "(tests/data/make_tensorimpl_windows.py).",
        "# name <TAB> sizes as torch reports them <TAB> 32 little-endian u64 words "
        "read from the TensorImpl (16 hex digits each).",
        "# sizes 'undefined': c10::UndefinedTensorImpl::_singleton, which has no sizes "
        "(torch.profiler prints []); its memory says 1 dim of size 0, numel 0.",
    ]
    samples = cases()  # keeps every tensor alive while it is read
    for name, tensor in samples:
        if tensor is None:
            address = undefined
            sizes = "undefined"
        else:
            address = tensor._cdata
            sizes = "[" + ",".join(str(s) for s in tensor.shape) + "]"
        words = struct.unpack(f"<{WINDOW_WORDS}Q", ctypes.string_at(address, 8 * WINDOW_WORDS))
        lines.append("\t".join([
            name,
            sizes,
            " ".join(f"{w:016x}" for w in words),
        ]))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {len(samples)} windows to {path}")


if __name__ == "__main__":
    main()

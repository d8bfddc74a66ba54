/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * abi_common.h: what the BPF programs' ABI headers (bpf/<program>_abi.h) share:
 * the fixed-width types on either side, the layout checks, and where a
 * thread's CPython frames are (the op tracer's stacks at op entry and the
 * CPU sampler's stacks read them the same way: bpf/python_frames.bpf.h).
 *
 * One ABI header per BPF program, as bcc's libbpf-tools keep one per tool
 * (opensnoop.h): <program>_abi.h holds the structs and constants that
 * program and its userspace half (userspace/probe/<program>.cpp) agree on.
 * A file includes the headers of the programs whose records it reads.
 */
#ifndef GPUPROF_ABI_COMMON_H
#define GPUPROF_ABI_COMMON_H

#ifdef __BPF__
/* vmlinux.h provides __u16/__u32/__u64 on the BPF side. */
#else
#include <linux/types.h>
#endif

/*
 * Layout checks, compiled on both sides: a struct that crosses the
 * kernel boundary (or is stored in record files) has the same size and
 * field offsets in BPF and in userspace.
 */
#ifdef __cplusplus
#define GP_ABI_ASSERT(cond, what) static_assert(cond, what)
#else
#define GP_ABI_ASSERT(cond, what) _Static_assert(cond, what)
#endif
#define GP_ABI_AT(type, field) __builtin_offsetof(struct type, field)

/*
 * Python frames read per stack (bpf/python_frames.bpf.h): the innermost
 * GP_PY_INNER_FRAMES and the outermost GP_PY_OUTER_FRAMES (a power of two).
 * A deeper stack keeps both ends; the frames between are counted, not read:
 * "not read" below, printed as a frame "[N frames not read]" between the
 * two (docs/stacks.md). The walk follows at most GP_PY_MAX_WALK frames of
 * the chain; GP_PY_ROOT_NOT_REACHED in "not read" says it stopped before
 * the chain's end (that, or a frame it could not read): the outermost
 * frame kept is then not the root.
 */
#define GP_PY_INNER_FRAMES 64
#define GP_PY_OUTER_FRAMES 64
#define GP_MAX_PY_FRAMES (GP_PY_INNER_FRAMES + GP_PY_OUTER_FRAMES)
#define GP_PY_MAX_WALK 2048 /* C shim frames included: twice CPython's default recursion limit */
#define GP_PY_ROOT_NOT_REACHED 0x80000000u

struct gp_py_frame {
	__u64 code;  /* the frame's code object (PyCodeObject *) */
	__u64 instr; /* its last instruction pointer (prev_instr) */
};

/*
 * Where the sampled thread's CPython frames are (userspace/python/python_runtime.h
 * finds the values for the target's interpreter): the thread state is at
 * fsbase + tls_offset (glibc's slot of the interpreter's TSS key), its
 * frame chain as docs/stacks.md describes. Field offsets in bytes;
 * frame_owner 0xffff when the version has no owner field.
 */
#define GP_PY_NO_CFRAME 0xffff /* cframe_frame: 3.13+, no _PyCFrame between */
struct gp_python_config {
	__u64 tls_offset;
	__u32 enabled;
	__u32 tstate_cframe; /* 3.11/3.12: the _PyCFrame; 3.13+: the current frame */
	__u32 cframe_frame;  /* the current frame in the _PyCFrame, or GP_PY_NO_CFRAME */
	__u32 frame_code;
	__u32 frame_previous;
	__u32 frame_instr;
	__u32 frame_owner;
	__u32 owner_cshim; /* frames with this owner are C shims: skipped */
	__u32 frame_localsplus; /* the first local (argument) of the frame */
	__u32 reserved;
};

/*
 * System-wide (record -a): at most this many processes whose Python frames
 * can be walked, each with its own gp_python_config (a map by tgid in the
 * sampler and in the op tracer).
 */
#define GP_MAX_PYTHON_PROCESSES 4096

GP_ABI_ASSERT(sizeof(struct gp_py_frame) == 16, "gp_py_frame is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_python_config) == 48 && GP_ABI_AT(gp_python_config, enabled) == 8 &&
	      GP_ABI_AT(gp_python_config, frame_localsplus) == 40, "gp_python_config is shared with BPF");

#endif /* GPUPROF_ABI_COMMON_H */

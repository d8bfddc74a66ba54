/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cpu_sampler_abi.h: bpf/cpu_sampler.bpf.c and its userspace half
 * (userspace/probe/cpu_sampler.cpp).
 *
 * CPU samples (record -F HZ), their own ring buffer: perf-event CPU-clock
 * samples of the target's threads (or of every process: record -a).
 */
#ifndef GPUPROF_CPU_SAMPLER_ABI_H
#define GPUPROF_CPU_SAMPLER_ABI_H

#include "abi_common.h"

/* Kernel stacks of samples: at most this many frames (the innermost). */
#define GP_MAX_KERNEL_FRAMES 32

struct gp_cpu_sample {
	__u64 ts_ns;     /*  0: bpf_ktime_get_ns() */
	__u64 user_ip;   /*  8: the thread's user-space instruction pointer */
	__u32 tid;       /* 16 */
	__u32 pid;       /* 20 */
	__u32 in_kernel; /* 24: 1 when the sample interrupted the thread in the kernel */
	__u32 py_depth;  /* 28: Python frames in `frames`, innermost first (0: none) */
	__u32 kernel_depth; /* 32: kernel return addresses after them, innermost first */
	__u32 py_not_read; /* 36: Python frames not read after the innermost GP_PY_INNER_FRAMES (see GP_MAX_PY_FRAMES) */
	char comm[16];   /* 40: the thread's name (system-wide: names a process gone before it is read) */
	/*
	 * py_depth x {code, instr} (struct gp_py_frame), then kernel_depth
	 * kernel addresses; only those words go to the ring. The kernel stack
	 * travels with its sample: a stack-trace map would lose the stacks
	 * whose hash collides (no BPF_F_REUSE_STACKID: that would rename the
	 * stacks of earlier samples).
	 */
	__u64 frames[GP_MAX_PY_FRAMES * 2 + GP_MAX_KERNEL_FRAMES];
};

GP_ABI_ASSERT(sizeof(struct gp_cpu_sample) == 56 + 16 * GP_MAX_PY_FRAMES + 8 * GP_MAX_KERNEL_FRAMES &&
	      GP_ABI_AT(gp_cpu_sample, user_ip) == 8 && GP_ABI_AT(gp_cpu_sample, tid) == 16 &&
	      GP_ABI_AT(gp_cpu_sample, in_kernel) == 24 && GP_ABI_AT(gp_cpu_sample, py_depth) == 28 &&
	      GP_ABI_AT(gp_cpu_sample, kernel_depth) == 32 &&
	      GP_ABI_AT(gp_cpu_sample, py_not_read) == 36 && GP_ABI_AT(gp_cpu_sample, comm) == 40 &&
	      GP_ABI_AT(gp_cpu_sample, frames) == 56, "gp_cpu_sample is shared with BPF");

#endif /* GPUPROF_CPU_SAMPLER_ABI_H */

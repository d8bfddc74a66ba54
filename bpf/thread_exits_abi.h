/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * thread_exits_abi.h: bpf/thread_exits.bpf.c and its userspace half
 * (userspace/probe/thread_names.cpp).
 */
#ifndef GPUPROF_THREAD_EXITS_ABI_H
#define GPUPROF_THREAD_EXITS_ABI_H

#include "abi_common.h"

/*
 * A thread of the target exiting (bpf/thread_exits.bpf.c): its name then,
 * which gpuprof cannot read from /proc once the thread is gone.
 */
struct gp_thread_exit {
	__u32 tid;
	__u32 reserved;
	char comm[16]; /* TASK_COMM_LEN */
};

GP_ABI_ASSERT(sizeof(struct gp_thread_exit) == 24 && GP_ABI_AT(gp_thread_exit, comm) == 8,
	      "gp_thread_exit is shared with BPF");

#endif /* GPUPROF_THREAD_EXITS_ABI_H */

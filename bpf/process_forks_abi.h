/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * process_forks_abi.h: bpf/process_forks.bpf.c and its userspace half
 * (userspace/probe/fork_watch.cpp).
 */
#ifndef GPUPROF_PROCESS_FORKS_ABI_H
#define GPUPROF_PROCESS_FORKS_ABI_H

#include "abi_common.h"

/*
 * record --follow-forks (bpf/process_forks.bpf.c): a followed process
 * forked a child process.
 */
#define GP_MAX_FOLLOWED_PROCESSES 1024
struct gp_fork {
	__u64 ts_ns;
	__u32 parent_pid; /* tgid */
	__u32 child_pid;
};

GP_ABI_ASSERT(sizeof(struct gp_fork) == 16 && GP_ABI_AT(gp_fork, parent_pid) == 8 &&
	      GP_ABI_AT(gp_fork, child_pid) == 12, "gp_fork is shared with BPF");

#endif /* GPUPROF_PROCESS_FORKS_ABI_H */

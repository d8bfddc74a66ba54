// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * process_forks.bpf.c: the processes the followed ones fork (record
 * --follow-forks).
 *
 * uprobe_multi links are filtered to one process: a forked child runs the
 * parent's code, breakpoints included, but its hits are filtered out (and
 * the kernel takes the breakpoints out of its memory), so a child is
 * traced only once gpuprof attaches links for its pid too. This program
 * tells userspace, at the fork itself, which children to attach to. A
 * child of a followed process is followed at once (its own forks are seen
 * even before gpuprof has read this event). New threads are not processes:
 * they are skipped here (their parent's links cover them).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "process_forks_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Followed processes (tgid -> 1): userspace puts the target in. */
GP_MAP(followed, BPF_MAP_TYPE_HASH, GP_MAX_FOLLOWED_PROCESSES, __u32, __u32);

GP_RINGBUF(forks, 64 << 10);

__u64 forks_lost = 0;

SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 parent_tgid = BPF_CORE_READ(parent, tgid);
	__u32 child_pid = BPF_CORE_READ(child, pid);
	__u32 one = 1;
	struct gp_fork *e;

	if (BPF_CORE_READ(child, tgid) != child_pid) /* a thread */
		return 0;
	if (!bpf_map_lookup_elem(&followed, &parent_tgid))
		return 0;
	bpf_map_update_elem(&followed, &child_pid, &one, BPF_NOEXIST);
	e = gp_reserve(&forks, sizeof(*e), &forks_lost);
	if (!e)
		return 0;
	e->ts_ns = bpf_ktime_get_ns();
	e->parent_pid = parent_tgid;
	e->child_pid = child_pid;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

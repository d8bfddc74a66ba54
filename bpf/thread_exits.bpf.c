// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * thread_exits.bpf.c: the name of each thread of the target as it exits.
 *
 * gpuprof names the trace's thread tracks from /proc/PID/task/TID/comm when
 * it first sees a thread's events, but it reads the ring buffers every
 * 100 ms: a thread that ran a few ops and exited in between has no /proc
 * entry by then. The sched_process_exit tracepoint fires in the exiting
 * thread itself, so its comm is still there to read. One event per thread
 * exit of the target; nothing on the op path.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "thread_exits_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The target (thread group id). Set before load. */
const volatile __u32 target_tgid = 0;
__u64 exits_lost = 0;

GP_RINGBUF(exits, 64 << 10);

/*
 * A BTF tracepoint (raw, typed): attaching it needs no tracefs, so a
 * gpuprof with file capabilities instead of root can attach it too.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_thread_exit, struct task_struct *task)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct gp_thread_exit *e;

	if ((id >> 32) != target_tgid)
		return 0;
	e = gp_reserve(&exits, sizeof(*e), &exits_lost);
	if (!e)
		return 0;
	e->tid = (__u32)id;
	e->reserved = 0;
	if (bpf_get_current_comm(e->comm, sizeof(e->comm)))
		e->comm[0] = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

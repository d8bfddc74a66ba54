// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu_sampler.bpf.c: CPU-clock samples of one process's threads.
 *
 * Userspace opens a software CPU-clock perf event at HZ on every CPU and
 * attaches this program to each; it keeps the samples of the target's
 * threads (tgid) and records which thread, when, and the thread's user-space
 * instruction pointer: the interrupted one, or, when the sample landed in
 * the kernel (a syscall, a page fault), the one saved at kernel entry. The
 * operator stack of the sample comes later from the op timeline (same clock,
 * same thread), so this program reads no target memory at all.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid = 0;
/* Set by userspace once every CPU's event is attached, cleared before detach. */
__u32 sampling_on = 0;
__u64 samples_lost = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by userspace before load */
} samples SEC(".maps");

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gp_cpu_sample *s;
	__u32 user_mode;

	if ((pid_tgid >> 32) != target_tgid || !sampling_on)
		return 0;
	s = bpf_ringbuf_reserve(&samples, sizeof(*s), 0);
	if (!s) {
		__sync_fetch_and_add(&samples_lost, 1);
		return 0;
	}
	/*
	 * The context allows only 8-byte loads of the registers; since FRED
	 * (6.9) cs shares its word with other fields, so load the word and keep
	 * the privilege bits (3: user mode).
	 */
	user_mode = ((*(volatile __u64 *)((void *)ctx + __builtin_offsetof(struct bpf_perf_event_data,
									    regs.cs))) & 3) == 3;
	s->ts_ns = bpf_ktime_get_ns();
	s->tid = (__u32)pid_tgid;
	s->pid = pid_tgid >> 32;
	s->in_kernel = !user_mode;
	s->pad = 0;
	if (user_mode) {
		s->user_ip = ctx->regs.ip;
	} else {
		struct pt_regs *user = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		s->user_ip = BPF_CORE_READ(user, ip);
	}
	bpf_ringbuf_submit(s, 0);
	return 0;
}

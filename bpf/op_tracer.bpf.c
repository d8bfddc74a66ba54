// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * op_tracer.bpf.c: operator entry/exit events from libtorch's dispatcher.
 *
 * One program serves every probe site: userspace attaches it with
 * uprobe_multi links (raw BPF_LINK_CREATE, see userspace/uprobe_multi.cpp)
 * to the first instruction of every at::_ops::<op>::call, to the exits of
 * those bodies (the stack-protector branch before each `ret`, or the `ret`
 * itself), and to __cxa_begin_catch. The link cookie
 * says which op and which kind of site (GP_COOKIE in events.h). The links
 * carry the target's pid, so the kernel filters other processes out before
 * this program runs.
 *
 * No return probes: they abort the target when a C++ exception crosses the
 * probed frame (shared/research.md section 1).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 32 << 20); /* resized by userspace before load */
} events SEC(".maps");

/*
 * Set by userspace once every site of a link is in place, cleared before
 * detaching: the kernel plants breakpoints one by one, and a half-attached
 * library would show calls whose exits (or entries) are not probed yet.
 */
__u32 tracing_on = 0;

/* Events dropped because the ring buffer was full. Read by userspace. */
__u64 events_lost = 0;

/*
 * Wake the reader only once this many bytes are waiting: a wakeup per event
 * would cost more than the event. The reader also polls on a short timeout,
 * so a quiet target's last events are never stuck.
 */
const volatile __u64 wakeup_bytes = 1 << 20;

SEC("uprobe")
int on_op_probe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gp_event *e;

	if (!tracing_on)
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&events_lost, 1);
		return 0;
	}
	e->ts_ns = bpf_ktime_get_ns();
	e->sp = PT_REGS_SP(ctx);
	if (cookie & GP_COOKIE_SP_COMPUTED)
		e->sp = ((cookie & GP_COOKIE_SP_FROM_RBP) ? PT_REGS_FP(ctx) : e->sp) +
			GP_COOKIE_SP_OFFSET(cookie);
	e->tid = (__u32)pid_tgid;
	e->pid = pid_tgid >> 32;
	e->op_id = GP_COOKIE_OP(cookie);
	e->kind = GP_COOKIE_KIND(cookie);
	e->pad = 0;

	long flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes
			     ? BPF_RB_FORCE_WAKEUP
			     : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(e, flags);
	return 0;
}

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
/* Set by userspace before sampling starts when the target runs CPython. */
struct gp_python_config python = {};
/* Set by userspace once every CPU's event is attached, cleared before detach. */
__u32 sampling_on = 0;
__u64 samples_lost = 0;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 << 20); /* resized by userspace before load */
} samples SEC(".maps");

/*
 * A sample is built here and copied to the ring: the frame walk runs in a
 * bpf_loop callback (verified once, not 48 times), which reaches the sample
 * through this map. perf_event programs run with interrupts off, so the
 * per-CPU copy is never shared.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct gp_cpu_sample);
} sample_scratch SEC(".maps");

struct walk_state {
	__u64 frame;
	__u32 depth;
};

/* One frame of the chain; 1 stops the walk. */
static long walk_one(__u64 i, void *data)
{
	struct walk_state *w = data;
	__u32 zero = 0, d = w->depth;
	struct gp_cpu_sample *s = bpf_map_lookup_elem(&sample_scratch, &zero);
	__u64 code = 0, instr = 0, previous = 0, frame = w->frame;
	__u8 owner = 0;

	if (!s || !frame)
		return 1;
	if (bpf_probe_read_user(&code, 8, (void *)(frame + python.frame_code)) ||
	    bpf_probe_read_user(&instr, 8, (void *)(frame + python.frame_instr)) ||
	    bpf_probe_read_user(&previous, 8, (void *)(frame + python.frame_previous)))
		return 1;
	if (python.frame_owner != 0xffff &&
	    bpf_probe_read_user(&owner, 1, (void *)(frame + python.frame_owner)))
		return 1;
	w->frame = previous;
	if (python.frame_owner != 0xffff && owner == python.owner_cshim)
		return 0; /* a C shim frame of 3.12: not Python code */
	if (d >= GP_MAX_PY_FRAMES)
		return 1;
	s->py_frames[d].code = code;
	s->py_frames[d].instr = instr;
	w->depth = d + 1;
	return 0;
}

/*
 * The thread's Python frames, innermost first, into the scratch sample:
 * the thread state from its TLS slot, then the frame chain. Only reads of
 * the target's memory, which fail harmlessly (the walk stops) when a
 * pointer is stale.
 */
static __always_inline __u32 walk_python(void)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, tstate = 0, cframe = 0;
	struct walk_state w = {};

	if (!fsbase || bpf_probe_read_user(&tstate, 8, (void *)(fsbase + python.tls_offset)) || !tstate)
		return 0;
	if (bpf_probe_read_user(&cframe, 8, (void *)(tstate + python.tstate_cframe)) || !cframe)
		return 0;
	if (bpf_probe_read_user(&w.frame, 8, (void *)(cframe + python.cframe_frame)))
		return 0;
	bpf_loop(GP_MAX_PY_FRAMES * 2, walk_one, &w, 0);
	return w.depth;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gp_cpu_sample *s;
	__u32 user_mode, zero = 0, depth;

	if ((pid_tgid >> 32) != target_tgid || !sampling_on)
		return 0;
	s = bpf_map_lookup_elem(&sample_scratch, &zero);
	if (!s)
		return 0;
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
	if (user_mode) {
		s->user_ip = ctx->regs.ip;
	} else {
		struct pt_regs *user = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());

		s->user_ip = BPF_CORE_READ(user, ip);
	}
	depth = python.enabled ? walk_python() : 0;
	if (depth > GP_MAX_PY_FRAMES)
		depth = GP_MAX_PY_FRAMES;
	s->py_depth = depth;
	/* Only the frames walked go to the ring. */
	if (bpf_ringbuf_output(&samples, s, sizeof(*s) - sizeof(s->py_frames) + depth * sizeof(s->py_frames[0]), 0))
		__sync_fetch_and_add(&samples_lost, 1);
	return 0;
}

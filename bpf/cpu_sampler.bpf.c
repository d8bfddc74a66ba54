// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cpu_sampler.bpf.c: CPU-clock samples of one process's threads, or of
 * every process (record -a).
 *
 * Userspace opens a software CPU-clock perf event at HZ on every CPU and
 * attaches this program to each; it keeps the samples of the target's
 * threads (tgid) and records which thread, when, and the thread's user-space
 * instruction pointer: the interrupted one, or, when the sample landed in
 * the kernel (a syscall, a page fault), the one saved at kernel entry. The
 * operator stack of the sample comes later from the op timeline (same clock,
 * same thread). The thread's Python frames (python_frames.bpf.h) and, for
 * a sample in the kernel, its kernel stack come with the sample.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "cpu_sampler_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* The target process; 0: every process (record -a), but the idle task. */
const volatile __u32 target_tgid = 0;
/* Set by userspace before sampling starts when the target runs CPython. */
struct gp_python_config python = {};
/*
 * System-wide (target_tgid 0): the interpreter of each process that runs a
 * CPython gpuprof knows, by tgid; set by userspace as it finds them.
 */
GP_MAP(python_of_process, BPF_MAP_TYPE_HASH, GP_MAX_PYTHON_PROCESSES, __u32, struct gp_python_config);
/* Set by userspace once every CPU's event is attached, cleared before detach. */
__u32 sampling_on = 0;
__u64 samples_lost = 0;

GP_RINGBUF(samples, 4 << 20); /* resized by userspace before load */

/*
 * Samples do not wake the reader, which reads the ring on every turn of its
 * loop (at least every 100 ms). A wakeup per sample biased record -a's
 * samples: the sample taken on one CPU woke gpuprof onto another, where that
 * CPU's timer, started within microseconds of the first, fired during the
 * switch and charged its sample to gpuprof instead of the job it displaced,
 * as much as 0.3 of the job's samples (docs/system-wide.md, "CPU samples").
 * So only two samples wake it: a process's first, so that its maps and
 * interpreter are read while a short-lived process still runs (record -a),
 * and any that finds the ring half full.
 */
GP_MAP(woke_for_process, BPF_MAP_TYPE_LRU_HASH, GP_MAX_PYTHON_PROCESSES, __u32, __u8);

static __always_inline __u64 sample_wakeup(__u32 tgid)
{
	__u8 woken = 1;

	if (bpf_ringbuf_query(&samples, BPF_RB_AVAIL_DATA) >= bpf_ringbuf_query(&samples, BPF_RB_RING_SIZE) / 2)
		return BPF_RB_FORCE_WAKEUP;
	if (bpf_map_lookup_elem(&woke_for_process, &tgid))
		return BPF_RB_NO_WAKEUP;
	bpf_map_update_elem(&woke_for_process, &tgid, &woken, BPF_ANY);
	return BPF_RB_FORCE_WAKEUP;
}

/*
 * A sample is built here and copied to the ring: the frame walk runs in a
 * bpf_loop callback (verified once, not once per frame), which reaches the sample
 * through this map. perf_event programs run with interrupts off, so the
 * per-CPU copy is never shared.
 */
GP_PERCPU_SCRATCH(sample_scratch, struct gp_cpu_sample);

static __always_inline __u64 *python_frames_dest(void)
{
	struct gp_cpu_sample *s = gp_scratch(&sample_scratch);

	return s ? s->frames : NULL;
}

#define GP_PY_FRAME_WORDS 2
#include "python_frames.bpf.h"

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct gp_cpu_sample *s;
	__u32 user_mode, depth, not_read, kernel_depth, tgid = pid_tgid >> 32;
	const struct gp_python_config *py = &python;

	if (!sampling_on)
		return 0;
	if (target_tgid == 0) {
		if (tgid == 0) /* the idle task: no work to see */
			return 0;
		py = bpf_map_lookup_elem(&python_of_process, &tgid);
	} else if (tgid != target_tgid) {
		return 0;
	}
	s = gp_scratch(&sample_scratch);
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
	if (bpf_get_current_comm(s->comm, sizeof(s->comm)))
		s->comm[0] = 0;
	s->kernel_depth = 0;
	depth = walk_python(py, &not_read);
	if (depth > GP_MAX_PY_FRAMES)
		depth = GP_MAX_PY_FRAMES;
	s->py_depth = depth;
	s->py_not_read = not_read;
	if (!user_mode) {
		/* The innermost GP_MAX_KERNEL_FRAMES, right after the Python frames. */
		long bytes = bpf_get_stack(ctx, &s->frames[depth * 2], GP_MAX_KERNEL_FRAMES * 8, 0);

		if (bytes > 0)
			s->kernel_depth = bytes / 8;
	}
	kernel_depth = s->kernel_depth;
	if (kernel_depth > GP_MAX_KERNEL_FRAMES)
		kernel_depth = GP_MAX_KERNEL_FRAMES;
	/* Only the frames walked go to the ring. */
	if (bpf_ringbuf_output(&samples, s, sizeof(*s) - sizeof(s->frames) + (depth * 2 + kernel_depth) * 8,
			       sample_wakeup(tgid)))
		__sync_fetch_and_add(&samples_lost, 1);
	return 0;
}

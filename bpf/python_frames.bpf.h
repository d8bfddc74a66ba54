/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * python_frames.bpf.h: the current thread's CPython frames, innermost first,
 * for the BPF programs that record them (CPU samples, op entries with
 * --with-stack).
 *
 * The thread state is at fsbase + tls_offset (glibc's slot of the
 * interpreter's TSS key, which keeps the thread's state while the GIL is
 * released, e.g. inside an op), its frame chain as docs/stacks.md
 * describes; userspace/python/python_runtime.h finds the offsets for the
 * target's interpreter. Only reads of the target's memory, which fail
 * harmlessly (the walk stops) when a pointer is stale.
 *
 * The including program defines, before including this file:
 *   static __always_inline __u64 *python_frames_dest(void);
 *       where frame d goes: words [d * GP_PY_FRAME_WORDS ...], room for
 *       GP_MAX_PY_FRAMES frames (NULL: nowhere, the walk stops)
 *   #define GP_PY_FRAME_WORDS 2 or 3: code, instr[, first local]
 * The first local of a frame (localsplus[0]) is its first argument, which
 * is `self` in nn.Module.__call__: userspace names module calls with it.
 */
#ifndef GPUPROF_PYTHON_FRAMES_BPF_H
#define GPUPROF_PYTHON_FRAMES_BPF_H

struct python_walk_state {
	struct gp_python_config python; /* where the frames are (a copy: the callback reads it on the stack) */
	__u64 frame;
	__u32 depth;
};

/* One frame of the chain; 1 stops the walk. */
static long python_walk_one(__u64 i, void *data)
{
	struct python_walk_state *w = data;
	const struct gp_python_config *python = &w->python;
	__u64 *dest = python_frames_dest();
	__u64 code = 0, instr = 0, previous = 0, frame = w->frame;
	__u32 d = w->depth;
	__u8 owner = 0;

	if (!dest || !frame)
		return 1;
	if (bpf_probe_read_user(&code, 8, (void *)(frame + python->frame_code)) ||
	    bpf_probe_read_user(&instr, 8, (void *)(frame + python->frame_instr)) ||
	    bpf_probe_read_user(&previous, 8, (void *)(frame + python->frame_previous)))
		return 1;
	if (python->frame_owner != 0xffff &&
	    bpf_probe_read_user(&owner, 1, (void *)(frame + python->frame_owner)))
		return 1;
	w->frame = previous;
	if (python->frame_owner != 0xffff && owner == python->owner_cshim)
		return 0; /* a C shim frame (3.12+): not Python code */
	if (d >= GP_MAX_PY_FRAMES)
		return 1;
	dest[d * GP_PY_FRAME_WORDS] = code;
	dest[d * GP_PY_FRAME_WORDS + 1] = instr;
#if GP_PY_FRAME_WORDS > 2
	if (bpf_probe_read_user(&dest[d * GP_PY_FRAME_WORDS + 2], 8,
				(void *)(frame + python->frame_localsplus)))
		dest[d * GP_PY_FRAME_WORDS + 2] = 0;
#endif
	w->depth = d + 1;
	return 0;
}

/*
 * Walks the current thread's frames (an interpreter described by `python`,
 * NULL for none) into python_frames_dest(); the depth.
 */
static __always_inline __u32 walk_python(const struct gp_python_config *python)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, tstate = 0, cframe = 0;
	struct python_walk_state w = {};

	if (!python || !python->enabled || !fsbase ||
	    bpf_probe_read_user(&tstate, 8, (void *)(fsbase + python->tls_offset)) || !tstate)
		return 0;
	if (bpf_probe_read_user(&cframe, 8, (void *)(tstate + python->tstate_cframe)) || !cframe)
		return 0;
	w.python = *python;
	if (python->cframe_frame == GP_PY_NO_CFRAME)
		w.frame = cframe; /* 3.13: the thread state points at the frame */
	else if (bpf_probe_read_user(&w.frame, 8, (void *)(cframe + python->cframe_frame)))
		return 0;
	/* Twice the frames: C shim frames (3.12+) are skipped, not kept. */
	bpf_loop(GP_MAX_PY_FRAMES * 2, python_walk_one, &w, 0);
	return w.depth < GP_MAX_PY_FRAMES ? w.depth : GP_MAX_PY_FRAMES;
}

#endif /* GPUPROF_PYTHON_FRAMES_BPF_H */

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
 * A stack deeper than GP_MAX_PY_FRAMES keeps both ends: its
 * GP_PY_INNER_FRAMES innermost frames (the code that runs) and its
 * GP_PY_OUTER_FRAMES outermost (the root, which flame graphs hang the
 * sample from); the frames between are counted, not read (abi_common.h). The
 * chain runs from the innermost frame outward, so the whole chain is
 * followed (one or two reads per frame past the innermost ones), the
 * addresses of the last GP_PY_OUTER_FRAMES Python frames kept in a ring,
 * and those frames read once the root is found.
 *
 * The including program defines, before including this file:
 *   static __always_inline __u64 *python_frames_dest(void);
 *       where frame d goes: words [d * GP_PY_FRAME_WORDS ...], room for
 *       GP_MAX_PY_FRAMES frames (NULL: nowhere, the walk stops)
 *   #define GP_PY_FRAME_WORDS 2 or 3: code, instr[, first local]
 * and calls walk_python() only where nothing else on the CPU can (a
 * perf_event program, or a probe holding its per-CPU scratch): the walk's
 * state below is per CPU.
 * The first local of a frame (localsplus[0]) is its first argument, which
 * is `self` in nn.Module.__call__: userspace names module calls with it.
 */
#ifndef GPUPROF_PYTHON_FRAMES_BPF_H
#define GPUPROF_PYTHON_FRAMES_BPF_H

_Static_assert((GP_PY_OUTER_FRAMES & (GP_PY_OUTER_FRAMES - 1)) == 0, "the ring's index is masked");

/*
 * The walk's state, per CPU, in a map rather than on the stack: the
 * verifier tracks the stack values a bpf_loop callback changes and would
 * verify the callbacks once per value; values in a map are not tracked, so
 * each callback is verified once.
 */
struct python_walk_state {
	struct gp_python_config python; /* where the frames are */
	__u64 frame;  /* the next frame to visit (0: the chain ended) */
	__u32 depth;  /* frames copied to python_frames_dest() */
	__u32 outer;  /* Python frames seen past the innermost GP_PY_INNER_FRAMES */
	__u32 failed; /* a read failed: the walk stopped there */
	__u32 first_outer; /* the second pass: outer frames not read, before the kept ones */
	/* the addresses of the last GP_PY_OUTER_FRAMES Python frames seen past the innermost ones */
	__u64 ring[GP_PY_OUTER_FRAMES];
};

GP_PERCPU_SCRATCH(python_walks, struct python_walk_state);

static __always_inline struct python_walk_state *python_walk(void)
{
	return gp_scratch(&python_walks);
}

/*
 * Follows the link of `frame` into w->frame: 1 when `frame` is Python code,
 * 0 for a C shim frame (3.12+), -1 when unreadable.
 */
static __always_inline int python_step(struct python_walk_state *w, __u64 frame)
{
	const struct gp_python_config *python = &w->python;
	__u64 previous = 0;
	__u8 owner = 0;

	if (bpf_probe_read_user(&previous, 8, (void *)(frame + python->frame_previous)))
		return -1;
	if (python->frame_owner != 0xffff &&
	    bpf_probe_read_user(&owner, 1, (void *)(frame + python->frame_owner)))
		return -1;
	w->frame = previous;
	return !(python->frame_owner != 0xffff && owner == python->owner_cshim);
}

/* Copies `frame` (code, instr[, first local]) to slot d of the destination; 0 on success. */
static __always_inline int python_copy_frame(const struct gp_python_config *python, __u64 frame, __u32 d)
{
	__u64 *dest = python_frames_dest();
	__u64 code = 0, instr = 0;

	if (!dest || d >= GP_MAX_PY_FRAMES)
		return -1;
	if (bpf_probe_read_user(&code, 8, (void *)(frame + python->frame_code)) ||
	    bpf_probe_read_user(&instr, 8, (void *)(frame + python->frame_instr)))
		return -1;
	dest[d * GP_PY_FRAME_WORDS] = code;
	dest[d * GP_PY_FRAME_WORDS + 1] = instr;
#if GP_PY_FRAME_WORDS > 2
	if (bpf_probe_read_user(&dest[d * GP_PY_FRAME_WORDS + 2], 8,
				(void *)(frame + python->frame_localsplus)))
		dest[d * GP_PY_FRAME_WORDS + 2] = 0;
#endif
	return 0;
}

/* The first pass, one frame of the chain; 1 stops the walk. */
static long python_walk_one(__u64 i, void *unused)
{
	struct python_walk_state *w = python_walk();
	__u64 frame;
	int is_python;

	if (!w)
		return 1;
	frame = w->frame;
	if (!frame)
		return 1;
	is_python = python_step(w, frame);
	if (is_python < 0) {
		w->failed = 1;
		return 1;
	}
	if (!is_python)
		return 0; /* a C shim frame (3.12+): not Python code */
	if (w->depth < GP_PY_INNER_FRAMES) {
		if (python_copy_frame(&w->python, frame, w->depth)) {
			w->failed = 1;
			return 1;
		}
		w->depth++;
		return 0;
	}
	w->ring[w->outer & (GP_PY_OUTER_FRAMES - 1)] = frame;
	w->outer++;
	return 0;
}

/* The second pass: outer frame i of those kept, innermost first, from the ring. */
static long python_copy_outer(__u64 i, void *unused)
{
	struct python_walk_state *w = python_walk();

	if (!w)
		return 1;
	if (python_copy_frame(&w->python, w->ring[(w->first_outer + i) & (GP_PY_OUTER_FRAMES - 1)], w->depth)) {
		w->failed = 1;
		return 1;
	}
	w->depth++;
	return 0;
}

/*
 * Walks the current thread's frames (an interpreter described by `python`,
 * NULL for none) into python_frames_dest(); the depth (frames copied, at
 * most GP_MAX_PY_FRAMES). *not_read: the Python frames between the
 * innermost GP_PY_INNER_FRAMES and the others copied, which were counted
 * but not read, with GP_PY_ROOT_NOT_REACHED when the walk stopped before
 * the chain's end: past GP_PY_MAX_WALK frames, or at a frame it could not
 * read (abi_common.h).
 */
static __always_inline __u32 walk_python(const struct gp_python_config *python, __u32 *not_read)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 fsbase = task->thread.fsbase, tstate = 0, cframe = 0, frame = 0;
	struct python_walk_state *w = python_walk();
	__u32 kept_outer, depth;

	*not_read = 0;
	if (!w || !python || !python->enabled || !fsbase ||
	    bpf_probe_read_user(&tstate, 8, (void *)(fsbase + python->tls_offset)) || !tstate)
		return 0;
	if (bpf_probe_read_user(&cframe, 8, (void *)(tstate + python->tstate_cframe)) || !cframe)
		return 0;
	if (python->cframe_frame == GP_PY_NO_CFRAME)
		frame = cframe; /* 3.13: the thread state points at the frame */
	else if (bpf_probe_read_user(&frame, 8, (void *)(cframe + python->cframe_frame)))
		return 0;
	w->python = *python;
	w->frame = frame;
	w->depth = 0;
	w->outer = 0;
	w->failed = 0;
	bpf_loop(GP_PY_MAX_WALK, python_walk_one, NULL, 0);
	kept_outer = w->outer < GP_PY_OUTER_FRAMES ? w->outer : GP_PY_OUTER_FRAMES;
	w->first_outer = w->outer - kept_outer;
	if (kept_outer)
		bpf_loop(kept_outer, python_copy_outer, NULL, 0);
	*not_read = w->first_outer;
	if (w->frame || w->failed) /* the walk stopped before the chain's end */
		*not_read |= GP_PY_ROOT_NOT_REACHED;
	depth = w->depth;
	return depth < GP_MAX_PY_FRAMES ? depth : GP_MAX_PY_FRAMES;
}

#endif /* GPUPROF_PYTHON_FRAMES_BPF_H */

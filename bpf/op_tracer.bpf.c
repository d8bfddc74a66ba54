// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * op_tracer.bpf.c: operator entry/exit events from libtorch's dispatcher.
 *
 * One program serves every probe site: userspace attaches it with
 * uprobe_multi links (raw BPF_LINK_CREATE, see userspace/probe/uprobe_multi.cpp)
 * to the first instruction of every at::_ops::<op>::call, to the exits of
 * those bodies (the stack-protector branch before each `ret`, or the `ret`
 * itself), and to __cxa_begin_catch. The link cookie
 * says which op and which kind of site (GP_COOKIE in op_tracer_abi.h). The links
 * carry the target's pid, so the kernel filters other processes out before
 * this program runs.
 *
 * No return probes: they abort the target when a C++ exception crosses the
 * probed frame (docs/exit-modes.md).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "common.bpf.h"
#include "op_tracer_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

GP_RINGBUF(events, 32 << 20); /* resized by userspace before load */

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

/* Input shapes (op_tracer_abi.h, "Input shapes"). Set by userspace. */
__u32 shapes_on = 0;
/* 0 while the TensorImpl layout is unknown: entries carry raw windows. */
__u32 tensor_layout_ready = 0;
/*
 * Ring-buffer bytes that raw windows may still take before calibration
 * (userspace gives them a quarter of the ring); after that, until
 * calibrated, entries go without shapes. A target whose tensors do not
 * allow calibration must not pay 256 bytes per tensor for ever, and a
 * reader that falls behind while calibrating must not see the ring fill
 * with windows. Bytes, not entries: an op's windows cost 264 bytes per
 * tensor argument.
 */
__s64 raw_bytes_left = 0;
/* Entries sent with raw windows: every 64th wakes the reader. */
__u32 raw_entries_sent = 0;
struct gp_tensor_layout tensor_layout = {};
/*
 * Address of c10::UndefinedTensorImpl::_singleton in the target (0: unknown).
 * An undefined tensor (a "None" passed as a plain Tensor) points there; its
 * fields read as one dimension of size 0, torch prints it as [].
 */
__u64 undefined_tensor_impl = 0;

GP_MAP(shape_plans, BPF_MAP_TYPE_ARRAY, GP_MAX_SHAPE_PLANS, __u32, struct gp_shape_plan);

/* Python stacks of op entries (op_tracer_abi.h). Set by userspace. */
__u32 stacks_on = 0;
/* The target's interpreter (record -p, record -- CMD). */
struct gp_python_config python = {};
/*
 * System-wide (record -a --with-stack): no one target, so the interpreter
 * of each process that runs a CPython gpuprof knows, by tgid, set by
 * userspace as it finds them; `python` then stays disabled.
 */
GP_MAP(python_of_process, BPF_MAP_TYPE_HASH, GP_MAX_PYTHON_PROCESSES, __u32, struct gp_python_config);

/* An ENTRY with its payload is built here, then copied to the ring. */
#define GP_RAW_SLOT_WORDS (1 + GP_RAW_WINDOW_WORDS)
#define GP_COMPACT_SLOT_WORDS (3 + GP_MAX_DIMS)
#define GP_STACK_WORDS (1 + GP_MAX_PY_FRAMES * GP_ENTRY_FRAME_WORDS)
#define GP_PAYLOAD_WORDS (GP_STACK_WORDS + GP_MAX_TENSOR_ARGS * GP_RAW_SLOT_WORDS)
struct entry_record {
	struct gp_event event;
	__u64 words[GP_PAYLOAD_WORDS];
};

/*
 * Per-CPU scratch. uprobe_multi programs run with migration disabled but
 * preemptible: another thread's probe can run on this CPU in the middle of
 * ours. `busy` keeps it off the record being built; it then sends its ENTRY
 * without shapes (userspace counts those tensors as unknown).
 */
struct entry_scratch_value {
	struct entry_record record;
	__u32 busy;
};

GP_PERCPU_SCRATCH(entry_scratch, struct entry_scratch_value);

/* The stack goes after the depth word of the record being built. */
static __always_inline __u64 *python_frames_dest(void)
{
	struct entry_scratch_value *scratch = gp_scratch(&entry_scratch);

	return scratch ? &scratch->record.words[1] : NULL;
}

#define GP_PY_FRAME_WORDS GP_ENTRY_FRAME_WORDS
#include "python_frames.bpf.h"

/* Where this thread's Python frames are: the target's, or its process's (-a); NULL: none known. */
static __always_inline const struct gp_python_config *entry_python(void)
{
	__u32 tgid;

	if (python.enabled)
		return &python;
	tgid = bpf_get_current_pid_tgid() >> 32;
	return bpf_map_lookup_elem(&python_of_process, &tgid);
}

static __always_inline void submit_flags_for(void *ring, long *flags)
{
	*flags = bpf_ringbuf_query(ring, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									    : BPF_RB_NO_WAKEUP;
}

#define READ_ONCE_BUSY(s) (*(volatile __u32 *)&(s)->busy)
#define WRITE_ONCE_BUSY(s, v) (*(volatile __u32 *)&(s)->busy = (v))

/* One bpf_loop over the plan's slots: each slot is verified once, not 16 times. */
struct capture_state {
	__u64 regs[GP_ARG_IN_STACK]; /* rdi..r9 at the probe */
	__u64 sp;
	__u32 op;
	__u32 n; /* payload words written so far */
	__u32 raw;
	__u32 shapes; /* 0: no shape slots in this payload */
};

/* The address of a tensor argument (of the at::Tensor or the optional). */
static __always_inline __u64 arg_address(const struct capture_state *st, __u8 where)
{
	__u64 value = 0;

	if (where < GP_ARG_IN_STACK)
		return st->regs[where];
	if (bpf_probe_read_user(&value, sizeof(value), (void *)(st->sp + 8 * ((__u64)where - 5))))
		return 0;
	return value;
}

/* The TensorImpl* of a tensor argument; 0 with *status set otherwise. */
static __always_inline __u64 tensor_impl(__u64 address, __u8 kind, __u64 *status)
{
	__u64 impl = 0;
	__u8 engaged = 0;
	long err = 0;

	*status = GP_SLOT_UNREADABLE;
	if (!address)
		return 0;
	if (kind == GP_ARG_OPT_TENSOR_C10) {
		err = bpf_probe_read_user(&engaged, 1, (void *)address);
		address += 8;
	} else if (kind == GP_ARG_OPT_TENSOR_STD) {
		err = bpf_probe_read_user(&engaged, 1, (void *)(address + 8));
	} else {
		engaged = 1;
	}
	if (err)
		return 0;
	if (!engaged) {
		*status = GP_SLOT_NONE;
		return 0;
	}
	if (bpf_probe_read_user(&impl, sizeof(impl), (void *)address) || !impl)
		return 0;
	if (impl == undefined_tensor_impl) {
		*status = GP_SLOT_NONE;
		return 0;
	}
	*status = GP_SLOT_TENSOR;
	return impl;
}

/* Appends slot i's payload (op_tracer_abi.h, "Input shapes"); 1 stops the loop. */
static long capture_slot(__u64 i, void *data)
{
	struct capture_state *st = data;
	__u32 op = st->op, n = st->n;
	const struct gp_shape_plan *plan = bpf_map_lookup_elem(&shape_plans, &op);
	struct entry_scratch_value *scratch = gp_scratch(&entry_scratch);
	struct entry_record *r = scratch ? &scratch->record : NULL;
	__u64 status, impl, ndim = 0, numel = 0, sizes_at;
	__u64 *words;

	if (!st->shapes || !plan || !r || i >= plan->count || i >= GP_MAX_TENSOR_ARGS)
		return 1;
	if (n > GP_PAYLOAD_WORDS - GP_RAW_SLOT_WORDS)
		return 1;
	words = r->words;
	impl = tensor_impl(arg_address(st, plan->args[i].where), plan->args[i].kind, &status);
	if (st->raw) {
		if (impl &&
		    bpf_probe_read_user(&words[n + 1], GP_RAW_WINDOW_WORDS * 8, (void *)impl))
			status = GP_SLOT_UNREADABLE;
		words[n] = status | GP_SLOT_RAW;
		st->n = n + (status == GP_SLOT_TENSOR ? GP_RAW_SLOT_WORDS : 1);
		return 0;
	}
	if (impl && (bpf_probe_read_user(&ndim, 8, (void *)(impl + tensor_layout.ndim_offset)) ||
		     bpf_probe_read_user(&numel, 8, (void *)(impl + tensor_layout.numel_offset))))
		status = GP_SLOT_UNREADABLE;
	sizes_at = impl + tensor_layout.sizes_offset;
	if (status == GP_SLOT_TENSOR && ndim > tensor_layout.inline_dims &&
	    bpf_probe_read_user(&sizes_at, 8, (void *)sizes_at))
		status = GP_SLOT_UNREADABLE;
	/*
	 * Always GP_MAX_DIMS words: inline storage holds 2 x inline_dims words
	 * from sizes_at, out-of-line storage 2 x ndim >= 12.
	 */
	if (status == GP_SLOT_TENSOR &&
	    bpf_probe_read_user(&words[n + 3], GP_MAX_DIMS * 8, (void *)sizes_at))
		status = GP_SLOT_UNREADABLE;
	words[n] = status;
	if (status != GP_SLOT_TENSOR) {
		st->n = n + 1;
		return 0;
	}
	words[n + 1] = ndim;
	words[n + 2] = numel;
	st->n = n + 3 + (ndim < GP_MAX_DIMS ? ndim : GP_MAX_DIMS);
	return 0;
}

/*
 * `now` is the event's timestamp: the moment the schedule judged it by
 * (schedule_allows), so that an event lands in the step its timestamp
 * says, even at a step's edge.
 */
static __always_inline void fill_event(struct gp_event *e, struct pt_regs *ctx, __u64 cookie, __u64 now)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();

	e->ts_ns = now;
	e->sp = PT_REGS_SP(ctx);
	if (cookie & GP_COOKIE_SP_COMPUTED)
		e->sp = ((cookie & GP_COOKIE_SP_FROM_RBP) ? PT_REGS_FP(ctx) : e->sp) +
			GP_COOKIE_SP_OFFSET(cookie);
	e->tid = (__u32)pid_tgid;
	e->pid = pid_tgid >> 32;
	e->op_id = GP_COOKIE_OP(cookie);
	e->kind = GP_COOKIE_KIND(cookie);
	e->payload_bytes = 0;
}

/*
 * An ENTRY with its payload: the Python stack when stacks are on, then the
 * shape slots when `shapes`. Returns 0 when the scratch is in use (the
 * caller sends a plain ENTRY).
 */
static __always_inline int emit_entry_with_payload(struct pt_regs *ctx, __u64 cookie, __u32 shapes, __u64 now)
{
	__u64 node = PT_REGS_PARM3(ctx), vptr = 0, sequence_nr = 0;
	struct entry_scratch_value *scratch = gp_scratch(&entry_scratch);
	struct entry_record *r;
	struct capture_state st = {
		.regs = {PT_REGS_PARM1(ctx), PT_REGS_PARM2(ctx), PT_REGS_PARM3(ctx),
			 PT_REGS_PARM4(ctx), PT_REGS_PARM5(ctx),
			 ctx->r9 /* PT_REGS_PARM6: missing from bookworm's libbpf */},
		.sp = PT_REGS_SP(ctx),
		.op = GP_COOKIE_OP(cookie),
		.n = 0,
		.raw = !tensor_layout_ready,
		.shapes = shapes,
	};
	__u32 words, depth, not_read;
	long flags;

	if (!scratch || READ_ONCE_BUSY(scratch))
		return 0;
	WRITE_ONCE_BUSY(scratch, 1);
	r = &scratch->record;
	fill_event(&r->event, ctx, cookie, now);
	if (stacks_on) {
		depth = walk_python(entry_python(), &not_read);
		r->words[0] = depth | (__u64)not_read << 32;
		st.n = 1 + depth * GP_ENTRY_FRAME_WORDS;
	}
	if (cookie & GP_COOKIE_NODE_ARG) {
		/* The node's class, by its vtable, and its sequence number (0: unreadable). */
		if (bpf_probe_read_user(&vptr, sizeof(vptr), (void *)node))
			vptr = 0;
		if (bpf_probe_read_user(&sequence_nr, sizeof(sequence_nr),
					(void *)(node + GP_NODE_SEQUENCE_NR_OFFSET)))
			sequence_nr = 0;
		__u32 at = st.n;

		if (at < GP_PAYLOAD_WORDS)
			r->words[at] = vptr;
		if (at + 1 < GP_PAYLOAD_WORDS)
			r->words[at + 1] = sequence_nr;
		st.n = at + 2;
	}
	bpf_loop(GP_MAX_TENSOR_ARGS, capture_slot, &st, 0);
	words = st.n;
	if (words > GP_PAYLOAD_WORDS)
		words = GP_PAYLOAD_WORDS;
	r->event.payload_bytes = words * 8;
	submit_flags_for(&events, &flags);
	/*
	 * Raw windows: wake the reader every 64 entries, so that it calibrates
	 * and hands the layout back within a few ms, long before the raw budget
	 * (after which entries go without shapes) runs out.
	 */
	if (shapes && st.raw && (raw_entries_sent++ & 63) == 0)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, r, sizeof(r->event) + words * 8, flags))
		__sync_fetch_and_add(&events_lost, 1);
	WRITE_ONCE_BUSY(scratch, 0);
	return 1;
}

/*
 * Schedule (op_tracer_abi.h, "Schedules"). Set by userspace before tracing starts.
 * steps_started/step_recorded are updated by the step op's entry without
 * atomics: two threads starting a step at the same instant (a step op
 * called on several threads) may count one step; a step op is normally
 * called by one thread.
 */
struct gp_schedule schedule = {};
__u64 steps_started = 0; /* the number of the next step */
__u32 step_recorded = 0;

/* Emits the GP_EV_STEP event of a step op's entry: step number in sp. */
static __always_inline void emit_step(struct pt_regs *ctx, __u64 cookie, __s64 step, __u32 recorded, __u64 now)
{
	struct gp_event *e = gp_reserve(&events, sizeof(*e), &events_lost);
	long flags;

	if (!e)
		return;
	fill_event(e, ctx, cookie, now);
	e->sp = (__u64)step;
	e->kind = GP_EV_STEP;
	e->op_id = recorded ? schedule.step_marker_op : GP_NO_OP;
	submit_flags_for(&events, &flags);
	bpf_ringbuf_submit(e, flags);
}

/*
 * Whether the schedule lets an event of moment `now` (its timestamp) through
 * (1 without a schedule).
 */
static __always_inline int schedule_allows(struct pt_regs *ctx, __u64 cookie, __u64 now)
{
	__s64 step;
	__u32 recorded;

	if (schedule.mode == GP_SCHEDULE_OFF)
		return 1;
	if (schedule.mode == GP_SCHEDULE_BY_TIME) {
		if (now < schedule.start_ns || !schedule.step_ns)
			return 0;
		return gp_schedule_action(&schedule, (now - schedule.start_ns) / schedule.step_ns) >=
		       GP_ACTION_RECORD;
	}
	if (cookie & GP_COOKIE_STEP) {
		step = (__s64)steps_started;
		steps_started = step + 1;
		recorded = gp_schedule_action(&schedule, step) >= GP_ACTION_RECORD;
		step_recorded = recorded;
		emit_step(ctx, cookie, step, recorded, now);
	}
	return step_recorded;
}

/*
 * Ranges (op_tracer_abi.h, GP_EV_RANGE_BEGIN). What the next RecordFunction
 * constructor on a thread begins: a record_function range (armed by
 * record_function_enter_new, scope USER_SCOPE, the name read from its
 * argument then) or an op's own guard (armed by the op's ENTRY, scope
 * FUNCTION). One per thread: a new arming replaces a stale one.
 */
struct range_arming {
	__u64 name; /* user: the std::string* argument of record_function_enter_new */
	__u32 scope; /* the RecordScope the constructor must have */
	__u32 op; /* guard: the range op; user: GP_NO_OP */
};

GP_MAP(range_armed, BPF_MAP_TYPE_HASH, 16384, __u32, struct range_arming); /* key: tid */

/* Ranges begun and not ended: (pid, RecordFunction*) -> range op. LRU: a
 * range whose end never comes (its object leaked) cannot fill it. */
struct range_key {
	__u64 object;
	__u32 pid;
	__u32 pad;
};

GP_MAP(open_ranges, BPF_MAP_TYPE_LRU_HASH, 65536, struct range_key, __u32);

/* RANGE_BEGIN: [stack][name length][name bytes], or no payload (a guard). */
static __always_inline void emit_range_begin(struct pt_regs *ctx, __u64 object, const struct range_arming *arm,
					     __u64 now)
{
	__u32 depth, not_read, at = 0;
	struct entry_scratch_value *scratch = gp_scratch(&entry_scratch);
	struct entry_record *r;
	__u64 name[2] = {}; /* std::string: char *_M_p, size_t _M_string_length */
	__u64 len = 0;
	long flags;

	if (!scratch || READ_ONCE_BUSY(scratch)) {
		__sync_fetch_and_add(&events_lost, 1);
		return;
	}
	WRITE_ONCE_BUSY(scratch, 1);
	r = &scratch->record;
	fill_event(&r->event, ctx, 0, now);
	r->event.kind = GP_EV_RANGE_BEGIN;
	r->event.op_id = arm->op;
	r->event.sp = object;
	if (stacks_on) {
		depth = walk_python(entry_python(), &not_read);
		r->words[0] = depth | (__u64)not_read << 32;
		at = 1 + depth * GP_ENTRY_FRAME_WORDS;
	}
	if (arm->op == GP_NO_OP) {
		if (bpf_probe_read_user(name, sizeof(name), (void *)arm->name))
			name[1] = 0;
		len = name[1] < GP_RANGE_NAME_BYTES ? name[1] : GP_RANGE_NAME_BYTES;
		if (at < GP_PAYLOAD_WORDS - 1 - GP_RANGE_NAME_BYTES / 8) {
			r->words[at] = name[1];
			if (len && bpf_probe_read_user(&r->words[at + 1], len, (void *)name[0]))
				r->words[at] = 0;
			at += 1 + (len + 7) / 8;
		}
	}
	r->event.payload_bytes = at * 8;
	submit_flags_for(&events, &flags);
	if (bpf_ringbuf_output(&events, r, sizeof(r->event) + at * 8, flags))
		__sync_fetch_and_add(&events_lost, 1);
	WRITE_ONCE_BUSY(scratch, 0);
}

/*
 * What a range's begin and end do once they copied out the map entry that
 * let them in (`key` in `map`): delete it, whatever comes next; then the
 * answer of the schedule, whether the event may be made at `now`.
 */
static __always_inline int consume_range_entry(struct pt_regs *ctx, __u64 now, void *map, const void *key)
{
	bpf_map_delete_elem(map, key);
	return schedule_allows(ctx, 0, now);
}

static __always_inline void on_record_ctor(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct range_arming *armed = bpf_map_lookup_elem(&range_armed, &tid);
	struct range_arming arm;
	struct range_key key = {.object = PT_REGS_PARM1(ctx), .pid = bpf_get_current_pid_tgid() >> 32};

	if (!armed || armed->scope != (__u32)PT_REGS_PARM2(ctx))
		return;
	__u64 now = bpf_ktime_get_ns();

	arm = *armed;
	if (!consume_range_entry(ctx, now, &range_armed, &tid))
		return;
	bpf_map_update_elem(&open_ranges, &key, &arm.op, BPF_ANY);
	emit_range_begin(ctx, key.object, &arm, now);
}

static __always_inline void on_record_end(struct pt_regs *ctx)
{
	struct range_key key = {.object = PT_REGS_PARM1(ctx), .pid = bpf_get_current_pid_tgid() >> 32};
	__u32 *op = bpf_map_lookup_elem(&open_ranges, &key);
	struct gp_event *e;
	__u32 range_op;
	long flags;

	if (!op)
		return;
	__u64 now = bpf_ktime_get_ns();

	range_op = *op;
	if (!consume_range_entry(ctx, now, &open_ranges, &key))
		return;
	e = gp_reserve(&events, sizeof(*e), &events_lost);
	if (!e)
		return;
	fill_event(e, ctx, 0, now);
	e->kind = GP_EV_RANGE_END;
	e->op_id = range_op;
	e->sp = key.object;
	submit_flags_for(&events, &flags);
	bpf_ringbuf_submit(e, flags);
}

/* Arms (or, at an EXIT, disarms) the thread's next RecordFunction. */
static __always_inline void arm_range(struct pt_regs *ctx, __u64 cookie)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u32 kind = GP_COOKIE_KIND(cookie);
	struct range_arming arm = {.name = 0, .scope = GP_RECORD_SCOPE_FUNCTION, .op = GP_COOKIE_GUARD_OP(cookie)};

	if (kind == GP_EV_OP_EXIT) {
		/* The op's guard did not come (its kernel ran below autograd). */
		struct range_arming *armed = bpf_map_lookup_elem(&range_armed, &tid);

		if (armed && armed->scope == GP_RECORD_SCOPE_FUNCTION)
			bpf_map_delete_elem(&range_armed, &tid);
		return;
	}
	if (kind == GP_SITE_RANGE_ENTER) {
		arm.name = PT_REGS_PARM2(ctx); /* the returned intrusive_ptr's slot is rdi */
		arm.scope = GP_RECORD_SCOPE_USER;
		arm.op = GP_NO_OP;
	}
	bpf_map_update_elem(&range_armed, &tid, &arm, BPF_ANY);
}

/*
 * An autograd node was made (GP_EV_NODE_MADE): at the ret of
 * at::sequence_number::get_and_increment(), rax is its sequence number.
 * Not gated by the schedule: the recorder keeps only the numbers that a
 * recorded evaluate_function names.
 */
static __always_inline void emit_node_made(struct pt_regs *ctx)
{
	struct gp_event *e = gp_reserve(&events, sizeof(*e), &events_lost);
	long flags;

	if (!e)
		return;
	fill_event(e, ctx, GP_COOKIE(GP_EV_NODE_MADE, GP_NO_OP), bpf_ktime_get_ns());
	e->sp = PT_REGS_RC(ctx);
	submit_flags_for(&events, &flags);
	bpf_ringbuf_submit(e, flags);
}

SEC("uprobe")
int on_op_probe(struct pt_regs *ctx)
{
	__u64 cookie = bpf_get_attach_cookie(ctx);
	struct gp_event *e;
	long flags;

	if (!tracing_on)
		return 0;
	switch (GP_COOKIE_KIND(cookie)) {
	case GP_SITE_RANGE_ENTER:
		arm_range(ctx, cookie);
		return 0;
	case GP_SITE_RECORD_CTOR:
		on_record_ctor(ctx);
		return 0;
	case GP_SITE_RECORD_END:
		on_record_end(ctx);
		return 0;
	case GP_SITE_NODE_MADE:
		emit_node_made(ctx);
		return 0;
	}
	__u64 now = bpf_ktime_get_ns();

	if (!schedule_allows(ctx, cookie, now))
		return 0;
	if (cookie & GP_COOKIE_GUARD)
		arm_range(ctx, cookie);
	if ((shapes_on || stacks_on || (cookie & GP_COOKIE_NODE_ARG)) && GP_COOKIE_KIND(cookie) == GP_EV_OP_ENTRY) {
		__u32 op = GP_COOKIE_OP(cookie), shapes = 0;
		const struct gp_shape_plan *plan = bpf_map_lookup_elem(&shape_plans, &op);

		if (shapes_on && plan && plan->count && (tensor_layout_ready || raw_bytes_left > 0)) {
			/* Not atomic: threads racing here may spend one entry more. */
			if (!tensor_layout_ready)
				raw_bytes_left -= (__s64)plan->count * GP_RAW_SLOT_WORDS * 8;
			shapes = 1;
		}
		if ((shapes || stacks_on || (cookie & GP_COOKIE_NODE_ARG)) &&
		    emit_entry_with_payload(ctx, cookie, shapes, now))
			return 0;
	}
	e = gp_reserve(&events, sizeof(*e), &events_lost);
	if (!e)
		return 0;
	fill_event(e, ctx, cookie, now);
	submit_flags_for(&events, &flags);
	bpf_ringbuf_submit(e, flags);
	return 0;
}

/* Memory events (record --profile-memory): their own ring buffer. */
GP_RINGBUF(mem_events, 4 << 20); /* resized by userspace before load */

__u64 mem_events_lost = 0;

/*
 * Entry probes on libc10 (uprobe_multi, cookie = enum gp_mem_kind):
 *   ProfiledCPUMemoryReporter::New(this, void* ptr, size_t nbytes)
 *   ProfiledCPUMemoryReporter::Delete(this, void* ptr)
 *   reportMemoryUsageToProfiler(void* ptr, int64_t delta, size_t total_allocated,
 *                               size_t total_reserved, c10::Device device)
 * The CPU pair is what torch's own profile_memory accounting uses, called
 * whether or not a profiler runs; the device report comes from the CUDA
 * caching allocator on every block allocation and release.
 */
SEC("uprobe")
int on_memory_probe(struct pt_regs *ctx)
{
	__u64 kind = bpf_get_attach_cookie(ctx);
	struct gp_mem_event *m;
	__u64 addr, device = 0, total = 0;
	__s64 bytes;
	long flags;
	/*
	 * Read every argument register up front: clang otherwise merges the
	 * branches' reads into one ctx access at a computed offset, which the
	 * verifier refuses.
	 */
	__u64 p1 = PT_REGS_PARM1(ctx), p2 = PT_REGS_PARM2(ctx), p3 = PT_REGS_PARM3(ctx),
	      p5 = PT_REGS_PARM5(ctx);

	asm volatile("" : "+r"(p1), "+r"(p2), "+r"(p3), "+r"(p5));

	if (!tracing_on)
		return 0;
	/* Allocator events follow the op events' schedule (never a step start). */
	__u64 now = bpf_ktime_get_ns();

	if (!schedule_allows(ctx, 0, now))
		return 0;
	if (kind == GP_MEM_CPU_ALLOC) {
		addr = p2;
		bytes = (__s64)p3;
		if (!bytes) /* New() returns early on 0 bytes: nothing to free later */
			return 0;
	} else if (kind == GP_MEM_CPU_FREE) {
		addr = p2;
		bytes = 0;
	} else {
		addr = p1;
		bytes = (__s64)p2;
		total = p3;
		device = p5 & 0xffff;
		if ((device & 0xff) == 0) /* CPU: counted through New/Delete */
			return 0;
	}
	m = gp_reserve(&mem_events, sizeof(*m), &mem_events_lost);
	if (!m)
		return 0;
	m->ts_ns = now;
	m->addr = addr;
	m->bytes = bytes;
	m->total_allocated = total;
	m->tid = (__u32)bpf_get_current_pid_tgid();
	m->kind = (__u16)kind;
	m->device_type = (__s8)(device & 0xff);
	m->device_index = (__s8)(device >> 8);
	submit_flags_for(&mem_events, &flags);
	bpf_ringbuf_submit(m, flags);
	return 0;
}

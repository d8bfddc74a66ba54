/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * op_tracer_abi.h: bpf/op_tracer.bpf.c and its userspace half
 * (userspace/probe/op_tracer.cpp): op events, the uprobe_multi cookies,
 * schedules, input shapes and memory events.
 *
 * Every event in the op ring buffer and in the record file's EVENTS chunks
 * is one struct gp_event: fixed-width fields, explicit padding, 32 bytes;
 * MEM_EVENTS chunks hold struct gp_mem_event. These layouts are part of
 * the record-file format: changing them means bumping
 * GP_RECORD_FORMAT_VERSION in userspace/record/record_file.h.
 */
#ifndef GPUPROF_OP_TRACER_ABI_H
#define GPUPROF_OP_TRACER_ABI_H

#include "abi_common.h"

enum gp_event_kind {
	/* Entry probe on the first instruction of at::_ops::<op>::call. */
	GP_EV_OP_ENTRY = 1,
	/* Probe on a `ret` instruction of at::_ops::<op>::call. */
	GP_EV_OP_EXIT = 2,
	/*
	 * Entry of __cxa_begin_catch in the target's libstdc++: a C++ catch
	 * handler is starting. Every op frame whose entry sp is <= this sp was
	 * unwound by the exception (see userspace/analyze/op_timeline.cpp).
	 */
	GP_EV_CATCH = 3,
	/*
	 * A profiling step starts (record --schedule with --step-op): emitted
	 * by the entry of a step op, before that op's own ENTRY, whether the
	 * step is recorded or not. sp holds the step number (0 for the first
	 * step-op call); op_id is the recording's ProfilerStep op when the step
	 * is recorded, GP_NO_OP when it is not (wait, warmup, skip_first, after
	 * the last repeat). Record format version 3 and later.
	 */
	GP_EV_STEP = 4,
	/*
	 * Written by the recorder, never by BPF: a recording window ends here
	 * (record --schedule: the last recorded step of a cycle is over).
	 * Every op frame open on any thread ends at ts_ns and counts as a call,
	 * as torch.profiler ends the ranges open when its active steps end;
	 * events stamped before it that arrive after it are not counted. tid,
	 * pid and sp are 0, op_id GP_NO_OP. Record format version 5 and later.
	 */
	GP_EV_CUT = 5,
	/*
	 * A torch.profiler row that is no C++ call of its own, begun and ended
	 * by RecordFunction objects (record format version 5 and later):
	 *   - a record_function range (user code, the optimizers'
	 *     Optimizer.step#X.step): begun in
	 *     torch::autograd::profiler::record_function_enter_new(name, args),
	 *     whose RecordFunction is constructed with RecordScope::USER_SCOPE;
	 *     op_id is GP_NO_OP in the ring, the payload carries the name, and
	 *     the recorder turns the name into an op of the recording;
	 *   - a RECORD_FUNCTION guard that torch opens directly inside an op's
	 *     kernel (VariableType's `detach`, `detach_`): op_id names it.
	 * sp holds the RecordFunction object's address: the key that pairs
	 * BEGIN and END, which come from RecordFunction::end() or its
	 * destructor, maybe on another thread.
	 */
	GP_EV_RANGE_BEGIN = 6,
	GP_EV_RANGE_END = 7,
	/*
	 * Ring only, never in the record file: an autograd node was made on
	 * this thread (record --with-modules). sp holds its sequence number,
	 * the value at::sequence_number::get_and_increment() returns to the
	 * Node constructor; op_id is GP_NO_OP. The recorder links the number
	 * to the thread's last op entry (its Python stack, so its module),
	 * and the node's evaluate_function ENTRY, which carries the same
	 * number, to that stack (userspace/collect/backward_origins.h).
	 */
	GP_EV_NODE_MADE = 8,
};

/*
 * Probe sites that are no event of their own (cookie kinds past the event
 * kinds): they only arm what the next RecordFunction constructor on the
 * thread begins, or end what one began (bpf/op_tracer.bpf.c).
 */
enum gp_site_kind {
	GP_SITE_RANGE_ENTER = 16, /* record_function_enter_new(name, args): rsi = &name */
	GP_SITE_RECORD_CTOR = 17, /* at::RecordFunction::RecordFunction(RecordScope): rdi = this, esi = scope */
	GP_SITE_RECORD_END = 18,  /* RecordFunction::end() or ~RecordFunction(): rdi = this */
	GP_SITE_NODE_MADE = 19,   /* the ret of at::sequence_number::get_and_increment(): rax = the number */
};

/*
 * torch::autograd::Node's sequence_nr_: after the vtable pointer and
 * enable_shared_from_this's weak_ptr (torch/csrc/autograd/function.h,
 * the same in 1.13 and 2.x; docs/modules.md says how this is checked).
 */
#define GP_NODE_SEQUENCE_NR_OFFSET 24

/* at::RecordScope values (c10 record_function.h, the same in 1.13 and 2.x). */
#define GP_RECORD_SCOPE_FUNCTION 0
#define GP_RECORD_SCOPE_USER 7

/* Range names longer than this many bytes are cut (the payload says the length). */
#define GP_RANGE_NAME_BYTES 256

/* op_id of events that belong to no operator (GP_EV_CATCH). */
#define GP_NO_OP 0xffffffffu

/*
 * uprobe_multi cookie layout; one BPF program serves every site:
 *   bits  0..31  op id (GP_NO_OP for catches and the gp_site_kind sites)
 *   bits 32..39  event kind (enum gp_event_kind) or site kind (enum gp_site_kind)
 *   bit  40      the site is not where the entry sp is: compute it (below)
 *   bit  41      ... from rbp (1) or rsp (0) at the site
 *   bit  42      ENTRY of a step op (GP_COOKIE_STEP, record --step-op)
 *   bit  43      ENTRY/EXIT of an op with a guard range (GP_COOKIE_GUARD)
 *   bit  44      ENTRY of Engine::evaluate_function (GP_COOKIE_NODE_ARG)
 *   bits 48..63  exits: ... plus this signed offset; guarded entries: the
 *                guard range's op id
 * Exit sites on the stack-protector branch before a `ret` (see
 * userspace/symbols/ret_finder.h) use bits 40..63 so that every event carries the
 * op's entry sp, which the timeline matches entries and exits by.
 */
#define GP_COOKIE_SP_COMPUTED (1ull << 40)
/* bit 42: an ENTRY site of a step op (record --step-op): a step starts. */
#define GP_COOKIE_STEP (1ull << 42)
/*
 * bit 43: an op whose kernel opens a RECORD_FUNCTION guard of its own
 * (aten::detach: "detach"): at ENTRY, the next RecordScope::FUNCTION
 * RecordFunction on the thread begins the range op in bits 48..63; at EXIT
 * it can no longer come.
 */
#define GP_COOKIE_GUARD (1ull << 43)
#define GP_COOKIE_GUARD_OP(cookie) ((__u32)((cookie) >> 48))
/*
 * bit 44: ENTRY of Engine::evaluate_function(graph_task, Node* func, ...):
 * the payload (after the stack, if any) is two words: func's vtable
 * pointer, which names the node (the recorder: "autograd::engine::
 * evaluate_function: AddmmBackward0"), and its sequence_nr_ (0 when
 * unreadable, as the vtable pointer), which links it to the forward op
 * that made it (GP_EV_NODE_MADE).
 */
#define GP_COOKIE_NODE_ARG (1ull << 44)
#define GP_COOKIE_SP_FROM_RBP (1ull << 41)
#define GP_COOKIE(kind, op_id) (((__u64)(kind) << 32) | (__u64)(op_id))
#define GP_COOKIE_FRAME_EXIT(op_id, from_rbp, offset)                          \
	(GP_COOKIE(GP_EV_OP_EXIT, op_id) | GP_COOKIE_SP_COMPUTED |             \
	 ((from_rbp) ? GP_COOKIE_SP_FROM_RBP : 0) |                            \
	 ((__u64)(__u16)(offset) << 48))
#define GP_COOKIE_KIND(cookie) ((__u16)(((cookie) >> 32) & 0xff))
#define GP_COOKIE_OP(cookie) ((__u32)(cookie))
#define GP_COOKIE_SP_OFFSET(cookie) ((__s64)(__s16)((cookie) >> 48))

struct gp_event {
	__u64 ts_ns;  /*  0: bpf_ktime_get_ns(), CLOCK_MONOTONIC */
	__u64 sp;     /*  8: user stack pointer at the probed instruction:
	               *     at entry and at `ret` it points at the return
	               *     address, so entry sp == exit sp for one call */
	__u32 tid;    /* 16: kernel thread id */
	__u32 pid;    /* 20: thread group id (the process) */
	__u32 op_id;  /* 24: index into the record's op table, or GP_NO_OP */
	__u16 kind;   /* 28: enum gp_event_kind */
	__u16 payload_bytes; /* 30: ring buffer only: bytes of payload (the
	                      *     Python stack, shapes: below) that follow
	                      *     this ENTRY; always 0
	                      *     in the record file */
};


GP_ABI_ASSERT(sizeof(struct gp_event) == 32 && GP_ABI_AT(gp_event, sp) == 8 &&
	      GP_ABI_AT(gp_event, tid) == 16 && GP_ABI_AT(gp_event, pid) == 20 &&
	      GP_ABI_AT(gp_event, op_id) == 24 && GP_ABI_AT(gp_event, kind) == 28 &&
	      GP_ABI_AT(gp_event, payload_bytes) == 30, "gp_event layout is part of the record format");

/*
 * Schedules (record --schedule): torch.profiler.schedule(skip_first, wait,
 * warmup, active, repeat) over steps that start at each call of a step op
 * (GP_COOKIE_STEP) or every step_ns nanoseconds from start_ns. Only the
 * events of RECORD and RECORD_AND_SAVE steps are recorded; the rest are
 * dropped in BPF before they reach the ring buffer.
 */
enum gp_schedule_mode {
	GP_SCHEDULE_OFF = 0,
	GP_SCHEDULE_BY_OP = 1,   /* a step starts at each ENTRY of a step op */
	GP_SCHEDULE_BY_TIME = 2, /* step n is [start_ns + n * step_ns, ... + step_ns) */
};

/* torch.profiler.ProfilerAction, in its order. */
enum gp_schedule_action {
	GP_ACTION_NONE = 0,
	GP_ACTION_WARMUP = 1,
	GP_ACTION_RECORD = 2,
	GP_ACTION_RECORD_AND_SAVE = 3,
};

struct gp_schedule {
	__u32 mode; /* enum gp_schedule_mode */
	__u32 step_marker_op; /* op id of GP_EV_STEP events of recorded steps */
	__u64 skip_first;
	__u64 wait;
	__u64 warmup;
	__u64 active; /* > 0 */
	__u64 repeat; /* 0: for ever */
	__u64 step_ns; /* GP_SCHEDULE_BY_TIME */
	__u64 start_ns; /* GP_SCHEDULE_BY_TIME: CLOCK_MONOTONIC */
};

/*
 * torch.profiler.schedule's schedule_fn(step), for steps >= 0 (torch 1.13
 * torch/profiler/profiler.py); a negative step (before the first step op
 * call) is NONE. Shared by the BPF gate and userspace, so both agree on
 * every step. Userspace keeps repeat * (wait + warmup + active) below 2^63.
 */
static inline __u32 gp_schedule_action(const struct gp_schedule *s, __s64 step)
{
	__u64 k, cycle = s->wait + s->warmup + s->active;

	if (step < 0 || (__u64)step < s->skip_first || cycle == 0)
		return GP_ACTION_NONE;
	k = (__u64)step - s->skip_first;
	if (s->repeat && k >= s->repeat * cycle)
		return GP_ACTION_NONE;
	k %= cycle;
	if (k < s->wait)
		return GP_ACTION_NONE;
	if (k < s->wait + s->warmup)
		return GP_ACTION_WARMUP;
	return k < cycle - 1 ? GP_ACTION_RECORD : GP_ACTION_RECORD_AND_SAVE;
}

/*
 * Input shapes (record --record-shapes).
 *
 * For every op with tensor arguments userspace stores a gp_shape_plan in the
 * shape_plans map (index: op id): where each tensor argument sits at the
 * ::call's first instruction (userspace/torch/op_args.h derives it from the
 * mangled signature and the schema). The ENTRY event of such an op is then
 * followed, in the same ring-buffer record, by payload_bytes of __u64 words,
 * one group per plan slot, in plan order:
 *   raw mode (layout not yet calibrated; tensor_layout_ready == 0):
 *     [status] then, when status is GP_SLOT_TENSOR, GP_RAW_WINDOW_WORDS words
 *     copied from the TensorImpl (userspace calibrates on them, see
 *     userspace/torch/tensor_layout.h, and decodes them afterwards);
 *   compact mode (after calibration):
 *     [status] then, when status is GP_SLOT_TENSOR: ndim, numel, and
 *     min(ndim, GP_MAX_DIMS) sizes (numel lets userspace verify every shape).
 */
#define GP_MAX_TENSOR_ARGS 16
#define GP_MAX_SHAPE_PLANS 32768 /* ops with shapes per library (1.13 has 2952) */
#define GP_MAX_DIMS 12
#define GP_RAW_WINDOW_WORDS 32 /* 256 bytes from the start of a TensorImpl */

enum gp_tensor_arg_kind {
	GP_ARG_TENSOR = 1,          /* at::Tensor const& / at::Tensor&: -> TensorImpl* */
	GP_ARG_OPT_TENSOR_C10 = 2,  /* c10::optional<at::Tensor> const&: bool @0, TensorImpl* @8 */
	GP_ARG_OPT_TENSOR_STD = 3,  /* std::optional<at::Tensor> const&: TensorImpl* @0, bool @8 */
};

/* Where an argument is at the first instruction of the function. */
#define GP_ARG_IN_STACK 6 /* where >= 6: the word at rsp + 8 * (where - 5) */
/* where 0..5: rdi, rsi, rdx, rcx, r8, r9 */

struct gp_tensor_arg {
	__u8 kind;  /* enum gp_tensor_arg_kind */
	__u8 where;
};

struct gp_shape_plan {
	__u8 count; /* slots used, 0..GP_MAX_TENSOR_ARGS */
	__u8 pad;
	struct gp_tensor_arg args[GP_MAX_TENSOR_ARGS];
};

/* First word of each payload slot. */
enum gp_slot_status {
	GP_SLOT_TENSOR = 1,     /* a defined tensor: its words follow */
	GP_SLOT_NONE = 2,       /* an empty optional or an undefined tensor (torch prints []) */
	GP_SLOT_UNREADABLE = 3, /* a read of target memory failed */
};
/* Or'ed into the status word of slots written in raw mode. */
#define GP_SLOT_RAW 0x100
#define GP_SLOT_STATUS(word) ((word) & 0xff)

/* Layout of TensorImpl, found by calibration; byte offsets. */
struct gp_tensor_layout {
	__u32 ndim_offset;  /* size_t: number of dimensions */
	__u32 sizes_offset; /* inline int64 sizes, or a pointer to them when ndim > inline_dims */
	__u32 numel_offset; /* int64 numel */
	__u32 inline_dims;  /* 5 in libtorch 1.13 .. 2.x */
};

/*
 * Memory events (record --profile-memory), their own ring buffer.
 *   CPU_ALLOC: c10::ProfiledCPUMemoryReporter::New(ptr, nbytes), called by
 *              the default CPU allocator after every successful allocation;
 *   CPU_FREE:  ...::Delete(ptr), before the block is freed (bytes = 0: the
 *              size comes from the matching CPU_ALLOC);
 *   DEVICE:    c10::reportMemoryUsageToProfiler(ptr, delta, total_allocated,
 *              total_reserved, device) from the CUDA caching allocator, for a
 *              non-CPU device.
 */
enum gp_mem_kind {
	GP_MEM_CPU_ALLOC = 1,
	GP_MEM_CPU_FREE = 2,
	GP_MEM_DEVICE = 3,
};

struct gp_mem_event {
	__u64 ts_ns;           /*  0: bpf_ktime_get_ns() */
	__u64 addr;            /*  8: block address */
	__s64 bytes;           /* 16: allocated (> 0) or released (< 0); 0 for CPU_FREE */
	__u64 total_allocated; /* 24: DEVICE: the allocator's total after this event */
	__u32 tid;             /* 32 */
	__u16 kind;            /* 36: enum gp_mem_kind */
	__s8 device_type;      /* 38: c10::DeviceType (1 = CUDA); 0 for CPU */
	__s8 device_index;     /* 39 */
};

GP_ABI_ASSERT(sizeof(struct gp_mem_event) == 40 && GP_ABI_AT(gp_mem_event, addr) == 8 &&
	      GP_ABI_AT(gp_mem_event, bytes) == 16 && GP_ABI_AT(gp_mem_event, total_allocated) == 24 &&
	      GP_ABI_AT(gp_mem_event, tid) == 32 && GP_ABI_AT(gp_mem_event, kind) == 36 &&
	      GP_ABI_AT(gp_mem_event, device_type) == 38 && GP_ABI_AT(gp_mem_event, device_index) == 39,
	      "gp_mem_event layout is part of the record format");
GP_ABI_ASSERT(sizeof(struct gp_schedule) == 64 && GP_ABI_AT(gp_schedule, skip_first) == 8 &&
	      GP_ABI_AT(gp_schedule, start_ns) == 56, "gp_schedule is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_shape_plan) == 34 && GP_ABI_AT(gp_shape_plan, args) == 2,
	      "gp_shape_plan is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_tensor_layout) == 16, "gp_tensor_layout is shared with BPF");

/*
 * Python stacks of op entries (record --with-stack): when on, the payload
 * of every ENTRY starts with the stack, before any shape slots:
 *   [depth | not_read << 32] then depth x {code, instr, first local} words,
 *   innermost first (not_read: the frames between the innermost
 *   GP_PY_INNER_FRAMES and the others, see GP_MAX_PY_FRAMES)
 * (the first local is `self` in nn.Module.__call__, see
 * bpf/python_frames.bpf.h). An ENTRY without payload has no known stack.
 */
#define GP_ENTRY_FRAME_WORDS 3

#endif /* GPUPROF_OP_TRACER_ABI_H */

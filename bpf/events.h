/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * events.h: the only header shared by the BPF programs and userspace.
 *
 * Every event in the BPF ring buffer and in the record file's EVENTS chunks is
 * one struct gp_event: fixed-width fields, explicit padding, 32 bytes. The
 * layout is part of the record-file format: changing it means bumping
 * GP_RECORD_FORMAT_VERSION in userspace/record/record_file.h.
 */
#ifndef GPUPROF_EVENTS_H
#define GPUPROF_EVENTS_H

#ifdef __BPF__
/* vmlinux.h provides __u16/__u32/__u64 on the BPF side. */
#else
#include <linux/types.h>
#endif

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
};

/* at::RecordScope values (c10 record_function.h, the same in 1.13 and 2.x). */
#define GP_RECORD_SCOPE_FUNCTION 0
#define GP_RECORD_SCOPE_USER 7

/* Range names longer than this many bytes are cut (the payload says the length). */
#define GP_RANGE_NAME_BYTES 256

/* op_id of events that belong to no operator (GP_EV_CATCH). */
#define GP_NO_OP 0xffffffffu
/* libcudart copies in one target whose driver calls the launch probes skip
 * (launch_tracer.bpf.c): torch's, torchvision's, ... */
#define GP_MAX_RUNTIMES 4

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
 * the payload (after the stack, if any) is one word, func's vtable pointer,
 * which names the node (the recorder: "autograd::engine::evaluate_function:
 * AddmmBackward0").
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

#ifdef __cplusplus
static_assert(sizeof(struct gp_event) == 32, "gp_event layout is part of the record format");
#else
_Static_assert(sizeof(struct gp_event) == 32, "gp_event layout is part of the record format");
#endif

/*
 * record --follow-forks (bpf/process_forks.bpf.c): a followed process
 * forked a child process.
 */
#define GP_MAX_FOLLOWED_PROCESSES 1024
struct gp_fork {
	__u64 ts_ns;
	__u32 parent_pid; /* tgid */
	__u32 child_pid;
};

/*
 * System-wide mode (record -a, bpf/library_loads.bpf.c): a process mapped a
 * library gpuprof attaches to. The mapping exists once the mmap returns.
 */
enum gp_library_kind {
	GP_LOAD_LIBTORCH = 1,  /* libtorch_cpu*: op probes */
	GP_LOAD_LIBCUDART = 2, /* libcudart*: launch probes */
};
struct gp_library_load {
	__u64 ts_ns;
	__u32 pid; /* tgid */
	__u32 kind; /* enum gp_library_kind */
};

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

/*
 * CPU samples (record -F HZ), from bpf/cpu_sampler.bpf.c, their own ring
 * buffer: perf-event CPU-clock samples of the target's threads.
 */
/*
 * Python frames read per stack (bpf/python_frames.bpf.h): the innermost
 * GP_PY_INNER_FRAMES and the outermost GP_PY_OUTER_FRAMES (a power of two).
 * A deeper stack keeps both ends; the frames between are counted, not read:
 * "not read" below, printed as a frame "[N frames not read]" between the
 * two (docs/stacks.md). The walk follows at most GP_PY_MAX_WALK frames of
 * the chain; GP_PY_ROOT_NOT_REACHED in "not read" says it stopped before
 * the chain's end (that, or a frame it could not read): the outermost
 * frame kept is then not the root.
 */
#define GP_PY_INNER_FRAMES 64
#define GP_PY_OUTER_FRAMES 64
#define GP_MAX_PY_FRAMES (GP_PY_INNER_FRAMES + GP_PY_OUTER_FRAMES)
#define GP_PY_MAX_WALK 2048 /* C shim frames included: twice CPython's default recursion limit */
#define GP_PY_ROOT_NOT_REACHED 0x80000000u
/* System-wide sampling: processes whose Python frames can be walked. */
#define GP_MAX_PYTHON_PROCESSES 4096

struct gp_py_frame {
	__u64 code;  /* the frame's code object (PyCodeObject *) */
	__u64 instr; /* its last instruction pointer (prev_instr) */
};

/* Kernel stacks of samples: at most this many frames (the innermost). */
#define GP_MAX_KERNEL_FRAMES 32

struct gp_cpu_sample {
	__u64 ts_ns;     /*  0: bpf_ktime_get_ns() */
	__u64 user_ip;   /*  8: the thread's user-space instruction pointer */
	__u32 tid;       /* 16 */
	__u32 pid;       /* 20 */
	__u32 in_kernel; /* 24: 1 when the sample interrupted the thread in the kernel */
	__u32 py_depth;  /* 28: Python frames in `frames`, innermost first (0: none) */
	__u32 kernel_depth; /* 32: kernel return addresses after them, innermost first */
	__u32 py_not_read; /* 36: Python frames not read after the innermost GP_PY_INNER_FRAMES (see GP_MAX_PY_FRAMES) */
	char comm[16];   /* 40: the thread's name (system-wide: names a process gone before it is read) */
	/*
	 * py_depth x {code, instr} (struct gp_py_frame), then kernel_depth
	 * kernel addresses; only those words go to the ring. The kernel stack
	 * travels with its sample: a stack-trace map would lose the stacks
	 * whose hash collides (no BPF_F_REUSE_STACKID: that would rename the
	 * stacks of earlier samples).
	 */
	__u64 frames[GP_MAX_PY_FRAMES * 2 + GP_MAX_KERNEL_FRAMES];
};

/*
 * Where the sampled thread's CPython frames are (userspace/python/python_runtime.h
 * finds the values for the target's interpreter): the thread state is at
 * fsbase + tls_offset (glibc's slot of the interpreter's TSS key), its
 * frame chain as docs/stacks.md describes. Field offsets in bytes;
 * frame_owner 0xffff when the version has no owner field.
 */
#define GP_PY_NO_CFRAME 0xffff /* cframe_frame: 3.13+, no _PyCFrame between */
struct gp_python_config {
	__u64 tls_offset;
	__u32 enabled;
	__u32 tstate_cframe; /* 3.11/3.12: the _PyCFrame; 3.13+: the current frame */
	__u32 cframe_frame;  /* the current frame in the _PyCFrame, or GP_PY_NO_CFRAME */
	__u32 frame_code;
	__u32 frame_previous;
	__u32 frame_instr;
	__u32 frame_owner;
	__u32 owner_cshim; /* frames with this owner are C shims: skipped */
	__u32 frame_localsplus; /* the first local (argument) of the frame */
	__u32 reserved;
};

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

/*
 * CUDA kernel launches (bpf/launch_tracer.bpf.c, its own ring buffer): an
 * entry probe on each launch entry point of the target's libcudart (runtime
 * API) and libcuda (driver API, which Triton and cuda-python call
 * directly). The cookie is the entry point's enum gp_launch_api.
 */
enum gp_launch_api {
	GP_LAUNCH_KERNEL = 1,     /* cudaLaunchKernel(func, grid, block, args, smem, stream) (and _ptsz) */
	GP_LAUNCH_KERNEL_EXC = 2, /* cudaLaunchKernelExC(config, func, args) (and _ptsz) */
	GP_LAUNCH_GRAPH = 3,      /* cudaGraphLaunch(graph_exec, stream) (and _ptsz) */
	/* cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra) (and _ptsz) */
	GP_LAUNCH_DRIVER_KERNEL = 4,
	GP_LAUNCH_DRIVER_KERNEL_EX = 5, /* cuLaunchKernelEx(config, f, params, extra) (and _ptsz) */
};

struct gp_launch_event {
	__u64 ts_ns;     /*  0: bpf_ktime_get_ns() */
	__u64 function;  /*  8: host-side kernel function (its stub), the cudaGraphExec_t, or the CUfunction */
	__u64 stream;    /* 16: cudaStream_t (0: the legacy default stream) */
	__u32 grid[3];   /* 24: 0 for graph launches */
	__u32 block[3];  /* 36 */
	__u32 tid;       /* 48 */
	__u16 api;       /* 52: enum gp_launch_api */
	__u16 reserved;  /* 54 */
};

/*
 * CUPTI, through the injection shim's USDT probes (cupti_shim/
 * gpuprof_cupti_probes.h), on the launch tracer's "gpu" ring buffer. Each
 * record starts with its enum gp_gpu_record type.
 */
enum gp_gpu_record {
	GP_GPU_CORRELATION = 1, /* gpuprof:launch: a launch API entered, with its correlation id */
	GP_GPU_ACTIVITY = 2,    /* gpuprof:activity: a kernel, memcpy or memset record */
	GP_GPU_DROPPED = 3,     /* gpuprof:dropped: records CUPTI dropped */
};

#define GP_GPU_NAME_BYTES 256 /* kernel names longer than this are read again by userspace */

struct gp_gpu_correlation {
	__u32 type;        /*  0: GP_GPU_CORRELATION */
	__u32 tid;         /*  4 */
	__u64 ts_ns;       /*  8: bpf_ktime_get_ns() */
	__u64 correlation; /* 16 */
	__u32 domain;      /* 24: CUpti_CallbackDomain (1 driver, 2 runtime) */
	__u32 cbid;        /* 28 */
};

struct gp_gpu_activity {
	__u32 type;        /*  0: GP_GPU_ACTIVITY */
	__u32 kind;        /*  4: 1 kernel, 2 memcpy, 3 memset */
	__u64 correlation; /*  8 */
	__u64 start_ns;    /* 16: CLOCK_MONOTONIC (the shim's timestamp callback) */
	__u64 end_ns;      /* 24 */
	__u64 bytes;       /* 32: memcpy: copy kind in bits 56..63 */
	__u64 name_ptr;    /* 40: the kernel name in the target (0: none) */
	__u32 device;      /* 48 */
	__u32 stream;      /* 52 */
	char name[GP_GPU_NAME_BYTES]; /* 56: NUL-terminated copy, maybe cut */
};

struct gp_gpu_dropped {
	__u32 type; /* GP_GPU_DROPPED */
	__u32 reserved;
	__u64 count;
};

/*
 * A thread of the target exiting (bpf/thread_exits.bpf.c): its name then,
 * which gpuprof cannot read from /proc once the thread is gone.
 */
struct gp_thread_exit {
	__u32 tid;
	__u32 reserved;
	char comm[16]; /* TASK_COMM_LEN */
};

#ifdef __cplusplus
static_assert(sizeof(struct gp_thread_exit) == 24, "gp_thread_exit is shared with BPF");
static_assert(sizeof(struct gp_schedule) == 64, "gp_schedule is shared with BPF");
static_assert(sizeof(struct gp_fork) == 16, "gp_fork is shared with BPF");
static_assert(sizeof(struct gp_gpu_correlation) == 32, "gp_gpu_correlation is shared with BPF");
static_assert(sizeof(struct gp_gpu_activity) == 56 + GP_GPU_NAME_BYTES, "gp_gpu_activity is shared with BPF");
static_assert(sizeof(struct gp_launch_event) == 56, "gp_launch_event is shared with BPF");
static_assert(sizeof(struct gp_cpu_sample) == 56 + 16 * GP_MAX_PY_FRAMES + 8 * GP_MAX_KERNEL_FRAMES, "gp_cpu_sample is shared with BPF");
static_assert(sizeof(struct gp_shape_plan) == 34, "gp_shape_plan is shared with BPF");
static_assert(sizeof(struct gp_mem_event) == 40, "gp_mem_event layout is part of the record format");
#else
_Static_assert(sizeof(struct gp_mem_event) == 40, "gp_mem_event layout is part of the record format");
#endif

#endif /* GPUPROF_EVENTS_H */

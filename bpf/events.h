/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * events.h: the only header shared by the BPF programs and userspace.
 *
 * Every event in the BPF ring buffer and in the record file's EVENTS chunks is
 * one struct gp_event: fixed-width fields, explicit padding, 32 bytes. The
 * layout is part of the record-file format: changing it means bumping
 * GP_RECORD_FORMAT_VERSION in userspace/record_file.h.
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
	 * unwound by the exception (see userspace/op_timeline.cpp).
	 */
	GP_EV_CATCH = 3,
};

/* op_id of events that belong to no operator (GP_EV_CATCH). */
#define GP_NO_OP 0xffffffffu

/*
 * uprobe_multi cookie layout; one BPF program serves every site:
 *   bits  0..31  op id (GP_NO_OP for catches)
 *   bits 32..39  event kind (enum gp_event_kind)
 *   bit  40      the site is not where the entry sp is: compute it (below)
 *   bit  41      ... from rbp (1) or rsp (0) at the site
 *   bits 48..63  ... plus this signed offset
 * Exit sites on the stack-protector branch before a `ret` (see
 * userspace/ret_finder.h) use bits 40..63 so that every event carries the
 * op's entry sp, which the timeline matches entries and exits by.
 */
#define GP_COOKIE_SP_COMPUTED (1ull << 40)
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
	__u16 pad;    /* 30: zero */
};

#ifdef __cplusplus
static_assert(sizeof(struct gp_event) == 32, "gp_event layout is part of the record format");
#else
_Static_assert(sizeof(struct gp_event) == 32, "gp_event layout is part of the record format");
#endif

#endif /* GPUPROF_EVENTS_H */

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_cost.bpf.c: the BPF side of the probe-cost benchmark.
 *
 *   count          counts hits; nothing else (entry, return and session links)
 *   emulate_ret    counts, then performs the probed `ret` itself: ip = *sp,
 *                  sp += 8. Needs write access to pt_regs (6.18: "bpf: Allow
 *                  uprobe program to change context registers"); the kernel
 *                  then skips single-stepping because ip moved ("uprobe: Do
 *                  not emulate/sstep original instruction when ip is changed").
 *   write_user     calls bpf_probe_write_user; only loaded by `probe_cost
 *                  write-user` to see whether lockdown allows the helper.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} hits SEC(".maps");

static __always_inline void bump(void)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&hits, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("uprobe")
int count(struct pt_regs *ctx)
{
	bump();
	return 0;
}

SEC("uprobe")
int emulate_ret(struct pt_regs *ctx)
{
	__u64 ra;

	bump();
	if (bpf_probe_read_user(&ra, sizeof(ra), (void *)ctx->sp))
		return 0; /* leave regs alone: the kernel single-steps the ret */
	ctx->ip = ra;
	ctx->sp += 8;
	return 0;
}

SEC("uprobe")
int write_user(struct pt_regs *ctx)
{
	__u64 zero = 0;

	bump();
	bpf_probe_write_user((void *)(ctx->sp - 128), &zero, sizeof(zero));
	return 0;
}

/*
 * libtorch check (`probe_cost torch`): entry probes on every
 * at::_ops::*::call push their sp on a per-thread stack; exit probes on the
 * stack-protector `jne` before each body's only `ret` recompute the entry sp
 * from the cookie (bit 63: rbp-framed, entry sp = rbp + off; else sp + off,
 * off in the low 16 bits) and compare with the top of the stack.
 * ret-probe mode (cookie bit 62) compares sp itself (at `ret`, sp == entry sp).
 */
#define TK_DEPTH 64
struct tk_stack {
	__u32 depth;
	__u32 pad;
	__u64 sp[TK_DEPTH];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct tk_stack);
} tk_stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4); /* entries, exits matched, mismatched, exit on empty stack */
	__type(key, __u32);
	__type(value, __u64);
} tk_res SEC(".maps");

static __always_inline void tk_bump(__u32 k)
{
	__u64 *v = bpf_map_lookup_elem(&tk_res, &k);

	if (v)
		__sync_fetch_and_add(v, 1);
}

SEC("uprobe")
int tk_entry(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tk_stack *st = bpf_map_lookup_elem(&tk_stacks, &tid);

	tk_bump(0);
	if (!st) {
		static const struct tk_stack zero;

		bpf_map_update_elem(&tk_stacks, &tid, &zero, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&tk_stacks, &tid);
		if (!st)
			return 0;
	}
	if (st->depth < TK_DEPTH)
		st->sp[st->depth & (TK_DEPTH - 1)] = ctx->sp;
	st->depth++;
	return 0;
}

SEC("uprobe")
int tk_exit(struct pt_regs *ctx)
{
	__u64 c = bpf_get_attach_cookie(ctx);
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct tk_stack *st = bpf_map_lookup_elem(&tk_stacks, &tid);
	__u64 entry_sp = c >> 62 == 1 ? ctx->sp
			 : (c >> 63) ? ctx->bp + (c & 0xffff)
				     : ctx->sp + (c & 0xffff);

	if (!st || st->depth == 0) {
		tk_bump(3);
		return 0;
	}
	st->depth--;
	if (st->depth < TK_DEPTH && st->sp[st->depth & (TK_DEPTH - 1)] == entry_sp)
		tk_bump(1);
	else
		tk_bump(2);
	return 0;
}

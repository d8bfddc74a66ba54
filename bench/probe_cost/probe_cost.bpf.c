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

/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * common.bpf.h: what every gpuprof BPF program writes the same way (BPF
 * side only; the layouts userspace shares are in the *_abi.h headers).
 */
#ifndef GPUPROF_COMMON_BPF_H
#define GPUPROF_COMMON_BPF_H

/* A ring buffer of `bytes` (a power of two); the loaders of the hot rings resize it before load. */
#define GP_RINGBUF(name, bytes)                         \
	struct {                                        \
		__uint(type, BPF_MAP_TYPE_RINGBUF);     \
		__uint(max_entries, bytes);             \
	} name SEC(".maps")

/* A map of type_ (BPF_MAP_TYPE_HASH, ...): up to `entries` key_type -> value_type. */
#define GP_MAP(name, type_, entries, key_type, value_type)   \
	struct {                                            \
		__uint(type, type_);                        \
		__uint(max_entries, entries);               \
		__type(key, key_type);                      \
		__type(value, value_type);                  \
	} name SEC(".maps")

/*
 * One value_type per CPU, at key 0: room for a record too large for the
 * 512-byte BPF stack, or state a bpf_loop callback reaches. A program
 * that cannot be interrupted by itself on its CPU (perf_event, uprobes
 * with the busy flag of op_tracer.bpf.c) may use it without a lock.
 */
#define GP_PERCPU_SCRATCH(name, value_type) GP_MAP(name, BPF_MAP_TYPE_PERCPU_ARRAY, 1, __u32, value_type)

/* This CPU's value of a GP_PERCPU_SCRATCH map (NULL only if the map is broken). */
static __always_inline void *gp_scratch(void *map)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(map, &zero);
}

/*
 * Room for one record of `size` bytes (a constant) in `ring`; NULL, and
 * *lost counted, when the ring is full (userspace reports the count).
 */
static __always_inline void *gp_reserve(void *ring, __u64 size, __u64 *lost)
{
	void *record = bpf_ringbuf_reserve(ring, size, 0);

	if (!record)
		__sync_fetch_and_add(lost, 1);
	return record;
}

#endif /* GPUPROF_COMMON_BPF_H */

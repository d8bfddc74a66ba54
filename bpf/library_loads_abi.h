/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * library_loads_abi.h: bpf/library_loads.bpf.c and its userspace half
 * (userspace/probe/library_loads.cpp).
 */
#ifndef GPUPROF_LIBRARY_LOADS_ABI_H
#define GPUPROF_LIBRARY_LOADS_ABI_H

#include "abi_common.h"

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

GP_ABI_ASSERT(sizeof(struct gp_library_load) == 16 && GP_ABI_AT(gp_library_load, pid) == 8 &&
	      GP_ABI_AT(gp_library_load, kind) == 12, "gp_library_load is shared with BPF");

#endif /* GPUPROF_LIBRARY_LOADS_ABI_H */

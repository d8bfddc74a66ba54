/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * launch_tracer_abi.h: bpf/launch_tracer.bpf.c and its userspace half
 * (userspace/probe/launch_tracer.cpp): CUDA kernel launches, and CUPTI's
 * records through the injection shim.
 */
#ifndef GPUPROF_LAUNCH_TRACER_ABI_H
#define GPUPROF_LAUNCH_TRACER_ABI_H

#include "abi_common.h"

/* libcudart copies in one target whose driver calls the launch probes skip
 * (launch_tracer.bpf.c): torch's, torchvision's, ... */
#define GP_MAX_RUNTIMES 4

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

GP_ABI_ASSERT(sizeof(struct gp_launch_event) == 56 && GP_ABI_AT(gp_launch_event, function) == 8 &&
	      GP_ABI_AT(gp_launch_event, stream) == 16 && GP_ABI_AT(gp_launch_event, grid) == 24 &&
	      GP_ABI_AT(gp_launch_event, block) == 36 && GP_ABI_AT(gp_launch_event, tid) == 48 &&
	      GP_ABI_AT(gp_launch_event, api) == 52, "gp_launch_event is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_gpu_correlation) == 32 &&
	      GP_ABI_AT(gp_gpu_correlation, ts_ns) == 8 &&
	      GP_ABI_AT(gp_gpu_correlation, correlation) == 16 &&
	      GP_ABI_AT(gp_gpu_correlation, domain) == 24 && GP_ABI_AT(gp_gpu_correlation, cbid) == 28,
	      "gp_gpu_correlation is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_gpu_activity) == 56 + GP_GPU_NAME_BYTES &&
	      GP_ABI_AT(gp_gpu_activity, correlation) == 8 &&
	      GP_ABI_AT(gp_gpu_activity, start_ns) == 16 && GP_ABI_AT(gp_gpu_activity, bytes) == 32 &&
	      GP_ABI_AT(gp_gpu_activity, name_ptr) == 40 && GP_ABI_AT(gp_gpu_activity, device) == 48 &&
	      GP_ABI_AT(gp_gpu_activity, name) == 56, "gp_gpu_activity is shared with BPF");
GP_ABI_ASSERT(sizeof(struct gp_gpu_dropped) == 16, "gp_gpu_dropped is shared with BPF");

#endif /* GPUPROF_LAUNCH_TRACER_ABI_H */

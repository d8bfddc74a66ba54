// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * launch_tracer.bpf.c: CUDA kernel launches of one process.
 *
 * Entry probes (uprobe_multi, cookie = enum gp_launch_api, filtered to the
 * target's pid by the link) on the launch entry points of the target's
 * libcudart and libcuda. Per launch: thread, time, the host-side kernel
 * function (whose symbol names the kernel; a CUfunction handle for the
 * driver API), grid and block dimensions and stream, read from the x86-64
 * SysV arguments at the first instruction. The operator that launched it
 * comes later from the op timeline (same clock, same thread). Entry probes
 * only, as everywhere in gpuprof: no return probes.
 *
 * A runtime launch may reach the driver's own entry point from inside
 * libcudart: that call is the same launch, already recorded. A driver
 * launch whose return address lies in libcudart's mapping
 * [runtime_lo, runtime_hi) is skipped; only launches made directly (Triton,
 * cuda-python) are recorded.
 *
 * With the CUPTI injection shim loaded in the target (cupti_shim/), its USDT
 * probes add what only CUPTI knows: the correlation id of each launch, on
 * the launching thread, and the GPU activity records (kernels, memcpy,
 * memset) carrying the same id, on the "gpu" ring buffer.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#include "common.bpf.h"
#include "launch_tracer_abi.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by userspace once every site is in place, cleared before detach. */
__u32 tracing_on = 0;
__u64 launches_lost = 0;
/* The mappings of the target's libcudarts (a process can map several:
 * torch's, and torchvision's own copy), [lo, hi) each; unused ones 0, 0. */
__u64 runtime_lo[GP_MAX_RUNTIMES] = {};
__u64 runtime_hi[GP_MAX_RUNTIMES] = {};
__u64 driver_calls_from_runtime = 0;
/*
 * Set by userspace when it stops while the job runs on (0 until then): the
 * largest CUPTI correlation id of a launch it recorded. Activities of later
 * launches take no room in the ring while it waits for the earlier ones'.
 */
__u64 last_recorded_correlation = 0;

GP_RINGBUF(launches, 4 << 20); /* resized by userspace before load */

GP_RINGBUF(gpu, 4 << 20); /* resized by userspace before load */

__u64 gpu_records_lost = 0;

/* dim3 {x, y, z} passed by value: x and y in one register, z in the next. */
static __always_inline void dims_from_registers(__u32 *dims, __u64 xy, __u64 z)
{
	dims[0] = (__u32)xy;
	dims[1] = (__u32)(xy >> 32);
	dims[2] = (__u32)z;
}

/*
 * The grid, block and stream of a launch configuration: cudaLaunchConfig_t
 * and the driver's CUlaunchConfig share the layout (dims @0 and @12, shared
 * memory @24, stream @32). Zeros when it cannot be read.
 */
static __always_inline void dims_from_config(struct gp_launch_event *e, __u64 config)
{
	if (bpf_probe_read_user(e->grid, 24, (void *)config) ||
	    bpf_probe_read_user(&e->stream, 8, (void *)(config + 32))) {
		__builtin_memset(e->grid, 0, sizeof(e->grid));
		__builtin_memset(e->block, 0, sizeof(e->block));
		e->stream = 0;
	}
}

SEC("uprobe")
int on_launch(struct pt_regs *ctx)
{
	__u64 api = bpf_get_attach_cookie(ctx);
	struct gp_launch_event *e;
	/* Read every argument register up front (see op_tracer.bpf.c). */
	/* The sixth argument is r9 (this libbpf has no PT_REGS_PARM6). */
	__u64 p1 = PT_REGS_PARM1(ctx), p2 = PT_REGS_PARM2(ctx), p3 = PT_REGS_PARM3(ctx),
	      p4 = PT_REGS_PARM4(ctx), p5 = PT_REGS_PARM5(ctx), p6 = ctx->r9, sp = PT_REGS_SP(ctx);

	asm volatile("" : "+r"(p1), "+r"(p2), "+r"(p3), "+r"(p4), "+r"(p5), "+r"(p6), "+r"(sp));

	if (!tracing_on)
		return 0;
	if (api == GP_LAUNCH_DRIVER_KERNEL || api == GP_LAUNCH_DRIVER_KERNEL_EX) {
		__u64 return_address = 0;

		/* At entry, rsp points at the return address. */
		if (!bpf_probe_read_user(&return_address, 8, (void *)sp)) {
			for (int i = 0; i < GP_MAX_RUNTIMES; i++) {
				if (return_address >= runtime_lo[i] && return_address < runtime_hi[i]) {
					__sync_fetch_and_add(&driver_calls_from_runtime, 1);
					return 0;
				}
			}
		}
	}
	e = gp_reserve(&launches, sizeof(*e), &launches_lost);
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->ts_ns = bpf_ktime_get_ns();
	e->tid = (__u32)bpf_get_current_pid_tgid();
	e->api = (__u16)api;
	if (api == GP_LAUNCH_KERNEL) {
		/*
		 * cudaLaunchKernel(const void *func, dim3 grid, dim3 block,
		 *                  void **args, size_t smem, cudaStream_t stream):
		 * func rdi, grid rsi:rdx, block rcx:r8, args r9, then the stack
		 * (at entry, rsp points at the return address): smem, stream.
		 */
		e->function = p1;
		dims_from_registers(e->grid, p2, p3);
		dims_from_registers(e->block, p4, p5);
		if (bpf_probe_read_user(&e->stream, 8, (void *)(sp + 16)))
			e->stream = 0;
	} else if (api == GP_LAUNCH_KERNEL_EXC) {
		/*
		 * cudaLaunchKernelExC(const cudaLaunchConfig_t *config,
		 *                     const void *func, void **args);
		 * config: dim3 gridDim @0, dim3 blockDim @12, size_t smem @24,
		 * cudaStream_t stream @32.
		 */
		e->function = p2;
		dims_from_config(e, p1);
	} else if (api == GP_LAUNCH_GRAPH) {
		/* cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream) */
		e->function = p1;
		e->stream = p2;
	} else if (api == GP_LAUNCH_DRIVER_KERNEL) {
		/*
		 * cuLaunchKernel(CUfunction f, unsigned gridDimX, gridDimY,
		 *                gridDimZ, blockDimX, blockDimY, blockDimZ,
		 *                unsigned sharedMemBytes, CUstream hStream,
		 *                void **kernelParams, void **extra):
		 * f rdi, grid rsi rdx rcx, blockX r8, blockY r9, then the stack
		 * after the return address: blockZ, smem, stream (8 bytes each).
		 */
		__u64 stack[3] = {};

		e->function = p1;
		e->grid[0] = (__u32)p2;
		e->grid[1] = (__u32)p3;
		e->grid[2] = (__u32)p4;
		e->block[0] = (__u32)p5;
		e->block[1] = (__u32)p6;
		if (!bpf_probe_read_user(stack, sizeof(stack), (void *)(sp + 8))) {
			e->block[2] = (__u32)stack[0];
			e->stream = stack[2];
		}
	} else if (api == GP_LAUNCH_DRIVER_KERNEL_EX) {
		/*
		 * cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f,
		 *                  void **kernelParams, void **extra);
		 * CUlaunchConfig: gridDimX..Z @0, blockDimX..Z @12, smem @24,
		 * hStream @32: cudaLaunchConfig_t's layout.
		 */
		e->function = p2;
		dims_from_config(e, p1);
	}
	/* Userspace polls this ring on its loop's timer: no wakeup per launch. */
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	return 0;
}

/* Room for one record of the CUPTI shim on the "gpu" ring while tracing; NULL otherwise. */
static __always_inline void *reserve_gpu_record(__u64 size)
{
	if (!tracing_on)
		return NULL;
	return gp_reserve(&gpu, size, &gpu_records_lost);
}

/* gpuprof:launch(u64 correlation_id, u32 domain, u32 cbid), on the launching thread. */
SEC("usdt")
int BPF_USDT(on_gpu_launch, __u64 correlation, __u32 domain, __u32 cbid)
{
	struct gp_gpu_correlation *c;

	c = reserve_gpu_record(sizeof(*c));
	if (!c)
		return 0;
	c->type = GP_GPU_CORRELATION;
	c->tid = (__u32)bpf_get_current_pid_tgid();
	c->ts_ns = bpf_ktime_get_ns();
	c->correlation = correlation;
	c->domain = domain;
	c->cbid = cbid;
	bpf_ringbuf_submit(c, BPF_RB_NO_WAKEUP);
	return 0;
}

/*
 * gpuprof:activity(u32 kind, u64 correlation_id, u64 start, u64 end,
 *                  u32 device, u32 stream, u64 bytes, const char *name),
 * on CUPTI's thread as it delivers a buffer.
 */
SEC("usdt")
int BPF_USDT(on_gpu_activity, __u32 kind, __u64 correlation, __u64 start, __u64 end, __u32 device,
	     __u32 stream, __u64 bytes, __u64 name)
{
	struct gp_gpu_activity *a;

	if (last_recorded_correlation && correlation > last_recorded_correlation)
		return 0;
	a = reserve_gpu_record(sizeof(*a));
	if (!a)
		return 0;
	a->type = GP_GPU_ACTIVITY;
	a->kind = kind;
	a->correlation = correlation;
	a->start_ns = start;
	a->end_ns = end;
	a->bytes = bytes;
	a->name_ptr = name;
	a->device = device;
	a->stream = stream;
	a->name[0] = 0;
	if (name && bpf_probe_read_user_str(a->name, sizeof(a->name), (void *)name) < 0)
		a->name[0] = 0;
	bpf_ringbuf_submit(a, BPF_RB_NO_WAKEUP);
	return 0;
}

/* gpuprof:dropped(u64 count): records CUPTI dropped (its buffers were full). */
SEC("usdt")
int BPF_USDT(on_gpu_dropped, __u64 count)
{
	struct gp_gpu_dropped *d;

	d = reserve_gpu_record(sizeof(*d));
	if (!d)
		return 0;
	d->type = GP_GPU_DROPPED;
	d->reserved = 0;
	d->count = count;
	bpf_ringbuf_submit(d, BPF_RB_NO_WAKEUP);
	return 0;
}

// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * library_loads.bpf.c: which processes map libtorch or libcudart, system-wide
 * (record -a, top -a).
 *
 * Every executable file mapping of every process passes the mmap syscall
 * tracepoint (this kernel has no ftrace for fentry, see library_watch.bpf.c);
 * this program keeps only files whose name starts with "libtorch_cpu" or
 * "libcudart" and tells userspace which process mapped which kind. The
 * filter runs in the kernel: other processes cost one tracepoint call per
 * executable mmap (a handful at each exec and dlopen), nothing per op.
 * Userspace then attaches the op probes to a libtorch_cpu file it has not
 * seen before (one link for every process that maps that file) and the
 * launch probes to that process's libcudart. Nothing is done to the process:
 * unlike launch mode it is never stopped, so it runs a few ms of the new
 * library before the probes are in (torch's Python import takes far longer
 * before its first op).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "library_loads_abi.h"
#include "task_files.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PROT_EXEC_BIT 0x4

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 << 10);
} loads SEC(".maps");

__u64 loads_lost = 0;

static __always_inline int starts_with(const char *name, const char *prefix, int len)
{
	for (int i = 0; i < len; i++)
		if (name[i] != prefix[i])
			return 0;
	return 1;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	unsigned long prot = ctx->args[2];
	long fd = (long)ctx->args[4];
	struct gp_library_load *load;
	struct file *file;
	char name[16] = {};
	__u32 kind;

	if (fd < 0 || !(prot & PROT_EXEC_BIT))
		return 0;
	file = fd_to_file(fd);
	if (!file || bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(file, f_path.dentry, d_name.name)) < 0)
		return 0;
	if (starts_with(name, "libtorch_cpu", 12))
		kind = GP_LOAD_LIBTORCH;
	else if (starts_with(name, "libcudart", 9))
		kind = GP_LOAD_LIBCUDART;
	else
		return 0;
	load = bpf_ringbuf_reserve(&loads, sizeof(*load), 0);
	if (!load) {
		__sync_fetch_and_add(&loads_lost, 1);
		return 0;
	}
	load->ts_ns = bpf_ktime_get_ns();
	load->pid = bpf_get_current_pid_tgid() >> 32;
	load->kind = kind;
	bpf_ringbuf_submit(load, 0);
	return 0;
}

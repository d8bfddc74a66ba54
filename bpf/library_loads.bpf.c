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

#include "common.bpf.h"
#include "library_loads_abi.h"
#include "task_files.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

GP_RINGBUF(loads, 256 << 10);

__u64 loads_lost = 0;

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct file *file = exec_mapping_file(ctx);
	struct gp_library_load *load;
	__u32 kind;

	if (!file)
		return 0;
	if (file_name_starts_with(file, "libtorch_cpu", 12))
		kind = GP_LOAD_LIBTORCH;
	else if (file_name_starts_with(file, "libcudart", 9))
		kind = GP_LOAD_LIBCUDART;
	else
		return 0;
	load = gp_reserve(&loads, sizeof(*load), &loads_lost);
	if (!load)
		return 0;
	load->ts_ns = bpf_ktime_get_ns();
	load->pid = bpf_get_current_pid_tgid() >> 32;
	load->kind = kind;
	bpf_ringbuf_submit(load, 0);
	return 0;
}

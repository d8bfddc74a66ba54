// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * library_watch.bpf.c: stop a launched command the moment it maps libtorch.
 *
 * `gpuprof record -- CMD` must have its probes in place before CMD's first
 * operator, but which libtorch_cpu CMD will load (Debian's, a venv's, a
 * conda env's) is only known when it maps one. This program sees every
 * executable file mapping the launched process asks for (the mmap syscall
 * tracepoint: this kernel has no ftrace, so fentry and BPF LSM programs
 * cannot attach), and when the file's name starts with the watched prefix
 * (below) it sends SIGSTOP to
 * the process once. The signal is acted on at the return from mmap(),
 * before any code of the library runs; gpuprof, the parent,
 * sees the stop with waitpid(WUNTRACED), attaches the op probes to the now
 * mapped file and sends SIGCONT.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "task_files.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define SIGSTOP_NUM 19

/* The launched process (thread group id). Set before load. */
const volatile __u32 watch_tgid = 0;

/* 1 while a stop is wanted; cleared here when the stop is sent. */
__u32 armed = 0;

/* Set when the stop was sent, so userspace can tell our stop from others. */
__u32 stop_sent = 0;

/*
 * The file-name prefix to stop at, set by userspace before arming:
 * "libtorch_cpu" first; then "libc10.so" (--profile-memory, shapes) and
 * "libcudart" (launch probes), one at a time, when the dynamic loader maps
 * them after libtorch_cpu.
 */
char watch_prefix[GP_FILE_NAME_PREFIX_MAX] = {};
__u32 watch_prefix_len = 0;

SEC("tracepoint/syscalls/sys_enter_mmap")
int on_mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct file *file;

	if (!armed || (bpf_get_current_pid_tgid() >> 32) != watch_tgid)
		return 0;
	file = exec_mapping_file(ctx);
	if (!file || !file_name_starts_with(file, watch_prefix, watch_prefix_len))
		return 0;
	/*
	 * SIGSTOP does not interrupt the mmap: it is acted on at the return
	 * to user space, after the mapping exists and before any of its code
	 * can run.
	 */
	armed = 0;
	stop_sent = 1;
	bpf_send_signal(SIGSTOP_NUM);
	return 0;
}

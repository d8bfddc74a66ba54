/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * task_files.bpf.h: the struct file behind one of the current task's file
 * descriptors (the mmap tracepoints see an fd, the file name is behind it).
 * Kernel reads only; NULL when the fd is out of range or closed.
 */
#ifndef GPUPROF_TASK_FILES_BPF_H
#define GPUPROF_TASK_FILES_BPF_H

static __always_inline struct file *fd_to_file(unsigned long fd)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds;
	struct file *file = NULL;

	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_probe_read_kernel(&file, sizeof(file), &fds[fd]);
	return file;
}

#endif /* GPUPROF_TASK_FILES_BPF_H */

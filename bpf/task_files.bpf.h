/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * task_files.bpf.h: the file an mmap maps, from the sys_enter_mmap
 * tracepoint (library_loads.bpf.c, library_watch.bpf.c): the tracepoint
 * sees an fd, the struct file and its name are behind it. Kernel reads
 * only.
 */
#ifndef GPUPROF_TASK_FILES_BPF_H
#define GPUPROF_TASK_FILES_BPF_H

#define PROT_EXEC_BIT 0x4
/* The longest file-name prefix compared, NUL included. */
#define GP_FILE_NAME_PREFIX_MAX 16

/* The struct file of one of the current task's fds; NULL when out of range or closed. */
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

/* The file of an executable mapping (code being loaded); NULL for any other mmap. */
static __always_inline struct file *exec_mapping_file(const struct trace_event_raw_sys_enter *ctx)
{
	unsigned long prot = ctx->args[2];
	long fd = (long)ctx->args[4];

	if (fd < 0 || !(prot & PROT_EXEC_BIT))
		return NULL;
	return fd_to_file(fd);
}

/*
 * 1 when the name of `file` starts with the first len bytes of prefix
 * (len < GP_FILE_NAME_PREFIX_MAX; a longer one compares that many).
 */
static __always_inline int file_name_starts_with(struct file *file, const char *prefix, __u32 len)
{
	char name[GP_FILE_NAME_PREFIX_MAX];

	if (bpf_probe_read_kernel_str(name, sizeof(name), BPF_CORE_READ(file, f_path.dentry, d_name.name)) < 0)
		return 0;
	for (int i = 0; i < GP_FILE_NAME_PREFIX_MAX; i++) {
		if (i >= len)
			return 1;
		if (name[i] != prefix[i])
			return 0;
	}
	return 1;
}

#endif /* GPUPROF_TASK_FILES_BPF_H */

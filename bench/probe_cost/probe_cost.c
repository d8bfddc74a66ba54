// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * probe_cost.c: price one uprobe hit on one instruction kind.
 *
 *   probe_cost [-n ITERS] [-r REPS] [-f v|x|n] TARGET CASE [LABEL]
 *
 * LABEL is a symbol of TARGET (p_push, p_ret, victim, ...). CASE:
 *   entry      uprobe_multi entry probe on LABEL, BPF program `count`
 *   ret        uprobe_multi with the return flag on LABEL (a uretprobe)
 *   entry+ret  both of the above, two links on the same LABEL
 *   session    one uprobe_multi session link (attach type 57) on LABEL
 *   emulret    entry probe on LABEL with `emulate_ret` (LABEL must be a ret)
 *   write-user only load a program calling bpf_probe_write_user; report
 *
 *   probe_cost torch none|entry|jne|ret SITES LIB CMD...   (see torch_mode)
 *
 * For each of REPS rounds: run TARGET unprobed, attach, run TARGET probed,
 * detach. Prints the medians and (probed - unprobed) per call, plus the BPF
 * hit count per probed run (expected ITERS+1, +1 for the warm-up call).
 *
 * Links are made with raw BPF_LINK_CREATE because Debian's libbpf 1.1 has no
 * uprobe_multi support. Layout: include/uapi/linux/bpf.h, link_create.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#define ATTACH_UPROBE_MULTI 48
#define ATTACH_UPROBE_SESSION 57
#define UPROBE_MULTI_RETURN 1
#define CMD_LINK_CREATE 28

struct link_create_uprobe_multi {
	__u32 prog_fd, target_fd, attach_type, flags;
	__u64 path, offsets, ref_ctr_offsets, cookies;
	__u32 cnt, uprobe_flags, pid, path_fd;
};

static unsigned long file_offset_of(const char *path, const char *name)
{
	unsigned long off = 0;
	int fd = open(path, O_RDONLY);
	Elf *e;
	Elf_Scn *scn = NULL;

	if (fd < 0 || elf_version(EV_CURRENT) == EV_NONE || !(e = elf_begin(fd, ELF_C_READ, NULL))) {
		fprintf(stderr, "cannot read ELF %s\n", path);
		exit(2);
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			GElf_Shdr tsh;

			gelf_getsym(d, i, &s);
			if (strcmp(elf_strptr(e, sh.sh_link, s.st_name), name) || s.st_shndx == SHN_UNDEF)
				continue;
			gelf_getshdr(elf_getscn(e, s.st_shndx), &tsh);
			off = s.st_value - tsh.sh_addr + tsh.sh_offset;
		}
	}
	elf_end(e);
	close(fd);
	if (!off) {
		fprintf(stderr, "symbol %s not found in %s\n", name, path);
		exit(2);
	}
	return off;
}

static int link_many(int prog_fd, const char *path, const unsigned long *offs, const __u64 *cookies,
		     __u32 cnt, __u32 attach_type, __u32 uflags, pid_t pid)
{
	unsigned char attr[160] = {0};
	struct link_create_uprobe_multi l = {
		.prog_fd = prog_fd,
		.attach_type = attach_type,
		.path = (unsigned long)path,
		.offsets = (unsigned long)offs,
		.cookies = (unsigned long)cookies,
		.cnt = cnt,
		.uprobe_flags = uflags,
		.pid = (__u32)pid,
	};
	memcpy(attr, &l, sizeof(l));
	int fd = syscall(__NR_bpf, CMD_LINK_CREATE, attr, sizeof(attr));
	if (fd < 0) {
		fprintf(stderr, "BPF_LINK_CREATE (type %u flags %u, %u sites at %#lx...): %s\n",
			attach_type, uflags, cnt, offs[0], strerror(errno));
		exit(1);
	}
	return fd;
}

static int link_uprobe_multi(int prog_fd, const char *path, unsigned long off, __u32 attach_type,
			     __u32 uflags)
{
	__u64 cookie = 0;
	return link_many(prog_fd, path, &off, &cookie, 1, attach_type, uflags, 0);
}

/*
 * probe_cost torch none|entry|jne|ret SITES LIB CMD...: entry probes on every
 * function of SITES (epilogues.py --sites) plus exit probes on its canary jne
 * (jne) or its ret (ret), then run CMD and report the sp matches.
 */
static int torch_mode(const char *objpath, int argc, char **argv)
{
	if (argc < 4) {
		fprintf(stderr, "usage: probe_cost torch none|entry|jne|ret SITES LIB CMD...\n");
		return 2;
	}
	const char *how = argv[0], *lib = argv[2];
	FILE *f = fopen(argv[1], "r");
	static unsigned long ent[8192], ex[8192];
	static __u64 zc[8192], ec[8192];
	unsigned n = 0;
	char name[512];
	unsigned long e, j, r, off;
	int fp;

	if (!f) {
		perror(argv[1]);
		return 1;
	}
	while (n < 8192 && fscanf(f, "%511s %lx %lx %lx %d %lx", name, &e, &j, &r, &fp, &off) == 6) {
		ent[n] = e;
		if (!strcmp(how, "ret")) {
			ex[n] = r;
			ec[n] = 1ull << 62;
		} else {
			ex[n] = j;
			ec[n] = (fp ? 1ull << 63 : 0) | off;
		}
		n++;
	}
	fclose(f);
	struct bpf_object *obj = bpf_object__open_file(objpath, NULL);
	struct bpf_program *prog;
	bpf_object__for_each_program(prog, obj) {
		const char *pn = bpf_program__name(prog);
		bpf_program__set_autoload(prog, !strcmp(pn, "tk_entry") || !strcmp(pn, "tk_exit"));
		bpf_program__set_expected_attach_type(prog, ATTACH_UPROBE_MULTI);
	}
	if (bpf_object__load(obj)) {
		fprintf(stderr, "load failed\n");
		return 1;
	}
	/* the child waits for the links: they carry its pid (other processes
	 * using libtorch on this machine must not be probed) */
	int go[2];
	char c = 0;
	if (pipe(go))
		return 1;
	pid_t pid = fork();
	if (pid == 0) {
		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execvp(argv[3], argv + 3);
		_exit(127);
	}
	close(go[0]);
	int l1 = -1, l2 = -1;
	if (strcmp(how, "none")) {
		l1 = link_many(bpf_program__fd(bpf_object__find_program_by_name(obj, "tk_entry")), lib,
			       ent, zc, n, ATTACH_UPROBE_MULTI, 0, pid);
		if (strcmp(how, "entry"))
			l2 = link_many(bpf_program__fd(bpf_object__find_program_by_name(obj, "tk_exit")),
				       lib, ex, ec, n, ATTACH_UPROBE_MULTI, 0, pid);
	}
	if (write(go[1], &c, 1) != 1)
		return 1;
	close(go[1]);
	int st;
	waitpid(pid, &st, 0);
	int mfd = bpf_map__fd(bpf_object__find_map_by_name(obj, "tk_res"));
	__u64 v[4] = {0};
	for (__u32 k = 0; k < 4; k++)
		bpf_map_lookup_elem(mfd, &k, &v[k]);
	printf("torch %-4s sites %u: entries %llu, exits with sp match %llu, mismatch %llu, "
	       "exit on empty stack %llu (target status %#x)\n",
	       how, n, (unsigned long long)v[0], (unsigned long long)v[1], (unsigned long long)v[2],
	       (unsigned long long)v[3], st);
	if (l2 >= 0)
		close(l2);
	if (l1 >= 0)
		close(l1);
	return 0;
}

static double run_target(const char *target, long iters, const char *fn)
{
	int p[2];
	char buf[256] = {0}, n[32];
	double ns = -1;

	snprintf(n, sizeof(n), "%ld", iters);
	if (pipe(p))
		exit(1);
	pid_t pid = fork();
	if (pid == 0) {
		dup2(p[1], 1);
		close(p[0]);
		execl(target, target, n, fn, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	ssize_t got = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	int st;
	waitpid(pid, &st, 0);
	if (got <= 0 || sscanf(buf, "ns_per_call %lf", &ns) != 1 || !WIFEXITED(st)) {
		fprintf(stderr, "target failed (status %#x): %s\n", st, buf);
		exit(1);
	}
	return ns;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv)
{
	long iters = 200000;
	int reps = 3, opt;
	const char *fn = "v";

	while ((opt = getopt(argc, argv, "n:r:f:")) != -1) {
		if (opt == 'n')
			iters = atol(optarg);
		else if (opt == 'r')
			reps = atoi(optarg);
		else if (opt == 'f')
			fn = optarg;
	}
	if (argc - optind < 2) {
		fprintf(stderr, "usage: %s [-n iters] [-r reps] [-f v|x|n] TARGET CASE [LABEL]\n", argv[0]);
		return 2;
	}
	const char *target = argv[optind], *mode = argv[optind + 1];
	if (!strcmp(target, "torch")) {
		char op[4096];
		snprintf(op, sizeof(op), "%s.bpf.o", argv[0]);
		return torch_mode(op, argc - optind - 1, argv + optind + 1);
	}
	const char *label = argc - optind > 2 ? argv[optind + 2] : "victim";
	char objpath[4096];
	snprintf(objpath, sizeof(objpath), "%s.bpf.o", argv[0]);

	const char *progname = !strcmp(mode, "emulret")      ? "emulate_ret"
			       : !strcmp(mode, "write-user") ? "write_user"
							     : "count";
	__u32 atype = !strcmp(mode, "session") ? ATTACH_UPROBE_SESSION : ATTACH_UPROBE_MULTI;

	struct bpf_object *obj = bpf_object__open_file(objpath, NULL);
	if (!obj) {
		fprintf(stderr, "open %s: %s\n", objpath, strerror(errno));
		return 1;
	}
	struct bpf_program *prog, *want = NULL;
	bpf_object__for_each_program(prog, obj) {
		int mine = !strcmp(bpf_program__name(prog), progname);
		bpf_program__set_autoload(prog, mine);
		bpf_program__set_expected_attach_type(prog, atype);
		if (mine)
			want = prog;
	}
	int err = bpf_object__load(obj);
	if (!strcmp(mode, "write-user")) {
		printf("write-user: load %s (err %d: %s)\n", err ? "REFUSED" : "ok", err,
		       err ? strerror(-err) : "-");
		return 0;
	}
	if (err) {
		fprintf(stderr, "load: %s\n", strerror(-err));
		return 1;
	}
	int pfd = bpf_program__fd(want);
	int mfd = bpf_map__fd(bpf_object__find_map_by_name(obj, "hits"));
	unsigned long off = file_offset_of(target, label);
	double base[64], probed[64];
	__u64 hits_per_run = 0;

	if (reps > 64)
		reps = 64;
	for (int r = 0; r < reps; r++) {
		__u32 k = 0;
		__u64 zero = 0;
		int l1 = -1, l2 = -1;

		base[r] = run_target(target, iters, fn);
		bpf_map_update_elem(mfd, &k, &zero, 0);
		if (!strcmp(mode, "entry") || !strcmp(mode, "emulret") || !strcmp(mode, "session")) {
			l1 = link_uprobe_multi(pfd, target, off, atype, 0);
		} else if (!strcmp(mode, "ret")) {
			l1 = link_uprobe_multi(pfd, target, off, atype, UPROBE_MULTI_RETURN);
		} else if (!strcmp(mode, "entry+ret")) {
			l1 = link_uprobe_multi(pfd, target, off, atype, 0);
			l2 = link_uprobe_multi(pfd, target, off, atype, UPROBE_MULTI_RETURN);
		} else {
			fprintf(stderr, "unknown case %s\n", mode);
			return 2;
		}
		probed[r] = run_target(target, iters, fn);
		bpf_map_lookup_elem(mfd, &k, &hits_per_run);
		if (l2 >= 0)
			close(l2);
		close(l1);
	}
	double b = median(base, reps), p = median(probed, reps);
	printf("%-10s %-12s fn=%s base %8.1f ns  probed %8.1f ns  cost/hit %8.1f ns  hits/run %llu\n",
	       mode, label, fn, b, p, p - b, (unsigned long long)hits_per_run);
	return 0;
}

/*
 * The guest's /proc and /dev: a few synthetic files made by the vm
 * process from the guest's own state, read-only where Linux's are.
 * Nothing of the host shows through: the figures are the guest's
 * (its memory, its descriptors, its CPUID as the guest sees it).
 *
 *   /dev/null, /dev/zero, /dev/random, /dev/urandom   devices
 *   /dev/tty          exists, but opens with ENXIO: no controlling terminal
 *   /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd     symlinks into /proc/self/fd
 *   /proc/self -> 1
 *   /proc/1/exe       symlink to the program; opening it gives its bytes
 *   /proc/1/fd/N      symlinks naming each open descriptor; opening one
 *                     duplicates it
 *   /proc/1/maps, /proc/1/status, /proc/1/cmdline
 *   /proc/cpuinfo, /proc/meminfo, /proc/stat
 *   /sys/devices/system/cpu/online, possible, present: the CPU list
 *
 * Paths are the normalized guest paths of fs.c; symlinks here are
 * followed textually, at most a few deep.
 */
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/vm_int.h"

#define SYNTH_MAX (64u << 10) /* the largest /proc file made */
#define PID_DIR "/proc/1"
/* glibc's get_nprocs reads online first (sysconf, os.cpu_count), lscpu
 * and others the rest: the same CPUs as sched_getaffinity. */
#define SYS_CPU "/sys/devices/system/cpu"

enum node_kind {
	N_NONE = 0,
	N_DIR,
	N_FILE, /* made by a generator */
	N_DEV,
	N_LINK,
	N_FD, /* /proc/1/fd/N followed: descriptor N itself */
	N_EXE, /* /proc/1/exe followed: the program's bytes */
	N_TTY /* /dev/tty of a process without a controlling terminal */
};

enum gen {
	G_NONE,
	G_CPUINFO,
	G_MEMINFO,
	G_STAT,
	G_MAPS,
	G_STATUS,
	G_CMDLINE,
	G_CPULIST
};

struct node {
	enum node_kind kind;
	enum gen gen; /* N_FILE */
	enum vm_dev dev; /* N_DEV */
	int fd; /* N_FD */
	char link[VM_PATH_MAX]; /* N_LINK: the target */
	char path[VM_PATH_MAX]; /* where the walk ended */
};

static const struct {
	const char *path;
	enum node_kind kind;
	enum gen gen;
	enum vm_dev dev;
	const char *link;
} fixed[] = {
	{ "/dev", N_DIR, G_NONE, 0, NULL },
	{ "/dev/null", N_DEV, G_NONE, VM_DEV_NULL, NULL },
	{ "/dev/zero", N_DEV, G_NONE, VM_DEV_ZERO, NULL },
	{ "/dev/random", N_DEV, G_NONE, VM_DEV_RANDOM, NULL },
	{ "/dev/urandom", N_DEV, G_NONE, VM_DEV_RANDOM, NULL },
	{ "/dev/tty", N_TTY, G_NONE, 0, NULL },
	{ "/dev/stdin", N_LINK, G_NONE, 0, "/proc/self/fd/0" },
	{ "/dev/stdout", N_LINK, G_NONE, 0, "/proc/self/fd/1" },
	{ "/dev/stderr", N_LINK, G_NONE, 0, "/proc/self/fd/2" },
	{ "/dev/fd", N_LINK, G_NONE, 0, "/proc/self/fd" },
	{ "/proc", N_DIR, G_NONE, 0, NULL },
	{ "/proc/self", N_LINK, G_NONE, 0, "1" },
	{ "/proc/cpuinfo", N_FILE, G_CPUINFO, 0, NULL },
	{ "/proc/meminfo", N_FILE, G_MEMINFO, 0, NULL },
	{ "/proc/stat", N_FILE, G_STAT, 0, NULL },
	{ PID_DIR, N_DIR, G_NONE, 0, NULL },
	{ PID_DIR "/fd", N_DIR, G_NONE, 0, NULL },
	{ PID_DIR "/maps", N_FILE, G_MAPS, 0, NULL },
	{ PID_DIR "/status", N_FILE, G_STATUS, 0, NULL },
	{ PID_DIR "/cmdline", N_FILE, G_CMDLINE, 0, NULL },
	{ PID_DIR "/exe", N_LINK, G_NONE, 0, NULL /* exe_path() */ },
	{ SYS_CPU, N_DIR, G_NONE, 0, NULL },
	{ SYS_CPU "/online", N_FILE, G_CPULIST, 0, NULL },
	{ SYS_CPU "/possible", N_FILE, G_CPULIST, 0, NULL },
	{ SYS_CPU "/present", N_FILE, G_CPULIST, 0, NULL },
};

static int
under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	return strncmp(path, dir, n) == 0 &&
	    (path[n] == '\0' || path[n] == '/');
}

int
vm_synth_path(const char *path)
{
	/* /dev/shm is the workspace's WS_SHM_DIR (fs.c): POSIX
	 * shared memory and semaphores are files there, private to the
	 * sandbox, that its processes map shared (shmap.c). */
	if (under(path, "/dev/shm"))
		return 0;
	return under(path, "/proc") || under(path, "/dev") ||
	    under(path, SYS_CPU);
}

/* The program's guest path: its image file's, or a name made from
 * argv[0] for a program that came from outside the image. */
static void
exe_path(struct vm *vm, char *out, size_t outlen)
{
	const char *a0, *slash;
	size_t i;

	for (i = 0; i < vm->cfg->nfiles; i++)
		if (vm->cfg->files[i].data == vm->cfg->elf) {
			strlcpy(out, vm->cfg->files[i].path, outlen);
			return;
		}
	a0 = vm->cfg->argv != NULL && vm->cfg->argv[0] != NULL
	    ? vm->cfg->argv[0]
	    : "program";
	slash = strrchr(a0, '/');
	snprintf(out, outlen, "/%s", slash != NULL ? slash + 1 : a0);
}

/* The descriptor number a /proc/1/fd/N name gives, or -1. */
static int
fd_name(const char *s)
{
	char *end;
	long n;

	if (*s < '0' || *s > '9')
		return -1;
	n = strtol(s, &end, 10);
	return *end == '\0' && n >= 0 && n < VM_MAX_FILES_LIMIT ? (int)n : -1;
}

/* One step: what path itself is (symlinks not followed). */
static int
lookup_one(struct vm *vm, const char *path, struct node *nd)
{
	size_t i;
	int fd;

	memset(nd, 0, sizeof(*nd));
	strlcpy(nd->path, path, sizeof(nd->path));
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strcmp(fixed[i].path, path) != 0)
			continue;
		nd->kind = fixed[i].kind;
		nd->gen = fixed[i].gen;
		nd->dev = fixed[i].dev;
		if (fixed[i].kind == N_LINK) {
			if (fixed[i].link != NULL)
				strlcpy(
				    nd->link, fixed[i].link, sizeof(nd->link));
			else
				exe_path(vm, nd->link, sizeof(nd->link));
		}
		return 0;
	}
	if (under(path, PID_DIR "/fd") &&
	    strlen(path) > strlen(PID_DIR "/fd/")) {
		fd = fd_name(path + strlen(PID_DIR "/fd/"));
		if (fd < 0 || vm_fd(vm, (uint64_t)fd) == NULL)
			return -ENOENT;
		nd->kind = N_LINK;
		nd->fd = fd;
		vm_fd_describe(
		    vm_fd(vm, (uint64_t)fd), fd, nd->link, sizeof(nd->link));
		return 0;
	}
	return -ENOENT;
}

/* Symlinks that stand for directories, followed wherever they are the
 * start of a longer path. */
static const struct {
	const char *from, *to;
} dir_links[] = {
	{ "/proc/self", PID_DIR },
	{ "/proc/thread-self", PID_DIR },
	{ "/dev/fd", PID_DIR "/fd" },
};

/* Resolve path, following synthetic symlinks (the last one too unless
 * nofollow): /dev/stdin leads to /proc/1/fd/0, which followed is the
 * descriptor itself (N_FD); /proc/1/exe followed is the program. */
static int
lookup(struct vm *vm, const char *path, int nofollow, struct node *nd)
{
	char cur[VM_PATH_MAX], next[VM_PATH_MAX];
	int hops, rc;
	size_t i;

	strlcpy(cur, path, sizeof(cur));
	for (hops = 0; hops < 8; hops++) {
		for (i = 0; i < sizeof(dir_links) / sizeof(dir_links[0]); i++) {
			size_t n = strlen(dir_links[i].from);

			if (!under(cur, dir_links[i].from) ||
			    (cur[n] == '\0' && nofollow))
				continue;
			if (snprintf(next, sizeof(next), "%s%s",
			        dir_links[i].to, cur + n) >= (int)sizeof(next))
				return -ENAMETOOLONG;
			strlcpy(cur, next, sizeof(cur));
		}
		if ((rc = lookup_one(vm, cur, nd)) != 0)
			return rc;
		if (nd->kind != N_LINK || nofollow)
			return 0;
		if (under(cur, PID_DIR "/fd")) {
			nd->kind = N_FD;
			return 0;
		}
		if (strcmp(cur, PID_DIR "/exe") == 0) {
			nd->kind = N_EXE;
			return 0;
		}
		strlcpy(cur, nd->link, sizeof(cur));
	}
	return -ELOOP;
}

void
vm_fd_describe(const struct vfd *f, int fd, char *out, size_t outlen)
{
	switch (f->kind) {
	case VFD_STDIN:
	case VFD_OUT:
		/* The caller's end of a pipe, as Linux names one. */
		snprintf(
		    out, outlen, "pipe:[%d]", f->kind == VFD_STDIN ? 0 : 1);
		break;
	default:
		strlcpy(out, f->path != NULL ? f->path : "/", outlen);
	}
	(void)fd;
}

/* ---- contents ------------------------------------------------------- */

struct buf {
	char *p;
	size_t len, cap;
};

static void __attribute__((format(printf, 2, 3)))
put(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->p == NULL || b->len >= b->cap)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + (size_t)n < b->cap ? b->len + (size_t)n
		                                     : b->cap - 1;
}

static void
gen_cpuinfo(struct vm *vm, struct buf *b)
{
	static const struct {
		uint32_t leaf;
		int reg, bit;
		const char *name;
	} flags[] = {
		{ 1, 3, 0, "fpu" },
		{ 1, 3, 4, "tsc" },
		{ 1, 3, 5, "msr" },
		{ 1, 3, 6, "pae" },
		{ 1, 3, 8, "cx8" },
		{ 1, 3, 11, "sep" },
		{ 1, 3, 15, "cmov" },
		{ 1, 3, 16, "pat" },
		{ 1, 3, 19, "clflush" },
		{ 1, 3, 23, "mmx" },
		{ 1, 3, 24, "fxsr" },
		{ 1, 3, 25, "sse" },
		{ 1, 3, 26, "sse2" },
		{ 1, 2, 0, "pni" },
		{ 1, 2, 1, "pclmulqdq" },
		{ 1, 2, 9, "ssse3" },
		{ 1, 2, 12, "fma" },
		{ 1, 2, 13, "cx16" },
		{ 1, 2, 19, "sse4_1" },
		{ 1, 2, 20, "sse4_2" },
		{ 1, 2, 22, "movbe" },
		{ 1, 2, 23, "popcnt" },
		{ 1, 2, 25, "aes" },
		{ 1, 2, 26, "xsave" },
		{ 1, 2, 28, "avx" },
		{ 1, 2, 29, "f16c" },
		{ 1, 2, 30, "rdrand" },
		{ 7, 1, 3, "bmi1" },
		{ 7, 1, 5, "avx2" },
		{ 7, 1, 8, "bmi2" },
		{ 7, 1, 9, "erms" },
		{ 7, 1, 16, "avx512f" },
		{ 7, 1, 18, "rdseed" },
		{ 7, 1, 19, "adx" },
		{ 7, 1, 29, "sha_ni" },
	};
	uint32_t v[3], sig = vm_cpuid_reg(1, 0, 0), brand[12];
	unsigned family = (sig >> 8) & 0xf, model = (sig >> 4) & 0xf;
	char vendor[13], name[49];
	size_t i;

	v[0] = vm_cpuid_reg(0, 0, 1);
	v[1] = vm_cpuid_reg(0, 0, 3);
	v[2] = vm_cpuid_reg(0, 0, 2);
	memcpy(vendor, v, 12);
	vendor[12] = '\0';
	for (i = 0; i < 12; i++)
		brand[i] =
		    vm_cpuid_reg(0x80000002 + (uint32_t)i / 4, 0, (int)(i % 4));
	memcpy(name, brand, 48);
	name[48] = '\0';
	if (family == 0xf)
		family += (sig >> 20) & 0xff;
	if (family == 0x6 || family >= 0xf)
		model |= ((sig >> 16) & 0xf) << 4;
	for (unsigned cpu = 0; cpu < vm_cpus(); cpu++) {
		put(b,
		    "processor\t: %u\nvendor_id\t: %s\ncpu family\t: %u\n"
		    "model\t\t: %u\nmodel name\t: %s\nstepping\t: %u\n"
		    "physical id\t: 0\nsiblings\t: %u\ncore id\t\t: %u\n"
		    "cpu cores\t: %u\nfpu\t\t: yes\nflags\t\t:",
		    cpu, vendor, family, model,
		    name[0] != '\0' ? name : "unknown", sig & 0xf, vm_cpus(),
		    cpu, vm_cpus());
		for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++)
			if ((vm_cpuid_reg(flags[i].leaf, 0, flags[i].reg) >>
			        flags[i].bit) &
			    1)
				put(b, " %s", flags[i].name);
		put(b, "\n\n");
	}
}

/* What brk and mmap have left within the limit: reserved pages are
 * not held, and the reserve is address space, not memory. */
static uint64_t
guest_free(const struct vm *vm)
{
	uint64_t f = (vm->mmap_hi - vm->mmap_lo) -
	    (vm->mmap_pages_used - vm->mmap_reserved_pages) * VM_PAGE +
	    (vm->brk_max - vm->brk_cur);

	return f > vm->reserve ? f - vm->reserve : 0;
}

static void
gen_meminfo(struct vm *vm, struct buf *b)
{
	static const char *zero[] = { "Buffers:", "Cached:", "SwapCached:",
		"SwapTotal:", "SwapFree:", "Shmem:" };
	size_t i;

	put(b, "%-16s%8llu kB\n",
	    "MemTotal:", (unsigned long long)(vm_space_limit(vm) >> 10));
	put(b, "%-16s%8llu kB\n",
	    "MemFree:", (unsigned long long)(guest_free(vm) >> 10));
	put(b, "%-16s%8llu kB\n",
	    "MemAvailable:", (unsigned long long)(guest_free(vm) >> 10));
	for (i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		put(b, "%-16s%8llu kB\n", zero[i], 0ULL);
}

static void
map_line(struct buf *b, uint64_t lo, uint64_t hi, const char *perm,
    uint64_t off, const char *name)
{
	put(b, "%08llx-%08llx %s %08llx 00:00 0", (unsigned long long)lo,
	    (unsigned long long)hi, perm, (unsigned long long)off);
	if (name[0] != '\0')
		put(b, "                          %s", name);
	put(b, "\n");
}

/*
 * The processors /proc/cpuinfo names, with no time counted: node's
 * os.cpus() (libuv's uv_cpu_info) counts them from here, and so does
 * glibc's get_nprocs (sysconf's online CPUs, python's os.cpu_count)
 * where /sys is not served, as in keep. The host's figures are not the
 * guest's to see.
 */
static void
gen_stat(struct buf *b)
{
	put(b, "cpu  0 0 0 0 0 0 0 0 0 0\n");
	for (unsigned cpu = 0; cpu < vm_cpus(); cpu++)
		put(b, "cpu%u 0 0 0 0 0 0 0 0 0 0\n", cpu);
	put(b,
	    "intr 0\nctxt 0\nbtime 0\nprocesses 1\nprocs_running 1\n"
	    "procs_blocked 0\n");
}

/* The kernel's CPU list format: "0" or "0-N". */
static void
gen_cpulist(struct buf *b)
{
	if (vm_cpus() == 1)
		put(b, "0\n");
	else
		put(b, "0-%u\n", vm_cpus() - 1);
}

static void
gen_maps(struct vm *vm, struct buf *b)
{
	char exe[VM_PATH_MAX], perm[5];
	uint64_t pages = (vm->mmap_hi - vm->mmap_lo) / VM_PAGE, p, q;
	size_t i;

	exe_path(vm, exe, sizeof(exe));
	for (i = 0; i < vm->elf.nload; i++) {
		const struct elf_load *l = &vm->elf.load[i];
		uint64_t lo = l->vaddr & ~(VM_PAGE - 1);
		uint64_t hi =
		    (l->vaddr + l->memsz + VM_PAGE - 1) & ~(VM_PAGE - 1);

		snprintf(perm, sizeof(perm), "%c%c%cp",
		    (l->flags & 4) ? 'r' : '-', (l->flags & 2) ? 'w' : '-',
		    (l->flags & 1) ? 'x' : '-');
		map_line(b, lo, hi, perm, l->offset & ~(VM_PAGE - 1), exe);
	}
	if (vm->brk_cur > vm->brk_start)
		map_line(b, vm->brk_start, vm->brk_cur, "rw-p", 0, "[heap]");
	for (p = 0; p < pages; p = q) {
		if (!vm->mmap_used[p]) {
			q = p + 1;
			continue;
		}
		for (q = p; q < pages && vm->mmap_used[q]; q++)
			;
		map_line(b, vm->mmap_lo + p * VM_PAGE,
		    vm->mmap_lo + q * VM_PAGE, "rw-p", 0, "");
	}
	map_line(b, vm->stack_lo, vm->stack_top, "rw-p", 0, "[stack]");
}

static void
gen_status(struct vm *vm, struct buf *b)
{
	const char *a0 = vm->cfg->argv != NULL && vm->cfg->argv[0] != NULL
	    ? vm->cfg->argv[0]
	    : "program";
	const char *slash = strrchr(a0, '/');
	uint64_t rss = (vm->brk_cur - vm->brk_start) +
	    (vm->mmap_pages_used - vm->mmap_reserved_pages) * VM_PAGE +
	    (vm->stack_top - vm->stack_lo) + (vm->elf.hi - vm->elf.lo);
	static const char *sigs[] = { "SigPnd", "ShdPnd", "SigBlk", "SigIgn",
		"SigCgt", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	/* The signal masks as the process's own state has them (CPython's
	 * subprocess tests read SigIgn); no capabilities. */
	uint64_t mask[sizeof(sigs) / sizeof(sigs[0])] = { 0 };
	size_t i;

	mask[0] = vm->sig.pending;
	mask[2] = vm->sig.blocked;
	for (i = 1; i < 65; i++) {
		if (vm->sig.act[i].handler == 1 /* SIG_IGN */)
			mask[3] |= 1ULL << (i - 1);
		else if (vm->sig.act[i].handler > 1)
			mask[4] |= 1ULL << (i - 1);
	}

	put(b, "Name:\t%.15s\nUmask:\t%04o\nState:\tR (running)\n",
	    slash != NULL ? slash + 1 : a0, vm->umask);
	put(b, "Tgid:\t1\nNgid:\t0\nPid:\t1\nPPid:\t0\nTracerPid:\t0\n");
	put(b, "Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\n", VM_GUEST_ID,
	    VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID,
	    VM_GUEST_ID, VM_GUEST_ID);
	put(b, "FDSize:\t%u\nGroups:\t%d \n", vm->nfds, VM_GUEST_ID);
	put(b, "VmPeak:\t%8llu kB\nVmSize:\t%8llu kB\nVmRSS:\t%8llu kB\n",
	    (unsigned long long)(vm->memsz >> 10),
	    (unsigned long long)(vm->memsz >> 10),
	    (unsigned long long)(rss >> 10));
	put(b, "Threads:\t1\nSigQ:\t0/0\n");
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		put(b, "%s:\t%016llx\n", sigs[i], (unsigned long long)mask[i]);
	put(b,
	    "NoNewPrivs:\t1\nSeccomp:\t0\nCpus_allowed:\t1\n"
	    "Cpus_allowed_list:\t0\n");
}

static void
gen_cmdline(struct vm *vm, struct buf *b)
{
	size_t i, n;

	for (i = 0; vm->cfg->argv != NULL && vm->cfg->argv[i] != NULL; i++) {
		n = strlen(vm->cfg->argv[i]) + 1;
		if (b->len + n > b->cap)
			break;
		memcpy(b->p + b->len, vm->cfg->argv[i], n);
		b->len += n;
	}
}

static void
gen_dir(struct vm *vm, const char *path, struct buf *b)
{
	static const struct {
		const char *dir, *name;
		uint8_t type;
	} ents[] = {
		{ "/dev", "null", DT_CHR },
		{ "/dev", "zero", DT_CHR },
		{ "/dev", "random", DT_CHR },
		{ "/dev", "urandom", DT_CHR },
		{ "/dev", "tty", DT_CHR },
		{ "/dev", "stdin", DT_LNK },
		{ "/dev", "stdout", DT_LNK },
		{ "/dev", "stderr", DT_LNK },
		{ "/dev", "fd", DT_LNK },
		{ "/dev", "shm", DT_DIR },
		{ "/proc", "1", DT_DIR },
		{ "/proc", "self", DT_LNK },
		{ "/proc", "thread-self", DT_LNK },
		{ "/proc", "cpuinfo", DT_REG },
		{ "/proc", "meminfo", DT_REG },
		{ "/proc", "stat", DT_REG },
		{ PID_DIR, "cmdline", DT_REG },
		{ PID_DIR, "exe", DT_LNK },
		{ PID_DIR, "fd", DT_DIR },
		{ PID_DIR, "maps", DT_REG },
		{ PID_DIR, "status", DT_REG },
		{ SYS_CPU, "online", DT_REG },
		{ SYS_CPU, "possible", DT_REG },
		{ SYS_CPU, "present", DT_REG },
	};
	char num[16];
	size_t i;

#define ENTRY(type, name)                                                      \
	do {                                                                   \
		size_t n_ = strlen(name) + 2;                                  \
		if (b->len + n_ <= b->cap) {                                   \
			b->p[b->len] = (char)(type);                           \
			memcpy(b->p + b->len + 1, name, n_ - 1);               \
			b->len += n_;                                          \
		}                                                              \
	} while (0)
	ENTRY(DT_DIR, ".");
	ENTRY(DT_DIR, "..");
	if (strcmp(path, PID_DIR "/fd") == 0) {
		for (i = 0; i < vm->nfds; i++)
			if (vm_fd(vm, i) != NULL) {
				snprintf(num, sizeof(num), "%zu", i);
				ENTRY(DT_LNK, num);
			}
		return;
	}
	for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		if (strcmp(ents[i].dir, path) == 0)
			ENTRY(ents[i].type, ents[i].name);
#undef ENTRY
}

/* The bytes of a file or directory node, malloc'd. */
static int
make(struct vm *vm, const struct node *nd, uint8_t **out, uint64_t *len)
{
	struct buf b = { malloc(SYNTH_MAX), 0, SYNTH_MAX };

	if (b.p == NULL)
		return -ENOMEM;
	if (nd->kind == N_DIR)
		gen_dir(vm, nd->path, &b);
	else
		switch (nd->gen) {
		case G_CPUINFO:
			gen_cpuinfo(vm, &b);
			break;
		case G_MEMINFO:
			gen_meminfo(vm, &b);
			break;
		case G_STAT:
			gen_stat(&b);
			break;
		case G_MAPS:
			gen_maps(vm, &b);
			break;
		case G_STATUS:
			gen_status(vm, &b);
			break;
		case G_CMDLINE:
			gen_cmdline(vm, &b);
			break;
		case G_CPULIST:
			gen_cpulist(&b);
			break;
		default:
			break;
		}
	*out = (uint8_t *)b.p;
	*len = b.len;
	return 0;
}

/* ---- the calls -------------------------------------------------------- */

static void
node_stat(struct vm *vm, const struct node *nd, struct stat *st)
{
	uint64_t h = 1469598103934665603ULL;
	const char *p;

	memset(st, 0, sizeof(*st));
	for (p = nd->path; *p != '\0'; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ULL;
	st->st_ino = h;
	st->st_dev = under(nd->path, "/dev") ? makedev(0, 5) : makedev(0, 4);
	st->st_nlink = 1;
	st->st_blksize = 4096;
	/* /proc/1 is the guest's; the rest belongs to root. */
	if (under(nd->path, PID_DIR))
		st->st_uid = st->st_gid = VM_GUEST_ID;
	switch (nd->kind) {
	case N_DIR:
		st->st_mode = S_IFDIR | 0555;
		st->st_nlink = 2;
		break;
	case N_FILE:
		st->st_mode = S_IFREG | 0444;
		break;
	case N_DEV:
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(1,
		    nd->dev == VM_DEV_NULL                     ? 3
		        : nd->dev == VM_DEV_ZERO               ? 5
		        : strcmp(nd->path, "/dev/random") == 0 ? 8
		                                               : 9);
		break;
	case N_TTY:
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(5, 0);
		break;
	case N_LINK:
		st->st_mode = S_IFLNK | 0777;
		st->st_size = (off_t)strlen(nd->link);
		break;
	case N_EXE:
		st->st_mode = S_IFREG | 0755;
		st->st_size = (off_t)vm->cfg->elf_len;
		st->st_blocks = (blkcnt_t)((vm->cfg->elf_len + 511) / 512);
		break;
	default:
		break;
	}
}

int64_t
vm_synth_stat(struct vm *vm, const char *path, int nofollow, struct stat *st)
{
	struct node nd;
	struct vfd *f;
	int rc;

	if ((rc = lookup(vm, path, nofollow, &nd)) != 0)
		return rc;
	if (nd.kind == N_FD) {
		if ((f = vm_fd(vm, (uint64_t)nd.fd)) == NULL)
			return -ENOENT;
		if (f->path != NULL && vm_synth_path(f->path) &&
		    strcmp(f->path, path) == 0)
			return -ELOOP;
		return vm_stat_fd(vm, f, st);
	}
	node_stat(vm, &nd, st);
	return 0;
}

int
vm_synth_fd_of(struct vm *vm, const char *path)
{
	struct node nd;

	if (lookup(vm, path, 0, &nd) != 0 || nd.kind != N_FD)
		return -1;
	return nd.fd;
}

int64_t
vm_synth_readlink(struct vm *vm, const char *path, char *out, size_t outlen)
{
	struct node nd;
	int rc;

	if ((rc = lookup(vm, path, 1, &nd)) != 0)
		return rc;
	if (nd.kind != N_LINK)
		return -EINVAL;
	strlcpy(out, nd.link, outlen);
	return (int64_t)strlen(out);
}

int64_t
vm_synth_open(
    struct vm *vm, const char *path, uint64_t flags, struct vfd *f, int fd)
{
	int wr = (flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC);
	struct node nd;
	struct vfd *src;
	int rc;

	if ((rc = lookup(vm, path, (flags & O_NOFOLLOW) != 0, &nd)) != 0)
		return rc == -ENOENT && (flags & O_CREAT) ? -EACCES : rc;
	if ((flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		return -EEXIST;
	if ((flags & O_DIRECTORY) && nd.kind != N_DIR && nd.kind != N_FD)
		return -ENOTDIR;
	switch (nd.kind) {
	case N_LINK:
		return -ELOOP; /* O_NOFOLLOW on a symlink */
	case N_FD:
		/* Linux opens the file anew; a copy of the descriptor is
		 * what the guest can tell apart least. */
		if ((src = vm_fd(vm, (uint64_t)nd.fd)) == NULL)
			return -ENOENT;
		return vm_fd_copy(vm, src, fd, (flags & O_CLOEXEC) != 0);
	case N_DEV:
		f->kind = VFD_DEV;
		f->dev = nd.dev;
		break;
	case N_TTY:
		/* The guest's stdio are pipes: like a daemon or a job under
		 * a pipeline, it has no controlling terminal. */
		return -ENXIO;
	case N_DIR:
		if (wr)
			return -EISDIR;
		/* Marked used first: /proc/self/fd lists the descriptor
		 * that reads it, as Linux's does. */
		f->kind = VFD_SDIR;
		if ((rc = make(vm, &nd, &f->owned, &f->len)) != 0) {
			f->kind = VFD_FREE;
			return rc;
		}
		f->data = f->owned;
		break;
	case N_FILE:
	case N_EXE:
		if (wr)
			return -EACCES;
		if (nd.kind == N_EXE) {
			f->data = vm->cfg->elf;
			f->len = vm->cfg->elf_len;
		} else if ((rc = make(vm, &nd, &f->owned, &f->len)) != 0)
			return rc;
		else
			f->data = f->owned;
		f->kind = VFD_SYNTH;
		break;
	default:
		return -ENOENT;
	}
	f->off = 0;
	f->cloexec = (flags & O_CLOEXEC) != 0;
	f->flags = (int)(flags & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	if ((f->path = strdup(nd.path)) == NULL) {
		vm_fd_release(f);
		return -ENOMEM;
	}
	return 0;
}

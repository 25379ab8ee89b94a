/*
 * The guest's /proc and /dev: synthetic files made by the vm process
 * from the guest's own state, read-only where Linux's are. Nothing of
 * the host shows through: the figures are the guest's (its memory, its
 * descriptors, its CPUID as the guest sees it, its process tree).
 *
 *   /dev/null, /dev/zero, /dev/random, /dev/urandom   devices
 *   /dev/tty          exists, but opens with ENXIO: no controlling terminal
 *   /dev/stdin, /dev/stdout, /dev/stderr, /dev/fd     symlinks into /proc/self/fd
 *   /proc/self, /proc/thread-self -> the caller's guest pid
 *   /proc/PID/        one for each process of the run's tree (proc.c's
 *                     table): stat, statm, status, cmdline, comm; the
 *                     caller's own also exe (the program's bytes), fd/N
 *                     (opening one duplicates it), cwd, environ, maps,
 *                     mounts, mountinfo. Another's private ones are
 *                     EACCES, as for a process that is not dumpable.
 *   /proc/cpuinfo, /proc/meminfo, /proc/stat, /proc/loadavg,
 *   /proc/uptime, /proc/version, /proc/mounts -> self/mounts
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
#define PROC_PIDS_MAX 1024 /* listed in /proc; the tree's limit */
/* glibc's get_nprocs reads online first (sysconf, os.cpu_count), lscpu
 * and others the rest: the same CPUs as sched_getaffinity. */
#define SYS_CPU "/sys/devices/system/cpu"

enum node_kind {
	N_NONE = 0,
	N_DIR,
	N_FILE, /* made by a generator */
	N_DEV,
	N_LINK,
	N_FD, /* /proc/PID/fd/N followed: descriptor N itself */
	N_EXE, /* /proc/PID/exe followed: the program's bytes */
	N_TTY, /* /dev/tty of a process without a controlling terminal */
	N_OUTSIDE /* /proc/PID/cwd followed: link names a path outside */
};

enum gen {
	G_NONE,
	G_CPUINFO,
	G_MEMINFO,
	G_STAT,
	G_MAPS,
	G_STATUS,
	G_CMDLINE,
	G_CPULIST,
	G_PIDSTAT,
	G_STATM,
	G_COMM,
	G_ENVIRON,
	G_MOUNTS,
	G_MOUNTINFO,
	G_LOADAVG,
	G_UPTIME,
	G_VERSION,
	G_HOSTNAME,
	G_OSRELEASE,
	G_OSTYPE,
	G_PID_MAX
};

struct node {
	enum node_kind kind;
	enum gen gen; /* N_FILE */
	enum vm_dev dev; /* N_DEV */
	int fd; /* N_FD */
	int32_t pid; /* under /proc/PID: the process described */
	int denied; /* another process's private entry: stat alone */
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
	{ "/proc/cpuinfo", N_FILE, G_CPUINFO, 0, NULL },
	{ "/proc/meminfo", N_FILE, G_MEMINFO, 0, NULL },
	{ "/proc/stat", N_FILE, G_STAT, 0, NULL },
	{ "/proc/loadavg", N_FILE, G_LOADAVG, 0, NULL },
	{ "/proc/uptime", N_FILE, G_UPTIME, 0, NULL },
	{ "/proc/version", N_FILE, G_VERSION, 0, NULL },
	{ "/proc/mounts", N_LINK, G_NONE, 0, "self/mounts" },
	{ "/proc/sys", N_DIR, G_NONE, 0, NULL },
	{ "/proc/sys/kernel", N_DIR, G_NONE, 0, NULL },
	{ "/proc/sys/kernel/hostname", N_FILE, G_HOSTNAME, 0, NULL },
	{ "/proc/sys/kernel/osrelease", N_FILE, G_OSRELEASE, 0, NULL },
	{ "/proc/sys/kernel/ostype", N_FILE, G_OSTYPE, 0, NULL },
	{ "/proc/sys/kernel/pid_max", N_FILE, G_PID_MAX, 0, NULL },
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

/* The entries of a /proc/PID directory. private: only the process
 * itself may open or follow it (EACCES for the others). */
static const struct {
	const char *name;
	enum node_kind kind;
	enum gen gen;
	int private;
} pid_ents[] = {
	{ "cmdline", N_FILE, G_CMDLINE, 0 },
	{ "comm", N_FILE, G_COMM, 0 },
	{ "cwd", N_LINK, G_NONE, 1 },
	{ "environ", N_FILE, G_ENVIRON, 1 },
	{ "exe", N_LINK, G_NONE, 1 },
	{ "fd", N_DIR, G_NONE, 1 },
	{ "maps", N_FILE, G_MAPS, 1 },
	{ "mountinfo", N_FILE, G_MOUNTINFO, 0 },
	{ "mounts", N_FILE, G_MOUNTS, 0 },
	{ "stat", N_FILE, G_PIDSTAT, 0 },
	{ "statm", N_FILE, G_STATM, 0 },
	{ "status", N_FILE, G_STATUS, 0 },
	{ "task", N_DIR, G_NONE, 0 },
};

#define THREADS_LISTED 256

/* Whether tid is a thread of process pid (another's: its first alone,
 * which is all the table knows of it). */
static int
has_thread(struct vm *vm, int32_t pid, int32_t tid)
{
	return pid == vm->pid ? vm_thread_is_mine(vm, tid) : tid == pid;
}

/* "/proc/PID" and what follows it ("" or "/..."): PID as Linux spells
 * it (decimal, no leading zero), or 0. */
static int32_t
pid_of(const char *path, const char **rest)
{
	const char *p = path + strlen("/proc/");
	int32_t pid = 0;

	if (!under(path, "/proc") || strlen(path) <= strlen("/proc/") ||
	    *p < '1' || *p > '9')
		return 0;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (pid > (INT32_MAX - 9) / 10)
			return 0;
		pid = pid * 10 + (*p - '0');
	}
	if (*p != '\0' && *p != '/')
		return 0;
	*rest = p;
	return pid;
}

/* What follows /proc/PID's "/task/TID", which stands for /proc/PID. */
static const char *
past_task(const char *rest)
{
	if (!under(rest, "/task") || rest[strlen("/task")] == '\0')
		return rest;
	rest += strlen("/task/");
	return rest + strcspn(rest, "/");
}

/* What path is under a /proc/PID of the tree, symlinks not followed. */
static int
lookup_pid(struct vm *vm, int32_t pid, const char *rest, struct node *nd)
{
	struct vm_proc_view v;
	int self = pid == vm->pid, fd;
	size_t i, n;

	if (!self && vm_proc_view(vm, pid, &v) != 0)
		return -ENOENT;
	nd->pid = pid;
	if (*rest == '\0') {
		nd->kind = N_DIR;
		return 0;
	}
	rest++;
	for (i = 0; i < sizeof(pid_ents) / sizeof(pid_ents[0]); i++) {
		n = strlen(pid_ents[i].name);
		if (strncmp(rest, pid_ents[i].name, n) != 0 ||
		    (rest[n] != '\0' && rest[n] != '/'))
			continue;
		if (pid_ents[i].private && !self && rest[n] != '\0')
			return -EACCES;
		if (rest[n] == '\0') {
			nd->kind = pid_ents[i].kind;
			nd->gen = pid_ents[i].gen;
			/* Its owner's, who alone may open or follow it (the
			 * others' fds, memory and environment are their vm
			 * processes'); ls -l still shows it. */
			nd->denied = pid_ents[i].private && !self;
			if (nd->denied)
				return 0;
			if (strcmp(rest, "exe") == 0)
				exe_path(vm, nd->link, sizeof(nd->link));
			else if (strcmp(rest, "cwd") == 0)
				strlcpy(nd->link, vm->cwd, sizeof(nd->link));
			return 0;
		}
		if (strcmp(pid_ents[i].name, "task") == 0) {
			/* task/TID/...: the process's own entries again. */
			const char *sub = NULL;
			char tpath[24];
			int32_t tid;

			if (strcspn(rest + n + 1, "/") > 10) /* past int32 */
				return -ENOENT;
			snprintf(tpath, sizeof(tpath), "/proc/%.*s",
			    (int)strcspn(rest + n + 1, "/"), rest + n + 1);
			if ((tid = pid_of(tpath, &sub)) <= 0 ||
			    !has_thread(vm, pid, tid))
				return -ENOENT;
			sub = rest + n + 1 + strcspn(rest + n + 1, "/");
			if (under(sub, "/task"))
				return -ENOENT;
			return lookup_pid(vm, pid, sub, nd);
		}
		if (strcmp(pid_ents[i].name, "cwd") == 0) {
			/* Below the cwd: the workspace's or the image's (a
			 * cwd in /proc would lead back here). */
			if (under(vm->cwd, "/proc"))
				return -ELOOP;
			nd->kind = N_OUTSIDE;
			if (snprintf(nd->link, sizeof(nd->link), "%s%s",
			        strcmp(vm->cwd, "/") == 0 ? "" : vm->cwd,
			        rest + n) >= (int)sizeof(nd->link))
				return -ENAMETOOLONG;
			return 0;
		}
		if (strcmp(pid_ents[i].name, "fd") != 0)
			return -ENOTDIR;
		fd = fd_name(rest + n + 1);
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

/* One step: what path itself is (symlinks not followed). */
static int
lookup_one(struct vm *vm, const char *path, struct node *nd)
{
	const char *rest = NULL;
	int32_t pid;
	size_t i;

	memset(nd, 0, sizeof(*nd));
	strlcpy(nd->path, path, sizeof(nd->path));
	if (strcmp(path, "/proc/self") == 0 ||
	    strcmp(path, "/proc/thread-self") == 0) {
		nd->kind = N_LINK;
		snprintf(nd->link, sizeof(nd->link), "%d", (int)vm->pid);
		return 0;
	}
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		if (strcmp(fixed[i].path, path) != 0)
			continue;
		nd->kind = fixed[i].kind;
		nd->gen = fixed[i].gen;
		nd->dev = fixed[i].dev;
		if (fixed[i].link != NULL)
			strlcpy(nd->link, fixed[i].link, sizeof(nd->link));
		return 0;
	}
	if ((pid = pid_of(path, &rest)) > 0)
		return lookup_pid(vm, pid, rest, nd);
	return -ENOENT;
}

/* path's start as the directory it stands for: /proc/self and
 * /proc/thread-self are the caller's /proc/PID, /dev/fd its fd. 0, or
 * -ENAMETOOLONG. */
static int
follow_dir_links(struct vm *vm, char *cur, size_t len, int nofollow)
{
	static const struct {
		const char *from, *to;
	} links[] = {
		{ "/proc/self", "" },
		{ "/proc/thread-self", "" },
		{ "/dev/fd", "/fd" },
	};
	char next[VM_PATH_MAX];
	size_t i, n;

	for (i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		n = strlen(links[i].from);
		if (!under(cur, links[i].from) || (cur[n] == '\0' && nofollow))
			continue;
		if (snprintf(next, sizeof(next), "/proc/%d%s%s", (int)vm->pid,
		        links[i].to, cur + n) >= (int)sizeof(next))
			return -ENAMETOOLONG;
		strlcpy(cur, next, len);
	}
	return 0;
}

/* Resolve path, following synthetic symlinks (the last one too unless
 * nofollow): /dev/stdin leads to /proc/PID/fd/0, which followed is the
 * descriptor itself (N_FD); /proc/PID/exe followed is the program. */
static int
lookup(struct vm *vm, const char *path, int nofollow, struct node *nd)
{
	char cur[VM_PATH_MAX], next[VM_PATH_MAX];
	const char *rest = NULL, *slash;
	int hops, rc;

	strlcpy(cur, path, sizeof(cur));
	for (hops = 0; hops < 8; hops++) {
		if ((rc = follow_dir_links(vm, cur, sizeof(cur), nofollow)) !=
		    0)
			return rc;
		if ((rc = lookup_one(vm, cur, nd)) != 0)
			return rc;
		if (nd->kind != N_LINK || nofollow)
			return 0;
		if (nd->denied)
			return -EACCES;
		if (pid_of(cur, &rest) == vm->pid) {
			rest = past_task(rest);
			if (under(rest, "/fd")) {
				nd->kind = N_FD;
				return 0;
			}
			if (strcmp(rest, "/exe") == 0) {
				nd->kind = N_EXE;
				return 0;
			}
		}
		if (nd->link[0] == '/' && !vm_synth_path(nd->link)) {
			nd->kind = N_OUTSIDE; /* fs.c goes on from there */
			return 0;
		}
		if (nd->link[0] == '/')
			strlcpy(cur, nd->link, sizeof(cur));
		else {
			/* Relative (/proc/mounts -> self/mounts): from the
			 * link's own directory. */
			slash = strrchr(cur, '/');
			if (snprintf(next, sizeof(next), "%.*s/%s",
			        (int)(slash - cur), cur,
			        nd->link) >= (int)sizeof(next))
				return -ENAMETOOLONG;
			strlcpy(cur, next, sizeof(cur));
		}
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
gen_cpuinfo(struct vm *vm, const struct vm_proc_view *pv, struct buf *b)
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
gen_meminfo(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
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
 * The processors /proc/cpuinfo names: node's os.cpus() (libuv's
 * uv_cpu_info) counts them from here, and so does glibc's get_nprocs
 * (sysconf's online CPUs, python's os.cpu_count) where /sys is not
 * served, as in keep. The times are the tree's, not the host's (which
 * are not the guest's to see): user and system the sum of its live
 * processes' (cputime.c), idle the rest of its uptime on every CPU,
 * each CPU's line an equal share. The tree began at btime ("boot",
 * proc.c), and has forked processes and threads up to its last pid.
 */
static void
gen_stat(struct vm *vm, const struct vm_proc_view *pv, struct buf *b)
{
	int32_t pids[PROC_PIDS_MAX], last;
	uint64_t up, boot, user = 0, sys = 0, all, idle;
	unsigned ncpu = vm_cpus() > 0 ? vm_cpus() : 1;
	struct vm_proc_view *v = malloc(sizeof(*v));
	size_t n = vm_proc_pids(vm, pids, PROC_PIDS_MAX), i;

	for (i = 0; v != NULL && i < n && i < PROC_PIDS_MAX; i++)
		if (vm_proc_view(vm, pids[i], v) == 0 && v->state != 'Z') {
			user += v->cpu[0] / VM_TICK_NS;
			sys += v->cpu[1] / VM_TICK_NS;
		}
	free(v);
	vm_proc_clock(vm, &up, &boot, &last);
	all = up / (VM_TICK_NS / 1000) * ncpu;
	idle = all > user + sys ? all - user - sys : 0;
	put(b, "cpu  %llu 0 %llu %llu 0 0 0 0 0 0\n", (unsigned long long)user,
	    (unsigned long long)sys, (unsigned long long)idle);
	for (unsigned cpu = 0; cpu < ncpu; cpu++)
		put(b, "cpu%u %llu 0 %llu %llu 0 0 0 0 0 0\n", cpu,
		    (unsigned long long)(user / ncpu),
		    (unsigned long long)(sys / ncpu),
		    (unsigned long long)(idle / ncpu));
	put(b,
	    "intr 0\nctxt 0\nbtime %llu\nprocesses %d\nprocs_running 1\n"
	    "procs_blocked 0\n",
	    (unsigned long long)(boot / 1000000000u), (int)last);
}

/* No load is counted (the host's is not the guest's to see); the
 * runnable and all tasks, and the last pid, are the tree's. */
static void
gen_loadavg(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	int32_t pids[PROC_PIDS_MAX], last;
	uint64_t up, boot;
	size_t n = vm_proc_pids(vm, pids, PROC_PIDS_MAX);

	vm_proc_clock(vm, &up, &boot, &last);
	put(b, "0.00 0.00 0.00 1/%zu %d\n", n, (int)last);
}

/* Since the tree began; no idle time is counted. */
static void
gen_uptime(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	uint64_t up, boot;
	int32_t last;

	vm_proc_clock(vm, &up, &boot, &last);
	put(b, "%llu.%02llu 0.00\n", (unsigned long long)(up / 1000000),
	    (unsigned long long)(up % 1000000 / 10000));
}

/* What uname(2) says (sys_proc.c). */
static void
gen_version(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "%s version %s (%s) %s\n", VM_UNAME_SYSNAME, VM_UNAME_RELEASE,
	    VM_UNAME_NODENAME, VM_UNAME_VERSION);
}

static void
gen_hostname(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "%s\n", VM_UNAME_NODENAME);
}

static void
gen_osrelease(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "%s\n", VM_UNAME_RELEASE);
}

static void
gen_ostype(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "%s\n", VM_UNAME_SYSNAME);
}

/* Linux's default; the tree's pids stay far below it. */
static void
gen_pid_max(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "32768\n");
}

/* The kernel's CPU list format: "0" or "0-N". */
static void
gen_cpulist(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	if (vm_cpus() == 1)
		put(b, "0\n");
	else
		put(b, "0-%u\n", vm_cpus() - 1);
}

static void
gen_maps(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
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

/* The memory a process holds, in bytes: the caller's own from its
 * state (its program's segments and stack too), another's its charge
 * in the tree (proc.c). */
static uint64_t
proc_rss(struct vm *vm, const struct vm_proc_view *v)
{
	if (v->pid != vm->pid)
		return v->mem;
	return (vm->brk_cur - vm->brk_start) +
	    (vm->mmap_pages_used - vm->mmap_reserved_pages) * VM_PAGE +
	    (vm->stack_top - vm->stack_lo) + (vm->elf.hi - vm->elf.lo);
}

static const char *
state_name(char state)
{
	return state == 'R' ? "R (running)"
	    : state == 'Z'  ? "Z (zombie)"
	                    : "S (sleeping)";
}

static void
gen_status(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	static const char *sigs[] = { "SigPnd", "ShdPnd", "SigBlk", "SigIgn",
		"SigCgt", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb" };
	/* The signal masks as the process's own state has them (CPython's
	 * subprocess tests read SigIgn), another's as it posted them for
	 * senders; no capabilities. */
	uint64_t mask[sizeof(sigs) / sizeof(sigs[0])] = { 0 };
	int self = v->pid == vm->pid;
	size_t i;

	mask[0] = v->pending;
	mask[3] = v->ignored;
	mask[4] = v->caught;
	if (self) {
		mask[0] = vm->sig.pending;
		mask[2] = vm->sig.blocked;
		mask[3] = mask[4] = 0;
		for (i = 1; i < 65; i++) {
			if (vm->sig.act[i].handler == 1 /* SIG_IGN */)
				mask[3] |= 1ULL << (i - 1);
			else if (vm->sig.act[i].handler > 1)
				mask[4] |= 1ULL << (i - 1);
		}
	}
	put(b, "Name:\t%s\nUmask:\t%04o\nState:\t%s\n", v->comm,
	    self ? vm->umask : 022, state_name(v->state));
	put(b, "Tgid:\t%d\nNgid:\t0\nPid:\t%d\nPPid:\t%d\nTracerPid:\t0\n",
	    (int)v->pid, (int)v->pid, (int)v->ppid);
	put(b, "Uid:\t%d\t%d\t%d\t%d\nGid:\t%d\t%d\t%d\t%d\n", VM_GUEST_ID,
	    VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID, VM_GUEST_ID,
	    VM_GUEST_ID, VM_GUEST_ID);
	put(b, "FDSize:\t%u\nGroups:\t%d \n", self ? vm->nfds : 64,
	    VM_GUEST_ID);
	if (v->state != 'Z')
		put(b,
		    "VmPeak:\t%8llu kB\nVmSize:\t%8llu kB\nVmRSS:\t%8llu kB\n",
		    (unsigned long long)(vm->memsz >> 10),
		    (unsigned long long)(vm->memsz >> 10),
		    (unsigned long long)(proc_rss(vm, v) >> 10));
	put(b, "Threads:\t%d\nSigQ:\t0/0\n", (int)v->nthreads);
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		put(b, "%s:\t%016llx\n", sigs[i], (unsigned long long)mask[i]);
	put(b,
	    "NoNewPrivs:\t1\nSeccomp:\t0\nCpus_allowed:\t1\n"
	    "Cpus_allowed_list:\t0\n");
}

/*
 * Linux's 52 fields (proc(5)): the times in clock ticks (cputime.c; the
 * children's the caller's alone), the start time since the tree began;
 * no terminal (tty_nr 0, tpgid -1).
 */
static void
gen_pidstat(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	uint64_t rss = v->state == 'Z' ? 0 : proc_rss(vm, v) / VM_PAGE;
	uint64_t vsize = v->state == 'Z' ? 0 : vm->memsz;

	put(b, "%d (%s) %c %d %d %d 0 -1 4194304 0 0 0 0 ", (int)v->pid,
	    v->comm, v->state, (int)v->ppid, (int)v->pgid, (int)v->sid);
	put(b, "%llu %llu %llu %llu %d %d %d 0 ",
	    (unsigned long long)(v->cpu[0] / VM_TICK_NS),
	    (unsigned long long)(v->cpu[1] / VM_TICK_NS),
	    (unsigned long long)(v->cpu_child[0] / VM_TICK_NS),
	    (unsigned long long)(v->cpu_child[1] / VM_TICK_NS),
	    20 + (int)v->nice, (int)v->nice, (int)v->nthreads);
	put(b, "%llu %llu %llu 18446744073709551615 0 0 0 0 0 ",
	    (unsigned long long)(v->start_us / (VM_TICK_NS / 1000)),
	    (unsigned long long)vsize, (unsigned long long)rss);
	put(b, "%llu 0 %llu %llu 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
	    (unsigned long long)(v->pending & 0xffffffffu),
	    (unsigned long long)(v->ignored & 0xffffffffu),
	    (unsigned long long)(v->caught & 0xffffffffu));
}

/* size resident shared text lib data dt, in pages. */
static void
gen_statm(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	uint64_t rss = proc_rss(vm, v) / VM_PAGE;
	uint64_t text =
	    v->pid == vm->pid ? (vm->elf.hi - vm->elf.lo) / VM_PAGE : 0;

	if (v->state == 'Z')
		put(b, "0 0 0 0 0 0 0\n");
	else
		put(b, "%llu %llu 0 %llu 0 %llu 0\n",
		    (unsigned long long)(vm->memsz / VM_PAGE),
		    (unsigned long long)rss, (unsigned long long)text,
		    (unsigned long long)(rss - (text < rss ? text : rss)));
}

/* Guest memory [lo, hi), as far as the buffer holds: the program's
 * own strings, whatever it has written over them since. */
static void
put_guest(struct vm *vm, uint64_t lo, uint64_t hi, struct buf *b)
{
	const void *g;
	size_t n;

	if (hi <= lo)
		return;
	n = hi - lo < b->cap - b->len ? hi - lo : b->cap - b->len;
	if ((g = vm_gptr(vm, lo, n)) == NULL)
		return;
	memcpy(b->p + b->len, g, n);
	b->len += n;
}

/* The caller's argv from its stack; another's as far as it posted it
 * (at its start or last execve). */
static void
gen_cmdline(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	if (v->pid == vm->pid) {
		put_guest(vm, vm->arg_start, vm->env_start, b);
		return;
	}
	memcpy(b->p, v->cmdline, v->cmdline_len);
	b->len = v->cmdline_len;
}

/*
 * The guest's file system as mounts: one root, /proc and /dev. The root's
 * device is what stat(2) of "/" answers, so df and findmnt find the
 * mount a workspace file is on.
 */
static void
mounts(struct vm *vm, int info, struct buf *b)
{
	struct stat st;
	unsigned maj = 0, min = 0;

	if (vm_stat_path(vm, "/", 0, &st) == 0) {
		maj = major(st.st_dev);
		min = minor(st.st_dev);
	}
	if (!info) {
		put(b,
		    "keep / keep rw,relatime 0 0\n"
		    "proc /proc proc rw,nosuid,nodev,noexec,relatime 0 0\n"
		    "dev /dev devtmpfs rw,nosuid,relatime 0 0\n");
		return;
	}
	put(b, "1 0 %u:%u / / rw,relatime - keep keep rw\n", maj, min);
	put(b,
	    "2 1 0:4 / /proc rw,nosuid,nodev,noexec,relatime - proc proc "
	    "rw\n");
	put(b, "3 1 0:5 / /dev rw,nosuid,relatime - devtmpfs dev rw\n");
}

static void
gen_mounts(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	mounts(vm, 0, b);
}

static void
gen_mountinfo(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	mounts(vm, 1, b);
}

static void
gen_comm(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put(b, "%s\n", v->comm);
}

/* The caller's environment strings from its stack. */
static void
gen_environ(struct vm *vm, const struct vm_proc_view *v, struct buf *b)
{
	put_guest(vm, vm->env_start, vm->env_end, b);
}

/* Each file's maker; those under /proc/PID get the process's view. */
typedef void gen_fn(struct vm *, const struct vm_proc_view *, struct buf *);
static gen_fn *const gens[] = {
	[G_CPUINFO] = gen_cpuinfo,
	[G_MEMINFO] = gen_meminfo,
	[G_STAT] = gen_stat,
	[G_MAPS] = gen_maps,
	[G_STATUS] = gen_status,
	[G_CMDLINE] = gen_cmdline,
	[G_CPULIST] = gen_cpulist,
	[G_PIDSTAT] = gen_pidstat,
	[G_STATM] = gen_statm,
	[G_COMM] = gen_comm,
	[G_ENVIRON] = gen_environ,
	[G_MOUNTS] = gen_mounts,
	[G_MOUNTINFO] = gen_mountinfo,
	[G_LOADAVG] = gen_loadavg,
	[G_UPTIME] = gen_uptime,
	[G_VERSION] = gen_version,
	[G_HOSTNAME] = gen_hostname,
	[G_OSRELEASE] = gen_osrelease,
	[G_OSTYPE] = gen_ostype,
	[G_PID_MAX] = gen_pid_max,
};

static void
gen_dir(struct vm *vm, const struct node *nd, struct buf *b)
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
		{ "/proc", "self", DT_LNK },
		{ "/proc", "thread-self", DT_LNK },
		{ "/proc", "cpuinfo", DT_REG },
		{ "/proc", "loadavg", DT_REG },
		{ "/proc", "meminfo", DT_REG },
		{ "/proc", "mounts", DT_LNK },
		{ "/proc", "stat", DT_REG },
		{ "/proc", "sys", DT_DIR },
		{ "/proc", "uptime", DT_REG },
		{ "/proc", "version", DT_REG },
		{ "/proc/sys", "kernel", DT_DIR },
		{ "/proc/sys/kernel", "hostname", DT_REG },
		{ "/proc/sys/kernel", "osrelease", DT_REG },
		{ "/proc/sys/kernel", "ostype", DT_REG },
		{ "/proc/sys/kernel", "pid_max", DT_REG },
		{ SYS_CPU, "online", DT_REG },
		{ SYS_CPU, "possible", DT_REG },
		{ SYS_CPU, "present", DT_REG },
	};
	const char *path = nd->path, *rest = NULL;
	int32_t pids[PROC_PIDS_MAX], tids[THREADS_LISTED], pid;
	int intask = 0;
	char num[16];
	size_t i, n;

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
	if ((pid = pid_of(path, &rest)) > 0) {
		if (strcmp(rest, "/task") == 0) {
			n = (size_t)vm_thread_ids(vm, tids, THREADS_LISTED);
			if (pid != vm->pid)
				n = 1, tids[0] = pid;
			for (i = 0; i < n && i < THREADS_LISTED; i++) {
				snprintf(num, sizeof(num), "%d", (int)tids[i]);
				ENTRY(DT_DIR, num);
			}
			return;
		}
		if (under(rest, "/task")) { /* /task/TID: the entries again */
			rest = past_task(rest);
			intask = 1;
		}
		if (strcmp(rest, "/fd") == 0) {
			for (i = 0; i < vm->nfds; i++)
				if (vm_fd(vm, i) != NULL) {
					snprintf(num, sizeof(num), "%zu", i);
					ENTRY(DT_LNK, num);
				}
		} else if (*rest == '\0')
			for (i = 0; i < sizeof(pid_ents) / sizeof(pid_ents[0]);
			     i++)
				if (!intask ||
				    strcmp(pid_ents[i].name, "task") != 0)
					ENTRY(pid_ents[i].kind == N_DIR ? DT_DIR
					        : pid_ents[i].kind == N_LINK
					        ? DT_LNK
					        : DT_REG,
					    pid_ents[i].name);
		return;
	}
	if (strcmp(path, "/proc") == 0) {
		n = vm_proc_pids(vm, pids, PROC_PIDS_MAX);
		for (i = 0; i < n && i < PROC_PIDS_MAX; i++) {
			snprintf(num, sizeof(num), "%d", (int)pids[i]);
			ENTRY(DT_DIR, num);
		}
	}
	for (i = 0; i < sizeof(ents) / sizeof(ents[0]); i++)
		/* /dev/shm is the workspace's (fs.c): none without one. */
		if (strcmp(ents[i].dir, path) == 0 &&
		    (vm->ws_fd >= 0 || strcmp(ents[i].name, "shm") != 0))
			ENTRY(ents[i].type, ents[i].name);
#undef ENTRY
}

/* The bytes of a file or directory node, malloc'd. */
static int
make(struct vm *vm, const struct node *nd, uint8_t **out, uint64_t *len)
{
	struct buf b = { malloc(SYNTH_MAX), 0, SYNTH_MAX };
	struct vm_proc_view *v = NULL;

	if (b.p == NULL)
		return -ENOMEM;
	if (nd->pid != 0 && nd->kind == N_FILE) {
		/* The process may have been reaped since the lookup. */
		if ((v = malloc(sizeof(*v))) == NULL ||
		    vm_proc_view(vm, nd->pid, v) != 0) {
			free(v);
			free(b.p);
			return v == NULL ? -ENOMEM : -ESRCH;
		}
	}
	if (nd->kind == N_DIR)
		gen_dir(vm, nd, &b);
	else if ((size_t)nd->gen < sizeof(gens) / sizeof(gens[0]) &&
	    gens[nd->gen] != NULL)
		gens[nd->gen](vm, v, &b);
	free(v);
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
	/* A /proc/PID is its process's; the rest belongs to root. */
	if (nd->pid != 0)
		st->st_uid = st->st_gid = VM_GUEST_ID;
	switch (nd->kind) {
	case N_DIR:
		st->st_mode = S_IFDIR | (nd->denied ? 0500 : 0555);
		st->st_nlink = 2;
		break;
	case N_FILE:
		st->st_mode = S_IFREG | (nd->denied ? 0400 : 0444);
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
	if (nd.kind == N_OUTSIDE)
		return vm_stat_path(vm, nd.link, nofollow, st);
	node_stat(vm, &nd, st);
	return 0;
}

int
vm_synth_outside(
    struct vm *vm, const char *path, int nofollow, char *out, size_t outlen)
{
	struct node nd;

	if (lookup(vm, path, nofollow, &nd) != 0 || nd.kind != N_OUTSIDE)
		return 0;
	strlcpy(out, nd.link, outlen);
	return 1;
}

void
vm_synth_refresh(struct vm *vm, struct vfd *f)
{
	struct node nd;
	uint8_t *bytes;
	uint64_t len;

	if (f->owned == NULL || f->path == NULL ||
	    lookup(vm, f->path, 0, &nd) != 0 || nd.kind != N_FILE ||
	    nd.denied || make(vm, &nd, &bytes, &len) != 0)
		return;
	free(f->owned);
	f->owned = bytes;
	f->data = bytes;
	f->len = len;
}

int
vm_synth_is_exe(struct vm *vm, const char *path)
{
	struct node nd;

	return vm_synth_path(path) && lookup(vm, path, 0, &nd) == 0 &&
	    nd.kind == N_EXE;
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
	if (nd.denied)
		return -EACCES;
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
	if (nd.denied)
		return -EACCES;
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

/*
 * The Linux x86-64 system calls a keep guest may make, other than files
 * (fs.c): memory, time, identity, signals (recorded, never delivered),
 * exit. Linux's errno semantics; what a single-process, single-thread
 * guest cannot have (fork, exec, threads) is ENOSYS.
 */
#include <sys/random.h>
#include <sys/utsname.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/egress/egress_abi.h"
#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"
#include "lib/log.h"

#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004

#define MAP_SHARED_ 0x01
#define MAP_PRIVATE_ 0x02
#define MAP_FIXED_ 0x10
#define MAP_ANONYMOUS_ 0x20
#define MAP_FIXED_NOREPLACE_ 0x100000

static int64_t
sys_brk(struct vm *vm, uint64_t want)
{
	if (want == 0 || want < vm->brk_start || want > vm->brk_max)
		return (int64_t)vm->brk_cur;
	if (want < vm->brk_cur)
		/* Shrinking: what comes back later must read as zero. */
		memset(vm->mem + want, 0, vm->brk_cur - want);
	vm->brk_cur = want;
	if (want > vm->brk_peak)
		vm->brk_peak = want;
	return (int64_t)want;
}

static int64_t
sys_mmap(struct vm *vm, const uint64_t a[6])
{
	uint64_t addr = a[0], len = a[1], flags = a[3], off = a[5];
	int fd = (int)a[4];
	uint64_t g;
	int64_t n;

	if (len == 0 || len > vm->mmap_hi - vm->mmap_lo || (off % VM_PAGE) != 0)
		return -EINVAL;
	if ((flags & (MAP_SHARED_ | MAP_PRIVATE_)) == 0)
		return -EINVAL;
	len = (len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if (flags & (MAP_FIXED_ | MAP_FIXED_NOREPLACE_)) {
		/* Only over memory the guest already mapped (glibc and
		 * CPython use it to re-map inside their own reservations). */
		if (addr % VM_PAGE != 0 || !vm_mmap_is_used(vm, addr, len))
			return (flags & MAP_FIXED_NOREPLACE_) ? -EEXIST
			                                      : -ENOMEM;
		g = addr;
		memset(vm->mem + g, 0, len);
	} else if ((g = vm_mmap_alloc(vm, len)) == 0)
		return -ENOMEM;
	if (!(flags & MAP_ANONYMOUS_)) {
		/* A private file mapping is a copy: the guest has no shared
		 * memory with anything. */
		uint64_t r[6] = { (uint64_t)fd, g, len, off, 0, 0 };
		int handled = 0;

		n = vm_fs_syscall(vm, 17 /* pread64 */, r, &handled);
		if (n < 0) {
			if (!(flags & (MAP_FIXED_ | MAP_FIXED_NOREPLACE_)))
				vm_mmap_free(vm, g, len);
			return n == -ESPIPE ? -ENODEV : n;
		}
	}
	return (int64_t)g;
}

static int64_t
sys_mremap(struct vm *vm, const uint64_t a[6])
{
	uint64_t old = a[0], olen = a[1], nlen = a[2], flags = a[3], g;

	if (old % VM_PAGE != 0 || olen == 0 || nlen == 0 ||
	    !vm_mmap_is_used(vm, old, olen))
		return -EINVAL;
	olen = (olen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	nlen = (nlen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if (nlen <= olen) {
		if (nlen < olen)
			vm_mmap_free(vm, old + nlen, olen - nlen);
		return (int64_t)old;
	}
	if (!(flags & 1 /* MREMAP_MAYMOVE */))
		return -ENOMEM;
	if ((g = vm_mmap_alloc(vm, nlen)) == 0)
		return -ENOMEM;
	memcpy(vm->mem + g, vm->mem + old, olen);
	vm_mmap_free(vm, old, olen);
	return (int64_t)g;
}

static int64_t
put_guest(struct vm *vm, uint64_t addr, const void *p, size_t len)
{
	void *g;

	if ((g = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	memcpy(g, p, len);
	return 0;
}

static int64_t
sys_clock_gettime(struct vm *vm, uint64_t clk, uint64_t tp)
{
	struct timespec ts;
	clockid_t id;

	switch (clk) {
	case CLOCK_REALTIME:
	case CLOCK_REALTIME_COARSE:
		id = CLOCK_REALTIME;
		break;
	case CLOCK_MONOTONIC:
	case CLOCK_MONOTONIC_RAW:
	case CLOCK_MONOTONIC_COARSE:
	case CLOCK_BOOTTIME:
		id = CLOCK_MONOTONIC;
		break;
	case CLOCK_PROCESS_CPUTIME_ID:
	case CLOCK_THREAD_CPUTIME_ID:
		id = CLOCK_THREAD_CPUTIME_ID;
		break;
	default:
		return -EINVAL;
	}
	clock_gettime(id, &ts);
	return put_guest(vm, tp, &ts, sizeof(ts));
}

/*
 * nanosleep and clock_nanosleep: the guest's time passes for real (a
 * program that sleeps and reads the clock must see it), on the host's
 * clocks as sys_clock_gettime gives them. The run's time limit is a
 * SIGALRM that interrupts the sleep; the next KVM_RUN then stops the
 * guest, so a long sleep costs no more than the limit.
 */
static int64_t
sys_sleep(struct vm *vm, uint64_t clk, uint64_t flags, uint64_t req)
{
	struct timespec ts;
	const void *g;
	clockid_t id;

	switch (clk) {
	case CLOCK_REALTIME:
		id = CLOCK_REALTIME;
		break;
	case CLOCK_MONOTONIC:
	case CLOCK_BOOTTIME:
		id = CLOCK_MONOTONIC;
		break;
	default:
		return -EINVAL;
	}
	if ((flags & ~(uint64_t)TIMER_ABSTIME) != 0)
		return -EINVAL;
	if ((g = vm_gptr(vm, req, sizeof(ts))) == NULL)
		return -EFAULT;
	memcpy(&ts, g, sizeof(ts));
	if (ts.tv_sec < 0 || ts.tv_nsec < 0 || ts.tv_nsec >= 1000000000L)
		return -EINVAL;
	/* EINTR is the run's limit: report the sleep done, the guest will
	 * not run again. */
	clock_nanosleep(id, (int)flags, &ts, NULL);
	return 0;
}

static int64_t
sys_uname(struct vm *vm, uint64_t buf)
{
	struct utsname u;

	memset(&u, 0, sizeof(u));
	strlcpy(u.sysname, "Linux", sizeof(u.sysname));
	strlcpy(u.nodename, "keep", sizeof(u.nodename));
	strlcpy(u.release, "6.1.0-keep", sizeof(u.release));
	strlcpy(u.version, "#1 keep guest", sizeof(u.version));
	strlcpy(u.machine, "x86_64", sizeof(u.machine));
	return put_guest(vm, buf, &u, sizeof(u));
}

static int64_t
sys_sysinfo(struct vm *vm, uint64_t buf)
{
	struct {
		int64_t uptime;
		uint64_t loads[3], totalram, freeram, sharedram, bufferram;
		uint64_t totalswap, freeswap;
		uint16_t procs, pad;
		uint64_t totalhigh, freehigh;
		uint32_t mem_unit;
		char pad2[4];
	} si;

	memset(&si, 0, sizeof(si));
	si.uptime = 1;
	si.totalram = vm->memsz;
	si.freeram =
	    (vm->mmap_hi - vm->mmap_lo) - vm->mmap_pages_used * VM_PAGE;
	si.procs = 1;
	si.mem_unit = 1;
	return put_guest(vm, buf, &si, sizeof(si));
}

static int64_t
sys_prlimit(struct vm *vm, const uint64_t a[6])
{
	uint64_t lim[2];

	if (a[0] != 0)
		return -ESRCH; /* only ourselves */
	if (a[3] != 0) {
		switch (a[1]) {
		case 3: /* RLIMIT_STACK */
			lim[0] = lim[1] = vm->stack_top - vm->stack_lo;
			break;
		case 7: /* RLIMIT_NOFILE */
			lim[0] = lim[1] = vm->nfds;
			break;
		case 9: /* RLIMIT_AS */
		case 2: /* RLIMIT_DATA */
			lim[0] = lim[1] = vm->memsz;
			break;
		default:
			lim[0] = lim[1] = ~0ULL; /* RLIM_INFINITY */
		}
		if (put_guest(vm, a[3], lim, sizeof(lim)) != 0)
			return -EFAULT;
	}
	return 0; /* setting a limit is accepted and has no effect */
}

static int64_t
sys_getrandom(struct vm *vm, uint64_t buf, uint64_t len)
{
	void *g;

	if (len > (1u << 20))
		len = 1u << 20;
	if ((g = vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	randombytes_buf(g, len);
	return (int64_t)len;
}

int64_t
vm_syscall(struct vm *vm, uint64_t nr, const uint64_t a[6],
    struct kvm_sregs *sregs, int *sregs_dirty)
{
	int64_t ret;
	int handled = 0;

	ret = vm_fs_syscall(vm, nr, a, &handled);
	if (handled)
		goto out;
	switch (nr) {
	case 9: /* mmap */
		ret = sys_mmap(vm, a);
		break;
	case 10: /* mprotect: 2 MiB pages cannot hold per-page rights */
		ret = a[0] % VM_PAGE == 0 ? 0 : -EINVAL;
		break;
	case 11: /* munmap */
		ret = vm_mmap_free(vm, a[0], a[1]);
		break;
	case 12: /* brk */
		ret = sys_brk(vm, a[0]);
		break;
	case 25: /* mremap */
		ret = sys_mremap(vm, a);
		break;
	case 28: /* madvise */
		ret = 0;
		break;
	case 13: /* rt_sigaction: recorded nowhere, nothing is delivered */
	case 14: /* rt_sigprocmask */
	case 131: /* sigaltstack */
		if (nr == 14 && a[2] != 0) {
			uint64_t zero = 0;
			ret = put_guest(vm, a[2], &zero, sizeof(zero));
		} else if (nr == 13 && a[2] != 0) {
			uint8_t zero[32] = { 0 };
			ret = put_guest(vm, a[2], zero, sizeof(zero));
		} else
			ret = 0;
		break;
	case 24: /* sched_yield */
		ret = 0;
		break;
	case 35: /* nanosleep */
		ret = sys_sleep(vm, CLOCK_MONOTONIC, 0, a[0]);
		break;
	case 230: /* clock_nanosleep */
		ret = sys_sleep(vm, a[0], a[1], a[2]);
		break;
	case 39: /* getpid */
	case 186: /* gettid */
		ret = 1;
		break;
	case 110: /* getppid */
		ret = 0;
		break;
	case 102: /* getuid */
	case 104: /* getgid */
	case 107: /* geteuid */
	case 108: /* getegid */
		ret = 1000;
		break;
	case 63: /* uname */
		ret = sys_uname(vm, a[0]);
		break;
	case 96: { /* gettimeofday */
		struct timespec ts;
		int64_t tv[2];

		clock_gettime(CLOCK_REALTIME, &ts);
		tv[0] = ts.tv_sec;
		tv[1] = ts.tv_nsec / 1000;
		ret = a[0] != 0 ? put_guest(vm, a[0], tv, sizeof(tv)) : 0;
		break;
	}
	case 201: /* time */
		ret = (int64_t)time(NULL);
		if (a[0] != 0 && put_guest(vm, a[0], &ret, 8) != 0)
			ret = -EFAULT;
		break;
	case 228: /* clock_gettime */
		ret = sys_clock_gettime(vm, a[0], a[1]);
		break;
	case 229: { /* clock_getres */
		struct timespec ts = { 0, 1 };
		ret = a[1] != 0 ? put_guest(vm, a[1], &ts, sizeof(ts)) : 0;
		break;
	}
	case 99: /* sysinfo */
		ret = sys_sysinfo(vm, a[0]);
		break;
	case 97: { /* getrlimit */
		uint64_t b[6] = { 0, a[0], 0, a[1], 0, 0 };
		ret = sys_prlimit(vm, b);
		break;
	}
	case 302: /* prlimit64 */
		ret = sys_prlimit(vm, a);
		break;
	case 318: /* getrandom */
		ret = sys_getrandom(vm, a[0], a[1]);
		break;
	case 158: /* arch_prctl */
		switch (a[0]) {
		case ARCH_SET_FS:
		case ARCH_SET_GS:
			/* Into the synced segment registers: an MSR write
			 * alone would be undone when they are written back. */
			if (a[1] >= (1ULL << 47))
				return -EPERM;
			if (a[0] == ARCH_SET_FS)
				sregs->fs.base = a[1];
			else
				sregs->gs.base = a[1];
			*sregs_dirty = 1;
			ret = 0;
			break;
		case ARCH_GET_FS:
			ret = put_guest(vm, a[1], &sregs->fs.base, 8);
			break;
		case ARCH_GET_GS:
			ret = put_guest(vm, a[1], &sregs->gs.base, 8);
			break;
		default:
			ret = -EINVAL;
		}
		break;
	case 218: /* set_tid_address */
		ret = 1;
		break;
	case 202: /* futex: one thread, so a wait never blocks on another */
		ret = (a[1] & 0x7f) == 0 /* FUTEX_WAIT */ ? -EAGAIN : 0;
		break;
	case 204: { /* sched_getaffinity */
		uint64_t mask = 1;

		if (a[1] < sizeof(mask))
			ret = -EINVAL;
		else
			ret = put_guest(vm, a[2], &mask, sizeof(mask)) == 0
			    ? (int64_t)sizeof(mask)
			    : -EFAULT;
		break;
	}
	case 273: /* set_robust_list */
	case 334: /* rseq */
	case 56: /* clone */
	case 57: /* fork */
	case 58: /* vfork */
	case 59: /* execve */
	case 322: /* execveat */
	case 435: /* clone3 */
	case 62: /* kill */
	case 200: /* tkill */
	case 234: /* tgkill */
		ret = -ENOSYS;
		break;
	case 60: /* exit */
	case 231: /* exit_group */
		vm_stop(vm, VMM_EXITED, (int)(a[0] & 0xff), "%s", "");
		ret = 0;
		break;
	case KEEP_SYS_FETCH:
		ret = vm_keep_fetch(vm, a[0], a[1]); /* fetch.c */
		break;
	default:
		log_debug(
		    "guest: unknown system call %llu", (unsigned long long)nr);
		ret = -ENOSYS;
		break;
	}
out:
	if (vm->cfg->trace)
		fprintf(stderr,
		    "keep: syscall %llu(0x%llx, 0x%llx, 0x%llx) = %lld\n",
		    (unsigned long long)nr, (unsigned long long)a[0],
		    (unsigned long long)a[1], (unsigned long long)a[2],
		    (long long)ret);
	return ret;
}

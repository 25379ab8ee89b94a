/*
 * The guest's vDSO (docs/vmm.md "Time"): the clocks without a VM exit.
 *
 * A system call costs the guest one exit (about 30 us on nested KVM);
 * rdtsc at CPL3 costs none. The VMM maps this object read-only at
 * GUEST_VDSO, names it in AT_SYSINFO_EHDR, and keeps the conversion from
 * the guest's TSC to the host's clocks in the data page at GUEST_VVAR.
 * Clocks the page does not serve (CPU time, unknown ids) and a page the
 * VMM left disabled go to the VMM as the system call would.
 *
 * Built freestanding (mk/vdso.mk): no libc, no stack protector (the
 * guest's TLS may not exist yet), no relocations (ld.so does not
 * relocate a vDSO), and the data page at a fixed address, not through a
 * symbol.
 */
#include <stdint.h>

#include "host/vmm/abi.h"
#include "vdso/vvar.h"

#define NR_gettimeofday 96
#define NR_time 201
#define NR_clock_gettime 228
#define NR_clock_getres 229

/* Linux's clock ids (<time.h> is the libc's, not ours to include). */
enum {
	CLK_REALTIME = 0,
	CLK_MONOTONIC = 1,
	CLK_MONOTONIC_RAW = 4,
	CLK_REALTIME_COARSE = 5,
	CLK_MONOTONIC_COARSE = 6,
	CLK_BOOTTIME = 7
};

struct kts {
	int64_t tv_sec, tv_nsec;
};
struct ktv {
	int64_t tv_sec, tv_usec;
};
struct ktz {
	int32_t minuteswest, dsttime;
};

int __vdso_clock_gettime(int clk, struct kts *ts);
int __vdso_gettimeofday(struct ktv *tv, struct ktz *tz);
int64_t __vdso_time(int64_t *t);
int __vdso_clock_getres(int clk, struct kts *res);
int __vdso_getcpu(uint32_t *cpu, uint32_t *node, void *cache);

static long
sys2(long nr, long a, long b)
{
	long ret;

	__asm__ volatile("syscall"
	                 : "=a"(ret)
	                 : "a"(nr), "D"(a), "S"(b)
	                 : "rcx", "r11", "memory");
	return ret;
}

static const struct keep_vvar *
vvar(void)
{
	return (const struct keep_vvar *)(uintptr_t)GUEST_VVAR;
}

/* Nanoseconds on the clock whose base is base_ns. The TSC of the one
 * vCPU never runs backwards; a tsc below the base (a page written for a
 * TSC the VMM then moved) reads as the base itself. */
static uint64_t
clock_ns(const struct keep_vvar *v, uint64_t base_ns)
{
	uint32_t lo, hi;
	uint64_t tsc, d;

	__asm__ volatile("lfence; rdtsc" : "=a"(lo), "=d"(hi)::"memory");
	tsc = (uint64_t)hi << 32 | lo;
	d = tsc > v->tsc_base ? tsc - v->tsc_base : 0;
	return base_ns +
	    (uint64_t)(((unsigned __int128)d * v->mult) >> VVAR_SHIFT);
}

/* The base of a clock this page serves, or 0 for one it does not. */
static int
clock_base(int clk, const struct keep_vvar *v, uint64_t *base)
{
	if (!v->enabled)
		return 0;
	switch (clk) {
	case CLK_REALTIME:
	case CLK_REALTIME_COARSE:
		*base = v->real_ns;
		return 1;
	case CLK_MONOTONIC:
	case CLK_MONOTONIC_RAW:
	case CLK_MONOTONIC_COARSE:
	case CLK_BOOTTIME:
		*base = v->mono_ns;
		return 1;
	default:
		return 0;
	}
}

int
__vdso_clock_gettime(int clk, struct kts *ts)
{
	const struct keep_vvar *v = vvar();
	uint64_t base, ns;

	if (!clock_base(clk, v, &base))
		return (int)sys2(NR_clock_gettime, clk, (long)ts);
	ns = clock_ns(v, base);
	ts->tv_sec = (int64_t)(ns / 1000000000u);
	ts->tv_nsec = (int64_t)(ns % 1000000000u);
	return 0;
}

int
__vdso_gettimeofday(struct ktv *tv, struct ktz *tz)
{
	const struct keep_vvar *v = vvar();
	uint64_t ns;

	if (!v->enabled)
		return (int)sys2(NR_gettimeofday, (long)tv, (long)tz);
	if (tv != 0) {
		ns = clock_ns(v, v->real_ns);
		tv->tv_sec = (int64_t)(ns / 1000000000u);
		tv->tv_usec = (int64_t)(ns % 1000000000u / 1000u);
	}
	if (tz != 0)
		tz->minuteswest = tz->dsttime =
		    0; /* UTC, as the VMM keeps it */
	return 0;
}

int64_t
__vdso_time(int64_t *t)
{
	const struct keep_vvar *v = vvar();
	int64_t s;

	if (!v->enabled)
		return sys2(NR_time, (long)t, 0);
	s = (int64_t)(clock_ns(v, v->real_ns) / 1000000000u);
	if (t != 0)
		*t = s;
	return s;
}

/* The VMM's clock_getres answers 1 ns for every clock it serves. */
int
__vdso_clock_getres(int clk, struct kts *res)
{
	uint64_t base;

	if (!clock_base(clk, vvar(), &base))
		return (int)sys2(NR_clock_getres, clk, (long)res);
	if (res != 0) {
		res->tv_sec = 0;
		res->tv_nsec = 1;
	}
	return 0;
}

/* One vCPU: CPU 0 on node 0, as sched_getaffinity says. */
int
__vdso_getcpu(uint32_t *cpu, uint32_t *node, void *cache)
{
	if (cpu != 0)
		*cpu = 0;
	if (node != 0)
		*node = 0;
	return 0;
}

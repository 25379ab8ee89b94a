/*
 * The guest's clocks and sleeps: the host's clocks, read for the guest.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

int64_t
sys_clock_gettime(struct vm *vm, const uint64_t a[6])
{
	int32_t which = (int32_t)a[0]; /* a clockid_t, an int */
	clockid_t id = -1; /* stays -1 for a CPU clock */
	struct timespec ts;
	uint64_t user = 0, sys = 0;

	switch (which) {
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
	case CLOCK_THREAD_CPUTIME_ID: /* its threads share one vCPU */
		vm_cpu_times(vm, &user, &sys);
		break;
	default:
		/* clock_getcpuclockid's and pthread_getcpuclockid's: a
		 * process's or thread's id, complemented, over the kind. */
		if (which >= 0 || vm_cpu_clock_of(vm, which, &user, &sys) != 0)
			return -EINVAL;
		break;
	}
	if (id == CLOCK_REALTIME)
		vm_vdso_follow_wall(vm);
	if (id != -1)
		clock_gettime(id, &ts);
	else {
		ts.tv_sec = (time_t)((user + sys) / 1000000000u);
		ts.tv_nsec = (long)((user + sys) % 1000000000u);
	}
	return vm_put(vm, a[1], &ts, sizeof(ts));
}

int64_t
sys_clock_getres(struct vm *vm, const uint64_t a[6])
{
	struct timespec ts = { 0, 1 };

	return a[1] != 0 ? vm_put(vm, a[1], &ts, sizeof(ts)) : 0;
}

int64_t
sys_gettimeofday(struct vm *vm, const uint64_t a[6])
{
	struct timespec ts;
	int64_t tv[2];

	vm_vdso_follow_wall(vm);
	clock_gettime(CLOCK_REALTIME, &ts);
	tv[0] = ts.tv_sec;
	tv[1] = ts.tv_nsec / 1000;
	return a[0] != 0 ? vm_put(vm, a[0], tv, sizeof(tv)) : 0;
}

int64_t
sys_time(struct vm *vm, const uint64_t a[6])
{
	int64_t t;

	vm_vdso_follow_wall(vm);
	t = (int64_t)time(NULL);
	if (a[0] != 0 && vm_put(vm, a[0], &t, sizeof(t)) != 0)
		return -EFAULT;
	return t;
}

/* The time from now on clock id to end in *left: 0 (and *left zero)
 * once end has come. */
static int
time_left(clockid_t id, const struct timespec *end, struct timespec *left)
{
	struct timespec now;

	clock_gettime(id, &now);
	left->tv_sec = end->tv_sec - now.tv_sec;
	left->tv_nsec = end->tv_nsec - now.tv_nsec;
	if (left->tv_nsec < 0) {
		left->tv_sec--;
		left->tv_nsec += 1000000000L;
	}
	if (left->tv_sec < 0 || (left->tv_sec == 0 && left->tv_nsec == 0)) {
		left->tv_sec = left->tv_nsec = 0;
		return 0;
	}
	return 1;
}

/* A duration in nanoseconds, at most 2^32 seconds' worth (a longer
 * sleep is made of such waits). */
static int64_t
timespec_to_ns(const struct timespec *t)
{
	return t->tv_sec > (1LL << 32)
	    ? (1LL << 32) * 1000000000LL
	    : (int64_t)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/*
 * nanosleep and clock_nanosleep: the guest's time passes for real (a
 * program that sleeps and reads the clock must see it), on the host's
 * clocks as sys_clock_gettime gives them. The run's time limit is a
 * SIGALRM that ends the sleep; the guest is then stopped, so a long
 * sleep costs no more than the limit.
 */
static int64_t
guest_sleep(
    struct vm *vm, uint64_t clk, uint64_t flags, uint64_t req, uint64_t rem)
{
	struct timespec ts, end, now, left;
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
	/* With other threads, this one is parked until its deadline and
	 * they run meanwhile (sys_thread.c). */
	if (vm->threads != NULL) {
		int64_t us = ts.tv_sec > (1LL << 40)
		    ? (1LL << 40)
		    : (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;

		if (flags & TIMER_ABSTIME) {
			clock_gettime(id, &now);
			us -=
			    (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
		}
		if (us <= 0)
			return 0;
		if (vm_thread_park(vm, NULL, 0, vm_now_us() + (uint64_t)us, 0))
			return 0;
	}
	end = ts;
	if (!(flags & TIMER_ABSTIME)) {
		clock_gettime(id, &now);
		end.tv_sec = now.tv_sec +
		    (ts.tv_sec > (1LL << 40) ? (1LL << 40) : ts.tv_sec);
		end.tv_nsec = now.tv_nsec + ts.tv_nsec;
		if (end.tv_nsec >= 1000000000L) {
			end.tv_sec++;
			end.tv_nsec -= 1000000000L;
		}
	}
	/*
	 * The sleep ends early for the run's limit (the guest will not run
	 * again; the sleep is reported done) and for a signal the guest
	 * acts on: EINTR, and what was left of a relative sleep, as Linux
	 * answers (Python, for one, then sleeps on for the rest). It waits
	 * in vm_signal_wait_fds, so such a signal that came just before it
	 * began ends it too; any other wake-up (a signal the guest blocks
	 * or ignores) is not the guest's business: it sleeps on to its end
	 * on the guest's clock.
	 */
	while (time_left(id, &end, &left)) {
		if (vm_signal_wait_fds(vm, NULL, 0, timespec_to_ns(&left)) !=
		    -EINTR)
			continue;
		if (vm_timed_out())
			return 0;
		if (!vm_signal_interrupts(vm))
			continue;
		if (flags & TIMER_ABSTIME || rem == 0)
			return -EINTR;
		(void)time_left(id, &end, &left);
		return vm_put(vm, rem, &left, sizeof(left)) != 0 ? -EFAULT
		                                                 : -EINTR;
	}
	return 0;
}

int64_t
sys_nanosleep(struct vm *vm, const uint64_t a[6])
{
	return guest_sleep(vm, CLOCK_MONOTONIC, 0, a[0], a[1]);
}

int64_t
sys_clock_nanosleep(struct vm *vm, const uint64_t a[6])
{
	return guest_sleep(vm, a[0], a[1], a[2], a[3]);
}

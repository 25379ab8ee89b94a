/*
 * Signals (docs/vmm.md, "Signals"): actions, masks, the alternate stack,
 * alarm and setitimer, and delivery. A signal is delivered when the
 * guest is between instructions of its own code: at the return of a
 * system call, after a kick out of KVM_RUN (the run's SIGALRM timer, or
 * SIGUSR2 from another guest process that queued one in the process
 * table), or at an exception the program has a handler for.
 *
 * A handler runs on a Linux x86-64 `struct rt_sigframe` built on the
 * guest's stack (or its alternate stack): the return address (the
 * program's SA_RESTORER), a ucontext with the general registers, the
 * mask and a 512-byte FXSAVE image of the x87/SSE state, and the
 * siginfo. rt_sigreturn reads it back from guest memory through
 * vm_gptr, keeps RFLAGS to what a CPL3 program may hold, forces the user
 * segments and masks MXCSR: a handler that corrupts its frame can only
 * send itself somewhere it could have jumped anyway.
 */
#include <sys/ioctl.h>
#include <sys/time.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "host/vmm/abi.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define SIG_DFL_ 0
#define SIG_IGN_ 1
#define SA_SIGINFO_ 0x4ULL
#define SA_ONSTACK_ 0x08000000ULL
#define SA_RESTART_ 0x10000000ULL
#define SA_NOCLDWAIT_ 0x00000002ULL
#define SA_NODEFER_ 0x40000000ULL
#define SA_RESETHAND_ 0x80000000ULL
#define SA_RESTORER_ 0x04000000ULL
#define SS_ONSTACK_ 1
#define SS_DISABLE_ 2
#define SS_AUTODISARM_ (1U << 31)
#define MINSIGSTKSZ_ 2048
#define UNBLOCKABLE ((1ULL << (SIGKILL - 1)) | (1ULL << (SIGSTOP - 1)))
#define RFLAGS_USER 0x254dd5ULL
#define RFLAGS_FIXED 0x2ULL
#define REDZONE 128
#define FXSAVE_SIZE 512
#define FRAME_SIZE 440 /* pretcode + ucontext (304) + siginfo (128) */
#define UC_OFF 8
#define MC_OFF (UC_OFF + 40) /* after uc_flags, uc_link, uc_stack */
#define MASK_OFF (MC_OFF + 256)
#define INFO_OFF (UC_OFF + 304)

static uint64_t
bit(int sig)
{
	return 1ULL << (sig - 1);
}

int
vm_signal_reaps_children(const struct vm *vm)
{
	return vm->sig.act[SIGCHLD].handler == SIG_IGN_ ||
	    (vm->sig.act[SIGCHLD].flags & SA_NOCLDWAIT_);
}

int
vm_signal_default_ignored(int sig)
{
	return sig == SIGCHLD || sig == SIGCONT || sig == SIGURG ||
	    sig == SIGWINCH || sig == SIGSTOP || sig == SIGTSTP ||
	    sig == SIGTTIN || sig == SIGTTOU;
}

/* What was sent to the running thread alone (tgkill), 0 if none. */
static uint64_t
own_pending(struct vm *vm)
{
	const uint64_t *p = vm_thread_pending(vm);

	return p != NULL ? *p : 0;
}

/* Take sig from what is pending, the running thread's own first (as
 * Linux dequeues the thread's before the process's). */
static void
take_pending(struct vm *vm, int sig)
{
	uint64_t *p = vm_thread_pending(vm);

	if (p != NULL && (*p & bit(sig)))
		*p &= ~bit(sig);
	else
		vm->sig.pending &= ~bit(sig);
}

int
vm_signal_acts(const struct vm *vm, int sig)
{
	return vm->sig.act[sig].handler > SIG_IGN_ ||
	    (vm->sig.act[sig].handler == SIG_DFL_ &&
	        !vm_signal_default_ignored(sig));
}

static void
publish(struct vm *vm)
{
	uint64_t caught = 0, ignored = 0;
	int s;

	for (s = 1; s <= 64; s++) {
		if (vm->sig.act[s].handler == SIG_IGN_)
			ignored |= bit(s);
		else if (vm->sig.act[s].handler != SIG_DFL_)
			caught |= bit(s);
	}
	vm_proc_dispositions(vm, caught, ignored);
}

void
vm_signal_raise(struct vm *vm, int sig)
{
	if (sig >= 1 && sig <= 64)
		vm->sig.pending |= bit(sig);
}

void
vm_signal_forked(struct vm *vm)
{
	/* A child starts with nothing pending and no timer (fork(2)). */
	vm->sig.pending = 0;
	vm->sig.alarm_at_us = vm->sig.alarm_interval_us = 0;
	memset(vm->sig.cpu_timer_at, 0, sizeof(vm->sig.cpu_timer_at));
	memset(
	    vm->sig.cpu_timer_interval, 0, sizeof(vm->sig.cpu_timer_interval));
	vm->sig.cpu_poll_us = 0;
}

void
vm_signal_exec(struct vm *vm)
{
	int s;

	/* Handlers do not survive exec; ignored signals stay ignored. */
	for (s = 1; s <= 64; s++)
		if (vm->sig.act[s].handler != SIG_IGN_)
			memset(&vm->sig.act[s], 0, sizeof(vm->sig.act[s]));
	vm->sig.ss_sp = vm->sig.ss_size = 0;
	vm->sig.ss_flags = SS_DISABLE_;
	publish(vm);
}

/* How soon a signal that came inside the fast calls' code is tried
 * again, and for how long at most: a program that keeps its RIP in that
 * code on purpose gets its signals there after that (its own answers
 * may then be wrong, nothing else). Well past an entry's own cost
 * (about 30 us here): a kick due sooner lands before the guest has run
 * an instruction, again and again. The hold ends only after as many
 * tries as well as the time: a loaded host may not run the vCPU at all
 * for 10 ms, and the one exit after finds it where it was. */
#define SIGNAL_RETRY_US 200
#define SIGNAL_HOLD_MAX_US 10000
#define SIGNAL_HOLD_TRIES 50
/* ---- the system calls ------------------------------------------------- */

int64_t
sys_rt_sigaction(struct vm *vm, const uint64_t a[6])
{
	int sig = (int)a[0];
	struct vm_sigaction *cur, nw;
	void *g;

	if (sig < 1 || sig > 64 || a[3] != 8)
		return -EINVAL;
	cur = &vm->sig.act[sig];
	if (a[1] != 0) {
		if ((g = vm_gptr(vm, a[1], sizeof(nw))) == NULL)
			return -EFAULT;
		if (sig == SIGKILL || sig == SIGSTOP)
			return -EINVAL;
		memcpy(&nw, g, sizeof(nw));
	}
	if (a[2] != 0 && vm_put(vm, a[2], cur, sizeof(*cur)) != 0)
		return -EFAULT;
	if (a[1] != 0) {
		nw.mask &= ~UNBLOCKABLE;
		*cur = nw;
		if (nw.handler == SIG_IGN_ ||
		    (nw.handler == SIG_DFL_ &&
		        vm_signal_default_ignored(sig))) {
			vm->sig.pending &= ~bit(sig); /* POSIX: discarded */
			vm_thread_discard(vm, bit(sig));
		}
		publish(vm);
	}
	return 0;
}

int64_t
sys_rt_sigprocmask(struct vm *vm, const uint64_t a[6])
{
	uint64_t set = 0, old = vm->sig.blocked;
	const void *g;

	if (a[3] != 8)
		return -EINVAL;
	if (a[1] != 0) {
		if ((g = vm_gptr(vm, a[1], 8)) == NULL)
			return -EFAULT;
		memcpy(&set, g, 8);
		switch (a[0]) {
		case SIG_BLOCK:
			vm->sig.blocked |= set;
			break;
		case SIG_UNBLOCK:
			vm->sig.blocked &= ~set;
			break;
		case SIG_SETMASK:
			vm->sig.blocked = set;
			break;
		default:
			return -EINVAL;
		}
		vm->sig.blocked &= ~UNBLOCKABLE;
	}
	return a[2] != 0 ? vm_put(vm, a[2], &old, 8) : 0;
}

static int
on_altstack(struct vm *vm, uint64_t sp)
{
	return vm->sig.ss_size != 0 && sp > vm->sig.ss_sp &&
	    sp <= vm->sig.ss_sp + vm->sig.ss_size;
}

int64_t
sys_sigaltstack(struct vm *vm, const uint64_t a[6])
{
	struct {
		uint64_t sp;
		uint32_t flags, pad;
		uint64_t size;
	} ss, old;
	const void *g;
	uint64_t rsp = vm->run->s.regs.regs.rsp;

	memset(&old, 0, sizeof(old));
	old.sp = vm->sig.ss_sp;
	old.size = vm->sig.ss_size;
	old.flags = vm->sig.ss_size == 0 ? SS_DISABLE_
	    : on_altstack(vm, rsp)       ? SS_ONSTACK_
	                                 : 0;
	if (a[0] != 0) {
		if ((g = vm_gptr(vm, a[0], sizeof(ss))) == NULL)
			return -EFAULT;
		memcpy(&ss, g, sizeof(ss));
		if (on_altstack(vm, rsp))
			return -EPERM;
		if ((ss.flags &
		        ~(SS_DISABLE_ | SS_ONSTACK_ | SS_AUTODISARM_)) != 0)
			return -EINVAL;
		if (ss.flags & SS_DISABLE_) {
			vm->sig.ss_sp = vm->sig.ss_size = 0;
		} else {
			if (ss.size < MINSIGSTKSZ_)
				return -ENOMEM;
			vm->sig.ss_sp = ss.sp;
			vm->sig.ss_size = ss.size;
		}
	}
	return a[1] != 0 ? vm_put(vm, a[1], &old, sizeof(old)) : 0;
}

int64_t
sys_rt_sigpending(struct vm *vm, const uint64_t a[6])
{
	uint64_t p =
	    (vm->sig.pending | own_pending(vm) | vm_proc_peek_pending(vm)) &
	    vm->sig.blocked;

	if (a[1] != 8)
		return -EINVAL;
	return vm_put(vm, a[0], &p, 8);
}

#define CPU_POLL_US 4000 /* a CPU-time timer's look, as Linux's 250 Hz tick */

/* The CPU time an ITIMER_VIRTUAL (0) or ITIMER_PROF (1) counts, ns. */
static uint64_t
cpu_now(struct vm *vm, int which)
{
	uint64_t user, sys;

	vm_cpu_times(vm, &user, &sys);
	return which == 0 ? user : user + sys;
}

/* The CPU-time timers, when the time to look has come: an expired one
 * raises SIGVTALRM or SIGPROF and starts its interval again; the next
 * look is due no later than either can expire. */
static void
cpu_timers(struct vm *vm, uint64_t now)
{
	static const int sigs[2] = { SIGVTALRM, SIGPROF };
	uint64_t next = 0, cpu, left;
	int i;

	if (vm->sig.cpu_poll_us == 0 || now < vm->sig.cpu_poll_us)
		return;
	for (i = 0; i < 2; i++) {
		if (vm->sig.cpu_timer_at[i] == 0)
			continue;
		cpu = cpu_now(vm, i);
		if (cpu >= vm->sig.cpu_timer_at[i]) {
			vm->sig.pending |= bit(sigs[i]);
			vm->sig.cpu_timer_at[i] =
			    vm->sig.cpu_timer_interval[i] != 0
			    ? cpu + vm->sig.cpu_timer_interval[i]
			    : 0;
		}
		if (vm->sig.cpu_timer_at[i] != 0) {
			/* CPU time runs no faster than the wall clock on
			 * one vCPU: look when it could have run out. */
			left = (vm->sig.cpu_timer_at[i] - cpu) / 1000;
			left = left < CPU_POLL_US ? CPU_POLL_US : left;
			next =
			    next == 0 || now + left < next ? now + left : next;
		}
	}
	vm->sig.cpu_poll_us = next;
	vm_timer_arm(vm);
}

/* Whether a signal the process would act on is pending (taking the
 * table's into its own, a due alarm, and a CPU-time timer's). */
static int
deliverable(struct vm *vm)
{
	uint64_t now;

	vm->sig.pending |= vm_proc_take_pending(vm);
	if (vm->sig.cpu_poll_us != 0)
		cpu_timers(vm, vm_now_us());
	if (vm->sig.alarm_at_us != 0 &&
	    (now = vm_now_us()) >= vm->sig.alarm_at_us) {
		vm->sig.pending |= bit(SIGALRM);
		vm->sig.alarm_at_us = vm->sig.alarm_interval_us != 0
		    ? now + vm->sig.alarm_interval_us
		    : 0;
		vm_timer_arm(vm);
	}
	return ((vm->sig.pending | own_pending(vm)) & ~vm->sig.blocked) != 0;
}

uint64_t
vm_signal_acting(struct vm *vm)
{
	uint64_t acting = 0, pending;
	int sig;

	deliverable(vm);
	pending = vm->sig.pending | own_pending(vm);
	for (sig = 1; sig <= 64 && pending != 0; sig++)
		if ((pending & bit(sig)) != 0 && vm_signal_acts(vm, sig))
			acting |= bit(sig);
	return acting;
}

int
vm_signal_interrupts(struct vm *vm)
{
	return (vm_signal_acting(vm) & ~vm->sig.blocked) != 0;
}

/*
 * Sleep until a signal arrives for the guest (or the run's time is up):
 * the host signals that wake a guest are blocked while the table is
 * checked, and ppoll takes them again atomically, so no wake-up is lost.
 */
static void
wait_signal(struct vm *vm)
{
	sigset_t block, old;

	vm_wake_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	vm_proc_waiting(vm, 1);
	while (!deliverable(vm) && !vm_timed_out())
		ppoll(NULL, 0, NULL, &old);
	vm_proc_waiting(vm, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/*
 * The host signals that wake a guest are blocked while immediate_exit
 * is checked and let in only inside ppoll: a kick that came since the
 * call began (while the VMM decoded it, or, on the trap platform, while
 * the guest ran before it) interrupts the wait as one that comes during
 * it, as KVM_RUN's immediate_exit does for the guest.
 */
int
vm_signal_wait_fd(struct vm *vm, int hfd, short events)
{
	struct pollfd p = { .fd = hfd, .events = events };
	sigset_t block, old;
	int rc = 0;

	vm_wake_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	vm_proc_waiting(vm, 1);
	if (vm->run->immediate_exit ||
	    (ppoll(&p, 1, NULL, &old) == -1 && errno == EINTR))
		rc = -EINTR;
	vm_proc_waiting(vm, 0);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * The guest's wait on host descriptors (n may be 0: a plain sleep) for
 * at most timeout_ns (-1: no limit; 0: a look). The wake signals are
 * blocked but inside ppoll, so none is lost (one that came before the
 * wait ends it at once), and the wait ends early only where the guest
 * must see it: a signal it acts on is pending (-EINTR) or the run is
 * over. A wake-up for a signal it blocks or ignores, which its sender
 * cannot tell, waits on for the time left, as Linux's waits do not wake
 * for it, in a process's only thread. ppoll's count (0: the time is
 * up), or -errno.
 */
int
vm_signal_wait_fds(
    struct vm *vm, struct pollfd *h, size_t n, int64_t timeout_ns)
{
	struct timespec zero = { 0, 0 }, ts, *tp = NULL;
	sigset_t block, old;
	uint64_t end = 0, now, left;
	int rc;

	if (timeout_ns == 0)
		return (rc = ppoll(h, n, &zero, NULL)) == -1 ? -errno : rc;
	if (timeout_ns > 0)
		end = vm_now_us() + (uint64_t)timeout_ns / 1000 + 1;
	vm_wake_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (;;) {
		if (vm_timed_out() || vm_signal_interrupts(vm)) {
			rc = -EINTR;
			break;
		}
		if (timeout_ns > 0) {
			now = vm_now_us();
			left = now < end ? end - now : 0;
			ts.tv_sec = (time_t)(left / 1000000);
			ts.tv_nsec = (long)(left % 1000000) * 1000;
			tp = &ts;
		}
		if ((rc = ppoll(h, n, tp, &old)) >= 0)
			break;
		if (errno != EINTR) {
			rc = -errno;
			break;
		}
		/* With other threads a wake-up may be the time slice's:
		 * the call ends, and is made again (restart_of). */
		if (!vm_thread_alone(vm)) {
			rc = -EINTR;
			break;
		}
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return rc;
}

/*
 * pause and rt_sigsuspend, under the mask now in force: a thread with
 * others parks, so they run on until a signal comes for it (sys_thread.c);
 * the process's only thread sleeps in the host. Either returns EINTR
 * once the signal's handler has run.
 */
static int64_t
suspend(struct vm *vm)
{
	if ((vm_signal_acting(vm) & ~vm->sig.blocked) == 0 &&
	    vm_thread_sigwait(vm))
		return 0; /* not seen: the thread's return is made */
	wait_signal(vm);
	return -EINTR;
}

int64_t
sys_rt_sigsuspend(struct vm *vm, const uint64_t a[6])
{
	uint64_t mask;
	const void *g;

	if (a[1] != 8)
		return -EINVAL;
	if ((g = vm_gptr(vm, a[0], 8)) == NULL)
		return -EFAULT;
	memcpy(&mask, g, 8);
	/* The handler runs with this mask; its sigreturn restores the
	 * one from before (vm->sig.saved). */
	vm->sig.saved = vm->sig.blocked;
	vm->sig.has_saved = 1;
	vm->sig.blocked = mask & ~UNBLOCKABLE;
	return suspend(vm);
}

int64_t
sys_pause(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return suspend(vm);
}

#define SIGWAIT_POLL_US 5000 /* a parked sigtimedwait looks this often */
/* A timeout this long (a century) is no timeout: its deadline in us
 * would not fit in 64 bits for the largest. */
#define SIGWAIT_FOREVER_S (100LL * 365 * 24 * 3600)
#define SI_TIMER_ (-2)

/* Take signal sig, pending, for sigtimedwait: its siginfo (who sent it
 * is not kept: si_pid 0, as from the kernel) and its number. */
static int64_t
take_waited(struct vm *vm, int sig, uint64_t info)
{
	int32_t si[32];

	take_pending(vm, sig);
	if (info != 0) {
		memset(si, 0, sizeof(si));
		si[0] = sig;
		si[2] = sig == SIGALRM ? SI_TIMER_ : 0 /* SI_USER */;
		si[5] = VM_GUEST_ID;
		if (vm_put(vm, info, si, sizeof(si)) != 0)
			return -EFAULT;
	}
	return sig;
}

/*
 * rt_sigtimedwait (sigwait, sigwaitinfo, sigtimedwait): take a pending
 * signal of set (blocked, as a rule) without running its handler; EINTR
 * when another, unblocked, would act (its handler runs first); EAGAIN
 * at the timeout. The process's only thread sleeps in the host, woken
 * by what wakes rt_sigsuspend; a thread with others parks and looks
 * again every few milliseconds, its call issued again towards the
 * deadline its first issue set.
 */
int64_t
sys_rt_sigtimedwait(struct vm *vm, const uint64_t a[6])
{
	uint64_t set, deadline = 0, now, *saved = vm_thread_call_deadline(vm);
	struct timespec left, *wait;
	const void *g, *gt = NULL;
	sigset_t block, old;
	int64_t ts[2], rc = 0;
	int sig, timed;

	if (a[3] != 8)
		return -EINVAL;
	if ((g = vm_gptr(vm, a[0], 8)) == NULL ||
	    (a[2] != 0 && (gt = vm_gptr(vm, a[2], sizeof(ts))) == NULL))
		return -EFAULT;
	memcpy(&set, g, 8);
	if (a[2] != 0)
		memcpy(ts, gt, sizeof(ts));
	if (a[2] != 0 && (ts[0] < 0 || ts[1] < 0 || ts[1] >= 1000000000))
		return -EINVAL;
	set &= ~UNBLOCKABLE;
	timed = a[2] != 0 && ts[0] < SIGWAIT_FOREVER_S; /* else no end */
	if (timed)
		deadline = saved != NULL && *saved != 0 ? *saved
		                                        : vm_now_us() +
		        (uint64_t)ts[0] * 1000000 + (uint64_t)ts[1] / 1000;
	vm_wake_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (;;) {
		deliverable(vm);
		for (sig = 1; sig <= 64; sig++)
			if ((vm->sig.pending | own_pending(vm)) & set &
			    bit(sig))
				break;
		if (sig <= 64) {
			rc = take_waited(vm, sig, a[1]);
			break;
		}
		now = vm_now_us();
		if ((vm_signal_acting(vm) & ~vm->sig.blocked) != 0 ||
		    vm_timed_out()) {
			rc = -EINTR;
			break;
		}
		if (timed && now >= deadline) {
			rc = -EAGAIN;
			break;
		}
		if (saved != NULL &&
		    vm_thread_park(vm, NULL, 0,
		        timed && deadline < now + SIGWAIT_POLL_US
		            ? deadline
		            : now + SIGWAIT_POLL_US,
		        VM_PARK_AGAIN)) {
			*saved = deadline;
			sigprocmask(SIG_SETMASK, &old, NULL);
			return 0; /* issued again (sys_thread.c) */
		}
		wait = NULL;
		if (timed) {
			left.tv_sec = (time_t)((deadline - now) / 1000000);
			left.tv_nsec =
			    (long)((deadline - now) % 1000000) * 1000;
			wait = &left;
		}
		ppoll(NULL, 0, wait, &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (saved != NULL)
		*saved = 0;
	return rc;
}

/* ITIMER_REAL as microseconds: value and interval. */
static void
itimer_get(struct vm *vm, int64_t out[4])
{
	uint64_t now = vm_now_us(), left = 0;

	if (vm->sig.alarm_at_us > now)
		left = vm->sig.alarm_at_us - now;
	else if (vm->sig.alarm_at_us != 0)
		left = 1;
	out[0] = (int64_t)(vm->sig.alarm_interval_us / 1000000);
	out[1] = (int64_t)(vm->sig.alarm_interval_us % 1000000);
	out[2] = (int64_t)(left / 1000000);
	out[3] = (int64_t)(left % 1000000);
}

static void
itimer_set(struct vm *vm, uint64_t value_us, uint64_t interval_us)
{
	vm->sig.alarm_at_us = value_us != 0 ? vm_now_us() + value_us : 0;
	vm->sig.alarm_interval_us = interval_us;
	vm_timer_arm(vm);
}

void
vm_signal_saved(struct vm *vm, struct vm_signals *out)
{
	uint64_t cpu;
	int i;

	*out = vm->sig;
	/* Saved only with one thread left, whose own are the process's. */
	out->pending |= own_pending(vm);
	for (i = 0; i < 2; i++)
		if (out->cpu_timer_at[i] != 0) {
			cpu = cpu_now(vm, i);
			out->cpu_timer_at[i] = out->cpu_timer_at[i] > cpu
			    ? out->cpu_timer_at[i] - cpu
			    : 1;
		}
	out->cpu_poll_us = 0;
}

void
vm_signal_restored(struct vm *vm)
{
	uint64_t left;
	int i, armed = 0;

	for (i = 0; i < 2; i++) {
		if ((left = vm->sig.cpu_timer_at[i]) == 0)
			continue;
		/* A hostile image's figure only moves its own signal. */
		vm->sig.cpu_timer_at[i] = cpu_now(vm, i) + left;
		armed = 1;
	}
	vm->sig.cpu_poll_us = armed ? vm_now_us() : 0;
	vm_timer_arm(vm);
}

/* ITIMER_VIRTUAL (which 0) or ITIMER_PROF (1) as microseconds: the
 * CPU time left and the interval. */
static void
cpu_itimer_get(struct vm *vm, int which, int64_t out[4])
{
	uint64_t at = vm->sig.cpu_timer_at[which], cpu, left = 0;
	uint64_t iv = vm->sig.cpu_timer_interval[which] / 1000;

	if (at != 0) {
		cpu = cpu_now(vm, which);
		left = at > cpu ? (at - cpu + 999) / 1000 : 1;
	}
	out[0] = (int64_t)(iv / 1000000);
	out[1] = (int64_t)(iv % 1000000);
	out[2] = (int64_t)(left / 1000000);
	out[3] = (int64_t)(left % 1000000);
}

static void
cpu_itimer_set(struct vm *vm, int which, uint64_t value_us, uint64_t iv_us)
{
	vm->sig.cpu_timer_at[which] =
	    value_us != 0 ? cpu_now(vm, which) + value_us * 1000 : 0;
	vm->sig.cpu_timer_interval[which] = iv_us * 1000;
	vm->sig.cpu_poll_us =
	    vm->sig.cpu_timer_at[0] != 0 || vm->sig.cpu_timer_at[1] != 0
	    ? vm_now_us()
	    : 0;
	cpu_timers(vm, vm_now_us());
	vm_timer_arm(vm);
}

int64_t
sys_getitimer(struct vm *vm, const uint64_t a[6])
{
	int64_t v[4] = { 0, 0, 0, 0 };

	if (a[0] > 2)
		return -EINVAL;
	if (a[0] == ITIMER_REAL)
		itimer_get(vm, v);
	else
		cpu_itimer_get(vm, (int)a[0] - 1, v);
	return vm_put(vm, a[1], v, sizeof(v));
}

int64_t
sys_setitimer(struct vm *vm, const uint64_t a[6])
{
	int64_t v[4], old[4] = { 0, 0, 0, 0 };
	const void *g;

	if (a[0] > 2)
		return -EINVAL;
	if (a[1] == 0 || (g = vm_gptr(vm, a[1], sizeof(v))) == NULL)
		return -EFAULT;
	memcpy(v, g, sizeof(v));
	if (v[0] < 0 || v[2] < 0 || v[1] < 0 || v[1] >= 1000000 || v[3] < 0 ||
	    v[3] >= 1000000 || v[0] > (1LL << 31) || v[2] > (1LL << 31))
		return -EINVAL;
	if (a[0] != ITIMER_REAL) {
		cpu_itimer_get(vm, (int)a[0] - 1, old);
		cpu_itimer_set(vm, (int)a[0] - 1,
		    (uint64_t)v[2] * 1000000 + (uint64_t)v[3],
		    (uint64_t)v[0] * 1000000 + (uint64_t)v[1]);
		return a[2] != 0 ? vm_put(vm, a[2], old, sizeof(old)) : 0;
	}
	itimer_get(vm, old);
	itimer_set(vm, (uint64_t)v[2] * 1000000 + (uint64_t)v[3],
	    (uint64_t)v[0] * 1000000 + (uint64_t)v[1]);
	return a[2] != 0 ? vm_put(vm, a[2], old, sizeof(old)) : 0;
}

int64_t
sys_alarm(struct vm *vm, const uint64_t a[6])
{
	int64_t old[4];
	uint32_t secs = (uint32_t)a[0];

	itimer_get(vm, old);
	itimer_set(vm, (uint64_t)secs * 1000000, 0);
	/* The seconds that were left, rounded up as Linux does. */
	return old[2] + (old[3] >= 500000 ? 1 : 0) +
	    (old[2] == 0 && old[3] > 0 && old[3] < 500000 ? 1 : 0);
}

/* ---- frames -------------------------------------------------------------- */

void
vm_fpu_to_fxsave(const struct kvm_fpu *f, uint8_t x[FXSAVE_SIZE])
{
	uint32_t mask = 0xffbf;

	memset(x, 0, FXSAVE_SIZE);
	memcpy(x + 0, &f->fcw, 2);
	memcpy(x + 2, &f->fsw, 2);
	x[4] = f->ftwx;
	memcpy(x + 6, &f->last_opcode, 2);
	memcpy(x + 8, &f->last_ip, 8);
	memcpy(x + 16, &f->last_dp, 8);
	memcpy(x + 24, &f->mxcsr, 4);
	memcpy(x + 28, &mask, 4);
	memcpy(x + 32, f->fpr, 128);
	memcpy(x + 160, f->xmm, 256);
}

void
vm_fxsave_to_fpu(const uint8_t x[FXSAVE_SIZE], struct kvm_fpu *f)
{
	memset(f, 0, sizeof(*f));
	memcpy(&f->fcw, x + 0, 2);
	memcpy(&f->fsw, x + 2, 2);
	f->ftwx = x[4];
	memcpy(&f->last_opcode, x + 6, 2);
	memcpy(&f->last_ip, x + 8, 8);
	memcpy(&f->last_dp, x + 16, 8);
	memcpy(&f->mxcsr, x + 24, 4);
	/* Reserved MXCSR bits would fault the host's restore: dropped. */
	f->mxcsr &= 0xffbf;
	memcpy(f->fpr, x + 32, 128);
	memcpy(f->xmm, x + 160, 256);
}

/* The general registers in sigcontext order (r8..r15, rdi, rsi, rbp,
 * rbx, rdx, rax, rcx, rsp, rip, eflags). */
static void
regs_to_mc(const struct kvm_regs *r, uint64_t mc[18])
{
	const uint64_t v[18] = { r->r8, r->r9, r->r10, r->r11, r->r12, r->r13,
		r->r14, r->r15, r->rdi, r->rsi, r->rbp, r->rbx, r->rdx, r->rax,
		r->rcx, r->rsp, r->rip, r->rflags };

	memcpy(mc, v, sizeof(v));
}

/*
 * Run the handler of sig: the frame goes below the interrupted stack's
 * red zone (or at the top of the alternate stack), the registers are
 * set for the handler's entry. 0, or -1 when the frame does not fit in
 * guest memory (the process then dies of SIGSEGV, as on Linux).
 */
static int
setup_frame(struct vm *vm, int sig, int code, uint64_t addr)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	struct vm_sigaction *act = &vm->sig.act[sig];
	struct kvm_fpu fpu;
	uint64_t sp = r->rsp, fpaddr, frame, mc[18], v;
	uint8_t *g, fx[FXSAVE_SIZE];
	uint16_t segs[4] = { SEL_UCODE, 0, 0, SEL_UDATA };
	uint64_t mask = vm->sig.has_saved ? vm->sig.saved : vm->sig.blocked;
	int32_t info[4] = { sig, 0, code, 0 };

	if (!(act->flags & SA_RESTORER_))
		return -1; /* x86-64 has no default restorer */
	if ((act->flags & SA_ONSTACK_) && vm->sig.ss_size != 0 &&
	    !on_altstack(vm, sp))
		sp = vm->sig.ss_sp + vm->sig.ss_size;
	else
		sp -= REDZONE;
	fpaddr = (sp - FXSAVE_SIZE) & ~63ULL;
	frame = ((fpaddr - FRAME_SIZE) & ~15ULL) - 8;
	if (fpaddr > sp || frame > fpaddr ||
	    (g = vm_gptr(vm, frame, fpaddr + FXSAVE_SIZE - frame)) == NULL)
		return -1;
	if (vm_fpu_get(vm, &fpu) == -1)
		return -1;
	vm_fpu_to_fxsave(&fpu, fx);
	memset(g, 0, fpaddr + FXSAVE_SIZE - frame);
	memcpy(g + (fpaddr - frame), fx, FXSAVE_SIZE);
	memcpy(g, &act->restorer, 8);
	v = 0x6; /* UC_SIGCONTEXT_SS | UC_STRICT_RESTORE_SS */
	memcpy(g + UC_OFF, &v, 8);
	memcpy(g + UC_OFF + 16, &vm->sig.ss_sp, 8);
	v = vm->sig.ss_size == 0      ? SS_DISABLE_
	    : on_altstack(vm, r->rsp) ? SS_ONSTACK_
	                              : 0;
	memcpy(g + UC_OFF + 24, &v, 4);
	memcpy(g + UC_OFF + 32, &vm->sig.ss_size, 8);
	regs_to_mc(r, mc);
	memcpy(g + MC_OFF, mc, sizeof(mc));
	memcpy(g + MC_OFF + 144, segs, sizeof(segs));
	memcpy(g + MC_OFF + 152 + 8, &(uint64_t){ 0 }, 8); /* trapno */
	memcpy(g + MC_OFF + 152 + 16, &mask, 8); /* oldmask */
	memcpy(g + MC_OFF + 152 + 24, &addr, 8); /* cr2 */
	memcpy(g + MC_OFF + 184, &fpaddr, 8);
	memcpy(g + MASK_OFF, &mask, 8);
	memcpy(g + INFO_OFF, info, sizeof(info));
	memcpy(g + INFO_OFF + 16, &addr, 8); /* si_addr, or si_pid 0 */

	vm->sig.has_saved = 0;
	vm->sig.blocked |= act->mask;
	if (!(act->flags & SA_NODEFER_))
		vm->sig.blocked |= bit(sig);
	vm->sig.blocked &= ~UNBLOCKABLE;
	r->rdi = (uint64_t)sig;
	r->rsi = frame + INFO_OFF;
	r->rdx = frame + UC_OFF;
	r->rax = 0;
	r->rsp = frame;
	r->rip = act->handler;
	r->rflags &= ~0x400ULL; /* DF clear, as the ABI wants */
	if (act->flags & SA_RESETHAND_)
		memset(act, 0, sizeof(*act));
	/* A clean x87/SSE state for the handler, as Linux gives it. */
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	vm_fpu_set(vm, &fpu);
	vm->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	publish(vm);
	return 0;
}

int64_t
sys_rt_sigreturn(struct vm *vm, const uint64_t a[6])
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	uint64_t uc = r->rsp, mc[18], mask, fpaddr;
	struct kvm_fpu fpu;
	const uint8_t *g, *fx;

	(void)a;
	/* The handler's `ret` popped pretcode: rsp is at the ucontext. */
	if ((g = vm_gptr(vm, uc, FRAME_SIZE - UC_OFF)) == NULL) {
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: rt_sigreturn with a bad frame at 0x%llx",
		    (unsigned long long)uc);
		return 0;
	}
	memcpy(mc, g + (MC_OFF - UC_OFF), sizeof(mc));
	memcpy(&fpaddr, g + (MC_OFF - UC_OFF) + 184, 8);
	memcpy(&mask, g + (MASK_OFF - UC_OFF), 8);
	if (fpaddr != 0) {
		if ((fx = vm_gptr(vm, fpaddr, FXSAVE_SIZE)) == NULL) {
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: rt_sigreturn with a bad FPU state");
			return 0;
		}
		vm_fxsave_to_fpu(fx, &fpu);
		vm_fpu_set(vm, &fpu);
	}
	r->r8 = mc[0];
	r->r9 = mc[1];
	r->r10 = mc[2];
	r->r11 = mc[3];
	r->r12 = mc[4];
	r->r13 = mc[5];
	r->r14 = mc[6];
	r->r15 = mc[7];
	r->rdi = mc[8];
	r->rsi = mc[9];
	r->rbp = mc[10];
	r->rbx = mc[11];
	r->rdx = mc[12];
	r->rax = mc[13];
	r->rcx = mc[14];
	r->rsp = mc[15];
	r->rip = mc[16];
	r->rflags = (mc[17] & RFLAGS_USER) | RFLAGS_FIXED;
	vm->sig.blocked = mask & ~UNBLOCKABLE;
	vm_set_user_segments(vm);
	vm->regs_replaced = 1;
	return (int64_t)r->rax;
}

/* ---- delivery ------------------------------------------------------------ */

/* The default action of sig: nothing, or the end of the process. */
static void
default_action(struct vm *vm, int sig)
{
	if (vm_signal_default_ignored(sig))
		return;
	vm->term_sig = sig;
	vm_stop(vm, VMM_EXITED, 128 + sig, "killed by signal %d", sig);
}

/* What may become of a call that returned -EINTR. */
#define RESTART_UNSEEN 1u /* made again when no handler runs */
#define RESTART_HANDLED 2u /* and after a handler with SA_RESTART */

/*
 * Deliver one pending, unblocked signal that acts, if any (those
 * ignored before it are dropped). restart: what may become of the call
 * that just returned -EINTR. A thread parked in pause or rt_sigsuspend
 * that lets a pending signal through takes it, rather than the running
 * thread: the signal is what it waits for.
 */
static void
deliver(struct vm *vm, uint64_t nr, unsigned restart)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	uint64_t ready;
	int sig;

	/* Only the process's signals: one sent to the running thread is
	 * its own to take. (vm_signal_acting has brought the table's in.) */
	if (vm_thread_take_signal(vm, vm_signal_acting(vm) & vm->sig.pending,
	        nr, (restart & RESTART_UNSEEN) != 0))
		restart = 0; /* the thread switched in returns EINTR */
	for (;;) {
		ready = (vm->sig.pending | own_pending(vm)) & ~vm->sig.blocked;
		if (ready == 0) {
			if (vm->sig.has_saved) { /* woke for nothing */
				vm->sig.blocked = vm->sig.saved;
				vm->sig.has_saved = 0;
			}
			/* Woken for a signal it blocks or ignores, or for
			 * none (the run's timer, a context's pause): no
			 * handler runs, so the call is made again, as
			 * Linux restarts it (it never returns EINTR then).
			 * A sender cannot see this process's mask, and
			 * wakes it for a blocked signal too. */
			if ((restart & RESTART_UNSEEN) &&
			    (int64_t)r->rax == -EINTR) {
				r->rax = nr;
				r->rip -= 2; /* back onto the `syscall` */
			}
			return;
		}
		sig = __builtin_ctzll(ready) + 1;
		take_pending(vm, sig);
		if (vm->sig.act[sig].handler == SIG_IGN_ ||
		    (vm->sig.act[sig].handler == SIG_DFL_ &&
		        vm_signal_default_ignored(sig)))
			continue;
		if (vm->sig.act[sig].handler == SIG_DFL_) {
			default_action(vm, sig);
			return;
		}
		break;
	}
	if ((restart & RESTART_HANDLED) && (int64_t)r->rax == -EINTR &&
	    (vm->sig.act[sig].flags & SA_RESTART_)) {
		r->rax = nr;
		r->rip -= 2;
	}
	if (setup_frame(vm, sig, 0 /* SI_USER */, 0) != 0) {
		vm->term_sig = SIGSEGV;
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: no room for the frame of signal %d", sig);
	}
}

/*
 * What Linux makes of the call nr cut short by a signal (registers r as
 * it returned: the arguments are still in them): SA_RESTART restarts
 * the reads, writes, child waits, socket calls and lock waits; a poll
 * with no deadline (poll, select, epoll_wait and their p- forms) is
 * made again only where no handler runs (with one it returns EINTR,
 * SA_RESTART or not). The waits themselves go on where no handler runs
 * (vm_signal_wait_fds) where they can; this catches the rest. A poll
 * with a deadline is not made again here: it would start its whole
 * time again.
 */
static unsigned
restart_of(uint64_t nr, const struct kvm_regs *r)
{
	switch (nr) {
	case 0: /* read */
	case 1: /* write */
	case 19: /* readv */
	case 20: /* writev */
	case 61: /* wait4 */
	case 247: /* waitid */
	case 43: /* accept */
	case 288: /* accept4 */
	case 44: /* sendto */
	case 45: /* recvfrom */
	case 46: /* sendmsg */
	case 47: /* recvmsg */
	case 72: /* fcntl (F_SETLKW, F_OFD_SETLKW) */
	case 73: /* flock */
	case 275: /* splice */
	case 276: /* tee */
		return RESTART_UNSEEN | RESTART_HANDLED;
	case 7: /* poll */
		return (int32_t)r->rdx < 0 ? RESTART_UNSEEN : 0;
	case 232: /* epoll_wait */
	case 281: /* epoll_pwait */
		return (int32_t)r->r10 < 0 ? RESTART_UNSEEN : 0;
	case 271: /* ppoll */
		return r->rdx == 0 ? RESTART_UNSEEN : 0;
	case 441: /* epoll_pwait2 */
		return r->r10 == 0 ? RESTART_UNSEEN : 0;
	case 23: /* select */
	case 270: /* pselect6 */
		return r->r8 == 0 ? RESTART_UNSEEN : 0;
	default:
		return 0;
	}
}

void
vm_signal_after_syscall(struct vm *vm, uint64_t nr)
{
	vm->switched_in = 0;
	vm->signal_held_us = 0;
	vm->signal_holds = 0;
	deliver(vm, nr, restart_of(nr, &vm->run->s.regs.regs));
}

void
vm_signal_after_kick(struct vm *vm)
{
	uint64_t rip = vm->run->s.regs.regs.rip;

	/* Only between the program's own instructions, never in a stub
	 * (its exit follows at once and delivers then). */
	if (rip >= GUEST_KERNEL && rip < GUEST_KERNEL + VM_PAGE)
		return;
	/* Nor in the calls the guest answers itself, which may have an
	 * answer half made (fastcall.c): a handler's own calls would see
	 * it so. They take microseconds; a kick again after a few finds
	 * the program past them. */
	if (vm_fast_inside(vm, rip) &&
	    (vm->signal_held_us == 0 || vm->signal_holds < SIGNAL_HOLD_TRIES ||
	        vm_now_us() - vm->signal_held_us < SIGNAL_HOLD_MAX_US)) {
		if (deliverable(vm)) {
			if (vm->signal_held_us == 0)
				vm->signal_held_us = vm_now_us();
			vm->signal_holds++;
			vm->signal_retry_us = vm_now_us() + SIGNAL_RETRY_US;
			vm_timer_arm(vm);
		}
		return;
	}
	vm->signal_held_us = 0;
	vm->signal_holds = 0;
	if (vm->signal_retry_us != 0) {
		vm->signal_retry_us = 0;
		vm_timer_arm(vm);
	}
	/* A thread just switched in returns from its own call, if it was
	 * in one (a parked call a signal woke, EINTR): that call is made
	 * again where Linux would restart it, as at a call's return. */
	if (vm->switched_in) {
		vm->switched_in = 0;
		deliver(vm, vm->call_nr,
		    restart_of(vm->call_nr, &vm->run->s.regs.regs));
		return;
	}
	deliver(vm, 0, 0);
}

int
vm_signal_fault(struct vm *vm, unsigned vector, uint64_t rip, uint64_t rsp,
    uint64_t rflags, uint64_t addr, uint64_t ec)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	int sig, code;

	switch (vector) {
	case 0:
	case 16:
	case 19:
		sig = SIGFPE;
		code = vector == 0 ? 1 /* FPE_INTDIV */ : 0;
		break;
	case 6:
		sig = SIGILL;
		code = 2; /* ILL_ILLOPN */
		break;
	case 3:
	case 1:
		sig = SIGTRAP;
		code = 0x80; /* SI_KERNEL */
		break;
	case 17:
		sig = SIGBUS;
		code = 1; /* BUS_ADRALN */
		break;
	case 13:
	case 14:
	case 12:
		sig = SIGSEGV;
		code = vector != 14 ? 0x80 /* SI_KERNEL */
		    : (ec & 1)      ? 2 /* SEGV_ACCERR */
		                    : 1 /* SEGV_MAPERR */;
		break;
	default:
		return 0;
	}
	if (vm->sig.act[sig].handler <= SIG_IGN_ ||
	    (vm->sig.blocked & bit(sig)))
		return 0; /* Linux kills a process that blocks or ignores it */
	r->rip = rip;
	r->rsp = rsp;
	r->rflags = (rflags & RFLAGS_USER) | RFLAGS_FIXED;
	vm_set_user_segments(vm);
	if (setup_frame(vm, sig, code, vector == 14 ? addr : rip) != 0)
		return 0;
	return 1;
}

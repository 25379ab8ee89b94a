/*
 * Threads (docs/vmm.md, "Threads"): guest threads share the process's one
 * vCPU, multiplexed by the VMM, so the vm process stays single-threaded
 * and its seccomp list does not grow. Each thread is a saved register
 * set (general registers, FS and GS bases, x87/SSE state, signal mask);
 * the running one lives in the vCPU. The VMM switches threads when the
 * running one waits on a futex, yields or exits, and when its time slice
 * ends (the host's timer kicks KVM_RUN), so a thread that spins cannot
 * starve the others nor outlast the run's time limit.
 *
 * A call that would block in the host (a sleep, poll, epoll_wait, a read
 * of an empty pipe) parks its thread instead while the process has
 * others (vm_thread_park): the thread waits on its host descriptors and
 * deadline beside the futex waiters, and the call is issued again once a
 * descriptor is ready (wait4, with no descriptor to wait on, every few
 * milliseconds). Workspace file calls still block the process's other
 * threads with them.
 *
 * pause and rt_sigsuspend park their thread too (vm_thread_sigwait),
 * waiting under its own mask for a signal, with no descriptor or
 * deadline: signals are the process's, so whoever finds one pending that
 * a waiter lets through (delivery at a call's return or a kick, or the
 * idle loop) makes that waiter the running thread to take it. A waiter
 * comes before the running thread, as Linux gives a process's signal to
 * a thread that waits for it rather than one that happens to run: a
 * Python program's main thread in signal.pause() must be the one woken,
 * since only it runs the Python handlers.
 */
#include <sys/ioctl.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <poll.h>
#include <unistd.h>

#include "host/vmm/abi.h"
#include "host/vmm/sys.h"
#include "host/vmm/trap_abi.h"
#include "host/vmm/vm_int.h"

#define THREADS_MAX 64 /* the bits of vm_threads' live */

_Static_assert(TRAP_FPU_MAX >= sizeof(struct kvm_xsave),
    "a thread's FPU area holds KVM's XSAVE state too");
#define SLICE_US 10000
#define PARK_FDS_MAX 16 /* host descriptors one parked call waits on */
#define NO_FUTEX UINT64_MAX /* a parked call's futex: none can match */
#define NO_CALL UINT64_MAX /* a thread stopped between instructions */

#define FUTEX_CMD_MASK 0x7f
#define FUTEX_WAIT_ 0
#define FUTEX_WAKE_ 1
#define FUTEX_REQUEUE_ 3
#define FUTEX_CMP_REQUEUE_ 4
#define FUTEX_WAKE_OP_ 5
#define FUTEX_WAIT_BITSET_ 9
#define FUTEX_WAKE_BITSET_ 10
#define FUTEX_CLOCK_REALTIME_ 256

#define CLONE_VM_ 0x00000100ULL
#define CLONE_FS_ 0x00000200ULL
#define CLONE_FILES_ 0x00000400ULL
#define CLONE_SIGHAND_ 0x00000800ULL
#define CLONE_THREAD_ 0x00010000ULL
#define CLONE_SYSVSEM_ 0x00040000ULL
#define CLONE_SETTLS_ 0x00080000ULL
#define CLONE_PARENT_SETTID_ 0x00100000ULL
#define CLONE_CHILD_CLEARTID_ 0x00200000ULL
#define CLONE_DETACHED_ 0x00400000ULL
#define CLONE_CHILD_SETTID_ 0x01000000ULL

#define RFLAGS_USER 0x254dd5ULL
#define RFLAGS_FIXED 0x2ULL

enum { T_FREE = 0, T_RUN, T_WAIT };

struct vm_thread {
	int state;
	int32_t tid;
	struct kvm_regs regs;
	uint64_t fs_base, gs_base;
	struct kvm_fpu fpu;
	/* The whole FPU state beside fpu's x87 and SSE: the AVX and
	 * AVX-512 registers above them, where glibc's memcpy holds data.
	 * The trap platform: the signal frame's area (xlen bytes); KVM:
	 * KVM_GET_XSAVE's (xlen 1 where the guest has XSAVE). */
	uint8_t xarea[TRAP_FPU_MAX];
	uint32_t xlen;
	uint64_t blocked;
	/* Signals sent to this thread alone (tgkill, tkill, raise): only it
	 * takes them, when it runs (vm_thread_pending). */
	uint64_t pending;
	uint64_t saved; /* rt_sigsuspend's mask to restore, if has_saved */
	int has_saved;
	/* The call whose return its registers hold when it runs again, or
	 * NO_CALL: what SA_RESTART may issue again after an EINTR. */
	uint64_t nr;
	uint64_t clear_tid; /* CLONE_CHILD_CLEARTID, set_tid_address */
	uint64_t futex; /* T_WAIT: the address */
	uint32_t bitset;
	/* T_WAIT on a futex in a shared mapping (shmap.c), whose wake may
	 * come from another process: the value it waited on. */
	int fshared;
	uint32_t fval;
	uint64_t deadline_us; /* T_WAIT: 0 none */
	int64_t timeout_ret; /* T_WAIT: the call's value at its deadline */
	int sigwait; /* T_WAIT: pause or rt_sigsuspend, under blocked */
	int sigwoke; /* woken from that for a signal, not yet delivered */
	/* A parked call (vm_thread_park): its registers are those of the
	 * `syscall` itself, issued again once one of these is ready. */
	int reissue;
	int npfd;
	struct pollfd pfd[PARK_FDS_MAX];
	/* A timed call issued again and again while parked (sigtimedwait):
	 * its deadline from the first issue (vm_now_us), 0 none. */
	uint64_t call_deadline_us;
};

struct vm_threads {
	struct vm_thread t[THREADS_MAX];
	int cur;
	/* Bit i: t[i] is not T_FREE. An entry is 16 KiB (its FPU area), so
	 * a walk that read each one's state touched 64 pages: in every new
	 * process (the table is made at set_tid_address), 64 page faults. */
	uint64_t live;
};

_Static_assert(THREADS_MAX <= 64, "live has a bit for each thread");

static int
live_at(const struct vm_threads *ts, int i)
{
	return (int)((ts->live >> i) & 1);
}

/* Whether threads other than the current one are live. */
static int
others_live(const struct vm_threads *ts)
{
	return (ts->live & ~(1ULL << ts->cur)) != 0;
}

/* The thread table, made at the first thread or set_tid_address. */
static struct vm_threads *
table(struct vm *vm)
{
	struct vm_threads *ts = vm->threads;

	if (ts == NULL && (ts = calloc(1, sizeof(*ts))) != NULL) {
		ts->t[0].state = T_RUN;
		ts->t[0].tid = vm->pid;
		ts->cur = 0;
		ts->live = 1;
		vm->threads = ts;
	}
	return ts;
}

/* After fork or execve only the calling thread is left, as the
 * process's one thread (its tid the pid). */
int
vm_thread_alone(const struct vm *vm)
{
	return vm->threads == NULL || !others_live(vm->threads);
}

uint64_t *
vm_thread_call_deadline(struct vm *vm)
{
	return vm->threads != NULL
	    ? &vm->threads->t[vm->threads->cur].call_deadline_us
	    : NULL;
}

int
vm_thread_ids(const struct vm *vm, int32_t *tids, int max)
{
	const struct vm_threads *ts = vm->threads;
	int i, n = 0;

	if (ts == NULL) {
		if (max > 0)
			tids[0] = vm->pid;
		return 1;
	}
	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i)) {
			if (n < max)
				tids[n] = ts->t[i].tid;
			n++;
		}
	return n;
}

void
vm_thread_reset(struct vm *vm)
{
	/* The thread left (execve's) keeps what was sent to it alone, now
	 * its process's only thread. */
	if (vm->threads != NULL)
		vm->sig.pending |= vm->threads->t[vm->threads->cur].pending;
	free(vm->threads);
	vm->threads = NULL;
	vm->slice_at_us = 0;
}

static int
runnable_others(struct vm_threads *ts)
{
	int i, n = 0;

	for (i = 0; i < THREADS_MAX; i++)
		if (i != ts->cur && live_at(ts, i) && ts->t[i].state == T_RUN)
			n++;
	return n;
}

/* Save the running thread's state from the vCPU. */
static void
save(struct vm *vm, struct vm_thread *t)
{
	t->regs = vm->run->s.regs.regs;
	t->fs_base = vm->run->s.regs.sregs.fs.base;
	t->gs_base = vm->run->s.regs.sregs.gs.base;
	vm_fpu_get(vm, &t->fpu);
	if (vm->on_trap)
		t->xlen =
		    (uint32_t)vm_trap_fpu_area(vm, t->xarea, sizeof(t->xarea));
	else
		t->xlen = ((vm_cpuid_reg(1, 0, 2) >> 26) & 1) &&
		    ioctl(vm->vcpufd, KVM_GET_XSAVE, t->xarea) == 0;
	t->blocked = vm->sig.blocked;
	t->saved = vm->sig.saved;
	t->has_saved = vm->sig.has_saved;
	t->nr = NO_CALL;
}

static void
load(struct vm *vm, struct vm_thread *t)
{
	vm->run->s.regs.regs = t->regs;
	vm->run->s.regs.sregs.fs.base = t->fs_base;
	vm->run->s.regs.sregs.gs.base = t->gs_base;
	vm_fpu_set(vm, &t->fpu);
	if (t->xlen != 0 && vm->on_trap)
		vm_trap_fpu_load_area(vm, t->xarea, t->xlen);
	else if (t->xlen != 0)
		(void)ioctl(vm->vcpufd, KVM_SET_XSAVE, t->xarea);
	vm->sig.blocked = t->blocked;
	vm->sig.saved = t->saved;
	vm->sig.has_saved = t->has_saved;
	vm->call_nr = t->nr;
	vm_set_user_segments(vm);
}

/* The next runnable thread after cur, round robin; -1 if none. */
static int
next_runnable(struct vm_threads *ts, int include_cur)
{
	int i, k;

	for (i = 1; i <= THREADS_MAX; i++) {
		k = (ts->cur + i) % THREADS_MAX;
		if (live_at(ts, k) && ts->t[k].state == T_RUN &&
		    (k != ts->cur || include_cur))
			return k;
	}
	return -1;
}

/* Whether a waiting thread has a deadline or descriptors to look at,
 * which a running thread's slices must give the chance to wake. */
static int
timed_waiters(struct vm_threads *ts)
{
	int i;

	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    (ts->t[i].deadline_us != 0 || ts->t[i].npfd > 0))
			return 1;
	return 0;
}

static void
set_slice(struct vm *vm)
{
	struct vm_threads *ts = vm->threads;

	vm->slice_at_us =
	    ts != NULL && (runnable_others(ts) > 0 || timed_waiters(ts))
	    ? vm_now_us() + SLICE_US
	    : 0;
	vm_timer_arm(vm);
}

/* A waiting thread runs again, its call returning ret (a parked call
 * returns instead of being issued again: RIP past the `syscall`). */
static void
resume(struct vm_thread *t, int64_t ret)
{
	t->state = T_RUN;
	t->sigwoke = t->sigwait;
	t->sigwait = 0;
	if (t->reissue && ret == VM_PARK_AGAIN) {
		t->npfd = 0; /* its deadline: issued again as it stands */
		return;
	}
	t->regs.rax = (uint64_t)ret;
	t->call_deadline_us = 0; /* the call is over, whatever ended it */
	if (t->reissue) {
		t->regs.rip = t->regs.rcx;
		t->reissue = 0;
		t->npfd = 0;
	}
}

/* Wake the waiters on a futex whose deadline passed. */
static void
expire(struct vm_threads *ts, uint64_t now)
{
	int i;

	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    ts->t[i].deadline_us != 0 && now >= ts->t[i].deadline_us)
			resume(&ts->t[i], ts->t[i].timeout_ret);
}

/* Parked calls whose descriptors are ready now, or within timeout (a
 * ppoll with the wake-up signals unblocked: sigmask; NULL, none). */
static void
wake_ready(struct vm_threads *ts, const struct timespec *timeout,
    const sigset_t *sigmask)
{
	static struct pollfd all[THREADS_MAX * PARK_FDS_MAX];
	int i, j, n = 0, rc;

	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    ts->t[i].npfd > 0) {
			memcpy(&all[n], ts->t[i].pfd,
			    (size_t)ts->t[i].npfd * sizeof(all[0]));
			n += ts->t[i].npfd;
		}
	if (n == 0 && timeout != NULL && timeout->tv_sec == 0 &&
	    timeout->tv_nsec == 0)
		return;
	if ((rc = ppoll(all, (nfds_t)n, timeout, sigmask)) <= 0)
		return;
	for (i = 0, n = 0; i < THREADS_MAX; i++) {
		if (!live_at(ts, i) || ts->t[i].state != T_WAIT ||
		    ts->t[i].npfd == 0)
			continue;
		for (j = 0; j < ts->t[i].npfd; j++)
			if (all[n + j].fd >= 0 && all[n + j].revents != 0)
				break;
		n += ts->t[i].npfd;
		if (j < ts->t[i].npfd) {
			ts->t[i].state = T_RUN;
			ts->t[i].npfd = 0; /* issued again as it stands */
		}
	}
}

/* The thread waiting in pause or rt_sigsuspend that lets one of sigs
 * through, the main thread first (Linux's first choice for a process's
 * signal); -1 if none. */
static int
signal_waiter(struct vm *vm, struct vm_threads *ts, uint64_t sigs)
{
	int i, k = -1;

	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    ts->t[i].sigwait && (sigs & ~ts->t[i].blocked) != 0 &&
		    (k < 0 || ts->t[i].tid == vm->pid))
			k = i;
	return k;
}

/* Every thread waits and sigs are pending: wake one that does not
 * block them, with EINTR, to take one; a thread waiting for a signal
 * before one waiting on a futex or a parked call. 0 if all block them. */
static int
wake_for_signal(struct vm *vm, struct vm_threads *ts, uint64_t sigs)
{
	int i, k;

	if ((k = signal_waiter(vm, ts, sigs)) < 0)
		for (i = 0; i < THREADS_MAX && k < 0; i++)
			if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
			    (sigs & ~ts->t[i].blocked) != 0)
				k = i;
	if (k < 0)
		return 0;
	resume(&ts->t[k], -EINTR);
	return 1;
}

#define SHARED_WAIT_NS 10000000 /* a host futex wait, at most */
#define SHARED_POLL_NS 2000000 /* a look at shared words, at least */

/*
 * Nothing can run and threads wait on futexes in shared mappings: a
 * wake from another process is the host's FUTEX_WAKE on the file's page
 * (futex_wake), which the host keys by file and offset, so the vm
 * processes' own mappings of it meet. One such waiter with nothing else
 * to wait on waits there (SHARED_WAIT_NS at most: a signal that comes
 * just before the wait is seen that much later); otherwise the idle loop
 * looks at the words every SHARED_POLL_NS. A word that changed wakes its
 * waiter, as a futex waiter may always wake early (glibc checks again).
 * 1 if it waited or woke a thread; 0 to wait as before, within *tmo.
 */
static int
shared_idle(struct vm *vm, struct vm_threads *ts, struct timespec *tmo,
    struct timespec **tp, const sigset_t *old)
{
	struct timespec wait = { 0, SHARED_WAIT_NS }, *wp = &wait;
	const uint32_t *w;
	sigset_t cur;
	int i, k = -1, nshared = 0, fds = 0, woke = 0;

	for (i = 0; i < THREADS_MAX; i++) {
		if (!live_at(ts, i) || ts->t[i].state != T_WAIT)
			continue;
		fds += ts->t[i].npfd;
		if (!ts->t[i].fshared)
			continue;
		w = vm_gptr(vm, ts->t[i].futex, 4);
		if (w == NULL ||
		    __atomic_load_n(w, __ATOMIC_SEQ_CST) != ts->t[i].fval) {
			resume(&ts->t[i], 0);
			woke = 1;
			continue;
		}
		nshared++;
		k = i;
	}
	if (woke)
		return 1;
	if (nshared == 0)
		return 0;
	if (nshared > 1 || fds > 0) {
		if (*tp == NULL || tmo->tv_sec > 0 ||
		    tmo->tv_nsec > SHARED_POLL_NS) {
			tmo->tv_sec = 0;
			tmo->tv_nsec = SHARED_POLL_NS;
			*tp = tmo;
		}
		return 0;
	}
	if (*tp != NULL && tmo->tv_sec == 0 && tmo->tv_nsec < SHARED_WAIT_NS)
		wp = tmo;
	sigprocmask(SIG_SETMASK, old, &cur);
	if (syscall(SYS_futex, vm->mem + ts->t[k].futex, FUTEX_WAIT_,
	        ts->t[k].fval, wp, NULL, 0) == 0)
		resume(&ts->t[k], 0);
	sigprocmask(SIG_SETMASK, &cur, NULL);
	return 1;
}

/*
 * Nothing can run: sleep until a futex deadline, a signal or the run's
 * end (the host signals that wake a guest unblocked only inside ppoll,
 * so no wake-up is lost). A signal wakes a waiting thread that does not
 * block it; one that every thread blocks stays pending, and the process
 * sleeps on.
 */
static void
idle(struct vm *vm, struct vm_threads *ts)
{
	sigset_t block, old;
	struct timespec tmo, *tp;
	uint64_t now, first, sigs;
	int i;

	/* No slice while nothing runs: the host's one timer is for the
	 * run's limit and the guest's alarm again. A slice's left armed
	 * would take its place, and a process whose threads all wait
	 * would outlive its time limit. */
	vm->slice_at_us = 0;
	vm_timer_arm(vm);
	vm_wake_signals(&block);
	sigprocmask(SIG_BLOCK, &block, &old);
	for (;;) {
		now = vm_now_us();
		expire(ts, now);
		if (next_runnable(ts, 1) >= 0 || vm_timed_out() ||
		    vm_snap_asked(vm))
			break;
		/* The process's signals; a thread's own woke it when sent. */
		if ((sigs = vm_signal_acting(vm) & vm->sig.pending) != 0 &&
		    wake_for_signal(vm, ts, sigs))
			break;
		for (i = 0, first = 0; i < THREADS_MAX; i++)
			if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
			    ts->t[i].deadline_us != 0 &&
			    (first == 0 || ts->t[i].deadline_us < first))
				first = ts->t[i].deadline_us;
		tp = NULL;
		if (first != 0) {
			tmo.tv_sec = (time_t)((first - now) / 1000000);
			tmo.tv_nsec = (long)((first - now) % 1000000) * 1000;
			tp = &tmo;
		}
		if (shared_idle(vm, ts, &tmo, &tp, &old))
			continue;
		wake_ready(ts, tp, &old);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
}

static const struct timespec no_wait;

/* The running thread has been saved (and is no longer T_RUN, or may
 * stay so): put the next one on the vCPU. */
static void
switch_away(struct vm *vm, struct vm_threads *ts)
{
	int next;

	wake_ready(ts, &no_wait, NULL);
	if ((next = next_runnable(ts, 1)) < 0) {
		idle(vm, ts);
		next = next_runnable(ts, 1);
	}
	if (next < 0 && vm_snap_asked(vm))
		vm_snap_unsaved(vm, "it has other threads");
	if (next < 0) {
		/* Only the run's end woke us (or a pause): resume the thread
		 * that waited, interrupted; the loop stops before it runs. */
		next = ts->cur;
		resume(&ts->t[next], -EINTR);
	}
	ts->cur = next;
	load(vm, &ts->t[next]);
	vm->regs_replaced = 1;
	set_slice(vm);
}

/* The current call returns ret to the thread, later: its registers
 * are made as the return would leave them, then saved. */
static void
save_returning(struct vm *vm, struct vm_thread *t, int64_t ret)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;

	r->rax = (uint64_t)ret;
	r->rip = r->rcx;
	r->rflags = (r->r11 & RFLAGS_USER) | RFLAGS_FIXED;
	save(vm, t);
}

void
vm_thread_preempt(struct vm *vm)
{
	struct vm_threads *ts = vm->threads;
	uint64_t rip = vm->run->s.regs.regs.rip;

	if (ts == NULL || vm->slice_at_us == 0 || vm_now_us() < vm->slice_at_us)
		return;
	if (rip >= GUEST_KERNEL && rip < GUEST_KERNEL + VM_PAGE) {
		/* In a stub, whose exit comes at once: the switch is made as
		 * that call returns (kvm.c). The timer is one-shot: were it
		 * left at that, a thread that makes system calls all the
		 * time would never be switched away from again, and the run
		 * would outlive its limit; were it set again at once, its
		 * kick would come before the stub's exit, again and again. */
		vm->preempt_due = 1;
		return;
	}
	expire(ts, vm_now_us());
	wake_ready(ts, &no_wait, NULL);
	if (runnable_others(ts) == 0) {
		set_slice(vm);
		return;
	}
	save(vm, &ts->t[ts->cur]);
	switch_away(vm, ts);
	vm->regs_replaced = 0; /* not inside a call */
	vm->switched_in = 1;
}

/* ---- clone of a thread ---------------------------------------------------- */

int64_t
vm_thread_clone(struct vm *vm, uint64_t flags, uint64_t newsp, uint64_t ptid,
    uint64_t ctid, uint64_t tls)
{
	const uint64_t need = CLONE_VM_ | CLONE_SIGHAND_ | CLONE_THREAD_;
	const uint64_t known = need | CLONE_FS_ | CLONE_FILES_ |
	    CLONE_SYSVSEM_ | CLONE_SETTLS_ | CLONE_PARENT_SETTID_ |
	    CLONE_CHILD_CLEARTID_ | CLONE_DETACHED_ | CLONE_CHILD_SETTID_;
	struct vm_threads *ts;
	struct vm_thread *t;
	struct kvm_regs *r = &vm->run->s.regs.regs;
	int32_t tid;
	int i;

	if ((flags & need) != need || (flags & ~known) != 0 || newsp == 0)
		return -EINVAL;
	if ((ts = table(vm)) == NULL)
		return -ENOMEM;
	for (i = 0; i < THREADS_MAX && live_at(ts, i); i++)
		;
	if (i == THREADS_MAX)
		return -EAGAIN;
	if (((flags & CLONE_PARENT_SETTID_) && vm_gptr(vm, ptid, 4) == NULL) ||
	    ((flags & CLONE_CHILD_SETTID_) && vm_gptr(vm, ctid, 4) == NULL))
		return -EFAULT;
	if ((tid = vm_proc_new_tid(vm)) <= 0)
		return -EAGAIN;
	t = &ts->t[i];
	memset(t, 0, sizeof(*t));
	save(vm, t);
	t->has_saved = 0;
	t->regs.rax = 0;
	t->regs.rip = r->rcx;
	t->regs.rflags = (r->r11 & RFLAGS_USER) | RFLAGS_FIXED;
	t->regs.rsp = newsp;
	if (flags & CLONE_SETTLS_)
		t->fs_base = tls;
	if (flags & CLONE_CHILD_CLEARTID_)
		t->clear_tid = ctid;
	t->tid = tid;
	t->state = T_RUN;
	ts->live |= 1ULL << i;
	if (flags & CLONE_PARENT_SETTID_)
		memcpy(vm_gptr(vm, ptid, 4), &tid, 4);
	if (flags & CLONE_CHILD_SETTID_)
		memcpy(vm_gptr(vm, ctid, 4), &tid, 4);
	vm_proc_set_threads(vm, vm_thread_ids(vm, NULL, 0));
	set_slice(vm);
	return tid;
}

/* ---- futex ------------------------------------------------------------------ */

static int64_t
futex_wake(struct vm *vm, uint64_t addr, uint32_t bitset, int64_t n)
{
	struct vm_threads *ts = vm->threads;
	int i;
	int64_t woken = 0;

	for (i = 0; ts != NULL && i < THREADS_MAX && woken < n; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    !ts->t[i].reissue && ts->t[i].futex == addr &&
		    (ts->t[i].bitset & bitset) != 0) {
			ts->t[i].state = T_RUN;
			ts->t[i].regs.rax = 0;
			woken++;
		}
	if (woken > 0)
		set_slice(vm);
	/* Waiters in other processes wait in the host, on the file's page
	 * (shared_idle). */
	if (woken < n && vm_shmap_holds(vm, addr)) {
		long more = syscall(SYS_futex, vm->mem + addr, FUTEX_WAKE_,
		    (int)(n - woken > INT32_MAX ? INT32_MAX : n - woken), NULL,
		    NULL, 0);

		if (more > 0)
			woken += more;
	}
	return woken;
}

/* A guest timespec: relative (FUTEX_WAIT) or absolute on the monotonic
 * or real-time clock (FUTEX_WAIT_BITSET) as a vm_now_us deadline. */
static int64_t
futex_deadline(struct vm *vm, uint64_t addr, int absolute, int realtime,
    uint64_t *deadline)
{
	const int64_t *g;
	int64_t t[2];
	struct timespec now;
	int64_t us;

	*deadline = 0;
	if (addr == 0)
		return 0;
	if ((g = vm_gptr(vm, addr, sizeof(t))) == NULL)
		return -EFAULT;
	memcpy(t, g, sizeof(t));
	if (t[0] < 0 || t[1] < 0 || t[1] >= 1000000000)
		return -EINVAL;
	if (t[0] > (1LL << 40))
		return 0; /* far enough to be never */
	us = t[0] * 1000000 + t[1] / 1000;
	if (absolute) {
		clock_gettime(
		    realtime ? CLOCK_REALTIME : CLOCK_MONOTONIC, &now);
		us -= now.tv_sec * 1000000 + now.tv_nsec / 1000;
	}
	*deadline = vm_now_us() + (us > 0 ? (uint64_t)us : 0) + 1;
	return 0;
}

static int64_t
futex_wait(struct vm *vm, uint64_t addr, uint32_t val, uint64_t timeout,
    int absolute, int realtime, uint32_t bitset)
{
	struct vm_threads *ts;
	struct vm_thread *t;
	const uint32_t *g;
	uint64_t deadline;
	int64_t rc;

	if ((g = vm_gptr(vm, addr, 4)) == NULL || addr % 4 != 0)
		return -EFAULT;
	if (bitset == 0)
		return -EINVAL;
	if ((rc = futex_deadline(vm, timeout, absolute, realtime, &deadline)) !=
	    0)
		return rc;
	if (__atomic_load_n(g, __ATOMIC_SEQ_CST) != val)
		return -EAGAIN;
	if ((ts = table(vm)) == NULL)
		return -ENOMEM;
	t = &ts->t[ts->cur];
	save_returning(vm, t, 0);
	t->state = T_WAIT;
	t->futex = addr;
	t->bitset = bitset;
	t->fshared = vm_shmap_holds(vm, addr);
	t->fval = val;
	t->deadline_us = deadline;
	t->timeout_ret = -ETIMEDOUT;
	t->reissue = 0;
	t->npfd = 0;
	switch_away(vm, ts);
	return 0;
}

int
vm_thread_park(struct vm *vm, const struct pollfd *fds, int n,
    uint64_t deadline_us, int64_t timeout_ret)
{
	struct vm_threads *ts = vm->threads;
	struct kvm_regs *r = &vm->run->s.regs.regs;
	struct vm_thread *t;

	if (ts == NULL || n < 0 || n > PARK_FDS_MAX || !others_live(ts))
		return 0;
	t = &ts->t[ts->cur];
	/* The registers of the `syscall` itself: RAX still holds the
	 * call's number, RCX and R11 what the instruction left. */
	r->rip = r->rcx - 2;
	r->rflags = (r->r11 & RFLAGS_USER) | RFLAGS_FIXED;
	save(vm, t);
	t->nr = r->rax;
	t->state = T_WAIT;
	t->futex = NO_FUTEX;
	t->fshared = 0;
	t->bitset = 0;
	t->deadline_us = deadline_us;
	t->timeout_ret = timeout_ret;
	t->reissue = 1;
	t->npfd = n;
	if (n > 0)
		memcpy(t->pfd, fds, (size_t)n * sizeof(*fds));
	switch_away(vm, ts);
	return 1;
}

int
vm_thread_sigwait(struct vm *vm)
{
	struct vm_threads *ts = vm->threads;
	struct vm_thread *t;

	if (ts == NULL || !others_live(ts))
		return 0;
	t = &ts->t[ts->cur];
	/* It returns EINTR whenever it runs again: only a signal wakes it
	 * (or the run's end), and the handler runs first. */
	save_returning(vm, t, -EINTR);
	t->state = T_WAIT;
	t->sigwait = 1;
	t->futex = NO_FUTEX;
	t->fshared = 0;
	t->bitset = 0;
	t->deadline_us = 0;
	t->reissue = 0;
	t->npfd = 0;
	switch_away(vm, ts);
	return 1;
}

int
vm_thread_take_signal(struct vm *vm, uint64_t sigs, uint64_t nr, int again)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	struct vm_threads *ts = vm->threads;
	int k, woke;

	if (ts == NULL)
		return 0;
	/* Just woken for a signal (the idle loop): it takes it, not another
	 * waiter that would let it through too. */
	woke = ts->t[ts->cur].sigwoke;
	ts->t[ts->cur].sigwoke = 0;
	if (woke || sigs == 0 || (k = signal_waiter(vm, ts, sigs)) < 0)
		return 0;
	if (ts->t[ts->cur].state == T_RUN) {
		/* Its call was cut short for a signal it does not take: it
		 * is made again when the thread runs, as Linux never woke it. */
		if (again && (int64_t)r->rax == -EINTR) {
			r->rax = nr;
			r->rip -= 2;
		}
		save(vm, &ts->t[ts->cur]);
	}
	resume(&ts->t[k], -EINTR);
	ts->t[k].sigwoke = 0;
	ts->cur = k;
	load(vm, &ts->t[k]);
	set_slice(vm);
	return 1;
}

uint64_t *
vm_thread_pending(struct vm *vm)
{
	return vm->threads != NULL ? &vm->threads->t[vm->threads->cur].pending
	                           : NULL;
}

int
vm_thread_signal(struct vm *vm, int32_t tid, int sig, int acts)
{
	struct vm_threads *ts = vm->threads;
	struct vm_thread *t;
	uint64_t b = 1ULL << (sig - 1);
	int i;

	if (ts == NULL || !others_live(ts))
		return 0;
	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(ts, i) && ts->t[i].tid == tid)
			break;
	if (i == THREADS_MAX)
		return 0;
	t = &ts->t[i];
	t->pending |= b;
	/* A waiting thread that would act on it wakes to take it, its
	 * call cut short (EINTR; made again under SA_RESTART where Linux
	 * would: restart_of). The running one takes it at this call's
	 * return. */
	if (i != ts->cur && t->state == T_WAIT && acts && !(t->blocked & b)) {
		resume(t, -EINTR);
		set_slice(vm);
	}
	return 1;
}

void
vm_thread_discard(struct vm *vm, uint64_t sigs)
{
	struct vm_threads *ts = vm->threads;
	int i;

	for (i = 0; ts != NULL && i < THREADS_MAX; i++)
		ts->t[i].pending &= ~sigs;
}

int
vm_thread_park_fd(struct vm *vm, int hostfd, short events)
{
	struct pollfd p = { .fd = hostfd, .events = events };
	int fl;

	if (vm->threads == NULL || hostfd < 0 ||
	    ((fl = fcntl(hostfd, F_GETFL)) != -1 && (fl & O_NONBLOCK)) ||
	    poll(&p, 1, 0) != 0)
		return 0;
	return vm_thread_park(vm, &p, 1, 0, 0);
}

static int64_t
futex_requeue(
    struct vm *vm, uint64_t addr, int64_t nwake, int64_t nmove, uint64_t addr2)
{
	struct vm_threads *ts = vm->threads;
	int64_t done = futex_wake(vm, addr, ~0u, nwake), moved = 0;
	int i;

	if (vm_gptr(vm, addr2, 4) == NULL)
		return -EFAULT;
	for (i = 0; ts != NULL && i < THREADS_MAX && moved < nmove; i++)
		if (live_at(ts, i) && ts->t[i].state == T_WAIT &&
		    !ts->t[i].reissue && ts->t[i].futex == addr) {
			ts->t[i].futex = addr2;
			ts->t[i].fshared = 0; /* woken from here only */
			moved++;
		}
	return done + moved;
}

int64_t
sys_futex(struct vm *vm, const uint64_t a[6])
{
	int op = (int)(a[1] & FUTEX_CMD_MASK);
	int realtime = (a[1] & FUTEX_CLOCK_REALTIME_) != 0;
	const uint32_t *g;

	switch (op) {
	case FUTEX_WAIT_:
		return futex_wait(vm, a[0], (uint32_t)a[2], a[3], 0, 0, ~0u);
	case FUTEX_WAIT_BITSET_:
		return futex_wait(vm, a[0], (uint32_t)a[2], a[3], 1, realtime,
		    (uint32_t)a[5]);
	case FUTEX_WAKE_:
	case FUTEX_WAKE_BITSET_:
		if (vm_gptr(vm, a[0], 4) == NULL)
			return -EFAULT;
		return futex_wake(vm, a[0],
		    op == FUTEX_WAKE_ ? ~0u : (uint32_t)a[5],
		    (int64_t)(uint32_t)a[2]);
	case FUTEX_CMP_REQUEUE_:
		if ((g = vm_gptr(vm, a[0], 4)) == NULL)
			return -EFAULT;
		if (*g != (uint32_t)a[5])
			return -EAGAIN;
		return futex_requeue(vm, a[0], (int64_t)(uint32_t)a[2],
		    (int64_t)(uint32_t)a[3], a[4]);
	case FUTEX_REQUEUE_:
		return futex_requeue(vm, a[0], (int64_t)(uint32_t)a[2],
		    (int64_t)(uint32_t)a[3], a[4]);
	default:
		return -ENOSYS; /* WAKE_OP, PI futexes: docs/vmm.md */
	}
}

/* ---- ids, exit, yield ------------------------------------------------------ */

int
vm_thread_is_mine(struct vm *vm, int32_t tid)
{
	int i;

	if (tid == vm->pid)
		return 1;
	if (vm->threads == NULL)
		return 0;
	for (i = 0; i < THREADS_MAX; i++)
		if (live_at(vm->threads, i) && vm->threads->t[i].tid == tid)
			return 1;
	return 0;
}

int64_t
sys_gettid(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return vm->threads != NULL ? vm->threads->t[vm->threads->cur].tid
	                           : vm->pid;
}

int64_t
sys_set_tid_address(struct vm *vm, const uint64_t a[6])
{
	struct vm_threads *ts = table(vm);

	if (ts != NULL)
		ts->t[ts->cur].clear_tid = a[0];
	return sys_gettid(vm, a);
}

int64_t
sys_set_robust_list(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return a[1] == 24 ? 0 : -EINVAL; /* accepted; the list is unused */
}

int64_t
sys_sched_yield(struct vm *vm, const uint64_t a[6])
{
	struct vm_threads *ts = vm->threads;

	(void)a;
	if (ts == NULL || runnable_others(ts) == 0)
		return 0;
	save_returning(vm, &ts->t[ts->cur], 0);
	switch_away(vm, ts);
	return 0;
}

/* exit: the thread's, and the process's with its last thread. */
int64_t
sys_exit(struct vm *vm, const uint64_t a[6])
{
	struct vm_threads *ts = vm->threads;
	struct vm_thread *t;
	uint32_t zero = 0;

	if (ts == NULL || !others_live(ts))
		return sys_exit_group(vm, a);
	t = &ts->t[ts->cur];
	/* CLONE_CHILD_CLEARTID: zero the tid and wake its joiner. */
	if (t->clear_tid != 0 && vm_gptr(vm, t->clear_tid, 4) != NULL) {
		memcpy(vm_gptr(vm, t->clear_tid, 4), &zero, 4);
		futex_wake(vm, t->clear_tid, ~0u, 1);
	}
	t->state = T_FREE;
	ts->live &= ~(1ULL << ts->cur);
	vm_proc_set_threads(vm, vm_thread_ids(vm, NULL, 0));
	switch_away(vm, ts);
	return 0;
}

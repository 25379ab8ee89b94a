/*
 * epoll, eventfd and timerfd (docs/vmm.md, "Pipes and waiting"). All
 * are host objects behind guest descriptors, as pipes are: an eventfd
 * is a host eventfd, so its counter, EFD_SEMAPHORE and blocking are the
 * kernel's and it crosses fork as it is; a timerfd is a host timerfd on
 * the host's clocks, which are the guest's (sys_time.c); an epoll
 * descriptor is a host epoll
 * instance watching the host descriptors behind the guest's (pipes,
 * eventfds, other epolls, stdin), so readiness, level and edge
 * triggering, EPOLLONESHOT and a child's shared interest list are the
 * kernel's too. The guest's event data travels through the host's
 * struct epoll_event untouched, and its layout (packed, 12 bytes) is
 * the guest's, so epoll_wait writes straight into guest memory.
 *
 * Guest descriptors with no host one behind them: image files and
 * directories are regular files, which Linux's epoll refuses (EPERM);
 * the output sink (stdout, stderr) is always writable and an absent
 * stdin always at end of file, so they are watched through a duplicate
 * of a host pipe end that is always so (one per guest descriptor, since
 * epoll tells registrations apart by descriptor).
 */
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define EPOLL_EVENT_SIZE 12 /* the x86-64 ABI's packed struct epoll_event */
#define EPOLL_WAIT_MAX (INT_MAX / EPOLL_EVENT_SIZE) /* Linux's bound */
#define STAND_INS 64

_Static_assert(sizeof(struct epoll_event) == EPOLL_EVENT_SIZE,
    "the host's struct epoll_event is the guest's");

/* The always-ready host ends, made at first need: a pipe's write end
 * whose read end stays open (writable until 64 KiB are written, and
 * nothing is), and a read end whose write end is closed (at end of
 * file). Each guest descriptor watched through them gets its own
 * duplicate. */
static int ready_w = -1, ready_r = -1;
static struct {
	int32_t gfd; /* -1: free */
	int hostfd;
	int writable;
} stand_in[STAND_INS];
static int stand_ins_ready;

static int
ready_ends(void)
{
	int p[2], q[2], i;

	if (ready_w >= 0)
		return 0;
	if (pipe2(p, O_CLOEXEC) == -1)
		return -errno;
	if (pipe2(q, O_CLOEXEC) == -1) {
		i = -errno;
		close(p[0]);
		close(p[1]);
		return i;
	}
	close(q[1]);
	ready_w = p[1];
	ready_r = q[0];
	/* p[0] stays open so that p[1] never sees EPIPE. */
	if (!stand_ins_ready) {
		for (i = 0; i < STAND_INS; i++)
			stand_in[i].gfd = -1;
		stand_ins_ready = 1;
	}
	return 0;
}

/* The host descriptor that stands in for guest descriptor gfd (one that
 * is always writable or always readable), made for ADD, found for MOD
 * and DEL; or -errno. */
static int
stand_in_fd(int32_t gfd, int writable, int create)
{
	int i, free_slot = -1, rc;

	if ((rc = ready_ends()) != 0)
		return rc;
	for (i = 0; i < STAND_INS; i++) {
		if (stand_in[i].gfd == gfd && stand_in[i].writable == writable)
			return stand_in[i].hostfd;
		if (stand_in[i].gfd < 0 && free_slot < 0)
			free_slot = i;
	}
	if (!create)
		return -ENOENT;
	if (free_slot < 0)
		return -ENOSPC; /* Linux: past max_user_watches */
	if ((rc = fcntl(writable ? ready_w : ready_r, F_DUPFD_CLOEXEC, 0)) ==
	    -1)
		return -errno;
	stand_in[free_slot].gfd = gfd;
	stand_in[free_slot].hostfd = rc;
	stand_in[free_slot].writable = writable;
	return rc;
}

static void
stand_in_drop(int hostfd)
{
	int i;

	for (i = 0; i < STAND_INS; i++)
		if (stand_in[i].gfd >= 0 && stand_in[i].hostfd == hostfd) {
			close(hostfd);
			stand_in[i].gfd = -1;
		}
}

/* ---- eventfd ------------------------------------------------------------- */

static int64_t
make_eventfd(struct vm *vm, uint64_t count, uint64_t flags)
{
	int hfd, gfd;

	if ((flags & ~(uint64_t)(EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE)) !=
	    0)
		return -EINVAL;
	if ((hfd = eventfd((unsigned)count,
	         EFD_CLOEXEC |
	             (int)(flags & (EFD_NONBLOCK | EFD_SEMAPHORE)))) == -1)
		return -errno;
	if ((gfd = vm_fd_add_host(vm, hfd, (flags & EFD_CLOEXEC) != 0)) < 0)
		close(hfd);
	return gfd;
}

int64_t
sys_eventfd(struct vm *vm, const uint64_t a[6])
{
	return make_eventfd(vm, (uint32_t)a[0], 0);
}

int64_t
sys_eventfd2(struct vm *vm, const uint64_t a[6])
{
	return make_eventfd(vm, (uint32_t)a[0], (uint32_t)a[1]);
}

/* ---- timerfd ------------------------------------------------------------- */

int64_t
sys_timerfd_create(struct vm *vm, const uint64_t a[6])
{
	int32_t clock = (int32_t)a[0];
	uint64_t flags = a[1];
	int hfd;

	if ((flags & ~(uint64_t)(TFD_CLOEXEC | TFD_NONBLOCK)) != 0)
		return -EINVAL;
	if (clock == CLOCK_REALTIME_ALARM || clock == CLOCK_BOOTTIME_ALARM)
		return -EPERM; /* no CAP_WAKE_ALARM */
	if (clock != CLOCK_REALTIME && clock != CLOCK_MONOTONIC &&
	    clock != CLOCK_BOOTTIME)
		return -EINVAL;
	if ((hfd = timerfd_create(
	         clock, TFD_CLOEXEC | (int)(flags & TFD_NONBLOCK))) == -1)
		return -errno;
	return vm_fd_add_anon(vm, hfd, (flags & TFD_CLOEXEC) != 0,
	    (flags & TFD_NONBLOCK) != 0, VM_ANON_TIMERFD);
}

int64_t
sys_timerfd_settime(struct vm *vm, const uint64_t a[6])
{
	struct itimerspec want, old;
	struct vfd *f;
	int64_t rc;

	if ((f = vm_fd_anon(vm, a[0], VM_ANON_TIMERFD, &rc)) == NULL)
		return rc;
	if (vm_get(vm, a[2], &want, sizeof(want)) != 0)
		return -EFAULT;
	/* The host checks the flags and the times (EINVAL), as Linux. */
	if (timerfd_settime(f->hostfd, (int)(uint32_t)a[1], &want, &old) == -1)
		return -errno;
	return a[3] != 0 ? vm_put(vm, a[3], &old, sizeof(old)) : 0;
}

int64_t
sys_timerfd_gettime(struct vm *vm, const uint64_t a[6])
{
	struct itimerspec now;
	struct vfd *f;
	int64_t rc;

	if ((f = vm_fd_anon(vm, a[0], VM_ANON_TIMERFD, &rc)) == NULL)
		return rc;
	if (timerfd_gettime(f->hostfd, &now) == -1)
		return -errno;
	return vm_put(vm, a[1], &now, sizeof(now));
}

/* ---- epoll --------------------------------------------------------------- */

static int64_t
make_epoll(struct vm *vm, int cloexec)
{
	int hfd, gfd;

	if ((hfd = epoll_create1(EPOLL_CLOEXEC)) == -1)
		return -errno;
	if ((gfd = vm_fd_add_host(vm, hfd, cloexec)) < 0)
		close(hfd);
	return gfd;
}

int64_t
sys_epoll_create(struct vm *vm, const uint64_t a[6])
{
	if ((int32_t)a[0] <= 0)
		return -EINVAL;
	return make_epoll(vm, 0);
}

int64_t
sys_epoll_create1(struct vm *vm, const uint64_t a[6])
{
	if ((a[0] & ~(uint64_t)EPOLL_CLOEXEC) != 0)
		return -EINVAL;
	return make_epoll(vm, (a[0] & EPOLL_CLOEXEC) != 0);
}

/* The host epoll behind guest descriptor epfd; -EBADF, or -EINVAL when
 * it is some other kind (the host's epoll_ctl tells a pipe from an
 * epoll instance itself). */
static int
epoll_host(struct vm *vm, uint64_t epfd)
{
	struct vfd *f = vm_fd(vm, epfd);

	if (f == NULL)
		return -EBADF;
	if (f->kind != VFD_HOST || !f->pipe)
		return -EINVAL;
	return f->hostfd;
}

int64_t
sys_epoll_ctl(struct vm *vm, const uint64_t a[6])
{
	struct epoll_event ev, *g = NULL;
	struct vfd *f;
	int ep, hfd, op = (int)a[1];

	if ((ep = epoll_host(vm, a[0])) < 0)
		return ep;
	if ((f = vm_fd(vm, a[2])) == NULL)
		return -EBADF;
	if ((uint32_t)a[0] == (uint32_t)a[2])
		return -EINVAL;
	if (op != EPOLL_CTL_DEL) {
		if ((g = vm_gptr(vm, a[3], sizeof(ev))) == NULL)
			return -EFAULT;
		memcpy(&ev, g, sizeof(ev));
	} else
		memset(&ev, 0, sizeof(ev));
	if (op != EPOLL_CTL_ADD && op != EPOLL_CTL_MOD && op != EPOLL_CTL_DEL)
		return -EINVAL;
	switch (f->kind) {
	case VFD_HOST:
		hfd = f->hostfd;
		break;
	case VFD_STDIN:
		/* A pipe or a terminal is watched itself. A file (keep run
		 * < file, keepd's memfd) or /dev/null is always ready, and
		 * epoll refuses them (EPERM): the guest sees a pipe (fstat),
		 * and libuv aborts when epoll refuses a pipe. Such a stdin
		 * is watched through a stand-in, always at end of file. */
		hfd = vm->cfg->stdin_fd;
		if (hfd >= 0 && op != EPOLL_CTL_ADD &&
		    stand_in_fd((int32_t)a[2], 0, 0) < 0)
			break;
		if (hfd >= 0 && op == EPOLL_CTL_ADD &&
		    epoll_ctl(ep, op, hfd, &ev) == 0)
			return 0;
		if (hfd >= 0 && op == EPOLL_CTL_ADD && errno != EPERM)
			return -errno;
		hfd = stand_in_fd((int32_t)a[2], 0, op == EPOLL_CTL_ADD);
		break;
	case VFD_OUT:
		hfd = stand_in_fd((int32_t)a[2], 1, op == EPOLL_CTL_ADD);
		break;
	default:
		return -EPERM; /* image files and directories: regular files */
	}
	if (hfd < 0)
		return hfd;
	if (epoll_ctl(ep, op, hfd, &ev) == -1)
		return -errno;
	if (op == EPOLL_CTL_DEL && f->kind != VFD_HOST &&
	    hfd != vm->cfg->stdin_fd)
		stand_in_drop(hfd);
	return 0;
}

/* Wait on the host epoll for at most timeout_ms (-1: no limit); the
 * events go straight into the guest's array. The run's time limit and
 * a signal the guest acts on end the wait (EINTR), as in poll.c. */
static int64_t
epoll_wait_ms(
    struct vm *vm, uint64_t epfd, uint64_t events, int32_t max, int timeout_ms)
{
	uint64_t end = 0, now;
	int64_t left;
	void *g;
	int ep, n;

	if ((ep = epoll_host(vm, epfd)) < 0)
		return ep;
	if (max <= 0 || max > EPOLL_WAIT_MAX)
		return -EINVAL;
	if ((g = vm_gptr(vm, events, (uint64_t)max * EPOLL_EVENT_SIZE)) == NULL)
		return -EFAULT;
	/* With other threads, nothing ready yet: park on the epoll
	 * descriptor itself (readable when an event is), and the call is
	 * issued again then (sys_thread.c). */
	if (timeout_ms != 0 && vm->threads != NULL) {
		struct pollfd p = { .fd = ep, .events = POLLIN };

		if ((n = epoll_wait(ep, g, max, 0)) != 0)
			return n == -1 ? -errno : n;
		if (vm_thread_park(vm, &p, 1,
		        timeout_ms < 0
		            ? 0
		            : vm_now_us() + (uint64_t)timeout_ms * 1000 + 1,
		        0))
			return 0;
	}
	if (timeout_ms == 0)
		return (n = epoll_wait(ep, g, max, 0)) == -1 ? -errno : n;
	/* The wait itself on the epoll descriptor, readable when an event
	 * is, as poll.c waits (vm_signal_wait_fds); then the events. An
	 * event gone again by then (another epoll's reader took it) waits
	 * on for the time left. */
	if (timeout_ms > 0)
		end = vm_now_us() + (uint64_t)timeout_ms * 1000;
	vm_proc_waiting(vm, 1);
	for (;;) {
		struct pollfd p = { .fd = ep, .events = POLLIN };

		left = timeout_ms < 0           ? -1
		    : (now = vm_now_us()) < end ? (int64_t)(end - now) * 1000
		                                : 0;
		if ((n = vm_signal_wait_fds(vm, &p, 1, left)) <= 0)
			break;
		if ((n = epoll_wait(ep, g, max, 0)) != 0) {
			n = n == -1 ? -errno : n;
			break;
		}
		if (left == 0)
			break;
	}
	vm_proc_waiting(vm, 0);
	return n;
}

int64_t
sys_epoll_wait(struct vm *vm, const uint64_t a[6])
{
	int32_t ms = (int32_t)a[3];

	return epoll_wait_ms(vm, a[0], a[1], (int32_t)a[2], ms < 0 ? -1 : ms);
}

/* The signal mask is not applied: signals are delivered at system-call
 * boundaries (docs/vmm.md), as for ppoll. */
int64_t
sys_epoll_pwait(struct vm *vm, const uint64_t a[6])
{
	return sys_epoll_wait(vm, a);
}

/* A timespec timeout, to the millisecond above it. */
int64_t
sys_epoll_pwait2(struct vm *vm, const uint64_t a[6])
{
	const int64_t *g;
	int64_t t[2], ms;

	if (a[3] == 0)
		return epoll_wait_ms(vm, a[0], a[1], (int32_t)a[2], -1);
	if ((g = vm_gptr(vm, a[3], sizeof(t))) == NULL)
		return -EFAULT;
	memcpy(t, g, sizeof(t));
	if (t[0] < 0 || t[1] < 0 || t[1] >= 1000000000)
		return -EINVAL;
	ms = t[0] > INT_MAX / 1000 ? INT_MAX
	                           : t[0] * 1000 + (t[1] + 999999) / 1000000;
	return epoll_wait_ms(
	    vm, a[0], a[1], (int32_t)a[2], ms > INT_MAX ? INT_MAX : (int)ms);
}

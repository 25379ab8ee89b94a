/*
 * Waiting for descriptors: poll, ppoll, select and pselect6 with real
 * timeouts. They all come down to vm_wait(), the one place that knows
 * how each kind of descriptor becomes ready:
 *
 *   - files, directories, /dev and /proc: always ready, as Linux's
 *     regular files are;
 *   - the output sink (fds 1 and 2): always writable;
 *   - stdin: ready when the caller's stdin is (a host poll), or at once
 *     when there is none (it reads as end of file).
 *
 * A descriptor kind backed by a host descriptor that can block (stdin
 * now; pipes later) reports that descriptor from wait_source(), and the
 * wait is one host ppoll over all of them. The run's time limit is a
 * SIGALRM that interrupts the host's wait (EINTR), after which the guest
 * does not run again: a wait costs no more than the limit.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define G_POLLIN 0x001
#define G_POLLPRI 0x002
#define G_POLLOUT 0x004
#define G_POLLERR 0x008
#define G_POLLHUP 0x010
#define G_POLLNVAL 0x020
#define G_POLLRDNORM 0x040
#define G_POLLWRNORM 0x100
#define G_READ (G_POLLIN | G_POLLRDNORM)
#define G_WRITE (G_POLLOUT | G_POLLWRNORM)
#define WAIT_MAX 1024 /* descriptors one call may wait on */

/* The events of f ready now (G_POLL*), or 0 with *hostfd set to a host
 * descriptor whose readiness decides (-1: none, never ready). */
static unsigned
wait_source(struct vm *vm, struct vfd *f, unsigned events, int *hostfd)
{
	*hostfd = -1;
	switch (f->kind) {
	case VFD_STDIN:
		if (vm->cfg->stdin_fd < 0)
			return events & G_READ;
		*hostfd = vm->cfg->stdin_fd;
		return 0;
	case VFD_OUT:
		return events & G_WRITE;
	default:
		return events & (G_READ | G_WRITE);
	}
}

int64_t
vm_wait(struct vm *vm, struct vm_pollfd *pf, size_t n, int64_t timeout_ns)
{
	struct pollfd hp[WAIT_MAX];
	size_t map[WAIT_MAX];
	struct timespec ts, *tsp = NULL;
	size_t i, nh = 0;
	int64_t ready = 0;
	int r;

	if (n > WAIT_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		struct vfd *f;
		int hfd;

		pf[i].revents = 0;
		if (pf[i].fd < 0)
			continue;
		if ((f = vm_fd(vm, (uint64_t)pf[i].fd)) == NULL) {
			pf[i].revents = G_POLLNVAL;
			ready++;
			continue;
		}
		pf[i].revents = (uint16_t)wait_source(
		    vm, f, pf[i].events | G_POLLERR | G_POLLHUP, &hfd);
		if (pf[i].revents != 0)
			ready++;
		else if (hfd >= 0) {
			hp[nh].fd = hfd;
			hp[nh].events =
			    (short)(pf[i].events & G_WRITE ? POLLIN | POLLOUT
			                                   : POLLIN);
			hp[nh].revents = 0;
			map[nh++] = i;
		}
	}
	if (ready > 0 || timeout_ns == 0)
		timeout_ns = 0;
	if (timeout_ns >= 0) {
		ts.tv_sec = timeout_ns / 1000000000;
		ts.tv_nsec = timeout_ns % 1000000000;
		tsp = &ts;
	}
	if (nh == 0 && timeout_ns == 0)
		return ready;
	/* Nothing that could become ready: sleep the timeout (forever
	 * without one, as Linux would; the run's limit ends it). */
	r = ppoll(nh > 0 ? hp : NULL, nh, tsp, NULL);
	if (r < 0)
		return ready > 0 ? ready : errno == EINTR ? -EINTR : -errno;
	for (i = 0; i < nh; i++) {
		unsigned ev = 0;

		if (hp[i].revents & (POLLIN | POLLHUP | POLLERR))
			ev |=
			    G_READ | (hp[i].revents & POLLHUP ? G_POLLHUP : 0);
		if (hp[i].revents & POLLOUT)
			ev |= G_WRITE;
		ev &= pf[map[i]].events | G_POLLERR | G_POLLHUP;
		if (ev != 0 && pf[map[i]].revents == 0)
			ready++;
		pf[map[i]].revents |= (uint16_t)ev;
	}
	return ready;
}

/* A guest timespec (NULL: none) as nanoseconds, -1 for forever. */
static int64_t
timeout_of(struct vm *vm, uint64_t addr, int64_t *ns)
{
	const int64_t *g;
	int64_t sec, nsec;

	*ns = -1;
	if (addr == 0)
		return 0;
	if ((g = vm_gptr(vm, addr, 16)) == NULL)
		return -EFAULT;
	memcpy(&sec, &g[0], 8);
	memcpy(&nsec, &g[1], 8);
	if (sec < 0 || nsec < 0 || nsec >= 1000000000)
		return -EINVAL;
	*ns = sec > INT64_MAX / 1000000000 - 1 ? INT64_MAX
	                                       : sec * 1000000000 + nsec;
	return 0;
}

static int64_t
poll_common(struct vm *vm, uint64_t addr, uint64_t n, int64_t ns)
{
	struct vm_pollfd pf[WAIT_MAX];
	uint8_t *g;
	uint64_t i;
	int64_t r;

	if (n > vm->nfds || n > WAIT_MAX)
		return -EINVAL;
	if ((g = vm_gptr(vm, addr, n * 8)) == NULL && n > 0)
		return -EFAULT;
	for (i = 0; i < n; i++) {
		int16_t ev;

		memcpy(&pf[i].fd, g + i * 8, 4);
		memcpy(&ev, g + i * 8 + 4, 2);
		pf[i].events = (uint16_t)ev;
	}
	if ((r = vm_wait(vm, pf, n, ns)) < 0)
		return r;
	for (i = 0; i < n; i++)
		memcpy(g + i * 8 + 6, &pf[i].revents, 2);
	return r;
}

int64_t
sys_poll(struct vm *vm, const uint64_t a[6])
{
	int64_t ms = (int32_t)a[2];

	return poll_common(vm, a[0], a[1], ms < 0 ? -1 : ms * 1000000);
}

/* The signal mask is ignored: no signal is delivered yet. */
int64_t
sys_ppoll(struct vm *vm, const uint64_t a[6])
{
	int64_t ns, r;

	if ((r = timeout_of(vm, a[2], &ns)) != 0)
		return r;
	return poll_common(vm, a[0], a[1], ns);
}

/* select and pselect6: fd_sets of n bits in, the ready ones out. */
static int64_t
select_common(struct vm *vm, uint64_t n, const uint64_t sets[3], int64_t ns)
{
	struct vm_pollfd pf[WAIT_MAX];
	uint8_t *g[3] = { NULL, NULL, NULL };
	uint64_t bytes = (n + 63) / 64 * 8, i, np = 0;
	int64_t r, count = 0;
	int k;

	if ((int64_t)n < 0 || n > vm->nfds)
		return -EINVAL;
	for (k = 0; k < 3; k++)
		if (sets[k] != 0 && bytes > 0 &&
		    (g[k] = vm_gptr(vm, sets[k], bytes)) == NULL)
			return -EFAULT;
	for (i = 0; i < n; i++) {
		unsigned ev = 0;

		if (g[0] != NULL && (g[0][i / 8] >> (i % 8)) & 1)
			ev |= G_READ;
		if (g[1] != NULL && (g[1][i / 8] >> (i % 8)) & 1)
			ev |= G_WRITE;
		if (g[2] != NULL && (g[2][i / 8] >> (i % 8)) & 1)
			ev |= G_POLLPRI;
		if (ev == 0)
			continue;
		if (vm_fd(vm, i) == NULL)
			return -EBADF;
		if (np == WAIT_MAX)
			return -EINVAL;
		pf[np].fd = (int32_t)i;
		pf[np++].events = (uint16_t)ev;
	}
	if ((r = vm_wait(vm, pf, np, ns)) < 0)
		return r;
	for (k = 0; k < 3; k++)
		if (g[k] != NULL)
			memset(g[k], 0, bytes);
	for (i = 0; i < np; i++) {
		unsigned fd = (unsigned)pf[i].fd, rev = pf[i].revents;

		if (g[0] != NULL && (pf[i].events & G_READ) &&
		    (rev & (G_READ | G_POLLHUP | G_POLLERR))) {
			g[0][fd / 8] |= (uint8_t)(1u << (fd % 8));
			count++;
		}
		if (g[1] != NULL && (pf[i].events & G_WRITE) &&
		    (rev & (G_WRITE | G_POLLERR))) {
			g[1][fd / 8] |= (uint8_t)(1u << (fd % 8));
			count++;
		}
		if (g[2] != NULL && (pf[i].events & G_POLLPRI) &&
		    (rev & G_POLLPRI)) {
			g[2][fd / 8] |= (uint8_t)(1u << (fd % 8));
			count++;
		}
	}
	return count;
}

int64_t
sys_select(struct vm *vm, const uint64_t a[6])
{
	const int64_t *g;
	int64_t sec, usec, ns = -1;
	uint64_t sets[3] = { a[1], a[2], a[3] };

	if (a[4] != 0) {
		if ((g = vm_gptr(vm, a[4], 16)) == NULL)
			return -EFAULT;
		memcpy(&sec, &g[0], 8);
		memcpy(&usec, &g[1], 8);
		if (sec < 0 || usec < 0 || usec >= 1000000)
			return -EINVAL;
		ns = sec > INT64_MAX / 1000000000 - 1
		    ? INT64_MAX
		    : sec * 1000000000 + usec * 1000;
	}
	return select_common(vm, a[0], sets, ns);
}

int64_t
sys_pselect6(struct vm *vm, const uint64_t a[6])
{
	uint64_t sets[3] = { a[1], a[2], a[3] };
	int64_t ns, r;

	if ((r = timeout_of(vm, a[4], &ns)) != 0)
		return r;
	return select_common(vm, a[0], sets, ns);
}

/*
 * Waiting on descriptors: poll, ppoll, select and pselect6 with real
 * timeouts. Pipes and workspace files are host descriptors, so the host's
 * ppoll waits on them; the output sink is always writable, image files
 * and directories always ready, and stdin is the caller's descriptor (or
 * at end of file when there is none). The run's time limit and a signal
 * the guest acts on end the wait (vm_signal_wait_fds); a wake-up for a
 * signal it blocks or ignores does not.
 *
 * The guest's sigmask argument of ppoll and pselect6 is not applied:
 * signals are delivered at system-call boundaries (docs/vmm.md).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define POLL_MAX 4096 /* Linux: RLIMIT_NOFILE */
#define VM_PARKED INT64_MIN
#define SELECT_MAX 1024 /* FD_SETSIZE */

struct gpollfd {
	int32_t fd;
	int16_t events, revents;
};

/*
 * From a process with other threads: nothing is ready yet, so the thread
 * is parked on the host descriptors (sys_thread.c) and the call is issued
 * again when one is ready, or returns 0 at the timeout. VM_PARKED when
 * parked; 0 when one is ready after all, or the call cannot be parked
 * (more descriptors than a parked call holds): the caller waits itself.
 */
static int64_t
park(struct vm *vm, struct pollfd *h, size_t n, int64_t timeout_ns)
{
	uint64_t deadline = 0;

	if (ppoll(h, n, &(struct timespec){ 0, 0 }, NULL) != 0)
		return 0;
	if (timeout_ns > 0)
		deadline = vm_now_us() + (uint64_t)(timeout_ns / 1000) + 1;
	return vm_thread_park(vm, h, (int)n, deadline, 0) ? VM_PARKED : 0;
}

/*
 * Wait on n guest pollfds for at most timeout_ns (-1: no limit). Fills
 * revents; returns how many have any, VM_PARKED (the call will be issued
 * again: nothing is to be written to the guest), or -errno.
 */
static int64_t
wait_fds(struct vm *vm, struct gpollfd *p, size_t n, int64_t timeout_ns)
{
	struct pollfd *h;
	size_t i, ready = 0;
	const short always = POLLIN | POLLOUT | POLLRDNORM | POLLWRNORM;
	int rc;

	if ((h = calloc(n ? n : 1, sizeof(*h))) == NULL)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct vfd *f;

		h[i].fd = -1;
		p[i].revents = 0;
		if (p[i].fd < 0)
			continue;
		if ((f = vm_fd(vm, (uint64_t)(uint32_t)p[i].fd)) == NULL) {
			p[i].revents = POLLNVAL;
			continue;
		}
		switch (f->kind) {
		case VFD_HOST:
			h[i].fd = f->hostfd;
			h[i].events = p[i].events;
			break;
		case VFD_STDIN:
			if (vm->cfg->stdin_fd >= 0) {
				h[i].fd = vm->cfg->stdin_fd;
				h[i].events =
				    p[i].events & (POLLIN | POLLRDNORM);
			} else
				p[i].revents =
				    p[i].events & (POLLIN | POLLRDNORM);
			break;
		case VFD_OUT:
			p[i].revents = p[i].events & (POLLOUT | POLLWRNORM);
			break;
		default:
			p[i].revents = p[i].events & always;
			break;
		}
	}
	for (i = 0; i < n; i++)
		if (p[i].revents != 0)
			ready = 1;
	if (ready)
		timeout_ns = 0; /* report the host ones as they are now */
	if (timeout_ns != 0 && vm->threads != NULL &&
	    (rc = park(vm, h, n, timeout_ns)) != 0) {
		free(h);
		return rc;
	}
	if (timeout_ns != 0)
		vm_proc_waiting(vm, 1);
	rc = vm_signal_wait_fds(vm, h, n, timeout_ns);
	if (timeout_ns != 0)
		vm_proc_waiting(vm, 0);
	if (rc < 0) {
		free(h);
		return rc;
	}
	for (i = 0, ready = 0; i < n; i++) {
		if (h[i].fd >= 0)
			p[i].revents = h[i].revents;
		if (p[i].revents != 0)
			ready++;
	}
	free(h);
	return (int64_t)ready;
}

/* A guest timespec as nanoseconds; -1 for NULL. */
static int64_t
timespec_ns(struct vm *vm, uint64_t addr, int64_t *ns)
{
	const int64_t *g;
	int64_t t[2];

	*ns = -1;
	if (addr == 0)
		return 0;
	if ((g = vm_gptr(vm, addr, sizeof(t))) == NULL)
		return -EFAULT;
	memcpy(t, g, sizeof(t));
	if (t[0] < 0 || t[1] < 0 || t[1] >= 1000000000)
		return -EINVAL;
	*ns = t[0] > INT64_MAX / 1000000000 - 1 ? INT64_MAX
	                                        : t[0] * 1000000000 + t[1];
	return 0;
}

static int64_t
do_poll(struct vm *vm, uint64_t addr, uint64_t n, int64_t timeout_ns)
{
	struct gpollfd *g;
	int64_t rc;

	if (n > POLL_MAX)
		return -EINVAL;
	if ((g = vm_gptr(vm, addr, n * sizeof(*g))) == NULL && n != 0)
		return -EFAULT;
	rc = wait_fds(vm, g, n, timeout_ns);
	return rc == VM_PARKED ? 0 : rc;
}

int64_t
sys_poll(struct vm *vm, const uint64_t a[6])
{
	int32_t ms = (int32_t)a[2];

	return do_poll(vm, a[0], a[1], ms < 0 ? -1 : (int64_t)ms * 1000000);
}

int64_t
sys_ppoll(struct vm *vm, const uint64_t a[6])
{
	int64_t ns, rc;

	if ((rc = timespec_ns(vm, a[2], &ns)) != 0)
		return rc;
	return do_poll(vm, a[0], a[1], ns);
}

/* select over fd_sets, as poll. */
static int64_t
do_select(struct vm *vm, const uint64_t a[6], int64_t timeout_ns)
{
	uint64_t nfds = (uint32_t)a[0], words = (nfds + 63) / 64, i;
	uint64_t *set[3] = { NULL, NULL, NULL };
	struct gpollfd *p;
	size_t n = 0, k;
	const int16_t ev[3] = { POLLIN, POLLOUT, POLLPRI };
	int64_t rc, count = 0;

	if ((int32_t)a[0] < 0 || nfds > SELECT_MAX)
		return -EINVAL;
	for (k = 0; k < 3; k++)
		if (a[k + 1] != 0 && words != 0 &&
		    (set[k] = vm_gptr(vm, a[k + 1], words * 8)) == NULL)
			return -EFAULT;
	if ((p = calloc(nfds ? nfds : 1, sizeof(*p))) == NULL)
		return -ENOMEM;
	for (i = 0; i < nfds; i++) {
		int16_t e = 0;

		for (k = 0; k < 3; k++)
			if (set[k] != NULL && (set[k][i / 64] >> (i % 64)) & 1)
				e |= ev[k];
		if (e != 0) {
			p[n].fd = (int32_t)i;
			p[n++].events = e;
		}
	}
	rc = wait_fds(vm, p, n, timeout_ns);
	if (rc == VM_PARKED) {
		free(p);
		return 0;
	}
	if (rc >= 0) {
		for (k = 0; k < 3; k++)
			if (set[k] != NULL)
				memset(set[k], 0, words * 8);
		for (i = 0; i < n && rc >= 0; i++) {
			if (p[i].revents & POLLNVAL) {
				rc = -EBADF;
				break;
			}
			for (k = 0; k < 3; k++) {
				int16_t hit = k == 0
				    ? POLLIN | POLLHUP | POLLERR
				    : k == 1 ? POLLOUT | POLLERR
				             : POLLPRI;

				if (set[k] != NULL && (p[i].events & ev[k]) &&
				    (p[i].revents & hit)) {
					set[k][p[i].fd / 64] |= 1ULL
					    << (p[i].fd % 64);
					count++;
				}
			}
		}
	}
	free(p);
	return rc < 0 ? rc : count;
}

int64_t
sys_select(struct vm *vm, const uint64_t a[6])
{
	const int64_t *g;
	int64_t tv[2];

	if (a[4] == 0)
		return do_select(vm, a, -1);
	if ((g = vm_gptr(vm, a[4], sizeof(tv))) == NULL)
		return -EFAULT;
	memcpy(tv, g, sizeof(tv));
	if (tv[0] < 0 || tv[1] < 0 || tv[1] >= 1000000)
		return -EINVAL;
	return do_select(vm, a,
	    tv[0] > INT64_MAX / 1000000000 - 1
	        ? INT64_MAX
	        : tv[0] * 1000000000 + tv[1] * 1000);
}

int64_t
sys_pselect6(struct vm *vm, const uint64_t a[6])
{
	int64_t ns, rc;

	if ((rc = timespec_ns(vm, a[4], &ns)) != 0)
		return rc;
	return do_select(vm, a, ns);
}

/*
 * File locks (docs/vmm.md, "File locks"): fcntl's record locks (POSIX
 * and open-file-description ones) and flock(2), between a sandbox's
 * processes and its runs, as sqlite, pip, git and multiprocessing take
 * them. Each guest process is a host process of its own (its vm
 * process, proc.c) and each workspace file a host descriptor of it, so a
 * guest's lock is that descriptor's lock in the host: POSIX locks belong
 * to the process, OFD and flock locks to the open file, which a guest
 * fork and dup share as the host's do. The host decides conflicts;
 * keep only checks what the guest hands it and waits.
 *
 * A wait (F_SETLKW, F_OFD_SETLKW, flock without LOCK_NB) is not the
 * host's blocking call, which a kick could not end without a race: the
 * VMM tries the lock, and while another holds it, sleeps and tries
 * again, a thread with others parked meanwhile (sys_thread.c). So a
 * guest signal ends the wait with EINTR as on Linux, and a deadlock
 * between two waiters is not detected (no EDEADLK): they wait until one
 * is killed or the run's limit ends it.
 *
 * Descriptors without a host file (an image file, a synthetic one, the
 * output) have no other writer: a read lock on them, and flock, are
 * granted at once; a write lock on a descriptor not open for writing is
 * EBADF, as Linux answers.
 */
#include <sys/file.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define LOCK_POLL_US 2000 /* the first sleep of a wait */
#define LOCK_POLL_MAX_US 50000 /* and the longest */

/* The kernel's struct flock on x86-64, as the guest lays it out. */
struct gflock {
	int16_t type, whence;
	uint32_t pad0;
	int64_t start, len;
	int32_t pid;
	uint32_t pad1;
};
_Static_assert(sizeof(struct gflock) == 32, "x86-64 struct flock");

/* Sleep us between two tries of a lock: 0 to try again, -EINTR when a
 * signal the guest acts on came, or the run is over. */
static int
lock_sleep(struct vm *vm, uint64_t us)
{
	return vm_signal_wait_fds(vm, NULL, 0, (int64_t)us * 1000) < 0 ? -EINTR
	                                                               : 0;
}

/*
 * After a try of a waiting call found the lock held: LOCK_AGAIN when
 * the caller may try again (it slept *us, which grows), LOCK_PARKED
 * when the thread was parked, to issue the call again (its value is not
 * used), or -EINTR.
 */
#define LOCK_PARKED 1
#define LOCK_AGAIN 2
static int
lock_wait(struct vm *vm, uint64_t *us)
{
	int rc;

	if (vm->threads != NULL &&
	    vm_thread_park(
	        vm, NULL, 0, vm_now_us() + LOCK_POLL_US, VM_PARK_AGAIN))
		return LOCK_PARKED;
	if ((rc = lock_sleep(vm, *us)) != 0)
		return rc;
	*us = *us * 2 < LOCK_POLL_MAX_US ? *us * 2 : LOCK_POLL_MAX_US;
	return LOCK_AGAIN;
}

/* The guest pid of the run's process whose vm process is host pid hp:
 * a lock's holder as F_GETLK names it. 0 for a holder outside the run
 * (another run of the sandbox): no host pid reaches a guest. */
static int32_t
holder_pid(struct vm *vm, pid_t hp)
{
	int32_t g = vm_guest_pid_of(vm, hp);

	return g > 0 ? g : 0;
}

int64_t
vm_fcntl_lock(struct vm *vm, struct vfd *f, uint64_t cmd, uint64_t arg)
{
	struct gflock g;
	const void *gp;
	struct flock fl;
	int hcmd, wait, get, ofd, acc;
	uint64_t us = LOCK_POLL_US;
	int64_t rc;

	switch (cmd) {
	case F_GETLK:
	case F_SETLK:
	case F_SETLKW:
	case F_OFD_GETLK:
	case F_OFD_SETLK:
	case F_OFD_SETLKW:
		break;
	default:
		return -EINVAL;
	}
	hcmd = (int)cmd;
	get = cmd == F_GETLK || cmd == F_OFD_GETLK;
	wait = cmd == F_SETLKW || cmd == F_OFD_SETLKW;
	ofd = cmd >= F_OFD_GETLK;
	if ((gp = vm_gptr(vm, arg, sizeof(g))) == NULL)
		return -EFAULT;
	memcpy(&g, gp, sizeof(g));
	if ((g.type != F_RDLCK && g.type != F_WRLCK && g.type != F_UNLCK) ||
	    (g.whence != SEEK_SET && g.whence != SEEK_CUR &&
	        g.whence != SEEK_END) ||
	    (ofd && g.pid != 0))
		return -EINVAL;
	if (f->kind != VFD_HOST || f->pipe || f->sock) {
		/* No other process can write what this descriptor reads. */
		acc = f->kind == VFD_OUT ? O_WRONLY : f->flags & O_ACCMODE;
		if (!get &&
		    ((g.type == F_RDLCK && acc == O_WRONLY) ||
		        (g.type == F_WRLCK && acc == O_RDONLY)))
			return -EBADF;
		if (!get)
			return 0;
		g.type = F_UNLCK;
		return vm_put(vm, arg, &g, sizeof(g)) != 0 ? -EFAULT : 0;
	}
	for (;;) {
		memset(&fl, 0, sizeof(fl));
		fl.l_type = g.type;
		fl.l_whence = g.whence;
		fl.l_start = g.start;
		fl.l_len = g.len;
		fl.l_pid = 0;
		if (fcntl(f->hostfd,
		        wait ? (ofd ? F_OFD_SETLK : F_SETLK) : hcmd, &fl) == 0)
			break;
		if (!wait || (errno != EAGAIN && errno != EACCES))
			return -errno;
		if ((rc = lock_wait(vm, &us)) != LOCK_AGAIN)
			return rc == LOCK_PARKED ? 0 : rc;
	}
	if (!get)
		return 0;
	g.type = fl.l_type;
	g.whence = fl.l_whence;
	g.start = fl.l_start;
	g.len = fl.l_len;
	g.pid = fl.l_type == F_UNLCK ? 0 : ofd ? -1 : holder_pid(vm, fl.l_pid);
	return vm_put(vm, arg, &g, sizeof(g)) != 0 ? -EFAULT : 0;
}

int64_t
sys_flock(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);
	uint64_t op = a[1], us = LOCK_POLL_US;
	int kind = (int)(op & ~(uint64_t)LOCK_NB), wait;
	int64_t rc;

	if (f == NULL)
		return -EBADF;
	if ((op & ~(uint64_t)(LOCK_SH | LOCK_EX | LOCK_UN | LOCK_NB)) != 0 ||
	    (kind != LOCK_SH && kind != LOCK_EX && kind != LOCK_UN))
		return -EINVAL;
	if (f->kind != VFD_HOST || f->sock)
		return 0; /* no other holder can exist */
	wait = !(op & LOCK_NB) && kind != LOCK_UN;
	for (;;) {
		if (flock(f->hostfd, wait ? kind | LOCK_NB : (int)op) == 0)
			return 0;
		if (!wait || errno != EWOULDBLOCK)
			return -errno;
		if ((rc = lock_wait(vm, &us)) != LOCK_AGAIN)
			return rc == LOCK_PARKED ? 0 : rc;
	}
}

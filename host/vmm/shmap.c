/*
 * Shared mappings (docs/vmm.md, "Shared mappings"): a guest's MAP_SHARED
 * of a workspace file open for writing, or of nothing (MAP_ANONYMOUS),
 * is the host file's own pages in guest memory. Every guest process that
 * maps the same file, a forked child that keeps its parent's mapping,
 * and the file's own read and write all see one copy, as in Linux: the
 * index of sqlite's WAL, POSIX semaphores and shared memory in /dev/shm
 * (multiprocessing), an anonymous shared mapping across fork.
 *
 * Under KVM the vm process maps the file over guest memory's host
 * range, and KVM follows the host's mapping. On the trap platform the
 * stub maps the same file at the same guest address (TRAP_OP_MAP), and
 * a range given back takes the guest memory's own pages again
 * (TRAP_OP_RESTORE). Each mapping keeps a descriptor of its file, so a
 * fork's child can map it again over its own copy of memory.
 *
 * What the guest holds of such a range is charged as any mmap's pages;
 * the file's pages are the file's (the workspace's quota, or, for an
 * anonymous one, a memfd that lives as long as some process maps it).
 */
#include <sys/mman.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

/* Each mapping is a host mapping in this process (and the stub's), of
 * the 65,530 the kernel allows, and a descriptor. */
#define SHMAP_MAX 1024

struct vm_shmap {
	uint64_t addr, len, off;
	int fd;
};

/*
 * A file made shorter under a mapping: the pages past its end raise
 * SIGBUS where the vm process reads or writes them for a call. Such a
 * page becomes a private page of zeroes here, so the call goes on (the
 * guest's own touch of it faults, as in Linux); it is no longer shared
 * with the file, which only a guest that shortened a file it maps can
 * notice.
 */
static uintptr_t guard_lo, guard_hi;

static void
on_sigbus(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr & ~(uintptr_t)(VM_PAGE - 1);

	(void)uc;
	if (a >= guard_lo && a < guard_hi &&
	    mmap((void *)a, VM_PAGE, PROT_READ | PROT_WRITE,
	        MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED)
		return;
	signal(sig, SIG_DFL); /* the fault again, as it would have been */
}

static int
guard(struct vm *vm)
{
	struct sigaction sa;

	if (guard_lo == (uintptr_t)vm->mem)
		return 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, NULL) != 0)
		return -1;
	guard_lo = (uintptr_t)vm->mem;
	guard_hi = (uintptr_t)vm->mem + vm->memsz;
	return 0;
}

/* Guest memory's own pages back at [a, a + n) of the host mapping. */
static void
unshare_host(struct vm *vm, uint64_t a, uint64_t n)
{
	void *p;

	if (vm->on_trap)
		p = mmap(vm->mem + a, n, PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED, vm->mem_fd, (off_t)a);
	else
		p = mmap(vm->mem + a, n, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_FIXED | MAP_ANONYMOUS | MAP_NORESERVE, -1,
		    0);
	if (p == MAP_FAILED)
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: guest memory could not be remapped: %s",
		    strerror(errno));
}

static struct vm_shmap *
add(struct vm *vm)
{
	unsigned cap = vm->shmaps_cap ? vm->shmaps_cap * 2 : 16;
	struct vm_shmap *n;

	if (vm->nshmaps >= SHMAP_MAX)
		return NULL;
	if (vm->nshmaps == vm->shmaps_cap) {
		if ((n = reallocarray(vm->shmaps, cap, sizeof(*n))) == NULL)
			return NULL;
		vm->shmaps = n;
		vm->shmaps_cap = cap;
	}
	return &vm->shmaps[vm->nshmaps++];
}

/* The file's pages at [g, g + len) in both views; 0 or -errno. */
static int
map_both(struct vm *vm, int fd, uint64_t g, uint64_t len, uint64_t off)
{
	if (!vm->stub_view_only &&
	    mmap(vm->mem + g, len, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_FIXED, fd, (off_t)off) == MAP_FAILED)
		return -errno;
	if (vm->on_trap && vm_trap_map_shared(vm, g, len, fd, off) != 0)
		return -errno;
	return 0;
}

int64_t
vm_shmap(struct vm *vm, int fd, uint64_t g, uint64_t len, uint64_t off)
{
	struct vm_shmap *s;
	int own, rc;

	if (guard(vm) != 0)
		return -ENOMEM;
	if ((own = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return errno == EMFILE ? -ENFILE : -ENOMEM;
	if ((s = add(vm)) == NULL) {
		close(own);
		return -ENOMEM;
	}
	if ((rc = map_both(vm, own, g, len, off)) != 0) {
		vm->nshmaps--;
		unshare_host(vm, g, len);
		close(own);
		/* The host's reasons a guest can act on: a file not open
		 * for writing, one that cannot be mapped. */
		return rc == -EACCES || rc == -ENODEV ? rc : -ENOMEM;
	}
	*s = (struct vm_shmap){ g, len, off, own };
	return 0;
}

/* A shared mapping of nothing: a memfd of its own, shared by the
 * process's forked children. */
int64_t
vm_shmap_anon(struct vm *vm, uint64_t g, uint64_t len)
{
	int64_t rc;
	int fd;

	if ((fd = memfd_create("keep-shared", MFD_CLOEXEC)) == -1)
		return -ENOMEM;
	if (ftruncate(fd, (off_t)len) == -1) {
		close(fd);
		return -ENOMEM;
	}
	rc = vm_shmap(vm, fd, g, len, 0);
	close(fd);
	return rc;
}

void
vm_shmap_release(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len, a, b, s_end;
	struct vm_shmap *s, *tail;
	unsigned i;
	int fd;

	for (i = 0; i < vm->nshmaps;) {
		s = &vm->shmaps[i];
		s_end = s->addr + s->len;
		if (s_end <= addr || s->addr >= end) {
			i++;
			continue;
		}
		a = s->addr > addr ? s->addr : addr;
		b = s_end < end ? s_end : end;
		unshare_host(vm, a, b - a);
		if (vm->on_trap)
			vm_trap_restore(vm, a, b - a);
		if (a > s->addr && b < s_end) {
			/* A hole in the middle: the part above is a mapping
			 * of its own. */
			if ((fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0)) == -1 ||
			    (tail = add(vm)) == NULL) {
				if (fd >= 0)
					close(fd);
				/* Unshared rather than lost track of. */
				unshare_host(vm, b, s_end - b);
				if (vm->on_trap)
					vm_trap_restore(vm, b, s_end - b);
				s = &vm->shmaps[i];
				s->len = a - s->addr;
				i++;
				continue;
			}
			s = &vm->shmaps[i]; /* add may have moved the array */
			*tail = (struct vm_shmap){ b, s_end - b,
				s->off + (b - s->addr), fd };
			s->len = a - s->addr;
			i++;
		} else if (a > s->addr) {
			s->len = a - s->addr;
			i++;
		} else if (b < s_end) {
			s->off += b - s->addr;
			s->len = s_end - b;
			s->addr = b;
			i++;
		} else {
			close(s->fd);
			*s = vm->shmaps[--vm->nshmaps];
		}
	}
}

int
vm_shmap_holds(const struct vm *vm, uint64_t addr)
{
	unsigned i;

	for (i = 0; i < vm->nshmaps; i++)
		if (addr >= vm->shmaps[i].addr &&
		    addr - vm->shmaps[i].addr < vm->shmaps[i].len)
			return 1;
	return 0;
}

int
vm_shmap_overlaps(const struct vm *vm, uint64_t addr, uint64_t len)
{
	unsigned i;

	for (i = 0; i < vm->nshmaps; i++)
		if (vm->shmaps[i].addr < addr + len &&
		    addr < vm->shmaps[i].addr + vm->shmaps[i].len)
			return 1;
	return 0;
}

int
vm_shmap_refork(struct vm *vm)
{
	unsigned i;
	int rc;

	if (vm->nshmaps > 0 && guard(vm) != 0)
		return -1;
	for (i = 0; i < vm->nshmaps; i++)
		if ((rc = map_both(vm, vm->shmaps[i].fd, vm->shmaps[i].addr,
		         vm->shmaps[i].len, vm->shmaps[i].off)) != 0) {
			errno = -rc;
			return -1;
		}
	return 0;
}

void
vm_shmap_forget(struct vm *vm)
{
	unsigned i;

	for (i = 0; i < vm->nshmaps; i++)
		close(vm->shmaps[i].fd);
	free(vm->shmaps);
	vm->shmaps = NULL;
	vm->nshmaps = vm->shmaps_cap = 0;
}

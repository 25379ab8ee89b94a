/*
 * The guest's address space: brk, mmap and the rest (docs/vmm.md, "Guest
 * memory"). The page allocator behind mmap is mem.c's.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define MAP_SHARED_ 0x01
#define MAP_PRIVATE_ 0x02
#define MAP_FIXED_ 0x10
#define MAP_ANONYMOUS_ 0x20
#define MAP_FIXED_NOREPLACE_ 0x100000
#define PROT_NONE_ 0
#define PROT_READ_ 0x1
#define PROT_WRITE_ 0x2
#define PROT_EXEC_ 0x4

/* The heap's bytes as the tree's memory charge counts them: whole
 * pages. */
static uint64_t
brk_pages(const struct vm *vm, uint64_t end)
{
	return (end - vm->brk_start + VM_PAGE - 1) & ~(VM_PAGE - 1);
}

/* The host pages of the heap the guest may touch end here. */
static uint64_t
brk_host_end(const struct vm *vm, uint64_t cur)
{
	return (cur + VM_PAGE - 1) & ~(VM_PAGE - 1);
}

int64_t
sys_brk(struct vm *vm, const uint64_t a[6])
{
	uint64_t want = a[0], now, then, open, next;

	/* A vfork child in its parent's memory (vm_int.h, mem_borrowed)
	 * changes no mapping: the parent's table of them is its own, and
	 * POSIX leaves such a child only execve and _exit. */
	if (want == 0 || want < vm->brk_start || want > vm->brk_max ||
	    vm->mem_borrowed)
		return (int64_t)vm->brk_cur;
	now = brk_pages(vm, vm->brk_cur);
	then = brk_pages(vm, want);
	open = brk_host_end(vm, vm->brk_cur);
	next = brk_host_end(vm, want);
	if (then > now && vm_mem_charge(vm, then - now) != 0)
		return (int64_t)vm->brk_cur; /* as Linux's brk refuses */
	if (next > open && vm_space_open(vm, open, next - open) != 0) {
		vm_mem_uncharge(vm, then - now);
		return (int64_t)vm->brk_cur;
	}
	if (then < now)
		vm_mem_uncharge(vm, now - then);
	if (want < vm->brk_cur) {
		/* Shrinking: what comes back later must read as zero; whole
		 * pages are closed (dropped) again. */
		memset(vm->mem + want, 0,
		    (next < vm->brk_cur ? next : vm->brk_cur) - want);
		if (next < open && vm_space_close(vm, next, open - next) != 0)
			return (int64_t)vm->brk_cur;
	}
	vm->brk_cur = want;
	if (want > vm->brk_peak)
		vm->brk_peak = want;
	return (int64_t)want;
}

/* Pages of [g, g+len) of the mmap area in state st. */
static uint64_t
pages_in(const struct vm *vm, uint64_t g, uint64_t len, uint8_t st)
{
	uint64_t i, n = 0;

	for (i = (g - vm->mmap_lo) / VM_PAGE;
	     i < (g + len - vm->mmap_lo) / VM_PAGE; i++)
		n += vm->mmap_used[i] == st;
	return n;
}

/*
 * MAP_FIXED over pages the guest mapped: they read as zeroes from now
 * on, and are held (charged and open) or reserved (neither) as the new
 * mapping is. 0 or -ENOMEM, with nothing changed but image pages made
 * zeroes (as a failed MAP_FIXED in Linux may leave the range unmapped).
 */
static int
mmap_over(struct vm *vm, uint64_t g, uint64_t len, int reserved)
{
	uint64_t held, resv, first = (g - vm->mmap_lo) / VM_PAGE;

	vm_shmap_release(vm, g, len);
	vm_imgmap_release(vm, g, len, 1);
	held = pages_in(vm, g, len, VM_PG_HELD);
	resv = pages_in(vm, g, len, VM_PG_RESERVED);
	if (reserved) {
		if (vm_space_close(vm, g, len) != 0)
			return -ENOMEM;
		vm_mem_uncharge(vm, held * VM_PAGE);
		vm_pages_mark(vm, first, len / VM_PAGE, VM_PG_RESERVED);
		vm->mmap_reserved_pages += held;
		return 0;
	}
	if (resv > 0 && vm_mem_charge(vm, resv * VM_PAGE) != 0)
		return -ENOMEM;
	if (vm_space_open(vm, g, len) != 0) {
		vm_mem_uncharge(vm, resv * VM_PAGE);
		return -ENOMEM;
	}
	vm_mmap_zero(vm, g, len);
	vm_pages_mark(vm, first, len / VM_PAGE, VM_PG_HELD);
	vm->mmap_reserved_pages -= resv;
	return 0;
}

enum { SHARE_NOT = -1, SHARE_ANON = -2 };

/* What a MAP_SHARED maps as shared: SHARE_ANON, a host descriptor (a
 * regular workspace file open for reading and writing), or SHARE_NOT. */
static int64_t
shared_source(struct vm *vm, uint64_t flags, uint64_t guest_fd)
{
	const struct vfd *f;
	struct stat st;

	if (flags & MAP_ANONYMOUS_)
		return SHARE_ANON;
	if (guest_fd >= vm->nfds)
		return SHARE_NOT;
	f = &vm->fds[guest_fd];
	if (f->kind == VFD_DEV && f->dev == VM_DEV_ZERO)
		return SHARE_ANON; /* Linux's /dev/zero: shared anonymous */
	if (f->kind != VFD_HOST || f->pipe || f->sock ||
	    (f->flags & O_ACCMODE) != O_RDWR || fstat(f->hostfd, &st) != 0 ||
	    !S_ISREG(st.st_mode))
		return SHARE_NOT;
	return f->hostfd;
}

int64_t
sys_mmap(struct vm *vm, const uint64_t a[6])
{
	uint64_t addr = a[0], len = a[1], flags = a[3], off = a[5];
	uint64_t g, peak = vm->mmap_pages_peak;
	int64_t n = 0;
	/* An anonymous PROT_NONE mapping is a reservation: address space,
	 * not memory, as Linux's commit accounting counts it. */
	int reserved = a[2] == PROT_NONE_ && (flags & MAP_ANONYMOUS_);

	if (vm->mem_borrowed)
		return -ENOMEM; /* as brk */
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
		if (mmap_over(vm, g, len, reserved) != 0)
			return -ENOMEM;
	} else if ((g = vm_mmap_take(vm, len, reserved)) == 0)
		return -ENOMEM;
	/* A shared mapping of a file open for writing, or of nothing, is
	 * the host file's pages (shmap.c); an image file's pages are
	 * mapped copy-on-write (imgmap.c); any other file mapping is a
	 * copy, shared with nothing (a read-only one too: docs/vmm.md). */
	if ((flags & MAP_SHARED_) && !reserved &&
	    (n = shared_source(vm, flags, a[4])) != SHARE_NOT)
		n = n == SHARE_ANON ? vm_shmap_anon(vm, g, len)
		                    : vm_shmap(vm, (int)n, g, len, off);
	else if (!(flags & MAP_ANONYMOUS_) &&
	    (n = vm_imgmap(
	         vm, (int)a[4], g, len, off, (a[2] & PROT_WRITE_) != 0)) >= 0 &&
	    (uint64_t)n < len)
		n = vm_mmap_fill(vm, (int)a[4], g + (uint64_t)n,
		    len - (uint64_t)n, off + (uint64_t)n);
	if (n < 0) {
		if (!(flags & (MAP_FIXED_ | MAP_FIXED_NOREPLACE_)))
			vm_mmap_free(vm, g, len);
		return n == -ESPIPE ? -ENODEV : n;
	}
	/* The peak as of the call's end: pages the image backs were
	 * counted by the allocation a moment ago. */
	vm->mmap_pages_peak = peak;
	vm_space_peak(vm);
	return (int64_t)g;
}

int64_t
sys_mremap(struct vm *vm, const uint64_t a[6])
{
	uint64_t old = a[0], olen = a[1], nlen = a[2], flags = a[3], g;

	if (vm->mem_borrowed)
		return -ENOMEM; /* as brk */
	if (old % VM_PAGE != 0 || olen == 0 || nlen == 0 ||
	    !vm_mmap_is_used(vm, old, olen))
		return -EINVAL;
	/* Before rounding: a length near 2^64 would wrap to a small one
	 * (Linux's rounds to 0: EINVAL). */
	if (nlen > UINT64_MAX - (VM_PAGE - 1))
		return -EINVAL;
	if (nlen > vm->mmap_hi - vm->mmap_lo)
		return -ENOMEM;
	olen = (olen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	nlen = (nlen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if (nlen <= olen) {
		if (nlen < olen)
			vm_mmap_free(vm, old + nlen, olen - nlen);
		return (int64_t)old;
	}
	if (!(flags & 1 /* MREMAP_MAYMOVE */))
		return -ENOMEM;
	/* A reservation is not moved: its closed pages would be copied. */
	if (pages_in(vm, old, olen, VM_PG_RESERVED) != 0)
		return -ENOMEM;
	/* A copy would be shared with nothing any more. */
	if (vm_shmap_overlaps(vm, old, olen))
		return -ENOMEM;
	if ((g = vm_mmap_alloc(vm, nlen)) == 0)
		return -ENOMEM;
	memcpy(vm->mem + g, vm->mem + old, olen);
	vm_mmap_free(vm, old, olen);
	return (int64_t)g;
}

int64_t
sys_munmap(struct vm *vm, const uint64_t a[6])
{
	if (vm->mem_borrowed)
		return -ENOMEM; /* as brk */
	return vm_mmap_free(vm, a[0], a[1]);
}

/*
 * [addr, addr + len) in whole pages, as mprotect and msync take it: 1
 * when empty, -ENOMEM when it runs into memory the guest has not mapped
 * (Linux's answer), else 0 with its part in the mmap area in [*lo, *hi)
 * (empty when it lies below).
 */
static int
mapped_range(const struct vm *vm, uint64_t addr, uint64_t len, uint64_t *lo,
    uint64_t *hi)
{
	uint64_t end;

	if (len > UINT64_MAX - (VM_PAGE - 1))
		return -ENOMEM;
	len = (len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if ((end = addr + len) < addr)
		return -ENOMEM;
	if (len == 0)
		return 1;
	if (addr < vm->mmap_lo && end > brk_host_end(vm, vm->brk_cur))
		return -ENOMEM;
	*lo = addr > vm->mmap_lo ? addr : vm->mmap_lo;
	*hi = end < vm->mmap_hi ? end : vm->mmap_hi;
	if (*lo >= *hi)
		return 1;
	if (pages_in(vm, *lo, *hi - *lo, VM_PG_FREE) != 0)
		return -ENOMEM;
	return 0;
}

/*
 * The guest's 2 MiB pages hold no per-page rights, so only the host's
 * matter here (mem_space.c): a reserved page made accessible is charged
 * and opened, as Linux charges a private mapping made writable. One made
 * PROT_NONE keeps its charge and stays open, as Linux keeps the commit:
 * its contents must survive for a later mprotect, and a page that held
 * them uncharged would be memory past the limit.
 */
int64_t
sys_mprotect(struct vm *vm, const uint64_t a[6])
{
	uint64_t addr = a[0], len = a[1], prot = a[2], lo = 0, hi = 0, resv;
	int rc;

	if (addr % VM_PAGE != 0)
		return -EINVAL;
	if (prot &
	    ~(uint64_t)(PROT_READ_ | PROT_WRITE_ | PROT_EXEC_ | 0x8 /* SEM */ |
	        0x01000000 /* GROWSDOWN */ | 0x02000000 /* GROWSUP */))
		return -EINVAL;
	if ((rc = mapped_range(vm, addr, len, &lo, &hi)) < 0)
		return rc;
	/* On trap, image pages the guest's process maps read-only
	 * (imgmap.c): made writable, they are guest memory's own again,
	 * with the bytes they held (the program's segments, below the mmap
	 * area, too). */
	if (prot & PROT_WRITE_)
		vm_imgmap_unshare(
		    vm, addr, (len + VM_PAGE - 1) & ~(VM_PAGE - 1));
	if (rc != 0 || (prot & (PROT_READ_ | PROT_WRITE_ | PROT_EXEC_)) == 0 ||
	    (resv = pages_in(vm, lo, hi - lo, VM_PG_RESERVED)) == 0)
		return 0;
	if (vm_mem_charge(vm, resv * VM_PAGE) != 0)
		return -ENOMEM;
	/* The whole range is opened below, image pages among it: as
	 * guest memory's own (the stub's read-only mapping of the image
	 * would refuse to open). */
	vm_imgmap_unshare(vm, lo, hi - lo);
	/* Held pages in the range are open already: opening the whole
	 * range keeps one host call per mprotect. */
	if (vm_space_open(vm, lo, hi - lo) != 0) {
		vm_mem_uncharge(vm, resv * VM_PAGE);
		return -ENOMEM;
	}
	vm_pages_mark(
	    vm, (lo - vm->mmap_lo) / VM_PAGE, (hi - lo) / VM_PAGE, VM_PG_HELD);
	vm->mmap_reserved_pages -= resv;
	vm_space_peak(vm);
	return 0;
}

/*
 * A shared mapping is the file's own pages (shmap.c), so what msync would
 * write is the file's already, as after a write(2); any other mapping is
 * a copy with nothing to write back. Linux's checks and answers stay.
 */
int64_t
sys_msync(struct vm *vm, const uint64_t a[6])
{
	uint64_t addr = a[0], len = a[1], flags = a[2], lo = 0, hi = 0;
	int rc;

	if (addr % VM_PAGE != 0 || (flags & ~(uint64_t)7) != 0 ||
	    (flags & 5) == 5 /* MS_ASYNC | MS_SYNC */)
		return -EINVAL;
	rc = mapped_range(vm, addr, len, &lo, &hi);
	return rc < 0 ? rc : 0;
}

/*
 * mlock and its kin: nothing of the guest's memory is ever paged out by
 * keep (it is charged against the run's memory limit while held), so a
 * lock has nothing to do; Linux's checks stay: a range that runs into
 * memory the guest has not mapped is ENOMEM, unknown flags EINVAL. The
 * guest's RLIMIT_MEMLOCK is unlimited (prlimit64), so no lock is too
 * big.
 */
static int64_t
lock_range(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t lo = 0, hi = 0, start = addr & ~(uint64_t)(VM_PAGE - 1);
	int rc;

	if (len > UINT64_MAX - (addr - start))
		return -ENOMEM;
	rc = mapped_range(vm, start, len + (addr - start), &lo, &hi);
	return rc < 0 ? rc : 0;
}

int64_t
sys_mlock(struct vm *vm, const uint64_t a[6])
{
	return lock_range(vm, a[0], a[1]);
}

int64_t
sys_mlock2(struct vm *vm, const uint64_t a[6])
{
	if ((a[2] & ~(uint64_t)1 /* MLOCK_ONFAULT */) != 0)
		return -EINVAL;
	return lock_range(vm, a[0], a[1]);
}

int64_t
sys_mlockall(struct vm *vm, const uint64_t a[6])
{
	uint64_t flags = a[0];

	(void)vm;
	/* MCL_CURRENT 1, MCL_FUTURE 2, MCL_ONFAULT 4 (with one of them). */
	if (flags == 0 || (flags & ~(uint64_t)7) != 0 || flags == 4)
		return -EINVAL;
	return 0;
}

int64_t
sys_munlockall(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return 0;
}

/*
 * membarrier's private commands: a process's threads take turns on its
 * one vCPU and every switch goes through the VMM, so by the time the
 * call returns every other thread of the process has passed a full
 * barrier (and a core serializing one) already. The global commands
 * would reach the sandbox's other processes, whose shared memory the
 * guest has no other way to fence yet: not offered, as a kernel
 * without them. Registration is not tracked: an expedited barrier
 * before its registration, EPERM in Linux, is answered 0.
 */
#define MEMBARRIER_PRIVATE_CMDS (8 | 16 | 32 | 64)

int64_t
sys_membarrier(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	if (a[1] != 0)
		return -EINVAL;
	if (a[0] == 0 /* MEMBARRIER_CMD_QUERY */)
		return MEMBARRIER_PRIVATE_CMDS;
	if ((a[0] & (a[0] - 1)) != 0 || (a[0] & MEMBARRIER_PRIVATE_CMDS) == 0)
		return -EINVAL;
	return 0;
}

int64_t
sys_madvise(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return 0;
}

/*
 * The guest's address space: brk, mmap and the rest (docs/vmm.md, "Guest
 * memory"). The page allocator behind mmap is mem.c's.
 */
#include <errno.h>
#include <string.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define MAP_SHARED_ 0x01
#define MAP_PRIVATE_ 0x02
#define MAP_FIXED_ 0x10
#define MAP_ANONYMOUS_ 0x20
#define MAP_FIXED_NOREPLACE_ 0x100000

/* The heap's bytes as the tree's memory charge counts them: whole
 * pages. */
static uint64_t
brk_pages(const struct vm *vm, uint64_t end)
{
	return (end - vm->brk_start + VM_PAGE - 1) & ~(VM_PAGE - 1);
}

int64_t
sys_brk(struct vm *vm, const uint64_t a[6])
{
	uint64_t want = a[0], now, then;

	if (want == 0 || want < vm->brk_start || want > vm->brk_max)
		return (int64_t)vm->brk_cur;
	now = brk_pages(vm, vm->brk_cur);
	then = brk_pages(vm, want);
	if (then > now && vm_mem_charge(vm, then - now) != 0)
		return (int64_t)vm->brk_cur; /* as Linux's brk refuses */
	if (then < now)
		vm_mem_uncharge(vm, now - then);
	if (want < vm->brk_cur)
		/* Shrinking: what comes back later must read as zero. */
		memset(vm->mem + want, 0, vm->brk_cur - want);
	vm->brk_cur = want;
	if (want > vm->brk_peak)
		vm->brk_peak = want;
	return (int64_t)want;
}

int64_t
sys_mmap(struct vm *vm, const uint64_t a[6])
{
	uint64_t addr = a[0], len = a[1], flags = a[3], off = a[5];
	uint64_t g, peak = vm->mmap_pages_peak;
	int64_t n = 0;

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
		vm_mmap_zero(vm, g, len);
	} else if ((g = vm_mmap_alloc(vm, len)) == 0)
		return -ENOMEM;
	/* An image file's pages are mapped copy-on-write (imgmap.c);
	 * any other private file mapping is a copy: the guest has no
	 * shared memory with anything. */
	if (!(flags & MAP_ANONYMOUS_) &&
	    (n = vm_imgmap(vm, (int)a[4], g, len, off)) >= 0 &&
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
	vm->mmap_pages_peak =
	    vm->mmap_pages_used > peak ? vm->mmap_pages_used : peak;
	return (int64_t)g;
}

int64_t
sys_mremap(struct vm *vm, const uint64_t a[6])
{
	uint64_t old = a[0], olen = a[1], nlen = a[2], flags = a[3], g;

	if (old % VM_PAGE != 0 || olen == 0 || nlen == 0 ||
	    !vm_mmap_is_used(vm, old, olen))
		return -EINVAL;
	olen = (olen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	nlen = (nlen + VM_PAGE - 1) & ~(VM_PAGE - 1);
	if (nlen <= olen) {
		if (nlen < olen)
			vm_mmap_free(vm, old + nlen, olen - nlen);
		return (int64_t)old;
	}
	if (!(flags & 1 /* MREMAP_MAYMOVE */))
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
	return vm_mmap_free(vm, a[0], a[1]);
}

/* 2 MiB pages cannot hold per-page rights. */
int64_t
sys_mprotect(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return a[0] % VM_PAGE == 0 ? 0 : -EINVAL;
}

int64_t
sys_madvise(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return 0;
}

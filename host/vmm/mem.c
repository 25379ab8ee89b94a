/*
 * Guest memory from the host's side: the one checked way to turn a guest
 * address into a host pointer, and the page allocator behind mmap.
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/abi.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

void *
vm_gptr(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	if (end < addr || addr < GUEST_LOW_END || end > vm->memsz)
		return NULL;
	/* The stack guard is unmapped in the guest: not addressable. */
	if (addr < vm->stack_lo && end > vm->stack_lo - VM_HUGE)
		return NULL;
	/* Nor are pages the guest does not hold (mem_space.c). */
	if (!vm_space_ok(vm, addr, end))
		return NULL;
	return vm->mem + addr;
}

int
vm_gstr(struct vm *vm, uint64_t addr, char *out, size_t max)
{
	size_t i;
	const char *p;

	for (i = 0; i < max; i++) {
		if ((p = vm_gptr(vm, addr + i, 1)) == NULL)
			return -EFAULT;
		out[i] = *p;
		if (*p == '\0')
			return 0;
	}
	return -ENAMETOOLONG;
}

int64_t
vm_put(struct vm *vm, uint64_t addr, const void *p, size_t len)
{
	void *g;

	if ((g = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	memcpy(g, p, len);
	return 0;
}

int64_t
vm_get(struct vm *vm, uint64_t addr, void *p, size_t len)
{
	const void *g;

	if ((g = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	memcpy(p, g, len);
	return 0;
}

int
vm_mem_init(struct vm *vm)
{
	size_t pages = (size_t)((vm->mmap_hi - vm->mmap_lo) / VM_PAGE);
	void *used, *file;

	/*
	 * Mappings of their own, not calloc: 784,384 pages (3 GiB) of a
	 * machine image's area are two 766 KiB maps for every execve, which
	 * malloc, its mmap threshold raised by the last one freed, served
	 * from the heap and cleared, 100 us and more; fresh pages read as
	 * zeroes, and stay unmapped where nothing is held (mmap_low).
	 */
	vm->mmap_maps_len = pages ? pages : 1;
	vm->mmap_low = pages;
	used = mmap(NULL, vm->mmap_maps_len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	file = mmap(NULL, vm->mmap_maps_len, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	vm->mmap_used = used == MAP_FAILED ? NULL : used;
	vm->mmap_file = file == MAP_FAILED ? NULL : file;
	vm->mmap_file_pages = vm->file_touched_pages = 0;
	vm->mmap_reserved_pages = 0;
	vm->imgmaps = 0;
	vm->nimgruns = 0;
	if (vm->mmap_used == NULL || vm->mmap_file == NULL)
		return -1;
	return vm_space_sync(vm);
}

void
vm_mem_maps_free(struct vm *vm)
{
	if (vm->mmap_used != NULL)
		munmap(vm->mmap_used, vm->mmap_maps_len);
	if (vm->mmap_file != NULL)
		munmap(vm->mmap_file, vm->mmap_maps_len);
	vm->mmap_used = vm->mmap_file = NULL;
}

/* A template's spare, ahead of its run: each page of the mmap area's two
 * page maps read once. Pages of them never written are mapped by no one
 * (fresh anonymous pages, vm_mem_init, and a fork copies no mapping of
 * them), and the run's end reads the image map whole (vm_imgmap_settle):
 * about 100 first-touch faults of a python clone's, before its result
 * was final. */
void
vm_mem_maps_touch(struct vm *vm)
{
	size_t pages = (size_t)((vm->mmap_hi - vm->mmap_lo) / VM_PAGE), i;
	volatile const uint8_t *used = vm->mmap_used, *file = vm->mmap_file;
	uint8_t sum = 0;

	if (used == NULL || file == NULL || pages == 0)
		return;
	/* A byte a page, and the last (the maps need not start on one). */
	for (i = 0; i < pages; i += VM_PAGE)
		sum = (uint8_t)(sum + used[i] + file[i]);
	sum = (uint8_t)(sum + used[pages - 1] + file[pages - 1]);
	(void)sum;
}

int
vm_mem_charge(struct vm *vm, uint64_t bytes)
{
	if (vm_proc_mem_charge(vm, bytes) != 0)
		return -ENOMEM;
	vm->mem_charged += bytes;
	return 0;
}

void
vm_mem_uncharge(struct vm *vm, uint64_t bytes)
{
	if (bytes > vm->mem_charged)
		bytes = vm->mem_charged;
	vm->mem_charged -= bytes;
	vm_proc_mem_uncharge(vm, bytes);
}

uint64_t
vm_mmap_alloc(struct vm *vm, uint64_t len)
{
	return vm_mmap_take(vm, len, 0);
}

/* First fit from the top, so the mmap area grows down towards brk as
 * Linux's does. */
uint64_t
vm_mmap_take(struct vm *vm, uint64_t len, int reserved)
{
	size_t pages = (size_t)((vm->mmap_hi - vm->mmap_lo) / VM_PAGE);
	size_t want, run = 0, i;

	if (len == 0 || len > vm->mmap_hi - vm->mmap_lo)
		return 0;
	want = (size_t)((len + VM_PAGE - 1) / VM_PAGE);
	for (i = pages; i-- > 0;) {
		if (vm->mmap_used[i]) {
			run = 0;
			continue;
		}
		if (++run == want) {
			uint64_t g = vm->mmap_lo + (uint64_t)i * VM_PAGE;

			if (reserved) {
				vm_pages_mark(vm, i, want, VM_PG_RESERVED);
				vm->mmap_reserved_pages += want;
			} else {
				if (vm_mem_charge(vm, want * VM_PAGE) != 0)
					return 0;
				if (vm_space_open(vm, g, want * VM_PAGE) != 0) {
					vm_mem_uncharge(vm, want * VM_PAGE);
					return 0;
				}
				vm_pages_mark(vm, i, want, VM_PG_HELD);
			}
			vm->mmap_pages_used += want;
			vm_space_peak(vm);
			return g;
		}
	}
	return 0;
}

int
vm_mmap_is_used(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t i;

	if (addr < vm->mmap_lo || addr + len < addr || addr + len > vm->mmap_hi)
		return 0;
	for (i = (addr - vm->mmap_lo) / VM_PAGE;
	     i < (addr + len - vm->mmap_lo + VM_PAGE - 1) / VM_PAGE; i++)
		if (!vm->mmap_used[i])
			return 0;
	return 1;
}

/*
 * Zeroes by giving the pages back (MADV_DONTNEED on private anonymous
 * memory reads as zeroes after), not by writing them: ld.so maps each
 * library's whole extent and then its segments over it with MAP_FIXED,
 * and writing zeroes made the host allocate and clear every page of
 * the extent, about 8 ms of a cold `import numpy`. Image pages there
 * are anonymous again first (vm_imgmap_release: madvise would bring
 * the file's bytes back); memset is the fallback.
 */
void
vm_mmap_zero(struct vm *vm, uint64_t addr, uint64_t len)
{
	vm_shmap_release(vm, addr, len);
	vm_imgmap_release(vm, addr, len, 1);
	if (madvise(vm->mem + addr, len,
	        vm->on_trap ? MADV_REMOVE : MADV_DONTNEED) != 0)
		memset(vm->mem + addr, 0, len);
}

/* Free and zero: the next mapping there must read as zeroes, as
 * anonymous memory does. Pages outside the area are ignored, as Linux
 * ignores unmapping what is not mapped. */
int
vm_mmap_free(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t end, i, freed = 0;

	if (addr % VM_PAGE != 0 || len == 0)
		return -EINVAL;
	len = (len + VM_PAGE - 1) & ~(VM_PAGE - 1);
	end = addr + len;
	if (end < addr)
		return -EINVAL;
	if (addr < vm->mmap_lo)
		addr = vm->mmap_lo;
	if (end > vm->mmap_hi)
		end = vm->mmap_hi;
	if (addr >= end)
		return 0;
	/* Image pages become anonymous ones first (madvise would bring
	 * the file's bytes back, not zeroes), counted as held until the
	 * loop below frees them. A shared mapping's pages give way to
	 * guest memory's own before anything drops them: dropped, the
	 * file's would be lost. */
	vm_shmap_release(vm, addr, end - addr);
	vm_imgmap_release(vm, addr, end - addr, 1);
	for (i = (addr - vm->mmap_lo) / VM_PAGE;
	     i < (end - vm->mmap_lo) / VM_PAGE; i++) {
		if (vm->mmap_used[i] == VM_PG_HELD)
			freed++;
		else if (vm->mmap_used[i] == VM_PG_RESERVED)
			vm->mmap_reserved_pages--;
		else
			continue;
		vm->mmap_used[i] = VM_PG_FREE;
		vm->mmap_pages_used--;
	}
	vm_mem_uncharge(vm, freed * VM_PAGE);
	vm_space_close(vm, addr, end - addr);
	return 0;
}

/* The contents of a private file mapping: reads at off until len bytes
 * or the end of the file (the rest stays zero, as past a file's end in
 * Linux). One read may be short (fs.c caps each), so it loops. */
int64_t
vm_mmap_fill(struct vm *vm, int fd, uint64_t g, uint64_t len, uint64_t off)
{
	uint64_t done = 0;

	while (done < len) {
		uint64_t r[6] = { (uint64_t)fd, g + done, len - done,
			off + done, 0, 0 };
		int64_t n = sys_pread64(vm, r);

		if (n < 0)
			return n;
		if (n == 0)
			break;
		done += (uint64_t)n;
	}
	return (int64_t)done;
}

/*
 * What the guest may touch (docs/vmm.md, "Reservations").
 *
 * The guest's page tables map all of its memory with 2 MiB pages, which
 * hold no per-page rights, so what the guest can reach is decided in the
 * host instead: a page of the brk or mmap area is open in this process
 * (readable and writable) while it is charged to the tree's memory
 * charge, and PROT_NONE otherwise. KVM faults guest memory in through
 * this process's mappings, so a guest touch of a closed page fails in
 * KVM_RUN and stops the guest, and vm_gptr refuses it to system calls.
 * The memory a process can make the host hold is then its charge plus
 * its program's segments and its stack, whatever the size of its
 * address space.
 *
 * That is what lets a reservation cost nothing: a PROT_NONE anonymous
 * mapping (V8's 512 MiB code range, glibc's 64 MiB arenas, thread stack
 * guards) takes address space, not charge, as Linux's commit accounting
 * does not count it. It is charged when mprotect makes it accessible.
 * Address space for such reservations beyond the memory limit is the
 * image's to ask for (VM_RESERVE_FILE): guest memory is the limit plus
 * that reserve, which costs KVM a little per GiB (its page maps, about
 * 0.25 ms of a boot) and nothing else until touched.
 */
#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"
#include "lib/units.h"

#define PAGE_UP(x) (((x) + VM_PAGE - 1) & ~(VM_PAGE - 1))
#define RESERVE_MAX (8ULL << 30)
#define SPACE_MAX ((uint64_t)GUEST_PD_MAX << 30)

int
vm_reserve_parse(const uint8_t *data, size_t len, uint64_t *bytes)
{
	size_t i, start, n, found = 0;
	uint64_t v = 0;

	*bytes = 0;
	if (len > VM_RESERVE_FILE_MAX)
		return -1;
	for (start = 0, i = 0; i <= len; i++) {
		if (i < len && data[i] != '\n')
			continue;
		n = i - start;
		if (n > 0 && data[start] != '#') {
			if (found++ > 0 ||
			    units_parse_size(
			        (const char *)data + start, n, &v) != 0 ||
			    v > RESERVE_MAX)
				return -1;
		}
		start = i + 1;
	}
	*bytes = (v + VM_HUGE - 1) & ~(VM_HUGE - 1);
	return 0;
}

int
vm_space_plan(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t limit = (cfg->memory + VM_HUGE - 1) & ~(VM_HUGE - 1);
	uint64_t r = 0;
	size_t i;

	for (i = 0; i < cfg->nfiles; i++) {
		const struct vmm_file *f = &cfg->files[i];

		if (strcmp(f->path, VM_RESERVE_FILE) != 0)
			continue;
		if (vm_img_verify(vm, f) != 0 ||
		    vm_reserve_parse(f->data, f->len, &r) != 0) {
			snprintf(err, errlen,
			    "a malformed or tampered %s in the image",
			    VM_RESERVE_FILE);
			return VMM_E_INVAL;
		}
		break;
	}
	/* The page tables reach 16 GiB: a limit near it leaves less. */
	if (limit >= SPACE_MAX)
		r = 0;
	else if (r > SPACE_MAX - limit)
		r = SPACE_MAX - limit;
	vm->reserve = r;
	vm->memsz = limit + r;
	return VMM_OK;
}

#define STACK_MAX (8ULL << 20)

uint64_t
vm_space_stack(uint64_t memsz)
{
	uint64_t span = memsz / 8 < STACK_MAX ? memsz / 8 : STACK_MAX;

	return (span + VM_HUGE - 1) & ~(VM_HUGE - 1);
}

/* Everything but the reserve's share of the mmap area, its top, which is
 * below the stack's guard: the rest vm_mem_init closes later as the
 * layout is known. */
int
vm_space_map(struct vm *vm, uint8_t *mem)
{
	uint64_t top = vm->memsz - vm_space_stack(vm->memsz) - VM_HUGE;

	/* The trap platform's guest starts with nothing open: it is given
	 * what the host opens, in the same order (trap.c). */
	if (vm->reserve == 0 || top < vm->reserve)
		vm_trap_protect(vm, 0, vm->memsz, 1);
	else {
		vm_trap_protect(vm, 0, top - vm->reserve, 1);
		vm_trap_protect(vm, top, vm->memsz - top, 1);
	}
	if (vm->reserve == 0)
		return 0;
	if (top < vm->reserve) /* too small to boot: load_program says so */
		return mprotect(mem, vm->memsz, PROT_READ | PROT_WRITE);
	if (mprotect(mem, top - vm->reserve, PROT_READ | PROT_WRITE) != 0 ||
	    mprotect(mem + top, vm->memsz - top, PROT_READ | PROT_WRITE) != 0)
		return -1;
	return 0;
}

uint64_t
vm_space_limit(const struct vm *vm)
{
	return vm->memsz - vm->reserve;
}

/* The first page of the brk area that is closed: brk pages are opened
 * as the break grows (the page that holds brk_start is the program's). */
uint64_t
vm_space_low_end(const struct vm *vm)
{
	return PAGE_UP(
	    vm->brk_cur > vm->brk_start ? vm->brk_cur : vm->brk_start);
}

int
vm_space_ok(const struct vm *vm, uint64_t addr, uint64_t end)
{
	uint64_t lo, hi, i;

	if (vm->mmap_used == NULL || end <= addr)
		return 1;
	if (addr < vm->mmap_lo && end > vm_space_low_end(vm))
		return 0;
	lo = addr > vm->mmap_lo ? addr : vm->mmap_lo;
	hi = end < vm->mmap_hi ? end : vm->mmap_hi;
	for (i = lo; i < hi; i = (i & ~(VM_PAGE - 1)) + VM_PAGE)
		if (vm->mmap_used[(i - vm->mmap_lo) / VM_PAGE] != VM_PG_HELD)
			return 0;
	return 1;
}

int
vm_space_open(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (len == 0)
		return 0;
	/* KVM reaches it before the guest may touch it (mem_slots.c). */
	if (!vm->on_trap && vm_memslots_reach(vm, addr, len) != 0)
		return -ENOMEM;
	vm->space_gen++;
	if (mprotect(vm->mem + addr, len, PROT_READ | PROT_WRITE) != 0)
		return -ENOMEM;
	vm_trap_protect(vm, addr, len, 1);
	return 0;
}

/*
 * Dropped first, then closed: a page reopened later must read as zeroes,
 * as a new anonymous mapping does. mprotect (not a new mapping) keeps
 * the host mapping's advice (a template's huge pages) for when it opens
 * again. Either call can fail only at the kernel's bound on mappings
 * (vm.max_map_count); a page that stayed open would be one the charge
 * no longer counts, so the guest is stopped instead.
 */
int
vm_space_close(struct vm *vm, uint64_t addr, uint64_t len)
{
	if (len == 0)
		return 0;
	vm->space_gen++;
	vm_trap_protect(vm, addr, len, 0);
	if (vm->stub_view_only)
		return 0;
	/* A shared mapping's pages are its memfd's: MADV_REMOVE frees
	 * them, where MADV_DONTNEED would only unmap them here, which is
	 * all a vfork child may do to its parent's. */
	if (madvise(vm->mem + addr, len,
	        vm->on_trap && !vm->mem_borrowed ? MADV_REMOVE
	                                         : MADV_DONTNEED) != 0 ||
	    mprotect(vm->mem + addr, len, PROT_NONE) != 0) {
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: guest memory could not be remapped: %s",
		    strerror(errno));
		return -1;
	}
	return 0;
}

size_t
vm_space_held_run(const struct vm *vm, size_t i, size_t *end)
{
	const uint64_t held8 = 0x0101010101010101ULL * VM_PG_HELD;
	const uint8_t *u = vm->mmap_used, *p;
	size_t pages = (size_t)((vm->mmap_hi - vm->mmap_lo) / VM_PAGE), j;
	uint64_t w;

	if (i < vm->mmap_low)
		i = vm->mmap_low;
	if (i >= pages || (p = memchr(u + i, VM_PG_HELD, pages - i)) == NULL)
		return *end = pages;
	i = (size_t)(p - u);
	for (j = i + 1; j + 8 <= pages; j += 8) {
		memcpy(&w, u + j, 8);
		if (w != held8)
			break;
	}
	while (j < pages && u[j] == VM_PG_HELD)
		j++;
	*end = j;
	return i;
}

int
vm_space_sync(struct vm *vm)
{
	uint64_t b = vm_space_low_end(vm);
	size_t i, at, end;

	if (b < vm->mmap_lo && vm_space_close(vm, b, vm->mmap_lo - b) != 0)
		return -1;
	/* The gaps between held runs, each closed in one call. */
	for (i = 0; vm->mmap_lo + (uint64_t)i * VM_PAGE < vm->mmap_hi;
	     i = end) {
		at = vm_space_held_run(vm, i, &end);
		if (at > i &&
		    vm_space_close(vm, vm->mmap_lo + (uint64_t)i * VM_PAGE,
		        (uint64_t)(at - i) * VM_PAGE) != 0)
			return -1;
	}
	return 0;
}

int
vm_space_reopen(struct vm *vm)
{
	return vm_space_sync(vm);
}

void
vm_space_pause(struct vm *vm, uint64_t nr)
{
	if (vm->mmap_reserved_pages != 0) {
		vm_snap_unsaved(vm, "it holds PROT_NONE reservations");
		return;
	}
	if (vm->nshmaps != 0) {
		vm_snap_unsaved(vm, "it holds shared mappings");
		return;
	}
	/* The save reads only what the program holds, all of it open
	 * (snapshot.c sort_pages): nothing to open first, which with a
	 * reserve could pass the vm process's RLIMIT_DATA. */
	vm_snap_pause(vm, nr);
}

void
vm_space_peak(struct vm *vm)
{
	uint64_t held = vm->mmap_pages_used - vm->mmap_reserved_pages;

	if (held > vm->mmap_pages_peak)
		vm->mmap_pages_peak = held;
}

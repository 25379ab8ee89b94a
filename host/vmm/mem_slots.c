/*
 * What KVM can reach of guest memory (docs/vmm.md, "Guest memory").
 *
 * Guest memory is one host mapping of the memory limit and the image's
 * reserve, 2 GiB for the python image, of which a small program holds a
 * few MiB. Under shadow paging (kvm-pvm) KVM allocates per-page arrays
 * for each memory slot: registering 2 GiB as one slot took about 440 us
 * and made the VM's destruction 300 us longer, against 27 us for 64
 * MiB. So memory is registered only where the guest can use it, in
 * slots that only grow: one front from the bottom (the kernel's pages,
 * the program, the brk heap) up to reach_lo, and one from the top (the
 * stack and the mmap area, which is allocated top down) down to
 * reach_hi. Each slot added at least doubles its front, so a run makes
 * few of them (each KVM_SET_USER_MEMORY_REGION waits for an SRCU grace
 * period, about 15 us here), and their number stays bounded.
 *
 * A slot may cover pages the guest does not hold: those are PROT_NONE
 * in the host (mem_space.c), and a touch fails in KVM_RUN as before. A
 * guest touch of memory outside every slot is one KVM emulates as MMIO
 * or fails to emulate; the vCPU loop (kvm.c) takes either as a touch of
 * memory the guest does not hold. Slots are only made when the host
 * opens memory for the guest (vm_space_open) or at a program's load,
 * never at the guest's asking.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <string.h>

#include "host/vmm/vm_int.h"

/* Guest memory of at most this much is one slot: two fronts would cost
 * a second ioctl (and likely a third as one grows) to save less. */
#define SLOTS_WHOLE_MAX (128ULL << 20)
/* What a front is given at the load beyond what the program needs
 * then: room for the brk heap's start, and for the loader and the first
 * libraries and arenas of the mmap area (a python print(1) maps about
 * 7 MiB there). */
#define SLOTS_LOW_ROOM (8ULL << 20)
#define SLOTS_HIGH_ROOM (16ULL << 20)
/* The least a front grows by. */
#define SLOTS_STEP_MIN (16ULL << 20)

#define HUGE_DOWN(x) ((x) & ~(VM_HUGE - 1))

static uint64_t
huge_up(uint64_t x, uint64_t cap)
{
	if (x >= cap || cap - x < VM_HUGE)
		return cap;
	return HUGE_DOWN(x + VM_HUGE - 1);
}

/* One slot over guest [gpa, gpa+size) in the current VM, with the next
 * slot number: 0, or -1 with errno and nothing registered. */
static int
slot_add(struct vm *vm, uint64_t gpa, uint64_t size)
{
	struct kvm_userspace_memory_region region;

	if (!vm->memslots_live || size == 0)
		return 0;
	if (vm->nmemslots == VM_MEMSLOTS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	memset(&region, 0, sizeof(region));
	region.slot = vm->nmemslots;
	region.flags = vm->memslots_log ? KVM_MEM_LOG_DIRTY_PAGES : 0;
	region.guest_phys_addr = gpa;
	region.memory_size = size;
	region.userspace_addr = (uint64_t)(uintptr_t)(vm->mem + gpa);
	if (ioctl(vm->vmfd, KVM_SET_USER_MEMORY_REGION, &region) == -1)
		return -1;
	vm->memslots[vm->nmemslots].gpa = gpa;
	vm->memslots[vm->nmemslots].size = size;
	vm->nmemslots++;
	return 0;
}

void
vm_memslots_plan(struct vm *vm)
{
	uint64_t high;

	vm->memslots_live = 0;
	vm->nmemslots = 0;
	vm->memslots_log = 0;
	if (vm->memsz <= SLOTS_WHOLE_MAX) {
		vm->reach_lo = vm->reach_hi = vm->memsz;
		return;
	}
	vm->reach_lo = huge_up(vm->brk_start + SLOTS_LOW_ROOM, vm->memsz);
	/* The stack, its guard, and room below for the mmap area's top. */
	high = vm->stack_lo - VM_HUGE;
	high = high > SLOTS_HIGH_ROOM ? HUGE_DOWN(high - SLOTS_HIGH_ROOM) : 0;
	vm->reach_hi = high > vm->reach_lo ? high : vm->reach_lo;
}

int
vm_memslots_reach(struct vm *vm, uint64_t addr, uint64_t len)
{
	uint64_t lo, hi, step, edge;

	if (addr > vm->memsz || len > vm->memsz - addr) {
		errno = EINVAL;
		return -1;
	}
	lo = addr > vm->reach_lo ? addr : vm->reach_lo;
	hi = addr + len < vm->reach_hi ? addr + len : vm->reach_hi;
	if (lo >= hi)
		return 0;
	/*
	 * [lo, hi) lies between the fronts: the nearer one grows over it,
	 * by at least its own size. The last slot there is room for, if it
	 * came to that, closes the gap whole.
	 */
	if (lo - vm->reach_lo <= vm->reach_hi - hi) {
		step = vm->reach_lo > SLOTS_STEP_MIN ? vm->reach_lo
		                                     : SLOTS_STEP_MIN;
		edge = vm->reach_hi - vm->reach_lo > step ? vm->reach_lo + step
		                                          : vm->reach_hi;
		edge = huge_up(hi > edge ? hi : edge, vm->reach_hi);
		if (vm->nmemslots + 1 >= VM_MEMSLOTS_MAX)
			edge = vm->reach_hi;
		if (slot_add(vm, vm->reach_lo, edge - vm->reach_lo) != 0)
			return -1;
		vm_pt_open(vm, vm->reach_lo, edge);
		vm->reach_lo = edge;
	} else {
		step = vm->memsz - vm->reach_hi > SLOTS_STEP_MIN
		    ? vm->memsz - vm->reach_hi
		    : SLOTS_STEP_MIN;
		edge = vm->reach_hi - vm->reach_lo > step ? vm->reach_hi - step
		                                          : vm->reach_lo;
		edge = HUGE_DOWN(lo < edge ? lo : edge);
		if (edge < vm->reach_lo || vm->nmemslots + 1 >= VM_MEMSLOTS_MAX)
			edge = vm->reach_lo;
		if (slot_add(vm, edge, vm->reach_hi - edge) != 0)
			return -1;
		vm_pt_open(vm, edge, vm->reach_hi);
		vm->reach_hi = edge;
	}
	return 0;
}

int
vm_memslots_register(struct vm *vm)
{
	vm->nmemslots = 0;
	vm->memslots_live = 1;
	/* Fronts that met are one slot. */
	if (vm->reach_lo >= vm->reach_hi)
		return slot_add(vm, 0, vm->memsz);
	if (slot_add(vm, 0, vm->reach_lo) != 0 ||
	    slot_add(vm, vm->reach_hi, vm->memsz - vm->reach_hi) != 0)
		return -1;
	return 0;
}

void
vm_memslots_drop(struct vm *vm)
{
	vm->memslots_live = 0;
	vm->nmemslots = 0;
}

int
vm_memslots_cover(const struct vm *vm, uint64_t addr, uint64_t end)
{
	uint64_t lo, hi;

	if (end > vm->memsz || addr > end)
		return 0;
	lo = addr > vm->reach_lo ? addr : vm->reach_lo;
	hi = end < vm->reach_hi ? end : vm->reach_hi;
	return lo >= hi;
}

int
vm_memslots_log(struct vm *vm)
{
	struct kvm_userspace_memory_region region;
	unsigned i;

	if (!vm->memslots_live) {
		errno = EINVAL;
		return -1;
	}
	vm->memslots_log = 1;
	/* The same slot with another flag: KVM changes it in place. */
	for (i = 0; i < vm->nmemslots; i++) {
		memset(&region, 0, sizeof(region));
		region.slot = i;
		region.flags = KVM_MEM_LOG_DIRTY_PAGES;
		region.guest_phys_addr = vm->memslots[i].gpa;
		region.memory_size = vm->memslots[i].size;
		region.userspace_addr =
		    (uint64_t)(uintptr_t)(vm->mem + vm->memslots[i].gpa);
		if (ioctl(vm->vmfd, KVM_SET_USER_MEMORY_REGION, &region) == -1)
			return -1;
	}
	return 0;
}

int
vm_memslots_dirty(struct vm *vm, uint64_t *bits)
{
	struct kvm_dirty_log log;
	unsigned i;

	if (!vm->memslots_live || !vm->memslots_log) {
		errno = EINVAL;
		return -1;
	}
	/* Each slot starts and ends on a 2 MiB boundary, 512 pages: its
	 * bitmap is whole words of the guest's, at its own place. */
	for (i = 0; i < vm->nmemslots; i++) {
		memset(&log, 0, sizeof(log));
		log.slot = i;
		log.dirty_bitmap = bits + vm->memslots[i].gpa / VM_PAGE / 64;
		if (ioctl(vm->vmfd, KVM_GET_DIRTY_LOG, &log) == -1)
			return -1;
	}
	return 0;
}

void
vm_memslots_result(struct vm *vm)
{
	unsigned i;

	vm->res->memslots = vm->nmemslots;
	vm->res->memslot_bytes = 0;
	for (i = 0; i < vm->nmemslots; i++)
		vm->res->memslot_bytes += vm->memslots[i].size;
}

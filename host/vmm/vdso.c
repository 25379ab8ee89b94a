/*
 * The guest's vDSO from the host's side (docs/vmm.md "Time"): its image
 * and data page in the kernel's first 2 MiB, and the data page kept in
 * step with the host's clocks.
 *
 * The guest reads its clocks as the host's CLOCK_MONOTONIC and
 * CLOCK_REALTIME at a base instant plus its own TSC since then, at the
 * rate KVM gives the vCPU's TSC (KVM_GET_TSC_KHZ). The base is taken at
 * boot, after execve, on a VM rebuilt around the guest (fork, a
 * template) and at least a second apart at later exits, and never moves
 * the guest's monotonic clock back.
 */
#include <sys/ioctl.h>

#include <string.h>
#include <time.h>

#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"
#include "vdso/vvar.h"

#define MSR_IA32_TSC 0x10
#define VDSO_RESYNC_US 1000000
#define VDSO_TRIES 8
#define VDSO_WINDOW_NS 20000 /* a pairing this tight is good enough */

extern const unsigned char guest_vdso[];
extern const size_t guest_vdso_len;

_Static_assert(sizeof(struct keep_vvar) <= VM_PAGE, "one data page");
_Static_assert(GUEST_VVAR + VM_PAGE <= GUEST_VDSO &&
        GUEST_VDSO + GUEST_VDSO_MAX <= GUEST_LOW_END,
    "the vDSO lies in the kernel's 2 MiB");

uint64_t
vm_vdso_base(void)
{
	return guest_vdso_len <= GUEST_VDSO_MAX ? GUEST_VDSO : 0;
}

void
vm_vdso_install(struct vm *vm)
{
	memset(vm->mem + GUEST_VVAR, 0, VM_PAGE);
	if (vm_vdso_base() != 0)
		memcpy(vm->mem + GUEST_VDSO, guest_vdso, guest_vdso_len);
	vm->vdso_sync_us = 0;
}

static int
guest_tsc(struct vm *vm, uint64_t *tsc)
{
	union {
		struct kvm_msrs h;
		uint8_t bytes[sizeof(struct kvm_msrs) +
		    sizeof(struct kvm_msr_entry)];
	} m;

	memset(&m, 0, sizeof(m));
	m.h.nmsrs = 1;
	m.h.entries[0].index = MSR_IA32_TSC;
	if (ioctl(vm->vcpufd, KVM_GET_MSRS, &m) != 1)
		return -1;
	*tsc = m.h.entries[0].data;
	return 0;
}

static uint64_t
host_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The vCPU's TSC paired with the host's clocks read just after it, so
 * the guest's clocks start ahead of the host's by the time between the
 * two, never behind: a guest that reads its clock, sleeps on the host
 * for a time and reads it again sees at least that time pass. The
 * host's monotonic clock read before the TSC bounds that lead; a
 * process preempted in between would make it large, so the tightest of
 * a few tries is kept. 0, or -1 when KVM cannot say.
 */
static int
pair_clocks(struct vm *vm, uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
	uint64_t t, before, after, best = UINT64_MAX;
	int i;

	for (i = 0; i < VDSO_TRIES && best > VDSO_WINDOW_NS; i++) {
		before = host_ns(CLOCK_MONOTONIC);
		if (guest_tsc(vm, &t) != 0)
			return -1;
		after = host_ns(CLOCK_MONOTONIC);
		if (after - before < best) {
			best = after - before;
			*tsc = t;
			*mono = after;
			*real = host_ns(CLOCK_REALTIME);
		}
	}
	return 0;
}

void
vm_vdso_sync(struct vm *vm)
{
	struct keep_vvar *v = (struct keep_vvar *)(vm->mem + GUEST_VVAR);
	uint64_t tsc = 0, mono = 0, real = 0, mult, guest;
	int khz;

	if (vm_vdso_base() == 0)
		return;
	/* The trap platform's guest reads the host's TSC, at a rate KVM
	 * is not there to give: every clock call is a call, for now. */
	if (vm->on_trap) {
		v->enabled = 0;
		return;
	}
	khz = ioctl(vm->vcpufd, KVM_GET_TSC_KHZ, 0);
	if (khz <= 0 || pair_clocks(vm, &tsc, &mono, &real) != 0) {
		v->enabled = 0; /* every clock call exits, as before */
		return;
	}
	mult = (1000000ULL << VVAR_SHIFT) / (uint64_t)khz;
	if (v->enabled) {
		/* What the guest reads now: never step back from it. */
		guest = v->mono_ns +
		    (uint64_t)(((unsigned __int128)(tsc > v->tsc_base
		                        ? tsc - v->tsc_base
		                        : 0) *
		                   v->mult) >>
		        VVAR_SHIFT);
		if (guest > mono) {
			real += guest - mono;
			mono = guest;
		}
	}
	v->tsc_base = tsc;
	v->mult = mult;
	v->mono_ns = mono;
	v->real_ns = real;
	v->enabled = 1;
	vm->vdso_sync_us = vm_now_us();
}

void
vm_vdso_tick(struct vm *vm)
{
	if (vm->vdso_sync_us != 0 &&
	    vm_now_us() - vm->vdso_sync_us >= VDSO_RESYNC_US)
		vm_vdso_sync(vm);
}

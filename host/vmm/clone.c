/*
 * A guest's vCPU carried into a new VM: its state captured at an exit,
 * and a VM rebuilt around the same guest memory in this process or in a
 * forked one. fork (proc.c) and templates build on it.
 *
 * Guest memory is one MAP_PRIVATE anonymous mapping, so a host fork
 * gives the child a copy-on-write copy of it for free; the child then
 * needs only a VM of its own over that mapping (a KVM VM belongs to the
 * mm that created it) and the vCPU's state.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/vm_int.h"
#include "lib/log.h"

#define MSR_IA32_TSC 0x10

_Static_assert(sizeof(struct kvm_xsave) == VM_XSAVE_LEGACY,
    "KVM_GET_XSAVE copies the legacy area, no more");

/* Read or write one MSR. */
static int
msr_io(int vcpufd, unsigned long req, uint32_t index, uint64_t *value)
{
	union {
		struct kvm_msrs h;
		uint8_t bytes[sizeof(struct kvm_msrs) +
		    sizeof(struct kvm_msr_entry)];
	} m;

	memset(&m, 0, sizeof(m));
	m.h.nmsrs = 1;
	m.h.entries[0].index = index;
	m.h.entries[0].data = *value;
	if (ioctl(vcpufd, req, &m) != 1)
		return -1;
	*value = m.h.entries[0].data;
	return 0;
}

int
vm_cpu_capture(struct vm *vm, struct vm_cpu_state *st)
{
	memset(st, 0, sizeof(*st));
	/* The run area holds the registers of the last exit
	 * (kvm_valid_regs), including any the host changed since, which
	 * KVM would load at the next entry anyway. */
	st->regs = vm->run->s.regs.regs;
	st->sregs = vm->run->s.regs.sregs;
	if (vm->on_trap) {
		/* The frame's whole FPU area as the last event brought it;
		 * the TSC is the host's own, which never restarts. */
		st->trap_fpu_len = (uint32_t)vm_trap_fpu_area(
		    vm, st->xsave, sizeof(st->xsave));
		return vm_trap_fpu_get(vm, &st->fpu);
	}
	st->has_xsave = (vm_cpuid_reg(1, 0, 2) >> 26) & 1;
	if (st->has_xsave) {
		if (ioctl(vm->vcpufd, KVM_GET_XSAVE, st->xsave) == -1)
			return -1;
	} else if (ioctl(vm->vcpufd, KVM_GET_FPU, &st->fpu) == -1)
		return -1;
	/* The guest reads the TSC with rdtsc: a new vCPU would restart it
	 * at zero and time would run backwards. */
	return msr_io(vm->vcpufd, KVM_GET_MSRS, MSR_IA32_TSC, &st->tsc);
}

int
vm_cpu_rebuild(
    struct vm *vm, const struct vm_cpu_state *st, char *err, size_t errlen)
{
	uint64_t tsc = st->tsc;

	if (vm->on_trap) {
		/* A new process over this process's memory (the caller
		 * made it this process's own), in the captured state. */
		if (vm_trap_create(vm, err, errlen) != 0)
			return -1;
		vm->run->s.regs.regs = st->regs;
		vm->run->s.regs.sregs = st->sregs;
		/* The whole area where it is the same layout (a fork), and
		 * the x87 and SSE state over it (a memory image keeps no
		 * more). */
		vm_trap_fpu_load_area(vm, st->xsave, st->trap_fpu_len);
		vm_trap_fpu_set(vm, &st->fpu);
		vm_vdso_sync(vm);
		return 0;
	}
	vm_kvm_drop(vm);
	if (vm_kvm_create(vm, err, errlen) != 0)
		return -1;
	if (vm_cpu_fixed(vm) != 0 ||
	    (st->has_xsave ? ioctl(vm->vcpufd, KVM_SET_XSAVE, st->xsave)
	                   : ioctl(vm->vcpufd, KVM_SET_FPU, &st->fpu)) == -1 ||
	    msr_io(vm->vcpufd, KVM_SET_MSRS, MSR_IA32_TSC, &tsc) != 0) {
		snprintf(
		    err, errlen, "restoring the vCPU: %s", strerror(errno));
		return -1;
	}
	/* General and segment registers go in through the run area, as at
	 * boot: KVM loads them at the next KVM_RUN. */
	vm->run->s.regs.regs = st->regs;
	vm->run->s.regs.sregs = st->sregs;
	vm->run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	vm->run->kvm_dirty_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	vm_vdso_sync(vm); /* the host's time has moved on meanwhile */
	return 0;
}

pid_t
vm_fork(struct vm *vm, const struct vm_cpu_state *st, int share, char *err,
    size_t errlen)
{
	pid_t pid;
	int fd = -1;

	/* The trap platform's memory is shared, not copied on write: the
	 * child's copy is made while the parent's guest waits here, its
	 * process asleep rather than spinning (the copy, the host fork and
	 * the child's start want both cores). A vfork's child takes no
	 * copy: it runs in its parent's memory until it execs (a new
	 * memfd) or exits, as under Linux, while the parent waits (proc.c);
	 * copying 50 MiB of pip for a child that only execs took 25 ms. */
	vm_trap_blocking(vm);
	if (vm->on_trap &&
	    (fd = share ? fcntl(vm->mem_fd, F_DUPFD_CLOEXEC, 0)
	                : vm_trap_fork_copy(vm)) == -1)
		return -1;
	if ((pid = fork()) != 0) {
		if (fd >= 0)
			close(fd);
		if (pid > 0 && vm->on_trap)
			vm_trap_spare_given(vm);
		return pid; /* the parent, or -1 */
	}
	/* Before the adopt, whose walk closes what the child does not
	 * hold: in the parent's memory, whose other threads may have
	 * mapped it since, that must not free a page (mem_space.c). */
	vm->mem_borrowed = vm->on_trap && share;
	if (vm->on_trap && vm_trap_fork_child(vm, fd, err, errlen) != 0) {
		log_warnx("guest fork: the child's memory: %s", err);
		_exit(127);
	}
	if (vm_cpu_rebuild(vm, st, err, errlen) != 0) {
		log_warnx("guest fork: the child's VM: %s", err);
		_exit(127);
	}
	return 0;
}

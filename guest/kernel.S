/*
 * The guest kernel: everything that runs at CPL0 in a keep guest. It is
 * position-dependent (the VMM copies it to GUEST_KERNEL) and tiny on
 * purpose: CPL0 code is emulated instruction by instruction under
 * kvm-pvm, so the only CPL0 work is handing control to the host. Page
 * tables, GDT, IDT and TSS are built by the VMM (host/vmm/kvm.c).
 */
#include "host/vmm/abi.h"

	.text
	.code64
	.globl	guest_kernel_start
guest_kernel_start:
/* LSTAR. The host reads the registers, performs the call and resumes
 * CPL3 at RCX itself; the hlt is never reached unless the host refuses
 * to resume, and then it stops the vCPU. */
syscall_entry:
	outb	%al, $PORT_SYSCALL
	hlt
	.balign	16, 0xf4

/* Vector v: 8 bytes each, AL = v. The exception frame stays on the
 * RSP0 stack for the host to read. */
vectors:
	.irp	v, 0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31
	movb	$\v, %al
	outb	%al, $PORT_EXCEPTION
	hlt
	.balign	8, 0xf4
	.endr
	.globl	guest_kernel_end
guest_kernel_end:

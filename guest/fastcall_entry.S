/*
 * LSTAR when the VMM has found the guest's `syscall` stays at CPL3
 * (kvm-pvm; docs/vmm.md "Calls answered in the guest"). The call's
 * registers are the program's: RAX the number, RDI RSI RDX R10 R8 R9 the
 * arguments, RCX and R11 the RIP and RFLAGS to return with. fast_call
 * (guest/fastcall.c) answers a few calls from what the VMM wrote at
 * GUEST_FASTDATA; everything else, and any call made while the VMM has
 * switched the answers off or with a stack the answers could not use,
 * goes to the kernel's stub and exits, with every register as it came.
 *
 * The answers are worked out on the caller's stack below its red zone,
 * as a signal frame would be, and the caller's RFLAGS are restored with
 * popfq there, as sysretq would restore them.
 */
#include "host/vmm/abi.h"

	.section .text.entry, "ax"
	.code64
	.globl	fast_entry
fast_entry:
	cmpq	$0, GUEST_FASTDATA		/* enabled */
	je	9f
	cmpq	GUEST_FASTDATA + 8, %rsp	/* sp_lo */
	jb	9f
	cmpq	GUEST_FASTDATA + 16, %rsp	/* sp_hi */
	jae	9f
	cmpq	GUEST_FASTDATA + 24, %rsp	/* gap_lo */
	jb	1f
	cmpq	GUEST_FASTDATA + 32, %rsp	/* gap_hi */
	jb	9f
1:	lea	-128(%rsp), %rsp
	push	%rbp
	mov	%rsp, %rbp
	and	$-16, %rsp
	push	%rax
	push	%rcx
	push	%r11
	push	%rdi
	push	%rsi
	push	%rdx
	push	%r10
	push	%r8
	push	%r9
	sub	$8, %rsp			/* the answer */
	mov	%rsp, %rdi			/* struct fast_regs */
	call	fast_call
	test	%eax, %eax
	jz	2f
	mov	(%rsp), %rax
	add	$8, %rsp
	pop	%r9
	pop	%r8
	pop	%r10
	pop	%rdx
	pop	%rsi
	pop	%rdi
	pop	%r11
	pop	%rcx
	add	$8, %rsp			/* the call's number */
	mov	%rbp, %rsp
	pop	%rbp
	push	%r11
	popfq
	lea	128(%rsp), %rsp
	jmp	*%rcx
2:	add	$8, %rsp
	pop	%r9
	pop	%r8
	pop	%r10
	pop	%rdx
	pop	%rsi
	pop	%rdi
	pop	%r11
	pop	%rcx
	pop	%rax
	mov	%rbp, %rsp
	pop	%rbp
	lea	128(%rsp), %rsp
9:	jmp	GUEST_SYSCALL_ENTRY

	.section .note.GNU-stack, "", @progbits

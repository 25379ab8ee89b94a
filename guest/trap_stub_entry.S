/*
 * The trap platform's stub: its entry, its system calls and its signal
 * return (guest/trap_stub.c says what the stub is). Every `syscall`
 * instruction of the stub is here, between stub_text_lo and
 * stub_text_hi, the range its seccomp filter allows a few calls from.
 */
	.section .text.entry, "ax"
	.globl	stub_text_lo
stub_text_lo:
	.globl	_stub_start
_stub_start:
	xor	%ebp, %ebp
	mov	%rsp, %rdi		/* argc, argv, envp, auxv */
	and	$-16, %rsp
	call	stub_main
	ud2

/* long stub_syscall6(nr, a0, a1, a2, a3, a4, a5) */
	.globl	stub_syscall6
stub_syscall6:
	mov	%rdi, %rax
	mov	%rsi, %rdi
	mov	%rdx, %rsi
	mov	%rcx, %rdx
	mov	%r8, %r10
	mov	%r9, %r8
	mov	8(%rsp), %r9
	syscall
	ret

/*
 * int stub_mprotect(addr, len, prot, const volatile uint64_t cookie[2])
 * The cookie goes from the box into R10 and R8, where mprotect ignores
 * it and the filter checks it, and is wiped from both before return.
 */
	.globl	stub_mprotect
stub_mprotect:
	mov	(%rcx), %r10
	mov	8(%rcx), %r8
	mov	$10, %eax		/* __NR_mprotect */
	syscall
	xor	%r10d, %r10d
	xor	%r8d, %r8d
	ret

/*
 * long stub_recvmsg(fd, msg, flags, const volatile uint64_t cookie[2])
 * The same cookie in R10 and R8, which recvmsg ignores.
 */
	.globl	stub_recvmsg
stub_recvmsg:
	mov	(%rcx), %r10
	mov	8(%rcx), %r8
	mov	$47, %eax		/* __NR_recvmsg */
	syscall
	xor	%r10d, %r10d
	xor	%r8d, %r8d
	ret

/* The restorer of every handler: rt_sigreturn from the stub's range. */
	.globl	stub_restorer
stub_restorer:
	mov	$15, %eax		/* __NR_rt_sigreturn */
	syscall
	ud2

/* The first trap: a call the filter refuses from here raises SIGSYS,
 * whose handler reports the boot and returns into the guest. */
	.globl	stub_boot_trap
stub_boot_trap:
	mov	$39, %eax		/* __NR_getpid */
	syscall
	ud2

	.globl	stub_text_hi
stub_text_hi:
	.section .note.GNU-stack, "", @progbits

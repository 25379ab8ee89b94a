/*
 * The smallest PVH guest for QEMU -M microvm: its 32-bit entry writes to
 * isa-debug-exit at once, so QEMU's boot-to-exit is what bench/boot times.
 */
	.section .note.Xen, "a"
	.balign	4
	.long	4		/* name size */
	.long	4		/* desc size */
	.long	18		/* XEN_ELFNOTE_PHYS32_ENTRY */
	.asciz	"Xen"
	.long	pvh_start

	.text
	.code32
	.globl	pvh_start
pvh_start:
	movb	$0, %al
	outb	%al, $0xf4
	hlt

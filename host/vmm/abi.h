/*
 * The ABI between the guest kernel stubs (guest/kernel.S) and the VMM:
 * the guest physical layout, the I/O ports the stubs use, and the
 * selectors. One header for both sides, so they cannot drift apart.
 *
 * The guest runs one static x86-64 Linux executable at CPL3. Its
 * `syscall` enters the CPL0 stub at GUEST_SYSCALL_ENTRY, which executes
 * one `out` to PORT_SYSCALL; the VMM then carries out the Linux call on
 * the host side and returns to CPL3 itself by setting RIP from RCX,
 * RFLAGS from R11 and the user CS and SS (a guest sysretq triple-faults
 * under kvm-pvm). Each exception vector v enters its own stub, which
 * puts v in AL and does an `out` to PORT_EXCEPTION.
 *
 * Guest physical = guest virtual (identity map). The first 2 MiB belong
 * to the kernel and are mapped supervisor-only; page 0 is not mapped.
 * Memory from 2 MiB up is the program's: ELF segments, brk heap, mmap
 * area, stack at the top.
 *
 * Besides Linux's calls the VMM serves one keep-specific call,
 * KEEP_SYS_FETCH (0x4b50): an outbound HTTP(S) request the policy must
 * grant. Its number and struct keep_fetch are defined in
 * guest/include/keep.h (the header image authors use); the vm process
 * serves it in host/vmm/fetch.c (docs/egress.md).
 */
#ifndef KEEP_VMM_ABI_H
#define KEEP_VMM_ABI_H

#define GUEST_PML4 0x1000
#define GUEST_PDPT 0x2000
#define GUEST_PD 0x3000 /* one PD page per GiB follows: 0x3000.. */
#define GUEST_PD_MAX 16 /* up to 16 GiB */
#define GUEST_PT_LOW 0x13000 /* 4 KiB pages of the first 2 MiB */
#define GUEST_GDT 0x14000
#define GUEST_IDT 0x15000
#define GUEST_TSS 0x16000
#define GUEST_TSS_LIMIT (104 + 32) /* I/O bitmap for ports 0-255 + 0xff */
#define GUEST_KERNEL 0x17000 /* guest/kernel.S, at most one page */
#define GUEST_KSTACK_TOP 0x20000 /* RSP0: exception frames land here */
/* The image's bytes, read-only, above all guest memory, for the guest's
 * own reads of its files (guest/fastcall.h): 2 MiB pages from these PD
 * pages, one per GiB. */
#define GUEST_IMAGE_GPA (64ULL << 30)
#define GUEST_IMAGE_MAX (8ULL << 30)
#define GUEST_IMAGE_PD 0x21000 /* 0x21000..0x28fff */
/* The vDSO (vdso/, host/vmm/vdso.c): its data page and its image, both
 * user read-only. */
#define GUEST_VVAR 0x30000
#define GUEST_VDSO 0x31000
#define GUEST_VDSO_MAX 0x4000
/* The descriptors the guest opened or closed itself (guest/fastcall.h),
 * the one page of the first 2 MiB the guest may write: the VMM reads it
 * back as its next exit begins. */
#define GUEST_FASTCHANGE 0x35000
/* The calls the guest answers itself (guest/fastcall.h): their code,
 * the VMM's answers, the index of the image's files; user read-only. */
#define GUEST_FAST 0x36000
#define GUEST_FAST_MAX 0x4000
#define GUEST_FASTDATA 0x3a000
#define GUEST_FASTDATA_LEN 0x2000
#define GUEST_FASTRUNS 0x3c000 /* the mmap area's open runs */
#define GUEST_FASTRUNS_LEN 0x4000
#define GUEST_FASTIDX 0x40000
#define GUEST_LOW_END 0x200000 /* the program's memory starts here */

/* Offsets in the kernel page (guest/kernel.S). */
#define GUEST_SYSCALL_ENTRY (GUEST_KERNEL + 0x0)
#define GUEST_VECTOR_ENTRY(v) (GUEST_KERNEL + 0x10 + 8 * (v))
#define GUEST_NVECTORS 32

#define PORT_SYSCALL 0xe0
#define PORT_EXCEPTION 0xe1

/* GDT selectors. User CS/SS carry RPL 3. */
#define SEL_KCODE 0x08
#define SEL_KDATA 0x10
#define SEL_UDATA 0x1b /* index 3 */
#define SEL_UCODE 0x23 /* index 4 */
#define SEL_TSS 0x28 /* index 5, 16 bytes */

#endif

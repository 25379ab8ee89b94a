/*
 * The VM itself: guest memory, the long-mode state built from the host
 * (page tables, GDT, IDT, TSS, MSRs, CPUID, XCR0), the initial stack, and
 * the vCPU loop with one switch on the exit reason that fails closed.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>

#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"

/* The guest kernel's code (guest/kernel.S, embedded at build time). */
extern const unsigned char guest_kernel[];
extern const size_t guest_kernel_len;

#define CR0_PE 0x1ULL
#define CR0_MP 0x2ULL
#define CR0_ET 0x10ULL
#define CR0_NE 0x20ULL
#define CR0_WP 0x10000ULL
#define CR0_AM 0x40000ULL
#define CR0_PG 0x80000000ULL
#define CR4_PAE 0x20ULL
#define CR4_OSFXSR 0x200ULL
#define CR4_OSXMMEXCPT 0x400ULL
#define CR4_OSXSAVE 0x40000ULL
#define EFER_SCE 0x1ULL
#define EFER_LME 0x100ULL
#define EFER_LMA 0x400ULL
#define PTE_P 0x1ULL
#define PTE_W 0x2ULL
#define PTE_U 0x4ULL
#define PTE_A 0x20ULL
#define PTE_D 0x40ULL
#define PTE_PS 0x80ULL
#define MSR_STAR 0xc0000081
#define MSR_LSTAR 0xc0000082
#define MSR_CSTAR 0xc0000083
#define MSR_SFMASK 0xc0000084
#define MSR_FS_BASE 0xc0000100
#define MSR_GS_BASE 0xc0000101
#define MSR_KERNEL_GS_BASE 0xc0000102
#define RFLAGS_FIXED 0x2ULL
#define APIC_BASE_DEFAULT 0xfee00900ULL
/* What a CPL3 program may hold in RFLAGS: CF PF AF ZF SF TF DF OF AC ID
 * and the reserved bit 1 (never IOPL, IF stays clear: no interrupts). */
#define RFLAGS_USER 0x254dd5ULL

const char *
vmm_platform_name(int platform)
{
	switch (platform) {
	case VMM_PLATFORM_KVM:
		return "kvm";
	case VMM_PLATFORM_TRAP:
		return "trap";
	case VMM_PLATFORM_AUTO:
		return "auto";
	}
	return "unknown";
}

int
vmm_platform_parse(const char *name)
{
	if (strcmp(name, "auto") == 0)
		return VMM_PLATFORM_AUTO;
	if (strcmp(name, "kvm") == 0)
		return VMM_PLATFORM_KVM;
	if (strcmp(name, "trap") == 0)
		return VMM_PLATFORM_TRAP;
	return -1;
}

const char *
vmm_strerror(int err)
{
	switch (err) {
	case VMM_OK:
		return "success";
	case VMM_E_ELF:
		return "not a loadable ELF";
	case VMM_E_KVM:
		return "KVM refused the VM";
	case VMM_E_NOMEM:
		return "out of memory";
	case VMM_E_INVAL:
		return "invalid argument";
	case VMM_E_TOOBIG:
		return "the program does not fit the guest memory";
	case VMM_E_SNAPSHOT:
		return "the memory image could not be restored";
	case VMM_E_TEMPLATE:
		return "the template did not reach its ready call";
	}
	return "unknown error";
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

void
vm_stop(struct vm *vm, enum vmm_status st, int code, const char *fmt, ...)
{
	va_list ap;

	if (vm->stopped)
		return;
	vm->stopped = 1;
	vm->res->status = st;
	vm->res->exit_code = code;
	va_start(ap, fmt);
	vsnprintf(vm->res->reason, sizeof(vm->res->reason), fmt, ap);
	va_end(ap);
}

/* ---- memory and tables ------------------------------------------------ */

static void
put64(struct vm *vm, uint64_t gpa, uint64_t v)
{
	memcpy(vm->mem + gpa, &v, sizeof(v));
}

void
vm_pt_open(struct vm *vm, uint64_t lo, uint64_t hi)
{
	uint64_t addr, guard = vm->stack_lo - VM_HUGE;

	for (addr = lo < VM_HUGE ? VM_HUGE : lo; addr < hi && addr < vm->memsz;
	     addr += VM_HUGE) {
		if (addr == guard)
			continue;
		put64(vm, GUEST_PD + 8 * (addr / VM_HUGE),
		    addr | PTE_P | PTE_W | PTE_U | PTE_PS | PTE_A | PTE_D);
	}
}

/*
 * Identity map: 4 KiB supervisor pages for the kernel's first 2 MiB
 * (page 0 absent, so a NULL dereference faults), 2 MiB user pages above
 * where KVM has memory slots (mem_slots.c), and one absent 2 MiB page
 * below the stack as its guard.
 *
 * Every entry is built accessed, and every writable leaf dirty. Under
 * shadow paging KVM must otherwise set those bits itself, and it maps a
 * clean page read-only until the first write, which costs the guest one
 * more fault per 2 MiB page it reads before it writes. Nothing here uses
 * the bits, so they carry no information to lose.
 */
static void
build_page_tables(struct vm *vm)
{
	const uint64_t dir = PTE_P | PTE_W | PTE_U | PTE_A;
	uint64_t gb, i, addr;

	put64(vm, GUEST_PML4, GUEST_PDPT | dir);
	for (gb = 0; gb * (1ULL << 30) < vm->memsz; gb++)
		put64(vm, GUEST_PDPT + 8 * gb, (GUEST_PD + 0x1000 * gb) | dir);
	put64(vm, GUEST_PD, GUEST_PT_LOW | dir);
	for (i = 1; i < 512; i++)
		put64(vm, GUEST_PT_LOW + 8 * i,
		    (i * VM_PAGE) | PTE_P | PTE_W | PTE_A | PTE_D);
	/* Under kvm-pvm the guest's CPL0 fetches instructions with user
	 * rights, so the stub page is user-readable (never writable). A
	 * CPL3 jump into it gains nothing: the host accepts a stub's exit
	 * only at CPL0. */
	put64(vm, GUEST_PT_LOW + 8 * (GUEST_KERNEL / VM_PAGE),
	    GUEST_KERNEL | PTE_P | PTE_U | PTE_A);
	/* The vDSO and its data page: user read-only, so the guest reads
	 * its clocks without an exit and cannot change what it reads. */
	for (addr = GUEST_VVAR; addr < GUEST_VDSO + GUEST_VDSO_MAX;
	     addr += VM_PAGE)
		put64(vm, GUEST_PT_LOW + 8 * (addr / VM_PAGE),
		    addr | PTE_P | PTE_U | PTE_A);
	/* The calls the guest answers itself: their code, the VMM's
	 * answers and the index of the image's files, user read-only
	 * for the same reason (fastcall.c). */
	for (addr = GUEST_FAST; addr < GUEST_FASTRUNS + GUEST_FASTRUNS_LEN;
	     addr += VM_PAGE)
		put64(vm, GUEST_PT_LOW + 8 * (addr / VM_PAGE),
		    addr | PTE_P | PTE_U | PTE_A);
	for (addr = GUEST_FASTIDX; addr < GUEST_LOW_END; addr += VM_PAGE)
		put64(vm, GUEST_PT_LOW + 8 * (addr / VM_PAGE),
		    addr | PTE_P | PTE_U | PTE_A);
	/* The one page of these the guest writes: the descriptors it
	 * opened or closed itself, which the VMM takes as requests. */
	put64(vm, GUEST_PT_LOW + 8 * (GUEST_FASTCHANGE / VM_PAGE),
	    GUEST_FASTCHANGE | PTE_P | PTE_W | PTE_U | PTE_A | PTE_D);
	vm_pt_open(vm, VM_HUGE, vm->reach_lo);
	vm_pt_open(vm, vm->reach_hi, vm->memsz);
	/* The image's bytes, user read-only, for the guest's own reads of
	 * its files (fastcall.c); KVM reaches them only if the VMM gave
	 * them a slot, and the guest reads them only then. */
	if (vm->cfg->image_map != NULL &&
	    vm->cfg->image_map_len <= GUEST_IMAGE_MAX) {
		for (addr = 0; addr < vm->cfg->image_map_len; addr += VM_HUGE) {
			gb = (GUEST_IMAGE_GPA + addr) >> 30;
			if ((addr & ((1ULL << 30) - 1)) == 0)
				put64(vm, GUEST_PDPT + 8 * gb,
				    (GUEST_IMAGE_PD + 0x1000 * (addr >> 30)) |
				        dir);
			put64(vm,
			    GUEST_IMAGE_PD + 0x1000 * (addr >> 30) +
			        8 * ((addr >> 21) & 511),
			    (GUEST_IMAGE_GPA + addr) | PTE_P | PTE_U | PTE_PS |
			        PTE_A);
		}
	}
}

static void
build_descriptors(struct vm *vm)
{
	uint64_t tss = GUEST_TSS, i, h;
	uint8_t *idt = vm->mem + GUEST_IDT;

	put64(vm, GUEST_GDT + 0x00, 0);
	put64(vm, GUEST_GDT + 0x08, 0x00af9b000000ffffULL); /* kernel code */
	put64(vm, GUEST_GDT + 0x10, 0x00cf93000000ffffULL); /* kernel data */
	put64(vm, GUEST_GDT + 0x18, 0x00cff3000000ffffULL); /* user data */
	put64(vm, GUEST_GDT + 0x20, 0x00affb000000ffffULL); /* user code */
	put64(vm, GUEST_GDT + 0x28,
	    GUEST_TSS_LIMIT | (tss & 0xffffff) << 16 | 0x89ULL << 40 |
	        ((tss >> 24) & 0xff) << 56);
	put64(vm, GUEST_GDT + 0x30, tss >> 32);
	/*
	 * TSS: RSP0, and an I/O bitmap for ports 0-255 that opens only the
	 * two stub ports. Under kvm-pvm the guest's `syscall` does not leave
	 * CPL3 (its supervisor mode needs a PVM-aware guest), so the stub's
	 * `out` runs at CPL3 and is emulated against this bitmap. The host
	 * accepts such an exit only at the stub's address, so a program
	 * that jumps there gains no more than a `syscall` would.
	 */
	put64(vm, GUEST_TSS + 4, GUEST_KSTACK_TOP);
	memcpy(vm->mem + GUEST_TSS + 102, &(uint16_t){ 104 }, 2);
	memset(vm->mem + GUEST_TSS + 104, 0xff, 33);
	vm->mem[GUEST_TSS + 104 + PORT_SYSCALL / 8] &=
	    (uint8_t) ~(1u << (PORT_SYSCALL % 8));
	vm->mem[GUEST_TSS + 104 + PORT_EXCEPTION / 8] &=
	    (uint8_t) ~(1u << (PORT_EXCEPTION % 8));
	for (i = 0; i < GUEST_NVECTORS; i++) {
		h = GUEST_VECTOR_ENTRY(i);
		/* #BP may be raised by int3 at CPL3 and reported as such. */
		uint8_t attr = i == 3 ? 0xee : 0x8e;
		uint8_t gate[16] = { (uint8_t)h, (uint8_t)(h >> 8), SEL_KCODE,
			0, 0, attr, (uint8_t)(h >> 16), (uint8_t)(h >> 24),
			(uint8_t)(h >> 32), (uint8_t)(h >> 40),
			(uint8_t)(h >> 48), (uint8_t)(h >> 56), 0, 0, 0, 0 };

		memcpy(idt + 16 * i, gate, sizeof(gate));
	}
	memcpy(vm->mem + GUEST_KERNEL, guest_kernel, guest_kernel_len);
	vm_vdso_install(vm);
	vm_fast_install(vm);
}

static void
seg(struct kvm_segment *s, uint16_t sel, uint8_t type, int code)
{
	memset(s, 0, sizeof(*s));
	s->selector = sel;
	s->limit = 0xffffffff;
	s->type = type;
	s->present = 1;
	s->dpl = sel & 3;
	s->s = 1;
	s->l = code;
	s->db = !code;
	s->g = 1;
}

/*
 * The vCPU's state at entry. CPUID, MSRs, XCR0 and the FPU need their own
 * ioctls; the general and segment registers go to KVM through the synced
 * registers (KVM_CAP_SYNC_REGS), which KVM loads at the first KVM_RUN as
 * KVM_SET_REGS and KVM_SET_SREGS would: two ioctls fewer per boot, and no
 * KVM_GET_SREGS, since every field of the segment state is written here.
 */
int
vm_cpu_fixed(struct vm *vm)
{
	/* struct kvm_msrs ends in a flexible array: room for 7 after it. */
	union {
		struct kvm_msrs h;
		uint8_t bytes[sizeof(struct kvm_msrs) +
		    7 * sizeof(struct kvm_msr_entry)];
	} msrs;
	struct kvm_msr_entry *me = msrs.h.entries;
	struct kvm_xcrs xcrs;
	uint64_t xcr0;
	int xsave;

	if (ioctl(vm->vcpufd, KVM_SET_CPUID2, vm_cpuid()) == -1)
		return -1;
	xsave = (vm_cpuid_reg(1, 0, 2) >> 26) & 1;

	memset(&msrs, 0, sizeof(msrs));
	msrs.h.nmsrs = 7;
	me[0].index = MSR_STAR;
	me[0].data = (uint64_t)SEL_KCODE << 32;
	me[1].index = MSR_LSTAR;
	me[1].data = vm_fast_lstar(vm);
	me[2].index = MSR_CSTAR;
	me[2].data = GUEST_SYSCALL_ENTRY;
	me[3].index = MSR_SFMASK;
	me[3].data = 0x47700; /* TF IF DF AC NT */
	me[4].index = MSR_FS_BASE;
	me[5].index = MSR_GS_BASE;
	me[6].index = MSR_KERNEL_GS_BASE;
	if (ioctl(vm->vcpufd, KVM_SET_MSRS, &msrs) != 7)
		return -1;

	if (xsave) {
		/* x87, SSE, AVX and AVX-512 state, as far as supported. */
		xcr0 = ((uint64_t)vm_cpuid_reg(0xd, 0, 3) << 32 |
		           vm_cpuid_reg(0xd, 0, 0)) &
		    0xe7ULL;
		memset(&xcrs, 0, sizeof(xcrs));
		xcrs.nr_xcrs = 1;
		xcrs.xcrs[0].xcr = 0;
		xcrs.xcrs[0].value = xcr0 | 3;
		if (ioctl(vm->vcpufd, KVM_SET_XCRS, &xcrs) == -1)
			return -1;
	}
	return 0;
}

int
vm_fpu_get(struct vm *vm, struct kvm_fpu *fpu)
{
	if (vm->on_trap)
		return vm_trap_fpu_get(vm, fpu);
	return ioctl(vm->vcpufd, KVM_GET_FPU, fpu) == -1 ? -1 : 0;
}

int
vm_fpu_set(struct vm *vm, const struct kvm_fpu *fpu)
{
	if (vm->on_trap)
		return vm_trap_fpu_set(vm, fpu);
	return ioctl(vm->vcpufd, KVM_SET_FPU, fpu) == -1 ? -1 : 0;
}

/* The trap platform's first registers: the same entry as under KVM, in
 * the register file the stub's first reply carries (trap.c). */
static int
setup_trap(struct vm *vm, uint64_t rsp, char *err, size_t errlen)
{
	if (vm_trap_create(vm, err, errlen) != 0)
		return -1;
	memset(&vm->run->s.regs, 0, sizeof(vm->run->s.regs));
	vm->run->s.regs.regs.rip = vm->start;
	vm->run->s.regs.regs.rsp = rsp;
	vm->run->s.regs.regs.rflags = RFLAGS_FIXED;
	return 0;
}

static int
setup_cpu(struct vm *vm, uint64_t rsp)
{
	struct kvm_sregs *sr = &vm->run->s.regs.sregs;
	struct kvm_regs *regs = &vm->run->s.regs.regs;
	struct kvm_fpu fpu;
	int xsave = (vm_cpuid_reg(1, 0, 2) >> 26) & 1;

	if (vm_cpu_fixed(vm) != 0)
		return -1;
	/* Not left to KVM's reset state: its MXCSR there is 0, which
	 * would unmask every SIMD exception. */
	memset(&fpu, 0, sizeof(fpu));
	fpu.fcw = 0x37f;
	fpu.mxcsr = 0x1f80;
	if (ioctl(vm->vcpufd, KVM_SET_FPU, &fpu) == -1)
		return -1;

	memset(sr, 0, sizeof(*sr));
	sr->cr0 = CR0_PE | CR0_MP | CR0_ET | CR0_NE | CR0_WP | CR0_AM | CR0_PG;
	sr->cr3 = GUEST_PML4;
	sr->cr4 =
	    CR4_PAE | CR4_OSFXSR | CR4_OSXMMEXCPT | (xsave ? CR4_OSXSAVE : 0);
	sr->efer = EFER_SCE | EFER_LME | EFER_LMA;
	/* The reset value: xAPIC enabled, bootstrap processor. */
	sr->apic_base = APIC_BASE_DEFAULT;
	seg(&sr->cs, SEL_UCODE, 11, 1);
	seg(&sr->ds, SEL_UDATA, 3, 0);
	sr->es = sr->ds;
	sr->ss = sr->ds;
	sr->fs = sr->ds;
	sr->gs = sr->ds;
	sr->gdt.base = GUEST_GDT;
	sr->gdt.limit = 0x37;
	sr->idt.base = GUEST_IDT;
	sr->idt.limit = 16 * GUEST_NVECTORS - 1;
	sr->tr.base = GUEST_TSS;
	sr->tr.limit = GUEST_TSS_LIMIT;
	sr->tr.selector = SEL_TSS;
	sr->tr.type = 11;
	sr->tr.present = 1;
	sr->ldt.type = 2;
	sr->ldt.unusable = 1;

	memset(regs, 0, sizeof(*regs));
	regs->rip = vm->start;
	regs->rsp = rsp;
	regs->rflags = RFLAGS_FIXED;
	vm->run->kvm_dirty_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	return 0;
}

/* ---- the initial stack ----------------------------------------------- */

/* Push len bytes below *sp; returns their guest address. */
static uint64_t
push_bytes(struct vm *vm, uint64_t *sp, const void *p, size_t len)
{
	*sp -= len;
	memcpy(vm->mem + *sp, p, len);
	return *sp;
}

/* Write string s at *at, upward; its guest address. */
static uint64_t
put_string(struct vm *vm, uint64_t *at, const char *s)
{
	size_t len = strlen(s) + 1;
	uint64_t where = *at;

	memcpy(vm->mem + where, s, len);
	*at += len;
	return where;
}

static int
count_strings(const char *const *v, size_t *n, size_t *bytes)
{
	*n = 0;
	for (; v != NULL && v[*n] != NULL; (*n)++) {
		*bytes += strlen(v[*n]) + 1;
		if (*n > 4096 || *bytes > (1u << 20))
			return -1;
	}
	return 0;
}

/*
 * argc, argv, envp and auxv as the static musl and glibc start-up code
 * read them (System V x86-64 ABI, 3.4.1), strings above, 16-byte aligned.
 */
static int
build_stack(struct vm *vm, uint64_t *rsp)
{
	const struct vmm_config *cfg = vm->cfg;
	size_t argc, envc, imgc = 0, bytes = 0, i, nwords;
	uint64_t sp = vm->stack_top, *words, *w, execfn, platform, random, strs;
	uint8_t rnd[16];
	char **imgenv = NULL;
	int rc = -1;

	if (count_strings(cfg->argv, &argc, &bytes) != 0 ||
	    count_strings(cfg->envp, &envc, &bytes) != 0 || argc == 0)
		return -1;
	if (vm_image_env(vm, &imgenv, &imgc) != 0 ||
	    count_strings((const char *const *)imgenv, &imgc, &bytes) != 0 ||
	    bytes + 4096 > vm->stack_top - vm->stack_lo) {
		vm_image_env_free(imgenv);
		return -1;
	}
	nwords = 1 + argc + 1 + envc + imgc + 1 + 2 * 22;
	if ((words = calloc(nwords, sizeof(*words))) == NULL) {
		vm_image_env_free(imgenv);
		return -1;
	}
	/* As Linux lays them out: the program's name at the top, below it
	 * the argument and environment strings in one ascending run
	 * (argv[0] lowest), then the platform and the random bytes.
	 * libuv (node's process.title) takes the span from argv[0] to the
	 * end of the last argument as room it may overwrite: with the
	 * strings in descending order that span was negative, and its
	 * memset ran to the top of the stack. */
	execfn = push_bytes(vm, &sp, cfg->argv[0], strlen(cfg->argv[0]) + 1);
	sp -= bytes;
	strs = sp;
	w = words;
	*w++ = argc;
	vm->arg_start = strs;
	for (i = 0; i < argc; i++)
		*w++ = put_string(vm, &strs, cfg->argv[i]);
	*w++ = 0;
	vm->env_start = strs;
	for (i = 0; i < envc; i++)
		*w++ = put_string(vm, &strs, cfg->envp[i]);
	for (i = 0; i < imgc; i++)
		*w++ = put_string(vm, &strs, imgenv[i]);
	vm->env_end = strs;
	*w++ = 0;
	platform = push_bytes(vm, &sp, "x86_64", 7);
	randombytes_buf(rnd, sizeof(rnd));
	random = push_bytes(vm, &sp, rnd, sizeof(rnd));
#define AUX(k, v)                                                              \
	do {                                                                   \
		*w++ = (k);                                                    \
		*w++ = (v);                                                    \
	} while (0)
	AUX(AT_PHDR, vm->elf.phdr);
	AUX(AT_PHENT, vm->elf.phentsize);
	AUX(AT_PHNUM, vm->elf.phnum);
	AUX(AT_PAGESZ, VM_PAGE);
	AUX(AT_BASE, vm->interp_base);
	AUX(AT_FLAGS, 0);
	AUX(AT_ENTRY, vm->elf.entry);
	AUX(AT_UID, 1000);
	AUX(AT_EUID, 1000);
	AUX(AT_GID, 1000);
	AUX(AT_EGID, 1000);
	AUX(AT_SECURE, 0);
	AUX(AT_CLKTCK, 1000000000u / VM_TICK_NS);
	AUX(AT_HWCAP, vm_cpuid_reg(1, 0, 3));
	AUX(AT_HWCAP2, 0);
	AUX(AT_RANDOM, random);
	AUX(AT_PLATFORM, platform);
	AUX(AT_EXECFN, execfn);
	if (vm_vdso_base() != 0)
		AUX(AT_SYSINFO_EHDR, vm_vdso_base());
	AUX(AT_NULL, 0);
#undef AUX
	sp &= ~15ULL;
	if (((size_t)(w - words)) % 2 != 0)
		sp -= 8; /* argc must land 16-byte aligned */
	sp -= (uint64_t)(w - words) * 8;
	memcpy(vm->mem + sp, words, (size_t)(w - words) * 8);
	*rsp = sp;
	rc = 0;
	free(words);
	vm_image_env_free(imgenv);
	return rc;
}

/* ---- loading ---------------------------------------------------------- */

static int
load_program(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t free_lo, free_hi;
	size_t i;

	vm->nimgsegs = 0; /* execve: the old program's went with its memory */
	/* The stack takes the top (2 MiB aligned, under a 2 MiB guard). */
	vm->stack_top = vm->memsz;
	vm->stack_lo = vm->memsz - vm_space_stack(vm->memsz);
	/* Below the reserve: the program's segments are not charged, so
	 * they must fit the limit's share of the address space. */
	if (elf_parse(cfg->elf, cfg->elf_len, GUEST_LOW_END,
	        vm->stack_lo - VM_HUGE - vm->reserve, &vm->elf, err,
	        errlen) != 0)
		return VMM_E_ELF;
	for (i = 0; i < vm->elf.nload; i++) {
		const struct elf_load *l = &vm->elf.load[i];

		/* A template's memory is huge pages its clones map whole
		 * (guest_mem_map): its program is copied into them. On trap
		 * its clones copy the memfd, not huge pages: the image's
		 * pages are theirs to map again (imgmap.c). */
		if ((l->flags & PF_W) ||
		    (vm->template_state == VM_TPL_BOOTING && !vm->on_trap) ||
		    vm_imgmap_segment(
		        vm, cfg->elf + l->offset, l->vaddr, l->filesz) != 0)
			vm_mem_copy(vm, vm->mem + l->vaddr,
			    cfg->elf + l->offset, l->filesz);
	}
	/* Half of what is left for brk, half for mmap, which also takes
	 * the reserve (mem_space.c). */
	free_lo = (vm->elf.hi + VM_HUGE - 1) & ~(VM_HUGE - 1);
	free_hi = vm->stack_lo - VM_HUGE;
	if (free_hi < free_lo + 2 * VM_HUGE + vm->reserve) {
		snprintf(err, errlen, "the program leaves no memory free");
		return VMM_E_TOOBIG;
	}
	vm->brk_start = vm->brk_cur = vm->brk_peak = vm->elf.hi;
	vm->brk_max =
	    free_lo + ((free_hi - free_lo - vm->reserve) / 2 & ~(VM_HUGE - 1));
	vm->mmap_lo = vm->brk_max;
	vm->mmap_hi = free_hi;
	vm->start = vm->elf.entry;
	vm_memslots_plan(vm);
	if (vm_mem_init(vm) != 0)
		return VMM_E_NOMEM;
	return vm->elf.interp_len != 0 ? vm_load_interp(vm, err, errlen)
	                               : VMM_OK;
}

/* ---- the vCPU loop ---------------------------------------------------- */

static volatile sig_atomic_t timed_out;
static struct kvm_run *volatile running;

static volatile uint64_t run_deadline_us;

/* The host's one timer serves the run's limit and the guest's alarm:
 * whichever is due, KVM_RUN (or a blocking call) is cut short. */
static void
on_alarm(int sig)
{
	(void)sig;
	if (run_deadline_us != 0 && now_us() >= run_deadline_us)
		timed_out = 1;
	if (running != NULL)
		running->immediate_exit = 1;
}

/* A host child, a guest fork's vm process, ended: blocked but in a
 * guest's wait4, which it cuts short (proc.c, wait_host_child); a no-op
 * rather than SIG_DFL so that it does (an ignored signal restarts the
 * wait). */
static void
on_child(int sig)
{
	(void)sig;
}

/* Another guest process queued a signal for this one (proc.c). */
static void
on_kick(int sig)
{
	(void)sig;
	if (running != NULL)
		running->immediate_exit = 1;
}

/*
 * SIGINT, SIGTERM and SIGHUP sent to a vm process from outside the run
 * (the API's kill, keep run's terminal) are its guest process's own:
 * queued here and taken at the next call boundary or kick (proc.c), as
 * a signal from another guest process is. Bit sig-1.
 */
static volatile uint32_t from_outside;

static void
on_outside(int sig)
{
	__atomic_fetch_or(&from_outside, 1u << (sig - 1), __ATOMIC_SEQ_CST);
	if (running != NULL)
		running->immediate_exit = 1;
}

void
vm_wake_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGUSR2);
	sigaddset(set, SIGALRM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR1); /* a context's pause (snapshot.c) */
}

uint64_t
vm_outside_signals(int take)
{
	return take ? __atomic_exchange_n(&from_outside, 0, __ATOMIC_SEQ_CST)
	            : __atomic_load_n(&from_outside, __ATOMIC_SEQ_CST);
}

int
vmm_run_timed_out(void)
{
	return timed_out;
}

static const char *const vector_name[32] = { "#DE divide error", "#DB debug",
	"NMI", "#BP breakpoint", "#OF overflow", "#BR bound range",
	"#UD invalid opcode", "#NM device not available", "#DF double fault",
	"coprocessor overrun", "#TS invalid TSS", "#NP segment not present",
	"#SS stack fault", "#GP general protection", "#PF page fault",
	"reserved 15", "#MF x87 error", "#AC alignment check",
	"#MC machine check", "#XM SIMD error", "#VE virtualization",
	"#CP control protection", "reserved 22", "reserved 23", "reserved 24",
	"reserved 25", "reserved 26", "reserved 27", "#HV", "#VC", "#SX",
	"reserved 31" };

static int
has_error_code(unsigned v)
{
	return v == 8 || (v >= 10 && v <= 14) || v == 17 || v == 21 ||
	    v == 29 || v == 30;
}

/* The exception frame is on the kernel stack, which the guest program
 * cannot write; it is still read with bounds checks. */
static void
on_exception(struct vm *vm, struct kvm_regs *r, struct kvm_sregs *s)
{
	unsigned v = (unsigned)(r->rax & 0xff);
	uint64_t sp = r->rsp, frame[5] = { 0, 0, 0, 0, 0 }, ec = 0;

	if (v >= 32 || sp < GUEST_KSTACK_TOP - 0x1000 ||
	    sp + 24 > GUEST_KSTACK_TOP) {
		vm_stop(vm, VMM_FAULT, -1, "fault: corrupt exception frame");
		return;
	}
	if (has_error_code(v)) {
		memcpy(&ec, vm->mem + sp, 8);
		sp += 8;
	}
	memcpy(frame, vm->mem + sp,
	    sp + 40 <= GUEST_KSTACK_TOP       ? 40
	        : sp + 24 <= GUEST_KSTACK_TOP ? 24
	                                      : 16);
	/* A fault in the program's own code goes to its handler, if it
	 * has one (RIP, RFLAGS and RSP from the frame; AL holds the vector,
	 * the rest of the registers are the program's). */
	/* No error code for the signal: here a present page's fault is
	 * mostly a user touch of the guest kernel's own pages, where Linux
	 * has no mapping at all (SEGV_MAPERR). */
	if ((frame[1] & 3) == 3 && sp + 40 <= GUEST_KSTACK_TOP &&
	    vm_signal_fault(vm, v, frame[0], frame[3], frame[2], s->cr2, 0))
		return;
	if ((frame[1] & 3) == 0 && v != 14)
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: vector %u (%s) at rip 0x%llx (in the guest kernel)",
		    v, vector_name[v], (unsigned long long)frame[0]);
	else
		vm_fault_stop(vm, v, frame[0], s->cr2, ec);
}

void
vm_fault_stop(
    struct vm *vm, unsigned v, uint64_t rip, uint64_t addr, uint64_t ec)
{
	if (v >= 32)
		v = 13;
	/* Memory KVM has no slot for is absent from the page tables
	 * (mem_slots.c), and memory the trap platform's guest does not
	 * hold is PROT_NONE: a touch of either is one of memory the guest
	 * does not hold, as a closed page's (vcpu_loop's EFAULT), here with
	 * its address. */
	if (v == 14 && addr >= GUEST_LOW_END && addr < vm->memsz &&
	    (vm->on_trap ? !vm_space_ok(vm, addr, addr + 1)
	                 : !vm_memslots_cover(vm, addr, addr + 1)))
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: touched memory it does not hold (unmapped or "
		    "PROT_NONE) at rip 0x%llx, address 0x%llx",
		    (unsigned long long)rip, (unsigned long long)addr);
	else if (v == 14)
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: vector 14 (%s) at rip 0x%llx, address 0x%llx, "
		    "error 0x%llx",
		    vector_name[v], (unsigned long long)rip,
		    (unsigned long long)addr, (unsigned long long)ec);
	else
		vm_stop(vm, VMM_FAULT, -1,
		    "fault: vector %u (%s) at rip 0x%llx", v, vector_name[v],
		    (unsigned long long)rip);
}

/* A time slice that ended while the thread was in a system call's stub
 * (sys_thread.c): the thread is back in its own code now. */
static void
preempt_at_return(struct vm *vm)
{
	if (vm->preempt_due && !vm->stopped) {
		vm->preempt_due = 0;
		vm_thread_preempt(vm);
		/* The thread switched in takes its signals now, not at its
		 * next call or kick. */
		if (vm->switched_in)
			vm_signal_after_kick(vm);
	}
}

void
vm_on_syscall(struct vm *vm)
{
	struct kvm_regs *r = &vm->run->s.regs.regs;
	struct kvm_sregs *s = &vm->run->s.regs.sregs;
	uint64_t a[6] = { r->rdi, r->rsi, r->rdx, r->r10, r->r8, r->r9 };
	uint64_t nr = r->rax;
	int64_t ret;

	vm->res->syscalls++;
	vm_vdso_tick(vm);
	vm_fast_probe(vm);
	vm_fast_index(vm, nr);
	vm->call_nr = nr;
	ret = vm_syscall(vm, nr, a);
	if (vm->stopped)
		return;
	/* The vmm pauses a context: its read of stdin returned for that. */
	if (ret == -EINTR && nr == 0 && !vm->regs_replaced &&
	    vm_snap_asked(vm)) {
		vm_space_pause(vm, nr);
		return;
	}
	/* fork and execve leave this process on a new vCPU; after execve
	 * it starts at the new program's entry, not after a call; after a
	 * thread switch the registers are another thread's, returning from
	 * its own call (call_nr). */
	if (vm->regs_replaced) {
		vm->regs_replaced = 0;
		vm_signal_after_syscall(vm, vm->call_nr);
		preempt_at_return(vm);
		return;
	}
	r = &vm->run->s.regs.regs;
	s = &vm->run->s.regs.sregs;
	/* Return to CPL3 as sysretq would: RIP from RCX, RFLAGS from R11. */
	r->rax = (uint64_t)ret;
	r->rip = r->rcx;
	r->rflags = (r->r11 & RFLAGS_USER) | RFLAGS_FIXED;
	seg(&s->cs, SEL_UCODE, 11, 1);
	seg(&s->ss, SEL_UDATA, 3, 0);
	vm->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
	vm_signal_after_syscall(vm, nr);
	preempt_at_return(vm);
}

/* The exit came from a stub: RIP at, or just past, its `out`. The CPL
 * is not checked: under kvm-pvm the stubs run at CPL3 (see the TSS). */
static int
from_stub(uint64_t rip, uint64_t lo, uint64_t hi)
{
	return rip >= lo && rip <= hi;
}

#define EFAULT_TRIES 2 /* entries made again after a KVM_RUN EFAULT */

static void
vcpu_loop(struct vm *vm)
{
	struct kvm_run *run;
	struct kvm_regs *r;
	struct kvm_sregs *s;
	unsigned efaults = 0;
	int rc;

	while (!vm->stopped && !vm->parked) {
		/* Re-read each time: fork and execve replace the vCPU. */
		run = vm->run;
		r = &run->s.regs.regs;
		s = &run->s.regs.sregs;
		run->kvm_valid_regs = KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
		vm_fast_sync(vm);
		rc = ioctl(vm->vcpufd, KVM_RUN, 0);
		/* Before anything looks at the descriptors. */
		vm_fast_reap(vm);
		if (rc == -1) {
			if (errno == EINTR || errno == EAGAIN) {
				run->immediate_exit = 0;
				if (timed_out)
					vm_stop(vm, VMM_TIMEOUT, -1,
					    "timeout: stopped after %llu ms",
					    (unsigned long long)
					        vm->cfg->timeout_ms);
				else {
					vm_thread_preempt(vm);
					vm_signal_after_kick(vm);
				}
				continue;
			}
			/* A page closed in the host (mem_space.c): a
			 * SIGSEGV, as Linux raises, though KVM here says
			 * nothing of the address (no memory fault exit).
			 * KVM names no address, so a closed page cannot be
			 * told from a page the host failed to map for a
			 * moment: the same entry is made again first, and a
			 * closed page fails again (a full check under load
			 * drew one EFAULT in node's compiler thread, in 1 of
			 * about 150 runs, cause not found). */
			if (errno == EFAULT && (s->cs.selector & 3) == 3 &&
			    efaults++ < EFAULT_TRIES) {
				vm->res->efault_retries++;
				continue;
			}
			if (errno == EFAULT && (s->cs.selector & 3) == 3) {
				efaults = 0;
				if (!vm_signal_fault(vm, 14, r->rip, r->rsp,
				        r->rflags, 0, 0))
					vm_stop(vm, VMM_FAULT, -1,
					    "fault: touched memory it does not "
					    "hold (unmapped or PROT_NONE) at "
					    "rip 0x%llx",
					    (unsigned long long)r->rip);
				continue;
			}
			vm_stop(vm, VMM_FAULT, -1, "fault: KVM_RUN: %s",
			    strerror(errno));
			break;
		}
		efaults = 0;
		vm->res->exits++;
		switch (run->exit_reason) {
		case KVM_EXIT_IO:
			if (run->io.direction != KVM_EXIT_IO_OUT ||
			    run->io.size != 1 || run->io.count != 1) {
				vm_stop(vm, VMM_FAULT, -1,
				    "fault: I/O to port 0x%x at rip 0x%llx",
				    run->io.port, (unsigned long long)r->rip);
			} else if (run->io.port == PORT_SYSCALL &&
			    from_stub(r->rip, GUEST_SYSCALL_ENTRY,
			        GUEST_SYSCALL_ENTRY + 2)) {
				vm_on_syscall(vm);
			} else if (run->io.port == PORT_EXCEPTION &&
			    from_stub(r->rip, GUEST_VECTOR_ENTRY(0),
			        GUEST_VECTOR_ENTRY(GUEST_NVECTORS)) &&
			    (r->rip - GUEST_VECTOR_ENTRY(0)) % 8 <= 4) {
				on_exception(vm, r, s);
			} else {
				/* kvm-pvm lets a CPL3 `out` exit even with
				 * IOPL 0: only the stubs may talk to us. */
				vm_stop(vm, VMM_FAULT, -1,
				    "fault: I/O to port 0x%x at rip 0x%llx "
				    "(not from the kernel)",
				    run->io.port, (unsigned long long)r->rip);
			}
			break;
		case KVM_EXIT_HLT:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: halted at rip 0x%llx",
			    (unsigned long long)r->rip);
			break;
		case KVM_EXIT_SHUTDOWN:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: triple fault (shutdown) at rip 0x%llx",
			    (unsigned long long)r->rip);
			break;
		case KVM_EXIT_MMIO:
			/* Memory with no slot is absent from the guest's
			 * page tables (mem_slots.c), so its touch is a #PF
			 * the guest's handler may take (on_exception). An
			 * access KVM emulated anyway cannot be given to a
			 * handler: a write is done and RIP past it (seen
			 * on kvm-pvm), a read waits to complete. It stops
			 * the guest as a touch of a closed page does. */
			if (!vm_memslots_cover(vm, run->mmio.phys_addr,
			        run->mmio.phys_addr + 1) &&
			    run->mmio.phys_addr < vm->memsz)
				vm_stop(vm, VMM_FAULT, -1,
				    "fault: touched memory it does not hold "
				    "(no memory slot) at rip 0x%llx, address "
				    "0x%llx",
				    (unsigned long long)r->rip,
				    (unsigned long long)run->mmio.phys_addr);
			else
				vm_stop(vm, VMM_FAULT, -1,
				    "fault: access to unbacked address 0x%llx "
				    "at rip 0x%llx",
				    (unsigned long long)run->mmio.phys_addr,
				    (unsigned long long)r->rip);
			break;
		case KVM_EXIT_INTR:
			break;
		case KVM_EXIT_FAIL_ENTRY:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: entry failed, hardware reason 0x%llx",
			    (unsigned long long)
			        run->fail_entry.hardware_entry_failure_reason);
			break;
		case KVM_EXIT_INTERNAL_ERROR:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: KVM internal error %u at rip 0x%llx",
			    run->internal.suberror, (unsigned long long)r->rip);
			break;
		default:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: unexpected exit %u at rip 0x%llx",
			    run->exit_reason, (unsigned long long)r->rip);
			break;
		}
	}
}

/* ---- the VM and its timer -------------------------------------------- */

int
vm_kvm_create(struct vm *vm, char *err, size_t errlen)
{
	int mmap_size;

	/* A signal for the guest (SIGUSR2, SIGALRM) may land here in a
	 * freshly forked process: not a reason to fail. */
	while ((vm->vmfd = ioctl(vm->cfg->kvm_fd, KVM_CREATE_VM, 0)) == -1 &&
	    errno == EINTR)
		;
	if (vm->vmfd == -1) {
		snprintf(err, errlen, "KVM_CREATE_VM: %s", strerror(errno));
		return -1;
	}
	/* Guest memory as far as the guest can use it (mem_slots.c), and
	 * the image's bytes for its own reads (fastcall.c). */
	if (vm_memslots_register(vm) != 0 ||
	    (vm->vcpufd = ioctl(vm->vmfd, KVM_CREATE_VCPU, 0)) == -1 ||
	    (mmap_size = ioctl(vm->cfg->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0)) <=
	        0) {
		snprintf(err, errlen, "creating the vCPU: %s", strerror(errno));
		return -1;
	}
	vm_fast_image_slot(vm);
	vm->run_size = (size_t)mmap_size;
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
	    vm->vcpufd, 0);
	if (vm->run == MAP_FAILED) {
		vm->run = NULL;
		snprintf(
		    err, errlen, "the vCPU's run area: %s", strerror(errno));
		return -1;
	}
	return 0;
}

void
vm_kvm_drop(struct vm *vm)
{
	/* The timer's handler must not touch a run area being unmapped. */
	running = NULL;
	if (vm->on_trap) {
		vm_trap_drop(vm);
		free(vm->run);
		vm->run = NULL;
		return;
	}
	if (vm->run != NULL && vm->run != MAP_FAILED)
		munmap(vm->run, vm->run_size);
	if (vm->vcpufd >= 0)
		close(vm->vcpufd);
	if (vm->vmfd >= 0)
		close(vm->vmfd);
	vm_memslots_drop(vm);
	vm->image_slot = 0;
	vm->run = NULL;
	vm->vcpufd = vm->vmfd = -1;
}

/* The SIGALRM that kicks KVM_RUN at vm->deadline_us; itimers do not
 * survive fork, so each guest process arms its own. */
void
vm_timer_arm(struct vm *vm)
{
	struct itimerval it;
	uint64_t now = now_us(), next = vm->deadline_us, left;

	running = vm->run;
	run_deadline_us = vm->deadline_us;
	timed_out = vm->deadline_us != 0 && now >= vm->deadline_us;
	if (timed_out) {
		vm->run->immediate_exit = 1;
		return;
	}
	if (vm->sig.alarm_at_us != 0 &&
	    (next == 0 || vm->sig.alarm_at_us < next))
		next = vm->sig.alarm_at_us;
	if (vm->slice_at_us != 0 && (next == 0 || vm->slice_at_us < next))
		next = vm->slice_at_us;
	if (vm->signal_retry_us != 0 &&
	    (next == 0 || vm->signal_retry_us < next))
		next = vm->signal_retry_us;
	if (vm->sig.cpu_poll_us != 0 &&
	    (next == 0 || vm->sig.cpu_poll_us < next))
		next = vm->sig.cpu_poll_us;
	memset(&it, 0, sizeof(it));
	if (next != 0) {
		left = next > now ? next - now : 1;
		it.it_value.tv_sec = (time_t)(left / 1000000);
		it.it_value.tv_usec = (suseconds_t)(left % 1000000);
	}
	setitimer(ITIMER_REAL, &it, NULL);
}

void
vm_set_user_segments(struct vm *vm)
{
	seg(&vm->run->s.regs.sregs.cs, SEL_UCODE, 11, 1);
	seg(&vm->run->s.regs.sregs.ss, SEL_UDATA, 3, 0);
	vm->run->kvm_dirty_regs |= KVM_SYNC_X86_REGS | KVM_SYNC_X86_SREGS;
}

uint64_t
vm_now_us(void)
{
	return now_us();
}

int
vm_exec_image(
    struct vm *vm, const struct vmm_config *cfg, char *err, size_t errlen)
{
	struct vm *old;
	uint64_t rsp;
	uint8_t *mem;

	int mem_fd = -1, old_fd = vm->mem_fd;

	if (vm->on_trap) {
		mem = vm_trap_mem_map(vm->memsz,
		    vm->reserve ? PROT_NONE : PROT_READ | PROT_WRITE, &mem_fd);
		/* What the old program opened is gone with its memory. */
		vm_trap_forget_ops(vm);
		vm->mem_fd = mem_fd;
	} else
		mem = mmap(NULL, vm->memsz,
		    vm->reserve ? PROT_NONE : PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (mem != MAP_FAILED && vm_space_map(vm, mem) != 0) {
		munmap(mem, vm->memsz);
		mem = MAP_FAILED;
	}
	if (mem == MAP_FAILED || (old = malloc(sizeof(*old))) == NULL) {
		if (mem != MAP_FAILED)
			munmap(mem, vm->memsz);
		if (mem_fd >= 0)
			close(mem_fd);
		vm->mem_fd = old_fd;
		snprintf(err, errlen, "guest memory: %s", strerror(errno));
		return -1;
	}
	*old = *vm;
	/* (after the copy: the old memory's descriptor, closed once the
	 * new program has loaded, kept where it fails) */
	old->mem_fd = old_fd;
	vm->mem = mem;
	vm->mem_borrowed = 0; /* its own memory now, a vfork child's too */
	vm->cfg = cfg;
	vm->mmap_used = NULL;
	vm->mmap_file = NULL;
	vm->mmap_pages_used = vm->mmap_pages_peak = 0;
	/* The new program is charged as it loads, beside the old one
	 * until it has loaded (docs/vmm.md, "Memory across a process
	 * tree"). */
	vm->mem_charged = 0;
	if (load_program(vm, err, errlen) != VMM_OK ||
	    build_stack(vm, &rsp) != 0) {
		if (err[0] == '\0')
			snprintf(err, errlen, "arguments too large");
		vm_proc_mem_uncharge(vm, vm->mem_charged);
		vm_mem_maps_free(vm);
		munmap(mem, vm->memsz);
		if (mem_fd >= 0)
			close(mem_fd);
		vm_trap_forget_ops(vm); /* the new program's */
		*vm = *old;
		free(old);
		return -1;
	}
	build_page_tables(vm);
	build_descriptors(vm);
	vm_proc_mem_uncharge(vm, old->mem_charged);
	munmap(old->mem, old->memsz);
	vm_shmap_forget(vm); /* the old memory's, gone with it */
	if (old->mem_fd >= 0 && old->mem_fd != vm->mem_fd)
		close(old->mem_fd);
	vm_mem_maps_free(old);
	free(old);
	if (vm->on_trap) {
		/* A new process for the new program: the old one's mappings
		 * were the old memory's. The queued opens are the new
		 * program's, made since its memory was mapped. */
		if (setup_trap(vm, rsp, err, errlen) != 0)
			return -2;
		vm_vdso_sync(vm);
		vm_timer_arm(vm);
		return 0;
	}
	vm_kvm_drop(vm);
	if (vm_kvm_create(vm, err, errlen) != 0 || setup_cpu(vm, rsp) != 0)
		return -2;
	vm_vdso_sync(vm);
	vm_timer_arm(vm);
	return 0;
}

/* ---- vmm_run ---------------------------------------------------------- */

/*
 * Guest memory, aligned to 2 MiB: the guest maps it with 2 MiB pages,
 * and where the host backs an aligned 2 MiB with a transparent huge
 * page, KVM maps it whole, one fault where there would be 512. A
 * template's clones read most of what they touch, so for them it is the
 * difference between a fault per 4 KiB page and one per 2 MiB, and a
 * template asks for huge pages (MADV_HUGEPAGE: the kernel compacts
 * memory to find them, under the default defrag setting). A cold run
 * takes what the host's THP setting gives: asking cost a small
 * program's boot about 0.2 ms, 1.2x the bare KVM floor becoming 1.4x
 * (docs/vmm.md, "Measured (make bench-vmm)").
 */
static uint8_t *
guest_mem_map(uint64_t size, int prot, int huge)
{
	uint8_t *p, *aligned;
	uint64_t slack;

	p = mmap(NULL, size + VM_HUGE, prot,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return MAP_FAILED;
	aligned = (uint8_t *)(((uintptr_t)p + VM_HUGE - 1) & ~(VM_HUGE - 1));
	slack = (uint64_t)(aligned - p);
	if (slack > 0)
		munmap(p, slack);
	if (VM_HUGE - slack > 0)
		munmap(aligned + size, VM_HUGE - slack);
	if (huge)
		madvise(aligned, size, MADV_HUGEPAGE);
	return aligned;
}

void
vm_teardown(struct vm *vm)
{
	vm_fs_free(vm);
	vm_exec_free(vm);
	vm_thread_reset(vm);
	vm_mem_maps_free(vm);
	free(vm->imgruns);
	vm->imgruns = NULL;
	vm->nimgruns = vm->imgruns_cap = 0;
	vm_shmap_forget(vm);
	if (vm->pagemap_pid != 0 && vm->pagemap_fd >= 0)
		close(vm->pagemap_fd);
	vm_kvm_drop(vm);
	if (vm->mem != NULL && vm->mem != MAP_FAILED)
		munmap(vm->mem, vm->memsz);
	vm->mem = NULL;
	if (vm->mem_fd >= 0)
		close(vm->mem_fd);
	vm->mem_fd = -1;
	vm_boot_script_free(vm);
	vm_trust_free(vm);
}

int
vm_boot(struct vm *vm, char *err, size_t errlen)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t rsp;
	int rc = VMM_OK;

	if (cfg->elf == NULL || cfg->argv == NULL || cfg->argv[0] == NULL ||
	    cfg->memory < (4ULL << 20) || cfg->memory > (16ULL << 30)) {
		snprintf(err, errlen, "bad run configuration");
		return VMM_E_INVAL;
	}
	vm->on_trap = cfg->platform == VMM_PLATFORM_TRAP ||
	    (cfg->platform == VMM_PLATFORM_AUTO && cfg->kvm_fd < 0);
	vm->res->platform = vm->on_trap ? VMM_PLATFORM_TRAP : VMM_PLATFORM_KVM;
	if (vm->on_trap ? vm_cpuid_host() != 0
	                : (rc = vmm_prepare(cfg->kvm_fd)) != VMM_OK) {
		snprintf(err, errlen, "%s: %s",
		    vm->on_trap ? "the host's CPUID"
		                : "KVM_GET_SUPPORTED_CPUID",
		    strerror(errno));
		return vm->on_trap ? VMM_E_NOMEM : rc;
	}
	if (vm->on_trap && vm_trap_prepare() != 0) {
		snprintf(err, errlen, "the trap stub: %s", strerror(errno));
		return VMM_E_KVM;
	}
	if ((rc = vm_space_plan(vm, err, errlen)) != VMM_OK)
		return rc;
	/* With a reserve, guest memory starts closed (mem_space.c). */
	if (vm->on_trap)
		vm->mem = vm_trap_mem_map(vm->memsz,
		    vm->reserve ? PROT_NONE : PROT_READ | PROT_WRITE,
		    &vm->mem_fd);
	else
		vm->mem = guest_mem_map(vm->memsz,
		    vm->reserve ? PROT_NONE : PROT_READ | PROT_WRITE,
		    vm->template_state == VM_TPL_BOOTING);
	if (vm->mem != MAP_FAILED && vm_space_map(vm, vm->mem) != 0) {
		munmap(vm->mem, vm->memsz);
		vm->mem = MAP_FAILED;
	}
	if (vm->mem == MAP_FAILED) {
		vm->mem = NULL;
		snprintf(err, errlen, "guest memory: %s", strerror(errno));
		return VMM_E_NOMEM;
	}
	if ((rc = vm_boot_script(vm, err, errlen)) != VMM_OK ||
	    (rc = load_program(vm, err, errlen)) != VMM_OK ||
	    (rc = vm_fs_init(vm)) != VMM_OK)
		return rc;
	if (build_stack(vm, &rsp) != 0) {
		snprintf(err, errlen,
		    "arguments and environment too large, or a malformed "
		    "%s in the image",
		    VM_IMAGE_ENV);
		return VMM_E_TOOBIG;
	}
	build_page_tables(vm);
	build_descriptors(vm);

	if (vm->on_trap) {
		if (setup_trap(vm, rsp, err, errlen) != 0)
			return VMM_E_KVM;
	} else if (vm_kvm_create(vm, err, errlen) != 0)
		return VMM_E_KVM;
	else if (setup_cpu(vm, rsp) != 0) {
		snprintf(
		    err, errlen, "setting up the vCPU: %s", strerror(errno));
		return VMM_E_KVM;
	}
	vm_vdso_sync(vm);
	/* A guest writing to a pipe with no reader gets EPIPE here and
	 * SIGPIPE's default action from us (fs.c), not a host signal. */
	signal(SIGPIPE, SIG_IGN);
	if (vm_proc_init(vm) != 0) {
		snprintf(err, errlen, "the process table: %s", strerror(errno));
		return VMM_E_NOMEM;
	}
	return VMM_OK;
}

void
vm_serve(struct vm *vm)
{
	/* SIGINT, SIGTERM and SIGHUP from outside go to the guest. */
	static const int outside[] = { SIGINT, SIGTERM, SIGHUP };
	struct sigaction sa, osa, okick, ochild, oout[3];
	sigset_t child, omask;
	struct itimerval it;
	size_t i;
	uint64_t t0;

	if (vm->cfg->timeout_ms != 0)
		vm->deadline_us = now_us() + vm->cfg->timeout_ms * 1000;
	/* SIGALRM: the run's limit and the guest's alarm; SIGUSR2: a
	 * signal from another guest process. Neither restarts a blocking
	 * call, so a guest's wait is cut short by either. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &osa);
	sa.sa_handler = on_kick;
	sigaction(SIGUSR2, &sa, &okick);
	sa.sa_handler = on_child;
	sigaction(SIGCHLD, &sa, &ochild);
	sigemptyset(&child);
	sigaddset(&child, SIGCHLD);
	sigprocmask(SIG_BLOCK, &child, &omask);
	sa.sa_handler = on_outside;
	from_outside = 0;
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		sigaction(outside[i], &sa, &oout[i]);
	vm_snap_arm(vm);
	vm_timer_arm(vm);
	t0 = now_us();
	if (vm->on_trap)
		vm_trap_loop(vm);
	else
		vcpu_loop(vm);
	/* A template parked at its ready call keeps its process tree for
	 * its clones to replace; anything else is done. */
	if (!vm->parked) {
		/* A forked guest process ends here: it never returns to
		 * the caller of vmm_run (proc.c). The first one stops the
		 * rest. */
		vm_proc_finish(vm);
	}
	vm->res->run_us = now_us() - t0;
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	running = NULL;
	sigaction(SIGALRM, &osa, NULL);
	sigaction(SIGUSR2, &okick, NULL);
	sigaction(SIGCHLD, &ochild, NULL);
	if (!sigismember(&omask, SIGCHLD))
		sigprocmask(SIG_UNBLOCK, &child, NULL);
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		sigaction(outside[i], &oout[i], NULL);
	/* Settling counts the image pages touched and puts zeroes back
	 * over them: right at a run's end, but a template parked at its
	 * ready call goes on in its clones, whose image pages must still
	 * read as the files (every clone of the python image's template
	 * faulted on the zeroes). */
	if (!vm->parked)
		vm_imgmap_settle(vm);
	vm_memslots_result(vm);
	vm->res->peak_memory = (vm->brk_peak - vm->brk_start) +
	    (vm->mmap_pages_peak + vm->file_touched_pages) * VM_PAGE;
}

int
vmm_run(const struct vmm_config *cfg, struct vmm_result *res, char *err,
    size_t errlen)
{
	struct vmm_config own = *cfg;
	struct vm vm;
	uint64_t t0;
	int rc;

	memset(res, 0, sizeof(*res));
	memset(&vm, 0, sizeof(vm));
	vm.cfg = &own;
	vm.res = res;
	vm.vmfd = vm.vcpufd = vm.ws_fd = vm.mem_fd = -1;
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	t0 = now_us();
	if ((rc = vm_trust_apply(&vm, &own, err, errlen)) == VMM_OK &&
	    (rc = vm_boot(&vm, err, errlen)) == VMM_OK && cfg->snap_restore &&
	    (vm_snap_restore(&vm, cfg->snap_in_fd, err, errlen) != 0 ||
	        vm_space_sync(&vm) != 0))
		rc = VMM_E_SNAPSHOT;
	if (rc == VMM_OK) {
		res->boot_us = now_us() - t0;
		res->served = 1;
		vm_serve(&vm);
	}
	vm_teardown(&vm);
	return rc;
}

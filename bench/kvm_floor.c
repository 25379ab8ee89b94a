/*
 * The bare KVM floors bench/boot compares keep against, measured in the
 * same run:
 *   kvm_floor		create a VM and a vCPU, run real-mode `hlt`, exit:
 *			the least any VMM can do per boot.
 *   kvm_floor exits N	the same VM in long mode at CPL3, making N `out`
 *			exits in a loop, each resumed at once: the bare cost
 *			of a CPL3 exit, which a keep system call is built on.
 * Not keep code: it only sets up what it needs for those two.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <err.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MEM (4u << 20)

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

static void
put64(uint8_t *m, uint64_t at, uint64_t v)
{
	memcpy(m + at, &v, 8);
}

static void
longmode(int vcpu, uint8_t *m)
{
	struct kvm_sregs sr;
	struct kvm_regs r;
	/* CPL3 code at 0x200000: out %al,$0xe0; jmp back. */
	static const uint8_t code[] = { 0xe6, 0xe0, 0xeb, 0xfc };

	put64(m, 0x1000, 0x2000 | 7);
	put64(m, 0x2000, 0x3000 | 7);
	put64(m, 0x3000, 0x0 | 0x87); /* 2 MiB user page at 0 */
	put64(m, 0x3008, 0x200000 | 0x87);
	memcpy(m + 0x200000, code, sizeof(code));
	/* GDT: null, user data, user code, TSS (with an I/O bitmap). */
	put64(m, 0x4000 + 0x18, 0x00cff3000000ffffULL);
	put64(m, 0x4000 + 0x20, 0x00affb000000ffffULL);
	put64(m, 0x4000 + 0x28, (104 + 32) | 0x5000ULL << 16 | 0x89ULL << 40);
	memcpy(m + 0x5000 + 102, &(uint16_t){ 104 }, 2);
	memset(m + 0x5000 + 104, 0xff, 33);
	m[0x5000 + 104 + 0xe0 / 8] &= (uint8_t)~1u;
	if (ioctl(vcpu, KVM_GET_SREGS, &sr) == -1)
		err(1, "KVM_GET_SREGS");
	sr.cr0 = 0x80050033;
	sr.cr3 = 0x1000;
	sr.cr4 = 0x20;
	sr.efer = 0x500;
	memset(&sr.cs, 0, sizeof(sr.cs));
	sr.cs.selector = 0x23;
	sr.cs.limit = 0xffffffff;
	sr.cs.type = 11;
	sr.cs.present = sr.cs.s = sr.cs.l = sr.cs.g = 1;
	sr.cs.dpl = 3;
	sr.ss = sr.cs;
	sr.ss.selector = 0x1b;
	sr.ss.type = 3;
	sr.ss.l = 0;
	sr.ss.db = 1;
	sr.ds = sr.es = sr.fs = sr.gs = sr.ss;
	sr.gdt.base = 0x4000;
	sr.gdt.limit = 0x37;
	memset(&sr.tr, 0, sizeof(sr.tr));
	sr.tr.base = 0x5000;
	sr.tr.limit = 104 + 32;
	sr.tr.selector = 0x28;
	sr.tr.type = 11;
	sr.tr.present = 1;
	if (ioctl(vcpu, KVM_SET_SREGS, &sr) == -1)
		err(1, "KVM_SET_SREGS");
	memset(&r, 0, sizeof(r));
	r.rip = 0x200000;
	r.rsp = 0x300000;
	r.rflags = 2;
	if (ioctl(vcpu, KVM_SET_REGS, &r) == -1)
		err(1, "KVM_SET_REGS");
}

int
main(int argc, char **argv)
{
	struct kvm_userspace_memory_region reg;
	struct kvm_run *run;
	struct kvm_sregs sr;
	struct kvm_regs r;
	long n = 0, i;
	uint64_t t0;
	uint8_t *m;
	int kvm, vm, vcpu, sz;

	if (argc == 3 && strcmp(argv[1], "exits") == 0)
		n = atol(argv[2]);
	if ((kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC)) == -1)
		err(1, "/dev/kvm");
	if ((vm = ioctl(kvm, KVM_CREATE_VM, 0)) == -1)
		err(1, "KVM_CREATE_VM");
	m = mmap(NULL, MEM, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED)
		err(1, "mmap");
	memset(&reg, 0, sizeof(reg));
	reg.memory_size = MEM;
	reg.userspace_addr = (uint64_t)(uintptr_t)m;
	if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &reg) == -1 ||
	    (vcpu = ioctl(vm, KVM_CREATE_VCPU, 0)) == -1 ||
	    (sz = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0)) <= 0)
		err(1, "vcpu");
	run =
	    mmap(NULL, (size_t)sz, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
	if (run == MAP_FAILED)
		err(1, "mmap run");
	if (n == 0) {
		m[0] = 0xf4; /* hlt */
		if (ioctl(vcpu, KVM_GET_SREGS, &sr) == -1)
			err(1, "KVM_GET_SREGS");
		sr.cs.base = 0;
		sr.cs.selector = 0;
		if (ioctl(vcpu, KVM_SET_SREGS, &sr) == -1)
			err(1, "KVM_SET_SREGS");
		memset(&r, 0, sizeof(r));
		r.rflags = 2;
		if (ioctl(vcpu, KVM_SET_REGS, &r) == -1)
			err(1, "KVM_SET_REGS");
		if (ioctl(vcpu, KVM_RUN, 0) == -1 ||
		    run->exit_reason != KVM_EXIT_HLT)
			errx(1, "no hlt (exit %u)", run->exit_reason);
		return 0;
	}
	longmode(vcpu, m);
	t0 = now_ns();
	for (i = 0; i < n; i++)
		if (ioctl(vcpu, KVM_RUN, 0) == -1 ||
		    run->exit_reason != KVM_EXIT_IO)
			errx(1, "exit %u at %ld", run->exit_reason, i);
	printf("%.2f\n", (double)(now_ns() - t0) / (double)n / 1000.0);
	return 0;
}

/*
 * The trap platform's stub (docs/vmm.md, "The trap platform"): the
 * program a guest process starts as on a host without KVM (and the
 * tree's spare maker, which forks spares of it: make_spares). It maps the
 * guest's memory at the guest's addresses, installs a seccomp filter
 * under which every system call the guest makes raises SIGSYS, and from
 * then on relays: each SIGSYS, fault and kick becomes an event in the
 * box, and the vm process's reply becomes the registers the handler
 * returns to. The few calls guest/fastcall.c answers from the vm
 * process's read-only pages are answered in the handler instead
 * (answer_here).
 *
 * The guest shares this process and can read and write all of it, the
 * stub included (its code only read and execute). So the stub holds
 * nothing: no descriptor it could map, no secret past the moment it is
 * used, and the calls its filter lets through (only from its own code,
 * see trap_stub_entry.S) are harmless in any hands: futex, rt_sigreturn,
 * exit_group, sched_yield, close (but of the life socket, whose peer's
 * end ends this process), arch_prctl for FS and GS; mprotect,
 * and recvmsg on the channel, only with the vm process's cookie, which
 * lies in the box only while the stub, not the guest, runs; mmap of a
 * file, fixed (while the guest runs the process holds no descriptor a
 * file could be mapped from: the channel and the life are sockets, and a descriptor
 * received on it is closed before the guest runs again); and mremap
 * that duplicates a shared mapping (old size 0), which gives the guest
 * a second view of what it can reach already (its memory, the box).
 *
 * Freestanding: no libc, no TLS (the guest owns FS), no stack protector,
 * general registers only (the guest's vector registers are in the
 * signal frame, not ours to touch), no writable data with addresses
 * (static-pie with no relocations).
 */
#include <stddef.h>
#include <stdint.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "guest/fastcall.h"
#include "host/vmm/abi.h"
#include "host/vmm/trap_abi.h"

#define NR_read 0
#define NR_close 3
#define NR_mmap 9
#define NR_mprotect 10
#define NR_munmap 11
#define NR_rt_sigaction 13
#define NR_rt_sigprocmask 14
#define NR_rt_sigreturn 15
#define NR_mremap 25
#define NR_sched_yield 24
#define NR_getpid 39
#define NR_dup2 33
#define NR_recvfrom 45
#define NR_sendmsg 46
#define NR_recvmsg 47
#define NR_clone 56
#define NR_fcntl 72
#define NR_sigaltstack 131
#define NR_prctl 157
#define NR_arch_prctl 158
#define NR_futex 202
#define NR_exit_group 231
#define NR_prlimit64 302
#define NR_seccomp 317
#define NR_close_range 436

#define PROT_NONE 0
#define PROT_READ 1
#define PROT_WRITE 2
#define PROT_EXEC 4
#define MAP_SHARED 0x01
#define MAP_PRIVATE 0x02
#define MAP_ANONYMOUS 0x20
#define MAP_NORESERVE 0x4000
#define MAP_FIXED 0x10
#define MAP_FIXED_NOREPLACE 0x100000
#define MREMAP_MAYMOVE 1
#define MREMAP_FIXED 2
#define MSG_PEEK 0x02
#define MSG_DONTWAIT 0x40
#define MSG_CTRUNC 0x08
#define SOL_SOCKET 1
#define SCM_RIGHTS 1
#define EINVAL 22
#define EBADF 9
#define EACCES 13
#define EPERM 1
#define FUTEX_WAIT 0
#define FUTEX_WAKE 1
#define F_SETFL 4
#define F_SETOWN 8
#define F_SETSIG 10
#define O_ASYNC 0x2000
#define POLL_HUP 6
#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004
#define PR_SET_NO_NEW_PRIVS 38
#define PR_SET_DUMPABLE 4
#define PR_SET_PDEATHSIG 1
#define SA_SIGINFO 0x4
#define SA_ONSTACK 0x08000000
#define SA_RESTORER 0x04000000
#define SIGILL 4
#define SIGTRAP 5
#define SIGBUS 7
#define SIGFPE 8
#define SIGSEGV 11
#define SIGCHLD 17
#define SIGIO 29
#define SIGSYS 31
#define SIG_IGN 1
#define RLIMIT_NPROC 6
#define EINTR 4
/* glibc fork's flags: of the clones the vm process's filter allows (the
 * maker inherits it; host/seccomp_filters.c), the plain child's. */
#define CLONE_FORK 0x01200011
#define bit(sig) (1ULL << ((sig)-1))
#define AT_NULL 0
#define AT_SYSINFO_EHDR 33
/* How long the stub spins for the vm process's reply before it sleeps,
 * in TSC ticks (about 0.4 to 108 us at 2.6 GHz), adapted at each wait
 * (trap_spin_adapt in host/vmm/trap_abi.h; host/vmm/trap.c's side does the same); every
 * SPIN_PROBE-th wait spins the longest. */
#define SPIN_MIN 1000
#define SPIN_MAX 280000
#define SPIN_PROBE 64
#define FP_XSTATE_MAGIC1 0x46505853U

long stub_syscall6(
    long nr, long a0, long a1, long a2, long a3, long a4, long a5);
long stub_mprotect(
    uint64_t addr, uint64_t len, long prot, const volatile uint64_t *cookie);
long stub_recvmsg(
    int fd, void *msg, long flags, const volatile uint64_t *cookie);
void stub_restorer(void);
void stub_boot_trap(void);
void stub_main(uint64_t *sp);
extern const char stub_text_lo[], stub_text_hi[];
extern const char __ehdr_start[], _end[];

/* The kernel's signal frame as the handler sees it (x86-64). */
struct stub_sigcontext {
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2;
	uint64_t fpstate;
	uint64_t reserved[8];
};

struct stub_ucontext {
	uint64_t flags, link;
	uint64_t ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
	struct stub_sigcontext mc;
	uint64_t sigmask;
};

struct stub_siginfo {
	int32_t signo, errno_, code, pad;
	uint64_t addr; /* SIGSYS: the call's address; faults: si_addr;
			  SIGIO: si_band */
	int32_t syscall_nr; /* SIGIO: si_fd */
	uint32_t arch;
};

struct stub_sigaction {
	void (*handler)(int, struct stub_siginfo *, void *);
	uint64_t flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* The kernel's msghdr and iovec (x86-64), for one byte and a control
 * buffer. */
struct stub_iovec {
	void *base;
	uint64_t len;
};

struct stub_msghdr {
	void *name;
	uint32_t namelen, pad0;
	struct stub_iovec *iov;
	uint64_t iovlen;
	void *control;
	uint64_t controllen;
	int32_t flags, pad1;
};

/* box and alias set at boot, before the guest runs, and never written
 * after; the rest is the relay's bookkeeping, which the guest may
 * overwrite at no one's cost but its own (each value is checked or
 * bounded where it is used). */
struct stub_state {
	struct trap_box *box;
	uint64_t alias; /* guest memory from TRAP_MEM_LO again, PROT_NONE */
	uint64_t fs_base, gs_base; /* as last set */
	uint64_t spin; /* the next wait's spin, in TSC ticks */
	uint32_t waits; /* counts them, for the probes */
	uint32_t yield_off; /* waits left that pause, not yield */
	uint64_t replied; /* the TSC as the last reply was seen */
	int booted;
};

/* The one piece of writable state: found through the box's mapping,
 * whose address the handlers cannot be given, so it sits in .bss (no
 * relocation: it holds no address at link time). */
static struct stub_state st;

static long
sys(long nr, long a0, long a1, long a2)
{
	return stub_syscall6(nr, a0, a1, a2, 0, 0, 0);
}

static __attribute__((noreturn)) void
die(int code)
{
	for (;;)
		sys(NR_exit_group, code, 0, 0);
}

static void
copy(void *dst, const void *src, size_t n)
{
	volatile uint8_t *d = dst;
	const volatile uint8_t *s = src;

	while (n--)
		*d++ = *s++;
}

static void
wipe(volatile void *p, size_t n)
{
	volatile uint8_t *d = p;

	while (n--)
		*d++ = 0;
}

/* The compiler may call these for structure copies. */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);

void *
memcpy(void *dst, const void *src, size_t n)
{
	copy(dst, src, n);
	return dst;
}

void *
memset(void *dst, int c, size_t n)
{
	volatile uint8_t *d = dst;

	while (n--)
		*d++ = (uint8_t)c;
	return dst;
}

/* ---- the handshake ---------------------------------------------------- */

static uint32_t
load32(const uint32_t *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void
store32(uint32_t *p, uint32_t v)
{
	__atomic_store_n(p, v, __ATOMIC_SEQ_CST);
}

/* The CPU this stub runs on, plus 1, posted for the vm process; 0 where
 * the vm process did not say that RDTSCP tells it (Linux keeps the CPU
 * in TSC_AUX's low 12 bits). */
static uint32_t
own_cpu(struct trap_box *b)
{
	unsigned int aux;

	if (!b->cpu_hint)
		return 0;
	(void)__builtin_ia32_rdtscp(&aux);
	b->stub_cpu = (aux & 0xfff) + 1;
	return b->stub_cpu;
}

/* Post the event and wait for the vm process's reply: spin a while
 * (the vm process often answers within microseconds), then sleep. */
static void
post_and_wait(struct trap_box *b, uint32_t event)
{
	static const struct {
		long sec, nsec;
	} second = { 1, 0 };
	uint64_t was = st.spin, spin, t0, took;
	uint32_t cpu;
	int i, seen, probe, blocked = 0, together;

	/* (out of range: the first wait, or the guest wrote it) */
	if (was < SPIN_MIN || was > SPIN_MAX)
		was = SPIN_MAX;
	probe = ++st.waits % SPIN_PROBE == 0;
	if (st.yield_off > TRAP_YIELD_BACKOFF) /* (the guest wrote it) */
		st.yield_off = TRAP_YIELD_BACKOFF;
	else if (st.yield_off > 0)
		st.yield_off--;
	spin = probe ? SPIN_MAX : was;

	b->event = event;
	b->stub_work = __builtin_ia32_rdtsc() - st.replied;
	cpu = own_cpu(b);
	store32(&b->state, TRAP_S_EVENT);
	if (load32(&b->host_sleeps))
		sys(NR_futex, (long)&b->state, FUTEX_WAKE, 1);
	t0 = __builtin_ia32_rdtsc();
	/* (read once a spin, and after each yield: see trap.c's) */
	together = st.yield_off == 0 && cpu != 0 && cpu == load32(&b->vm_cpu);
	for (;;) {
		seen = load32(&b->state) == TRAP_S_REPLY;
		took = __builtin_ia32_rdtsc() - t0;
		/* (host_blocks: the vm process blocks in a host call, no
		 * answer comes soon: no spin, and nothing learnt from it) */
		if (seen || took > spin || (blocked = load32(&b->host_blocks)))
			break;
		if (together) {
			uint64_t y = __builtin_ia32_rdtsc();

			sys(NR_sched_yield, 0, 0, 0);
			if (trap_yield_crowded(__builtin_ia32_rdtsc() - y,
			        load32(&b->state) == TRAP_S_REPLY, b->vm_work))
				st.yield_off = TRAP_YIELD_BACKOFF;
			cpu = own_cpu(b);
			together =
			    st.yield_off == 0 && cpu == load32(&b->vm_cpu);
		} else {
			__builtin_ia32_pause();
		}
	}
	st.spin = (probe || blocked) && !(seen && took <= spin)
	    ? was
	    : trap_spin_adapt(spin, seen && took <= spin, SPIN_MIN, SPIN_MAX);
	if (seen) {
		st.replied = __builtin_ia32_rdtsc();
		return;
	}
	store32(&b->stub_sleeps, 1);
	/* The first event waits 10 s at most: a vm process gone before
	 * the stub could ask to die with it never answers. */
	for (i = 0; load32(&b->state) == TRAP_S_EVENT; i++) {
		if (event == TRAP_EV_BOOT && i == 10)
			die(119);
		stub_syscall6(NR_futex, (long)&b->state, FUTEX_WAIT,
		    TRAP_S_EVENT, (long)&second, 0, 0);
	}
	store32(&b->stub_sleeps, 0);
	st.replied = __builtin_ia32_rdtsc();
}

static void
save_regs(struct trap_box *b, const struct stub_ucontext *uc)
{
	const struct stub_sigcontext *m = &uc->mc;
	struct trap_regs *r = &b->regs;
	const uint8_t *fp = (const uint8_t *)m->fpstate;
	const uint8_t *lo = b->sigstack, *hi = lo + TRAP_SIGSTACK_SIZE;
	uint32_t len = 512, magic, ext;

	r->rax = m->rax;
	r->rbx = m->rbx;
	r->rcx = m->rcx;
	r->rdx = m->rdx;
	r->rsi = m->rsi;
	r->rdi = m->rdi;
	r->rsp = m->rsp;
	r->rbp = m->rbp;
	r->r8 = m->r8;
	r->r9 = m->r9;
	r->r10 = m->r10;
	r->r11 = m->r11;
	r->r12 = m->r12;
	r->r13 = m->r13;
	r->r14 = m->r14;
	r->r15 = m->r15;
	r->rip = m->rip;
	r->rflags = m->eflags;
	b->fs_base = st.fs_base;
	b->gs_base = st.gs_base;
	b->fpu_len = 0;
	b->fpu_off = 0;
	if (fp == NULL)
		return;
	/* The frame is in the box (the signal stack): the vm process
	 * reads its FPU area there if it needs it, nothing is copied. The
	 * software-reserved bytes of the FXSAVE area say how much the
	 * kernel wrote (the XSAVE area and its trailing magic). */
	if (fp < lo || fp > hi - 512)
		die(118);
	copy(&magic, fp + 464, 4);
	copy(&ext, fp + 468, 4);
	if (magic == FP_XSTATE_MAGIC1 && ext > 512 && ext <= TRAP_FPU_MAX &&
	    ext <= (uint64_t)(hi - fp))
		len = ext;
	b->fpu_off = (uint32_t)(fp - (const uint8_t *)b);
	b->fpu_len = len;
}

/* The vm process's registers into the frame; the FPU area, if it
 * changed it, it wrote into the frame itself. */
static void
load_regs(struct trap_box *b, struct stub_ucontext *uc)
{
	struct stub_sigcontext *m = &uc->mc;
	const struct trap_regs *r = &b->regs;
	uint64_t fs = b->fs_base, gs = b->gs_base;

	m->rax = r->rax;
	m->rbx = r->rbx;
	m->rcx = r->rcx;
	m->rdx = r->rdx;
	m->rsi = r->rsi;
	m->rdi = r->rdi;
	m->rsp = r->rsp;
	m->rbp = r->rbp;
	m->r8 = r->r8;
	m->r9 = r->r9;
	m->r10 = r->r10;
	m->r11 = r->r11;
	m->r12 = r->r12;
	m->r13 = r->r13;
	m->r14 = r->r14;
	m->r15 = r->r15;
	m->rip = r->rip;
	/* The kernel's sigreturn keeps only the flags user mode may set. */
	m->eflags = r->rflags;
	if (fs != st.fs_base) {
		sys(NR_arch_prctl, ARCH_SET_FS, (long)fs, 0);
		st.fs_base = fs;
	}
	if (gs != st.gs_base) {
		sys(NR_arch_prctl, ARCH_SET_GS, (long)gs, 0);
		st.gs_base = gs;
	}
}

/* The descriptor the vm process sent for a TRAP_OP_MAP, or -errno. */
static long
receive_fd(struct trap_box *b)
{
	struct {
		uint64_t len;
		int32_t level, type;
		int32_t fd, pad;
	} cm;
	uint8_t byte;
	struct stub_iovec iov = { &byte, 1 };
	struct stub_msghdr msg = { 0, 0, 0, &iov, 1, &cm, sizeof(cm), 0, 0 };
	long rc;

	wipe(&cm, sizeof(cm));
	rc = stub_recvmsg(TRAP_FD_CHAN, &msg, MSG_DONTWAIT, b->op_cookie);
	if (rc < 0)
		return rc;
	if (cm.len != 20 || cm.level != SOL_SOCKET || cm.type != SCM_RIGHTS ||
	    (msg.flags & MSG_CTRUNC) || cm.fd < 0) {
		if (cm.len == 20 && cm.fd >= 0)
			sys(NR_close, cm.fd, 0, 0);
		return -EBADF;
	}
	return cm.fd;
}

/* mprotect with the cookie; a mapping of a file on a noexec mount (a
 * shared mapping of a workspace file) is opened without PROT_EXEC. */
static long
protect(struct trap_box *b, uint64_t addr, uint64_t len, uint32_t prot)
{
	long rc = stub_mprotect(addr, len, prot, b->op_cookie);

	if ((rc == -EACCES || rc == -EPERM) && (prot & PROT_EXEC))
		rc = stub_mprotect(
		    addr, len, PROT_READ | PROT_WRITE, b->op_cookie);
	return rc;
}

/* One op; 0 or -errno. *held is the descriptor the batch's last
 * TRAP_OP_MAP received (-1: none), kept for a TRAP_OP_MAP_AGAIN. */
static long
run_op(struct trap_box *b, uint64_t addr, uint64_t len, uint64_t off,
    uint32_t prot, uint32_t kind, long *held)
{
	long rc, fd;
	/* Guest memory, or the image's bytes read-only where the answers
	 * read them (GUEST_IMAGE_GPA, as KVM's read-only slot), past guest
	 * memory, over the room map_guest reserved for them. */
	int image = (kind == TRAP_OP_MAP || kind == TRAP_OP_MAP_AGAIN) &&
	    prot == (PROT_READ | PROT_EXEC) && addr == GUEST_IMAGE_GPA &&
	    GUEST_IMAGE_GPA >= b->memsz && len != 0 && (len & 0xfff) == 0 &&
	    len <= GUEST_IMAGE_MAX;

	if (!image &&
	    (addr < TRAP_MEM_LO || len > b->memsz || addr > b->memsz - len ||
	        (addr & 0xfff) != 0 || (len & 0xfff) != 0 || len == 0 ||
	        (prot != PROT_NONE &&
	            prot != (PROT_READ | PROT_WRITE | PROT_EXEC) &&
	            ((kind != TRAP_OP_MAP && kind != TRAP_OP_MAP_AGAIN) ||
	                prot != (PROT_READ | PROT_EXEC)))))
		return -EINVAL;
	switch (kind) {
	case TRAP_OP_PROTECT:
		return protect(b, addr, len, prot);
	case TRAP_OP_MAP:
	case TRAP_OP_MAP_AGAIN:
		if (kind == TRAP_OP_MAP) {
			if (*held >= 0)
				sys(NR_close, *held, 0, 0);
			*held = -1;
			if ((fd = receive_fd(b)) < 0)
				return fd;
			*held = fd;
		} else if ((fd = *held) < 0)
			return -EBADF;
		/* Read-only: an image file's pages (the descriptor is
		 * read-only, so the kernel would refuse a writable shared
		 * mapping of it, and any later mprotect to writable). */
		rc = stub_syscall6(NR_mmap, (long)addr, (long)len,
		    prot == (PROT_READ | PROT_EXEC) ? PROT_READ | PROT_EXEC
		                                    : PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_FIXED, fd, (long)off);
		if (rc < 0 && rc > -4096)
			return rc;
		return rc == (long)addr ? 0 : -EINVAL;
	case TRAP_OP_RESTORE:
		/* A second mapping of the guest's own pages from the
		 * alias, over the shared mapping there. */
		rc = stub_syscall6(NR_mremap,
		    (long)(st.alias + (addr - TRAP_MEM_LO)), 0, (long)len,
		    MREMAP_MAYMOVE | MREMAP_FIXED, (long)addr, 0);
		if (rc < 0 && rc > -4096)
			return rc;
		if (rc != (long)addr)
			return -EINVAL;
		return prot == PROT_NONE ? 0 : protect(b, addr, len, prot);
	default:
		return -EINVAL;
	}
}

/* Carry out the vm process's ops, then wipe its cookie before anything
 * of the guest's runs again. The result: 0, or the first failure's
 * errno (also in the box, for the vm process). */
static int32_t
run_ops(struct trap_box *b)
{
	uint32_t n = b->nops, i;
	int32_t res = 0;
	long rc, held = -1;

	if (n > TRAP_OPS_MAX)
		n = 0, res = EINVAL;
	for (i = 0; i < n; i++) {
		rc = run_op(b, b->ops[i].addr, b->ops[i].len, b->ops[i].off,
		    b->ops[i].prot, b->ops[i].kind, &held);
		if (rc < 0) {
			res = (int32_t)-rc;
			break;
		}
	}
	/* The process holds no descriptor while the guest runs. */
	if (held >= 0)
		sys(NR_close, held, 0, 0);
	wipe(b->op_cookie, sizeof(b->op_cookie));
	b->result = res;
	return res;
}

/* Relay one event until the reply says to resume. */
static void
relay(struct stub_ucontext *uc, uint32_t event)
{
	struct trap_box *b = st.box;
	uint32_t reply;

	/* The frame sits at the top of the signal stack, the box's, unless
	 * the guest ran with its stack pointer there: then the handler's
	 * own calls could reach below the stack into the box's fields, and
	 * the stub ends rather than relay from there. */
	if ((uint8_t *)uc < b->sigstack + TRAP_SIGSTACK_SPARE ||
	    (uint8_t *)uc >= b->sigstack + TRAP_SIGSTACK_SIZE)
		die(118);
	save_regs(b, uc);
	for (;;) {
		post_and_wait(b, event);
		/* (read once: a guest that forged the event runs, and can
		 * write it, while the vm process replies) */
		reply = load32(&b->reply);
		if (reply != TRAP_R_OPS && reply != TRAP_R_OPS_RESUME)
			break;
		if (run_ops(b) == 0 && reply == TRAP_R_OPS_RESUME)
			break;
		event = TRAP_EV_OPS;
	}
	wipe(b->op_cookie, sizeof(b->op_cookie));
	if (reply != TRAP_R_RESUME && reply != TRAP_R_OPS_RESUME)
		die(126);
	load_regs(b, uc);
	store32(&b->state, TRAP_S_GUEST);
}

/*
 * A call guest/fastcall.c answers from the pages the vm process keeps
 * for it (docs/vmm.md, "Calls answered in the guest"), here in the
 * guest's own process as under KVM it is in the guest's ring: the answer
 * goes into RAX and the handler returns, with no relay. The pages are
 * read-only here but the changed descriptors' one, whose entries the vm
 * process takes as requests; the answers write only where the call asked
 * (checked as vm_gptr checks), so a guest that calls this itself gains
 * nothing it could not do with the call. Not from a frame outside the
 * signal stack's room (relay's check), where the answers' own stack
 * could reach below it.
 */
static int
answer_here(struct stub_ucontext *uc)
{
	const volatile uint64_t *enabled = (const uint64_t *)GUEST_FASTDATA;
	struct stub_sigcontext *m = &uc->mc;
	struct trap_box *b = st.box;
	struct fast_regs r;

	if (*enabled == 0 ||
	    (uint8_t *)uc < b->sigstack + TRAP_SIGSTACK_SPARE ||
	    (uint8_t *)uc >= b->sigstack + TRAP_SIGSTACK_SIZE)
		return 0;
	r.ret = 0;
	r.r9 = m->r9;
	r.r8 = m->r8;
	r.r10 = m->r10;
	r.rdx = m->rdx;
	r.rsi = m->rsi;
	r.rdi = m->rdi;
	r.r11 = m->eflags;
	r.rcx = m->rip;
	r.rax = m->rax;
	if (!fast_call(&r))
		return 0;
	m->rax = (uint64_t)r.ret;
	return 1;
}

/* ---- handlers --------------------------------------------------------- */

static void
on_sigsys(int sig, struct stub_siginfo *si, void *ucv)
{
	(void)sig;
	/* The stub's own first trap asks for the guest's first registers;
	 * the same address later is only a guest's call. */
	if (!st.booted && si->addr == (uint64_t)stub_boot_trap + 7) {
		st.booted = 1;
		relay(ucv, TRAP_EV_BOOT);
		return;
	}
	if (answer_here(ucv))
		return;
	relay(ucv, TRAP_EV_SYSCALL);
}

static void
on_fault(int sig, struct stub_siginfo *si, void *ucv)
{
	struct stub_ucontext *uc = ucv;
	struct trap_box *b = st.box;

	b->signo = sig;
	b->code = si->code;
	b->addr = si->addr;
	b->trapno = uc->mc.trapno;
	b->err = uc->mc.err;
	relay(uc, TRAP_EV_FAULT);
}

static void
on_kick(int sig, struct stub_siginfo *si, void *ucv)
{
	(void)sig;
	(void)si;
	relay(ucv, TRAP_EV_KICK);
}

/*
 * The life socket's peer closed (TRAP_FD_LIFE): the vm process that
 * served this process has ended, however it ended, and nothing will
 * answer again. Only the kernel's SIGIO for that descriptor counts; a
 * SIGIO sent by a process (SI_USER) is not a hang-up. It nests in a
 * relay, whose wait would otherwise outlast its vm process.
 */
static void
on_orphan(int sig, struct stub_siginfo *si, void *ucv)
{
	(void)sig;
	(void)ucv;
	if (si->code == POLL_HUP && si->syscall_nr == TRAP_FD_LIFE)
		die(117);
}

static void
handle(int sig, void (*fn)(int, struct stub_siginfo *, void *))
{
	struct stub_sigaction sa;

	sa.handler = fn;
	sa.flags = SA_SIGINFO | SA_ONSTACK | SA_RESTORER;
	sa.restorer = stub_restorer;
	/* Nothing nests in a relay but the orphan's end. */
	sa.mask = sig == SIGIO ? ~0ULL : ~bit(SIGIO);
	if (stub_syscall6(NR_rt_sigaction, sig, (long)&sa, 0, 8, 0, 0) != 0)
		die(120);
}

/* ---- the filter ------------------------------------------------------- */

#define STMT(c, k) ((struct sock_filter){ (uint16_t)(c), 0, 0, (uint32_t)(k) })
#define JEQ(k, t, f)                                                           \
	((struct sock_filter){ BPF_JMP | BPF_JEQ | BPF_K, (uint8_t)(t),        \
	    (uint8_t)(f), (uint32_t)(k) })
#define JGE(k, t, f)                                                           \
	((struct sock_filter){ BPF_JMP | BPF_JGE | BPF_K, (uint8_t)(t),        \
	    (uint8_t)(f), (uint32_t)(k) })
#define LD(off) STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) STMT(BPF_RET | BPF_K, (v))
#define ARG_LO(n) (offsetof(struct seccomp_data, args) + 8 * (n))
#define ARG_HI(n) (ARG_LO(n) + 4)
#define IP_LO offsetof(struct seccomp_data, instruction_pointer)
#define IP_HI (IP_LO + 4)

/*
 * Everything traps, but a few calls from the stub's own code (by
 * instruction pointer), with their arguments checked as the file's head
 * says: 32-bit and x32 calls kill the process. The stub's range must
 * not cross a 4 GiB boundary (checked). J(at, to) is the jump from
 * instruction at to instruction to.
 */
#define J(at, to) ((to) - (at)-1)
enum {
	F_RECV = 22,
	F_COOKIE = 24,
	F_ARCH = 32,
	F_MMAP = 35,
	F_MREMAP = 37,
	F_CLOSE = 43,
	F_TRAP = 45,
	F_ALLOW = 46,
	F_LEN = 47
};

static void
install_filter(const volatile uint64_t cookie[2])
{
	uint64_t lo = (uint64_t)stub_text_lo, hi = (uint64_t)stub_text_hi;
	uint64_t c0 = cookie[0], c1 = cookie[1];
	struct sock_filter f[] = {
		/* 0 */ LD(offsetof(struct seccomp_data, arch)),
		/* 1 */ JEQ(AUDIT_ARCH_X86_64, 1, 0),
		/* 2 */ RET(SECCOMP_RET_KILL_PROCESS),
		/* 3 */ LD(offsetof(struct seccomp_data, nr)),
		/* 4 */ JGE(0x40000000, 0, 1), /* x32 */
		/* 5 */ RET(SECCOMP_RET_KILL_PROCESS),
		/* 6 */ LD(IP_HI),
		/* 7 */ JEQ((uint32_t)(lo >> 32), 0, J(7, F_TRAP)),
		/* 8 */ LD(IP_LO),
		/* 9 */ JGE((uint32_t)lo, 0, J(9, F_TRAP)),
		/* 10 */ JGE((uint32_t)hi, J(10, F_TRAP), 0),
		/* 11 */ LD(offsetof(struct seccomp_data, nr)),
		/* 12 */ JEQ(NR_futex, J(12, F_ALLOW), 0),
		/* 13 */ JEQ(NR_rt_sigreturn, J(13, F_ALLOW), 0),
		/* 14 */ JEQ(NR_sched_yield, J(14, F_ALLOW), 0),
		/* 15 */ JEQ(NR_exit_group, J(15, F_ALLOW), 0),
		/* 16 */ JEQ(NR_close, J(16, F_CLOSE), 0),
		/* 17 */ JEQ(NR_arch_prctl, J(17, F_ARCH), 0),
		/* 18 */ JEQ(NR_mmap, J(18, F_MMAP), 0),
		/* 19 */ JEQ(NR_mremap, J(19, F_MREMAP), 0),
		/* 20 */ JEQ(NR_mprotect, J(20, F_COOKIE), 0),
		/* 21 */ JEQ(NR_recvmsg, 0, J(21, F_TRAP)),
		/* recvmsg: on the channel, with the cookie */
		/* 22 */ LD(ARG_LO(0)),
		/* 23 */ JEQ(TRAP_FD_CHAN, 0, J(23, F_TRAP)),
		/* the cookie in the unused fourth and fifth args */
		/* 24 */ LD(ARG_LO(3)),
		/* 25 */ JEQ((uint32_t)c0, 0, J(25, F_TRAP)),
		/* 26 */ LD(ARG_HI(3)),
		/* 27 */ JEQ((uint32_t)(c0 >> 32), 0, J(27, F_TRAP)),
		/* 28 */ LD(ARG_LO(4)),
		/* 29 */ JEQ((uint32_t)c1, 0, J(29, F_TRAP)),
		/* 30 */ LD(ARG_HI(4)),
		/* 31 */
		JEQ((uint32_t)(c1 >> 32), J(31, F_ALLOW), J(31, F_TRAP)),
		/* arch_prctl: ARCH_SET_GS .. ARCH_GET_GS */
		/* 32 */ LD(ARG_LO(0)),
		/* 33 */ JGE(ARCH_SET_GS, 0, J(33, F_TRAP)),
		/* 34 */ JGE(ARCH_GET_GS + 1, J(34, F_TRAP), J(34, F_ALLOW)),
		/* mmap: a file, shared and fixed, nothing else */
		/* 35 */ LD(ARG_LO(3)),
		/* 36 */
		JEQ(MAP_SHARED | MAP_FIXED, J(36, F_ALLOW), J(36, F_TRAP)),
		/* mremap: a duplicate (old size 0), moved and fixed */
		/* 37 */ LD(ARG_LO(1)),
		/* 38 */ JEQ(0, 0, J(38, F_TRAP)),
		/* 39 */ LD(ARG_HI(1)),
		/* 40 */ JEQ(0, 0, J(40, F_TRAP)),
		/* 41 */ LD(ARG_LO(3)),
		/* 42 */
		JEQ(MREMAP_MAYMOVE | MREMAP_FIXED, J(42, F_ALLOW),
		    J(42, F_TRAP)),
		/* close: anything but the life socket */
		/* 43 */ LD(ARG_LO(0)),
		/* 44 */ JEQ(TRAP_FD_LIFE, 0, J(44, F_ALLOW)),
		/* 45 */ RET(SECCOMP_RET_TRAP),
		/* 46 */ RET(SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };

	_Static_assert(sizeof(f) / sizeof(f[0]) == F_LEN, "the filter's size");
	if ((lo >> 32) != ((hi - 1) >> 32))
		die(121);
	if (sys(NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0) != 0 ||
	    sys(NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, (long)&prog) != 0)
		die(122);
	/* The program held the cookie: gone before the guest runs. */
	wipe(f, sizeof(f));
}

/* ---- boot ------------------------------------------------------------- */

/* The vDSO's extent in memory, from its program headers (0: unknown). */
static uint64_t
vdso_len(uint64_t base)
{
	const uint8_t *e = (const uint8_t *)base;
	uint64_t phoff, end = 0, v, m;
	uint16_t phnum, phentsize, i;
	uint32_t type;

	if (e[0] != 0x7f || e[1] != 'E' || e[2] != 'L' || e[3] != 'F')
		return 0;
	copy(&phoff, e + 32, 8);
	copy(&phentsize, e + 54, 2);
	copy(&phnum, e + 56, 2);
	if (phoff > 4096 || phentsize < 56 || phnum > 16)
		return 0;
	for (i = 0; i < phnum; i++) {
		const uint8_t *ph = e + phoff + (uint64_t)i * phentsize;

		copy(&type, ph, 4);
		copy(&v, ph + 16, 8);
		copy(&m, ph + 40, 8);
		if (type == 1 /* PT_LOAD */ && v + m > end)
			end = v + m;
	}
	return (end + 4095) & ~4095ULL;
}

/* Unmap [lo, hi) unless it touches the stub's own image. */
static void
unmap_unless_ours(uint64_t lo, uint64_t hi)
{
	uint64_t img_lo = (uint64_t)__ehdr_start, img_hi = (uint64_t)_end;

	if (hi <= lo || (lo < img_hi && hi > img_lo))
		return;
	sys(NR_munmap, (long)lo, (long)(hi - lo), 0);
}

/* Drop the host's vDSO and its data pages: the guest has keep's own
 * (host/vmm/vdso.c) and nothing of the host's. The data pages lie just
 * below the code ([vvar], [vvar_vclock]: six pages on Linux 6). */
static void
drop_host_vdso(uint64_t *sp)
{
	uint64_t argc = sp[0], *p = sp + 1 + argc + 1, base, len;

	while (*p != 0)
		p++;
	for (p++; p[0] != AT_NULL; p += 2) {
		if (p[0] != AT_SYSINFO_EHDR || (base = p[1]) < 0x100000)
			continue;
		if ((len = vdso_len(base)) == 0)
			len = 0x2000;
		unmap_unless_ours(base, base + len);
		unmap_unless_ours(base - 0x6000, base);
	}
}

static void
map_guest(uint64_t memsz, long fd)
{
	long rc;

	rc = stub_syscall6(NR_mmap, (long)TRAP_MEM_LO,
	    (long)(memsz - TRAP_MEM_LO), PROT_NONE,
	    MAP_SHARED | MAP_FIXED_NOREPLACE, fd, (long)TRAP_MEM_LO);
	if (rc != (long)TRAP_MEM_LO)
		die(123);
	rc = stub_syscall6(NR_mmap, GUEST_VVAR, GUEST_VDSO - GUEST_VVAR,
	    PROT_READ, MAP_SHARED | MAP_FIXED_NOREPLACE, fd, GUEST_VVAR);
	if (rc != GUEST_VVAR)
		die(123);
	rc = stub_syscall6(NR_mmap, GUEST_VDSO, GUEST_VDSO_MAX,
	    PROT_READ | PROT_EXEC, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
	    GUEST_VDSO);
	if (rc != GUEST_VDSO)
		die(123);
	/* The calls answered here (answer_here): the changed descriptors'
	 * page, the guest's to write as under KVM, and the answers' data,
	 * runs and index, read-only. */
	rc = stub_syscall6(NR_mmap, GUEST_FASTCHANGE, 0x1000,
	    PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED_NOREPLACE, fd,
	    GUEST_FASTCHANGE);
	if (rc != GUEST_FASTCHANGE)
		die(123);
	rc = stub_syscall6(NR_mmap, GUEST_FASTDATA,
	    GUEST_LOW_END - GUEST_FASTDATA, PROT_READ,
	    MAP_SHARED | MAP_FIXED_NOREPLACE, fd, GUEST_FASTDATA);
	if (rc != GUEST_FASTDATA)
		die(123);
	/* The image's room, closed, where the vm process maps the image
	 * read-only (run_op): held from here, so that mapping can only ever
	 * replace this. */
	if (memsz <= GUEST_IMAGE_GPA) {
		rc = stub_syscall6(NR_mmap, (long)GUEST_IMAGE_GPA,
		    (long)GUEST_IMAGE_MAX, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
		        MAP_FIXED_NOREPLACE,
		    -1, 0);
		if (rc != (long)GUEST_IMAGE_GPA)
			die(123);
	}
}

/*
 * Die with the vm process that serves this one: SIGIO (on_orphan) once
 * the peer of TRAP_FD_LIFE closes, which only that process holds. The
 * pdeath signal ties the stub to the process that started it, which for
 * a spare is the run's first vm process, not the one it serves; and the
 * stub is its pid namespace's init, which a SIGKILL from the socket
 * would not end (the kernel forces only a kill from an ancestor
 * namespace), so the signal is one it handles. Checked once armed: a
 * peer closed before then raised nothing.
 */
static void
watch_life(void)
{
	uint8_t byte;

	handle(SIGIO, on_orphan);
	if (sys(NR_fcntl, TRAP_FD_LIFE, F_SETOWN, sys(NR_getpid, 0, 0, 0)) !=
	        0 ||
	    sys(NR_fcntl, TRAP_FD_LIFE, F_SETSIG, SIGIO) != 0 ||
	    sys(NR_fcntl, TRAP_FD_LIFE, F_SETFL, O_ASYNC) != 0)
		die(120);
	if (stub_syscall6(NR_recvfrom, TRAP_FD_LIFE, (long)&byte, 1,
	        MSG_DONTWAIT | MSG_PEEK, 0, 0) == 0)
		die(117);
}

/*
 * A spare waits here, set up but for guest memory, until a vm process
 * takes it (host/vmm/trap.c, spare_take): then guest memory's
 * descriptor is on the channel, and memsz in the box is that guest's.
 * Its own filter is not yet in place: nothing of a guest's has run.
 * Its name (argv[0], "keepd: spare" as started) becomes a guest's.
 */
static long
wait_for_memory(struct trap_box *b, char *name)
{
	static const char spare[] = "keepd: spare", guest[] = "keepd: guest";
	long fd;
	size_t i;

	if (stub_syscall6(NR_rt_sigprocmask, 2 /* SIG_SETMASK */,
	        (long)&(uint64_t){ ~bit(SIGIO) }, 0, 8, 0, 0) != 0)
		die(120);
	while (load32(&b->go) == 0)
		sys(NR_futex, (long)&b->go, FUTEX_WAIT, 0);
	if ((fd = receive_fd(b)) < 0)
		die(123);
	for (i = 0; i < sizeof(spare) && name != NULL && name[i] == spare[i];
	     i++)
		;
	if (i == sizeof(spare))
		copy(name, guest, sizeof(guest));
	return fd;
}

/* The box from TRAP_FD_BOX, the handlers on its stack, the life
 * watched: what every stub sets up first, a spare the maker forked
 * again over its own descriptors. */
static struct trap_box *
take_box(void)
{
	struct trap_box *b;
	long rc;
	struct {
		uint64_t sp;
		int32_t flags, pad;
		uint64_t size;
	} ss;

	rc = stub_syscall6(NR_mmap, 0, TRAP_BOX_SIZE, PROT_READ | PROT_WRITE,
	    MAP_SHARED, TRAP_FD_BOX, 0);
	if (rc < 0 && rc > -4096)
		die(124);
	b = (struct trap_box *)rc;
	if (b->magic != TRAP_MAGIC)
		die(125);
	sys(NR_close, TRAP_FD_BOX, 0, 0);
	st.box = b;

	/* The handlers' stack is the box's: the kernel writes each signal
	 * frame where the vm process reads the guest's FPU area from. */
	ss.sp = (uint64_t)b->sigstack;
	ss.flags = 0;
	ss.pad = 0;
	ss.size = TRAP_SIGSTACK_SIZE;
	if (sys(NR_sigaltstack, (long)&ss, 0, 0) != 0)
		die(120);
	handle(SIGSYS, on_sigsys);
	handle(SIGSEGV, on_fault);
	handle(SIGBUS, on_fault);
	handle(SIGFPE, on_fault);
	handle(SIGILL, on_fault);
	handle(SIGTRAP, on_fault);
	handle(TRAP_SIG_KICK, on_kick);
	sys(NR_prctl, PR_SET_DUMPABLE, 0, 0);
	watch_life();
	return b;
}

static long
set_mask(uint64_t blocked)
{
	return stub_syscall6(
	    NR_rt_sigprocmask, 2 /* SIG_SETMASK */, (long)&blocked, 0, 8, 0, 0);
}

/*
 * A request to the maker: one byte and three descriptors, a spare's
 * box, channel and life. They land on the lowest free numbers, 0 to 2
 * (the maker holds only 5 and 6): below the ones a spare's must take.
 * 0, -1 at the vm process's end of the channel, or -EBADF for a request
 * not so made (whatever came is closed).
 */
static long
receive_request(int32_t fds[3])
{
	struct {
		uint64_t len;
		int32_t level, type;
		int32_t fd[4];
	} cm;
	uint8_t byte;
	struct stub_iovec iov = { &byte, 1 };
	struct stub_msghdr msg = { 0, 0, 0, &iov, 1, &cm, sizeof(cm), 0, 0 };
	long rc;
	int i, n, ok;

	do {
		wipe(&cm, sizeof(cm));
		msg.controllen = sizeof(cm);
		msg.flags = 0;
		rc = stub_syscall6(
		    NR_recvmsg, TRAP_FD_CHAN, (long)&msg, 0, 0, 0, 0);
	} while (rc == -EINTR);
	if (rc == 0)
		return -1;
	if (rc < 0)
		die(121);
	ok = cm.len == 28 && cm.level == SOL_SOCKET && cm.type == SCM_RIGHTS &&
	    !(msg.flags & MSG_CTRUNC);
	n = cm.len > 16 && cm.len <= sizeof(cm) && cm.level == SOL_SOCKET &&
	        cm.type == SCM_RIGHTS
	    ? (int)((cm.len - 16) / 4)
	    : 0;
	for (i = 0; i < n; i++)
		if (cm.fd[i] < 0 || cm.fd[i] >= TRAP_FD_BOX)
			ok = 0;
	if (!ok) {
		for (i = 0; i < n; i++)
			if (cm.fd[i] >= 0)
				sys(NR_close, cm.fd[i], 0, 0);
		return -EBADF;
	}
	for (i = 0; i < 3; i++)
		fds[i] = cm.fd[i];
	return 0;
}

/*
 * In a spare just forked by the maker: the maker's box, channel and life
 * given up for its own, its process limit the stub's, its name a
 * spare's; then its hello on the channel, which tells the vm process
 * its pid (the credentials the kernel attaches, in the reader's pid
 * namespace).
 */
static void
become_spare(const int32_t fds[3], char *name)
{
	static const char spare[] = "keepd: spare";
	const struct {
		uint64_t cur, max;
	} one = { 1, 1 };
	uint8_t byte = 's';
	struct stub_iovec iov = { &byte, 1 };
	struct stub_msghdr msg = { 0, 0, 0, &iov, 1, 0, 0, 0, 0 };

	sys(NR_munmap, (long)st.box, TRAP_BOX_SIZE, 0);
	st.box = 0;
	if (sys(NR_dup2, fds[0], TRAP_FD_BOX, 0) != TRAP_FD_BOX ||
	    sys(NR_dup2, fds[1], TRAP_FD_CHAN, 0) != TRAP_FD_CHAN ||
	    sys(NR_dup2, fds[2], TRAP_FD_LIFE, 0) != TRAP_FD_LIFE ||
	    sys(NR_close_range, 0, TRAP_FD_BOX - 1, 0) != 0 ||
	    stub_syscall6(NR_prlimit64, 0, RLIMIT_NPROC, (long)&one, 0, 0, 0) !=
	        0)
		die(122);
	if (name != 0)
		copy(name, spare, sizeof(spare));
	if (stub_syscall6(NR_sendmsg, TRAP_FD_CHAN, (long)&msg, 0, 0, 0, 0) !=
	    1)
		die(122);
}

/*
 * The tree's maker (docs/vmm.md, "Spare stubs"): a stub that never takes
 * a guest but forks a spare of itself for each request on its channel,
 * set up but for its box, its channel and its life; no exec, no
 * namespace to join. Its children are reaped by the kernel (SIGCHLD
 * ignored); they die with it, the init of their pid namespace, and it
 * with the run's first vm process (its pdeath signal, its life). Returns
 * only in a new spare, whose descriptors are in place.
 */
static void
make_spares(char *name)
{
	struct stub_sigaction ign;
	int32_t fds[3], tid;
	long pid;
	int i;

	/* (Set field by field, as handle does: an initializer holding
	 * stub_restorer's address may be laid out as data, a relocation.) */
	ign.handler = (void (*)(int, struct stub_siginfo *, void *))SIG_IGN;
	ign.flags = SA_RESTORER;
	ign.restorer = stub_restorer;
	ign.mask = 0;
	if (stub_syscall6(NR_rt_sigaction, SIGCHLD, (long)&ign, 0, 8, 0, 0) !=
	    0)
		die(120);
	for (;;) {
		if (set_mask(~bit(SIGIO)) != 0)
			die(120);
		if ((pid = receive_request(fds)) == -1)
			die(0); /* the vm process closed its end */
		if (pid != 0)
			continue;
		/* Every signal held off in the child until it is set up. */
		if (set_mask(~0ULL) != 0)
			die(120);
		pid =
		    stub_syscall6(NR_clone, CLONE_FORK, 0, 0, (long)&tid, 0, 0);
		if (pid == 0) {
			become_spare(fds, name);
			return;
		}
		/* The request's descriptors are the child's now; where the
		 * clone failed, their close here is the spare's end: the vm
		 * process that takes it, finding no hello, starts a stub. */
		for (i = 0; i < 3; i++)
			sys(NR_close, fds[i], 0, 0);
	}
}

void
stub_main(uint64_t *sp)
{
	struct trap_box *b;
	long rc, mem_fd = TRAP_FD_MEM;
	uint64_t memsz;
	char *name = sp[0] >= 1 ? (char *)sp[1] : 0;

	drop_host_vdso(sp);
	b = take_box();
	if (load32(&b->spare) == TRAP_SPARE_MAKER) {
		make_spares(name);
		b = take_box();
		if (load32(&b->spare) != TRAP_SPARE)
			die(125);
	}
	if (load32(&b->spare))
		mem_fd = wait_for_memory(b, name);
	memsz = b->memsz;
	if (memsz <= TRAP_MEM_LO || memsz > (1ULL << 40) ||
	    (memsz & 0xfff) != 0)
		die(125);
	map_guest(memsz, mem_fd);
	/* The guest's memory again, out of its way and closed: a shared
	 * mapping unmapped gives way to a duplicate of its range from here
	 * (TRAP_OP_RESTORE), with no descriptor kept for it. */
	rc = stub_syscall6(NR_mmap, 0, (long)(memsz - TRAP_MEM_LO), PROT_NONE,
	    MAP_SHARED, mem_fd, (long)TRAP_MEM_LO);
	if (rc < 0 && rc > -4096)
		die(123);
	st.alias = (uint64_t)rc;
	sys(NR_close, mem_fd, 0, 0);

	/* Again after execve, which may clear what the vm process set
	 * before it; a vm process that died in between is caught by the
	 * boot's own wait (post_and_wait's limit). A spare's parent is the
	 * run's first vm process, not the one it serves (watch_life). */
	sys(NR_prctl, PR_SET_PDEATHSIG, 9 /* SIGKILL */, 0);
	/* Only the relay's signals open (the handlers' masks hold them off
	 * one another), and the orphan's: any other, a SIGTERM or SIGINT
	 * sent to a process group from outside, stays pending here rather
	 * than ending the guest's process behind the vm process's back; the
	 * guest's own signals are the vm process's to deliver. */
	if (stub_syscall6(NR_rt_sigprocmask, 2 /* SIG_SETMASK */,
	        (long)&(uint64_t){ ~(bit(SIGSYS) | bit(SIGSEGV) | bit(SIGBUS) |
	            bit(SIGFPE) | bit(SIGILL) | bit(SIGTRAP) |
	            bit(TRAP_SIG_KICK) | bit(SIGIO)) },
	        0, 8, 0, 0) != 0)
		die(120);
	install_filter(b->filter_cookie);
	wipe(b->filter_cookie, sizeof(b->filter_cookie));
	/* Now only the relay: the first SIGSYS asks for the guest's first
	 * registers and returns into the guest with them. */
	st.fs_base = st.gs_base = 0;
	stub_boot_trap();
	die(127);
}

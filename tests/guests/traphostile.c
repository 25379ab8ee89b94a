/*
 * Attacks on the trap platform (issue 28, tests/integration/
 * vmm_trap_hostile.sh): the guest shares its host process with the stub
 * (guest/trap_stub.c), so it tries what that process could do. One
 * attack per argument; each prints what it got, one line per step, and
 * "survived" when the run is still served after it.
 *
 * The attacks on the stub need its addresses, which ASLR hides: the test
 * script reads them from the host (/proc/PID/maps of the stub) and
 * writes /stub.addr into the workspace, which the guest waits for:
 * "TEXT_LO TEXT_HI DATA_LO DATA_HI BOX CLOSED", all hex, where [TEXT_LO,
 * TEXT_HI) is the stub's code, [DATA_LO, DATA_HI) its writable data,
 * BOX the shared box and CLOSED a page of guest memory the guest has
 * not opened (PROT_NONE in the stub's process).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../host/vmm/trap_abi.h"

/* musl has no kernel headers: the few values used, from the kernel's. */
#define SECCOMP_SET_MODE_STRICT 0
#define SECCOMP_SET_MODE_FILTER 1
#define SECCOMP_MODE_STRICT 1
#define SECCOMP_MODE_FILTER 2
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#define BPF_RET_K 0x06

struct sock_filter {
	uint16_t code;
	uint8_t jt, jf;
	uint32_t k;
};

struct sock_fprog {
	unsigned short len;
	struct sock_filter *filter;
};

static uint64_t text_lo, text_hi, data_lo, data_hi, box_addr, closed;

/* Call the stub's `syscall; ret` at g with chosen registers: nr in RAX,
 * the arguments in RDI, RSI, RDX, R10, R8, R9 (R10 and R8 are where
 * stub_mprotect carries its cookie). */
long gcall(
    uint64_t g, long nr, long a0, long a1, long a2, long a3, long a4, long a5);
__asm__(".text\n"
        ".globl gcall\n"
        "gcall:\n"
        "	mov %rdi, %r11\n"
        "	mov %rsi, %rax\n"
        "	mov %rdx, %rdi\n"
        "	mov %rcx, %rsi\n"
        "	mov %r8, %rdx\n"
        "	mov %r9, %r10\n"
        "	mov 8(%rsp), %r8\n"
        "	mov 16(%rsp), %r9\n"
        "	call *%r11\n"
        "	ret\n");

/* rt_sigreturn through the stub's `syscall` at g, with the frame at sp. */
void gsigreturn(uint64_t g, void *sp);
__asm__(".text\n"
        ".globl gsigreturn\n"
        "gsigreturn:\n"
        "	mov %rsi, %rsp\n"
        "	mov $15, %eax\n"
        "	jmp *%rdi\n");

static void
say(const char *what, long rc)
{
	if (rc < 0 && rc > -4096)
		printf("%s: %s\n", what, strerror((int)-rc));
	else
		printf("%s: %ld\n", what, rc);
	fflush(stdout);
}

/* The libc call's result as say() takes it. */
static long
neg(long rc)
{
	return rc == -1 ? -errno : rc;
}

/* Calls after an attack: answered means the run is still served. */
static void
survived(void)
{
	char line[] = "survived\n";

	if (getpid() > 0 &&
	    write(1, line, sizeof(line) - 1) == (ssize_t)sizeof(line) - 1)
		return;
	_exit(3);
}

/* The file's content on stdout, so the test sees what the guest saw. */
static void
dump(const char *what, long fd)
{
	char buf[256];
	ssize_t n;

	if (fd < 0)
		return;
	n = read((int)fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("%s read: %s\n", what, buf);
	close((int)fd);
}

static void
load_addrs(void)
{
	char buf[256];
	struct timespec ts = { 0, 10000000 };
	ssize_t n;
	int fd, i;

	for (i = 0; i < 6000; i++) {
		if ((fd = open("/stub.addr", O_RDONLY)) >= 0)
			break;
		nanosleep(&ts, NULL);
	}
	if (fd < 0) {
		printf("no /stub.addr\n");
		exit(2);
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if (sscanf(buf, "%lx %lx %lx %lx %lx %lx", &text_lo, &text_hi, &data_lo,
	        &data_hi, &box_addr, &closed) != 6) {
		printf("bad /stub.addr: %s\n", buf);
		exit(2);
	}
}

/* The first place in the stub's code holding pat. */
static uint64_t
find(const char *what, const unsigned char *pat, size_t len)
{
	const unsigned char *p = (const unsigned char *)text_lo;
	uint64_t i;

	for (i = 0; i + len <= text_hi - text_lo; i++)
		if (memcmp(p + i, pat, len) == 0)
			return text_lo + i;
	printf("no %s in the stub\n", what);
	exit(2);
}

/* stub_syscall6's `syscall; ret` (after `mov 8(%rsp), %r9`). */
static uint64_t
gadget(void)
{
	static const unsigned char p[] = { 0x4c, 0x8b, 0x4c, 0x24, 0x08, 0x0f,
		0x05, 0xc3 };

	return find("syscall; ret", p, sizeof(p)) + 5;
}

/* stub_mprotect(addr, len, prot, cookie[2]) */
static long (*mprotect_fn(void))(uint64_t, uint64_t, long, const uint64_t *)
{
	static const unsigned char p[] = { 0x4c, 0x8b, 0x11, 0x4c, 0x8b, 0x41,
		0x08, 0xb8, 0x0a, 0x00, 0x00, 0x00, 0x0f, 0x05 };

	return (long (*)(uint64_t, uint64_t, long, const uint64_t *))find(
	    "stub_mprotect", p, sizeof(p));
}

/* ---- the 32-bit entries and the vsyscall page --------------------------- */

static const char passwd[] = "/etc/passwd";
static char buf32[4096];

static void
int80(void)
{
	long fd, n;

	/* open(2) of the i386 ABI: 5, path in EBX. */
	__asm__ volatile("int $0x80"
	                 : "=a"(fd)
	                 : "a"(5L), "b"(passwd), "c"(0L), "d"(0L)
	                 : "memory");
	__asm__ volatile("int $0x80"
	                 : "=a"(n)
	                 : "a"(3L), "b"(fd), "c"(buf32), "d"(sizeof(buf32))
	                 : "memory");
	printf("int80: open %ld read %ld: %.200s\n", fd, n, buf32);
}

static void
sysenter(void)
{
	long fd;

	__asm__ volatile("sysenter"
	                 : "=a"(fd)
	                 : "a"(5L), "b"(passwd), "c"(0L), "d"(0L)
	                 : "r11", "memory");
	printf("sysenter: open %ld\n", fd);
}

static void
vsyscall(void)
{
	struct timeval tv = { 0, 0 };
	long rc;

	/* gettimeofday at the legacy page's first entry (red zone kept). */
	__asm__ volatile("sub $128, %%rsp\n\t"
	                 "call *%%rax\n\t"
	                 "add $128, %%rsp"
	                 : "=a"(rc)
	                 : "a"(0xffffffffff600000UL), "D"(&tv), "S"(0L)
	                 : "rcx", "rdx", "r8", "r9", "r10", "r11", "memory");
	printf("vsyscall: %ld sec %s\n", rc, tv.tv_sec > 0 ? "set" : "unset");
}

/* ---- calls the guest may make: served, never carried out ---------------- */

/* A filter that would kill its caller at its next call. */
static struct sock_filter kill_all[] = {
	{ BPF_RET_K, 0, 0, SECCOMP_RET_KILL_PROCESS },
};
static struct sock_fprog kill_prog = { 1, kill_all };

static void
seccomp_calls(void)
{
	say("seccomp filter",
	    neg(syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &kill_prog)));
	say("seccomp strict",
	    neg(syscall(SYS_seccomp, SECCOMP_SET_MODE_STRICT, 0, NULL)));
}

static void
prctl_calls(void)
{
	say("prctl seccomp filter",
	    neg(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &kill_prog, 0, 0)));
	say("prctl seccomp strict",
	    neg(prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0)));
	say("prctl no_new_privs", neg(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)));
	say("prctl dumpable", neg(prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)));
}

static void
ptrace_calls(void)
{
	say("ptrace traceme", neg(ptrace(PTRACE_TRACEME, 0, 0, 0)));
	say("ptrace attach 1", neg(ptrace(PTRACE_ATTACH, 1, 0, 0)));
	say("ptrace seize 1", neg(ptrace(PTRACE_SEIZE, 1, 0, 0)));
}

/* Block every signal, SIGSYS among them: the mask is the guest's own
 * (the VMM's), so the next calls are still served. */
static void
sigmask(void)
{
	uint64_t all = ~0ULL, now = 0;

	say("block all",
	    neg(syscall(SYS_rt_sigprocmask, SIG_SETMASK, &all, NULL, 8)));
	say("mask read back",
	    neg(syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &now, 8)));
	printf(
	    "SIGSYS blocked: %s\n", (now >> (SIGSYS - 1)) & 1 ? "yes" : "no");
}

/* mmap, munmap and mprotect of the stub's code as guest calls. */
static void
mmap_stub(void)
{
	load_addrs();
	say("mmap fixed over the stub",
	    neg((long)mmap((void *)text_lo, 4096,
	        PROT_READ | PROT_WRITE | PROT_EXEC,
	        MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)));
	say("mmap fixed over the box",
	    neg((long)mmap((void *)box_addr, TRAP_BOX_SIZE, PROT_READ,
	        MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)));
	say("mprotect the stub writable",
	    neg(mprotect((void *)text_lo, 4096, PROT_READ | PROT_WRITE)));
	say("munmap the stub", neg(munmap((void *)text_lo, 4096)));
	printf("the stub's code: %s\n", gadget() ? "unchanged" : "changed");
}

/* A write to the stub's code, after a guest mprotect and the stub's own
 * mprotect without the cookie: a fault, as any write to read-only code. */
static void
stub_write(void)
{
	uint64_t g, none[2] = { 0, 0 };

	load_addrs();
	g = gadget();
	mprotect((void *)text_lo, text_hi - text_lo, PROT_READ | PROT_WRITE);
	mprotect_fn()(text_lo, text_hi - text_lo, PROT_READ | PROT_WRITE, none);
	*(volatile uint8_t *)g = 0xc3;
	printf("wrote the stub's code\n");
}

/* ---- the stub's own code with the guest's registers --------------------- */

static void
stub_jump(void)
{
	static const char *const argv[] = { "sh", "-c", "cat /etc/passwd",
		NULL };
	uint64_t g;
	long rc;

	load_addrs();
	g = gadget();
	rc = gcall(g, SYS_openat, AT_FDCWD, (long)passwd, O_RDONLY, 0, 0, 0);
	say("openat /etc/passwd", rc);
	dump("openat /etc/passwd", rc);
	rc = gcall(g, SYS_open, (long)"/proc/1/environ", O_RDONLY, 0, 0, 0, 0);
	say("open /proc/1/environ", rc);
	dump("open /proc/1/environ", rc);
	rc = gcall(g, SYS_execve, (long)"/bin/sh", (long)argv, 0, 0, 0, 0);
	say("execve /bin/sh", rc);
	say("mprotect the stub without the cookie",
	    gcall(g, SYS_mprotect, (long)text_lo, 4096,
	        PROT_READ | PROT_WRITE | PROT_EXEC, 0, 0, 0));
	say("mprotect closed memory without the cookie",
	    gcall(g, SYS_mprotect, (long)closed, 4096, PROT_READ | PROT_WRITE,
	        0x1234, 0x5678, 0));
	say("mmap fixed over the stub",
	    gcall(g, SYS_mmap, (long)text_lo, 4096, PROT_READ | PROT_WRITE,
	        MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
	say("mmap the box again",
	    gcall(g, SYS_mmap, 0, TRAP_BOX_SIZE, PROT_READ | PROT_WRITE,
	        MAP_SHARED, TRAP_FD_BOX, 0));
	/* The calls the filter lets through from there for shared
	 * mappings: the channel needs the cookie; mmap finds no file to
	 * map (the channel is a socket); mremap only duplicates what the
	 * guest reaches already. */
	{
		struct msghdr m;
		char byte;
		struct iovec iov = { &byte, 1 };

		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		say("recvmsg on the channel without the cookie",
		    gcall(g, SYS_recvmsg, TRAP_FD_CHAN, (long)&m, MSG_DONTWAIT,
		        0, 0, 0));
	}
	say("mmap the channel, shared and fixed",
	    gcall(g, SYS_mmap, (long)closed, 4096, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_FIXED, TRAP_FD_CHAN, 0));
	say("mmap the life socket, shared and fixed",
	    gcall(g, SYS_mmap, (long)closed, 4096, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_FIXED, TRAP_FD_LIFE, 0));
	/* The filter refuses it from there: a guest close(6), served. */
	say("close the life socket",
	    gcall(g, SYS_close, TRAP_FD_LIFE, 0, 0, 0, 0, 0));
	say("mmap a descriptor the guest names, shared and fixed",
	    gcall(g, SYS_mmap, (long)closed, 4096, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_FIXED, 0, 0));
	say("kill 1 0", gcall(g, SYS_kill, 1, 0, 0, 0, 0, 0));
	say("setns", gcall(g, SYS_setns, 0, 0, 0, 0, 0, 0));
	/* A call the filter lets through from there: harmless. */
	say("sched_yield", gcall(g, SYS_sched_yield, 0, 0, 0, 0, 0, 0));
}

/* exit_group from the stub's code: the process ends, the run reports it. */
static void
stub_exit(void)
{
	load_addrs();
	gcall(gadget(), SYS_exit_group, 7, 0, 0, 0, 0, 0);
	printf("exit_group returned\n");
}

/* rt_sigreturn from the stub's code with a frame that blocks SIGSYS in
 * the host's own mask, then a call. */
struct frame {
	uint64_t flags, link;
	uint64_t ss_sp;
	int32_t ss_flags, pad;
	uint64_t ss_size;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip, eflags;
	uint16_t cs, gs, fs, ss;
	uint64_t err, trapno, oldmask, cr2, fpstate, reserved[8];
	uint64_t sigmask;
};

static _Alignas(16) uint8_t landing_stack[16384];

static void __attribute__((noreturn)) landing(void)
{
	/* SIGSYS is blocked in the host now: this call's trap kills. */
	long rc;

	__asm__ volatile("syscall"
	                 : "=a"(rc)
	                 : "a"((long)SYS_getpid)
	                 : "rcx", "r11", "memory");
	syscall(SYS_write, 1, "landed\n", 7);
	for (;;)
		;
}

static void
stub_sigreturn(void)
{
	static _Alignas(16) struct frame f;

	load_addrs();
	memset(&f, 0, sizeof(f));
	f.ss_flags = 2; /* SS_DISABLE */
	f.rip = (uint64_t)landing;
	f.rsp = (uint64_t)(landing_stack + sizeof(landing_stack) - 8);
	f.eflags = 0x202;
	f.cs = 0x33;
	f.ss = 0x2b;
	f.sigmask = 1ULL << (SIGSYS - 1);
	printf("sigreturn\n");
	fflush(stdout);
	gsigreturn(gadget(), &f);
}

/* The stub's writable data (its state: where the box is) overwritten,
 * then a call. */
static void
stub_data(void)
{
	load_addrs();
	printf("overwriting %lu bytes\n", (unsigned long)(data_hi - data_lo));
	fflush(stdout);
	memset((void *)data_lo, 0x41, data_hi - data_lo);
	survived();
}

/* ---- the box ------------------------------------------------------------ */

/* getpid(2) made with the stack pointer at sp: where the kernel writes
 * the stub's signal frame when sp lies on the stub's signal stack. */
static long
call_on_stack(uint64_t sp)
{
	long rc;

	__asm__ volatile("mov %%rsp, %%r12\n"
	                 "mov %1, %%rsp\n"
	                 "syscall\n"
	                 "mov %%r12, %%rsp"
	                 : "=a"(rc)
	                 : "r"(sp), "0"((long)SYS_getpid)
	                 : "rcx", "r11", "r12", "memory");
	return rc;
}

static void
on_usr2(int sig)
{
	(void)sig;
}

static volatile struct trap_box *box;

/* Wait (spinning: any call would be an event of its own) until the vm
 * process answers; 1 once it has. */
static int
box_wait_reply(void)
{
	unsigned long i;

	for (i = 0; i < (1UL << 34); i++) {
		if (__atomic_load_n(&box->state, __ATOMIC_SEQ_CST) ==
		    TRAP_S_REPLY)
			return 1;
		__builtin_ia32_pause();
	}
	return 0;
}

static void
box_forge(uint32_t event, long nr, long a0, long a1, long a2)
{
	box->regs.rax = (uint64_t)nr;
	box->regs.rdi = (uint64_t)a0;
	box->regs.rsi = (uint64_t)a1;
	box->regs.rdx = (uint64_t)a2;
	/* After a call, RIP is RCX and RFLAGS R11, as after sysretq. */
	box->regs.rip = box->regs.rcx = (uint64_t)survived;
	box->regs.r11 = 0x202;
	box->regs.rsp = (uint64_t)(landing_stack + sizeof(landing_stack) - 8);
	box->event = event;
	__atomic_store_n(&box->state, TRAP_S_EVENT, __ATOMIC_SEQ_CST);
}

static void
box_attack(const char *how)
{
	static const char forged[] = "forged write\n";
	uint64_t cookie[2], none[2] = { 0, 0 };
	uint32_t reply;
	int answered, ours;
	long rc, rax;

	load_addrs();
	box = (volatile struct trap_box *)box_addr;
	printf("box magic %s\n", box->magic == TRAP_MAGIC ? "ok" : "bad");
	fflush(stdout);
	if (strcmp(how, "garbage") == 0) {
		/* Every byte of it, state, nops and fpu_len included. */
		memset((void *)box, 0x41, TRAP_BOX_SIZE);
		survived();
		memset((void *)box, 0xff, TRAP_BOX_SIZE);
		box->state = 0;
		survived();
	} else if (strcmp(how, "nops") == 0) {
		/* What the stub reads of a reply, forged before a call. */
		box->reply = TRAP_R_OPS;
		box->nops = 0xffffffff;
		box->fpu_len = 0xffffffff;
		box->fpu_off = 0xffffffc0;
		box->ops[0].addr = text_lo;
		box->ops[0].len = 4096;
		box->ops[0].prot = 7;
		survived();
	} else if (strcmp(how, "call") == 0) {
		/* A call the guest did not make: served as one it did. */
		box_forge(TRAP_EV_SYSCALL, SYS_write, 1, (long)forged,
		    sizeof(forged) - 1);
		/* The answer's registers, read before any call of ours
		 * (whose own event would overwrite them). */
		answered = box_wait_reply();
		rax = (long)box->regs.rax;
		ours = box->regs.rip == (uint64_t)survived;
		printf("reply: %s\n", answered ? "yes" : "no");
		printf("forged call's rax: %ld rip %s\n", rax,
		    ours ? "ours" : "not ours");
		survived();
	} else if (strcmp(how, "event") == 0) {
		box_forge(0x77, 0, 0, 0, 0);
		for (;;)
			;
	} else if (strcmp(how, "boot") == 0) {
		box_forge(TRAP_EV_BOOT, 0, 0, 0, 0);
		for (;;)
			;
	} else if (strcmp(how, "ops") == 0) {
		box->result = 0;
		box_forge(TRAP_EV_OPS, 0, 0, 0, 0);
		for (;;)
			;
	} else if (strcmp(how, "fault") == 0) {
		box->signo = SIGSEGV;
		box->code = 1;
		box->trapno = 14;
		box->err = 4;
		box->addr = 0xdead000;
		box_forge(TRAP_EV_FAULT, 0, 0, 0, 0);
		for (;;)
			;
	} else if (strcmp(how, "sigstack") == 0) {
		/* The stub's signal stack is in the box: a call with the
		 * stack pointer near its top is relayed from a frame a
		 * little lower, one near its bottom would have the stub's
		 * handler run below the stack, into the box's fields. The
		 * low one is a quarter of a KiB above the room the handler
		 * keeps, so that any frame lands in that room: how much a
		 * frame takes is the CPU's (its XSAVE area), and 6 KiB up,
		 * where this was, a CPU without AVX-512 had the frame fit
		 * above the room and the call served, as it should be. */
		say("a call, stack pointer high on the signal stack",
		    call_on_stack(box_addr + TRAP_BOX_SIZE - 64) > 0 ? 0 : -1);
		survived();
		call_on_stack(
		    box_addr + TRAP_SIGSTACK_OFF + TRAP_SIGSTACK_SPARE + 0x100);
		printf("a call low on the signal stack came back\n");
	} else if (strcmp(how, "fpu") == 0) {
		/* A forged call that makes the vm process read the FPU
		 * area (a signal to deliver), which the box says lies far
		 * outside it. */
		signal(SIGUSR2, on_usr2);
		long pid = getpid();
		box->fpu_off = 0xffffffc0;
		box->fpu_len = TRAP_FPU_MAX;
		box_forge(TRAP_EV_SYSCALL, SYS_kill, pid, SIGUSR2, 0);
		answered = box_wait_reply();
		ours = box->regs.rip == (uint64_t)on_usr2;
		printf("reply: %s, to the handler: %s\n",
		    answered ? "yes" : "no", ours ? "yes" : "no");
		survived();
	} else if (strcmp(how, "cookie") == 0) {
		/* Without the cookie, the stub's mprotect is a guest call. */
		say("mprotect closed memory, no cookie",
		    mprotect_fn()(closed, 4096, PROT_READ | PROT_WRITE, none));
		/* A forged mmap makes the vm process open memory: it sends
		 * the stub that mprotect, with its cookie, to a box the
		 * guest reads while it runs. */
		box->regs.r10 = MAP_PRIVATE | MAP_ANONYMOUS;
		box->regs.r8 = (uint64_t)-1;
		box->regs.r9 = 0;
		box_forge(TRAP_EV_SYSCALL, SYS_mmap, 0, 1 << 20,
		    PROT_READ | PROT_WRITE);
		if (!box_wait_reply()) {
			printf("no reply\n");
			return;
		}
		/* No call until the vm process has its answer: a call would
		 * be an event of its own. */
		cookie[0] = box->op_cookie[0];
		cookie[1] = box->op_cookie[1];
		reply = box->reply;
		answered = 0;
		if (reply == TRAP_R_OPS) {
			/* Answer as the stub would (the ops not done), then wait
			 * for the forged call's own reply. */
			box->result = 0;
			box->op_cookie[0] = box->op_cookie[1] = 0;
			box->event = TRAP_EV_OPS;
			__atomic_store_n(
			    &box->state, TRAP_S_EVENT, __ATOMIC_SEQ_CST);
			answered = box_wait_reply();
		} else if (reply == TRAP_R_OPS_RESUME) {
			/* The ops with the resume: the stub would go on
			 * into the guest, the reply is the call's own. */
			answered = 1;
		}
		printf("reply %u, cookie %s, forged mmap answered: %s\n", reply,
		    cookie[0] | cookie[1] ? "seen" : "not seen",
		    answered ? "yes" : "no");
		fflush(stdout);
		rc =
		    mprotect_fn()(closed, 4096, PROT_READ | PROT_WRITE, cookie);
		say("mprotect closed memory, the cookie", rc);
		if (rc == 0) {
			*(volatile uint64_t *)closed = 0x4b4e4f574e;
			printf(
			    "KNOWN: wrote closed memory with the vm process's "
			    "cookie\n");
		}
		survived();
	} else {
		printf("unknown box attack %s\n", how);
	}
}

/* ---- a forked child ------------------------------------------------------ */

/* A forked child's process, which the script looks at from the host
 * beside its parent's (a guest tree's later stubs join its first one's
 * namespaces, docs/vmm.md): the child waits for /stub.addr, the
 * script's word that it has looked, and exits; the parent waits for it. */
static void
forked(void)
{
	pid_t c = fork();
	int st;

	if (c == -1) {
		printf("fork: %s\n", strerror(errno));
		return;
	}
	if (c == 0) {
		load_addrs();
		_exit(7);
	}
	if (waitpid(c, &st, 0) != c) {
		printf("waitpid: %s\n", strerror(errno));
		return;
	}
	printf("forked child: exit %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

/* ---- a child whose vm process is killed ---------------------------------- */

static void __attribute__((noreturn)) masked_landing(void)
{
	int fd;

	/* SIGIO is blocked in the host's mask now; calls are served. */
	if ((fd = open("/orphan.masked", O_WRONLY | O_CREAT, 0600)) >= 0)
		close(fd);
	for (;;)
		__asm__ volatile("" ::: "memory");
}

/*
 * A child forked after a first one was waited for: its process is a
 * spare its parent started ahead (docs/vmm.md, "Spare stubs"), not a
 * child of the vm process that serves it, so only its life socket ends
 * it with that process. It writes /orphan.ready and then spins in its
 * own code (spin), waits in a call (wait), or (masked) blocks the life
 * socket's SIGIO in its process's own mask with a forged sigreturn from
 * the stub's code, writes /orphan.masked and spins, which only the end
 * of the run's first process ends (the spare's pdeath signal). The
 * script kills its vm process from the host and looks for its process
 * to end. The parent tells how the child ended.
 */
static void
orphan(const char *how)
{
	static _Alignas(16) struct frame f;

	pid_t c;
	int st, fd;

	if ((c = fork()) == 0)
		_exit(0);
	if (c == -1 || waitpid(c, &st, 0) != c) {
		printf("the first child: %s\n", strerror(errno));
		return;
	}
	if ((c = fork()) == 0) {
		if ((fd = open("/orphan.ready", O_WRONLY | O_CREAT, 0600)) >= 0)
			close(fd);
		if (strcmp(how, "wait") == 0)
			for (;;)
				pause();
		if (strcmp(how, "masked") == 0) {
			load_addrs();
			memset(&f, 0, sizeof(f));
			/* The handlers' stack kept: the box's. */
			f.ss_sp = box_addr + TRAP_SIGSTACK_OFF;
			f.ss_size = TRAP_SIGSTACK_SIZE;
			f.rip = (uint64_t)masked_landing;
			f.rsp = (uint64_t)(landing_stack +
			    sizeof(landing_stack) - 8);
			f.eflags = 0x202;
			f.cs = 0x33;
			f.ss = 0x2b;
			f.sigmask = 1ULL << (SIGIO - 1);
			gsigreturn(gadget(), &f);
		}
		for (;;)
			__asm__ volatile("" ::: "memory");
	}
	if (c == -1 || waitpid(c, &st, 0) != c) {
		printf("waitpid: %s\n", strerror(errno));
		return;
	}
	printf("orphan child: %s %d\n", WIFSIGNALED(st) ? "killed by" : "exit",
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
}

/*
 * Spares killed before they are taken: the first child waits for
 * /spares.killed (the script's word that it has killed the spares its
 * parent started during the wait), and the next fork's child runs on a
 * stub started then, as before spares.
 */
static void
dead_spares(void)
{
	struct timespec ts = { 0, 10000000 };
	pid_t c;
	int st, i;

	if ((c = fork()) == 0) {
		for (i = 0; i < 6000 && access("/spares.killed", F_OK) != 0;
		     i++)
			nanosleep(&ts, NULL);
		_exit(i < 6000 ? 0 : 2);
	}
	if (c == -1 || waitpid(c, &st, 0) != c) {
		printf("the first child: %s\n", strerror(errno));
		return;
	}
	printf("the first child: exit %d\n", WEXITSTATUS(st));
	if ((c = fork()) == 0)
		_exit(5);
	if (c == -1 || waitpid(c, &st, 0) != c) {
		printf("the second child: %s\n", strerror(errno));
		return;
	}
	printf("the second child: exit %d\n", WEXITSTATUS(st));
}

/* ---- main --------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "";

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(how, "int80") == 0)
		int80();
	else if (strcmp(how, "sysenter") == 0)
		sysenter();
	else if (strcmp(how, "vsyscall") == 0)
		vsyscall();
	else if (strcmp(how, "seccomp") == 0)
		seccomp_calls();
	else if (strcmp(how, "prctl") == 0)
		prctl_calls();
	else if (strcmp(how, "ptrace") == 0)
		ptrace_calls();
	else if (strcmp(how, "sigmask") == 0)
		sigmask();
	else if (strcmp(how, "mmapstub") == 0)
		mmap_stub();
	else if (strcmp(how, "stubjump") == 0)
		stub_jump();
	else if (strcmp(how, "stubwrite") == 0)
		stub_write();
	else if (strcmp(how, "stubexit") == 0)
		stub_exit();
	else if (strcmp(how, "sigreturn") == 0)
		stub_sigreturn();
	else if (strcmp(how, "stubdata") == 0)
		stub_data();
	else if (strcmp(how, "forked") == 0)
		forked();
	else if (strcmp(how, "orphan") == 0 && argc > 2)
		orphan(argv[2]);
	else if (strcmp(how, "deadspares") == 0)
		dead_spares();
	else if (strcmp(how, "box") == 0 && argc > 2)
		box_attack(argv[2]);
	else {
		printf("usage: traphostile ATTACK\n");
		return 2;
	}
	survived();
	return 0;
}

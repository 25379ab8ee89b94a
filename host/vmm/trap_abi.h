/*
 * The ABI between the trap platform's stub (guest/trap_stub.c), which
 * runs in the guest's host process, and the vm process that serves it
 * (host/vmm/trap.c): one shared page, the box, and the descriptors the
 * stub starts with. One header for both sides (docs/vmm.md, "The trap
 * platform").
 *
 * The box lies in a memfd both map. Everything in it is written by the
 * guest's process as freely as by the stub: the vm process copies what
 * it reads once, and trusts it no more than the guest's own registers.
 */
#ifndef KEEP_VMM_TRAP_ABI_H
#define KEEP_VMM_TRAP_ABI_H

#include <stdint.h>

/* Descriptors the stub is started with; it closes the first two once
 * mapped and keeps the channel, on which the vm process sends each
 * shared mapping's descriptor (TRAP_OP_MAP), and its life. A spare
 * (trap_box.spare) starts without TRAP_FD_MEM and receives its memory's
 * descriptor on the channel once a vm process takes it. */
#define TRAP_FD_MEM 3 /* guest memory: offset = guest address */
#define TRAP_FD_BOX 4 /* the box */
#define TRAP_FD_CHAN 5 /* a SOCK_SEQPACKET socket: descriptors only */
/* A socket whose peer only the vm process that serves the stub holds:
 * its close (that process's end, however it ends) raises SIGIO
 * (O_ASYNC), on which the stub ends. Nothing is ever sent on it. */
#define TRAP_FD_LIFE 6

#define TRAP_BOX_SIZE 0x8000
#define TRAP_OPS_MAX 128
#define TRAP_FPU_MAX 0x4000 /* the largest signal-frame FPU area taken */
/* The stub's signal stack: the box from its third page on. */
#define TRAP_SIGSTACK_OFF 0x2000
#define TRAP_SIGSTACK_SIZE (TRAP_BOX_SIZE - TRAP_SIGSTACK_OFF)
/* The least of the signal stack a handler's frame leaves below it for
 * the handler's own calls; a frame lower is not the stub's (the guest
 * ran with its stack pointer on the signal stack): the stub dies. */
#define TRAP_SIGSTACK_SPARE 0x1000
#define TRAP_MAGIC 0x7061727470656b6bULL /* "kkeptrap" */

/* The box's futex word. */
/* What a stub is asked to be at its start (trap_box.spare). */
enum trap_spare {
	TRAP_SPARE_NONE = 0, /* a stub: its memory is at TRAP_FD_MEM */
	TRAP_SPARE = 1, /* a spare: set up, it waits for `go` */
	TRAP_SPARE_MAKER = 2, /* the tree's maker: forks spares on request */
};

enum trap_state {
	TRAP_S_GUEST = 1, /* the guest runs (or the stub boots) */
	TRAP_S_EVENT, /* the stub posted an event and waits */
	TRAP_S_REPLY /* the vm process posted a reply */
};

/* What the stub reports. */
enum trap_event {
	TRAP_EV_BOOT = 1, /* mapped and filtered: give me the first registers */
	TRAP_EV_SYSCALL, /* a system call: regs.rax is its number */
	TRAP_EV_FAULT, /* a fault: signo, code, trapno, err, addr */
	TRAP_EV_KICK, /* the vm process's kick (SIGUSR1) arrived */
	TRAP_EV_OPS /* the ops of the last reply are done (result: errno) */
};

/* What the vm process answers. */
enum trap_reply {
	TRAP_R_RESUME = 1, /* load regs and go on */
	TRAP_R_OPS, /* carry out ops[0..nops) with op_cookie, then report */
	/* TRAP_R_OPS, then TRAP_R_RESUME where they all worked (and
	 * TRAP_EV_OPS with the failure where one did not): the round
	 * trip between them saved */
	TRAP_R_OPS_RESUME
};

/* What an op does to [addr, addr + len) of guest memory. */
enum trap_op_kind {
	TRAP_OP_PROTECT =
	    0, /* mprotect: prot is PROT_NONE or the guest's all */
	TRAP_OP_MAP, /* map the channel's next descriptor at off, shared:
			read and write (prot all), or read-only (prot
			PROT_READ | PROT_EXEC: an image file's pages) */
	TRAP_OP_RESTORE, /* guest memory back in place of such a mapping */
	TRAP_OP_MAP_AGAIN /* as TRAP_OP_MAP, with the descriptor this batch's
			     last TRAP_OP_MAP received (the stub holds it
			     until the batch ends): an image's read-only
			     ranges, dozens at a clone's or a fork's start,
			     then cross the channel once */
};

struct trap_op {
	uint64_t addr, len, off;
	uint32_t prot, kind;
};

/* The general registers in struct kvm_regs's order. */
struct trap_regs {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rsp, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t rip, rflags;
};

struct trap_box {
	/* Written by the vm process before the stub starts. */
	uint64_t magic;
	uint64_t memsz; /* guest memory: [TRAP_MEM_LO, memsz) */
	uint64_t filter_cookie[2]; /* the stub's filter takes it, then 0s it */
	/* The handshake. */
	uint32_t state; /* enum trap_state: the futex word */
	uint32_t host_sleeps; /* the vm process waits in FUTEX_WAIT */
	uint32_t stub_sleeps; /* the stub waits in FUTEX_WAIT */
	uint32_t event; /* enum trap_event */
	uint32_t reply; /* enum trap_reply */
	uint32_t nops;
	uint64_t op_cookie[2]; /* with TRAP_R_OPS only; the stub 0s it */
	int32_t result; /* TRAP_EV_OPS: 0 or the first failure's errno */
	/* TRAP_EV_FAULT. */
	int32_t signo, code;
	/* The vm process's word that the stub should sleep at once
	 * rather than spin for its reply: set with a reply while the
	 * guest tree has more than one process (two spinning pairs want
	 * more cores than a small box has, and a spinner takes the core
	 * its server waits for), and while the vm process blocks in a
	 * host call for the event (a fork's copy, a wait4). It only ever
	 * makes the stub sleep sooner. */
	uint32_t host_blocks;
	uint64_t trapno, err, addr;
	/* Both ways. */
	struct trap_regs regs;
	uint64_t fs_base, gs_base;
	/* The signal frame's whole FPU area, which the kernel wrote into
	 * the signal stack below: where it starts in the box, and its
	 * bytes. The vm process reads it there only when it needs it, and
	 * writes it there when it changes it; the stub copies nothing. */
	uint32_t fpu_len;
	uint32_t fpu_off;
	/* Where each side last posted from, its CPU plus 1 (0: unknown),
	 * and whether the stub can tell its own (RDTSCP; the vm process
	 * sets it before the start). A spinner whose peer was last on its
	 * own CPU yields rather than spins (trap_spin_adapt's comment). A
	 * hint only, worth nothing else, as anything the stub writes. */
	uint32_t stub_cpu;
	uint32_t vm_cpu;
	uint32_t cpu_hint;
	uint32_t pad0;
	/* TSC ticks each side worked between the other's post and its
	 * own (the stub: the guest's run and its handler), so that a
	 * yielder can tell the peer's time from another task's. */
	uint64_t stub_work;
	uint64_t vm_work;
	/* A spare (docs/vmm.md, "Spare stubs"): started ahead, before
	 * there is a guest for it, it waits on `go` after its set-up, then
	 * takes guest memory's descriptor from the channel and reads memsz.
	 * Written by the vm process only; the stub reads both before the
	 * guest ever runs. */
	uint32_t spare; /* enum trap_spare */
	uint32_t go;
	uint8_t pad1[4096 - 320];
	struct trap_op ops[TRAP_OPS_MAX]; /* at 4096 */
	/* The stub's handlers run here (sigaltstack): the kernel's signal
	 * frame, the guest's registers and FPU area in it, is in the box. */
	_Alignas(64) uint8_t sigstack[TRAP_SIGSTACK_SIZE]; /* at 8192 */
};

_Static_assert(__builtin_offsetof(struct trap_box, ops) == 4096,
    "ops start the second page");
_Static_assert(
    __builtin_offsetof(struct trap_box, sigstack) == TRAP_SIGSTACK_OFF,
    "the signal stack starts the third page");
_Static_assert(TRAP_SIGSTACK_SIZE >= TRAP_FPU_MAX + TRAP_SIGSTACK_SPARE + 0x800,
    "the largest FPU area, its frame and the handler's calls fit");
_Static_assert(sizeof(struct trap_box) <= TRAP_BOX_SIZE, "the box fits");

/* The guest memory the stub maps: the program's (from GUEST_LOW_END),
 * and the vDSO's two ranges below it, read-only. */
#define TRAP_MEM_LO 0x200000ULL

/* clone(2) flags of the stub's process (no exit signal: only its pidfd
 * reaps it; CLONE_VM | CLONE_VFORK until its execve): in new user, pid,
 * mount, network, IPC, UTS and cgroup namespaces; or the same but the
 * network's, where the vm process's own is the run's (docs/vmm.md, "The
 * trap platform"); or, where no user namespace can be made, in none. The
 * seccomp filters of the vm process allow exactly these three, and the
 * three below. */
#define TRAP_CLONE_NS 0x7e025100UL
#define TRAP_CLONE_NS_RUN_NET 0x3e025100UL /* TRAP_CLONE_NS less NEWNET */
#define TRAP_CLONE_PLAIN 0x00005100UL /* CLONE_PIDFD | CLONE_VM | VFORK */
/* A later stub of the same guest tree (docs/vmm.md, "The trap
 * platform"): a go-between (CLONE_VM | CLONE_FILES | CLONE_VFORK, no
 * exit signal) joins the tree's user, network, IPC, UTS, cgroup (and
 * mount) namespaces and starts the stub as the vm process's child
 * (CLONE_PARENT) in a pid namespace of its own (CLONE_NEWPID), with a
 * mount namespace of its own where the tree's is not shared. */
#define TRAP_CLONE_JOIN 0x00004500UL
#define TRAP_CLONE_JOINED 0x2002d100UL
#define TRAP_CLONE_JOINED_ROOT 0x2000d100UL /* the tree's mount ns */
/* The pidfd ioctls that open a process's namespaces (<linux/pidfd.h>,
 * Linux 6.11: _IO(0xFF, n)), which Debian 12's headers lack. */
#ifndef PIDFD_GET_CGROUP_NAMESPACE
#define PIDFD_GET_CGROUP_NAMESPACE 0xff01UL
#define PIDFD_GET_IPC_NAMESPACE 0xff02UL
#define PIDFD_GET_MNT_NAMESPACE 0xff03UL
#define PIDFD_GET_NET_NAMESPACE 0xff04UL
#define PIDFD_GET_USER_NAMESPACE 0xff09UL
#define PIDFD_GET_UTS_NAMESPACE 0xff0aUL
#endif

/* The stub's kick: the vm process wants the registers now. */
#define TRAP_SIG_KICK 10 /* SIGUSR1 */

/*
 * The next spin's length after `spin`, in TSC ticks between min and max,
 * on both sides (guest/trap_stub.c, host/vmm/trap.c). A spin is worth its
 * core only while the other side runs on another: one that ended
 * unanswered, or whose answer came only after the spinner was off its
 * core (it took longer than it was allowed: preempted), shrinks the next
 * by a quarter; one answered in time doubles it. With more busy guests
 * than cores the spins shrink and both sides sleep at once, as a futex
 * ping-pong does; alone, a guest's calls keep them long. Each side's
 * probe (every SPIN_PROBE-th wait spins the longest) finds again that
 * answers come within the longest spin once the cores are free.
 *
 * A spinner whose peer last posted from its own CPU yields at each turn
 * of its spin rather than pause: the peer cannot answer until the
 * spinner leaves the CPU. Both stay runnable, so the scheduler sees two
 * tasks on one CPU and an idle CPU takes one of them; had the spinner
 * slept instead, the pair would look like one task and stay together
 * (on a two-CPU box, the wake-up of one by the other put both on one
 * CPU in about one run in ten, and that run made every call a sleep
 * and a wake-up: 1,000 context switches in a python start that takes
 * 45 apart). On a busy CPU a yield may run another task for its whole
 * slice, milliseconds: a yield that took TRAP_YIELD_SLOW longer than
 * the work the peer says it did meanwhile (trap_yield_crowded) makes
 * that side pause, as before, for its next TRAP_YIELD_BACKOFF waits.
 */
#define TRAP_YIELD_SLOW 260000 /* TSC ticks, about 100 us at 2.6 GHz */
#define TRAP_YIELD_BACKOFF 1024

/* Whether a yield of `took` ticks ran some task other than the peer.
 * peer_work is the peer's word, counted only where its answer came
 * (hostile or stale, it can only change its own side's yields). */
static inline int
trap_yield_crowded(uint64_t took, int answered, uint64_t peer_work)
{
	if (answered)
		took = peer_work < took ? took - peer_work : 0;
	return took > TRAP_YIELD_SLOW;
}
static inline uint64_t
trap_spin_adapt(uint64_t spin, int in_time, uint64_t min, uint64_t max)
{
	if (in_time)
		return spin * 2 > max ? max : spin * 2;
	spin -= spin / 4;
	return spin < min ? min : spin;
}

#endif

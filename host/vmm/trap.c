/*
 * The trap platform, the vm process's side (docs/vmm.md, "The trap
 * platform"): where there is no KVM, each guest process runs in a host
 * process of its own, started from the stub (guest/trap_stub.c) in new
 * namespaces, whose seccomp filter turns every system call into an event
 * in the box. This file starts that process, relays events into the
 * same system-call table, faults and kicks as the KVM loop does, and
 * mirrors what the guest may touch (mem_space.c) into the guest's
 * mappings.
 *
 * Guest memory is a memfd mapped shared in both processes at the same
 * offsets, so vm->mem and vm_gptr work as under KVM. A fork copies what
 * the guest holds into a new memfd (vm_trap_fork_copy), since a shared
 * mapping is not copied on write as KVM's private one is.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/vmm/abi.h"
#include "host/vmm/trap_abi.h"
#include "host/vmm/vm_int.h"

#ifndef CLONE_PIDFD
#define CLONE_PIDFD 0x00001000
#endif
#ifndef P_PIDFD
#define P_PIDFD 3
#endif
#ifndef MFD_EXEC
#define MFD_EXEC 0x10U
#endif

/* The stub's bytes (mk/trap.mk). */
extern const unsigned char trap_stub[];
extern const size_t trap_stub_len;

_Static_assert(TRAP_CLONE_NS ==
        (CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWNET |
            CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWCGROUP | CLONE_PIDFD |
            CLONE_VM | CLONE_VFORK),
    "the namespaces the filters allow");
_Static_assert(TRAP_CLONE_NS_RUN_NET == (TRAP_CLONE_NS & ~CLONE_NEWNET),
    "the same, in the run's network namespace");
_Static_assert(TRAP_CLONE_PLAIN == (CLONE_PIDFD | CLONE_VM | CLONE_VFORK),
    "a pidfd, no namespace");
_Static_assert(TRAP_CLONE_JOIN == (CLONE_VM | CLONE_FILES | CLONE_VFORK),
    "the go-between: no namespace, no exit signal");
_Static_assert(TRAP_CLONE_JOINED ==
        (CLONE_PARENT | CLONE_NEWPID | CLONE_NEWNS | CLONE_PIDFD | CLONE_VM |
            CLONE_VFORK),
    "a later stub: its own pid and mount namespaces");
_Static_assert(TRAP_CLONE_JOINED_ROOT ==
        (CLONE_PARENT | CLONE_NEWPID | CLONE_PIDFD | CLONE_VM | CLONE_VFORK),
    "a later stub: its own pid namespace, the tree's empty root");

/* The namespaces a guest tree's stubs share, in the order a stub joins
 * them (the user namespace first: it gives the rights to join the
 * rest), with the pidfd ioctls that open them (<linux/pidfd.h>, Linux
 * 6.11; before it, no sharing). */
enum {
	TREE_NS_USER,
	TREE_NS_NET,
	TREE_NS_IPC,
	TREE_NS_UTS,
	TREE_NS_CGROUP,
	TREE_NS_MNT,
	TREE_NS_N
};
_Static_assert(PIDFD_GET_USER_NAMESPACE == _IO(0xFF, 9) &&
        PIDFD_GET_MNT_NAMESPACE == _IO(0xFF, 3),
    "<linux/pidfd.h>'s numbering");
static const struct {
	int type;
	unsigned long get;
} tree_ns[TREE_NS_N] = {
	{ CLONE_NEWUSER, PIDFD_GET_USER_NAMESPACE },
	{ CLONE_NEWNET, PIDFD_GET_NET_NAMESPACE },
	{ CLONE_NEWIPC, PIDFD_GET_IPC_NAMESPACE },
	{ CLONE_NEWUTS, PIDFD_GET_UTS_NAMESPACE },
	{ CLONE_NEWCGROUP, PIDFD_GET_CGROUP_NAMESPACE },
	{ CLONE_NEWNS, PIDFD_GET_MNT_NAMESPACE },
};
/* In tree_ns: a namespace the later stubs inherit from their vm process
 * rather than join (the run's network, TRAP_CLONE_NS_RUN_NET). */
#define TREE_NS_INHERITED (-2)
/* How long the vm process spins for the stub's next event before it
 * sleeps, in TSC ticks (about 0.4 to 54 us at 2.6 GHz), adapted at each
 * wait as the stub does its own (trap_spin_adapt, host/vmm/trap_abi.h); every SPIN_PROBE-th wait
 * spins the longest. */
#define SPIN_MIN 1000
#define SPIN_MAX 140000
#define SPIN_PROBE 64
#define POLL_NS 20000000 /* a sleeping vm process looks at the stub */
#define BOOT_WAIT_US 5000000 /* a stub that has not booted by then */
#define XSTATE_BV_OFF 512 /* the XSAVE header's first word */

/*
 * A stub's process as started: its box, its pid and pidfd, our ends of
 * its channel and life socket, its filter's cookie, and its parent, the
 * only process that can reap it (0: the tree's spare maker, not a vm
 * process). A spare is one started ahead, waiting for guest memory
 * (docs/vmm.md, "Spare stubs"); a spare the maker forked has pid 0 and
 * no pidfd until its hello is read (spare_hello).
 */
struct trap_stub {
	struct trap_box *box; /* NULL: none */
	pid_t pid, parent;
	int pidfd, chan, life;
	uint64_t cookie[2];
};
#define GIVEN_MAX 16
/* Spares a process keeps: one for its next fork's child, and one for
 * that child's execve where its last child reaped had made one. */
#define SPARES_MAX 2

struct vm_trap {
	struct trap_box *box;
	pid_t pid;
	int pidfd;
	int life; /* our end of the stub's TRAP_FD_LIFE */
	/* The stub is not this process's child (a spare its parent
	 * started): its pidfd tells that it has ended, not how, and its
	 * parent (or init) reaps it. */
	int foreign;
	/* The spares, for the next fork's child (and its execve) or the
	 * next execve here; how many to keep (vm_trap_spare_hint). */
	struct trap_stub spare[SPARES_MAX];
	unsigned nspares, want_spares;
	/* The pidfds of spares handed to forked children, ours to reap. */
	int given[GIVEN_MAX];
	unsigned ngiven;
	/* The tree's spare maker, the run's first vm process's (its box
	 * NULL: none), and whether it failed (its spares are then started
	 * here, as before it). */
	struct trap_stub spare_maker;
	int spare_maker_failed;
	int retired; /* the pidfd of the stub an execve replaced, or -1 */
	uint64_t cookie[2];
	int chan; /* our end of the stub's TRAP_FD_CHAN */
	/* Ops on guest memory not yet sent to the stub, and beside each
	 * TRAP_OP_MAP its descriptor: ours to close (>= 0), or the image's,
	 * borrowed (BORROWED(fd)); -1 for the rest. */
	struct trap_op *ops;
	int *op_fds;
	size_t nops, cap;
	/* Where the current event's frame keeps the guest's FPU area in
	 * the box (its length 0: nowhere), as checked when the event came. */
	uint32_t frame_off, frame_len;
	/* The guest's FPU area, copied out of the frame only when asked
	 * for (fpu_here: fpu holds the current event's), and written back
	 * into the frame before the reply when changed (fpu_dirty). */
	_Alignas(64) uint8_t fpu[TRAP_FPU_MAX];
	uint32_t fpu_len;
	int fpu_here, fpu_dirty;
	int ns; /* started in namespaces of its own */
	/* The guest tree's namespaces, which its later stubs join (-1:
	 * none yet; the mount namespace's only where its root is a tmpfs
	 * of its own); carried across a guest fork, never to a template's
	 * clone (vm_trap_fork_child). */
	int tree_ns[TREE_NS_N];
	uint64_t spin; /* the next wait's spin, in TSC ticks */
	uint32_t waits; /* counts them, for the probes */
	uint32_t yield_off; /* waits left that pause, not yield */
	uint64_t evented; /* the TSC as the last event was seen */
	/* The CPU time of the stubs an execve replaced, user and all, ns
	 * (cputime.c): the process's own, as Linux keeps it across exec. */
	uint64_t banked[2];
};

/* The stub as a sealed memfd, made once per process (and inherited). */
static int stub_fd = -1;

int
vm_trap_prepare(void)
{
	int fd;

	if (stub_fd >= 0)
		return 0;
	fd = memfd_create(
	    "keep-trap-stub", MFD_CLOEXEC | MFD_ALLOW_SEALING | MFD_EXEC);
	if (fd == -1 && errno == EINVAL)
		fd = memfd_create(
		    "keep-trap-stub", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd == -1)
		return -1;
	if (write(fd, trap_stub, trap_stub_len) != (ssize_t)trap_stub_len ||
	    fcntl(fd, F_ADD_SEALS,
	        F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) ==
	        -1) {
		close(fd);
		return -1;
	}
	stub_fd = fd;
	return 0;
}

int
vmm_trap_stub_fd(void)
{
	return stub_fd;
}

int
vmm_prepare_trap(void)
{
	return vm_trap_prepare() == 0 && vm_cpuid_host() == 0 ? VMM_OK
	                                                      : VMM_E_NOMEM;
}

/* ---- guest memory ----------------------------------------------------- */

uint8_t *
vm_trap_mem_map(uint64_t size, int prot, int *fdp)
{
	uint8_t *p, *aligned;
	uint64_t slack;
	int fd;

	fd = memfd_create("keep-guest", MFD_CLOEXEC | MFD_EXEC);
	if (fd == -1 && errno == EINVAL)
		fd = memfd_create("keep-guest", MFD_CLOEXEC);
	if (fd == -1)
		return MAP_FAILED;
	if (ftruncate(fd, (off_t)size) == -1) {
		close(fd);
		return MAP_FAILED;
	}
	/* 2 MiB aligned, as under KVM (kvm.c's guest_mem_map). */
	p = mmap(NULL, size + VM_HUGE, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return MAP_FAILED;
	}
	aligned = (uint8_t *)(((uintptr_t)p + VM_HUGE - 1) & ~(VM_HUGE - 1));
	slack = (uint64_t)(aligned - p);
	if (slack > 0)
		munmap(p, slack);
	munmap(aligned + size, VM_HUGE - slack);
	if (mmap(aligned, size, prot, MAP_SHARED | MAP_FIXED, fd, 0) ==
	    MAP_FAILED) {
		munmap(aligned, size);
		close(fd);
		return MAP_FAILED;
	}
	*fdp = fd;
	return aligned;
}

static void stub_clear(struct trap_stub *s);

/* A new platform state, holding nothing; NULL without memory. */
static struct vm_trap *
trap_new(void)
{
	struct vm_trap *t = calloc(1, sizeof(*t));
	int i;

	if (t == NULL)
		return NULL;
	t->pidfd = t->chan = t->retired = t->life = -1;
	t->want_spares = 1;
	stub_clear(&t->spare_maker);
	for (i = 0; i < TREE_NS_N; i++)
		t->tree_ns[i] = -1;
	return t;
}

static void
tree_ns_close(struct vm_trap *t)
{
	int i;

	for (i = 0; i < TREE_NS_N; i++) {
		if (t->tree_ns[i] >= 0)
			close(t->tree_ns[i]);
		t->tree_ns[i] = -1;
	}
}

/* The platform's state, made at the first op queued before the stub
 * starts; NULL (and the guest stopped) without memory for it. */
static struct vm_trap *
trap_state(struct vm *vm)
{
	struct vm_trap *t = vm->trap;

	if (t == NULL) {
		if ((t = trap_new()) == NULL) {
			vm_stop(vm, VMM_FAULT, -1, "fault: out of host memory");
			return NULL;
		}
		vm->trap = t;
	}
	return t;
}

/* A descriptor the queue sends but does not close (the image's, open
 * as long as the vm process serves it): a fork's child maps every image
 * range again, and a descriptor each would pass the process's
 * RLIMIT_NOFILE long before the 8,192 image mappings it may hold. */
#define BORROWED(fd) (-2 - (fd))
#define IS_BORROWED(v) ((v) <= -2)

/* op at the queue's end: 0, or -1 with the run stopped. */
static int
append_op(struct vm *vm, struct vm_trap *t, struct trap_op op, int fd)
{
	struct trap_op *n;
	int *nf;

	if (t->nops == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;

		if ((n = reallocarray(t->ops, cap, sizeof(*n))) != NULL)
			t->ops = n;
		if ((nf = reallocarray(t->op_fds, cap, sizeof(*nf))) != NULL)
			t->op_fds = nf;
		if (n == NULL || nf == NULL) {
			if (fd >= 0)
				close(fd);
			vm_stop(vm, VMM_FAULT, -1, "fault: out of host memory");
			return -1;
		}
		t->cap = cap;
	}
	t->op_fds[t->nops] = fd;
	t->ops[t->nops++] = op;
	return 0;
}

/* Queue one op on [addr, addr + len), cut to what the stub maps; fd
 * (TRAP_OP_MAP's, or -1) is the queue's from here, or BORROWED(fd). */
static void
queue_op(struct vm *vm, uint64_t addr, uint64_t len, struct trap_op op, int fd)
{
	struct vm_trap *t;
	uint64_t end = addr + len;

	/* The kernel's first 2 MiB are not the guest's to touch here. */
	if (addr < TRAP_MEM_LO) {
		op.off += TRAP_MEM_LO - addr;
		addr = TRAP_MEM_LO;
	}
	if (end > vm->memsz)
		end = vm->memsz;
	if (vm->mem_fd < 0 || end <= addr || (t = trap_state(vm)) == NULL) {
		if (fd >= 0)
			close(fd);
		return;
	}
	/* The same image file mapped over or beside the last op's range at
	 * the same offsets (ld.so maps a library whole, then its segments
	 * over it; a fork or a clone maps each again): one mapping of the
	 * union leaves the same pages, and a clone of the python image's
	 * template then sends about 30 maps instead of 90. */
	if (op.kind == TRAP_OP_MAP && IS_BORROWED(fd) && t->nops > 0) {
		struct trap_op *last = &t->ops[t->nops - 1];
		uint64_t last_end = last->addr + last->len;

		if (last->kind == TRAP_OP_MAP && t->op_fds[t->nops - 1] == fd &&
		    last->prot == op.prot &&
		    last->off - last->addr == op.off - addr &&
		    addr <= last_end && last->addr <= end) {
			if (addr < last->addr) {
				last->off = op.off;
				last->addr = addr;
			}
			last->len =
			    (end > last_end ? end : last_end) - last->addr;
			return;
		}
	}
	op.addr = addr;
	op.len = end - addr;
	append_op(vm, t, op, fd);
}

void
vm_trap_protect(struct vm *vm, uint64_t addr, uint64_t len, int open)
{
	queue_op(vm, addr, len,
	    (struct trap_op){
	        .prot = open ? PROT_READ | PROT_WRITE | PROT_EXEC : PROT_NONE,
	        .kind = TRAP_OP_PROTECT },
	    -1);
}

int
vm_trap_map_shared(
    struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off)
{
	int dup;

	if ((dup = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	queue_op(vm, addr, len,
	    (struct trap_op){ .off = off,
	        .prot = PROT_READ | PROT_WRITE | PROT_EXEC,
	        .kind = TRAP_OP_MAP },
	    dup);
	return 0;
}

int
vm_trap_map_readonly(
    struct vm *vm, uint64_t addr, uint64_t len, int fd, uint64_t off)
{
	if (fd < 0)
		return -1;
	queue_op(vm, addr, len,
	    (struct trap_op){ .off = off,
	        .prot = PROT_READ | PROT_EXEC,
	        .kind = TRAP_OP_MAP },
	    BORROWED(fd));
	return 0;
}

void
vm_trap_restore(struct vm *vm, uint64_t addr, uint64_t len)
{
	queue_op(vm, addr, len,
	    (struct trap_op){ .prot = PROT_READ | PROT_WRITE | PROT_EXEC,
	        .kind = TRAP_OP_RESTORE },
	    -1);
}

int
vm_trap_started(const struct vm *vm)
{
	return vm->trap != NULL && vm->trap->pid > 0;
}

pid_t
vm_trap_cpu(const struct vm *vm, uint64_t banked[2])
{
	if (vm->trap == NULL)
		return 0;
	banked[0] = vm->trap->banked[0];
	banked[1] = vm->trap->banked[1];
	return vm->trap->pid;
}

#define COPY_BY_WRITE 16384 /* smaller copies: memcpy */

void
vm_mem_copy(struct vm *vm, void *dst, const void *src, size_t len)
{
	uint8_t *d = dst;
	const uint8_t *s = src;
	ssize_t n;

	if (vm->mem_fd >= 0 && len >= COPY_BY_WRITE && d >= vm->mem &&
	    (uint64_t)(d - vm->mem) + len <= vm->memsz) {
		while (len > 0) {
			n = pwrite(vm->mem_fd, s, len, (off_t)(d - vm->mem));
			if (n <= 0)
				break; /* the rest as before */
			d += n;
			s += n;
			len -= (size_t)n;
		}
	}
	memcpy(d, s, len);
}

/* Drop the queued ops, closing their descriptors. */
static void
drop_ops(struct vm_trap *t)
{
	size_t i;

	for (i = 0; i < t->nops; i++)
		if (t->op_fds[i] >= 0)
			close(t->op_fds[i]);
	t->nops = 0;
}

void
vm_trap_forget_ops(struct vm *vm)
{
	if (vm->trap != NULL)
		drop_ops(vm->trap);
}

/* Drop the contents of guest pages: a shared mapping's pages belong to
 * the memfd, which MADV_REMOVE frees for both processes. */
int
vm_trap_drop_pages(struct vm *vm, uint64_t addr, uint64_t len)
{
	return madvise(vm->mem + addr, len, MADV_REMOVE);
}

/* ---- the stub's process ----------------------------------------------- */

static void
child_limit(int resource, rlim_t v)
{
	struct rlimit rl = { v, v };

	setrlimit(resource, &rl);
}

#define TRAP_FD_STUB_EXE (TRAP_FD_LIFE + 1) /* closed by its execveat */

struct spawn_arg {
	int mem_fd, box_fd, chan_fd, life_fd, ns;
	int spare; /* enum trap_spare: a spare (or the maker) has no mem_fd */
	int joined_root; /* in the tree's mount namespace: its root is made */
	int root_tmpfs; /* out: the root is a tmpfs of the stub's own */
};

/*
 * In the new process, which shares the vm process's memory until its
 * execve (CLONE_VM | CLONE_VFORK: no page tables copied, a millisecond
 * less here), so it writes nothing but its own stack and the one word
 * of the vm process's arguments that tells what root it made (the vm
 * process waits meanwhile), and runs with every signal blocked (the stub
 * opens them): nothing but the stub's descriptors, no core, no way back
 * to the vm process's files; then the stub.
 */
static int
stub_child(void *argp)
{
	static const char *const argv[] = { "keepd: guest", NULL };
	static const char *const spare_argv[] = { "keepd: spare", NULL };
	static const char *const maker_argv[] = { "keepd: maker", NULL };
	static const char *const envp[] = { NULL };
	struct spawn_arg *a = argp;
	int exe_fd, mem_fd = a->mem_fd, box_fd = a->box_fd;
	int chan_fd = a->chan_fd, life_fd = a->life_fd;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (a->joined_root) {
		/* The tree's mount namespace, joined: its root is the
		 * tmpfs its first stub made (setns puts this process on
		 * the namespace's root, ".." at it crosses into the mount
		 * over it). Nothing is mounted again. */
		if (chdir("/..") != 0 || chroot(".") != 0 || chdir("/") != 0)
			_exit(127);
	} else if (a->ns) {
		/* An empty root: a tmpfs over / that only the stub's
		 * process (and the later stubs of its guest tree, which
		 * join its mount namespace) sees (".." at the root crosses
		 * into it), or, in keepd, its empty directory. */
		if (mount("none", "/", "tmpfs", MS_NOSUID | MS_NODEV,
		        "size=4k,mode=0500") == 0 &&
		    chdir("/..") == 0 && chroot(".") == 0 && chdir("/") == 0)
			a->root_tmpfs = 1;
		/* Landlock refuses a mount to a confined vm process: keepd's
		 * state directory, its root, has an empty directory. */
		else if (chdir("/empty") == 0 && chroot(".") == 0 &&
		    chdir("/") == 0)
			a->root_tmpfs = 0;
	}
	/* Out of the way first: any of them may sit on 3 to 7. */
	if ((mem_fd >= 0 && (mem_fd = fcntl(mem_fd, F_DUPFD, 16)) == -1) ||
	    (box_fd = fcntl(box_fd, F_DUPFD, 16)) == -1 ||
	    (chan_fd = fcntl(chan_fd, F_DUPFD, 16)) == -1 ||
	    (life_fd = fcntl(life_fd, F_DUPFD, 16)) == -1 ||
	    (exe_fd = fcntl(stub_fd, F_DUPFD, 16)) == -1 ||
	    (mem_fd >= 0 && dup2(mem_fd, TRAP_FD_MEM) == -1) ||
	    dup2(box_fd, TRAP_FD_BOX) == -1 ||
	    dup2(chan_fd, TRAP_FD_CHAN) == -1 ||
	    dup2(life_fd, TRAP_FD_LIFE) == -1 ||
	    dup2(exe_fd, TRAP_FD_STUB_EXE) == -1)
		_exit(127);
	/* Nothing else, not even 0, 1 and 2: the guest's standard
	 * streams are the vm process's to serve. */
	syscall(SYS_close_range, 0, TRAP_FD_MEM - 1, 0);
	if (mem_fd < 0)
		close(TRAP_FD_MEM);
	syscall(SYS_close_range, TRAP_FD_STUB_EXE + 1, ~0U, 0);
	/* A group of its own: a signal sent from outside to the vm
	 * process's group (a terminal's ^C, the API's kill) is the vm
	 * process's to relay, and never reaches it. */
	setpgid(0, 0);
	fcntl(TRAP_FD_STUB_EXE, F_SETFD, FD_CLOEXEC);
	child_limit(RLIMIT_CORE, 0);
	child_limit(RLIMIT_FSIZE, 0);
	child_limit(RLIMIT_NOFILE, 8);
	child_limit(RLIMIT_MEMLOCK, 0);
	child_limit(RLIMIT_MSGQUEUE, 0);
	/* (The maker keeps the vm process's: it forks the spares, which
	 * then take 1 themselves.) */
	if (a->spare != TRAP_SPARE_MAKER)
		child_limit(RLIMIT_NPROC, 1);
	syscall(SYS_execveat, TRAP_FD_STUB_EXE, "",
	    a->spare == TRAP_SPARE_MAKER      ? maker_argv
	        : a->spare != TRAP_SPARE_NONE ? spare_argv
	                                      : argv,
	    envp, AT_EMPTY_PATH);
	_exit(127);
}

#define SPAWN_STACK 65536

/* The go-between of a later stub (TRAP_CLONE_JOIN), which shares the
 * vm process's memory and descriptor table: the tree's namespaces
 * joined, the stub started beside it as the vm process's child, whose
 * pidfd lands in the shared table. It writes only its answer. */
struct join_arg {
	struct spawn_arg *a;
	const int *ns;
	int nns;
	unsigned long flags;
	uint8_t *stack;
	pid_t pid;
	int pidfd, err;
};

static int
join_child(void *argp)
{
	struct join_arg *j = argp;
	int i;

	for (i = 0; i < j->nns; i++)
		if (j->ns[i] != TREE_NS_INHERITED &&
		    setns(j->ns[i], tree_ns[i].type) == -1) {
			j->err = errno;
			_exit(127);
		}
	/* The low byte of flags is the exit signal: none (the pidfd). */
	j->pid = clone(stub_child, j->stack + SPAWN_STACK, (int)j->flags, j->a,
	    &j->pidfd, NULL, NULL);
	if (j->pid == -1)
		j->err = errno;
	_exit(0);
}

/* The stub's process: its pid (pidfd in *pidfd), or -1 with errno. With
 * ns (the tree's namespaces, nns of them), through a go-between that
 * joins them. */
static pid_t
spawn_one(unsigned long flags, struct spawn_arg *a, const int *ns, int nns,
    int *pidfd)
{
	struct join_arg j = { a, ns, nns, flags, NULL, -1, -1, 0 };
	sigset_t all, old;
	uint8_t *stack;
	siginfo_t si;
	pid_t pid;
	int saved;

	if ((stack = malloc(ns != NULL ? 2 * SPAWN_STACK : SPAWN_STACK)) ==
	    NULL)
		return -1;
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	if (ns == NULL) {
		/* The low byte of flags is the exit signal: none (the
		 * pidfd). */
		pid = clone(stub_child, stack + SPAWN_STACK, (int)flags,
		    (void *)a, pidfd, NULL, NULL);
		saved = errno;
	} else {
		j.stack = stack + SPAWN_STACK;
		pid =
		    clone(join_child, stack + SPAWN_STACK, TRAP_CLONE_JOIN, &j);
		if (pid != -1) {
			/* Back once the stub has its program (or it failed):
			 * reap the go-between. */
			while (waitid(P_PID, (id_t)pid, &si,
			           WEXITED | __WALL) == -1 &&
			    errno == EINTR)
				;
			pid = j.pid;
			*pidfd = j.pidfd;
			saved = j.err != 0 ? j.err : EPERM;
		} else
			saved = errno;
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	free(stack);
	errno = saved;
	return pid;
}

/*
 * The namespaces of the tree's first stub (pidfd), for its later ones
 * to join: a new network namespace is the dearest part of a stub's start
 * (docs/vmm.md, "The trap platform"). The mount namespace only where
 * the stub's root is a tmpfs of its own (keepd's empty directory is a
 * chroot, which a process joining the namespace would not be in).
 * Nothing is kept unless all are.
 */
static void
tree_ns_take(struct vm_trap *t, int pidfd, int with_mnt, int run_net)
{
	int i, n = with_mnt ? TREE_NS_N : TREE_NS_MNT;

	for (i = 0; i < n; i++) {
		/* The run's network is the later stubs' vm processes' own
		 * (a guest fork's vm process stays in it): joining it
		 * again would ask rights in a user namespace the stub's
		 * is not over (keep run as root: the host's). */
		if (i == TREE_NS_NET && run_net) {
			t->tree_ns[i] = TREE_NS_INHERITED;
			continue;
		}
		/* Not /proc/PID/ns before Linux 6.11: keepd's vm process
		 * has no /proc, and its filter no open. */
		t->tree_ns[i] = ioctl(pidfd, tree_ns[i].get, 0);
		if (t->tree_ns[i] == -1) {
			tree_ns_close(t);
			return;
		}
	}
}

static int
tree_ns_count(const struct vm_trap *t)
{
	int n = 0;

	while (n < TREE_NS_N &&
	    (t->tree_ns[n] >= 0 || t->tree_ns[n] == TREE_NS_INHERITED))
		n++;
	return n;
}

/* The stub's process over box_fd and mem_fd (-1: a spare, which
 * receives it later) into *s: 0, or -1 with err. */
static int
spawn(struct vm *vm, struct vm_trap *t, int box_fd, int mem_fd,
    struct trap_stub *s, char *err, size_t errlen)
{
	struct spawn_arg a = { mem_fd, box_fd, -1, -1, 1, (int)s->box->spare, 0,
		0 };
	pid_t pid = -1;
	int pidfd = -1, sv[2], lv[2], nns, run_net = vm->cfg->net == 1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "the trap channel: %s", strerror(errno));
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lv) == -1) {
		snprintf(err, errlen, "the trap channel: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	a.chan_fd = sv[1];
	a.life_fd = lv[1];
	t->ns = 1;
	if ((nns = tree_ns_count(t)) >= TREE_NS_MNT) {
		/* A later stub of the tree: its namespaces joined, a pid
		 * namespace (and a mount namespace where the tree's is not
		 * shared) of its own. Should that fail, a stub in
		 * namespaces of its own, as the first was, which the next
		 * ones then join. */
		a.joined_root = nns == TREE_NS_N;
		pid = spawn_one(
		    a.joined_root ? TRAP_CLONE_JOINED_ROOT : TRAP_CLONE_JOINED,
		    &a, t->tree_ns, nns, &pidfd);
		if (pid == -1)
			tree_ns_close(t);
		a.joined_root = 0;
	}
	if (pid == -1) {
		/*
		 * A network namespace is the dearest of a stub's (about
		 * 0.5 ms to make, more to tear down). Where the vm process
		 * is in the run's own (cfg->net: loopback and the guest's
		 * sockets, nothing of the host's), the stub stays in it:
		 * its filter lets it make no socket, and what it could
		 * reach there is its own sandbox's (docs/threat-model.md).
		 */
		pid = spawn_one(run_net ? TRAP_CLONE_NS_RUN_NET : TRAP_CLONE_NS,
		    &a, NULL, 0, &pidfd);
		if (pid != -1 && tree_ns_count(t) == 0)
			tree_ns_take(t, pidfd, a.root_tmpfs, run_net);
	}
	if (pid == -1 &&
	    (errno == EPERM || errno == EINVAL || errno == ENOSPC ||
	        errno == EUSERS)) {
		/* No user namespace to be had here (a sysctl, an old
		 * kernel): the filter alone confines the stub (docs/vmm.md). */
		a.ns = t->ns = 0;
		pid = spawn_one(TRAP_CLONE_PLAIN, &a, NULL, 0, &pidfd);
	}
	close(sv[1]);
	close(lv[1]);
	if (pid == -1) {
		snprintf(err, errlen, "starting the guest's process: %s",
		    strerror(errno));
		close(sv[0]);
		close(lv[0]);
		return -1;
	}
	s->pid = pid;
	s->pidfd = pidfd;
	s->chan = sv[0];
	s->life = lv[0];
	s->parent = getpid();
	return 0;
}

/* Whether the stub has ended; its status as a wait status when it has. */
static int
stub_ended(struct vm_trap *t, int *status)
{
	siginfo_t si;
	struct pollfd p = { t->pidfd, POLLIN, 0 };

	if (t->foreign && t->pidfd >= 0) {
		/* Not ours to wait for: its pidfd reads once it has ended,
		 * how is its parent's to know. */
		if (poll(&p, 1, 0) != 1)
			return 0;
		*status = SIGKILL;
		return 1;
	}
	memset(&si, 0, sizeof(si));
	if (t->pidfd < 0 ||
	    waitid(P_PIDFD, (id_t)t->pidfd, &si, WEXITED | WNOHANG | __WALL) ==
	        -1)
		return t->pidfd < 0 || errno == ECHILD;
	if (si.si_pid == 0)
		return 0;
	*status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
	                                   : si.si_status & 0x7f;
	return 1;
}

static void
stub_kill(struct vm_trap *t)
{
	uint64_t user, total;
	siginfo_t si;

	if (t->pid > 0) {
		vm_cpu_clock(t->pid, &user, &total);
		t->banked[0] += user;
		t->banked[1] += total;
		kill(t->pid, SIGKILL);
		if (t->pidfd >= 0 && !t->foreign)
			waitid(P_PIDFD, (id_t)t->pidfd, &si, WEXITED | __WALL);
	}
	t->pid = 0;
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

/*
 * An execve's old stub: killed, not waited for. Its one thread waits in
 * the stub's code for the reply to that execve (the vm process runs a
 * guest's threads one at a time), so SIGKILL leaves it nothing to run;
 * what is slow is its teardown, the old program's memory freed (a
 * shell's copy, for each command it runs), which the new stub's start
 * overlaps. Reaped by retired_reap.
 */
static void
stub_retire(struct vm_trap *t)
{
	uint64_t user, total;

	if (t->pid <= 0 || t->pidfd < 0 || t->foreign) {
		stub_kill(t);
		return;
	}
	vm_cpu_clock(t->pid, &user, &total);
	t->banked[0] += user;
	t->banked[1] += total;
	kill(t->pid, SIGKILL);
	t->retired = t->pidfd;
	t->pid = 0;
	t->pidfd = -1;
}

/* The retired stub reaped: now (block), or only if it has gone. */
static void
retired_reap(struct vm_trap *t, int block)
{
	siginfo_t si;

	if (t->retired < 0)
		return;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PIDFD, (id_t)t->retired, &si,
	        WEXITED | __WALL | (block ? 0 : WNOHANG)) == 0 &&
	    si.si_pid == 0)
		return;
	close(t->retired);
	t->retired = -1;
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

enum { WAIT_EVENT, WAIT_DEAD, WAIT_TIMEOUT, WAIT_STOPPED };

/* Whether RDTSCP tells the stub its CPU: the host CPU has it (CPUID
 * 0x80000001 EDX bit 27), and Linux keeps the CPU in TSC_AUX. */
static int
rdtscp_tells_cpu(void)
{
	unsigned int a, b, c, d;

	return __get_cpuid(0x80000001U, &a, &b, &c, &d) && (d >> 27 & 1);
}

/* The CPU this process runs on, plus 1 (0: unknown), posted for the
 * stub beside each reply (trap_abi.h, the yield). */
static uint32_t
own_cpu(struct trap_box *b)
{
	int c = sched_getcpu();
	uint32_t v = c >= 0 && c < 4095 ? (uint32_t)c + 1 : 0;

	store32(&b->vm_cpu, v);
	return v;
}

/* Spin for the stub's event as long as t->spin says, or the longest
 * (a probe's, or after a reply that had to wake the stub: its wake-up
 * comes first, an IPI to an idle vCPU here, 15 to 40 us, which a short
 * spin misses, and what it takes says nothing of the next); 1 if it
 * came. */
static int
spin_for_event(struct vm_trap *t, int longest)
{
	uint64_t was = t->spin, spin, t0 = __builtin_ia32_rdtsc(), took;
	uint32_t cpu = load32(&t->box->vm_cpu);
	/* The stub last posted from this CPU: it cannot post again until
	 * this process leaves it (trap_abi.h). Its word is read once a
	 * spin, not at each turn: the line it shares would bounce. */
	int together =
	    t->yield_off == 0 && cpu != 0 && cpu == load32(&t->box->stub_cpu);
	int seen, probe;

	if (was < SPIN_MIN || was > SPIN_MAX)
		was = SPIN_MAX; /* the first */
	probe = ++t->waits % SPIN_PROBE == 0 || longest;
	if (t->yield_off > 0)
		t->yield_off--;
	spin = probe ? SPIN_MAX : was;
	for (;;) {
		seen = load32(&t->box->state) == TRAP_S_EVENT;
		took = __builtin_ia32_rdtsc() - t0;
		if (seen || took > spin)
			break;
		if (together) {
			uint64_t y = __builtin_ia32_rdtsc();

			sched_yield();
			if (trap_yield_crowded(__builtin_ia32_rdtsc() - y,
			        load32(&t->box->state) == TRAP_S_EVENT,
			        t->box->stub_work))
				t->yield_off = TRAP_YIELD_BACKOFF;
			cpu = own_cpu(t->box);
			together = t->yield_off == 0 &&
			    cpu == load32(&t->box->stub_cpu);
		} else {
			__builtin_ia32_pause();
		}
	}
	t->spin = probe && !(seen && took <= spin)
	    ? was
	    : trap_spin_adapt(spin, seen && took <= spin, SPIN_MIN, SPIN_MAX);
	return seen;
}

/*
 * Post the reply (0: none, the stub's first event is awaited) and wait
 * for the next event: spin a while, then sleep
 * on the futex, looking at the stub now and then (a dead one posts
 * nothing). A kick for the guest (the run's timer, a signal from
 * another guest process) is passed on to the stub, which answers with a
 * TRAP_EV_KICK event; the run's time limit ends the wait. While the
 * stub boots (reply 0) a kick waits for the loop: a stub that has not
 * yet sent TRAP_EV_BOOT answers nothing else, and before its handlers
 * are in place SIGUSR1 would kill it.
 */
static int
post_and_wait(struct vm *vm, struct vm_trap *t, uint32_t reply,
    uint64_t deadline_us, int *status)
{
	struct trap_box *b = t->box;
	struct timespec ts = { 0, POLL_NS };
	/* Neither side spins while another process of the tree runs
	 * (docs/vmm.md, "Fork": one that waits on a child, a descriptor or
	 * a signal does not count), nor for the stub's boot, whose execve
	 * and set-up take far longer than a spin. */
	int spin = reply != 0 && vm_proc_runs_alone(vm);
	int woke = 0;
	uint32_t seen;

	if (reply != 0) {
		b->reply = reply;
		b->vm_work = __builtin_ia32_rdtsc() - t->evented;
		if (spin)
			(void)own_cpu(b);
		store32(&b->host_blocks, !spin);
		store32(&b->state, TRAP_S_REPLY);
		if ((woke = load32(&b->stub_sleeps)) != 0)
			syscall(
			    SYS_futex, &b->state, FUTEX_WAKE, 1, NULL, NULL, 0);
	}
	if (spin && spin_for_event(t, woke)) {
		t->evented = __builtin_ia32_rdtsc();
		return WAIT_EVENT;
	}
	for (;;) {
		if (reply != 0 && vm->run->immediate_exit) {
			vm->run->immediate_exit = 0;
			if (vm_timed_out())
				return WAIT_TIMEOUT;
			kill(t->pid, TRAP_SIG_KICK);
		}
		if (deadline_us != 0 && vm_now_us() >= deadline_us)
			return WAIT_TIMEOUT;
		store32(&b->host_sleeps, 1);
		seen = load32(&b->state);
		if (seen != TRAP_S_EVENT)
			syscall(SYS_futex, &b->state, FUTEX_WAIT, seen, &ts,
			    NULL, 0);
		store32(&b->host_sleeps, 0);
		if (load32(&b->state) == TRAP_S_EVENT) {
			t->evented = __builtin_ia32_rdtsc();
			return WAIT_EVENT;
		}
		if (stub_ended(t, status))
			return WAIT_DEAD;
	}
}

/* The vm process is about to block in a host call for the guest's
 * event: the stub may stop spinning. */
void
vm_trap_blocking(struct vm *vm)
{
	if (vm->on_trap && vm->trap != NULL && vm->trap->box != NULL)
		store32(&vm->trap->box->host_blocks, 1);
}

/* The vm process's registers into the box, and the FPU area into the
 * frame if it changed it there. */
static void
put_regs(struct vm *vm, struct vm_trap *t)
{
	const struct kvm_regs *r = &vm->run->s.regs.regs;
	struct trap_box *b = t->box;

	_Static_assert(sizeof(struct trap_regs) == sizeof(struct kvm_regs),
	    "the same registers in the same order");
	memcpy(&b->regs, r, sizeof(b->regs));
	b->fs_base = vm->run->s.regs.sregs.fs.base;
	b->gs_base = vm->run->s.regs.sregs.gs.base;
	if (t->fpu_dirty && t->frame_len != 0 && t->fpu_len == t->frame_len)
		memcpy((uint8_t *)b + t->frame_off, t->fpu, t->fpu_len);
	t->fpu_dirty = 0;
}

/* Where the event's frame has the FPU area, read once and checked: in
 * the signal stack, 64-byte aligned (XSAVE's), of a length the kernel
 * writes. Anything else is no FPU area (the guest's own doing). */
static void
take_frame(struct vm_trap *t)
{
	struct trap_box *b = t->box;
	uint32_t off = __atomic_load_n(&b->fpu_off, 0);
	uint32_t len = __atomic_load_n(&b->fpu_len, 0);

	if (off < TRAP_SIGSTACK_OFF || off > TRAP_BOX_SIZE || off % 64 != 0 ||
	    len < 512 || len > TRAP_FPU_MAX || len > TRAP_BOX_SIZE - off)
		off = len = 0;
	t->frame_off = off;
	t->frame_len = len;
	t->fpu_here = 0;
	t->fpu_dirty = 0;
}

/* The current event's FPU area in t->fpu, copied out of the frame the
 * first time it is asked for (a call like getppid never asks). */
static void
fetch_fpu(struct vm_trap *t)
{
	if (t->fpu_here)
		return;
	if (t->frame_len != 0)
		memcpy(t->fpu, (const uint8_t *)t->box + t->frame_off,
		    t->frame_len);
	t->fpu_len = t->frame_len;
	t->fpu_here = 1;
}

/* The event's registers, copied once out of the box; its FPU area stays
 * in the frame until asked for. */
static void
take_regs(struct vm *vm, struct vm_trap *t)
{
	struct trap_box *b = t->box;

	memcpy(&vm->run->s.regs.regs, &b->regs, sizeof(b->regs));
	vm->run->s.regs.sregs.fs.base = __atomic_load_n(&b->fs_base, 0);
	vm->run->s.regs.sregs.gs.base = __atomic_load_n(&b->gs_base, 0);
	take_frame(t);
}

/* One byte and the descriptors fds[0..n), n at most 3, on chan: 0, or
 * -1 with errno. */
static int
send_fds(int chan, const int *fds, size_t n, int flags)
{
	union {
		struct cmsghdr h;
		uint8_t buf[CMSG_SPACE(3 * sizeof(int))];
	} cm;
	uint8_t byte = 0;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cm.buf,
		.msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	ssize_t r;

	if (n == 0 || n > 3) {
		errno = EINVAL;
		return -1;
	}
	memset(&cm, 0, sizeof(cm));
	cm.h.cmsg_level = SOL_SOCKET;
	cm.h.cmsg_type = SCM_RIGHTS;
	cm.h.cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(&cm.h), fds, n * sizeof(int));
	do
		r = sendmsg(chan, &msg, MSG_NOSIGNAL | flags);
	while (r == -1 && errno == EINTR);
	return r == 1 ? 0 : -1;
}

/* A TRAP_OP_MAP's descriptor to the stub, closed here once sent unless
 * borrowed. */
static int
send_fd(int chan, int *fdp)
{
	int fd = IS_BORROWED(*fdp) ? -2 - *fdp : *fdp;
	int rc = send_fds(chan, &fd, 1, 0);

	if (!IS_BORROWED(*fdp))
		close(fd);
	*fdp = -1;
	return rc;
}

/* Send the queued ops, a box at a time, with the cookie (and the
 * descriptors of a batch's maps first, in order, on the channel); the
 * last batch with the guest's resume (its registers are in the box):
 * WAIT_EVENT is then the guest's next event. */
static int
flush_ops(struct vm *vm, struct vm_trap *t, int *status)
{
	struct trap_box *b = t->box;
	size_t done = 0, n, i;
	int rc, sent, last;

	while (done < t->nops) {
		n = t->nops - done;
		if (n > TRAP_OPS_MAX)
			n = TRAP_OPS_MAX;
		memcpy(b->ops, t->ops + done, n * sizeof(*t->ops));
		/* An image's descriptor crosses once a batch: the stub holds
		 * the last one it received until the batch ends. */
		for (i = done, sent = -1; i < done + n; i++) {
			if (t->op_fds[i] == -1)
				continue;
			if (IS_BORROWED(t->op_fds[i]) && t->op_fds[i] == sent) {
				b->ops[i - done].kind = TRAP_OP_MAP_AGAIN;
				t->op_fds[i] = -1;
				continue;
			}
			sent = IS_BORROWED(t->op_fds[i]) ? t->op_fds[i] : -1;
			if (send_fd(t->chan, &t->op_fds[i]) != 0) {
				drop_ops(t);
				*status = -1;
				return WAIT_DEAD;
			}
		}
		b->nops = (uint32_t)n;
		b->op_cookie[0] = t->cookie[0];
		b->op_cookie[1] = t->cookie[1];
		last = done + n == t->nops;
		rc = last ? post_and_wait(vm, t, TRAP_R_OPS_RESUME,
		                vm->deadline_us, status)
		          : post_and_wait(vm, t, TRAP_R_OPS,
		                vm_now_us() + 1000000, status);
		if (rc != WAIT_EVENT)
			return rc;
		/* After the last, any event but TRAP_EV_OPS is the guest's:
		 * the ops worked. */
		if ((__atomic_load_n(&b->event, 0) == TRAP_EV_OPS) == last ||
		    (!last && __atomic_load_n(&b->result, 0) != 0)) {
			drop_ops(t);
			*status = -1;
			return WAIT_DEAD;
		}
		done += n;
	}
	t->nops = 0;
	return WAIT_EVENT;
}

static const char *
wait_reason(int status, char *buf, size_t len)
{
	if (status == -1)
		snprintf(buf, len, "its stub broke the protocol");
	else if (WIFSIGNALED(status) || (status & 0x7f) != 0)
		snprintf(buf, len, "killed by signal %d", status & 0x7f);
	else
		snprintf(buf, len, "exited %d", WEXITSTATUS(status));
	return buf;
}

/* ---- starting and stopping -------------------------------------------- */

/*
 * The image's bytes, read-only at GUEST_IMAGE_GPA as KVM's read-only
 * slot gives them (fastcall.c vm_fast_image_slot): the stub's answers
 * read image files from there. Queued for each new stub, so that a
 * fork's, an execve's and a clone's have it too; none for an image past
 * GUEST_IMAGE_MAX or a program that is no image's.
 */
static void
map_image(struct vm *vm, struct vm_trap *t)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t len;

	vm->image_slot = 0;
	if (cfg->image_map == NULL || cfg->image_fd < 0 ||
	    cfg->image_map_len == 0 || cfg->image_map_len > GUEST_IMAGE_MAX ||
	    vm->memsz > GUEST_IMAGE_GPA)
		return;
	len = (cfg->image_map_len + VM_PAGE - 1) & ~(uint64_t)(VM_PAGE - 1);
	if (append_op(vm, t,
	        (struct trap_op){ .addr = GUEST_IMAGE_GPA,
	            .len = len,
	            .prot = PROT_READ | PROT_EXEC,
	            .kind = TRAP_OP_MAP },
	        BORROWED(cfg->image_fd)) == 0)
		vm->image_slot = 1;
}

/* A new box, set up for a stub (spare: one started ahead); its
 * descriptor in *fdp. NULL with errno. */
static struct trap_box *
box_make(const struct vm *vm, int spare, uint64_t cookie[2], int *fdp)
{
	struct trap_box *b;
	int fd, saved;

	if ((fd = memfd_create("keep-trap-box", MFD_CLOEXEC)) == -1)
		return NULL;
	if (ftruncate(fd, TRAP_BOX_SIZE) == -1 ||
	    (b = mmap(NULL, TRAP_BOX_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED,
	         fd, 0)) == MAP_FAILED) {
		saved = errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	randombytes_buf(cookie, 2 * sizeof(cookie[0]));
	b->magic = TRAP_MAGIC;
	b->memsz = vm->memsz;
	b->filter_cookie[0] = cookie[0];
	b->filter_cookie[1] = cookie[1];
	b->state = TRAP_S_GUEST;
	b->cpu_hint = rdtscp_tells_cpu();
	b->spare = (uint32_t)spare;
	*fdp = fd;
	return b;
}

static void
stub_clear(struct trap_stub *s)
{
	memset(s, 0, sizeof(*s));
	s->pidfd = s->chan = s->life = -1;
}

/* The stub s as this process's own. */
static void
stub_install(struct vm_trap *t, const struct trap_stub *s)
{
	t->box = s->box;
	t->pid = s->pid;
	t->pidfd = s->pidfd;
	t->chan = s->chan;
	t->life = s->life;
	t->cookie[0] = s->cookie[0];
	t->cookie[1] = s->cookie[1];
	t->foreign = s->parent != getpid();
}

/* A stub started now over this process's memory: 0, or -1 with err. */
static int
stub_start(struct vm *vm, struct vm_trap *t, char *err, size_t errlen)
{
	struct trap_stub s;
	int box_fd;

	stub_clear(&s);
	if ((s.box = box_make(vm, TRAP_SPARE_NONE, s.cookie, &box_fd)) ==
	    NULL) {
		snprintf(err, errlen, "the trap box: %s", strerror(errno));
		return -1;
	}
	if (spawn(vm, t, box_fd, vm->mem_fd, &s, err, errlen) != 0) {
		munmap(s.box, TRAP_BOX_SIZE);
		close(box_fd);
		return -1;
	}
	close(box_fd);
	stub_install(t, &s);
	return 0;
}

/* A spare's descriptors closed; with end, the spare killed (and
 * reaped, if this process started it). */
static void
stub_drop(struct trap_stub *s, int end)
{
	siginfo_t si;

	if (s->box == NULL)
		return;
	if (end && s->pid > 0) {
		kill(s->pid, SIGKILL);
		if (s->parent == getpid() && s->pidfd >= 0)
			waitid(P_PIDFD, (id_t)s->pidfd, &si, WEXITED | __WALL);
	}
	munmap(s->box, TRAP_BOX_SIZE);
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->chan >= 0)
		close(s->chan);
	if (s->life >= 0)
		close(s->life);
	stub_clear(s);
}

/*
 * The tree's spare maker (docs/vmm.md, "Spare stubs"), started by the
 * run's first vm process as a spare is: a stub in the tree's namespaces
 * that forks a spare of itself for each request on its channel
 * (guest/trap_stub.c, make_spares). A spare then costs the fork of a
 * small process, made beside this one, rather than a go-between, the
 * tree's namespaces joined and the stub's execve, made while this
 * process waits for them. 0, or -1.
 */
static int
spare_maker_start(struct vm *vm, struct vm_trap *t)
{
	struct trap_stub *m = &t->spare_maker;
	char err[128];
	int box_fd;

	stub_clear(m);
	if ((m->box = box_make(vm, TRAP_SPARE_MAKER, m->cookie, &box_fd)) ==
	    NULL)
		return -1;
	if (spawn(vm, t, box_fd, -1, m, err, sizeof(err)) != 0) {
		munmap(m->box, TRAP_BOX_SIZE);
		close(box_fd);
		stub_clear(m);
		return -1;
	}
	close(box_fd);
	return 0;
}

/*
 * A spare asked of the maker, into *s: its box made here, the far ends
 * of its channel and life socket sent with the request, ours kept. Its
 * pid comes in its hello (spare_hello). 0; -1 where this process could
 * not ask (no descriptor or memory to be had: a guest at its descriptor
 * limit) or the maker is not reading (no request waits on it); -2 where
 * the maker is gone.
 */
static int
spare_ask(struct vm *vm, struct vm_trap *t, struct trap_stub *s)
{
	int box_fd, sv[2] = { -1, -1 }, lv[2] = { -1, -1 }, fds[3], one = 1;
	int sent = 0, gone = 0;

	stub_clear(s);
	if ((s->box = box_make(vm, TRAP_SPARE, s->cookie, &box_fd)) == NULL)
		return -1;
	/* (SO_PASSCRED: the hello's credentials, the spare's pid as this
	 * process sees it) */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0 &&
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lv) == 0 &&
	    setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ==
	        0) {
		fds[0] = box_fd;
		fds[1] = sv[1];
		fds[2] = lv[1];
		sent = send_fds(t->spare_maker.chan, fds, 3, MSG_DONTWAIT) == 0;
		gone = !sent &&
		    (errno == EPIPE || errno == ECONNRESET ||
		        errno == ECONNREFUSED || errno == ENOTCONN);
	}
	/* The far ends are the maker's now (or nobody's). */
	close(box_fd);
	if (sv[1] >= 0)
		close(sv[1]);
	if (lv[1] >= 0)
		close(lv[1]);
	if (!sent) {
		if (sv[0] >= 0)
			close(sv[0]);
		if (lv[0] >= 0)
			close(lv[0]);
		munmap(s->box, TRAP_BOX_SIZE);
		stub_clear(s);
		return gone ? -2 : -1;
	}
	s->chan = sv[0];
	s->life = lv[0];
	return 0;
}

/*
 * A spare the maker forked: its pid, from the credentials the kernel
 * gave its hello (in this process's pid namespace), and a pidfd for it.
 * Its pid is free again only once it has ended (the maker reaps it at
 * once), and a free pid is handed out again only after the allocator
 * has gone round all the others (pids are given in turn), so the pidfd
 * is the spare's or, where it has ended, open fails (ESRCH). 0 (at once
 * where they are known), or -1: no hello (the maker could not fork it,
 * or it has ended).
 */
static int
spare_hello(struct trap_stub *s)
{
	union {
		struct cmsghdr h;
		uint8_t buf[CMSG_SPACE(sizeof(struct ucred))];
	} cm;
	struct ucred uc;
	uint8_t byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr msg = { .msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cm.buf,
		.msg_controllen = sizeof(cm.buf) };
	struct pollfd p = { s->chan, POLLIN, 0 };
	ssize_t n;
	int rc;

	if (s->pid > 0)
		return 0;
	do
		rc = poll(&p, 1, BOOT_WAIT_US / 1000);
	while (rc == -1 && errno == EINTR);
	if (rc != 1)
		return -1;
	memset(&cm, 0, sizeof(cm));
	do
		n = recvmsg(s->chan, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
	while (n == -1 && errno == EINTR);
	if (n != 1 || (msg.msg_flags & MSG_CTRUNC) ||
	    msg.msg_controllen < CMSG_LEN(sizeof(uc)) ||
	    cm.h.cmsg_level != SOL_SOCKET || cm.h.cmsg_type != SCM_CREDENTIALS)
		return -1;
	memcpy(&uc, CMSG_DATA(&cm.h), sizeof(uc));
	if (uc.pid <= 0 ||
	    (s->pidfd = (int)syscall(SYS_pidfd_open, uc.pid, 0)) == -1)
		return -1;
	s->pid = uc.pid;
	return 0;
}

/*
 * The spare as this process's stub (docs/vmm.md, "Spare stubs"): guest
 * memory's descriptor on its channel, then its go. 0, or -1 where there
 * is none or it could not be given its memory (it is killed; the caller
 * starts a stub as ever).
 */
static int
spare_take(struct vm *vm, struct vm_trap *t)
{
	struct trap_stub s;
	int fd = BORROWED(vm->mem_fd);

	if (t->nspares == 0)
		return -1;
	s = t->spare[--t->nspares];
	stub_clear(&t->spare[t->nspares]);
	if (spare_hello(&s) != 0 || send_fd(s.chan, &fd) != 0) {
		stub_drop(&s, 1);
		return -1;
	}
	stub_install(t, &s);
	t->box->memsz = vm->memsz;
	store32(&t->box->go, 1);
	syscall(SYS_futex, &t->box->go, FUTEX_WAKE, 1, NULL, NULL, 0);
	return 0;
}

static void
spares_drop(struct vm_trap *t, int end)
{
	while (t->nspares > 0)
		stub_drop(&t->spare[--t->nspares], end);
}

/* The pidfds of spares handed to forked children, closed: their
 * processes are left to init (or the run's end, proc.c). */
static void
given_close(struct vm_trap *t)
{
	while (t->ngiven > 0)
		close(t->given[--t->ngiven]);
}

/* The spares handed to forked children that have ended, reaped. */
static void
given_reap(struct vm_trap *t)
{
	siginfo_t si;
	unsigned i = 0;

	while (i < t->ngiven) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PIDFD, (id_t)t->given[i], &si,
		        WEXITED | WNOHANG | __WALL) == 0 &&
		    si.si_pid == 0) {
			i++;
			continue;
		}
		close(t->given[i]);
		t->given[i] = t->given[--t->ngiven];
	}
}

/*
 * Spares made ahead, where this process is about to block (a wait for a
 * child): its next fork's child takes one (and its execve the other), so
 * that neither starts a process of its own on its way (docs/vmm.md,
 * "Spare stubs"). Only by the run's first process, whose end is the
 * run's: a stub dies with the process that started it (its pdeath
 * signal, which nothing the guest does can hold off), so a spare
 * outlives no run, while the vm process it serves may end before it
 * only where the life socket ends it too. And only in a tree whose
 * namespaces they join, which is the cheap start.
 */
void
vm_trap_spare(struct vm *vm)
{
	struct vm_trap *t = vm->trap;
	struct trap_stub s;
	char err[128];
	int box_fd, rc;

	if (!vm->on_trap || vm->is_child || t == NULL || t->box == NULL ||
	    t->nspares >= t->want_spares || tree_ns_count(t) < TREE_NS_MNT)
		return;
	given_reap(t);
	if (t->spare_maker.box == NULL && !t->spare_maker_failed &&
	    spare_maker_start(vm, t) != 0)
		t->spare_maker_failed = 1;
	while (t->nspares < t->want_spares && t->nspares < SPARES_MAX) {
		if (t->spare_maker.box != NULL) {
			if ((rc = spare_ask(vm, t, &s)) == 0) {
				t->spare[t->nspares++] = s;
				continue;
			}
			/* Gone: its spares are started here from now on (and
			 * it is reaped). Not for a request that could not be
			 * made: the maker's end would end every stub it made,
			 * the running children's among them. */
			if (rc == -2) {
				stub_drop(&t->spare_maker, 1);
				t->spare_maker_failed = 1;
			}
		}
		stub_clear(&s);
		if ((s.box = box_make(vm, TRAP_SPARE, s.cookie, &box_fd)) ==
		    NULL)
			return;
		if (spawn(vm, t, box_fd, -1, &s, err, sizeof(err)) != 0) {
			munmap(s.box, TRAP_BOX_SIZE);
			close(box_fd);
			return;
		}
		close(box_fd);
		t->spare[t->nspares++] = s;
	}
}

/* A child reaped: whether it made an execve tells whether the next
 * one is likely to, and so how many spares to keep. */
void
vm_trap_spare_hint(struct vm *vm, int execed)
{
	if (vm->trap != NULL)
		vm->trap->want_spares = execed ? SPARES_MAX : 1;
}

/* After a host fork whose child (a guest fork's) took the spares: ours
 * no longer, but to reap. */
void
vm_trap_spare_given(struct vm *vm)
{
	struct vm_trap *t = vm->trap;
	struct trap_stub *s;

	while (t != NULL && t->nspares > 0) {
		s = &t->spare[--t->nspares];
		if (s->parent != getpid() || s->pidfd < 0) {
			stub_drop(s, 0); /* the maker's child */
			continue;
		}
		if (t->ngiven == GIVEN_MAX) {
			/* Left to init, or to the run's end (proc.c). */
			close(t->given[0]);
			t->given[0] = t->given[--t->ngiven];
		}
		t->given[t->ngiven++] = s->pidfd;
		s->pidfd = -1;
		s->pid = 0;
		stub_drop(s, 0);
	}
}

int
vm_trap_create(struct vm *vm, char *err, size_t errlen)
{
	struct vm_trap *t = vm->trap;
	struct trap_box *b;
	int status = 0, rc;
	char why[64];

	if (vm_trap_prepare() != 0) {
		snprintf(err, errlen, "the trap stub: %s", strerror(errno));
		return -1;
	}
	if (t == NULL) {
		if ((t = trap_new()) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
		vm->trap = t;
	}
	if (vm->run == NULL &&
	    (vm->run = calloc(1, sizeof(*vm->run))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* A process started before (execve's old program) goes first; the
	 * opens queued since are for the new one. */
	retired_reap(t, 1);
	stub_retire(t);
	if (t->box != NULL)
		munmap(t->box, TRAP_BOX_SIZE);
	t->box = NULL;
	if (t->chan >= 0)
		close(t->chan);
	if (t->life >= 0)
		close(t->life);
	t->chan = t->life = -1;
	t->frame_off = t->frame_len = t->fpu_len = 0;
	t->fpu_here = t->fpu_dirty = 0;
	/* The stack's guard: absent from KVM's page tables, closed here,
	 * so an overflow faults in it (the host's side stays open: the
	 * VMM never reads it, vm_gptr refuses it). */
	if (vm->stack_lo >= TRAP_MEM_LO + VM_HUGE)
		vm_trap_protect(vm, vm->stack_lo - VM_HUGE, VM_HUGE, 0);
	if (spare_take(vm, t) != 0 && stub_start(vm, t, err, errlen) != 0)
		return -1;
	b = t->box;
	/* The stub's first event asks for the registers: the loop's
	 * first reply gives them (vm->run's, set by the caller). */
	rc = post_and_wait(vm, t, 0, vm_now_us() + BOOT_WAIT_US, &status);
	if (rc == WAIT_EVENT && __atomic_load_n(&b->event, 0) != TRAP_EV_BOOT)
		rc = WAIT_DEAD, status = -1;
	if (rc != WAIT_EVENT) {
		snprintf(err, errlen, "the guest's process did not start (%s)",
		    rc == WAIT_DEAD ? wait_reason(status, why, sizeof(why))
		                    : "no answer");
		stub_kill(t);
		return -1;
	}
	retired_reap(t, 0);
	/* The stub's FPU area is the clean state a new process has: the
	 * guest's first, unless the caller loads another. */
	take_frame(t);
	map_image(vm, t);
	return 0;
}

void
vm_trap_drop(struct vm *vm)
{
	struct vm_trap *t = vm->trap;

	if (t == NULL)
		return;
	stub_kill(t);
	retired_reap(t, 1);
	spares_drop(t, 1);
	stub_drop(&t->spare_maker, 1);
	given_close(t);
	if (t->box != NULL)
		munmap(t->box, TRAP_BOX_SIZE);
	if (t->chan >= 0)
		close(t->chan);
	if (t->life >= 0)
		close(t->life);
	drop_ops(t);
	tree_ns_close(t);
	free(t->ops);
	free(t->op_fds);
	free(t);
	vm->trap = NULL;
}

/* A forked vm process: the stub is its parent's; this one starts its
 * own (vm_trap_create) once it has its own memory. */
void
vm_trap_forget(struct vm *vm)
{
	struct vm_trap *t = vm->trap;

	if (t == NULL)
		return;
	if (t->pidfd >= 0)
		close(t->pidfd);
	if (t->retired >= 0)
		close(t->retired); /* the parent's to reap */
	spares_drop(t, 0); /* the parent's, unless taken before */
	stub_drop(&t->spare_maker, 0); /* the run's first process's */
	given_close(t);
	if (t->box != NULL)
		munmap(t->box, TRAP_BOX_SIZE);
	if (t->chan >= 0)
		close(t->chan);
	if (t->life >= 0)
		close(t->life);
	drop_ops(t);
	tree_ns_close(t);
	free(t->ops);
	free(t->op_fds);
	free(t);
	vm->trap = NULL;
}

/* ---- the FPU ---------------------------------------------------------- */

int
vm_trap_fpu_get(struct vm *vm, struct kvm_fpu *fpu)
{
	struct vm_trap *t = vm->trap;
	uint8_t fx[512];

	memset(fx, 0, sizeof(fx));
	if (t != NULL)
		fetch_fpu(t);
	if (t != NULL && t->fpu_len >= 512)
		memcpy(fx, t->fpu, 512);
	else {
		uint16_t fcw = 0x37f;
		uint32_t mxcsr = 0x1f80;

		memcpy(fx, &fcw, 2);
		memcpy(fx + 24, &mxcsr, 4);
	}
	vm_fxsave_to_fpu(fx, fpu);
	return 0;
}

int
vm_trap_fpu_set(struct vm *vm, const struct kvm_fpu *fpu)
{
	struct vm_trap *t = vm->trap;
	uint8_t fx[512];
	uint64_t bv;

	if (t == NULL)
		return 0;
	fetch_fpu(t);
	if (t->fpu_len < 512)
		return 0; /* nothing to load it into: the stub's is clean */
	vm_fpu_to_fxsave(fpu, fx);
	/* The legacy area only: the kernel's software bytes stay. */
	memcpy(t->fpu, fx, 464);
	if (t->fpu_len >= XSTATE_BV_OFF + 8) {
		/* x87 and SSE state present, or XRSTOR loads their init. */
		memcpy(&bv, t->fpu + XSTATE_BV_OFF, 8);
		bv |= 3;
		memcpy(t->fpu + XSTATE_BV_OFF, &bv, 8);
	}
	t->fpu_dirty = 1;
	return 0;
}

/* The whole FPU area, for a fork's child (clone.c). */
size_t
vm_trap_fpu_area(struct vm *vm, uint8_t *out, size_t max)
{
	struct vm_trap *t = vm->trap;

	if (t == NULL)
		return 0;
	fetch_fpu(t);
	if (t->fpu_len > max)
		return 0;
	memcpy(out, t->fpu, t->fpu_len);
	return t->fpu_len;
}

void
vm_trap_fpu_load_area(struct vm *vm, const uint8_t *area, size_t len)
{
	struct vm_trap *t = vm->trap;

	/* Only an area of the frame's own size and layout goes back. */
	if (t == NULL || len == 0 || len != t->frame_len)
		return;
	memcpy(t->fpu, area, len);
	t->fpu_len = t->frame_len;
	t->fpu_here = 1;
	t->fpu_dirty = 1;
}

/* ---- fork ------------------------------------------------------------- */

/*
 * In the parent, while its guest waits in fork: a new memfd with a copy
 * of every page the guest may hold (and the kernel's 2 MiB, the vDSO's
 * data among them). The file is sparse, so a range copied is only what
 * the parent ever wrote there. The fd, or -1 with errno.
 */
int
vm_trap_fork_copy(struct vm *vm)
{
	int fd;
	off_t in, out, end;
	uint64_t left;
	ssize_t n;

	fd = memfd_create("keep-guest", MFD_CLOEXEC | MFD_EXEC);
	if (fd == -1 && errno == EINVAL)
		fd = memfd_create("keep-guest", MFD_CLOEXEC);
	if (fd == -1)
		return -1;
	if (ftruncate(fd, (off_t)vm->memsz) == -1)
		goto fail;
	/* Only the file's data: its holes (never written, or closed with
	 * MADV_REMOVE) stay holes in the copy. */
	for (in = 0; (uint64_t)in < vm->memsz; in = end) {
		if ((in = lseek(vm->mem_fd, in, SEEK_DATA)) == -1) {
			if (errno == ENXIO)
				break;
			goto fail;
		}
		if ((end = lseek(vm->mem_fd, in, SEEK_HOLE)) == -1)
			goto fail;
		out = in;
		for (left = (uint64_t)(end - in); left > 0;
		     left -= (uint64_t)n) {
			n = copy_file_range(vm->mem_fd, &in, fd, &out,
			    left > (1ULL << 30) ? (1ULL << 30) : left, 0);
			if (n <= 0) {
				if (n == -1 && errno == EINTR) {
					n = 0;
					continue;
				}
				goto fail;
			}
		}
	}
	return fd;
fail:
	close(fd);
	return -1;
}

/*
 * In the child: its own memory (the parent's copy in fd) over vm->mem,
 * opened as the parent's was, and a stub of its own. 0, or -1 with err.
 */
int
vm_trap_fork_adopt(struct vm *vm, int fd, char *err, size_t errlen)
{
	int rc;

	vm_trap_forget(vm);
	/* A vfork's child keeps the view its host fork gave it, which is
	 * its parent's (a third of a Python subprocess's start went into
	 * making it again). */
	if (!vm->mem_borrowed &&
	    mmap(vm->mem, vm->memsz, PROT_READ | PROT_WRITE,
	        MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
		snprintf(
		    err, errlen, "the child's memory: %s", strerror(errno));
		close(fd);
		return -1;
	}
	close(vm->mem_fd);
	vm->mem_fd = fd;
	/* Everything open in the host is open in the guest: the same
	 * walk that closes the rest host-side queues it for the stub. */
	vm->stub_view_only = vm->mem_borrowed;
	vm_trap_protect(vm, 0, vm->memsz, 1);
	rc = vm_space_reopen(vm) != 0 || vm_shmap_refork(vm) != 0 ||
	    vm_imgmap_refork(vm) != 0;
	vm->stub_view_only = 0;
	if (rc) {
		snprintf(
		    err, errlen, "the child's memory: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * In a guest fork's child (clone.c): vm_trap_fork_adopt, keeping the
 * guest tree's namespaces for the child's stub to join. A template's
 * clone adopts without them: its runs are not its holder's tree.
 */
int
vm_trap_fork_child(struct vm *vm, int fd, char *err, size_t errlen)
{
	int ns[TREE_NS_N], i, rc;
	struct vm_trap *t;
	struct trap_stub spare[SPARES_MAX];
	unsigned nspares = 0;

	for (i = 0; i < TREE_NS_N; i++) {
		ns[i] = vm->trap != NULL ? vm->trap->tree_ns[i] : -1;
		if (vm->trap != NULL)
			vm->trap->tree_ns[i] = -1;
	}
	/* The parent's spares are this child's stub and spare
	 * (vm_trap_spare_given). */
	if (vm->trap != NULL) {
		for (nspares = 0; nspares < vm->trap->nspares; nspares++)
			spare[nspares] = vm->trap->spare[nspares];
		vm->trap->nspares = 0;
	}
	rc = vm_trap_fork_adopt(vm, fd, err, errlen);
	t = rc == 0 ? trap_state(vm) : NULL;
	for (i = 0; i < TREE_NS_N; i++) {
		if (t != NULL)
			t->tree_ns[i] = ns[i];
		else if (ns[i] >= 0)
			close(ns[i]);
	}
	for (i = 0; i < (int)nspares; i++) {
		if (t != NULL)
			t->spare[t->nspares++] = spare[i];
		else
			stub_drop(&spare[i], 0);
	}
	return rc;
}

/* ---- the loop --------------------------------------------------------- */

static void
on_fault(struct vm *vm, struct trap_box *b)
{
	const struct kvm_regs *r = &vm->run->s.regs.regs;
	uint64_t trapno = __atomic_load_n(&b->trapno, 0);
	uint64_t addr = __atomic_load_n(&b->addr, 0);
	int32_t signo = __atomic_load_n(&b->signo, 0);
	unsigned vector;

	/* The x86 vector as the kernel gives it; a SIGTRAP of int3 or a
	 * single step has none of its own in every kernel. */
	vector = trapno < 32 ? (unsigned)trapno : 13;
	if (signo == 5 && trapno != 1)
		vector = 3;
	if (vm_signal_fault(vm, vector, r->rip, r->rsp, r->rflags, addr,
	        __atomic_load_n(&b->err, 0)))
		return;
	vm_fault_stop(vm, vector, r->rip, addr, __atomic_load_n(&b->err, 0));
}

/* The run's timer, or a signal for the guest from another process. */
static void
kick(struct vm *vm)
{
	if (vm_timed_out()) {
		vm_stop(vm, VMM_TIMEOUT, -1, "timeout: stopped after %llu ms",
		    (unsigned long long)vm->cfg->timeout_ms);
		return;
	}
	vm_thread_preempt(vm);
	vm_signal_after_kick(vm);
}

void
vm_trap_loop(struct vm *vm)
{
	struct vm_trap *t;
	int rc, status = 0, synced = 0, changed;
	uint64_t rip, nr;
	uint32_t ev;
	char why[64];

	while (!vm->stopped && !vm->parked) {
		/* Re-read each time: fork and execve replace the stub. */
		t = vm->trap;
		/* A kick that came while the VMM served a call (or while the
		 * stub booted) is taken now, as KVM_RUN returns EINTR at
		 * once with immediate_exit set: the stub waits in its
		 * handler and the registers are the VMM's, so a pending
		 * signal is delivered before the guest runs again, not only
		 * when a call is slow to come. */
		if (vm->run->immediate_exit) {
			vm->run->immediate_exit = 0;
			kick(vm);
			synced = 0;
			continue;
		}
		/* What the stub answers from while the guest runs, unless
		 * the last event left it all as it was (a served call costs
		 * about 0.2 us less). */
		if (!synced)
			vm_fast_sync(vm);
		synced = 0;
		put_regs(vm, t);
		/* The queued ops go with the resume, in one reply. */
		rc = t->nops != 0 ? flush_ops(vm, t, &status)
		                  : post_and_wait(vm, t, TRAP_R_RESUME,
		                        vm->deadline_us, &status);
		if (rc == WAIT_TIMEOUT) {
			vm_stop(vm, VMM_TIMEOUT, -1,
			    "timeout: stopped after %llu ms",
			    (unsigned long long)vm->cfg->timeout_ms);
			break;
		}
		if (rc == WAIT_DEAD) {
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: the guest's process ended (%s)",
			    wait_reason(status, why, sizeof(why)));
			break;
		}
		ev = __atomic_load_n(&t->box->event, 0);
		take_regs(vm, t);
		/* Before anything looks at the descriptors. */
		changed = vm_fast_reap(vm);
		rip = vm->run->s.regs.regs.rip;
		nr = vm->run->s.regs.regs.rax;
		vm->res->exits++;
		switch (ev) {
		case TRAP_EV_SYSCALL:
			/* A kick that came while the guest ran: KVM would
			 * have stopped it before the call, so the call is
			 * put back (rip on the 2-byte syscall, rax still its
			 * number) and made after the signal's handler, and a
			 * blocking call cannot sleep through its signal. */
			if (vm->run->immediate_exit) {
				vm->run->s.regs.regs.rip -= 2;
				break;
			}
			vm_on_syscall(vm);
			/* Nothing the answers hold moved: no change read
			 * back, a call that changes none, no handler's frame
			 * (RIP where the call returns), no ops queued. */
			synced = !changed && vm_fast_keeps(nr) &&
			    vm->run->s.regs.regs.rip == rip && vm->trap == t &&
			    t->nops == 0;
			break;
		case TRAP_EV_FAULT:
			on_fault(vm, t->box);
			break;
		case TRAP_EV_KICK:
			kick(vm);
			break;
		default:
			vm_stop(vm, VMM_FAULT, -1,
			    "fault: the guest's process broke the protocol "
			    "(event %u)",
			    ev);
			break;
		}
	}
}

/* The guest is done: its process goes with it. */
void
vm_trap_stop(struct vm *vm)
{
	struct vm_trap *t = vm->trap;
	unsigned i;

	/*
	 * At the run's end: killed, not waited for. Its exit (its page
	 * tables, its pid and mount namespaces: about 0.7 ms here) is the
	 * kernel's to finish while the result goes out; the process that
	 * reaps it is whichever waits next, or init once this one ends
	 * (a vm process ends with its run). Nothing of the run reads what
	 * it could still touch, guest memory, in the meantime.
	 */
	if (t != NULL && t->pid > 0) {
		kill(t->pid, SIGKILL);
		t->pid = 0;
	}
	/* The spares, which no guest has used yet, and their maker (whose
	 * end, its pid namespace's init's, ends those it forked). */
	for (i = 0; t != NULL && i < t->nspares; i++)
		if (t->spare[i].pid > 0) {
			kill(t->spare[i].pid, SIGKILL);
			t->spare[i].pid = 0;
		}
	if (t != NULL && t->spare_maker.pid > 0) {
		kill(t->spare_maker.pid, SIGKILL);
		t->spare_maker.pid = 0;
	}
}

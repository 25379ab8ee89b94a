/*
 * Guest processes (docs/vmm.md, "Processes"): each is a host process of
 * its own with its own VM, forked from its guest parent's (clone.c).
 * The run's processes share one table in a MAP_SHARED page made by the
 * first: guest pid, host pid, parent, process group and session, and the
 * wait status a child leaves for its parent. The table's size is the
 * run's process limit, so a fork bomb meets EAGAIN there, never the
 * host's limit.
 *
 * A row changes state by compare-and-swap on one word (state | parent's
 * guest pid << 32), so a child that exits and a parent that exits at
 * the same moment agree on who frees the row: a child of a live parent
 * becomes a zombie its parent reaps with wait4; an orphan frees its own.
 *
 * The table also holds the tree's memory charge against the run's memory
 * limit (docs/vmm.md, "Memory across a process tree"): each row the bytes
 * its process holds, the tree their sum, taken by compare-and-swap before
 * a process maps more, given back as it unmaps, execs or ends.
 */
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define PROCS_DEFAULT 64
#define WAIT_POLL_US 5000 /* a parked wait4 looks again this often */
#define WAIT_PARKED INT64_MIN /* wait_child: the thread was parked */
#define PROCS_MAX 1024

#define CSIGNAL_ 0x000000ffULL
#define CLONE_VM_ 0x00000100ULL
#define CLONE_VFORK_ 0x00004000ULL
#define CLONE_SETTLS_ 0x00080000ULL
#define CLONE_PARENT_SETTID_ 0x00100000ULL
#define CLONE_CHILD_CLEARTID_ 0x00200000ULL
#define CLONE_CHILD_SETTID_ 0x01000000ULL
#define CLONE_THREAD_ 0x00010000ULL
#define CLONE_SIGHAND_ 0x00000800ULL

enum { SLOT_FREE = 0, SLOT_LIVE = 1, SLOT_ZOMBIE = 2 };

struct vm_slot {
	uint64_t word; /* state | parent's guest pid << 32 */
	int32_t host_pid;
	int32_t guest_pid;
	int32_t wstatus; /* SLOT_ZOMBIE: the guest's wait status */
	int32_t killsig; /* the signal a guest kill ended it with */
	int32_t pgid, sid;
	/* Signals (sys_signal.c): pending from other processes, and what
	 * the process does with each, so a sender neither queues an
	 * ignored one nor wakes the process for it. Bit sig-1. */
	uint64_t pending, caught, ignored;
	uint64_t mem; /* bytes charged to this process */
	/* What the tree's /proc tells of it (procfs.c): its threads, when
	 * it was forked (vm_now_us), its name and its argv as its last
	 * execve gave them (the argv cut to VM_PROC_CMDLINE). Written only
	 * by the process itself; a reader clamps what it reads. */
	int32_t nthreads;
	int32_t nice; /* setpriority's, inherited by a fork's child */
	uint32_t cmdline_len;
	uint64_t start_us;
	/* Its CPU time (cputime.c): its stub's host pid and the CPU time of
	 * the stubs before it (trap), then, once it has ended, its user and
	 * system time and its peak memory, its reaped children's included,
	 * for its parent to add at the reap. */
	int32_t stub_pid;
	uint64_t stub_banked[2];
	uint64_t done_cpu[2], done_maxrss_kib;
	char comm[VM_PROC_COMM];
	char cmdline[VM_PROC_CMDLINE];
	/* 1 while the process waits on another (vm_proc_waiting) or has
	 * ended: not counted in the tree's running. */
	int32_t waiting;
	/* The child its blocking wait4 or waitid waits for: a guest pid,
	 * -1 any, 0 none. A child that ends wakes it only then, so a wait
	 * for another child is not cut short (vm_proc_finish). */
	int32_t wait_for;
	/* Its execve calls since its fork (trap.c's spares). */
	int32_t execs;
};

struct vm_tree {
	uint64_t output_bytes;
	size_t size; /* of this mapping */
	int32_t next_pid;
	int32_t closing; /* the first process has ended: no more forks */
	int32_t limit_hit;
	int32_t output_limited;
	int32_t mem_hit; /* a charge was refused */
	int32_t egress_hit; /* a destination outside was refused */
	int32_t egress_named; /* egress_what is being or has been written */
	/* The processes not waiting on another (vm_proc_waiting): while a
	 * process is the only one, its calls may spin (trap.c). */
	int32_t running;
	char egress_what[VMM_EGRESS_WHAT]; /* the first one refused */
	/* Bytes out and in through egress, and egress_max's part taken
	 * (sock_egress.c): every process of the run counts here. */
	struct vmm_egress_bytes egress_bytes;
	uint64_t mem_used, mem_limit; /* bytes: the rows' sum, its bound */
	/* The tree's "boot", for /proc's uptime and start times: when its
	 * first process began, on vm_now_us and on the wall clock. */
	uint64_t start_us, start_real_ns;
	unsigned nslots;
	struct vm_slot slot[];
};

#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define STORE(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define CAS(p, old, new)                                                       \
	__atomic_compare_exchange_n(                                           \
	    p, old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)

static void post(struct vm *, struct vm_slot *, int sig);
static int64_t reap_unwaited(struct vm *, int32_t gpid, int nohang);
static void post_stub(struct vm *);
static void signal_host(struct vm *, struct vm_slot *, int sig);

static uint64_t
word(uint32_t state, int32_t parent)
{
	return (uint64_t)state | (uint64_t)(uint32_t)parent << 32;
}

static uint32_t
w_state(uint64_t w)
{
	return (uint32_t)w;
}

static int32_t
w_parent(uint64_t w)
{
	return (int32_t)(w >> 32);
}

uint64_t *
vm_output_counter(struct vm *vm)
{
	return vm->tree != NULL ? &vm->tree->output_bytes
	                        : &vm->res->output_bytes;
}

struct vmm_egress_bytes *
vm_egress_counters(struct vm *vm)
{
	return vm->tree != NULL ? &vm->tree->egress_bytes
	                        : &vm->res->egress_bytes;
}

int
vm_proc_init(struct vm *vm)
{
	unsigned n = vm->cfg->max_procs ? vm->cfg->max_procs : PROCS_DEFAULT;
	struct timespec now;
	size_t size;
	struct vm_tree *t;

	if (n > PROCS_MAX)
		n = PROCS_MAX;
	size = sizeof(*t) + n * sizeof(t->slot[0]);
	t = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	    -1, 0);
	if (t == MAP_FAILED)
		return -1;
	t->size = size;
	t->nslots = n;
	t->next_pid = 2;
	t->slot[0].word = word(SLOT_LIVE, 0);
	t->slot[0].host_pid = getpid();
	t->running = 1;
	t->slot[0].guest_pid = t->slot[0].pgid = t->slot[0].sid = 1;
	/* What the first process mapped before the table existed, or a
	 * template's clone inherited. */
	t->mem_limit = vm_space_limit(vm);
	t->mem_used = t->slot[0].mem = vm->mem_charged;
	t->start_us = t->slot[0].start_us = vm_now_us();
	clock_gettime(CLOCK_REALTIME, &now);
	t->start_real_ns =
	    (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	t->slot[0].nthreads = 1;
	vm->tree = t;
	vm->slot = 0;
	vm->pid = 1;
	vm->ppid = 0;
	vm->vfork_fd = -1;
	vm_proc_program(vm, NULL);
	return 0;
}

/* ---- the tree's memory charge ------------------------------------------ */

static int
charge(struct vm_tree *t, struct vm_slot *s, uint64_t bytes)
{
	uint64_t used = LOAD(&t->mem_used);

	do {
		if (bytes > t->mem_limit || used > t->mem_limit - bytes) {
			STORE(&t->mem_hit, 1);
			return -ENOMEM;
		}
	} while (!CAS(&t->mem_used, &used, used + bytes));
	/* The tree's sum first: a process killed between the two steps
	 * leaves the tree over-charged, never under. */
	__atomic_fetch_add(&s->mem, bytes, __ATOMIC_SEQ_CST);
	return 0;
}

static void
uncharge(struct vm_tree *t, struct vm_slot *s, uint64_t bytes)
{
	__atomic_fetch_sub(&s->mem, bytes, __ATOMIC_SEQ_CST);
	__atomic_fetch_sub(&t->mem_used, bytes, __ATOMIC_SEQ_CST);
}

/* A row's whole charge back to the tree: a process that ended, by itself
 * or by its reaper (it was killed before it could), but only once. */
static void
uncharge_all(struct vm_tree *t, struct vm_slot *s)
{
	uint64_t held = __atomic_exchange_n(&s->mem, 0, __ATOMIC_SEQ_CST);

	__atomic_fetch_sub(&t->mem_used, held, __ATOMIC_SEQ_CST);
}

int
vm_proc_mem_charge(struct vm *vm, uint64_t bytes)
{
	if (vm->tree == NULL || bytes == 0)
		return 0;
	return charge(vm->tree, &vm->tree->slot[vm->slot], bytes);
}

void
vm_proc_mem_uncharge(struct vm *vm, uint64_t bytes)
{
	if (vm->tree != NULL && bytes != 0)
		uncharge(vm->tree, &vm->tree->slot[vm->slot], bytes);
}

static void
tree_free(struct vm *vm)
{
	if (vm->tree != NULL)
		munmap(vm->tree, vm->tree->size);
	vm->tree = NULL;
}

static struct vm_slot *
me(struct vm *vm)
{
	return &vm->tree->slot[vm->slot];
}

/* s ended or is ending: no longer one of the tree's running processes
 * (once, whoever sees it first). */
static void
leave_running(struct vm_tree *t, struct vm_slot *s)
{
	if (__atomic_exchange_n(&s->waiting, 1, __ATOMIC_SEQ_CST) == 0)
		(void)__atomic_fetch_sub(&t->running, 1, __ATOMIC_SEQ_CST);
}

void
vm_proc_waiting(struct vm *vm, int waiting)
{
	struct vm_slot *s;

	/* (With other threads, the process runs on while one waits.) */
	if (vm->tree == NULL || !vm_thread_alone(vm))
		return;
	s = me(vm);
	if (__atomic_exchange_n(&s->waiting, waiting, __ATOMIC_SEQ_CST) !=
	    waiting)
		(void)__atomic_fetch_add(
		    &vm->tree->running, waiting ? -1 : 1, __ATOMIC_SEQ_CST);
}

int
vm_proc_runs_alone(struct vm *vm)
{
	if (vm->tree == NULL)
		return !vm->is_child && vm->nchildren == 0;
	return LOAD(&vm->tree->running) <= 1;
}

static struct vm_slot *
find_pid(struct vm *vm, int32_t gpid)
{
	unsigned i;

	for (i = 0; i < vm->tree->nslots; i++)
		if (w_state(LOAD(&vm->tree->slot[i].word)) != SLOT_FREE &&
		    LOAD(&vm->tree->slot[i].guest_pid) == gpid)
			return &vm->tree->slot[i];
	return NULL;
}

/* A live process of the tree (0: this one), or NULL. */
static struct vm_slot *
live_pid(struct vm *vm, int32_t pid)
{
	struct vm_slot *s;

	if (pid == 0 || pid == vm->pid)
		return me(vm);
	if ((s = find_pid(vm, pid)) == NULL ||
	    w_state(LOAD(&s->word)) != SLOT_LIVE)
		return NULL;
	return s;
}

/* The wait status a guest parent sees for a process that ended as res
 * says: exit codes as they are, a fault as SIGSEGV, a process the run
 * stopped (time, output) as SIGKILL. */
static int32_t
guest_wstatus(struct vm *vm)
{
	switch (vm->res->status) {
	case VMM_EXITED:
		return vm->term_sig != 0 ? vm->term_sig
		                         : (vm->res->exit_code & 0xff) << 8;
	case VMM_FAULT:
		return SIGSEGV;
	default:
		return SIGKILL;
	}
}

/* Rows of children whose parent is going away: a zombie is freed (no
 * one will reap it), a live child becomes an orphan. */
static void
orphan_children(struct vm *vm)
{
	unsigned i;
	uint64_t w;

	for (i = 0; i < vm->tree->nslots; i++) {
		struct vm_slot *s = &vm->tree->slot[i];

		for (w = LOAD(&s->word);
		     w_parent(w) == vm->pid && w_state(w) != SLOT_FREE;) {
			uint64_t nw = w_state(w) == SLOT_ZOMBIE
			    ? word(SLOT_FREE, 0)
			    : word(SLOT_LIVE, 0);
			if (CAS(&s->word, &w, nw))
				break;
		}
	}
}

/* An ending process's CPU time and peak memory, its reaped children's
 * included, for its parent's reap (cputime.c). */
static void
post_done(struct vm *vm, struct vm_slot *s)
{
	uint64_t user, sys, rss = vm_cpu_maxrss_kib(vm);

	vm_cpu_times(vm, &user, &sys);
	STORE(&s->done_cpu[0], user + vm->cpu_child[0]);
	STORE(&s->done_cpu[1], sys + vm->cpu_child[1]);
	STORE(&s->done_maxrss_kib,
	    rss > vm->cpu_child_maxrss_kib ? rss : vm->cpu_child_maxrss_kib);
}

void
vm_proc_finish(struct vm *vm)
{
	struct vm_tree *t = vm->tree;
	struct vm_slot *s;
	unsigned i;
	uint64_t w;

	if (t == NULL)
		return;
	if (vm->res->status == VMM_OUTPUT_LIMIT)
		STORE(&t->output_limited, 1);
	orphan_children(vm);
	if (vm->is_child) {
		s = me(vm);
		leave_running(t, s);
		post_done(vm, s);
		uncharge_all(t, s);
		STORE(&s->wstatus, guest_wstatus(vm));
		/*
		 * The parent reaps this row (wait_child_here) without
		 * waiting for this host process, whose teardown (its memory
		 * unmapped, the stub's) takes half a millisecond and more:
		 * what a zombie has let go of under Linux goes first, every
		 * descriptor (a pipe's reader sees its end, locks are free),
		 * and the stub is on its way out.
		 */
		vm_trap_stop(vm);
		syscall(SYS_close_range, 0, ~0U, 0);
		for (w = LOAD(&s->word);;) {
			uint64_t nw = w_parent(w) == 0
			    ? word(SLOT_FREE, 0)
			    : word(SLOT_ZOMBIE, w_parent(w));
			if (CAS(&s->word, &w, nw))
				break;
		}
		if (w_parent(w) != 0 &&
		    (s = find_pid(vm, w_parent(w))) != NULL) {
			post(vm, s, SIGCHLD);
			/* A parent blocked in a wait for this child wakes
			 * even when it takes no SIGCHLD: the row is what it
			 * reaps (wait_child_here). */
			if (LOAD(&s->wait_for) == -1 ||
			    LOAD(&s->wait_for) == vm->pid)
				signal_host(vm, s, SIGUSR2);
		}
		_exit(vm->res->status == VMM_EXITED ? vm->res->exit_code & 0xff
		                                    : 128 + SIGKILL);
	}
	/* The first process is the run: what is left of the tree stops
	 * with it. A child forked from here on sees closing and exits. */
	STORE(&t->closing, 1);
	for (i = 1; i < t->nslots; i++) {
		s = &t->slot[i];
		if (w_state(LOAD(&s->word)) == SLOT_LIVE)
			signal_host(vm, s, SIGKILL);
	}
	/* The guest's own host process first: it waits for a reply
	 * that will not come. It is killed, not waited for (trap.c); the
	 * run's other host processes are: they are in this process's
	 * group, where a stub, which leads a group of its own, is not. */
	vm_trap_stop(vm);
	while (waitpid(0, NULL, __WALL) > 0 || errno == EINTR)
		;
	vm->res->output_bytes = LOAD(&t->output_bytes);
	vm->res->egress_bytes.out = LOAD(&t->egress_bytes.out);
	vm->res->egress_bytes.in = LOAD(&t->egress_bytes.in);
	vm->res->egress_bytes.used = LOAD(&t->egress_bytes.used);
	if (LOAD(&t->output_limited) && vm->res->status == VMM_EXITED) {
		vm->stopped = 0;
		vm_stop(vm, VMM_OUTPUT_LIMIT, -1,
		    "output-limit: more than %llu bytes of output",
		    (unsigned long long)vm->cfg->output_max);
	} else if (LOAD(&t->limit_hit) && vm->res->status == VMM_TIMEOUT) {
		size_t n = strlen(vm->res->reason);

		snprintf(vm->res->reason + n, sizeof(vm->res->reason) - n,
		    " (process limit %u reached)", t->nslots);
	}
	if (LOAD(&t->limit_hit))
		vm->res->limits_hit |= VMM_LIMIT_PROCESSES;
	if (LOAD(&t->mem_hit))
		vm->res->limits_hit |= VMM_LIMIT_MEMORY;
	if (LOAD(&t->egress_hit)) {
		vm->res->limits_hit |= VMM_LIMIT_EGRESS;
		if (vm->res->egress_refused[0] == '\0' &&
		    LOAD(&t->egress_named) == 2)
			memcpy(vm->res->egress_refused, t->egress_what,
			    sizeof(t->egress_what));
		vm->res->egress_refused[VMM_EGRESS_WHAT - 1] = '\0';
	}
	tree_free(vm);
}

/* The first destination refused in the tree is the one the run's result
 * names (1: being written by some process, 2: written). */
void
vm_proc_egress_refused(struct vm *vm, const char *what)
{
	int32_t none = 0;

	vm->res->limits_hit |= VMM_LIMIT_EGRESS;
	if (vm->res->egress_refused[0] == '\0')
		strlcpy(vm->res->egress_refused, what,
		    sizeof(vm->res->egress_refused));
	if (vm->tree == NULL)
		return;
	STORE(&vm->tree->egress_hit, 1);
	if (__atomic_compare_exchange_n(&vm->tree->egress_named, &none, 1, 0,
	        __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
		strlcpy(
		    vm->tree->egress_what, what, sizeof(vm->tree->egress_what));
		STORE(&vm->tree->egress_named, 2);
	}
}

/* ---- fork, vfork, clone ------------------------------------------------ */

static int
reserve_slot(struct vm *vm)
{
	unsigned i;
	uint64_t w;

	for (i = 0; i < vm->tree->nslots; i++) {
		w = word(SLOT_FREE, 0);
		if (LOAD(&vm->tree->slot[i].word) == w &&
		    CAS(&vm->tree->slot[i].word, &w, word(SLOT_LIVE, vm->pid)))
			return (int)i;
	}
	return -1;
}

static int64_t
do_clone(struct vm *vm, uint64_t flags, uint64_t newsp, uint64_t ptid,
    uint64_t ctid, uint64_t tls)
{
	const uint64_t known = CSIGNAL_ | CLONE_VM_ | CLONE_VFORK_ |
	    CLONE_SETTLS_ | CLONE_PARENT_SETTID_ | CLONE_CHILD_CLEARTID_ |
	    CLONE_CHILD_SETTID_;
	struct vm_cpu_state st;
	struct vm_slot *s;
	char err[160];
	int32_t gpid;
	int slot, vp[2] = { -1, -1 };
	pid_t pid;
	char c;

	if (flags & CLONE_THREAD_)
		return vm_thread_clone(vm, flags, newsp, ptid, ctid, tls);
	if (flags & CLONE_SIGHAND_)
		return -EINVAL; /* needs CLONE_VM, and then CLONE_THREAD */
	if ((flags & ~known) != 0)
		return -EINVAL;
	/* CLONE_VM is accepted only as vfork (posix_spawn, vfork): the
	 * child gets a copy, and the parent waits for its exec or exit. */
	if ((flags & CLONE_VM_) && !(flags & CLONE_VFORK_))
		return -ENOSYS;
	if (LOAD(&vm->tree->closing))
		return -EAGAIN;
	/* Children a parent takes no wait status from are freed first
	 * (reap_unwaited). */
	if (vm_signal_reaps_children(vm))
		(void)reap_unwaited(vm, -1, 1);
	if ((slot = reserve_slot(vm)) < 0) {
		STORE(&vm->tree->limit_hit, 1);
		return -EAGAIN;
	}
	s = &vm->tree->slot[slot];
	gpid = __atomic_fetch_add(&vm->tree->next_pid, 1, __ATOMIC_SEQ_CST);
	STORE(&s->guest_pid, gpid);
	STORE(&s->host_pid, 0);
	STORE(&s->wstatus, 0);
	STORE(&s->killsig, 0);
	STORE(&s->pgid, LOAD(&me(vm)->pgid));
	STORE(&s->sid, LOAD(&me(vm)->sid));
	STORE(&s->pending, 0);
	STORE(&s->caught, LOAD(&me(vm)->caught));
	STORE(&s->ignored, LOAD(&me(vm)->ignored));
	/* The child is its parent's program until it execs. */
	s->nthreads = 1;
	s->nice = LOAD(&me(vm)->nice);
	s->start_us = vm_now_us();
	s->stub_pid = 0;
	STORE(&s->waiting, 1); /* counted once it is forked, below */
	memset(s->stub_banked, 0, sizeof(s->stub_banked));
	memset(s->done_cpu, 0, sizeof(s->done_cpu));
	s->done_maxrss_kib = 0;
	memcpy(s->comm, me(vm)->comm, sizeof(s->comm));
	s->cmdline_len = me(vm)->cmdline_len;
	memcpy(s->cmdline, me(vm)->cmdline, sizeof(s->cmdline));
	if (flags & CLONE_PARENT_SETTID_) {
		int32_t *p = vm_gptr(vm, ptid, sizeof(*p));

		if (p == NULL)
			goto fault;
		memcpy(p, &gpid, sizeof(gpid));
	}
	if ((flags & CLONE_CHILD_SETTID_) && vm_gptr(vm, ctid, 4) == NULL)
		goto fault;
	/* A forked child may come to hold its own copy of every page its
	 * parent holds, and is charged for them now, as Linux's strict
	 * overcommit charges a fork; a vfork child (posix_spawn), which
	 * Linux runs in its parent's memory until it execs, only for what
	 * it maps itself. */
	STORE(&s->mem, 0);
	if (!(flags & CLONE_VFORK_) &&
	    charge(vm->tree, s, vm->mem_charged) != 0) {
		STORE(&s->word, word(SLOT_FREE, 0));
		return -ENOMEM;
	}
	if ((flags & CLONE_VFORK_) && pipe2(vp, O_CLOEXEC) == -1)
		goto nomem;
	if (vm_cpu_capture(vm, &st) != 0)
		goto nomem;
	/* Counted before the fork: the child may call before the parent
	 * goes on. */
	STORE(&s->waiting, 0);
	STORE(&s->wait_for, 0);
	STORE(&s->execs, 0);
	(void)__atomic_fetch_add(&vm->tree->running, 1, __ATOMIC_SEQ_CST);
	if ((pid = vm_fork(vm, &st, (flags & CLONE_VFORK_) != 0, err,
	         sizeof(err))) == -1) {
		leave_running(vm->tree, s);
		goto nomem;
	}
	if (pid > 0) {
		STORE(&s->host_pid, pid);
		vm->nchildren++;
		if (vp[0] >= 0) {
			/* vfork: until the child execs or exits. */
			close(vp[1]);
			vm_trap_spare(vm);
			vm_proc_waiting(vm, 1);
			while (read(vp[0], &c, 1) == -1 && errno == EINTR &&
			    !vm->stopped)
				;
			vm_proc_waiting(vm, 0);
			close(vp[0]);
		}
		return gpid;
	}
	/* The child, on its own VM. */
	STORE(&s->host_pid, getpid());
	if (LOAD(&vm->tree->closing))
		_exit(128 + SIGKILL);
	vm->is_child = 1;
	vm->nchildren = 0;
	vm->nunreaped = 0; /* the parent's to reap */
	vm->cpu_child[0] = vm->cpu_child[1] = vm->cpu_child_maxrss_kib = 0;
	vm->slot = slot;
	if (flags & CLONE_VFORK_)
		vm->mem_charged = 0;
	vm->ppid = vm->pid;
	vm->pid = gpid;
	post_stub(vm); /* its own, started in vm_fork */
	memset(&vm->child_res, 0, sizeof(vm->child_res));
	vm->res = &vm->child_res;
	vm_thread_reset(vm);
	vm_signal_forked(vm); /* after: the thread's own go too */
	vm_outside_signals(1); /* the parent's, not inherited (fork(2)) */
	vm_timer_arm(vm);
	if (vp[0] >= 0) {
		close(vp[0]);
		vm->vfork_fd = vp[1];
	}
	if (newsp != 0)
		vm->run->s.regs.regs.rsp = newsp;
	if (flags & CLONE_SETTLS_)
		vm->run->s.regs.sregs.fs.base = tls;
	if (flags & CLONE_CHILD_SETTID_)
		memcpy(vm_gptr(vm, ctid, 4), &gpid, sizeof(gpid));
	return 0;
fault:
	STORE(&s->word, word(SLOT_FREE, 0));
	return -EFAULT;
nomem:
	if (vp[0] >= 0) {
		close(vp[0]);
		close(vp[1]);
	}
	uncharge_all(vm->tree, s);
	STORE(&s->word, word(SLOT_FREE, 0));
	return -EAGAIN;
}

/* ---- wait4, waitid ------------------------------------------------------ */

static int
has_children(struct vm *vm)
{
	unsigned i;
	uint64_t w;

	for (i = 0; i < vm->tree->nslots; i++) {
		w = LOAD(&vm->tree->slot[i].word);
		if (w_state(w) != SLOT_FREE && w_parent(w) == vm->pid)
			return 1;
	}
	return 0;
}

int32_t
vm_guest_pid_of(struct vm *vm, pid_t hp)
{
	unsigned i;

	if (vm->tree == NULL)
		return hp == getpid() ? vm->pid : 0;
	for (i = 0; i < vm->tree->nslots; i++)
		if (w_state(LOAD(&vm->tree->slot[i].word)) == SLOT_LIVE &&
		    LOAD(&vm->tree->slot[i].host_pid) == hp)
			return LOAD(&vm->tree->slot[i].guest_pid);
	return 0;
}

/* A child of ours that the table says has ended (gpid > 0: that one;
 * else any), or NULL. */
static struct vm_slot *
ended_child(struct vm *vm, int32_t gpid)
{
	unsigned i;
	uint64_t w;

	for (i = 0; i < vm->tree->nslots; i++) {
		w = LOAD(&vm->tree->slot[i].word);
		if (w_state(w) == SLOT_ZOMBIE && w_parent(w) == vm->pid &&
		    (gpid <= 0 || LOAD(&vm->tree->slot[i].guest_pid) == gpid) &&
		    LOAD(&vm->tree->slot[i].host_pid) > 0)
			return &vm->tree->slot[i];
	}
	return NULL;
}

/*
 * The host processes of children reaped from the table, reaped as they
 * end; with no room left, the oldest is waited for. A row is freed only
 * after its child posted its end, and its host process stays a zombie
 * until reaped here, so no signal to a row's host pid can reach another
 * process (signal_host).
 */
static void
reap_later(struct vm *vm, pid_t hp)
{
	siginfo_t si;
	unsigned i, n = 0;

	for (i = 0; i < vm->nunreaped; i++) {
		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)vm->unreaped[i], &si,
		        WEXITED | WNOHANG | __WALL) == 0 &&
		    si.si_pid == 0)
			vm->unreaped[n++] = vm->unreaped[i];
	}
	vm->nunreaped = n;
	if (hp <= 0)
		return;
	if (n == sizeof(vm->unreaped) / sizeof(vm->unreaped[0])) {
		while (waitid(P_PID, (id_t)vm->unreaped[0], &si,
		           WEXITED | __WALL) == -1 &&
		    errno == EINTR)
			;
		memmove(vm->unreaped, vm->unreaped + 1,
		    --n * sizeof(vm->unreaped[0]));
	}
	vm->unreaped[n++] = hp;
	vm->nunreaped = n;
}

/* A reaped child's CPU time and peak memory into ru (user, system ns;
 * KiB) and this process's children's sums: what it posted as it ended,
 * or, for one killed before it could, what the host counted of its vm
 * process (its guest's time under KVM, its serving alone on trap). */
static void
reaped_cpu(
    struct vm *vm, struct vm_slot *s, const struct rusage *hru, uint64_t ru[3])
{
	ru[0] = LOAD(&s->done_cpu[0]);
	ru[1] = LOAD(&s->done_cpu[1]);
	ru[2] = LOAD(&s->done_maxrss_kib);
	if (ru[0] == 0 && ru[1] == 0 && ru[2] == 0) {
		ru[0] = (uint64_t)hru->ru_utime.tv_sec * 1000000000u +
		    (uint64_t)hru->ru_utime.tv_usec * 1000u;
		ru[1] = (uint64_t)hru->ru_stime.tv_sec * 1000000000u +
		    (uint64_t)hru->ru_stime.tv_usec * 1000u;
	}
	vm->cpu_child[0] += ru[0];
	vm->cpu_child[1] += ru[1];
	if (ru[2] > vm->cpu_child_maxrss_kib)
		vm->cpu_child_maxrss_kib = ru[2];
}

/* A reaped child's row given back: its times into ru (reaped_cpu), its
 * guest pid out. */
static int32_t
reap_row(
    struct vm *vm, struct vm_slot *s, const struct rusage *hru, uint64_t ru[3])
{
	int32_t got = LOAD(&s->guest_pid);

	vm_trap_spare_hint(vm, LOAD(&s->execs) > 0);
	reaped_cpu(vm, s, hru, ru);
	if (vm->nchildren > 0)
		vm->nchildren--;
	uncharge_all(vm->tree, s);
	STORE(&s->host_pid, 0);
	STORE(&s->word, word(SLOT_FREE, 0));
	return got;
}

/* A child the table says has ended, reaped from there: its status and
 * times what it posted; its host process, perhaps still tearing down,
 * left to reap_later. */
static int32_t
reap_ended(struct vm *vm, struct vm_slot *s, int32_t *gst, uint64_t ru[3])
{
	struct rusage none;

	memset(&none, 0, sizeof(none));
	*gst = LOAD(&s->wstatus);
	reap_later(vm, LOAD(&s->host_pid));
	return reap_row(vm, s, &none, ru);
}

/* The host's wait for target (-1: any) that leaves the process to be
 * reaped: its pid with *hst as wait4 would set it, 0 when none has
 * ended, -1 with errno. */
static pid_t
host_peek(pid_t target, int *hst)
{
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (waitid(target > 0 ? P_PID : P_ALL, target > 0 ? (id_t)target : 0,
	        &si, WEXITED | WNOHANG | WNOWAIT | __WALL) == -1)
		return -1;
	if (si.si_pid == 0)
		return 0;
	*hst = si.si_code == CLD_EXITED ? (si.si_status & 0xff) << 8
	                                : si.si_status & 0x7f;
	return si.si_pid;
}

/* The row of the guest process whose host process is hp, or NULL (a
 * host process that is no guest process of ours). */
static struct vm_slot *
host_row(struct vm *vm, pid_t hp)
{
	unsigned i;

	for (i = 0; i < vm->tree->nslots; i++)
		if (LOAD(&vm->tree->slot[i].host_pid) == hp &&
		    w_state(LOAD(&vm->tree->slot[i].word)) != SLOT_FREE)
			return &vm->tree->slot[i];
	return NULL;
}

/* The guest's wait status for the ended child of row s, whose host
 * process ended with hst: what it posted, else the guest kill's signal,
 * else the host's status. */
static int32_t
row_wstatus(struct vm_slot *s, int hst)
{
	if (w_state(LOAD(&s->word)) == SLOT_ZOMBIE)
		return LOAD(&s->wstatus);
	if (LOAD(&s->killsig) != 0)
		return LOAD(&s->killsig);
	if (WIFSIGNALED(hst))
		return WTERMSIG(hst);
	return (WEXITSTATUS(hst) & 0xff) << 8;
}

/*
 * wait4 for target, blocking, without losing a wake-up: SIGCHLD (kept
 * blocked while the guest runs: vmm_run) and the signals that wake a
 * guest (a child's end posted in the table, a signal for the guest, the
 * run's limit) are blocked while the table and immediate_exit are
 * checked, and let in only inside ppoll, so one that came since the
 * call began (while spares were made, say) cuts the wait short as one
 * that comes during it. A blocking wait4 slept through such a wake until
 * the child's host process was gone: a signal for the guest until the
 * child ended. -1 with EINTR where the table has the child's end or a
 * wake came (the caller looks at the table), else wait4's answer (with
 * peek, host_peek's: the host process is left unreaped).
 */
static pid_t
wait_host_child(struct vm *vm, int32_t gpid, pid_t target, int *hst,
    struct rusage *hru, int peek)
{
	sigset_t block, old, in;
	pid_t hp;
	int saved;

	vm_wake_signals(&block);
	sigaddset(&block, SIGCHLD);
	sigprocmask(SIG_BLOCK, &block, &old);
	in = old;
	sigdelset(&in, SIGCHLD);
	for (;;) {
		if (ended_child(vm, gpid) != NULL || vm->run->immediate_exit) {
			hp = -1;
			errno = EINTR;
			break;
		}
		if ((hp = peek ? host_peek(target, hst)
		               : wait4(target, hst, WNOHANG, hru)) != 0)
			break;
		(void)ppoll(NULL, 0, NULL, &in);
	}
	saved = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return hp;
}

/* The host process a wait for gpid (> 0: that child; else any) waits
 * on, -1 for any, in *target: 0, or -ECHILD where there is no such
 * child. */
static int
wait_target(struct vm *vm, int32_t gpid, pid_t *target)
{
	struct vm_slot *s;

	*target = -1;
	if (gpid <= 0)
		return has_children(vm) ? 0 : -ECHILD;
	if ((s = find_pid(vm, gpid)) == NULL ||
	    w_parent(LOAD(&s->word)) != vm->pid ||
	    (*target = LOAD(&s->host_pid)) <= 0)
		return -ECHILD;
	return 0;
}

/*
 * Wait for a child (gpid > 0: that one; anything else: any, since the
 * guest's process groups live only in the table). The host's wait4 does
 * the waiting: the guest's children are this process's host children.
 * 0 (WNOHANG, none yet), a guest pid with *gst set, or -errno.
 */
static int64_t
wait_child_here(
    struct vm *vm, int32_t gpid, int nohang, int32_t *gst, uint64_t ru[3])
{
	struct vm_slot *s = NULL;
	pid_t target, hp;
	struct rusage hru;
	int hst;

	if (wait_target(vm, gpid, &target) != 0)
		return -ECHILD;
	reap_later(vm, 0);
	/* A child that has ended in the table (a zombie, its SIGCHLD
	 * already sent, its descriptors closed: vm_proc_finish) is reaped
	 * from there, its status and times what it posted, while its host
	 * process may still be tearing down: WNOHANG must find it (a shell
	 * woken by SIGCHLD that saw no child ended would wait for another
	 * SIGCHLD that never came), and a blocking wait need not wait for
	 * the teardown. */
	if ((s = ended_child(vm, gpid)) != NULL)
		return reap_ended(vm, s, gst, ru);
	if (!nohang) {
		/* While the child runs: a stub for the next fork's child
		 * (trap.c); the child may have ended meanwhile. */
		vm_trap_blocking(vm);
		vm_trap_spare(vm);
		if ((s = ended_child(vm, gpid)) != NULL)
			return reap_ended(vm, s, gst, ru);
	}
	for (;;) {
		/* With other threads: look, and if no child has ended, look
		 * again in a few milliseconds while they run rather than
		 * block them (no descriptor tells of a child's end). */
		if (!nohang && vm->threads != NULL) {
			hp = wait4(target, &hst, WNOHANG, &hru);
			if (hp == 0 &&
			    vm_thread_park(vm, NULL, 0,
			        vm_now_us() + WAIT_POLL_US, VM_PARK_AGAIN))
				return WAIT_PARKED;
			if (hp == 0)
				hp = wait_host_child(
				    vm, gpid, target, &hst, &hru, 0);
		} else if (nohang)
			hp = wait4(target, &hst, WNOHANG, &hru);
		else
			hp = wait_host_child(vm, gpid, target, &hst, &hru, 0);
		if (hp == 0)
			return 0;
		/* Woken by a child that ended (vm_proc_finish kicks a
		 * parent that waits): it is in the table. */
		if (hp == -1 && errno == EINTR &&
		    (s = ended_child(vm, gpid)) != NULL)
			return reap_ended(vm, s, gst, ru);
		if (hp == -1)
			return errno == EINTR ? -EINTR : -ECHILD;
		if ((s = host_row(vm, hp)) == NULL)
			continue; /* not a guest process of ours */
		*gst = row_wstatus(s, hst);
		return reap_row(vm, s, &hru, ru);
	}
}

/*
 * Under Linux the children of a process that takes no wait status from
 * them (SIGCHLD ignored, or SA_NOCLDWAIT) leave no zombie, and a wait
 * lasts until none is left, then fails with ECHILD. Here a child's row
 * stays a zombie until its parent's next fork or wait, which frees it
 * without its times, as Linux counts only the children waited for: a
 * parent that forks a child per request and never waits would otherwise
 * fill the tree's rows (the 64th fork failed with EAGAIN).
 */
static int64_t
reap_unwaited(struct vm *vm, int32_t gpid, int nohang)
{
	uint64_t cpu[2] = { vm->cpu_child[0], vm->cpu_child[1] };
	uint64_t maxrss = vm->cpu_child_maxrss_kib, ru[3];
	int32_t gst;
	int64_t r;

	while ((r = wait_child_here(vm, gpid, nohang, &gst, ru)) > 0)
		if (gpid > 0) {
			r = -ECHILD; /* that one is gone */
			break;
		}
	vm->cpu_child[0] = cpu[0];
	vm->cpu_child[1] = cpu[1];
	vm->cpu_child_maxrss_kib = maxrss;
	return r;
}

/*
 * waitid's WNOWAIT: wait as wait_child_here does, but leave the child to
 * be waited for again, its row and its host process as they are (Go's
 * os/exec waits so before each reap). 0 (WNOHANG, none yet), a guest
 * pid with *gst set, WAIT_PARKED, or -errno.
 */
static int64_t
peek_child(struct vm *vm, int32_t gpid, int nohang, int32_t *gst)
{
	struct vm_slot *s;
	pid_t target, hp;
	int hst = 0;

	for (;;) {
		if (wait_target(vm, gpid, &target) != 0)
			return -ECHILD;
		if ((s = ended_child(vm, gpid)) != NULL) {
			*gst = LOAD(&s->wstatus);
			return LOAD(&s->guest_pid);
		}
		if ((hp = host_peek(target, &hst)) > 0) {
			if ((s = host_row(vm, hp)) != NULL) {
				*gst = row_wstatus(s, hst);
				return LOAD(&s->guest_pid);
			}
			/* not a guest process of ours (one reaped from its
			 * row, say): reaped, as a wait4 would */
			(void)waitpid(hp, NULL, WNOHANG | __WALL);
			continue;
		}
		if (nohang)
			return 0;
		if (vm->threads != NULL &&
		    vm_thread_park(
		        vm, NULL, 0, vm_now_us() + WAIT_POLL_US, VM_PARK_AGAIN))
			return WAIT_PARKED;
		hp = wait_host_child(vm, gpid, target, &hst, NULL, 1);
		if (hp == -1 && errno == EINTR && ended_child(vm, gpid) == NULL)
			return -EINTR;
		if (hp == -1 && errno != EINTR)
			return -ECHILD;
	}
}

/* wait_child_here (peek: peek_child), the process counted as waiting
 * meanwhile. */
static int64_t
wait_child(struct vm *vm, int32_t gpid, int nohang, int peek, int32_t *gst,
    uint64_t ru[3])
{
	int64_t r;

	if (!nohang) {
		vm_proc_waiting(vm, 1);
		if (vm->tree != NULL && vm_thread_alone(vm))
			STORE(&me(vm)->wait_for, gpid > 0 ? gpid : -1);
	}
	if (vm_signal_reaps_children(vm))
		r = reap_unwaited(vm, gpid, nohang);
	else if (peek)
		r = peek_child(vm, gpid, nohang, gst);
	else
		r = wait_child_here(vm, gpid, nohang, gst, ru);
	if (!nohang) {
		if (vm->tree != NULL)
			STORE(&me(vm)->wait_for, 0);
		vm_proc_waiting(vm, 0);
	}
	return r;
}

int64_t
sys_wait4(struct vm *vm, const uint64_t a[6])
{
	uint64_t cpu[3] = { 0, 0, 0 };
	int32_t gst = 0;
	int64_t r;
	void *st = NULL, *ru = NULL;

	if ((a[2] &
	        ~(uint64_t)(WNOHANG | WUNTRACED | WCONTINUED | __WALL |
	            __WCLONE | __WNOTHREAD)) != 0)
		return -EINVAL;
	if ((a[1] != 0 && (st = vm_gptr(vm, a[1], 4)) == NULL) ||
	    (a[3] != 0 &&
	        (ru = vm_gptr(vm, a[3], sizeof(struct rusage))) == NULL))
		return -EFAULT;
	if ((r = wait_child(vm, (int32_t)a[0], a[2] & WNOHANG, 0, &gst, cpu)) ==
	    WAIT_PARKED)
		return 0; /* issued again later (sys_thread.c) */
	if (r > 0) {
		if (st != NULL)
			memcpy(st, &gst, 4);
		if (ru != NULL)
			vm_cpu_rusage(cpu[0], cpu[1], cpu[2], ru);
	}
	return r;
}

int64_t
sys_waitid(struct vm *vm, const uint64_t a[6])
{
	uint64_t cpu[3] = { 0, 0, 0 };
	uint8_t *info = NULL, *ru = NULL;
	int32_t gst = 0, v;
	int64_t r, ticks;

	if (a[0] > P_PGID || (a[3] & WEXITED) == 0 ||
	    (a[3] &
	        ~(uint64_t)(WNOHANG | WNOWAIT | WEXITED | WSTOPPED |
	            WCONTINUED | __WALL | __WCLONE | __WNOTHREAD)) != 0)
		return -EINVAL;
	if ((a[2] != 0 && (info = vm_gptr(vm, a[2], 128)) == NULL) ||
	    (a[4] != 0 &&
	        (ru = vm_gptr(vm, a[4], sizeof(struct rusage))) == NULL))
		return -EFAULT;
	r = wait_child(vm, a[0] == P_PID ? (int32_t)a[1] : -1, a[3] & WNOHANG,
	    (a[3] & WNOWAIT) != 0, &gst, cpu);
	if (r == WAIT_PARKED)
		return 0; /* issued again later (sys_thread.c) */
	if (r < 0)
		return r;
	if (info != NULL) {
		memset(info, 0, 128);
		if (r > 0) {
			v = SIGCHLD;
			memcpy(info, &v, 4);
			v = WIFEXITED(gst) ? CLD_EXITED : CLD_KILLED;
			memcpy(info + 8, &v, 4);
			v = (int32_t)r;
			memcpy(info + 16, &v, 4);
			v = 1000;
			memcpy(info + 20, &v, 4);
			v = WIFEXITED(gst) ? WEXITSTATUS(gst) : WTERMSIG(gst);
			memcpy(info + 24, &v, 4);
			/* si_utime, si_stime: clock ticks */
			ticks = (int64_t)(cpu[0] / VM_TICK_NS);
			memcpy(info + 32, &ticks, 8);
			ticks = (int64_t)(cpu[1] / VM_TICK_NS);
			memcpy(info + 40, &ticks, 8);
		}
	}
	if (ru != NULL)
		vm_cpu_rusage(cpu[0], cpu[1], cpu[2], ru);
	return 0;
}

/* ---- kill ---------------------------------------------------------------- */

/*
 * The only place a host signal leaves this file. The guest names
 * processes by guest pid and never sees a host pid; still, a host pid is
 * signalled only when it is a row of this run's table that is not free
 * (a process of the tree, alive or a zombie not yet reaped, so its pid
 * cannot have been reused; keepd, keep and the rest of the host are
 * never rows), never pid 1 or below (kill(2)'s "every process" and
 * "my group" forms), and only with the two signals the tree uses. The vm
 * process's seccomp filter and its Landlock signal scope are the
 * layers beneath this one (docs/vmm.md, "Processes").
 */
static void
signal_host(struct vm *vm, struct vm_slot *s, int sig)
{
	pid_t hp = LOAD(&s->host_pid);
	unsigned i = (unsigned)(s - vm->tree->slot);

	if (i >= vm->tree->nslots || hp <= 1 ||
	    (sig != SIGKILL && sig != SIGUSR2) ||
	    w_state(LOAD(&s->word)) == SLOT_FREE)
		return;
	kill(hp, sig);
}

/* Queue sig for the process in s and wake it (SIGUSR2 interrupts its
 * KVM_RUN or its blocking call); it acts on it itself. SIGKILL cannot
 * wait: the host kills the process, and its parent's wait sees sig. */
static void
post(struct vm *vm, struct vm_slot *s, int sig)
{
	uint64_t bit = 1ULL << (sig - 1), w;
	int32_t zero = 0;

	if (s == me(vm)) {
		vm_signal_raise(vm, sig);
		return;
	}
	if (sig == SIGKILL) {
		__atomic_compare_exchange_n(&s->killsig, &zero, sig, 0,
		    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
		leave_running(vm->tree, s);
		signal_host(vm, s, SIGKILL);
		/* An orphan has no one to reap it. */
		w = word(SLOT_LIVE, 0);
		CAS(&s->word, &w, word(SLOT_FREE, 0));
		return;
	}
	if ((LOAD(&s->ignored) & bit) ||
	    (!(LOAD(&s->caught) & bit) && vm_signal_default_ignored(sig)))
		return;
	__atomic_fetch_or(&s->pending, bit, __ATOMIC_SEQ_CST);
	signal_host(vm, s, SIGUSR2);
}

int32_t
vm_proc_new_tid(struct vm *vm)
{
	return __atomic_fetch_add(&vm->tree->next_pid, 1, __ATOMIC_SEQ_CST);
}

uint64_t
vm_proc_take_pending(struct vm *vm)
{
	if (vm->tree == NULL)
		return vm_outside_signals(1);
	return __atomic_exchange_n(&me(vm)->pending, 0, __ATOMIC_SEQ_CST) |
	    vm_outside_signals(1);
}

uint64_t
vm_proc_peek_pending(struct vm *vm)
{
	return (vm->tree == NULL ? 0 : LOAD(&me(vm)->pending)) |
	    vm_outside_signals(0);
}

void
vm_proc_dispositions(struct vm *vm, uint64_t caught, uint64_t ignored)
{
	if (vm->tree == NULL)
		return;
	STORE(&me(vm)->caught, caught);
	STORE(&me(vm)->ignored, ignored);
}

static int64_t
do_kill(struct vm *vm, int32_t pid, uint64_t sig)
{
	struct vm_slot *s;
	unsigned i, hit = 0;
	int32_t pg;

	if (sig > 64)
		return -EINVAL;
	if (pid == INT32_MIN)
		return -ESRCH; /* no such group, and -pid would overflow */
	if (pid > 0) {
		if ((s = live_pid(vm, pid)) == NULL)
			return -ESRCH;
		if (sig != 0)
			post(vm, s, (int)sig);
		return 0;
	}
	pg = pid == 0 ? LOAD(&me(vm)->pgid) : -pid;
	for (i = 0; i < vm->tree->nslots; i++) {
		s = &vm->tree->slot[i];
		if (w_state(LOAD(&s->word)) != SLOT_LIVE ||
		    (pid == -1 ? s == me(vm) || LOAD(&s->guest_pid) == 1
		               : LOAD(&s->pgid) != pg))
			continue;
		hit++;
		if (sig != 0 && s != me(vm))
			post(vm, s, (int)sig);
	}
	/* Ourselves last, so the others are signalled first. */
	if (pid != -1 && sig != 0 && LOAD(&me(vm)->pgid) == pg)
		post(vm, me(vm), (int)sig);
	return hit ? 0 : -ESRCH;
}

/* ---- process groups and sessions ----------------------------------------- */

static struct vm_slot *
self_or_child(struct vm *vm, int32_t pid)
{
	struct vm_slot *s;

	if (pid == 0 || pid == vm->pid)
		return me(vm);
	if ((s = find_pid(vm, pid)) == NULL ||
	    w_parent(LOAD(&s->word)) != vm->pid)
		return NULL;
	return s;
}

static int64_t
do_setpgid(struct vm *vm, int32_t pid, int32_t pgid)
{
	struct vm_slot *s;

	if (pgid < 0)
		return -EINVAL;
	if ((s = self_or_child(vm, pid)) == NULL)
		return -ESRCH;
	if (LOAD(&s->sid) == LOAD(&s->guest_pid) ||
	    LOAD(&s->sid) != LOAD(&me(vm)->sid))
		return -EPERM;
	STORE(&s->pgid, pgid == 0 ? LOAD(&s->guest_pid) : pgid);
	return 0;
}

static int64_t
do_getpgid(struct vm *vm, int32_t pid, int sid)
{
	struct vm_slot *s;

	if (pid == 0)
		s = me(vm);
	else if ((s = find_pid(vm, pid)) == NULL)
		return -ESRCH;
	return sid ? LOAD(&s->sid) : LOAD(&s->pgid);
}

static int64_t
do_setsid(struct vm *vm)
{
	unsigned i;

	for (i = 0; i < vm->tree->nslots; i++)
		if (w_state(LOAD(&vm->tree->slot[i].word)) != SLOT_FREE &&
		    LOAD(&vm->tree->slot[i].pgid) == vm->pid)
			return -EPERM;
	STORE(&me(vm)->sid, vm->pid);
	STORE(&me(vm)->pgid, vm->pid);
	return vm->pid;
}

/* ---- the table's handlers (host/vmm/sys_table.c) ----------------------- */

int64_t
sys_clone(struct vm *vm, const uint64_t a[6])
{
	return do_clone(vm, a[0], a[1], a[2], a[3], a[4]);
}

int64_t
sys_fork(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return do_clone(vm, SIGCHLD, 0, 0, 0, 0);
}

int64_t
sys_vfork(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return do_clone(vm, CLONE_VM_ | CLONE_VFORK_ | SIGCHLD, 0, 0, 0, 0);
}

int64_t
sys_kill(struct vm *vm, const uint64_t a[6])
{
	return do_kill(vm, (int32_t)a[0], a[1]);
}

/*
 * A thread-directed signal. A thread of this process takes it alone,
 * when it runs (sys_thread.c; Go's preemption of a goroutine that never
 * calls, and its garbage collector's stop, are such signals); the
 * process's one thread takes it as the process's. A tid of another
 * process is its main thread's, its pid; any other is ESRCH.
 */
static int64_t
thread_kill(struct vm *vm, int32_t tgid, int32_t tid, uint64_t sig)
{
	if (tid <= 0 || tgid == 0 || tgid < -1 || sig > 64)
		return -EINVAL;
	if (vm_thread_is_mine(vm, tid)) {
		if (tgid != -1 && tgid != vm->pid)
			return -ESRCH;
		if (sig != 0 &&
		    vm_thread_signal(
		        vm, tid, (int)sig, vm_signal_acts(vm, (int)sig)))
			return 0;
		return do_kill(vm, vm->pid, sig);
	}
	if (tgid != -1 && tgid != tid)
		return -ESRCH;
	return do_kill(vm, tid, sig);
}

int64_t
sys_tkill(struct vm *vm, const uint64_t a[6])
{
	return thread_kill(vm, -1, (int32_t)a[0], a[1]);
}

int64_t
sys_tgkill(struct vm *vm, const uint64_t a[6])
{
	if ((int32_t)a[0] <= 0)
		return -EINVAL;
	return thread_kill(vm, (int32_t)a[0], (int32_t)a[1], a[2]);
}

int64_t
sys_getpid(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return vm->pid;
}

/* An orphan's parent is the first process, as init would be. */
int64_t
sys_getppid(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	if (vm->ppid == 0)
		return 0;
	return w_parent(LOAD(&me(vm)->word)) == 0 ? 1 : vm->ppid;
}

int64_t
sys_setpgid(struct vm *vm, const uint64_t a[6])
{
	return do_setpgid(vm, (int32_t)a[0], (int32_t)a[1]);
}

int64_t
sys_getpgid(struct vm *vm, const uint64_t a[6])
{
	return do_getpgid(vm, (int32_t)a[0], 0);
}

int64_t
sys_getpgrp(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return do_getpgid(vm, 0, 0);
}

int64_t
sys_getsid(struct vm *vm, const uint64_t a[6])
{
	return do_getpgid(vm, (int32_t)a[0], 1);
}

int64_t
sys_setsid(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return do_setsid(vm);
}

/* ---- templates (template.c) -------------------------------------------- */

int
vm_proc_alone(struct vm *vm)
{
	return vm->tree != NULL && vm->pid == 1 && vm->tree->next_pid == 2;
}

int
vm_proc_only(struct vm *vm)
{
	unsigned i;

	if (vm->tree == NULL || vm->pid != 1)
		return 0;
	for (i = 0; i < vm->tree->nslots; i++)
		if ((int)i != vm->slot &&
		    w_state(LOAD(&vm->tree->slot[i].word)) != SLOT_FREE)
			return 0;
	return 1;
}

/* The template's table is a MAP_SHARED page: a clone that wrote into it
 * would write into its siblings'. Each clone drops its mapping of it and
 * starts a table of its own. */
int
vm_proc_fresh(struct vm *vm)
{
	tree_free(vm);
	return vm_proc_init(vm);
}

/* ---- what the tree's /proc shows (procfs.c) ----------------------------- */

/* A process's name: the last part of path, or of argv[0] without one
 * (its start, where the run resolved argv[0] to the program; an
 * execveat of a descriptor). */
static const char *
program_name(struct vm *vm, const char *path)
{
	const char *name = path;

	if (name == NULL || name[0] == '\0')
		name = vm->cfg->argv != NULL && vm->cfg->argv[0] != NULL
		    ? vm->cfg->argv[0]
		    : "program";
	return strrchr(name, '/') != NULL ? strrchr(name, '/') + 1 : name;
}

/* This process's name and argv, for the others' /proc: at its start
 * (path NULL: argv[0]'s last part, which the run resolved to the
 * program) and after each execve (the path it gave, as Linux names a
 * process after the file it executed, a script's own name included). */
void
vm_proc_program(struct vm *vm, const char *path)
{
	struct vm_slot *s;
	size_t i, n, len = 0;

	if (vm->tree == NULL)
		return;
	s = me(vm);
	vm_proc_set_name(vm, program_name(vm, path));
	for (i = 0; vm->cfg->argv != NULL && vm->cfg->argv[i] != NULL; i++) {
		n = strlen(vm->cfg->argv[i]) + 1;
		if (n > sizeof(s->cmdline) - len)
			n = sizeof(s->cmdline) - len;
		memcpy(s->cmdline + len, vm->cfg->argv[i], n);
		len += n;
		if (len == sizeof(s->cmdline))
			break;
	}
	STORE(&s->cmdline_len, (uint32_t)len);
	STORE(&s->nthreads, 1);
	STORE(&s->execs, LOAD(&s->execs) + 1);
	post_stub(vm);
}

/* prctl(PR_SET_NAME) and the program's name: at most 15 bytes. */
void
vm_proc_set_name(struct vm *vm, const char *name)
{
	char comm[VM_PROC_COMM];

	if (vm->tree == NULL)
		return;
	memset(comm, 0, sizeof(comm));
	strncpy(comm, name, sizeof(comm) - 1);
	memcpy(me(vm)->comm, comm, sizeof(comm));
}

/* This process's stub (trap) and the CPU time of those before it, for
 * the others' /proc: posted once the process is itself in the table
 * (its start, a fork's child, each execve), never from a fork's child
 * still in its parent's row. */
static void
post_stub(struct vm *vm)
{
	uint64_t banked[2] = { 0, 0 };
	pid_t pid = vm->on_trap ? vm_trap_cpu(vm, banked) : 0;

	STORE(&me(vm)->stub_banked[0], banked[0]);
	STORE(&me(vm)->stub_banked[1], banked[1]);
	STORE(&me(vm)->stub_pid, pid);
}

void
vm_proc_set_threads(struct vm *vm, int n)
{
	if (vm->tree != NULL)
		STORE(&me(vm)->nthreads, n);
}

/* What /proc says of guest process pid (0 or -ENOENT): a live one of the
 * tree or a zombie not yet reaped. The caller itself is running; the
 * rest are shown sleeping, as they are while the caller runs on a box
 * with fewer cores than processes, or waiting for it. */
int
vm_proc_view(struct vm *vm, int32_t pid, struct vm_proc_view *v)
{
	uint64_t w, banked[2];
	struct vm_slot *s;
	size_t n;

	memset(v, 0, sizeof(*v));
	v->pid = pid;
	if (vm->tree == NULL) {
		if (pid != vm->pid)
			return -ENOENT;
		v->state = 'R';
		v->pgid = v->sid = pid;
		v->nthreads = 1;
		strncpy(v->comm, program_name(vm, NULL), sizeof(v->comm) - 1);
		vm_cpu_times(vm, &v->cpu[0], &v->cpu[1]);
		return 0;
	}
	if (pid == vm->pid)
		s = me(vm);
	else if ((s = find_pid(vm, pid)) == NULL)
		return -ENOENT;
	w = LOAD(&s->word);
	if (w_state(w) == SLOT_FREE || LOAD(&s->guest_pid) != pid)
		return -ENOENT;
	v->state = pid == vm->pid ? 'R' : w_state(w) == SLOT_ZOMBIE ? 'Z' : 'S';
	/* An orphan's parent is the tree's first process, as init adopts
	 * orphans on Linux. */
	v->ppid = w_parent(w) != 0 ? w_parent(w) : pid == 1 ? 0 : 1;
	v->pgid = LOAD(&s->pgid);
	v->sid = LOAD(&s->sid);
	v->nthreads = v->state == 'Z' ? 1 : LOAD(&s->nthreads);
	v->nice = LOAD(&s->nice);
	v->start_us = LOAD(&s->start_us) - vm->tree->start_us;
	v->mem = v->state == 'Z' ? 0 : LOAD(&s->mem);
	v->pending = LOAD(&s->pending);
	v->caught = LOAD(&s->caught);
	v->ignored = LOAD(&s->ignored);
	memcpy(v->comm, s->comm, sizeof(v->comm));
	v->comm[sizeof(v->comm) - 1] = '\0';
	if (v->state == 'R') {
		vm_cpu_times(vm, &v->cpu[0], &v->cpu[1]);
		v->cpu_child[0] = vm->cpu_child[0];
		v->cpu_child[1] = vm->cpu_child[1];
	} else if (v->state == 'Z') {
		v->cpu[0] = LOAD(&s->done_cpu[0]);
		v->cpu[1] = LOAD(&s->done_cpu[1]);
	} else {
		banked[0] = LOAD(&s->stub_banked[0]);
		banked[1] = LOAD(&s->stub_banked[1]);
		vm_cpu_of(LOAD(&s->host_pid), LOAD(&s->stub_pid), banked,
		    &v->cpu[0], &v->cpu[1]);
	}
	if (v->state != 'Z') {
		n = LOAD(&s->cmdline_len);
		if (n > sizeof(v->cmdline))
			n = sizeof(v->cmdline);
		memcpy(v->cmdline, s->cmdline, n);
		v->cmdline_len = n;
	}
	return 0;
}

/* The tree's guest pids (live and zombie), ascending, at most max;
 * returns how many there are. */
size_t
vm_proc_pids(struct vm *vm, int32_t *pids, size_t max)
{
	size_t n = 0, i, j;
	int32_t p;

	if (vm->tree == NULL) {
		if (max > 0)
			pids[0] = vm->pid;
		return 1;
	}
	for (i = 0; i < vm->tree->nslots; i++) {
		if (w_state(LOAD(&vm->tree->slot[i].word)) == SLOT_FREE ||
		    (p = LOAD(&vm->tree->slot[i].guest_pid)) <= 0)
			continue;
		if (n < max) {
			for (j = n; j > 0 && pids[j - 1] > p; j--)
				pids[j] = pids[j - 1];
			pids[j] = p;
		}
		n++;
	}
	return n;
}

/* The tree's "boot": how long ago (us) its first process started, and
 * that instant on the wall clock (ns since the epoch); the last pid
 * handed out. */
void
vm_proc_clock(
    struct vm *vm, uint64_t *uptime_us, uint64_t *boot_real_ns, int32_t *last)
{
	struct timespec now;
	uint64_t real;

	if (vm->tree != NULL) {
		*uptime_us = vm_now_us() - vm->tree->start_us;
		*boot_real_ns = vm->tree->start_real_ns;
		*last = LOAD(&vm->tree->next_pid) - 1;
		return;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	real = (uint64_t)now.tv_sec * 1000000000u + (uint64_t)now.tv_nsec;
	*uptime_us = 0;
	*boot_real_ns = real;
	*last = vm->pid;
}

/* ---- nice values -------------------------------------------------------- */

int
vm_proc_nice(struct vm *vm, int32_t pid, int *nice)
{
	struct vm_slot *s;

	if (vm->tree == NULL) {
		*nice = 0;
		return pid == 0 || pid == vm->pid ? 0 : -ESRCH;
	}
	if ((s = live_pid(vm, pid)) == NULL)
		return -ESRCH;
	*nice = LOAD(&s->nice);
	return 0;
}

/* As Linux answers a user without CAP_SYS_NICE and RLIMIT_NICE 0: a
 * process may be made nicer, never less nice. */
int
vm_proc_set_nice(struct vm *vm, int32_t pid, int nice)
{
	struct vm_slot *s;
	int32_t old;

	if (vm->tree == NULL)
		return pid == 0 || pid == vm->pid ? (nice < 0 ? -EACCES : 0)
		                                  : -ESRCH;
	if ((s = live_pid(vm, pid)) == NULL)
		return -ESRCH;
	old = LOAD(&s->nice);
	do {
		if (nice < old)
			return -EACCES;
	} while (!CAS(&s->nice, &old, nice));
	return 0;
}

/*
 * A guest process's CPU time (docs/vmm.md, "CPU time"), for
 * clock_gettime's CPU clocks, times, getrusage, wait4's rusage and
 * /proc/PID/stat: read from the host processes that run and serve it,
 * through their CPU clocks (clock_gettime of another process's clock,
 * which needs no /proc).
 *
 *  - KVM: the vm process runs the guest on its vCPU thread, and the
 *    host counts guest time as the thread's user time, so the guest's
 *    user time is the vm process's and its system time the rest of the
 *    vm process's (its exits, its host calls).
 *  - trap: the guest runs in the stub's process, so its user time is
 *    the stub's (its SIGSYS handler's too, a few us a call), and its
 *    system time the stub's system time and all the vm process's, which
 *    serves its calls as a kernel would. The stubs an execve left
 *    behind are banked (trap.c).
 *
 * A process's children's times are those it has reaped, each with its
 * own children's, as Linux counts cutime: each child posts its totals
 * in the tree's table as it ends (proc.c).
 */
#include <sys/resource.h>

#include <errno.h>
#include <string.h>
#include <time.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

/* Linux's clock id for a process's CPU clock (pid 0: the caller):
 * PROF counts user and system time, VIRT user time alone. */
#define CPUCLOCK(pid, type) ((clockid_t)(~(unsigned)(pid) << 3 | (type)))
#define CPUCLOCK_PROF 0
#define CPUCLOCK_VIRT 1

static uint64_t
clock_ns(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0; /* a process that has just ended */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void
vm_cpu_clock(pid_t pid, uint64_t *user, uint64_t *total)
{
	*total = clock_ns(CPUCLOCK(pid, CPUCLOCK_PROF));
	*user = clock_ns(CPUCLOCK(pid, CPUCLOCK_VIRT));
	if (*user > *total) /* read a moment later */
		*user = *total;
}

void
vm_cpu_of(pid_t vm_pid, pid_t stub_pid, const uint64_t banked[2],
    uint64_t *user, uint64_t *sys)
{
	uint64_t vm_user, vm_total, stub_user, stub_total;

	vm_cpu_clock(vm_pid, &vm_user, &vm_total);
	if (stub_pid <= 0) {
		*user = vm_user;
		*sys = vm_total - vm_user;
		return;
	}
	vm_cpu_clock(stub_pid, &stub_user, &stub_total);
	stub_user += banked[0];
	stub_total += banked[1];
	*user = stub_user;
	*sys = (stub_total > stub_user ? stub_total - stub_user : 0) + vm_total;
}

void
vm_cpu_times(struct vm *vm, uint64_t *user, uint64_t *sys)
{
	uint64_t banked[2] = { 0, 0 };
	pid_t stub = vm->on_trap ? vm_trap_cpu(vm, banked) : 0;

	vm_cpu_of(0, stub, banked, user, sys);
}

/*
 * A CPU clock id a guest made (clock_getcpuclockid, pthread_getcpuclockid):
 * the id is ~pid << 3, or ~tid << 3 with bit 2 for a thread, over the
 * kind in the low two bits (PROF: user and system; VIRT: user; SCHED:
 * both, precisely). A pid 0, the caller or one of its threads is the
 * caller's (its threads share its time); another process of the tree
 * its own. user and sys come out so that their sum is the clock's.
 */
int
vm_cpu_clock_of(struct vm *vm, int32_t id, uint64_t *user, uint64_t *sys)
{
	struct vm_proc_view v;
	int32_t who = ~(id >> 3); /* gcc shifts a negative int arithmetically */
	int kind = id & 3, thread = (id & 4) != 0;

	if (kind == 3 || who < 0)
		return -1;
	if (who == 0 || who == vm->pid ||
	    (thread && vm_thread_is_mine(vm, who)))
		vm_cpu_times(vm, user, sys);
	else if (thread || vm_proc_view(vm, who, &v) != 0 || v.state == 'Z')
		return -1;
	else {
		*user = v.cpu[0];
		*sys = v.cpu[1];
	}
	if (kind == CPUCLOCK_VIRT)
		*sys = 0;
	return 0;
}

static void
put_tv(struct timeval *tv, uint64_t ns)
{
	tv->tv_sec = (time_t)(ns / 1000000000u);
	tv->tv_usec = (suseconds_t)(ns % 1000000000u / 1000);
}

/* The most memory the process has held, in KiB (its brk and mmap
 * pages at their peak, the image pages it touched, its program and
 * stack), as ru_maxrss counts it. */
uint64_t
vm_cpu_maxrss_kib(const struct vm *vm)
{
	return ((vm->brk_peak - vm->brk_start) +
	           (vm->mmap_pages_peak + vm->file_touched_pages) * VM_PAGE +
	           (vm->elf.hi - vm->elf.lo) +
	           (vm->stack_top - vm->stack_lo)) >>
	    10;
}

void
vm_cpu_rusage(uint64_t user, uint64_t sys, uint64_t maxrss_kib, void *out)
{
	struct rusage ru;

	memset(&ru, 0, sizeof(ru));
	put_tv(&ru.ru_utime, user);
	put_tv(&ru.ru_stime, sys);
	ru.ru_maxrss = (long)maxrss_kib;
	memcpy(out, &ru, sizeof(ru));
}

int64_t
sys_getrusage(struct vm *vm, const uint64_t a[6])
{
	uint8_t ru[sizeof(struct rusage)];
	uint64_t user, sys;

	switch ((int32_t)a[0]) { /* an int */
	case RUSAGE_SELF:
	case RUSAGE_THREAD: /* the process's one vCPU: its threads' all */
		vm_cpu_times(vm, &user, &sys);
		vm_cpu_rusage(user, sys, vm_cpu_maxrss_kib(vm), ru);
		break;
	case RUSAGE_CHILDREN:
		vm_cpu_rusage(vm->cpu_child[0], vm->cpu_child[1],
		    vm->cpu_child_maxrss_kib, ru);
		break;
	default:
		return -EINVAL;
	}
	return vm_put(vm, a[1], ru, sizeof(ru));
}

/* times(2): the four times in clock ticks, and the ticks since the
 * tree began (an arbitrary point, as Linux's is, that never goes
 * back). */
int64_t
sys_times(struct vm *vm, const uint64_t a[6])
{
	uint64_t user, sys, up, boot;
	int64_t t[4];
	int32_t last;

	vm_cpu_times(vm, &user, &sys);
	t[0] = (int64_t)(user / VM_TICK_NS);
	t[1] = (int64_t)(sys / VM_TICK_NS);
	t[2] = (int64_t)(vm->cpu_child[0] / VM_TICK_NS);
	t[3] = (int64_t)(vm->cpu_child[1] / VM_TICK_NS);
	if (a[0] != 0 && vm_put(vm, a[0], t, sizeof(t)) != 0)
		return -EFAULT;
	vm_proc_clock(vm, &up, &boot, &last);
	return (int64_t)(up / (VM_TICK_NS / 1000));
}

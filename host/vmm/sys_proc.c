/*
 * The guest process's identity, limits and end: one process, pid 1,
 * uid and gid 1000, a machine named "keep" that tells nothing of the
 * host.
 */
#include <sys/utsname.h>

#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define ARCH_SET_GS 0x1001
#define ARCH_SET_FS 0x1002
#define ARCH_GET_FS 0x1003
#define ARCH_GET_GS 0x1004

#define GUEST_ID 1000 /* uid, gid, euid, egid (and AT_UID..AT_EGID) */

static int64_t
guest_id(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return GUEST_ID;
}

int64_t
sys_getuid(struct vm *vm, const uint64_t a[6])
{
	return guest_id(vm, a);
}

int64_t
sys_getgid(struct vm *vm, const uint64_t a[6])
{
	return guest_id(vm, a);
}

int64_t
sys_geteuid(struct vm *vm, const uint64_t a[6])
{
	return guest_id(vm, a);
}

int64_t
sys_getegid(struct vm *vm, const uint64_t a[6])
{
	return guest_id(vm, a);
}

static unsigned host_cpus;

void
vmm_host_cpus_init(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) == -1 ||
	    (n = CPU_COUNT(&set)) < 1)
		return;
	host_cpus = n > VM_CPUS_MAX ? VM_CPUS_MAX : (unsigned)n;
}

unsigned
vm_cpus(void)
{
	return host_cpus != 0 ? host_cpus : 1;
}

/* CPUs 0 to vm_cpus() - 1, in the kernel's 64-bit mask (at most 64
 * CPUs: its size is the mask's, as Linux answers nr_cpu_ids' bytes). */
static uint64_t
online_mask(void)
{
	return vm_cpus() >= 64 ? ~0ULL : (1ULL << vm_cpus()) - 1;
}

/*
 * A process's own CPU mask: kept and answered back (taskset, Python's
 * os.sched_setaffinity and os.process_cpu_count read what they set),
 * not given to the host's scheduler, which runs a sandbox's processes
 * where it will, as it does their nice values. Only the caller's own
 * (pid 0 or its own), as prlimit64.
 */
int64_t
sys_sched_setaffinity(struct vm *vm, const uint64_t a[6])
{
	uint64_t mask = 0;
	uint64_t len = a[1] < sizeof(mask) ? a[1] : sizeof(mask);

	/* Linux's order: the mask copied, the process found, then a mask
	 * with no online CPU in it is EINVAL. */
	if (len > 0 && vm_get(vm, a[2], &mask, len) != 0)
		return -EFAULT;
	if ((int32_t)a[0] != 0 && (int32_t)a[0] != vm->pid)
		return -ESRCH;
	if ((mask &= online_mask()) == 0)
		return -EINVAL;
	vm->cpu_mask = mask == online_mask() ? 0 : mask;
	return 0;
}

int64_t
sys_sched_getaffinity(struct vm *vm, const uint64_t a[6])
{
	uint64_t mask = vm->cpu_mask != 0 ? vm->cpu_mask : online_mask();

	if (a[1] < sizeof(mask))
		return -EINVAL;
	return vm_put(vm, a[2], &mask, sizeof(mask)) == 0
	    ? (int64_t)sizeof(mask)
	    : -EFAULT;
}

/*
 * Capabilities: the guest is uid 1000 with none (docs/vmm.md, "Names
 * for the user"), and says so as Linux does to such a process. The
 * header's version is checked first; an unknown one is answered with
 * the version this kernel prefers, and is EINVAL unless data is NULL
 * (libcap's probe).
 */
#define CAP_V1 0x19980330u
#define CAP_V2 0x20071026u
#define CAP_V3 0x20080522u

static int64_t
cap_header(struct vm *vm, uint64_t hdr, unsigned *words)
{
	struct vm_proc_view v;
	uint32_t h[2];

	if (vm_get(vm, hdr, h, sizeof(h)) != 0)
		return -EFAULT;
	if (h[0] != CAP_V1 && h[0] != CAP_V2 && h[0] != CAP_V3) {
		h[0] = CAP_V3;
		return vm_put(vm, hdr, h, sizeof(h[0])) != 0 ? -EFAULT
		                                             : -EINVAL;
	}
	*words = h[0] == CAP_V1 ? 1 : 2;
	if ((int32_t)h[1] < 0)
		return -EINVAL;
	if (h[1] != 0 && (int32_t)h[1] != vm->pid &&
	    vm_proc_view(vm, (int32_t)h[1], &v) != 0)
		return -ESRCH;
	return h[1] == 0 || (int32_t)h[1] == vm->pid ? 0 : 1;
}

int64_t
sys_capget(struct vm *vm, const uint64_t a[6])
{
	uint32_t none[6] = { 0 };
	unsigned words = 0;
	int64_t rc = cap_header(vm, a[0], &words);

	if (a[1] == 0)
		return rc == -EINVAL || rc >= 0 ? 0 : rc;
	if (rc < 0)
		return rc;
	return vm_put(vm, a[1], none, words * 3 * sizeof(uint32_t)) != 0
	    ? -EFAULT
	    : 0;
}

/* Only the empty set may be set, on oneself: there is nothing to drop. */
int64_t
sys_capset(struct vm *vm, const uint64_t a[6])
{
	uint32_t want[6];
	unsigned words = 0, i;
	int64_t rc = cap_header(vm, a[0], &words);

	if (rc < 0)
		return rc;
	if (rc == 1)
		return -EPERM;
	if (vm_get(vm, a[1], want, words * 3 * sizeof(uint32_t)) != 0)
		return -EFAULT;
	for (i = 0; i < words * 3; i++)
		if (want[i] != 0)
			return -EPERM;
	return 0;
}

/* The persona is kept and answered back, as Linux sets any value;
 * none changes what keep gives the guest (its layout, uname). */
int64_t
sys_personality(struct vm *vm, const uint64_t a[6])
{
	uint32_t old = vm->personality;

	if ((uint32_t)a[0] != 0xffffffffu)
		vm->personality = (uint32_t)a[0];
	return old;
}

int64_t
sys_uname(struct vm *vm, const uint64_t a[6])
{
	struct utsname u;

	memset(&u, 0, sizeof(u));
	strlcpy(u.sysname, VM_UNAME_SYSNAME, sizeof(u.sysname));
	strlcpy(u.nodename, VM_UNAME_NODENAME, sizeof(u.nodename));
	strlcpy(u.release, VM_UNAME_RELEASE, sizeof(u.release));
	strlcpy(u.version, VM_UNAME_VERSION, sizeof(u.version));
	strlcpy(u.machine, "x86_64", sizeof(u.machine));
	return vm_put(vm, a[0], &u, sizeof(u));
}

/*
 * The few prctl options programs set on themselves: the process's name
 * (shown in the tree's /proc), and the flags keep fixes (no new
 * privileges, always; dumpable). The rest are ENOSYS, as before.
 */
int64_t
sys_prctl(struct vm *vm, const uint64_t a[6])
{
	struct vm_proc_view *v;
	char name[VM_PROC_COMM];
	int64_t rc;

	switch (a[0]) {
	case 15: /* PR_SET_NAME: at most 15 bytes, cut, as Linux */
		memset(name, 0, sizeof(name));
		if (vm_gstr(vm, a[1], name, sizeof(name)) == -EFAULT &&
		    name[0] == '\0')
			return -EFAULT;
		name[sizeof(name) - 1] = '\0';
		vm_proc_set_name(vm, name);
		return 0;
	case 16: /* PR_GET_NAME */
		if ((v = malloc(sizeof(*v))) == NULL)
			return -ENOMEM;
		rc = vm_proc_view(vm, vm->pid, v);
		if (rc == 0)
			rc = vm_put(vm, a[1], v->comm, sizeof(v->comm));
		free(v);
		return rc;
	case 3: /* PR_GET_DUMPABLE */
		return 1;
	case 4: /* PR_SET_DUMPABLE */
		return a[1] <= 1 ? 0 : -EINVAL;
	case 38: /* PR_SET_NO_NEW_PRIVS: it is set already */
		return a[1] == 1 && a[2] == 0 && a[3] == 0 && a[4] == 0
		    ? 0
		    : -EINVAL;
	case 39: /* PR_GET_NO_NEW_PRIVS */
		return 1;
	default:
		return -ENOSYS;
	}
}

#define PRIO_PROCESS_ 0

/* getpriority's raw answer is 20 - nice (1..40), so no nice value reads
 * as an error; glibc turns it back. */
int64_t
sys_getpriority(struct vm *vm, const uint64_t a[6])
{
	int nice, rc;

	if (a[0] != PRIO_PROCESS_)
		return -EINVAL;
	if ((rc = vm_proc_nice(vm, (int32_t)a[1], &nice)) != 0)
		return rc;
	return 20 - nice;
}

int64_t
sys_setpriority(struct vm *vm, const uint64_t a[6])
{
	int32_t nice = (int32_t)a[2];

	if (a[0] != PRIO_PROCESS_)
		return -EINVAL;
	nice = nice < -20 ? -20 : nice > 19 ? 19 : nice;
	return vm_proc_set_nice(vm, (int32_t)a[1], nice);
}

int64_t
sys_sysinfo(struct vm *vm, const uint64_t a[6])
{
	struct {
		int64_t uptime;
		uint64_t loads[3], totalram, freeram, sharedram, bufferram;
		uint64_t totalswap, freeswap;
		uint16_t procs, pad;
		uint64_t totalhigh, freehigh;
		uint32_t mem_unit;
		char pad2[4];
	} si;
	uint64_t up, boot;
	int32_t last;

	/* As /proc/uptime and /proc/loadavg say (procfs.c): the tree's. */
	vm_proc_clock(vm, &up, &boot, &last);
	memset(&si, 0, sizeof(si));
	si.uptime = (int64_t)((up + 999999) / 1000000); /* up, as Linux */
	si.totalram = vm_space_limit(vm);
	si.freeram = (vm->mmap_hi - vm->mmap_lo) -
	    (vm->mmap_pages_used - vm->mmap_reserved_pages) * VM_PAGE;
	si.freeram = si.freeram > vm->reserve ? si.freeram - vm->reserve : 0;
	si.procs = (uint16_t)vm_proc_pids(vm, NULL, 0);
	si.mem_unit = 1;
	return vm_put(vm, a[0], &si, sizeof(si));
}

int64_t
sys_prlimit64(struct vm *vm, const uint64_t a[6])
{
	uint64_t lim[2];

	if (a[0] != 0 && (int32_t)a[0] != vm->pid)
		return -ESRCH; /* only ourselves */
	if (a[3] != 0) {
		switch (a[1]) {
		case 3: /* RLIMIT_STACK */
			lim[0] = lim[1] = vm->stack_top - vm->stack_lo;
			break;
		case 7: /* RLIMIT_NOFILE */
			lim[0] = lim[1] = vm->nfds;
			break;
		case 9: /* RLIMIT_AS: the address space */
			lim[0] = lim[1] = vm->memsz;
			break;
		case 2: /* RLIMIT_DATA: what may be held, as in Linux */
			lim[0] = lim[1] = vm_space_limit(vm);
			break;
		default:
			lim[0] = lim[1] = ~0ULL; /* RLIM_INFINITY */
		}
		if (vm_put(vm, a[3], lim, sizeof(lim)) != 0)
			return -EFAULT;
	}
	return 0; /* setting a limit is accepted and has no effect */
}

int64_t
sys_getrlimit(struct vm *vm, const uint64_t a[6])
{
	uint64_t b[6] = { 0, a[0], 0, a[1], 0, 0 };

	return sys_prlimit64(vm, b);
}

int64_t
sys_getrandom(struct vm *vm, const uint64_t a[6])
{
	uint64_t len = a[1];
	void *g;

	if (len > (1u << 20))
		len = 1u << 20;
	if ((g = vm_gptr(vm, a[0], len)) == NULL)
		return -EFAULT;
	randombytes_buf(g, len);
	return (int64_t)len;
}

/* FS and GS bases go into the synced segment registers: an MSR write
 * alone would be undone when they are written back at the next entry. */
int64_t
sys_arch_prctl(struct vm *vm, const uint64_t a[6])
{
	struct kvm_sregs *s = &vm->run->s.regs.sregs;

	switch (a[0]) {
	case ARCH_SET_FS:
	case ARCH_SET_GS:
		if (a[1] >= (1ULL << 47))
			return -EPERM;
		if (a[0] == ARCH_SET_FS)
			s->fs.base = a[1];
		else
			s->gs.base = a[1];
		return 0;
	case ARCH_GET_FS:
		return vm_put(vm, a[1], &s->fs.base, 8);
	case ARCH_GET_GS:
		return vm_put(vm, a[1], &s->gs.base, 8);
	default:
		return -EINVAL;
	}
}

int64_t
sys_exit_group(struct vm *vm, const uint64_t a[6])
{
	vm_stop(vm, VMM_EXITED, (int)(a[0] & 0xff), "%s", "");
	return 0;
}

int64_t
sys_keep_fetch(struct vm *vm, const uint64_t a[6])
{
	return vm_keep_fetch(vm, a[0], a[1]); /* fetch.c */
}

/* getresuid and getresgid: real, effective and saved, all the guest's. */
static int64_t
put_ids(struct vm *vm, const uint64_t a[6])
{
	uint32_t id = GUEST_ID;
	int i;

	for (i = 0; i < 3; i++)
		if (vm_put(vm, a[i], &id, sizeof(id)) != 0)
			return -EFAULT;
	return 0;
}

int64_t
sys_getresuid(struct vm *vm, const uint64_t a[6])
{
	return put_ids(vm, a);
}

int64_t
sys_getresgid(struct vm *vm, const uint64_t a[6])
{
	return put_ids(vm, a);
}

/* The set*id calls: the guest may "change" to the ids it has (or leave
 * one, -1), as any process may; anything else is EPERM, as for a
 * process without CAP_SETUID or CAP_SETGID. */
static int64_t
same_ids(const uint64_t a[6], int n)
{
	int i;

	for (i = 0; i < n; i++)
		if ((uint32_t)a[i] != UINT32_MAX && (uint32_t)a[i] != GUEST_ID)
			return -EPERM;
	return 0;
}

int64_t
sys_setuid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return (uint32_t)a[0] == GUEST_ID ? 0 : -EPERM;
}

int64_t
sys_setgid(struct vm *vm, const uint64_t a[6])
{
	return sys_setuid(vm, a);
}

int64_t
sys_setreuid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return same_ids(a, 2);
}

int64_t
sys_setregid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return same_ids(a, 2);
}

int64_t
sys_setresuid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return same_ids(a, 3);
}

int64_t
sys_setresgid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return same_ids(a, 3);
}

/* setfsuid and setfsgid answer the old id and never fail. */
int64_t
sys_setfsuid(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return GUEST_ID;
}

int64_t
sys_setfsgid(struct vm *vm, const uint64_t a[6])
{
	return sys_setfsuid(vm, a);
}

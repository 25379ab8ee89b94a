/*
 * The guest's vDSO from the host's side (docs/vmm.md "Time"): its image
 * and data page in the kernel's first 2 MiB, and the data page kept in
 * step with the host's clocks.
 *
 * The guest reads its clocks as the host's CLOCK_MONOTONIC and
 * CLOCK_REALTIME at a base instant plus its own TSC since then, at the
 * rate KVM gives the vCPU's TSC (KVM_GET_TSC_KHZ), or on the trap
 * platform, whose guest reads the host's own TSC, at the rate measured
 * here. The base is taken at
 * boot, after execve, on a VM rebuilt around the guest (fork, a
 * template) and at least a second apart at later exits, and never moves
 * the guest's monotonic clock back. All of it only on a host whose own
 * clocks run on its TSC (host_tsc_ok); elsewhere the page stays
 * disabled and every clock read is a system call.
 */
#include <sys/ioctl.h>

#include <cpuid.h>
#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "host/vmm/abi.h"
#include "host/vmm/vm_int.h"
#include "vdso/vvar.h"

#define MSR_IA32_TSC 0x10
#define VDSO_RESYNC_US 1000000
#define VDSO_TRIES 8
#define VDSO_WINDOW_NS 20000 /* a pairing this tight is good enough */
/* Two estimates of the wall clock's offset from the monotonic one each
 * lead by up to a window; Linux slews both clocks alike, so only a
 * difference past both windows and this slack is the wall clock set. */
#define VDSO_WALL_SLACK_NS 10000
#define VDSO_WALL_STEP_NS (VDSO_WALL_SLACK_NS + VDSO_WINDOW_NS)

extern const unsigned char guest_vdso[];
extern const size_t guest_vdso_len;

_Static_assert(sizeof(struct keep_vvar) <= VM_PAGE, "one data page");
_Static_assert(GUEST_VVAR + VM_PAGE <= GUEST_VDSO &&
        GUEST_VDSO + GUEST_VDSO_MAX <= GUEST_LOW_END,
    "the vDSO lies in the kernel's 2 MiB");

uint64_t
vm_vdso_base(void)
{
	return guest_vdso_len <= GUEST_VDSO_MAX ? GUEST_VDSO : 0;
}

void
vm_vdso_install(struct vm *vm)
{
	memset(vm->mem + GUEST_VVAR, 0, VM_PAGE);
	if (vm_vdso_base() != 0)
		memcpy(vm->mem + GUEST_VDSO, guest_vdso, guest_vdso_len);
	vm->vdso_sync_us = 0;
}

/*
 * The trap platform's guest reads the host's own TSC, whose rate no KVM
 * gives (nor, on a VM's guest kernel, perf's user page). It is measured
 * against CLOCK_MONOTONIC_RAW, which runs at the host clocksource's
 * fixed rate, NTP aside, from an instant taken once per vmm (keepd's
 * start, keep run's) to each new base: the longer the span, the closer
 * the rate. Each pairing's uncertainty is known (the raw clock's two
 * readings around the TSC), so the clocks are enabled once the two
 * pairings' uncertainty is at most 20 ppm of the span between them
 * (about 2 ms on a quiet host, whose pairings are 0.1 us wide; longer
 * under load), and each base is taken again within a second.
 */
#define TSC_PPM_MAX 20
#define TSC_RETRY_US 1000 /* not yet: ask again a millisecond on */
static uint64_t tsc_start, raw_start, raw_start_err;
static int tsc_usable = -1;

/*
 * Whether the guest may count time in the host's TSC cycles, on either
 * platform: the guest's TSC is the host's (under KVM scaled and offset
 * by a fixed ratio), and the vDSO converts it at one rate for up to a
 * second. That holds only where the host kernel itself keeps its time
 * with the TSC (clocksource `tsc`, or `kvm-clock` over it). One that
 * gave its TSC up (unsynchronized between CPUs, drifting against its
 * watchdog) keeps it with hpet or acpi_pm, whose CLOCK_MONOTONIC the
 * TSC does not follow: the guest's clocks part from the host's and can
 * fall behind them (docs/vmm.md, "Under QEMU's TCG"). Any other name
 * (xen's, say) is not judged: no vDSO.
 *
 * The clocksource is read once (vmm_prepare_clocks), where /sys is in
 * sight: keepd's vmm before it confines itself (proc_child_start) and
 * keep run. A host that hides it gets no vDSO: the calls are right,
 * only slower. But keepd's vmm lives for months, and a kernel that
 * keeps time with a TSC at start may give it up later (at the CPU's
 * first change of rate or halt in idle), which nothing confined sees.
 * So the TSC must also be one the CPU promises runs at one rate through
 * every P- and C-state (CPUID's invariant TSC), under KVM as on trap:
 * KVM only scales and offsets the host's TSC, so the guest's changes
 * rate whenever the host's does, while KVM_GET_TSC_KHZ stays the
 * nominal rate. The cost: a VM whose hypervisor hides the bit (QEMU's
 * default, for migration) gets no vDSO on either platform.
 */
static int
host_tsc_ok(void)
{
	unsigned a, b, c, d;
	char cs[32];
	ssize_t n;
	int fd;

	if ((unsigned)__get_cpuid_max(0x80000000, NULL) < 0x80000007U)
		return 0;
	__cpuid(0x80000007, a, b, c, d);
	if ((d & (1U << 8)) == 0)
		return 0;
	fd = open("/sys/devices/system/clocksource/clocksource0/"
	          "current_clocksource",
	    O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, cs, sizeof(cs) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	cs[n] = '\0';
	return strcmp(cs, "tsc\n") == 0 || strcmp(cs, "kvm-clock\n") == 0;
}

static uint64_t
host_tsc(void)
{
	uint64_t t;

	_mm_lfence();
	t = __rdtsc();
	_mm_lfence();
	return t;
}

static uint64_t host_ns(clockid_t id);

/*
 * The host's TSC and CLOCK_MONOTONIC_RAW at one instant: the raw clock
 * read on both sides of the TSC, the tightest of a few tries (a process
 * preempted in between would make the rate wrong by the time it lost).
 */
static uint64_t
tsc_raw_pair(uint64_t *tsc, uint64_t *raw)
{
	uint64_t before, after, t, best = UINT64_MAX;
	int i;

	for (i = 0; i < VDSO_TRIES && best > VDSO_WINDOW_NS / 100; i++) {
		before = host_ns(CLOCK_MONOTONIC_RAW);
		t = host_tsc();
		after = host_ns(CLOCK_MONOTONIC_RAW);
		if (after - before < best) {
			best = after - before;
			*tsc = t;
			*raw = before + (after - before) / 2;
		}
	}
	return best / 2 + 1; /* how far *raw may lie from the TSC's instant */
}

/* Once per process, and the only place /sys is read: whether the host's
 * TSC is usable (host_tsc_ok), and the trap platform's first pairing,
 * from which its rate is measured. */
void
vmm_prepare_clocks(void)
{
	if (tsc_usable != -1)
		return;
	tsc_usable = host_tsc_ok();
	raw_start_err = tsc_raw_pair(&tsc_start, &raw_start);
}

/* ns per host TSC tick << VVAR_SHIFT, from the span since the start; 0
 * while the span is too short for TSC_PPM_MAX or the TSC unusable. */
static uint64_t
host_tsc_mult(void)
{
	uint64_t raw = 0, tsc = 0, err;

	if (tsc_usable != 1)
		return 0;
	err = tsc_raw_pair(&tsc, &raw) + raw_start_err;
	if (raw <= raw_start || tsc <= tsc_start ||
	    err * 1000000 / (raw - raw_start) > TSC_PPM_MAX)
		return 0;
	return (uint64_t)(((unsigned __int128)(raw - raw_start) << VVAR_SHIFT) /
	    (tsc - tsc_start));
}

static int
guest_tsc(struct vm *vm, uint64_t *tsc)
{
	union {
		struct kvm_msrs h;
		uint8_t bytes[sizeof(struct kvm_msrs) +
		    sizeof(struct kvm_msr_entry)];
	} m;

	if (vm->on_trap) {
		/* The guest's TSC is the host's: the stub runs on it. */
		*tsc = host_tsc();
		return 0;
	}
	memset(&m, 0, sizeof(m));
	m.h.nmsrs = 1;
	m.h.entries[0].index = MSR_IA32_TSC;
	if (ioctl(vm->vcpufd, KVM_GET_MSRS, &m) != 1)
		return -1;
	*tsc = m.h.entries[0].data;
	return 0;
}

static uint64_t
host_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The vCPU's TSC paired with the host's clocks read just after it, so
 * the guest's clocks start ahead of the host's by the time between the
 * two, never behind: a guest that reads its clock, sleeps on the host
 * for a time and reads it again sees at least that time pass. The
 * host's monotonic clock read before the TSC bounds that lead; a
 * process preempted in between would make it large, so the tightest of
 * a few tries is kept. The wall clock is read inside the same window,
 * its offset taken against the earlier monotonic read as
 * vm_vdso_follow_wall takes it: read after the window, a preemption
 * there made the base's wall clock lead by as long, which the next
 * follow took for a step back, and the guest's CLOCK_REALTIME ran
 * backwards. 0, or -1 when KVM cannot say.
 */
static int
pair_clocks(struct vm *vm, uint64_t *tsc, uint64_t *mono, uint64_t *real)
{
	uint64_t t, before, after, r, best = UINT64_MAX;
	int i;

	for (i = 0; i < VDSO_TRIES && best > VDSO_WINDOW_NS; i++) {
		before = host_ns(CLOCK_MONOTONIC);
		if (guest_tsc(vm, &t) != 0)
			return -1;
		r = host_ns(CLOCK_REALTIME);
		after = host_ns(CLOCK_MONOTONIC);
		if (after - before < best) {
			best = after - before;
			*tsc = t;
			*mono = after;
			*real = r + (after - before);
		}
	}
	return 0;
}

void
vm_vdso_sync(struct vm *vm)
{
	struct keep_vvar *v = (struct keep_vvar *)(vm->mem + GUEST_VVAR);
	uint64_t tsc = 0, mono = 0, real = 0, mult, guest, now;
	int khz;

	if (vm_vdso_base() == 0)
		return;
	/* /sys is not read here: a process that never called
	 * vmm_prepare_clocks (tsc_usable -1) gets no vDSO, since a vm
	 * process's filter kills an open of /sys. */
	if (tsc_usable != 1)
		mult = 0;
	else if (vm->on_trap) {
		if ((mult = host_tsc_mult()) == 0) {
			/* Not measured closely enough yet: ask again at a
			 * call a millisecond on (vm_vdso_tick). */
			v->enabled = 0;
			now = vm_now_us();
			vm->vdso_sync_us = now > VDSO_RESYNC_US
			    ? now - VDSO_RESYNC_US + TSC_RETRY_US
			    : 1;
			return;
		}
	} else {
		khz = ioctl(vm->vcpufd, KVM_GET_TSC_KHZ, 0);
		mult = khz > 0 ? (1000000ULL << VVAR_SHIFT) / (uint64_t)khz : 0;
	}
	if (mult == 0 || pair_clocks(vm, &tsc, &mono, &real) != 0) {
		v->enabled = 0; /* every clock call exits, as before */
		return;
	}
	if (v->enabled) {
		/* What the guest reads now: never step back from it. */
		guest = v->mono_ns +
		    (uint64_t)(((unsigned __int128)(tsc > v->tsc_base
		                        ? tsc - v->tsc_base
		                        : 0) *
		                   v->mult) >>
		        VVAR_SHIFT);
		if (guest > mono) {
			real += guest - mono;
			mono = guest;
		}
		/* The same offset unless the wall clock was set: a new
		 * estimate a few microseconds lower would run the guest's
		 * CLOCK_REALTIME backwards while CLOCK_MONOTONIC goes on. */
		if ((real - mono) - (v->real_ns - v->mono_ns) +
		        VDSO_WALL_STEP_NS <
		    2 * VDSO_WALL_STEP_NS)
			real = mono + (v->real_ns - v->mono_ns);
	}
	v->tsc_base = tsc;
	v->mult = mult;
	v->mono_ns = mono;
	v->real_ns = real;
	v->enabled = 1;
	vm->vdso_sync_us = vm_now_us();
}

/*
 * The host's CLOCK_REALTIME can be set (an NTP daemon's step, an
 * operator's date), which moves it against CLOCK_MONOTONIC; Linux's
 * vDSO follows at once. The page's real-time base follows when the
 * guest asks the VMM for the wall time, so a guest's vDSO reading after
 * its own system call's never lies behind it, and at each new base
 * (within a second) otherwise. Only a pairing whose two monotonic reads
 * lie close is trusted; the offset is taken against the earlier one,
 * so the guest's wall clock may lead the host's by that gap, never
 * trail it. The base's offset leads by up to a window too, so only a
 * change past both windows and the slack is a step (VDSO_WALL_STEP_NS).
 */

void
vm_vdso_follow_wall(struct vm *vm)
{
	struct keep_vvar *v = (struct keep_vvar *)(vm->mem + GUEST_VVAR);
	uint64_t before, real, after, offset;

	if (vm_vdso_base() == 0 || !v->enabled)
		return;
	before = host_ns(CLOCK_MONOTONIC);
	real = host_ns(CLOCK_REALTIME);
	after = host_ns(CLOCK_MONOTONIC);
	if (after - before > VDSO_WINDOW_NS)
		return;
	offset = real - before;
	if (offset - (v->real_ns - v->mono_ns) + VDSO_WALL_STEP_NS >
	    2 * VDSO_WALL_STEP_NS)
		v->real_ns = v->mono_ns + offset;
}

void
vm_vdso_tick(struct vm *vm)
{
	if (vm->vdso_sync_us != 0 &&
	    vm_now_us() - vm->vdso_sync_us >= VDSO_RESYNC_US)
		vm_vdso_sync(vm);
}

/*
 * The vDSO's data page (docs/vmm.md "Time"): what the VMM writes at
 * GUEST_VVAR and the guest's vDSO (vdso/vdso.c) reads. The guest's
 * clocks are the host's clocks at a base instant plus the guest's TSC
 * since then, converted to nanoseconds:
 *
 *	ns = base_ns + ((tsc - tsc_base) * mult) >> VVAR_SHIFT
 *
 * The page is user read-only in the guest and written by the VMM only
 * while the vCPU is stopped, so it needs no sequence counter.
 */
#ifndef KEEP_VDSO_VVAR_H
#define KEEP_VDSO_VVAR_H

#include <stdint.h>

#define VVAR_SHIFT 32

struct keep_vvar {
	uint32_t enabled; /* 0: every call goes to the VMM (syscall) */
	uint32_t pad;
	uint64_t tsc_base; /* the guest's TSC at the base instant */
	uint64_t mult; /* nanoseconds per TSC tick << VVAR_SHIFT */
	uint64_t mono_ns; /* CLOCK_MONOTONIC at the base instant */
	uint64_t real_ns; /* CLOCK_REALTIME at the base instant */
};

#endif

/*
 * Signal actions, masks and the alternate stack. No signal is ever
 * delivered to the guest yet, so nothing is recorded: the old action
 * and the old mask read as the defaults.
 */
#include <errno.h>
#include <stdint.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

int64_t
sys_rt_sigaction(struct vm *vm, const uint64_t a[6])
{
	uint8_t zero[32] = { 0 }; /* struct kernel_sigaction: SIG_DFL */

	return a[2] != 0 ? vm_put(vm, a[2], zero, sizeof(zero)) : 0;
}

int64_t
sys_rt_sigprocmask(struct vm *vm, const uint64_t a[6])
{
	uint64_t zero = 0; /* nothing blocked */

	return a[2] != 0 ? vm_put(vm, a[2], &zero, sizeof(zero)) : 0;
}

int64_t
sys_sigaltstack(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return 0;
}

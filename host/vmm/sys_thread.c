/*
 * Thread calls of a one-thread guest: its tid is 1, and a futex has no
 * other thread to wait for or to wake.
 */
#include <errno.h>

#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define FUTEX_CMD_MASK 0x7f
#define FUTEX_WAIT_ 0

int64_t
sys_gettid(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return vm->pid; /* one thread per process: its pid */
}

int64_t
sys_set_tid_address(struct vm *vm, const uint64_t a[6])
{
	(void)a;
	return vm->pid;
}

/* One thread, so a wait never blocks on another. */
int64_t
sys_futex(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	return (a[1] & FUTEX_CMD_MASK) == FUTEX_WAIT_ ? -EAGAIN : 0;
}

/* The emptiest template (docs/templates.md): parks at its ready call at
 * once and, in each clone, exits 0 as soon as the call returns; cold, it
 * exits 3. bench/templates.sh times its clones against the KVM floor. */
#include <sys/syscall.h>
#include <unistd.h>

#include "../../guest/include/keep.h"

static char request[KEEP_READY_MIN];

int
main(void)
{
	return syscall(KEEP_SYS_READY, request, sizeof(request)) < 0 ? 3 : 0;
}

/* Calls the host does not serve get ENOSYS, and the guest goes on. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main(void)
{
	long a = syscall(999);
	int ea = errno;
	long c = syscall(435 /* clone3 */, 0, 0);
	int ec = errno;

	printf(
	    "999: %ld %s\nclone3: %ld %s\n", a, strerror(ea), c, strerror(ec));
	return 0;
}

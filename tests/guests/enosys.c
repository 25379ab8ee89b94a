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
	pid_t p = fork();
	int ep = errno;

	printf("999: %ld %s\nfork: %d %s\n", a, strerror(ea), (int)p,
	    strerror(ep));
	return 0;
}

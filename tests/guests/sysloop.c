/* Makes N cheap system calls (argv[1]): bench/boot times the round trip. */
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;

	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

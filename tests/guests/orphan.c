/* Hostile trees: a zombie never reaped, a child that outlives its
 * parent, a process that waits for ever on a child that never ends. The
 * first process then exits: the run ends and nothing is left behind. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
	pid_t p;

	if (fork() == 0)
		_exit(0); /* a zombie: never reaped */
	if ((p = fork()) == 0) {
		/* Its parent exits first: an orphan that spins. */
		if (fork() == 0) {
			for (;;)
				;
		}
		_exit(0);
	}
	waitpid(p, NULL, 0);
	/* Its line comes before the first process's: waited for, not
	 * slept on (a fork can take longer than any guess). */
	if ((p = fork()) == 0) {
		printf("orphan's ppid: %d\n", getppid() == 1);
		fflush(stdout);
		_exit(0);
	}
	waitpid(p, NULL, 0);
	printf("first process exits\n");
	return argc > 1 ? atoi(argv[1]) : 0;
}

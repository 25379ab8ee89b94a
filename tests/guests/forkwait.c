/* fork, wait4, getpid/getppid, exit statuses, copy-on-write memory and a
 * grandchild: what a shell does with its children. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char big[4 << 20];

int
main(void)
{
	int i, st, n = 0;
	pid_t p, w;

	memset(big, 'p', sizeof(big));
	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 1; i <= 3; i++) {
		if ((p = fork()) == -1) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			/* The child's writes stay its own. */
			memset(big, 'c', sizeof(big));
			printf(
			    "child %d: ppid ok %d\n", i, getppid() != getpid());
			_exit(10 + i);
		}
		if ((w = waitpid(p, &st, 0)) != p || !WIFEXITED(st)) {
			printf("waitpid %d: %d status %#x\n", i, (int)w, st);
			return 1;
		}
		printf("child %d exited %d\n", i, WEXITSTATUS(st));
	}
	printf("parent memory intact: %d\n",
	    big[0] == 'p' && big[sizeof(big) - 1] == 'p');
	/* A grandchild: the child waits for its own child. */
	if ((p = fork()) == 0) {
		if ((p = fork()) == 0)
			_exit(7);
		waitpid(p, &st, 0);
		_exit(WEXITSTATUS(st) + 1);
	}
	waitpid(p, &st, 0);
	printf("grandchild chain: %d\n", WEXITSTATUS(st));
	/* Several at once, reaped in any order. */
	for (i = 0; i < 5; i++)
		if (fork() == 0)
			_exit(i);
	while ((w = wait(&st)) > 0)
		n += WEXITSTATUS(st);
	printf("five children, sum %d\n", n);
	/* A child killed by a signal. */
	if ((p = fork()) == 0) {
		for (;;)
			pause();
	}
	kill(p, SIGTERM);
	waitpid(p, &st, 0);
	printf("killed: %d by %d\n", WIFSIGNALED(st), WTERMSIG(st));
	printf("no more children: %d\n", wait(&st) == -1);
	return 3;
}

/*
 * The process costs bench/trap.sh sets beside native runs of the same
 * binary: `fork N`, N times fork, _exit in the child and waitpid in the
 * parent; `pipe MIB`, MIB mebibytes from a child through a pipe to its
 * parent in 64 KiB writes and reads. Exit status 0 when every step
 * worked.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHUNK 65536

static int
forks(long n)
{
	int st;

	for (long i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == -1)
			return 1;
		if (p == 0)
			_exit(0);
		if (waitpid(p, &st, 0) != p || !WIFEXITED(st))
			return 1;
	}
	return 0;
}

static int
pipes(long mib)
{
	static char buf[CHUNK];
	long long want = (long long)mib << 20, got = 0;
	int fd[2], st;
	ssize_t n;
	pid_t p;

	if (pipe(fd) == -1 || (p = fork()) == -1)
		return 1;
	if (p == 0) {
		close(fd[0]);
		memset(buf, 'p', sizeof(buf));
		for (long long sent = 0; sent < want; sent += n)
			if ((n = write(fd[1], buf, CHUNK)) <= 0)
				_exit(1);
		_exit(0);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf, sizeof(buf))) > 0)
		got += n;
	return waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0 || got != want;
}

int
main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (argc > 1 && strcmp(argv[1], "fork") == 0)
		return forks(n);
	if (argc > 1 && strcmp(argv[1], "pipe") == 0)
		return pipes(n);
	return 2;
}

/*
 * bench/procs: fork+exit+wait round trips, pipe throughput, thread
 * create+join, a condition-variable ping-pong between two threads, and a
 * shell's work through /bin/busybox (`sh -c 'echo x | cat'`, and a loop
 * of 1,000 external commands), timed inside the program, so the same
 * static binary runs natively and in keep (`make bench-procs` prints
 * both side by side, with busybox in keep's workspace).
 * Usage: procs [forks] [pipe MiB]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int turn, rounds = 2000;

static void *
nothing(void *arg)
{
	return arg;
}

static void *
ponger(void *arg)
{
	int i;

	for (i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mu);
		while (turn != 1)
			pthread_cond_wait(&cv, &mu);
		turn = 0;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	return arg;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds for `busybox sh -c script` with its output read from a pipe,
 * or -1 when it did not exit 0. */
static double
shell(const char *script)
{
	double t = now();
	char b[512];
	pid_t p;
	int st, fd[2];

	if (pipe(fd) != 0)
		return -1;
	if ((p = fork()) == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/bin/busybox", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while (read(fd[0], b, sizeof(b)) > 0)
		;
	close(fd[0]);
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		return -1;
	return now() - t;
}

int
main(int argc, char **argv)
{
	int forks = argc > 1 ? atoi(argv[1]) : 200;
	int mib = argc > 2 ? atoi(argv[2]) : 64;
	static char buf[65536], big[16 << 20];
	double t;
	int i, fd[2], st;
	pid_t p;
	ssize_t n;
	long long total = 0;

	memset(big, 1, sizeof(big)); /* 16 MiB of touched memory */
	t = now();
	for (i = 0; i < forks; i++) {
		if ((p = fork()) == 0)
			_exit(0);
		waitpid(p, &st, 0);
	}
	printf("fork+exit+wait: %.1f us\n", (now() - t) / forks * 1e6);
	if (pipe(fd) != 0)
		return 1;
	t = now();
	if ((p = fork()) == 0) {
		close(fd[0]);
		for (i = 0; i < mib * 16; i++)
			if (write(fd[1], buf, sizeof(buf)) != sizeof(buf))
				_exit(1);
		_exit(0);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf, sizeof(buf))) > 0)
		total += n;
	waitpid(p, &st, 0);
	printf("pipe: %.0f MiB/s\n", (double)total / (1 << 20) / (now() - t));
	t = now();
	for (i = 0; i < forks; i++) {
		pthread_t th;

		pthread_create(&th, NULL, nothing, NULL);
		pthread_join(th, NULL);
	}
	printf("thread create+join: %.1f us\n", (now() - t) / forks * 1e6);
	{
		pthread_t th;

		pthread_create(&th, NULL, ponger, NULL);
		t = now();
		for (i = 0; i < rounds; i++) {
			pthread_mutex_lock(&mu);
			turn = 1;
			pthread_cond_signal(&cv);
			while (turn != 0)
				pthread_cond_wait(&cv, &mu);
			pthread_mutex_unlock(&mu);
		}
		printf("futex ping-pong (condition variable): %.1f us a round "
		       "trip\n",
		    (now() - t) / rounds * 1e6);
		pthread_join(th, NULL);
	}
	if (access("/bin/busybox", X_OK) != 0) {
		printf("shell: no /bin/busybox\n");
		return 0;
	}
	for (i = 0, t = 0; i < 20 && t >= 0; i++) {
		double one = shell("echo x | cat");

		t = one < 0 ? -1 : t + one;
	}
	printf("sh -c 'echo x | cat': %.0f us\n", t < 0 ? -1 : t / 20 * 1e6);
	t = shell("i=0; while [ $i -lt 1000 ]; do /bin/busybox true; "
	          "i=$((i+1)); done");
	printf("shell loop, 1000 external commands: %.1f ms, %.0f us each\n",
	    t * 1e3, t * 1e3);
	return 0;
}

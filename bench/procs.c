/*
 * bench/procs: fork+exit+wait round trips, pipe throughput, thread
 * create+join and a condition-variable ping-pong between two threads, timed
 * inside the program, so the same static binary runs natively and in
 * keep (`make bench-procs` prints both side by side).
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
	return 0;
}

/* Threads: create and join, a mutex under contention, a condition
 * variable ping-pong, a timed wait, a spinning thread that needs the
 * scheduler's time slice, tids. "threads spin": a thread that spins past
 * the run's time limit. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static long counter;
static int turn, rounds = 1000;
static volatile int flag;
static pid_t tids[4];

static void *
adder(void *arg)
{
	int i;

	tids[(long)arg] = (pid_t)syscall(SYS_gettid);
	for (i = 0; i < 10000; i++) {
		pthread_mutex_lock(&mu);
		counter++;
		pthread_mutex_unlock(&mu);
		if (i % 1000 == 0)
			sched_yield();
	}
	return (void *)((long)arg * 10);
}

static void *
ponger(void *arg)
{
	int i;

	(void)arg;
	for (i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mu);
		while (turn != 1)
			pthread_cond_wait(&cv, &mu);
		turn = 0;
		pthread_cond_signal(&cv);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

static void *
setter(void *arg)
{
	(void)arg;
	flag = 1;
	return NULL;
}

static void *
spinner(void *arg)
{
	(void)arg;
	for (;;)
		;
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t t[4], p;
	void *ret;
	long sum = 0, i;
	int distinct = 1, rc;
	struct timespec ts;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "spin") == 0) {
		pthread_create(&p, NULL, spinner, NULL);
		printf("joining a thread that never ends\n");
		pthread_join(p, NULL);
		return 0;
	}
	for (i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, adder, (void *)i);
	for (i = 0; i < 4; i++) {
		pthread_join(t[i], &ret);
		sum += (long)ret;
	}
	for (i = 0; i < 4; i++)
		if (tids[i] == getpid() || (i > 0 && tids[i] == tids[i - 1]))
			distinct = 0;
	printf("4 threads, mutex: %ld, join values %ld, tids distinct %d\n",
	    counter, sum, distinct);

	pthread_create(&p, NULL, ponger, NULL);
	for (i = 0; i < rounds; i++) {
		pthread_mutex_lock(&mu);
		turn = 1;
		pthread_cond_signal(&cv);
		while (turn != 0)
			pthread_cond_wait(&cv, &mu);
		pthread_mutex_unlock(&mu);
	}
	pthread_join(p, NULL);
	printf("condition ping-pong: %d rounds\n", rounds);

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += 100000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&mu);
	rc = pthread_cond_timedwait(&cv, &mu, &ts);
	pthread_mutex_unlock(&mu);
	printf("timed wait: %s\n", rc == ETIMEDOUT ? "ETIMEDOUT" : "?");

	/* The main thread spins on a flag only another thread sets. */
	pthread_create(&p, NULL, setter, NULL);
	while (!flag)
		;
	pthread_join(p, NULL);
	printf("a spinning thread gave way: %d\n", flag);
	return 0;
}

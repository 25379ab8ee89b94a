/*
 * Sleeping calls sleep: nanosleep, clock_nanosleep (relative and
 * TIMER_ABSTIME), and poll, ppoll, select and pselect6 with timeouts
 * and nothing ready. Each line says whether at least the time asked for
 * passed on CLOCK_MONOTONIC (a lower bound only: no test here depends on
 * how fast the machine is). With "stdin", poll waits on stdin instead.
 * With "forever", it sleeps until the run's time limit stops it.
 */
#define _GNU_SOURCE
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <time.h>

#define WAIT_MS 150

static long long
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void
report(const char *what, long long start, int rc)
{
	long long took = now_ms() - start;

	printf("%s: rc %d, %s\n", what, rc,
	    took >= WAIT_MS ? "slept" : "returned early");
}

int
main(int argc, char **argv)
{
	struct timespec ts = { 0, WAIT_MS * 1000000L }, abs;
	struct timeval tv;
	long long t;
	int rc;

	if (argc > 1 && strcmp(argv[1], "forever") == 0) {
		struct timespec day = { 86400, 0 };

		nanosleep(&day, NULL);
		printf("woke up\n");
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "stdin") == 0) {
		struct pollfd p = { 0, POLLIN, 0 };

		t = now_ms();
		rc = poll(&p, 1, WAIT_MS);
		report("poll stdin", t, rc);
		printf("revents: %d\n", p.revents);
		return 0;
	}
	t = now_ms();
	rc = nanosleep(&ts, NULL);
	report("nanosleep", t, rc);
	t = now_ms();
	rc = clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
	report("clock_nanosleep", t, rc);
	t = now_ms();
	clock_gettime(CLOCK_MONOTONIC, &abs);
	abs.tv_nsec += WAIT_MS * 1000000L;
	if (abs.tv_nsec >= 1000000000L) {
		abs.tv_sec++;
		abs.tv_nsec -= 1000000000L;
	}
	rc = clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &abs, NULL);
	report("clock_nanosleep abstime", t, rc);
	t = now_ms();
	rc = poll(NULL, 0, WAIT_MS);
	report("poll", t, rc);
	t = now_ms();
	rc = ppoll(NULL, 0, &ts, NULL);
	report("ppoll", t, rc);
	tv.tv_sec = 0;
	tv.tv_usec = WAIT_MS * 1000;
	t = now_ms();
	rc = select(0, NULL, NULL, NULL, &tv);
	report("select", t, rc);
	t = now_ms();
	rc = pselect(0, NULL, NULL, NULL, &ts, NULL);
	report("pselect6", t, rc);
	{
		/* A file is ready at once: no sleep. */
		struct pollfd p = { 1, POLLOUT, 0 };

		rc = poll(&p, 1, 10000);
		printf("poll stdout: rc %d revents %d\n", rc, p.revents);
	}
	return 0;
}

/* epoll and eventfd: counters, semaphores, non-blocking reads, level
 * and edge triggering, EPOLLONESHOT, real timeouts, an interest list
 * and an eventfd shared with a forked child, the errors. "events stdio":
 * stdout is writable and stdin readable at its end (run with both on
 * pipes natively). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long
ms_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 +
	    (t.tv_nsec - t0->tv_nsec) / 1000000;
}

static const char *
err(int rc)
{
	return rc == 0 ? "ok" : strerror(errno);
}

/* Wait and print what came: count, then each event's data and mask. */
static void
show(const char *what, int ep, int timeout)
{
	struct epoll_event ev[8];
	int n, i;

	n = epoll_wait(ep, ev, 8, timeout);
	printf("%s: %d", what, n);
	for (i = 0; i < n; i++)
		printf(" [%llu %s%s%s]", (unsigned long long)ev[i].data.u64,
		    ev[i].events & EPOLLIN ? "IN" : "",
		    ev[i].events & EPOLLOUT ? "OUT" : "",
		    ev[i].events & EPOLLHUP ? "HUP" : "");
	printf("\n");
}

static int
stdio(void)
{
	struct epoll_event e = { .events = EPOLLOUT, .data.u64 = 1 };
	int ep = epoll_create1(EPOLL_CLOEXEC);
	char c;

	while (read(0, &c, 1) > 0) /* to its end: the writer is gone */
		;
	printf("add stdout: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, 1, &e)));
	e.events = EPOLLIN;
	e.data.u64 = 0;
	printf("add stdin: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, 0, &e)));
	fflush(stdout);
	show("stdio ready", ep, 1000);
	printf("del stdout: %s\n", err(epoll_ctl(ep, EPOLL_CTL_DEL, 1, NULL)));
	show("stdin only", ep, 1000);
	return 0;
}

int
main(int argc, char **argv)
{
	struct epoll_event e;
	struct timespec t0;
	uint64_t v;
	int efd, ep, p[2], st, i;
	pid_t c;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "stdio") == 0)
		return stdio();

	/* eventfd: a counter; a semaphore; non-blocking when empty. */
	efd = eventfd(2, 0);
	v = 3;
	write(efd, &v, 8);
	read(efd, &v, 8);
	printf("eventfd counter: %llu\n", (unsigned long long)v);
	close(efd);
	efd = eventfd(2, EFD_SEMAPHORE | EFD_NONBLOCK);
	for (i = 0; i < 3; i++) {
		v = 0;
		st = (int)read(efd, &v, 8);
		printf("semaphore read %d: %d %llu %s\n", i, st,
		    (unsigned long long)v, st < 0 ? strerror(errno) : "");
	}
	printf(
	    "short read: %s\n", read(efd, &v, 4) < 0 ? strerror(errno) : "?");
	v = UINT64_MAX;
	printf("write of 2^64-1: %s\n",
	    write(efd, &v, 8) < 0 ? strerror(errno) : "?");
	close(efd);
	printf("eventfd flags: %s\n",
	    eventfd(0, 0x40000) < 0 ? strerror(errno) : "?");

	/* epoll over a pipe and an eventfd. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	pipe(p);
	efd = eventfd(0, EFD_NONBLOCK);
	e.events = EPOLLIN;
	e.data.u64 = 100;
	printf("add pipe: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e)));
	printf("add again: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e)));
	e.events = EPOLLIN | EPOLLET;
	e.data.u64 = 200;
	printf("add eventfd: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e)));
	printf("add itself: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, ep, &e)));
	printf("add fd 99: %s\n", err(epoll_ctl(ep, EPOLL_CTL_ADD, 99, &e)));
	printf("ctl on a pipe: %s\n",
	    err(epoll_ctl(p[0], EPOLL_CTL_ADD, efd, &e)));
	printf("bad op: %s\n", err(epoll_ctl(ep, 7, efd, &e)));
	printf("maxevents 0: %s\n",
	    epoll_wait(ep, &e, 0, 0) < 0 ? strerror(errno) : "?");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	show("nothing yet", ep, 200);
	printf("the timeout was waited: %d\n", ms_since(&t0) >= 200);

	write(p[1], "ab", 2);
	v = 5;
	write(efd, &v, 8);
	show("pipe and eventfd", ep, -1);
	show("level: the pipe again, edge: not the eventfd", ep, 0);
	write(efd, &v, 8);
	show("a new edge", ep, 0);
	read(p[0], &st, 2);
	show("pipe drained", ep, 0);

	/* EPOLLONESHOT until re-armed with MOD. */
	e.events = EPOLLIN | EPOLLONESHOT;
	e.data.u64 = 101;
	printf("mod pipe: %s\n", err(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e)));
	write(p[1], "c", 1);
	show("one shot", ep, 0);
	show("and no more", ep, 0);
	printf("rearm: %s\n", err(epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e)));
	show("rearmed", ep, 0);
	read(p[0], &st, 1);
	printf(
	    "del eventfd: %s\n", err(epoll_ctl(ep, EPOLL_CTL_DEL, efd, NULL)));
	printf("del again: %s\n", err(epoll_ctl(ep, EPOLL_CTL_DEL, efd, NULL)));

	/* A forked child shares the interest list and the eventfd: it
	 * signals, the parent's wait (no timeout) wakes. */
	e.events = EPOLLIN;
	e.data.u64 = 300;
	epoll_ctl(ep, EPOLL_CTL_ADD, efd, &e);
	read(efd, &v, 8);
	if ((c = fork()) == 0) {
		struct timespec d = { 0, 100000000 };

		nanosleep(&d, NULL);
		v = 7;
		write(efd, &v, 8);
		_exit(0);
	}
	show("the child's eventfd write", ep, -1);
	read(efd, &v, 8);
	printf("the child wrote %llu\n", (unsigned long long)v);
	waitpid(c, &st, 0);

	/* The write end closed: the read end hangs up. */
	close(p[1]);
	e.events = EPOLLIN;
	e.data.u64 = 102;
	epoll_ctl(ep, EPOLL_CTL_MOD, p[0], &e);
	show("writer gone", ep, 0);
	return 0;
}

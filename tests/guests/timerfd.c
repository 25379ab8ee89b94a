/*
 * timerfd as Linux gives it (host/vmm/sys_event.c): relative and
 * absolute timers on CLOCK_MONOTONIC and CLOCK_REALTIME, an interval's
 * expirations counted, timerfd_gettime, the old value settime returns,
 * poll and epoll, a blocking read in a forked child, disarming, and
 * Linux's EAGAIN, EINVAL and EBADF; one line per check, the same
 * natively and in keep. With an argument, `keep`: the alarm clocks,
 * which need a capability a test run as root holds.
 */
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lines.h"

#define MS 1000000L

static struct itimerspec
spec(long value_ns, long interval_ns)
{
	struct itimerspec t;

	t.it_value.tv_sec = value_ns / 1000000000L;
	t.it_value.tv_nsec = value_ns % 1000000000L;
	t.it_interval.tv_sec = interval_ns / 1000000000L;
	t.it_interval.tv_nsec = interval_ns % 1000000000L;
	return t;
}

int
main(int argc, char **argv)
{
	struct itimerspec t, old;
	struct epoll_event ev, got;
	struct pollfd p;
	struct timespec now;
	uint64_t n = 0;
	int fd, ep, efd, st, sv[2];

	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1) {
		say("CLOCK_REALTIME_ALARM",
		    timerfd_create(CLOCK_REALTIME_ALARM, 0));
		say("CLOCK_BOOTTIME_ALARM",
		    timerfd_create(CLOCK_BOOTTIME_ALARM, 0));
		return 0;
	}
	say("a process clock", timerfd_create(CLOCK_PROCESS_CPUTIME_ID, 0));
	say("a bad flag", timerfd_create(CLOCK_MONOTONIC, 0x10));
	fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	say("create", fd >= 0 ? 0 : -1);
	say("read unarmed", read(fd, &n, sizeof(n)));
	say("read into 4 bytes", read(fd, &n, 4));
	t = spec(30 * MS, 20 * MS);
	say("settime relative", timerfd_settime(fd, 0, &t, NULL));
	timerfd_gettime(fd, &t);
	printf("gettime: interval %ld ms, armed %d\n",
	    t.it_interval.tv_nsec / MS,
	    t.it_value.tv_sec == 0 && t.it_value.tv_nsec > 0 &&
	        t.it_value.tv_nsec <= 30 * MS);
	p.fd = fd;
	p.events = POLLIN;
	say("poll until it fires", poll(&p, 1, 1000));
	usleep(50000);
	say("read", read(fd, &n, sizeof(n)));
	printf("expirations >= 2: %d\n", n >= 2);
	say("read again", read(fd, &n, sizeof(n)));

	ep = epoll_create1(0);
	ev.events = EPOLLIN;
	ev.data.u64 = 7;
	epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
	say("epoll_wait", epoll_wait(ep, &got, 1, 1000));
	printf("epoll data %llu\n", (unsigned long long)got.data.u64);
	read(fd, &n, sizeof(n));

	t = spec(0, 0);
	say("disarm", timerfd_settime(fd, 0, &t, &old));
	printf("old interval %ld ms\n", old.it_interval.tv_nsec / MS);
	say("poll disarmed", poll(&p, 1, 60));
	t = spec(-1, 0);
	say("a negative time", timerfd_settime(fd, 0, &t, NULL));
	t = spec(0, 0);
	say("a bad settime flag", timerfd_settime(fd, 0x10, &t, NULL));
	efd = eventfd(0, 0);
	say("settime on an eventfd", timerfd_settime(efd, 0, &t, NULL));
	say("gettime on a closed descriptor", timerfd_gettime(99, &t));

	/* Absolute, on the real-time clock, already past: fires at once. */
	fd = timerfd_create(CLOCK_REALTIME, 0);
	clock_gettime(CLOCK_REALTIME, &now);
	t.it_value = now;
	t.it_value.tv_sec -= 1;
	t.it_interval.tv_sec = t.it_interval.tv_nsec = 0;
	say("settime absolute in the past",
	    timerfd_settime(fd, TFD_TIMER_ABSTIME, &t, NULL));
	say("blocking read", read(fd, &n, sizeof(n)));
	printf("expirations %llu\n", (unsigned long long)n);

	/* A blocking read in a forked child, the timer armed by the parent. */
	fd = timerfd_create(CLOCK_MONOTONIC, 0);
	fflush(stdout);
	if (fork() == 0) {
		ssize_t r = read(fd, &n, sizeof(n));

		printf("the child's blocking read: %zd, %llu\n", r,
		    (unsigned long long)n);
		_exit(0);
	}
	usleep(100000);
	t = spec(50 * MS, 0);
	timerfd_settime(fd, 0, &t, NULL);
	wait(&st);
	printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);

	/* A timerfd passed to another process (SCM_RIGHTS) is one there. */
	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	fflush(stdout);
	if (fork() == 0) {
		if ((fd = fd_take(sv[1])) < 0)
			_exit(1);
		t = spec(0, 0);
		say("a passed timerfd's gettime", timerfd_gettime(fd, &t));
		printf("its interval %ld ms\n", t.it_interval.tv_nsec / MS);
		_exit(0);
	}
	fd = timerfd_create(CLOCK_MONOTONIC, 0);
	t = spec(10000 * MS, 30 * MS);
	timerfd_settime(fd, 0, &t, NULL);
	fd_pass(sv[0], fd);
	wait(&st);
	printf("child: %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return 0;
}

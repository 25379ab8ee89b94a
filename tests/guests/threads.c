/* Threads: create and join, a mutex under contention, a condition
 * variable ping-pong, a timed wait, a spinning thread that needs the
 * scheduler's time slice, tids, raise() and pthread_kill from a thread
 * that is not the first (tgkill), and calls that block (a pipe read,
 * poll, epoll_wait, a sleep) while the other threads go on, the one
 * that will wake them among them; sigsuspend and pause in one thread
 * while another works and then sends the signal that ends the wait.
 * "threads spin": a thread that spins past the run's time limit;
 * "threads calls": two threads that make system calls without end, past
 * it (the time slice's kick then mostly lands inside a call);
 * "threads wait": threads that all wait past it (a join, a read, pause).
 * Signals sent to one thread (pthread_kill): a thread that spins
 * without a call takes its own (Go preempts goroutines so), one that
 * blocks it keeps it pending for itself alone, one asleep wakes. */
#include <errno.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
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

static volatile sig_atomic_t got_usr1;

static void
on_usr1(int sig)
{
	(void)sig;
	got_usr1++;
}

/* tgkill from a second thread: to itself (raise), to the first thread,
 * and to a tid of no thread of ours. */
static void *
raiser(void *arg)
{
	pthread_t first = *(pthread_t *)arg;
	long rc;

	raise(SIGUSR1);
	pthread_kill(first, SIGUSR1);
	rc = syscall(SYS_tgkill, getpid(), 999999, SIGUSR1);
	return (void *)(long)(rc == -1 && errno == ESRCH);
}

static int pfd[2];
static volatile int slept, started;

/* Each blocks until the first thread writes to the pipe. */
static void *
pipe_reader(void *arg)
{
	char c = 0;

	(void)arg;
	started = 1;
	return (void *)(long)(read(pfd[0], &c, 1) == 1 ? c : -1);
}

static void *
poller(void *arg)
{
	struct pollfd p = { .fd = pfd[0], .events = POLLIN };
	char c = 0;

	(void)arg;
	started = 1;
	if (poll(&p, 1, -1) != 1 || read(pfd[0], &c, 1) != 1)
		return (void *)-1L;
	return (void *)(long)c;
}

static void *
epoller(void *arg)
{
	struct epoll_event e = { .events = EPOLLIN };
	int ep = epoll_create1(0);
	char c = 0;

	(void)arg;
	epoll_ctl(ep, EPOLL_CTL_ADD, pfd[0], &e);
	started = 1;
	if (epoll_wait(ep, &e, 1, -1) != 1 || read(pfd[0], &c, 1) != 1)
		c = -1;
	close(ep);
	return (void *)(long)c;
}

/* Forks a child that ends when the first thread writes to the pipe,
 * and waits for it. */
static void *
waiter(void *arg)
{
	pid_t c;
	int st = 0;
	char b;

	(void)arg;
	if ((c = fork()) == 0)
		_exit(read(pfd[0], &b, 1) == 1 ? 7 : 1);
	started = 1;
	if (waitpid(c, &st, 0) != c)
		return (void *)-1L;
	return (void *)(long)WEXITSTATUS(st);
}

/* Sleeps while the first thread spins until it is done. */
static void *
sleeper(void *arg)
{
	struct timespec d = { 0, 50000000 };

	(void)arg;
	nanosleep(&d, NULL);
	slept = 1;
	return NULL;
}

static void *
setter(void *arg)
{
	(void)arg;
	flag = 1;
	return NULL;
}

static volatile sig_atomic_t alarms;

static void
on_alarm_count(int sig)
{
	(void)sig;
	alarms++;
}

/* Waits in poll past the first thread's SIGALRM, then writes what the
 * first thread's read waits for. */
static void *
late_writer(void *arg)
{
	(void)arg;
	poll(NULL, 0, 200);
	write(pfd[1], "r", 1);
	return NULL;
}

static volatile sig_atomic_t handled_on, steps;

static void
on_wake(int sig)
{
	(void)sig;
	handled_on = (pid_t)syscall(SYS_gettid) == getpid() ? 1 : 2;
}

/* Works while the first thread is in sigsuspend, then arms the timer
 * whose SIGALRM ends it (blocked here: the first thread takes it). */
static void *
stepper(void *arg)
{
	struct timespec d = { 0, 5000000 };
	struct itimerval it = { { 0, 0 }, { 0, 10000 } };
	int i;

	(void)arg;
	for (i = 0; i < 5; i++) {
		nanosleep(&d, NULL);
		steps++;
	}
	setitimer(ITIMER_REAL, &it, NULL);
	return NULL;
}

static volatile int pausing, woke;

/* Pauses with SIGUSR1 let through, which the first thread blocks: the
 * process's SIGUSR1 can only end this pause. */
static void *
pauser(void *arg)
{
	sigset_t s;
	int rc;

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	pausing = 1;
	rc = pause();
	woke = 1;
	return (void *)(long)(rc == -1 && errno == EINTR);
}

static void *
spinner(void *arg)
{
	(void)arg;
	for (;;)
		;
	return NULL;
}

static void *
caller(void *arg)
{
	(void)arg;
	for (;;)
		getppid();
	return NULL;
}

static volatile pid_t aimed_tid, aimed_on;
static volatile int aimed_stop, aimed_ready, aimed_others;

/* Stops the spinner only on the thread it was sent to. */
static void
on_aimed(int sig)
{
	(void)sig;
	aimed_on = (pid_t)syscall(SYS_gettid);
	if (aimed_on == aimed_tid)
		aimed_stop = 1;
	else
		aimed_others++;
}

static void *
aimed_spinner(void *arg)
{
	(void)arg;
	aimed_tid = (pid_t)syscall(SYS_gettid);
	aimed_ready = 1;
	while (!aimed_stop)
		;
	return NULL;
}

/* Blocks SIGUSR2, is sent it, sees it pending, then lets it in. */
static void *
aimed_blocker(void *arg)
{
	sigset_t s, p;
	long pending;

	(void)arg;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
	aimed_tid = (pid_t)syscall(SYS_gettid);
	aimed_ready = 1;
	while (aimed_ready != 2)
		sched_yield();
	sigpending(&p);
	pending = sigismember(&p, SIGUSR2);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
	return (void *)(pending + 2 * (long)aimed_stop);
}

static void *
aimed_sleeper(void *arg)
{
	struct timespec d = { 5, 0 };
	int rc;

	(void)arg;
	aimed_tid = (pid_t)syscall(SYS_gettid);
	aimed_ready = 1;
	rc = nanosleep(&d, NULL);
	return (void *)(long)(rc == -1 && errno == EINTR);
}

static int aimed_pipe[2];

static void *
aimed_reader(void *arg)
{
	char c = 0;
	ssize_t n;

	(void)arg;
	aimed_tid = (pid_t)syscall(SYS_gettid);
	aimed_ready = 1;
	n = read(aimed_pipe[0], &c, 1);
	return (void *)(long)(n == 1        ? c
	        : n == -1 && errno == EINTR ? 'I'
	                                    : '?');
}

/* Busy for ms milliseconds without a call (clock_gettime is the vDSO's):
 * the time slice, not a call, switches threads meanwhile. */
static void
busy_ms(long ms)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while (
	    (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 <
	    ms);
}

static volatile int susp_ready, susp_got;

static void
on_susp(int sig)
{
	(void)sig;
	susp_got = (pid_t)syscall(SYS_gettid) != getpid();
}

static void *
suspender(void *arg)
{
	sigset_t none;

	(void)arg;
	sigemptyset(&none);
	susp_ready = 1;
	sigsuspend(&none);
	return NULL;
}

/* A signal another thread waits for in sigsuspend, sent by a child
 * while this thread, which blocks it, polls more descriptors than a
 * parked call holds: the waiter takes it, and the poll goes on to the
 * child's write (Linux never wakes it). */
static void
poll_beside_suspend(void)
{
	struct pollfd pf[20];
	struct sigaction sa;
	struct timespec d = { 0, 20000000 }, d2 = { 0, 50000000 };
	sigset_t s, old;
	int pp[20][2], i, rc, err;
	pthread_t p;
	pid_t c;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_susp;
	sigaction(SIGUSR1, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	for (i = 0; i < 20; i++) {
		pipe(pp[i]);
		pf[i].fd = pp[i][0];
		pf[i].events = POLLIN;
	}
	pthread_create(&p, NULL, suspender, NULL);
	while (!susp_ready)
		sched_yield();
	nanosleep(&d, NULL);
	if ((c = fork()) == 0) {
		nanosleep(&d2, NULL);
		kill(getppid(), SIGUSR1);
		nanosleep(&d2, NULL);
		nanosleep(&d2, NULL);
		write(pp[19][1], "x", 1);
		_exit(0);
	}
	rc = poll(pf, 20, -1);
	err = rc == -1 ? errno : 0;
	waitpid(c, NULL, 0);
	pthread_join(p, NULL);
	printf("poll of 20 pipes beside a thread in sigsuspend that takes the "
	       "signal: %d %s, taken there %d\n",
	    rc,
	    err == EINTR ? "EINTR"
	        : err    ? "?"
	                 : "-",
	    (int)susp_got);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (i = 0; i < 20; i++) {
		close(pp[i][0]);
		close(pp[i][1]);
	}
}

static volatile int own_waiting, own_woke;
static volatile pid_t own_on[2];
static volatile int own_n;

static void
on_own(int sig)
{
	(void)sig;
	if (own_n < 2)
		own_on[own_n++] = (pid_t)syscall(SYS_gettid);
}

static void *
own_suspender(void *arg)
{
	sigset_t none;

	(void)arg;
	sigemptyset(&none);
	aimed_tid = (pid_t)syscall(SYS_gettid);
	own_waiting = 1;
	sigsuspend(&none);
	own_woke = 1;
	return NULL;
}

/* A signal the first thread sends itself while it blocks it stays its
 * own: a second thread in sigsuspend that lets it through does not wake
 * for it; the first takes it once it lets it in. */
static void
own_pending_kept(void)
{
	struct sigaction sa;
	struct timespec d = { 0, 50000000 };
	sigset_t s, old;
	pthread_t p;
	int early;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_own;
	sigaction(SIGUSR2, &sa, NULL);
	sigemptyset(&s);
	sigaddset(&s, SIGUSR2);
	pthread_sigmask(SIG_BLOCK, &s, &old);
	own_n = 0;
	pthread_create(&p, NULL, own_suspender, NULL);
	while (!own_waiting)
		sched_yield();
	nanosleep(&d, NULL);
	pthread_kill(pthread_self(), SIGUSR2);
	nanosleep(&d, NULL);
	early = own_woke;
	pthread_sigmask(SIG_UNBLOCK, &s, NULL); /* taken here */
	pthread_kill(p, SIGUSR2); /* ends the other's wait */
	pthread_join(p, NULL);
	printf("a signal a thread sent itself, blocked, beside another in "
	       "sigsuspend: the other woke for it %d, handlers on the first "
	       "%d and on the other %d\n",
	    early, own_n > 0 && own_on[0] == getpid(),
	    own_n > 1 && own_on[1] == aimed_tid);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void
aimed(void)
{
	struct sigaction sa;
	struct timespec d = { 0, 20000000 };
	pthread_t p;
	void *ret;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_aimed;
	sigaction(SIGUSR2, &sa, NULL);
	aimed_ready = aimed_stop = aimed_others = 0;
	pthread_create(&p, NULL, aimed_spinner, NULL);
	while (!aimed_ready)
		sched_yield();
	pthread_kill(p, SIGUSR2);
	pthread_join(p, NULL);
	printf("pthread_kill to a spinning thread: its handler ran there %d, "
	       "elsewhere %d\n",
	    aimed_on == aimed_tid, (int)aimed_others);

	aimed_ready = aimed_stop = aimed_others = 0;
	pthread_create(&p, NULL, aimed_blocker, NULL);
	while (aimed_ready != 1)
		sched_yield();
	pthread_kill(p, SIGUSR2);
	nanosleep(&d, NULL); /* the first thread lets SIGUSR2 in meanwhile */
	aimed_ready = 2;
	pthread_join(p, &ret);
	printf("pthread_kill to a thread that blocks it: pending there %ld, "
	       "taken elsewhere %d, taken there once let in %d\n",
	    (long)ret & 1, (int)aimed_others, aimed_on == aimed_tid);

	aimed_ready = aimed_stop = aimed_others = 0;
	pthread_create(&p, NULL, aimed_sleeper, NULL);
	while (!aimed_ready)
		sched_yield();
	nanosleep(&d, NULL); /* it sleeps meanwhile */
	pthread_kill(p, SIGUSR2);
	pthread_join(p, &ret);
	printf("pthread_kill to a sleeping thread: EINTR %ld, handler there "
	       "%d, elsewhere %d\n",
	    (long)ret, aimed_on == aimed_tid, (int)aimed_others);
	/* A read that the signal's SA_RESTART handler interrupts is made
	 * again, though the thread runs again at a time slice's end. */
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	pipe(aimed_pipe);
	aimed_ready = aimed_stop = aimed_others = 0;
	aimed_on = 0;
	pthread_create(&p, NULL, aimed_reader, NULL);
	while (!aimed_ready)
		sched_yield();
	nanosleep(&d, NULL); /* it blocks meanwhile */
	pthread_kill(p, SIGUSR2);
	busy_ms(50);
	write(aimed_pipe[1], "r", 1);
	pthread_join(p, &ret);
	printf("pthread_kill to a thread in read, SA_RESTART, the sender busy: "
	       "handler there %d, read gave %c\n",
	    aimed_on == aimed_tid, (int)(long)ret);
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
	if (argc > 1 && strcmp(argv[1], "calls") == 0) {
		pthread_create(&p, NULL, caller, NULL);
		printf("two threads in system calls without end\n");
		caller(NULL);
	}
	if (argc > 1 && strcmp(argv[1], "wait") == 0) {
		pipe(pfd);
		pthread_create(&p, NULL, pipe_reader, NULL);
		while (!started)
			sched_yield();
		pthread_create(&t[0], NULL, pauser, NULL);
		while (!pausing)
			sched_yield();
		printf("joining a thread that reads an empty pipe, beside one "
		       "in pause\n");
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

	signal(SIGUSR1, on_usr1);
	p = pthread_self();
	pthread_create(&t[0], NULL, raiser, &p);
	pthread_join(t[0], &ret);
	while (got_usr1 < 2)
		sched_yield();
	printf("tgkill from a thread: %d signals, a stranger tid ESRCH %ld\n",
	    (int)got_usr1, (long)ret);

	pipe(pfd);
	{
		void *(*fn[3])(void *) = { pipe_reader, poller, epoller };
		const char *name[3] = { "read", "poll", "epoll_wait" };
		struct timespec d = { 0, 20000000 };

		for (i = 0; i < 3; i++) {
			started = 0;
			pthread_create(&p, NULL, fn[i], NULL);
			while (!started) /* until it is about to block */
				sched_yield();
			nanosleep(&d, NULL); /* it blocks meanwhile */
			write(pfd[1], "x", 1);
			pthread_join(p, &ret);
			printf("a thread blocked in %s woke with %c\n", name[i],
			    (int)(long)ret);
		}
	}
	started = 0;
	pthread_create(&p, NULL, waiter, NULL);
	while (!started)
		sched_yield();
	{
		struct timespec d = { 0, 20000000 };

		nanosleep(&d, NULL);
	}
	write(pfd[1], "x", 1);
	pthread_join(p, &ret);
	printf("a thread in waitpid while the first let its child end: %ld\n",
	    (long)ret);
	pthread_create(&p, NULL, sleeper, NULL);
	while (!slept)
		;
	pthread_join(p, NULL);
	printf("a thread slept while the first spun: %d\n", slept);

	/* A read that a SA_RESTART handler interrupts while every thread
	 * waits is issued again: the read, not the other thread's poll. */
	{
		struct sigaction sa;
		struct itimerval it = { { 0, 0 }, { 0, 50000 } };
		char c = 0;
		ssize_t n;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_alarm_count;
		sa.sa_flags = SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		pthread_create(&p, NULL, late_writer, NULL);
		setitimer(ITIMER_REAL, &it, NULL);
		n = read(pfd[0], &c, 1);
		pthread_join(p, NULL);
		printf("a read through a SA_RESTART signal: %zd %c, %d alarm\n",
		    n, n == 1 ? c : '?', (int)alarms);
	}

	/* sigsuspend in the first thread while another works. SIGALRM is
	 * blocked outside the wait, so one that came early would wait for it. */
	{
		struct sigaction sa;
		sigset_t s, old, cur;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_wake;
		sigaction(SIGALRM, &sa, NULL);
		sigemptyset(&s);
		sigaddset(&s, SIGALRM);
		pthread_sigmask(SIG_BLOCK, &s, &old);
		pthread_create(&p, NULL, stepper, NULL);
		rc = sigsuspend(&old);
		pthread_sigmask(SIG_SETMASK, NULL, &cur);
		pthread_join(p, NULL);
		printf("sigsuspend while a thread works: %d %s, handler on "
		       "thread %d, its steps %d, SIGALRM blocked again %d\n",
		    rc, rc == -1 && errno == EINTR ? "EINTR" : "?",
		    (int)handled_on, (int)steps, sigismember(&cur, SIGALRM));
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	/* pause in a second thread while the first works, then sends the
	 * process SIGUSR1 (again, should the first come before the pause). */
	{
		struct sigaction sa;
		struct timespec d = { 0, 10000000 };
		sigset_t s, old;
		long work = 0;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_wake;
		sigaction(SIGUSR1, &sa, NULL);
		sigemptyset(&s);
		sigaddset(&s, SIGUSR1);
		pthread_sigmask(SIG_BLOCK, &s, &old);
		handled_on = 0;
		pthread_create(&p, NULL, pauser, NULL);
		while (!pausing)
			sched_yield();
		for (i = 0; i < 1000000; i++)
			work += i % 7;
		while (!woke) {
			kill(getpid(), SIGUSR1);
			nanosleep(&d, NULL);
		}
		pthread_join(p, &ret);
		printf("pause in a thread while the first works (%ld): EINTR "
		       "%ld, handler on thread %d\n",
		    work, (long)ret, (int)handled_on);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	aimed();
	poll_beside_suspend();
	own_pending_kept();
	return 0;
}

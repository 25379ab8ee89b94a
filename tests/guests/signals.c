/* Signals: handlers with siginfo, masks, pending, alarm into a pause and
 * into a busy loop, interval timers, SIGCHLD, a kill to a child with a
 * handler, SIGSEGV and SIGFPE to handlers, the alternate stack, SSE
 * state across a handler, a blocked or ignored signal that cuts short
 * no read, poll or wait. "signals corrupt": a handler that wrecks its
 * own frame (it must only hurt itself). */
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got, code, alrm, chld, ticks;
static sigjmp_buf jb;
static char alt[65536];
static volatile int on_alt;

static void
on_info(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	got = sig;
	code = si->si_signo;
}

static void
on_alrm(int sig)
{
	(void)sig;
	alrm++;
}

static void
on_chld(int sig)
{
	(void)sig;
	chld = 1;
}

static void
on_tick(int sig)
{
	(void)sig;
	ticks++;
}

static void
on_usr1(int sig)
{
	(void)sig;
}

static void
on_fault(int sig)
{
	siglongjmp(jb, sig);
}

static void
on_altstack(int sig)
{
	char here;

	(void)sig;
	on_alt = &here >= alt && &here < alt + sizeof(alt);
}

static void
on_term(int sig)
{
	(void)sig;
	_exit(5);
}

static void
wreck(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	memset(uc, 0x41, 400);
}

/* Calls a signal that runs no handler must not cut short (nor one whose
 * handler has SA_RESTART, but for the polls, from POLL to EPOLL_LIMIT). */
enum wait_kind {
	READ,
	RECV,
	POLL,
	POLL_LIMIT,
	SELECT,
	EPOLL,
	EPOLL_LIMIT,
	WAITPID,
	WAIT_KINDS
};
static const char *const wait_name[WAIT_KINDS] = { "read", "recv", "poll",
	"poll with a deadline", "select", "epoll_wait",
	"epoll_wait with a deadline", "waitpid" };

/* Whether the wait of kind k on fd (a socket that turns readable) or
 * for the child p gave its answer. The deadlines are far beyond it. */
static int
wait_answered(enum wait_kind k, int fd, pid_t p)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	struct epoll_event ev = { .events = EPOLLIN }, out;
	fd_set in;
	int ep, rc, st;
	char c;

	switch (k) {
	case READ:
		return read(fd, &c, 1) == 1;
	case RECV:
		return recv(fd, &c, 1, 0) == 1;
	case POLL:
	case POLL_LIMIT:
		return poll(&pf, 1, k == POLL ? -1 : 60000) == 1;
	case SELECT:
		FD_ZERO(&in);
		FD_SET(fd, &in);
		return select(fd + 1, &in, NULL, NULL, NULL) == 1;
	case EPOLL:
	case EPOLL_LIMIT:
		if ((ep = epoll_create1(0)) < 0 ||
		    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) != 0)
			return 0;
		rc = epoll_wait(ep, &out, 1, k == EPOLL ? -1 : 60000);
		close(ep);
		return rc == 1;
	default:
		return waitpid(p, &st, 0) == p && WEXITSTATUS(st) == 3;
	}
}

/* Rounds of a child that sends SIGUSR1 (blocked, ignored or handled
 * here) while this process waits in each kind of call (the polls only
 * where polls is set): how many of those calls returned anything but
 * their answer (EINTR), by kind. The nap only makes the signal likely
 * to come during the call; the answer is the same whenever it comes. */
static void
cut_short(const char *how, int polls)
{
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	int fd[2], st, bad, round;
	enum wait_kind k;
	pid_t p;

	for (k = READ; k < WAIT_KINDS; k++) {
		if (!polls && k >= POLL && k <= EPOLL_LIMIT)
			continue;
		for (bad = 0, round = 0; round < 3; round++) {
			if (socketpair(AF_UNIX, SOCK_STREAM, 0, fd) != 0)
				return;
			if ((p = fork()) == 0) {
				kill(getppid(), SIGUSR1);
				nanosleep(&nap, NULL);
				if (write(fd[1], "x", 1) != 1)
					_exit(1);
				_exit(3);
			}
			bad += !wait_answered(k, fd[0], p);
			if (k != WAITPID)
				waitpid(p, &st, 0);
			close(fd[0]);
			close(fd[1]);
		}
		printf("%s signal cut %s short: %d\n", how, wait_name[k], bad);
	}
}

int
main(int argc, char **argv)
{
	struct sigaction sa;
	sigset_t set, old;
	struct itimerval it;
	stack_t ss;
	volatile double x = 1.5;
	int st, s, ready[2];
	char c;
	pid_t p;

	setvbuf(stdout, NULL, _IONBF, 0);
	memset(&sa, 0, sizeof(sa));
	if (argc > 1 && strcmp(argv[1], "corrupt") == 0) {
		sa.sa_sigaction = wreck;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
		printf("wrecking my own frame\n");
		raise(SIGUSR1);
		printf("not reached\n");
		return 0;
	}
	sa.sa_sigaction = on_info;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	printf("handler with siginfo: %d %d, sse kept: %d\n", got, code,
	    x * 2 == 3.0);

	/* Blocked: pending, then delivered on unblock. */
	got = 0;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	raise(SIGUSR1);
	sigpending(&set);
	printf("blocked: delivered %d, pending %d\n", got,
	    sigismember(&set, SIGUSR1));
	sigprocmask(SIG_SETMASK, &old, NULL);
	printf("unblocked: delivered %d\n", got);

	signal(SIGALRM, on_alrm);
	alarm(1);
	pause();
	printf("alarm into pause: %d\n", alrm);
	alarm(1);
	while (alrm < 2)
		; /* a busy loop: the timer kicks the vCPU */
	printf("alarm into a busy loop: %d\n", alrm);

	signal(SIGALRM, on_tick);
	memset(&it, 0, sizeof(it));
	it.it_interval.tv_usec = 20000;
	it.it_value.tv_usec = 20000;
	setitimer(ITIMER_REAL, &it, NULL);
	sigemptyset(&set);
	while (ticks < 3)
		sigsuspend(&set);
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("interval timer: %d ticks\n", ticks >= 3);

	signal(SIGCHLD, on_chld);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	if ((p = fork()) == 0)
		_exit(0);
	while (!chld)
		sigsuspend(&old);
	sigprocmask(SIG_SETMASK, &old, NULL);
	waitpid(p, &st, 0);
	printf("SIGCHLD: %d\n", chld);

	/* The child says when its handler is in place: a pipe, not a guess
	 * at how long a fork takes. */
	if (pipe(ready) != 0)
		return 1;
	if ((p = fork()) == 0) {
		signal(SIGTERM, on_term);
		if (write(ready[1], "r", 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	close(ready[1]);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	close(ready[0]);
	kill(p, SIGTERM);
	waitpid(p, &st, 0);
	printf("child's SIGTERM handler: exit %d\n", WEXITSTATUS(st));

	signal(SIGSEGV, on_fault);
	signal(SIGFPE, on_fault);
	if ((s = sigsetjmp(jb, 1)) == 0)
		*(volatile int *)0 = 1;
	printf("SIGSEGV to a handler: %d\n", s);
	if ((s = sigsetjmp(jb, 1)) == 0)
		__asm__ volatile(
		    "xor %%ecx, %%ecx; mov $1, %%eax; cltd; idivl %%ecx"
		    :
		    :
		    : "eax", "ecx", "edx");
	printf("SIGFPE to a handler: %d\n", s);

	ss.ss_sp = alt;
	ss.ss_size = sizeof(alt);
	ss.ss_flags = 0;
	sigaltstack(&ss, NULL);
	sa.sa_handler = on_altstack;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR2, &sa, NULL);
	raise(SIGUSR2);
	printf("alternate stack: %d\n", on_alt);

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, &old);
	cut_short("a blocked", 1);
	signal(SIGUSR1, SIG_IGN);
	sigprocmask(SIG_SETMASK, &old, NULL);
	cut_short("an ignored", 1);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	/* (a handler cuts a poll short only if the signal comes once it
	 * waits: not asked) */
	cut_short("an SA_RESTART handler's", 0);
	signal(SIGUSR1, SIG_IGN);

	raise(SIGUSR1);
	printf("ignored: still here\n");
	return 0;
}

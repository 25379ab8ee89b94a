/* Signals: handlers with siginfo, masks, pending, alarm into a pause and
 * into a busy loop, interval timers, SIGCHLD, a kill to a child with a
 * handler, SIGSEGV and SIGFPE to handlers, the alternate stack, SSE
 * state across a handler. "signals corrupt": a handler that wrecks its
 * own frame (it must only hurt itself). */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
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

	signal(SIGUSR1, SIG_IGN);
	raise(SIGUSR1);
	printf("ignored: still here\n");
	return 0;
}

/* fork, wait4, getpid/getppid, exit statuses, copy-on-write memory and a
 * grandchild, children no one waits for, waitid's WNOWAIT, process
 * groups and sessions: what a shell does with its children. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char big[4 << 20];

/* Process groups and sessions as a shell uses them, from a child (a
 * process that leads no group, natively as in keep). */
static void
sessions(void)
{
	pid_t c, g, me;
	int st, rc, e, fd[2], ready[2];
	char b;

	if ((c = fork()) == 0) {
		me = getpid();
		printf("same group and session as the parent: %d %d\n",
		    getpgrp() == getpgid(getppid()),
		    getsid(0) == getsid(getppid()));
		rc = setpgid(0, 0);
		printf("setpgid(0, 0): %d, leads it %d\n", rc, getpgrp() == me);
		rc = (int)setsid();
		e = errno;
		printf("setsid as a group leader: %d %s\n", rc, strerror(e));
		pipe(fd);
		pipe(ready);
		if ((g = fork()) == 0) {
			printf("grandchild in the new group: %d\n",
			    getpgrp() == me);
			rc = setsid() == getpid();
			printf("setsid: %d, getsid %d, leads its group %d\n",
			    rc, getsid(0) == getpid(), getpgrp() == getpid());
			rc = setpgid(0, me);
			e = errno;
			printf("setpgid into another session: %d %s\n", rc,
			    strerror(e));
			close(fd[1]);
			close(ready[0]);
			close(ready[1]); /* ready */
			read(fd[0], &b, 1); /* until the group is signalled */
			_exit(0);
		}
		close(fd[0]);
		close(ready[1]);
		read(ready[0], &b, 1);
		/* The grandchild left the group: kill(0) reaches no one
		 * else, and -pgid of its new session's group reaches it. */
		signal(SIGUSR1, SIG_IGN);
		printf("kill(0, SIGUSR1): %d\n", kill(0, SIGUSR1));
		printf("kill(-grandchild, SIGTERM): %d\n", kill(-g, SIGTERM));
		waitpid(g, &st, 0);
		printf("grandchild: %s %d\n",
		    WIFSIGNALED(st) ? "killed by" : "exited",
		    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
		rc = (int)getsid(g);
		e = errno;
		printf("getsid of a process that is gone: %d %s\n", rc,
		    strerror(e));
		_exit(0);
	}
	waitpid(c, &st, 0);
	printf("sessions child: %d\n", WEXITSTATUS(st));
}

/* Children of a parent that ignores SIGCHLD (or sets SA_NOCLDWAIT)
 * leave no zombie: more of them than the tree has rows (64) come and go
 * without a wait, and a wait lasts until the child has ended, then fails
 * with ECHILD. */
static void
unwaited(void)
{
	struct timespec nap = { 0, 30 * 1000 * 1000 };
	struct sigaction sa;
	int i, st, forked = 0, e, fd[2];
	pid_t p, w;
	char c;

	signal(SIGCHLD, SIG_IGN);
	for (i = 0; i < 100; i++) {
		/* Each one is let end before the next is forked (its end
		 * of the pipe closes as it does): the tree's limit counts
		 * live children, and a loaded machine could fill it. */
		if (pipe(fd) != 0)
			break;
		if ((p = fork()) == 0)
			_exit(0);
		close(fd[1]);
		(void)read(fd[0], &c, 1);
		close(fd[0]);
		forked += p > 0;
	}
	printf("ignoring SIGCHLD: %d of 100 forks\n", forked);
	if ((p = fork()) == 0) {
		nanosleep(&nap, NULL);
		_exit(0);
	}
	w = waitpid(p, &st, 0);
	e = errno;
	printf("its waitpid: %d %s\n", (int)w, strerror(e));
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sa.sa_flags = SA_NOCLDWAIT;
	sigaction(SIGCHLD, &sa, NULL);
	if ((p = fork()) == 0) {
		nanosleep(&nap, NULL);
		_exit(5);
	}
	w = wait(&st);
	e = errno;
	printf("SA_NOCLDWAIT: wait %d %s\n", (int)w, strerror(e));
	signal(SIGCHLD, SIG_DFL);
}

static void *
idle(void *arg)
{
	pause();
	return arg;
}

/* waitid's WNOWAIT, as Go's os/exec waits before each reap: it waits for
 * the child's end and leaves it to be waited for again; WNOHANG with it
 * finds nothing while the child runs. threaded: with another thread in
 * the process, as in every Go program. */
static void
peeked(int threaded)
{
	struct timespec nap = { 0, 30 * 1000 * 1000 };
	siginfo_t si;
	pthread_t t;
	int st, r, e;
	pid_t p, w;

	if (threaded && pthread_create(&t, NULL, idle, NULL) != 0)
		return;
	if ((p = fork()) == 0) {
		nanosleep(&nap, NULL);
		_exit(9);
	}
	memset(&si, 0, sizeof(si));
	r = waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT | WNOHANG);
	printf(
	    "WNOWAIT|WNOHANG while it runs: %d, pid %d\n", r, si.si_pid != 0);
	memset(&si, 0, sizeof(si));
	r = waitid(P_PID, (id_t)p, &si, WEXITED | WNOWAIT);
	e = errno;
	printf("WNOWAIT%s: %d %s, pid %d, code %d, status %d\n",
	    threaded ? " with a thread" : "", r, r ? strerror(e) : "",
	    si.si_pid == p, si.si_code, si.si_status);
	memset(&si, 0, sizeof(si));
	r = waitid(P_ALL, 0, &si, WEXITED | WNOWAIT);
	printf("again, any child: %d, pid %d\n", r, si.si_pid == p);
	w = waitpid(p, &st, 0);
	printf("then its waitpid: %d, exit %d\n", w == p, WEXITSTATUS(st));
	if (threaded) {
		pthread_cancel(t);
		pthread_join(t, NULL);
	}
}

int
main(void)
{
	int i, st, n = 0;
	pid_t p, w;

	memset(big, 'p', sizeof(big));
	setvbuf(stdout, NULL, _IONBF, 0);
	for (i = 1; i <= 3; i++) {
		if ((p = fork()) == -1) {
			perror("fork");
			return 1;
		}
		if (p == 0) {
			/* The child's writes stay its own. */
			memset(big, 'c', sizeof(big));
			printf(
			    "child %d: ppid ok %d\n", i, getppid() != getpid());
			_exit(10 + i);
		}
		if ((w = waitpid(p, &st, 0)) != p || !WIFEXITED(st)) {
			printf("waitpid %d: %d status %#x\n", i, (int)w, st);
			return 1;
		}
		printf("child %d exited %d\n", i, WEXITSTATUS(st));
	}
	printf("parent memory intact: %d\n",
	    big[0] == 'p' && big[sizeof(big) - 1] == 'p');
	/* A grandchild: the child waits for its own child. */
	if ((p = fork()) == 0) {
		if ((p = fork()) == 0)
			_exit(7);
		waitpid(p, &st, 0);
		_exit(WEXITSTATUS(st) + 1);
	}
	waitpid(p, &st, 0);
	printf("grandchild chain: %d\n", WEXITSTATUS(st));
	/* Several at once, reaped in any order. */
	for (i = 0; i < 5; i++)
		if (fork() == 0)
			_exit(i);
	while ((w = wait(&st)) > 0)
		n += WEXITSTATUS(st);
	printf("five children, sum %d\n", n);
	/* A child killed by a signal. */
	if ((p = fork()) == 0) {
		for (;;)
			pause();
	}
	kill(p, SIGTERM);
	waitpid(p, &st, 0);
	printf("killed: %d by %d\n", WIFSIGNALED(st), WTERMSIG(st));
	printf("no more children: %d\n", wait(&st) == -1);
	unwaited();
	peeked(0);
	peeked(1);
	sessions();
	return 3;
}

/* Hostile: signal host processes by their host pids (given as arguments:
 * the vm process's parent, a bystander), every "all processes" form, and
 * pid 1. A guest's pids are its run's own: each must fail with ESRCH (or
 * EPERM) and leave the host processes alive. Never run it natively: there
 * kill(-1, SIGKILL) as root would end every process on the machine. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;

static void
expect_refused(const char *what, long rc)
{
	int e = errno;

	if (rc == -1 && (e == ESRCH || e == EPERM))
		printf("%s: %s\n", what, e == ESRCH ? "ESRCH" : "EPERM");
	else {
		printf("%s: rc %ld errno %d: REACHED\n", what, rc, e);
		failures++;
	}
}

static void
try_pid(long p)
{
	char what[64];

	snprintf(what, sizeof(what), "kill(host pid, SIGKILL)");
	expect_refused(what, kill((pid_t)p, SIGKILL));
	expect_refused("kill(host pid, SIGTERM)", kill((pid_t)p, SIGTERM));
	expect_refused("kill(host pid, 0)", kill((pid_t)p, 0));
	expect_refused("kill(-host pid, SIGKILL)", kill(-(pid_t)p, SIGKILL));
	expect_refused(
	    "tkill(host pid, SIGKILL)", syscall(SYS_tkill, (pid_t)p, SIGKILL));
	expect_refused("tgkill(host pid, host pid, SIGKILL)",
	    syscall(SYS_tgkill, (pid_t)p, (pid_t)p, SIGKILL));
	expect_refused("tgkill(own pid, host pid, SIGKILL)",
	    syscall(SYS_tgkill, getpid(), (pid_t)p, SIGKILL));
}

int
main(int argc, char **argv)
{
	int i, st;
	pid_t c;
	struct utsname u;

	/* keep's guests see the node name "keep"; anywhere else this
	 * program would be a real kill(-1, SIGKILL). */
	if (uname(&u) != 0 || strcmp(u.nodename, "keep") != 0 ||
	    strcmp(u.release, "6.1.0-keep") != 0) {
		fprintf(stderr, "hostkill: refusing to run outside keep\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		try_pid(strtol(argv[i], NULL, 10));
	/* Alone in the run, "every process I may signal" is no one. */
	expect_refused("kill(-1, SIGKILL) alone", kill(-1, SIGKILL));
	if ((c = fork()) == 0) {
		/* From a child: every process but pid 1 and itself, again
		 * no one; pid 1 is the run's own first process. */
		expect_refused("child: kill(-1, SIGKILL)", kill(-1, SIGKILL));
		printf("child: kill(1, 0): %d\n", kill(1, 0));
		expect_refused("child: kill(-1, SIGTERM)", kill(-1, SIGTERM));
		fflush(stdout);
		_exit(failures);
	}
	waitpid(c, &st, 0);
	failures += WIFEXITED(st) ? WEXITSTATUS(st) : 100;
	printf("kill(1, 0): %d\n", kill(1, 0));
	printf("%s\n", failures ? "SOME REACHED" : "all refused");
	return failures ? 1 : 0;
}

/* execve: the running program again (/proc/self/exe, as busybox does),
 * a workspace program, a "#!" script, and the errors that leave the
 * caller running. Usage: execer [child ARGS...]; execer chain N: N
 * execve of itself in one process, then "chain done" and a pause of
 * SECONDS (the third argument) before it exits. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void
run(char *const argv[])
{
	int st;
	pid_t p = fork();

	if (p == 0) {
		execve(argv[0], argv, (char *[]){ "WHO=child", NULL });
		printf("execve %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	waitpid(p, &st, 0);
	printf("%s: exit %d\n", argv[0], WEXITSTATUS(st));
}

/* A program whose interpreter is missing (the test's /badinterp) fails
 * in this very process, which goes on and forks: the fork's child must
 * hold this process's memory, whatever took the descriptor numbers the
 * failed execve used. */
static void
exec_fails_here(void)
{
	static char mark[1 << 20];
	size_t i;
	pid_t p;
	int st, fd;

	memset(mark, 'k', sizeof(mark));
	execve(
	    "/badinterp", (char *[]){ "/badinterp", NULL }, (char *[]){ NULL });
	printf("execve /badinterp: %s\n", strerror(errno));
	fd = open("/badinterp", O_RDONLY); /* the lowest free number */
	if ((p = fork()) == 0) {
		for (i = 0; i < sizeof(mark) && mark[i] == 'k'; i++)
			;
		_exit(i == sizeof(mark) ? 0 : 3);
	}
	if (p == -1 || waitpid(p, &st, 0) != p)
		printf("fork after it: %s\n", strerror(errno));
	else
		printf("fork after it: %s\n",
		    WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "same memory"
		                                          : "other memory");
	close(fd);
}

int
main(int argc, char **argv)
{
	int i, fd;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 1 && argv[0][0] == '\0') {
		printf(
		    "  empty argv: argv[0]=\"\", env WHO=%s\n", getenv("WHO"));
		return 9;
	}
	if (argc == 4 && strcmp(argv[1], "chain") == 0) {
		char n[16];

		if (atoi(argv[2]) > 0) {
			snprintf(n, sizeof(n), "%d", atoi(argv[2]) - 1);
			execve("/proc/self/exe",
			    (char *[]){ argv[0], "chain", n, argv[3], NULL },
			    (char *[]){ NULL });
			printf("execve: %s\n", strerror(errno));
			return 1;
		}
		printf("chain done\n");
		sleep((unsigned)atoi(argv[3]));
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "child") == 0) {
		for (i = 0; i < argc; i++)
			printf("  argv[%d]=%s\n", i, argv[i]);
		printf("  env WHO=%s, fd 5 %s\n", getenv("WHO"),
		    fcntl(5, F_GETFD) == -1 ? "closed" : "open");
		return argc;
	}
	/* fd 5 is close-on-exec: the new program must not have it. */
	fd = open("/", O_RDONLY | O_CLOEXEC);
	dup3(fd, 5, O_CLOEXEC);
	run((char *[]){ "/proc/self/exe", "child", "one", "two", NULL });
	/* A script whose interpreter is this program. */
	fd = open("/script", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	dprintf(fd, "#!/proc/self/exe child\nexit 0\n");
	close(fd);
	run((char *[]){ "/script", "arg", NULL });
	fd = open("/noexec", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	close(fd);
	run((char *[]){ "/noexec", NULL });
	fd = open("/garbage", O_WRONLY | O_CREAT | O_TRUNC, 0755);
	dprintf(fd, "not a program\n");
	close(fd);
	run((char *[]){ "/garbage", NULL });
	run((char *[]){ "/missing", NULL });
	/* No argv at all: Linux passes argv[0] = "". */
	if (fork() == 0) {
		execve("/proc/self/exe", (char *[]){ NULL },
		    (char *[]){ "WHO=nobody", NULL });
		_exit(127);
	}
	wait(&fd);
	printf("empty argv: exit %d\n", WEXITSTATUS(fd));
	if (access("/badinterp", X_OK) == 0)
		exec_fails_here();
	return 0;
}

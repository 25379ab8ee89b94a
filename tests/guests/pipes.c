/* Pipes across processes: poll and select with real timeouts, POLLHUP,
 * dup2 onto stdout across exec, and a writer whose reader died. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
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

static volatile sig_atomic_t pipe_caught;

static void
on_pipe(int sig)
{
	(void)sig;
	pipe_caught++;
}

int
main(int argc, char **argv)
{
	int fd[2], st, n;
	struct pollfd p;
	struct timespec t0;
	struct timeval tv = { 0, 100000 };
	fd_set rs;
	char buf[64];
	pid_t c;

	if (argc > 1) { /* exec'd with its stdout on a pipe */
		printf("through the pipe: %s\n", argv[1]);
		return 0;
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	pipe(fd);
	p.fd = fd[0];
	p.events = POLLIN;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = poll(&p, 1, 200);
	printf("poll on an empty pipe: %d ready, waited its timeout: %d\n", n,
	    ms_since(&t0) >= 200);
	FD_ZERO(&rs);
	FD_SET(fd[0], &rs);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	n = select(fd[0] + 1, &rs, NULL, NULL, &tv);
	printf("select on an empty pipe: %d, waited its timeout: %d\n", n,
	    ms_since(&t0) >= 100);
	if ((c = fork()) == 0) {
		usleep(100000);
		write(fd[1], "late", 4);
		_exit(0);
	}
	n = poll(&p, 1, -1);
	printf("poll woke for a child's write: %d %s\n", n,
	    p.revents & POLLIN ? "POLLIN" : "?");
	n = read(fd[0], buf, sizeof(buf));
	printf("read %.*s\n", n, buf);
	waitpid(c, &st, 0);
	close(fd[1]);
	n = poll(&p, 1, 1000);
	printf("writer closed: %s, read %zd\n",
	    p.revents & POLLHUP ? "POLLHUP" : "?", read(fd[0], buf, 1));
	close(fd[0]);

	/* A child's stdout on a pipe, across exec. */
	pipe(fd);
	if ((c = fork()) == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		execl("/proc/self/exe", "pipes", "hello", (char *)NULL);
		_exit(127);
	}
	close(fd[1]);
	while ((n = read(fd[0], buf, sizeof(buf))) > 0)
		printf("parent got: %.*s", n, buf);
	waitpid(c, &st, 0);
	close(fd[0]);

	/* A writer whose reader died: SIGPIPE's default ends it. */
	pipe(fd);
	close(fd[0]);
	if ((c = fork()) == 0) {
		for (;;)
			write(fd[1], "x", 1);
	}
	waitpid(c, &st, 0);
	printf("writer without a reader: %s %d\n",
	    WIFSIGNALED(st) ? "killed by" : "exited",
	    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));

	/* With SIGPIPE ignored, or caught, the write fails with EPIPE
	 * and the writer lives on (Python ignores it, for one). */
	signal(SIGPIPE, SIG_IGN);
	n = (int)write(fd[1], "x", 1);
	printf("SIGPIPE ignored: write %d, %s\n", n,
	    n == -1 && errno == EPIPE ? "EPIPE" : "?");
	signal(SIGPIPE, on_pipe);
	n = (int)write(fd[1], "x", 1);
	printf("SIGPIPE caught %d times: write %d, %s\n", (int)pipe_caught, n,
	    n == -1 && errno == EPIPE ? "EPIPE" : "?");
	close(fd[1]);

	/* O_NONBLOCK set with fcntl: an empty pipe's read is EAGAIN. */
	pipe(fd);
	fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) | O_NONBLOCK);
	n = (int)read(fd[0], buf, sizeof(buf));
	printf("non-blocking read of an empty pipe: %d %s, flag %d\n", n,
	    n == -1 && errno == EAGAIN ? "EAGAIN" : "?",
	    (fcntl(fd[0], F_GETFL) & O_NONBLOCK) != 0);
	fcntl(fd[0], F_SETFL, fcntl(fd[0], F_GETFL) & ~O_NONBLOCK);
	printf("and back to blocking: flag %d\n",
	    (fcntl(fd[0], F_GETFL) & O_NONBLOCK) != 0);

	/* A pipe's size, set (rounded up to whole pages) and read from
	 * the other end; /dev/null is no pipe. The default size differs
	 * (keep's pipes are 1 MiB), and so does the bound for a root
	 * caller (keep's is fs.pipe-max-size's default for anyone): neither
	 * is printed. */
	n = fcntl(fd[1], F_SETPIPE_SZ, 3 * 4096 + 1);
	printf("pipe size set: %d, read from the other end: %d\n", n,
	    fcntl(fd[0], F_GETPIPE_SZ));
	n = fcntl(open("/dev/null", O_RDONLY), F_GETPIPE_SZ);
	printf("F_GETPIPE_SZ of /dev/null: %d %s\n", n,
	    n == -1 && errno == EBADF ? "EBADF" : "?");
	return 0;
}

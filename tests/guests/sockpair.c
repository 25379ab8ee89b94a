/*
 * socketpair(AF_UNIX): both directions, shutdown's end of file, a child
 * across fork on the other end, datagram boundaries, what a program asks
 * a socket to learn what it is (libuv's uv_guess_handle), send and recv,
 * poll, EPIPE, and the refusals; the same lines natively and in keep.
 */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *
e(long rc)
{
	return rc >= 0 ? "ok" : strerror(errno);
}

int
main(void)
{
	int sv[2], dg[2], p[2], type = 0, st;
	socklen_t len = sizeof(type);
	struct sockaddr_storage sa;
	struct pollfd pf;
	char buf[64];
	ssize_t n;
	const char *what;
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return 1;
	n = write(sv[0], "ping", 4);
	n = read(sv[1], buf, sizeof(buf));
	printf("one way: %.*s\n", (int)n, buf);
	n = write(sv[1], "pong", 4);
	n = read(sv[0], buf, sizeof(buf));
	printf("the other: %.*s\n", (int)n, buf);

	getsockopt(sv[0], SOL_SOCKET, SO_TYPE, &type, &len);
	printf("SO_TYPE %d (len %u)\n", type, (unsigned)len);
	len = sizeof(sa);
	memset(&sa, 0xff, sizeof(sa));
	what = e(getsockname(sv[1], (struct sockaddr *)&sa, &len));
	printf("getsockname: %s, family %d, len %u\n", what,
	    ((struct sockaddr *)&sa)->sa_family, (unsigned)len);
	len = sizeof(sa);
	what = e(getpeername(sv[0], (struct sockaddr *)&sa, &len));
	printf("getpeername: %s, len %u\n", what, (unsigned)len);

	/* Half-closed: the reader sees the end, the other way still works. */
	shutdown(sv[0], SHUT_WR);
	printf("after shutdown: read %zd\n", read(sv[1], buf, sizeof(buf)));
	n = write(sv[1], "still", 5);
	n = read(sv[0], buf, sizeof(buf));
	printf("back the other way: %.*s\n", (int)n, buf);

	/* A child on the other end, as libuv gives a child its stdio. */
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, p) != 0)
		return 1;
	if ((pid = fork()) == 0) {
		close(p[0]);
		dup2(p[1], 1);
		n = read(1, buf, sizeof(buf));
		n = write(1, "child got ", 10) + write(1, buf, (size_t)n);
		_exit(0);
	}
	close(p[1]);
	n = send(p[0], "hello", 5, 0);
	pf.fd = p[0];
	pf.events = POLLIN;
	printf("poll: %d\n", poll(&pf, 1, 5000));
	n = recv(p[0], buf, sizeof(buf), 0);
	while (n > 0 && n < 15) {
		ssize_t m = recv(p[0], buf + n, sizeof(buf) - (size_t)n, 0);

		if (m <= 0)
			break;
		n += m;
	}
	printf("from the child: %.*s\n", (int)n, buf);
	waitpid(pid, &st, 0);
	printf("read after the child exited: %zd\n", read(p[0], buf, 1));
	printf("write to it: %s\n", e(write(p[0], "x", 1)));

	/* Datagrams keep their boundaries. */
	if (socketpair(AF_UNIX, SOCK_DGRAM, 0, dg) != 0)
		return 1;
	n = write(dg[0], "ab", 2) + write(dg[0], "cde", 3);
	n = read(dg[1], buf, sizeof(buf));
	printf("datagram %zd", n);
	n = read(dg[1], buf, sizeof(buf));
	printf(", then %zd\n", n);

	/* Refusals. */
	printf("AF_INET pair: %s\n", e(socketpair(AF_INET, SOCK_STREAM, 0, p)));
	printf("bad pointer: %s\n",
	    e(syscall(SYS_socketpair, AF_UNIX, SOCK_STREAM, 0, (void *)16)));
	printf("bad type: %s\n", e(socketpair(AF_UNIX, 9, 0, p)));
	if (pipe(p) != 0)
		return 1;
	printf("shutdown of a pipe: %s\n", e(shutdown(p[0], SHUT_RD)));
	printf("shutdown how 7: %s\n", e(shutdown(sv[0], 7)));
	printf("getsockname bad length: %s\n",
	    e(syscall(SYS_getsockname, sv[0], &sa, (void *)16)));
	return 0;
}

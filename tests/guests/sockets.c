/*
 * Sockets (issue 29): TCP over 127.0.0.1 and ::1 between forked processes
 * and between threads, UDP echo, AF_UNIX stream on a path (in DIR, the
 * first argument) and on an abstract name, SCM_RIGHTS passing a pipe, a
 * socket and an open file (in DIR) to another process, which reads and
 * appends through it, non-blocking connect with poll, epoll and
 * select, the options programs set, a receive timeout, a blocking accept
 * cut short by a signal; the same lines natively and in keep.
 * `sockets egress` tries destinations outside the sandbox: in keep each
 * is refused before it leaves (EACCES). `sockets serve PORT` answers
 * "pong" on 127.0.0.1:PORT and on the abstract name @keep-serve until it
 * is killed; `sockets dial PORT` asks both (a server of another run of
 * the same sandbox). `sockets hostile` gives the calls bad pointers,
 * lengths, descriptors and control messages: the same errors as Linux
 * (sendmsg and recvmsg as bare system calls: libc's read the header).
 */
#define _GNU_SOURCE
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(x)                                                               \
	do {                                                                   \
		if (!(x)) {                                                    \
			printf("FAIL line %d: %s (%s)\n", __LINE__, #x,        \
			    strerror(errno));                                  \
			exit(1);                                               \
		}                                                              \
	} while (0)

static socklen_t
addr_of(int fam, struct sockaddr_storage *ss, uint16_t port)
{
	memset(ss, 0, sizeof(*ss));
	if (fam == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof(*in);
	}
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;

	in6->sin6_family = AF_INET6;
	in6->sin6_port = htons(port);
	in6->sin6_addr = in6addr_loopback;
	return sizeof(*in6);
}

static uint16_t
port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	CHECK(getsockname(fd, (struct sockaddr *)&ss, &sl) == 0);
	return ss.ss_family == AF_INET
	    ? ntohs(((struct sockaddr_in *)&ss)->sin_port)
	    : ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A listener on loopback of family fam, any port. */
static int
listener(int fam, int type)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_of(fam, &ss, 0);
	int fd = socket(fam, type, 0), one = 1;

	CHECK(fd >= 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(bind(fd, (struct sockaddr *)&ss, sl) == 0);
	if (type == SOCK_STREAM)
		CHECK(listen(fd, 16) == 0);
	return fd;
}

static int
dial(int fam, uint16_t port)
{
	struct sockaddr_storage ss;
	socklen_t sl = addr_of(fam, &ss, port);
	int fd = socket(fam, SOCK_STREAM, 0);

	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&ss, sl) == 0);
	return fd;
}

static void
recv_exact(int fd, char *buf, size_t n)
{
	size_t got = 0;
	ssize_t r;

	while (got < n) {
		r = recv(fd, buf + got, n - got, 0);
		CHECK(r > 0);
		got += (size_t)r;
	}
}

/* The server's side of one exchange: "ping" in, "pong" out. */
static void
serve_one(int lfd)
{
	char buf[4];
	int c = accept(lfd, NULL, NULL);

	CHECK(c >= 0);
	recv_exact(c, buf, 4);
	CHECK(memcmp(buf, "ping", 4) == 0);
	CHECK(send(c, "pong", 4, 0) == 4);
	close(c);
}

static void
client_one(int fam, uint16_t port)
{
	char buf[4];
	int fd = dial(fam, port);

	CHECK(send(fd, "ping", 4, 0) == 4);
	recv_exact(fd, buf, 4);
	CHECK(memcmp(buf, "pong", 4) == 0);
	CHECK(recv(fd, buf, 1, 0) == 0); /* the server closed */
	close(fd);
}

static void
tcp_fork(int fam)
{
	int lfd = listener(fam, SOCK_STREAM), st;
	uint16_t port = port_of(lfd);
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		client_one(fam, port);
		_exit(0);
	}
	serve_one(lfd);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	close(lfd);
	printf("tcp %s between processes: ok\n",
	    fam == AF_INET ? "127.0.0.1" : "::1");
}

static void *
server_thread(void *arg)
{
	int i, lfd = *(int *)arg;

	for (i = 0; i < 3; i++)
		serve_one(lfd);
	return NULL;
}

static void
tcp_threads(int fam)
{
	int lfd = listener(fam, SOCK_STREAM), i;
	pthread_t t;

	CHECK(pthread_create(&t, NULL, server_thread, &lfd) == 0);
	for (i = 0; i < 3; i++)
		client_one(fam, port_of(lfd));
	CHECK(pthread_join(t, NULL) == 0);
	close(lfd);
	printf("tcp %s between threads, 3 connections: ok\n",
	    fam == AF_INET ? "127.0.0.1" : "::1");
}

static void
udp_echo(void)
{
	int a = listener(AF_INET, SOCK_DGRAM),
	    b = listener(AF_INET, SOCK_DGRAM);
	struct sockaddr_storage to, from;
	socklen_t tl = addr_of(AF_INET, &to, port_of(a)), fl = sizeof(from);
	char buf[16];
	ssize_t n;

	CHECK(sendto(b, "hello", 5, 0, (struct sockaddr *)&to, tl) == 5);
	CHECK(sendto(b, "again", 5, 0, (struct sockaddr *)&to, tl) == 5);
	n = recvfrom(a, buf, sizeof(buf), 0, (struct sockaddr *)&from, &fl);
	CHECK(n == 5 && memcmp(buf, "hello", 5) == 0);
	CHECK(fl == sizeof(struct sockaddr_in) &&
	    ntohs(((struct sockaddr_in *)&from)->sin_port) == port_of(b));
	CHECK(sendto(a, buf, (size_t)n, 0, (struct sockaddr *)&from, fl) == 5);
	n = recv(b, buf, sizeof(buf), 0);
	CHECK(n == 5 && memcmp(buf, "hello", 5) == 0);
	/* A datagram's boundaries hold, and MSG_TRUNC says its length. */
	n = recv(a, buf, 2, MSG_TRUNC);
	CHECK(n == 5);
	{
		/* Two at once each way: sendmmsg and recvmmsg. */
		struct mmsghdr mm[2];
		struct iovec iv[2];
		char r0[8], r1[8];

		memset(mm, 0, sizeof(mm));
		iv[0].iov_base = "one";
		iv[0].iov_len = 3;
		iv[1].iov_base = "three";
		iv[1].iov_len = 5;
		for (int i = 0; i < 2; i++) {
			mm[i].msg_hdr.msg_iov = &iv[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_name = &to;
			mm[i].msg_hdr.msg_namelen = tl;
		}
		CHECK(sendmmsg(b, mm, 2, 0) == 2 && mm[0].msg_len == 3 &&
		    mm[1].msg_len == 5);
		memset(mm, 0, sizeof(mm));
		iv[0].iov_base = r0;
		iv[0].iov_len = sizeof(r0);
		iv[1].iov_base = r1;
		iv[1].iov_len = sizeof(r1);
		for (int i = 0; i < 2; i++) {
			mm[i].msg_hdr.msg_iov = &iv[i];
			mm[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(a, mm, 2, MSG_WAITFORONE, NULL);
		if (n == 1) /* the second had not arrived yet */
			n += recvmmsg(a, mm + 1, 1, 0, NULL);
		CHECK(n == 2 && mm[0].msg_len == 3 && mm[1].msg_len == 5 &&
		    memcmp(r0, "one", 3) == 0 && memcmp(r1, "three", 5) == 0);
	}
	close(a);
	close(b);
	printf("udp echo with addresses, datagram boundaries, sendmmsg and "
	       "recvmmsg: ok\n");
}

static void
unix_stream(const struct sockaddr_un *un, socklen_t ul, const char *what)
{
	struct sockaddr_un got;
	socklen_t gl = sizeof(got);
	int lfd = socket(AF_UNIX, SOCK_STREAM, 0), st, c;
	char buf[4];
	pid_t pid;

	CHECK(lfd >= 0);
	CHECK(bind(lfd, (const struct sockaddr *)un, ul) == 0);
	CHECK(listen(lfd, 4) == 0);
	CHECK(getsockname(lfd, (struct sockaddr *)&got, &gl) == 0);
	CHECK(gl == ul && memcmp(&got, un, ul) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		c = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK(connect(c, (const struct sockaddr *)un, ul) == 0);
		CHECK(write(c, "ping", 4) == 4);
		CHECK(read(c, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
		_exit(0);
	}
	c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	CHECK(c >= 0);
	CHECK(read(c, buf, 4) == 4 && memcmp(buf, "ping", 4) == 0);
	CHECK(write(c, "pong", 4) == 4);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	close(c);
	/* A second bind of the same name is refused. */
	c = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(bind(c, (const struct sockaddr *)un, ul) == -1 &&
	    errno == EADDRINUSE);
	close(c);
	close(lfd);
	printf("AF_UNIX stream on %s, getsockname, EADDRINUSE: ok\n", what);
}

static void
unix_named(const char *dir)
{
	struct sockaddr_un un;
	int fd;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/s.sock", dir);
	unlink(un.sun_path);
	unix_stream(&un,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	        strlen(un.sun_path) + 1),
	    "a path");
	unlink(un.sun_path);
	/* A path that is not a socket. */
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/plain", dir);
	fd = open(un.sun_path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	CHECK(fd >= 0);
	close(fd);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	CHECK(connect(fd, (struct sockaddr *)&un, sizeof(un)) == -1);
	printf("connect to a plain file: %s\n", strerror(errno));
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/none", dir);
	CHECK(connect(fd, (struct sockaddr *)&un, sizeof(un)) == -1);
	printf("connect to no file: %s\n", strerror(errno));
	close(fd);
}

static void
unix_abstract(void)
{
	struct sockaddr_un un;
	int n;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "keep-test-%d",
	    (int)getpid());
	unix_stream(&un,
	    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n),
	    "an abstract name");
}

static void
send_fd(int sock, int fd, const char *byte)
{
	char cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { (void *)byte, 1 };
	struct msghdr m;
	struct cmsghdr *c;

	memset(&m, 0, sizeof(m));
	memset(cbuf, 0, sizeof(cbuf));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	CHECK(sendmsg(sock, &m, 0) == 1);
}

static int
recv_fd(int sock)
{
	char cbuf[CMSG_SPACE(sizeof(int))], b;
	struct iovec iov = { &b, 1 };
	struct msghdr m;
	struct cmsghdr *c;
	int fd;

	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	CHECK(recvmsg(sock, &m, MSG_CMSG_CLOEXEC) == 1);
	c = CMSG_FIRSTHDR(&m);
	CHECK(c != NULL && c->cmsg_level == SOL_SOCKET &&
	    c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int)));
	memcpy(&fd, CMSG_DATA(c), sizeof(int));
	CHECK((m.msg_flags & MSG_CTRUNC) == 0);
	CHECK(fcntl(fd, F_GETFD) == FD_CLOEXEC);
	return fd;
}

static void
rights(const char *dir)
{
	int sv[2], p[2], st, fd, lfd, c, ffd;
	char buf[32], path[512];
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	CHECK(pipe(p) == 0);
	lfd = listener(AF_INET, SOCK_STREAM);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[0]);
		close(p[0]);
		close(p[1]);
		close(lfd);
		/* A pipe's read end, read from here. */
		fd = recv_fd(sv[1]);
		CHECK(read(fd, buf, 5) == 5 && memcmp(buf, "piped", 5) == 0);
		close(fd);
		/* A listening socket, accepted from here. */
		fd = recv_fd(sv[1]);
		c = accept(fd, NULL, NULL);
		CHECK(c >= 0);
		CHECK(write(c, "via fd", 6) == 6);
		/* An open file, read at its offset and appended to. */
		fd = recv_fd(sv[1]);
		CHECK(read(fd, buf, 6) == 6 && memcmp(buf, "parent", 6) == 0);
		CHECK(write(fd, "+child", 6) == 6);
		_exit(0);
	}
	close(sv[1]);
	send_fd(sv[0], p[0], "p");
	close(p[0]);
	CHECK(write(p[1], "piped", 5) == 5);
	send_fd(sv[0], lfd, "s");
	c = dial(AF_INET, port_of(lfd));
	CHECK(read(c, buf, 6) == 6 && memcmp(buf, "via fd", 6) == 0);
	snprintf(path, sizeof(path), "%s/passed", dir);
	ffd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(ffd >= 0 && write(ffd, "parent", 6) == 6 &&
	    lseek(ffd, 0, SEEK_SET) == 0);
	send_fd(sv[0], ffd, "f");
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	    WEXITSTATUS(st) == 0);
	/* The child moved the shared offset and wrote through it. */
	CHECK(lseek(ffd, 0, SEEK_CUR) == 12 && pread(ffd, buf, 12, 0) == 12 &&
	    memcmp(buf, "parent+child", 12) == 0);
	close(ffd);
	unlink(path);
	close(c);
	close(lfd);
	close(p[1]);
	close(sv[0]);
	printf("SCM_RIGHTS: a pipe, a listening socket and a file to another "
	       "process: ok\n");
}

static void
nonblocking(void)
{
	struct sockaddr_storage ss;
	int lfd = listener(AF_INET6, SOCK_STREAM), fd, rc, err, ep, c;
	socklen_t sl = addr_of(AF_INET6, &ss, port_of(lfd)), el = sizeof(err);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	struct pollfd pf;
	fd_set rd;
	struct timeval tv = { 5, 0 };
	uint16_t dead;

	fd = socket(AF_INET6, SOCK_STREAM | SOCK_NONBLOCK, 0);
	CHECK(fd >= 0);
	rc = connect(fd, (struct sockaddr *)&ss, sl);
	CHECK(rc == 0 || errno == EINPROGRESS);
	pf.fd = fd;
	pf.events = POLLOUT;
	CHECK(poll(&pf, 1, 5000) == 1 && (pf.revents & POLLOUT));
	CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0);
	/* The listener is readable for epoll and select. */
	ep = epoll_create1(EPOLL_CLOEXEC);
	CHECK(ep >= 0);
	ev.data.fd = lfd;
	CHECK(epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) == 0);
	CHECK(epoll_wait(ep, &out, 1, 5000) == 1 && out.data.fd == lfd);
	c = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
	CHECK(c >= 0);
	CHECK(recv(c, &rc, 1, 0) == -1 && errno == EAGAIN);
	CHECK(send(fd, "x", 1, 0) == 1);
	FD_ZERO(&rd);
	FD_SET(c, &rd);
	CHECK(select(c + 1, &rd, NULL, NULL, &tv) == 1 && FD_ISSET(c, &rd));
	close(c);
	close(fd);
	close(ep);
	printf("non-blocking connect, poll, SO_ERROR, epoll, select: ok\n");

	/* A port nobody listens on. */
	c = listener(AF_INET, SOCK_STREAM);
	dead = port_of(c);
	close(c);
	addr_of(AF_INET, &ss, dead);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	rc = connect(fd, (struct sockaddr *)&ss, sizeof(struct sockaddr_in));
	if (rc == -1 && errno == EINPROGRESS) {
		pf.fd = fd;
		pf.events = POLLOUT;
		CHECK(poll(&pf, 1, 5000) == 1);
		CHECK(getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0);
		errno = err;
	}
	printf("non-blocking connect to a closed port: %s\n", strerror(errno));
	close(fd);
	close(lfd);
}

/* MSG_WAITALL waits for the whole, across the sender's pauses. */
static void
waitall(void)
{
	int sv[2], st;
	char buf[8];
	pid_t pid;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		CHECK(write(sv[1], "abc", 3) == 3);
		usleep(100000);
		CHECK(write(sv[1], "def", 3) == 3);
		_exit(0);
	}
	CHECK(recv(sv[0], buf, 6, MSG_WAITALL) == 6 &&
	    memcmp(buf, "abcdef", 6) == 0);
	CHECK(waitpid(pid, &st, 0) == pid);
	close(sv[0]);
	close(sv[1]);
	printf("MSG_WAITALL across the sender's pause: ok\n");
}

static void
options(void)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1, v = 0, six;
	socklen_t vl = sizeof(v);
	struct timeval tv = { 0, 100000 };
	int lfd = listener(AF_INET, SOCK_STREAM), c;
	char b;

	CHECK(setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) == 0);
	CHECK(getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &v, &vl) == 0 && v == 1);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) == 0);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == 0);
	v = 65536;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v)) == 0);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, &vl) == 0 && v > 0);
	CHECK(getsockopt(fd, SOL_SOCKET, SO_TYPE, &v, &vl) == 0 &&
	    v == SOCK_STREAM);
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	six = socket(AF_INET6, SOCK_STREAM, 0);
	CHECK(
	    setsockopt(six, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) == 0);
	close(six);
	CHECK(
	    connect(fd,
	        (struct sockaddr *)&(struct sockaddr_in){ .sin_family = AF_INET,
	            .sin_port = htons(port_of(lfd)),
	            .sin_addr.s_addr = htonl(INADDR_LOOPBACK) },
	        sizeof(struct sockaddr_in)) == 0);
	c = accept(lfd, NULL, NULL);
	CHECK(recv(fd, &b, 1, 0) == -1);
	printf("options: TCP_NODELAY, SO_KEEPALIVE, SO_REUSEPORT, buffers, "
	       "IPV6_V6ONLY; a receive past SO_RCVTIMEO: %s\n",
	    errno == EAGAIN ? "EAGAIN" : strerror(errno));
	/* shutdown: the peer reads its end. */
	CHECK(shutdown(c, SHUT_WR) == 0);
	tv.tv_usec = 0;
	tv.tv_sec = 5;
	CHECK(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK(recv(fd, &b, 1, 0) == 0);
	printf("shutdown: the peer reads its end\n");
	close(c);
	close(fd);
	close(lfd);
}

static void
on_alarm(int sig)
{
	(void)sig;
}

static void
interrupted(void)
{
	struct sigaction sa;
	int lfd = listener(AF_INET, SOCK_STREAM);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm; /* no SA_RESTART */
	CHECK(sigaction(SIGALRM, &sa, NULL) == 0);
	alarm(1);
	CHECK(accept(lfd, NULL, NULL) == -1);
	printf("a blocking accept and a signal: %s\n", strerror(errno));
	close(lfd);
}

static void
egress(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
		.sin_port = htons(80) };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6,
		.sin6_port = htons(80) };
	int fd;

	inet_pton(AF_INET, "10.1.2.3", &in.sin_addr);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	CHECK(fd >= 0);
	CHECK(connect(fd, (struct sockaddr *)&in, sizeof(in)) == -1);
	printf("connect 10.1.2.3:80: %s\n", strerror(errno));
	close(fd);
	inet_pton(AF_INET, "169.254.169.254", &in.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	CHECK(sendto(fd, "x", 1, 0, (struct sockaddr *)&in, sizeof(in)) == -1);
	printf("sendto 169.254.169.254:80: %s\n", strerror(errno));
	close(fd);
	inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
	fd = socket(AF_INET6, SOCK_STREAM, 0);
	CHECK(connect(fd, (struct sockaddr *)&in6, sizeof(in6)) == -1);
	printf("connect [2001:db8::1]:80: %s\n", strerror(errno));
	close(fd);
	fd = socket(AF_NETLINK, SOCK_RAW, 0);
	printf("socket(AF_NETLINK): %s\n", fd < 0 ? strerror(errno) : "made");
	fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
	printf("socket(AF_INET, SOCK_RAW): %s\n",
	    fd < 0 ? strerror(errno) : "made");
}

static void
result(const char *what, long rc)
{
	printf("%s: %s\n", what, rc >= 0 ? "ok" : strerror(errno));
}

static void
hostile(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET,
		.sin_port = htons(9),
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int u = socket(AF_INET, SOCK_DGRAM, 0),
	    t = socket(AF_INET, SOCK_STREAM, 0), sv[2], p[2], bad = 999, v;
	char cbuf[CMSG_SPACE(sizeof(int))], b = 'x';
	struct iovec iov = { &b, 1 }, biov = { (void *)8, 16 };
	struct msghdr m;
	struct cmsghdr *c;
	socklen_t l = sizeof(v);

	CHECK(u >= 0 && t >= 0 &&
	    socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(p) == 0);
	result("connect, address at 1", connect(u, (void *)1, sizeof(in)));
	result(
	    "connect, length 1000", connect(u, (struct sockaddr *)&in, 1000));
	result("connect, length 1", connect(u, (struct sockaddr *)&in, 1));
	result("bind, no address", bind(u, NULL, 0));
	result("sendto, buffer at 1",
	    sendto(u, (void *)1, 10, 0, (struct sockaddr *)&in, sizeof(in)));
	result("recvmsg, header at 1",
	    syscall(SYS_recvmsg, u, (void *)1, MSG_DONTWAIT));
	memset(&m, 0, sizeof(m));
	m.msg_iov = &biov;
	m.msg_iovlen = 1;
	result("sendmsg, iovec at 8", syscall(SYS_sendmsg, sv[0], &m, 0));
	m.msg_iov = &iov;
	m.msg_iovlen = 2000;
	result("sendmsg, 2000 iovecs", syscall(SYS_sendmsg, sv[0], &m, 0));
	m.msg_iovlen = 1;
	m.msg_control = cbuf;
	m.msg_controllen = sizeof(cbuf);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &bad, sizeof(int));
	result("sendmsg, SCM_RIGHTS of descriptor 999",
	    syscall(SYS_sendmsg, sv[0], &m, 0));
	c->cmsg_len = sizeof(cbuf) + 64;
	result("sendmsg, cmsg_len past the buffer",
	    syscall(SYS_sendmsg, sv[0], &m, 0));
	c->cmsg_len = 4;
	result("sendmsg, cmsg_len 4", syscall(SYS_sendmsg, sv[0], &m, 0));
	m.msg_control = (void *)16;
	result("sendmsg, control at 16", syscall(SYS_sendmsg, sv[0], &m, 0));
	result("getsockopt, no length",
	    getsockopt(u, SOL_SOCKET, SO_TYPE, &v, NULL));
	result("getsockopt, value at 4096",
	    getsockopt(u, SOL_SOCKET, SO_TYPE, (void *)4096, &l));
	result("setsockopt, option 9999",
	    setsockopt(u, SOL_SOCKET, 9999, &v, sizeof(v)));
	result("setsockopt, value at 1",
	    setsockopt(u, SOL_SOCKET, SO_REUSEADDR, (void *)1, sizeof(v)));
	result("socket, type 99", socket(AF_INET, 99, 0));
	result("socket, family 200", socket(200, SOCK_STREAM, 0));
	result("socket, UDP over stream",
	    socket(AF_INET, SOCK_STREAM, IPPROTO_UDP));
	result("getsockname of a pipe", getsockname(p[0], (void *)&in, &l));
	result("accept, not listening", accept(t, NULL, NULL));
	result("listen, descriptor 999", listen(999, 1));
	result("shutdown, how 7", shutdown(sv[0], 7));
	result("getpeername, not connected", getpeername(t, (void *)&in, &l));
}

static void
abstract_name(struct sockaddr_un *un, socklen_t *ul)
{
	static const char name[] = "keep-serve";

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path + 1, name, sizeof(name) - 1);
	*ul = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
	    sizeof(name) - 1);
}

static void
serve(uint16_t port)
{
	struct sockaddr_storage ss;
	struct sockaddr_un un;
	socklen_t sl = addr_of(AF_INET, &ss, port), ul;
	struct pollfd pf[2];
	int one = 1, i, c;

	pf[0].fd = socket(AF_INET, SOCK_STREAM, 0);
	pf[1].fd = socket(AF_UNIX, SOCK_STREAM, 0);
	abstract_name(&un, &ul);
	CHECK(pf[0].fd >= 0 && pf[1].fd >= 0);
	CHECK(setsockopt(
	          pf[0].fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0);
	CHECK(bind(pf[0].fd, (struct sockaddr *)&ss, sl) == 0);
	CHECK(bind(pf[1].fd, (struct sockaddr *)&un, ul) == 0);
	CHECK(listen(pf[0].fd, 8) == 0 && listen(pf[1].fd, 8) == 0);
	printf("serving\n");
	for (;;) {
		pf[0].events = pf[1].events = POLLIN;
		CHECK(poll(pf, 2, -1) > 0);
		for (i = 0; i < 2; i++)
			if (pf[i].revents & POLLIN) {
				c = accept(pf[i].fd, NULL, NULL);
				CHECK(c >= 0);
				CHECK(write(c, "pong", 4) == 4);
				close(c);
			}
	}
}

static void
dial_both(uint16_t port)
{
	struct sockaddr_un un;
	socklen_t ul;
	char buf[4];
	int fd = dial(AF_INET, port);

	CHECK(read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
	close(fd);
	printf("127.0.0.1:%u: pong\n", (unsigned)port);
	abstract_name(&un, &ul);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&un, ul) == -1) {
		printf("@keep-serve: %s\n", strerror(errno));
		return;
	}
	CHECK(read(fd, buf, 4) == 4 && memcmp(buf, "pong", 4) == 0);
	printf("@keep-serve: pong\n");
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "hostile") == 0) {
		hostile();
		return 0;
	}
	if (argc > 1 && strcmp(argv[1], "egress") == 0) {
		egress();
		return 0;
	}
	if (argc > 2 && strcmp(argv[1], "serve") == 0)
		serve((uint16_t)atoi(argv[2]));
	if (argc > 2 && strcmp(argv[1], "dial") == 0) {
		dial_both((uint16_t)atoi(argv[2]));
		return 0;
	}
	tcp_fork(AF_INET);
	tcp_fork(AF_INET6);
	tcp_threads(AF_INET);
	tcp_threads(AF_INET6);
	udp_echo();
	unix_named(argc > 1 ? argv[1] : ".");
	unix_abstract();
	rights(argc > 1 ? argv[1] : ".");
	nonblocking();
	waitall();
	options();
	interrupted();
	return 0;
}

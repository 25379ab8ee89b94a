/*
 * The one program of bench/net.sh (issue 29's network benchmarks): a
 * static musl binary run both as a keep guest and natively, so each row
 * compares the same code on the two sides.
 *
 *   netbench sink PORT          a server on 127.0.0.1:PORT (0: any; the
 *                               port is printed): each connection is read
 *                               to its end, then answered with one byte
 *                               "k" and closed; one at a time, forever
 *   netbench stream HOST PORT MIB
 *                               connects to HOST:PORT (by name, through
 *                               getaddrinfo: in keep, keep's resolver and
 *                               egress), sends MIB MiB, shuts its side,
 *                               waits for the "k"; prints "stream MiB/s"
 *   netbench rtt HOST PORT N    N times: connect, send one byte, shut,
 *                               read the reply's first byte, close;
 *                               prints "rtt P50_US P90_US" of connect()
 *                               to that first byte (the name resolved
 *                               once, before the first)
 *   netbench http PORT          a tiny HTTP/1.1 server on 127.0.0.1:PORT
 *                               (0: any; printed): every request gets 200
 *                               and a 64-byte body, keep-alive unless the
 *                               request says close or is HTTP/1.0; one
 *                               thread, poll
 *
 * A baseline's tool, not keep code: built without the project's warning
 * set (mk/bench.mk), as bench/trap_floor.c is.
 */
#define _GNU_SOURCE
#include <sys/socket.h>

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void
die(const char *what)
{
	fprintf(stderr, "netbench: %s: %s\n", what, strerror(errno));
	exit(1);
}

static double
now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static int
listen_on(const char *port)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0)
		die("socket");
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(atoi(port));
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
		die("bind");
	if (listen(s, 1024) < 0)
		die("listen");
	if (getsockname(s, (struct sockaddr *)&a, &len) < 0)
		die("getsockname");
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	return s;
}

static void
resolve(const char *host, const char *port, struct sockaddr_in *out)
{
	struct addrinfo hints = { .ai_family = AF_INET,
		.ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int e = getaddrinfo(host, port, &hints, &ai);

	if (e) {
		fprintf(stderr, "netbench: %s: %s\n", host, gai_strerror(e));
		exit(1);
	}
	memcpy(out, ai->ai_addr, sizeof(*out));
	freeaddrinfo(ai);
}

static __attribute__((noreturn)) void
sink(const char *port)
{
	static char buf[1 << 18];
	int s = listen_on(port);

	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		int c = accept(s, NULL, NULL);
		ssize_t n;

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			die("accept");
		}
		while ((n = read(c, buf, sizeof(buf))) > 0)
			;
		if (n == 0)
			(void)!write(c, "k", 1);
		close(c);
	}
}

/* Connected to addr, or exit. */
static int
dial(const struct sockaddr_in *addr)
{
	int s = socket(AF_INET, SOCK_STREAM, 0);

	if (s < 0)
		die("socket");
	if (connect(s, (const struct sockaddr *)addr, sizeof(*addr)) < 0)
		die("connect");
	return s;
}

static int
stream(const char *host, const char *port, const char *mib)
{
	static char buf[1 << 18];
	long long total = atoll(mib) << 20, sent = 0;
	struct sockaddr_in addr;
	double t0, t1;
	char k;
	int s;

	memset(buf, 'x', sizeof(buf));
	resolve(host, port, &addr);
	t0 = now();
	s = dial(&addr);
	while (sent < total) {
		long long want = total - sent < (long long)sizeof(buf)
		    ? total - sent
		    : (long long)sizeof(buf);
		ssize_t n = write(s, buf, want);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		sent += n;
	}
	shutdown(s, SHUT_WR);
	if (read(s, &k, 1) != 1 || k != 'k') {
		fprintf(stderr, "netbench: no answer from the sink\n");
		return 1;
	}
	t1 = now();
	close(s);
	printf("stream %.1f\n", total / 1048576.0 / (t1 - t0));
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int
rtt(const char *host, const char *port, const char *count)
{
	int n = atoi(count), i;
	struct sockaddr_in addr;
	double *t;

	if (n < 1 || n > 1000000 || !(t = calloc(n, sizeof(*t))))
		return 1;
	resolve(host, port, &addr);
	for (i = 0; i < n; i++) {
		int s = socket(AF_INET, SOCK_STREAM, 0);
		double t0;
		char k;

		if (s < 0)
			die("socket");
		t0 = now();
		if (connect(s, (struct sockaddr *)&addr, sizeof(addr)) < 0)
			die("connect");
		if (write(s, "x", 1) != 1)
			die("write");
		shutdown(s, SHUT_WR);
		if (read(s, &k, 1) != 1) {
			fprintf(stderr, "netbench: no answer from the sink\n");
			return 1;
		}
		t[i] = (now() - t0) * 1e6;
		close(s);
	}
	qsort(t, n, sizeof(*t), cmp_double);
	printf("rtt %.1f %.1f\n", t[(n - 1) / 2], t[(n * 9 - 1) / 10]);
	return 0;
}

/* The HTTP server: one slot per connection, its request bytes so far. */
#define HTTP_MAX 1024
#define HTTP_REQ 8192

struct conn {
	int fd;
	size_t len;
	char req[HTTP_REQ];
};

#define HTTP_BODY                                                              \
	"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
static const char http_keep[] = "HTTP/1.1 200 OK\r\n"
                                "Content-Type: text/plain\r\n"
                                "Content-Length: 64\r\n"
                                "\r\n" HTTP_BODY;
/* Said when the server closes after it: a client that would reuse the
 * connection (wrk) then opens a new one instead of finding it gone. */
static const char http_close[] = "HTTP/1.1 200 OK\r\n"
                                 "Content-Type: text/plain\r\n"
                                 "Content-Length: 64\r\n"
                                 "Connection: close\r\n"
                                 "\r\n" HTTP_BODY;

/* Whether the request head (NUL-terminated) asks for the connection's end. */
static int
wants_close(const char *head)
{
	const char *eol = strstr(head, "\r\n");
	const char *p;

	if (eol && eol - head >= 8 && !strncmp(eol - 8, "HTTP/1.0", 8))
		return !strcasestr(head, "\nconnection: keep-alive");
	for (p = head; (p = strcasestr(p, "\nconnection:")); p++) {
		p += strlen("\nconnection:");
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncasecmp(p, "close", 5))
			return 1;
	}
	return 0;
}

/* Answers every whole request in c; 0 when c is to be closed. */
static int
http_serve(struct conn *c)
{
	char *end;

	while ((end = memmem(c->req, c->len, "\r\n\r\n", 4))) {
		size_t head = end + 4 - c->req;
		int close_after;
		char save = c->req[head - 1];

		c->req[head - 1] = 0;
		close_after = wants_close(c->req);
		c->req[head - 1] = save;
		/* GETs only: a request's body is not looked for. */
		if (close_after) {
			(void)!write(c->fd, http_close, sizeof(http_close) - 1);
			return 0;
		}
		if (write(c->fd, http_keep, sizeof(http_keep) - 1) !=
		    (ssize_t)sizeof(http_keep) - 1)
			return 0;
		memmove(c->req, c->req + head, c->len - head);
		c->len -= head;
	}
	return c->len < sizeof(c->req) - 1;
}

static __attribute__((noreturn)) void
http(const char *port)
{
	static struct conn conns[HTTP_MAX];
	static struct pollfd pfd[HTTP_MAX + 1];
	int s = listen_on(port), n = 0, i, one = 1;

	signal(SIGPIPE, SIG_IGN);
	for (;;) {
		pfd[0] = (struct pollfd){ .fd = s, .events = POLLIN };
		for (i = 0; i < n; i++)
			pfd[i + 1] = (struct pollfd){ .fd = conns[i].fd,
				.events = POLLIN };
		if (poll(pfd, n + 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			die("poll");
		}
		for (i = n - 1; i >= 0; i--) {
			struct conn *c = &conns[i];
			ssize_t r;

			if (!pfd[i + 1].revents)
				continue;
			r = read(c->fd, c->req + c->len,
			    sizeof(c->req) - 1 - c->len);
			if (r > 0) {
				c->len += r;
				if (http_serve(c))
					continue;
			}
			close(c->fd);
			conns[i] = conns[--n];
		}
		if (pfd[0].revents & POLLIN) {
			int fd = accept(s, NULL, NULL);

			if (fd < 0)
				continue;
			if (n == HTTP_MAX) {
				close(fd);
				continue;
			}
			setsockopt(
			    fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			conns[n].fd = fd;
			conns[n].len = 0;
			n++;
		}
	}
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "sink"))
		sink(argv[2]);
	if (argc == 5 && !strcmp(argv[1], "stream"))
		return stream(argv[2], argv[3], argv[4]);
	if (argc == 5 && !strcmp(argv[1], "rtt"))
		return rtt(argv[2], argv[3], argv[4]);
	if (argc == 3 && !strcmp(argv[1], "http"))
		http(argv[2]);
	fprintf(stderr,
	    "usage: netbench sink PORT | stream HOST PORT MIB | "
	    "rtt HOST PORT N | http PORT\n");
	return 2;
}

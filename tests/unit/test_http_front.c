/* Unit tests for the front's event loop, driven step by step in one
 * thread: a loopback listener, client sockets, front_step() between
 * writes and reads. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/api_fake.h"
#include "host/http/front.h"
#include "lib/task.h"

struct env {
	int lfd;
	struct sockaddr_in sin;
	struct api_fake *fake;
	struct api_backend be;
	struct api *api;
	struct front_limits lim;
	struct front *front;
};

static int
setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	socklen_t len = sizeof(e->sin);

	assert_non_null(e);
	e->fake = api_fake_new(NULL, NULL);
	api_fake_backend(e->fake, &e->be);
	api_fake_add_token(e->fake, "t", "admin", CAP_ALL, NULL, 0);
	e->api = api_new(&e->be, NULL);
	assert_non_null(e->api);
	front_limits_default(&e->lim);
	e->lim.max_conns = 4;
	/* Connections must outlive the steps whatever the clock: on a loaded
	 * machine the test can be descheduled for longer than any short
	 * timeout. The test of the timeouts sets its own. */
	e->lim.head_timeout_ms = 600000;
	e->lim.idle_timeout_ms = 600000;
	e->lim.max_pending_out = 4096;
	e->lfd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(e->lfd >= 0);
	e->sin.sin_family = AF_INET;
	e->sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(
	    bind(e->lfd, (struct sockaddr *)&e->sin, sizeof(e->sin)), 0);
	assert_int_equal(listen(e->lfd, 16), 0);
	assert_int_equal(
	    getsockname(e->lfd, (struct sockaddr *)&e->sin, &len), 0);
	e->front = front_new(e->lfd, e->api, &e->lim, NULL);
	assert_non_null(e->front);
	*state = e;
	return 0;
}

static int
teardown(void **state)
{
	struct env *e = *state;

	front_free(e->front);
	close(e->lfd);
	api_free(e->api);
	api_fake_free(e->fake);
	free(e);
	return 0;
}

/*
 * Step the front until cond holds, at most STEPS_MAX steps of up to 10 ms
 * each: a bounded poll. A step returns as soon as the front has an event,
 * so a loaded machine only makes the wait longer, never the test wrong;
 * the callers then assert cond.
 */
#define STEPS_MAX 3000
#define step_until(e, cond)                                                    \
	do {                                                                   \
		for (int step_ = 0; step_ < STEPS_MAX && !(cond); step_++)     \
			front_step((e)->front, 10);                            \
	} while (0)

static int
readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

/* A client connection, once the front has taken it in (or refused it:
 * then its 503 waits to be read). */
static int
client(struct env *e)
{
	unsigned before = front_nconns(e->front);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(
	    connect(fd, (struct sockaddr *)&e->sin, sizeof(e->sin)), 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	step_until(e, front_nconns(e->front) > before || readable(fd));
	return fd;
}

static void
put(int fd, const char *s)
{
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

/*
 * Step the front and collect what the client receives, until `want`
 * bytes have arrived, the peer closes (*closed = 1), or `steps` pass.
 */
static size_t
collect(struct env *e, int fd, char *buf, size_t cap, size_t want, int steps,
    int *closed)
{
	size_t have = 0;

	*closed = 0;
	for (int i = 0; i < steps && have < want; i++) {
		ssize_t n;

		front_step(e->front, 10);
		while ((n = read(fd, buf + have, cap - 1 - have)) > 0)
			have += (size_t)n;
		if (n == 0) {
			*closed = 1;
			break;
		}
	}
	buf[have] = '\0';
	return have;
}

/* Step and collect until needle has arrived, the peer closes (*closed =
 * 1) or STEPS_MAX steps pass. */
static size_t
collect_until(struct env *e, int fd, char *buf, size_t cap, const char *needle,
    int *closed)
{
	size_t have = 0;

	*closed = 0;
	buf[0] = '\0';
	for (int i = 0; i < STEPS_MAX && strstr(buf, needle) == NULL; i++) {
		ssize_t n;

		front_step(e->front, 10);
		while ((n = read(fd, buf + have, cap - 1 - have)) > 0)
			have += (size_t)n;
		buf[have] = '\0';
		if (n == 0) {
			*closed = 1;
			break;
		}
	}
	return have;
}

static int
count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p++)
		n++;
	return n;
}

static void
test_pipelined_and_split(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd = client(e), closed;

	/* Three requests in one write, the last split across two. */
	put(fd,
	    "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n"
	    "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\nGET /hea");
	collect(e, fd, buf, sizeof(buf), 1 << 20, 5, &closed);
	assert_int_equal(count(buf, "HTTP/1.1 200 OK"), 2);
	assert_false(closed);
	put(fd, "lthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_int_equal(count(buf, "HTTP/1.1 200 OK"), 1);
	assert_true(closed);
	close(fd);
}

static void
test_body_in_pieces(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd = client(e), closed;

	put(fd,
	    "POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\nAuthorization: "
	    "Bearer t\r\nContent-Length: 14\r\n\r\n{\"ima");
	collect(e, fd, buf, sizeof(buf), 1 << 20, 3, &closed);
	assert_int_equal(strlen(buf), 0);
	put(fd, "ge\":\"js\"}");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 201 Created"));
	/* Chunked, with Expect: 100-continue. */
	put(fd,
	    "POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\nAuthorization: "
	    "Bearer t\r\nTransfer-Encoding: chunked\r\nExpect: "
	    "100-continue\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_string_equal(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	put(fd, "7\r\n{\"image\r\n7\r\n\":\"js\"}\r\n0\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 201 Created"));
	assert_false(closed);
	close(fd);
}

static void
test_malformed_closes(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd = client(e), other = client(e), closed;

	/* Smuggling attempt: refused once, connection closed, nothing
	 * after it is answered. */
	put(fd,
	    "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /healthz "
	    "HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_int_equal(count(buf, "HTTP/1.1 "), 1);
	assert_non_null(strstr(buf, "HTTP/1.1 400 Bad Request"));
	assert_non_null(strstr(buf, "Connection: close"));
	assert_true(closed);
	close(fd);
	/* The other connection is still served. */
	put(other, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, other, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 OK"));
	close(other);
}

static void
test_refusal_survives_unread_body(void **state)
{
	struct env *e = *state;
	char buf[8192], junk[65536];
	int fd = client(e), closed;
	ssize_t sent = 0;

	/* A body over the limit arrives with its head: the 413 must reach
	 * the client intact, not be lost to a reset. */
	put(fd,
	    "POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\nContent-Length: "
	    "5000000\r\n\r\n");
	memset(junk, 'x', sizeof(junk));
	for (int i = 0; i < 4; i++) {
		ssize_t n = write(fd, junk, sizeof(junk));
		if (n > 0)
			sent += n;
		front_step(e->front, 10);
	}
	assert_true(sent > 0);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 100, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 413 Content Too Large"));
	assert_non_null(strstr(buf, "PAYLOAD_TOO_LARGE"));
	close(fd);
}

static void
test_http10_keepalive(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd = client(e), closed;

	put(fd, "GET /healthz HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "\r\nConnection: keep-alive\r\n"));
	assert_false(closed);
	put(fd, "GET /healthz HTTP/1.0\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "\r\nConnection: close\r\n"));
	assert_true(closed);
	close(fd);
}

static void
post(int fd, const char *target, const char *body)
{
	char head[512];

	snprintf(head, sizeof(head),
	    "POST %s HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer t\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    target, strlen(body));
	put(fd, head);
	put(fd, body);
}

static void
test_deferred_in_order(void **state)
{
	struct env *e = *state;
	char buf[8192], *a, *b;
	int fd = client(e), gone = client(e), closed;

	post(fd, "/v1/sandboxes", "{\"image\":\"python\"}");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "201 Created"));

	/* A deferred run, then a quick request pipelined behind it. */
	post(fd, "/v1/sandboxes/sbx-1/execute", "{\"code\":\"defer-1\"}");
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	step_until(e, api_fake_pending(e->fake) == 1);
	assert_int_equal(api_fake_pending(e->fake), 1);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	/* Other connections are served meanwhile. */
	put(gone, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, gone, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "200 OK"));
	post(gone, "/v1/sandboxes/sbx-1/execute", "{\"code\":\"defer-2\"}");
	step_until(e, api_fake_pending(e->fake) == 2);
	close(gone);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);

	/* The runs finish: replies in request order; the one whose client
	 * left is dropped. */
	assert_int_equal(api_fake_flush(e->fake), 2);
	collect_until(e, fd, buf, sizeof(buf), "{\"status\":\"ok\"}", &closed);
	a = strstr(buf, "\"stdout\":\"defer-1\"");
	b = strstr(buf, "{\"status\":\"ok\"}");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_false(closed);
	step_until(e, front_nconns(e->front) == 1);
	assert_int_equal(front_nconns(e->front), 1);
	close(fd);
}

static void
test_deferred_sse_stream(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd = client(e), closed;
	const char *body = "{\"code\":\"defer-x\"}";
	char head[512];

	post(fd, "/v1/sandboxes", "{\"image\":\"python\"}");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	snprintf(head, sizeof(head),
	    "POST /v1/sandboxes/sbx-1/execute HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\nAccept: text/event-stream\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	put(fd, head);
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	step_until(e, api_fake_pending(e->fake) == 1);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_int_equal(api_fake_flush(e->fake), 1);
	collect_until(e, fd, buf, sizeof(buf), "{\"status\":\"ok\"}", &closed);
	/* A chunked event stream: output events, exit, the last chunk; then
	 * the pipelined request's reply. */
	assert_non_null(strstr(buf,
	    "HTTP/1.1 200 OK\r\nContent-Type: "
	    "text/event-stream\r\n"));
	assert_non_null(strstr(buf, "Transfer-Encoding: chunked\r\n"));
	assert_non_null(
	    strstr(buf, "event: stdout\ndata: {\"data\":\"defer-x\"}\n\n\r\n"));
	assert_non_null(
	    strstr(buf, "event: stderr\ndata: {\"data\":\"done\"}"));
	assert_non_null(strstr(buf, "event: exit\ndata: {\"exit_code\":0"));
	assert_true(strstr(buf, "\r\n0\r\n\r\nHTTP/1.1 200 OK") != NULL);
	assert_false(closed);
	close(fd);
}

/* The context id in a reply that holds one. */
static void
ctx_id(const char *buf, char *out, size_t len)
{
	const char *p = strstr(buf, "\"id\":\"");
	size_t n;

	assert_non_null(p);
	p += 6;
	n = strcspn(p, "\"");
	assert_true(n < len);
	memcpy(out, p, n);
	out[n] = '\0';
}

static void
test_deferred_cell_lines(void **state)
{
	struct env *e = *state;
	char buf[8192], head[512], body[128], cid[64];
	int fd = client(e), closed;
	const char *a, *b, *c;

	post(fd, "/v1/sandboxes", "{\"image\":\"python\"}");
	collect(e, fd, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	post(fd, "/v1/sandboxes/sbx-1/contexts", "{}");
	collect_until(e, fd, buf, sizeof(buf), "}", &closed);
	ctx_id(buf, cid, sizeof(cid));
	snprintf(body, sizeof(body),
	    "{\"code\":\"defer-c\",\"context_id\":\"%s\"}", cid);
	snprintf(head, sizeof(head),
	    "POST /v1/sandboxes/sbx-1/execute HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\nAccept: application/x-ndjson\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	put(fd, head);
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	step_until(e, api_fake_pending(e->fake) == 1);
	assert_int_equal(api_fake_flush(e->fake), 1);
	collect_until(e, fd, buf, sizeof(buf), "{\"status\":\"ok\"}", &closed);
	/* Chunked ndjson: the first line whole though it came in two
	 * pieces, then the reply's rest: the raw output, the count last. */
	assert_non_null(strstr(
	    buf, "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\n"));
	assert_non_null(strstr(buf, "Transfer-Encoding: chunked\r\n"));
	a = strstr(buf,
	    "\r\n{\"type\":\"stdout\",\"text\":\"python: defer-c\\n\"}\n\r\n");
	b = strstr(buf, "{\"type\":\"stderr\",\"text\":\"raw\"}\n");
	c = strstr(
	    buf, "{\"type\":\"number_of_executions\",\"execution_count\":1}\n");
	assert_non_null(a);
	assert_non_null(b);
	assert_non_null(c);
	assert_true(a < b && b < c);
	assert_int_equal(count(buf, "number_of_executions"), 1);
	assert_true(strstr(buf, "\r\n0\r\n\r\nHTTP/1.1 200 OK") != NULL);

	/* Without ndjson, the one object as before: nothing streamed. */
	snprintf(body, sizeof(body),
	    "{\"code\":\"defer-d\",\"context_id\":\"%s\"}", cid);
	post(fd, "/v1/sandboxes/sbx-1/execute", body);
	step_until(e, api_fake_pending(e->fake) == 1);
	assert_int_equal(api_fake_flush(e->fake), 1);
	collect_until(e, fd, buf, sizeof(buf), "\"reason\"", &closed);
	assert_non_null(strstr(buf, "Content-Type: application/json\r\n"));
	assert_null(strstr(buf, "chunked"));
	assert_non_null(strstr(buf, "\"stdout\":\"python: defer-d\\n\""));
	assert_non_null(strstr(buf, "\"stderr\":\"raw\""));
	assert_non_null(strstr(buf, "\"execution_count\":2"));
	assert_false(closed);
	close(fd);
}

/* A client from a given loopback source address. */
static int
client_from(struct env *e, const char *src)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	assert_int_equal(inet_pton(AF_INET, src, &a.sin_addr), 1);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(
	    connect(fd, (struct sockaddr *)&e->sin, sizeof(e->sin)), 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
	return fd;
}

/* Make fd's connection proven: an authenticated request, answered. */
static void
prove(struct env *e, int fd)
{
	char buf[8192];
	int closed;

	put(fd,
	    "GET /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\n\r\n");
	collect_until(e, fd, buf, sizeof(buf), "HTTP/1.1 200 ", &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	assert_false(closed);
}

/*
 * Every slot taken by idle connections that never authenticated: a
 * newcomer gets in and the oldest of them goes. Every slot taken by
 * proven ones: 503.
 */
static void
test_connection_limit(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fds[6], closed;

	e->lim.idle_timeout_ms = 60000;
	e->lim.unproven_timeout_ms = 60000;
	for (int i = 0; i < 4; i++)
		fds[i] = client(e);
	/* The fifth takes the oldest one's slot: the count stays 4, and the
	 * oldest reads its end. */
	fds[4] = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fds[4] >= 0);
	assert_int_equal(
	    connect(fds[4], (struct sockaddr *)&e->sin, sizeof(e->sin)), 0);
	fcntl(fds[4], F_SETFL, fcntl(fds[4], F_GETFL) | O_NONBLOCK);
	step_until(e, readable(fds[0]));
	assert_int_equal(front_nconns(e->front), 4);
	collect(e, fds[0], buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_true(closed);
	put(fds[4], "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect_until(e, fds[4], buf, sizeof(buf), "HTTP/1.1 200 ", &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	for (int i = 1; i < 5; i++)
		prove(e, fds[i]);
	fds[5] = client(e);
	collect(e, fds[5], buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	assert_true(closed);
	for (int i = 0; i < 6; i++)
		close(fds[i]);
}

/* One address may hold max_conns_per_client; another still gets in. */
static void
test_per_client_limit(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int a[3], b, closed;

	e->lim.max_conns_per_client = 2;
	for (int i = 0; i < 3; i++)
		a[i] = client_from(e, "127.0.0.2");
	collect(e, a[2], buf, sizeof(buf), 1 << 20, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	assert_non_null(strstr(buf, "from this address"));
	assert_true(closed);
	b = client_from(e, "127.0.0.1");
	put(b, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect_until(e, b, buf, sizeof(buf), "HTTP/1.1 200 ", &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	for (int i = 0; i < 3; i++)
		close(a[i]);
	close(b);
}

/* An unproven connection idles for unproven_timeout_ms only; a proven
 * one for idle_timeout_ms. */
static void
test_unproven_idle(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int idle, proven, closed = 0;

	e->lim.idle_timeout_ms = 60000;
	/* Proven first, under a long limit: a test descheduled for longer
	 * than the short one must not lose this connection before its
	 * request (front_unit_stalls.sh stops it 300 ms at a time). */
	e->lim.unproven_timeout_ms = 60000;
	proven = client(e);
	prove(e, proven);
	e->lim.unproven_timeout_ms = 100;
	idle = client(e);
	for (int i = 0; i < 200 && !closed; i++)
		collect(e, idle, buf, sizeof(buf), 1 << 20, 1, &closed);
	assert_true(closed);
	collect(e, proven, buf, sizeof(buf), 1 << 20, 1, &closed);
	assert_false(closed);
	close(idle);
	close(proven);
}

/*
 * Replies waiting for clients that do not read are bounded in all: past
 * max_pending_total the connection with the most waiting is closed, and
 * the others are served.
 */
static void
test_pending_total(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int slow[2], fast, closed, nclosed = 0, small = 4096;

	e->lim.max_pending_total = 1 << 20;
	e->lim.max_pending_out = 4 << 20;
	for (int i = 0; i < 2; i++) {
		slow[i] = socket(AF_INET, SOCK_STREAM, 0);
		assert_true(slow[i] >= 0);
		setsockopt(
		    slow[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
		assert_int_equal(connect(slow[i], (struct sockaddr *)&e->sin,
		                     sizeof(e->sin)),
		    0);
		fcntl(slow[i], F_SETFL, fcntl(slow[i], F_GETFL) | O_NONBLOCK);
		/* More than the kernel's socket buffers hold. */
		for (int k = 0; k < 120; k++)
			put(slow[i],
			    "GET /v1/openapi.json HTTP/1.1\r\n"
			    "Host: a\r\n\r\n");
		for (int k = 0; k < 10; k++)
			front_step(e->front, 10);
	}
	/* At least one of them was closed (they do not read: the front's
	 * share of their replies passes the bound). */
	assert_true(front_nconns(e->front) < 2);
	/* Its client sees the end of the stream once it reads what the
	 * kernel still holds (bounded poll). */
	for (int step = 0; step < 500 && nclosed == 0; step++) {
		front_step(e->front, 10);
		for (int i = 0; i < 2; i++) {
			char sink[65536];
			ssize_t n;

			while ((n = read(slow[i], sink, sizeof(sink))) > 0)
				;
			if (n == 0 || (n == -1 && errno == ECONNRESET))
				nclosed++;
		}
	}
	assert_true(nclosed >= 1);
	fast = client(e);
	put(fast, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect_until(e, fast, buf, sizeof(buf), "HTTP/1.1 200 ", &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 200 "));
	close(slow[0]);
	close(slow[1]);
	close(fast);
}

static void
test_slow_head_times_out(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fd, closed;

	/* Only the head's deadline is short: a connection that has not sent
	 * a byte yet is not timed out by a descheduled test. */
	e->lim.head_timeout_ms = 200;
	fd = client(e);
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n");
	/* Trickling bytes does not extend the head deadline. */
	for (int i = 0; i < 40; i++) {
		char hdr[32];
		snprintf(hdr, sizeof(hdr), "X-%d: y\r\n", i);
		if (write(fd, hdr, strlen(hdr)) < 0)
			break;
		usleep(30000);
		collect(e, fd, buf, sizeof(buf), 1, 1, &closed);
		if (closed || buf[0] != '\0')
			break;
	}
	if (!closed)
		collect(e, fd, buf, sizeof(buf), 1 << 20, 50, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 408 Request Timeout"));
	close(fd);
}

static void
test_idle_closed_silently(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int idle, closed;

	e->lim.idle_timeout_ms = 200;
	idle = client(e);
	/* Bounded by steps, not by the clock: 1,000 steps of up to 10 ms
	 * each are far longer than the timeout. */
	collect(e, idle, buf, sizeof(buf), 1 << 20, 1000, &closed);
	assert_true(closed);
	assert_int_equal(strlen(buf), 0);
	close(idle);
}

static void
test_backpressure(void **state)
{
	struct env *e = *state;
	char req[] = "GET /v1/openapi.json HTTP/1.1\r\nHost: a\r\n\r\n";
	/* Room for 40 copies of the OpenAPI document, which grows with
	 * the API (about 110 KB now). */
	char *buf = malloc(1 << 23);
	int fd = client(e), closed;
	size_t total = 0;

	assert_non_null(buf);
	buf[0] = '\0';
	/* Many pipelined requests for a document far larger than
	 * max_pending_out: the front stops parsing while output waits, and
	 * still answers every one, in order, none dropped. */
	for (int i = 0; i < 40; i++)
		put(fd, req);
	for (int i = 0; i < 2000 && count(buf, "HTTP/1.1 200") < 40; i++) {
		total += collect(
		    e, fd, buf + total, (1 << 23) - total, 1 << 23, 1, &closed);
		if (closed)
			break;
	}
	if (count(buf, "HTTP/1.1 200 OK") != 40)
		fprintf(stderr, "closed %d total %zu\n", closed, total);
	assert_int_equal(count(buf, "HTTP/1.1 200 OK"), 40);
	free(buf);
	close(fd);
}

/*
 * A backend whose authenticate suspends the request's task for the token
 * "slow", as the real backend does while it waits on another process;
 * the test resumes it.
 */
static int (*real_authenticate)(
    void *, const char *, size_t, struct api_principal *, struct api_error *);
static struct task *parked;

static int
slow_authenticate(void *ctx, const char *tok, size_t len,
    struct api_principal *who, struct api_error *err)
{
	if (len == 4 && memcmp(tok, "slow", 4) == 0) {
		parked = task_self();
		if (parked == NULL)
			return API_EINTERNAL; /* not in a task: the test fails */
		task_suspend();
		tok = "t";
		len = 1;
	}
	return real_authenticate(ctx, tok, len, who, err);
}

static void
test_suspended_request_in_order(void **state)
{
	struct env *e = *state;
	char buf[8192], *a, *b;
	int fd, other, closed;

	fd = client(e);
	other = client(e);
	real_authenticate = e->be.authenticate;
	e->be.authenticate = slow_authenticate;
	parked = NULL;
	put(fd,
	    "GET /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer slow\r\n\r\n"
	    "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	step_until(e, parked != NULL);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_non_null(parked);

	/* The loop serves other connections while the task waits. */
	put(other,
	    "GET /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\n\r\n");
	collect(e, other, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "200 OK"));

	/* Its reply comes when it ends, before the pipelined request's. */
	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	collect_until(e, fd, buf, sizeof(buf), "{\"status\":\"ok\"}", &closed);
	a = strstr(buf, "\"sandboxes\"");
	b = strstr(buf, "{\"status\":\"ok\"}");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_false(closed);

	/* A client that leaves while its request waits: the connection is
	 * held for the reply, then closed; nothing else is hurt. */
	parked = NULL;
	put(fd,
	    "GET /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer slow\r\n\r\n");
	step_until(e, parked != NULL);
	assert_non_null(parked);
	close(fd);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
	assert_int_equal(front_nconns(e->front), 2);
	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	step_until(e, front_nconns(e->front) == 1);
	assert_int_equal(front_nconns(e->front), 1);
	e->be.authenticate = real_authenticate;
	close(other);
}

/* A create that waits (as the real one waits on the vmm) the first
 * time; the test resumes it. */
static int (*real_create)(void *, const struct api_call *,
    const struct api_sandbox_spec *, struct api_sandbox *, struct api_token *,
    struct api_error *);

static int
slow_create(void *ctx, const struct api_call *call,
    const struct api_sandbox_spec *spec, struct api_sandbox *out,
    struct api_token *tok, struct api_error *err)
{
	if (parked == NULL) {
		if ((parked = task_self()) == NULL)
			return API_EINTERNAL;
		task_suspend();
	}
	return real_create(ctx, call, spec, out, tok, err);
}

static void
create_with_key(int fd)
{
	static const char body[] = "{\"image\":\"python\"}";
	char head[256];

	snprintf(head, sizeof(head),
	    "POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\nIdempotency-Key: k1\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	    sizeof(body) - 1);
	put(fd, head);
	put(fd, body);
}

/* While the first request with a key waits, a second with the same key
 * is told it is in progress instead of creating a second sandbox. */
static void
test_idempotency_while_suspended(void **state)
{
	struct env *e = *state;
	char buf[8192], first[8192];
	const char *id;
	int a, b, closed;

	a = client(e);
	b = client(e);
	real_create = e->be.sandbox_create;
	e->be.sandbox_create = slow_create;
	parked = NULL;
	create_with_key(a);
	step_until(e, parked != NULL);
	collect(e, a, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_non_null(parked);

	create_with_key(b);
	collect(e, b, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "409 Conflict"));
	assert_non_null(strstr(buf, "in progress"));

	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	collect(e, a, first, sizeof(first), 1, 50, &closed);
	assert_non_null(strstr(first, "201 Created"));
	assert_non_null(id = strstr(first, "\"id\":\""));

	/* Afterwards: the first result again, the same sandbox. */
	create_with_key(b);
	collect(e, b, buf, sizeof(buf), 1, STEPS_MAX, &closed);
	assert_non_null(strstr(buf, "201 Created"));
	assert_non_null(strstr(buf, id));
	e->be.sandbox_create = real_create;
	close(a);
	close(b);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	/* A client writing to a connection the front has closed gets EPIPE,
	 * which the tests check, not a signal that ends the whole run. */
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		T(test_pipelined_and_split),
		T(test_body_in_pieces),
		T(test_malformed_closes),
		T(test_refusal_survives_unread_body),
		T(test_http10_keepalive),
		T(test_deferred_in_order),
		T(test_deferred_sse_stream),
		T(test_deferred_cell_lines),
		T(test_connection_limit),
		T(test_per_client_limit),
		T(test_unproven_idle),
		T(test_pending_total),
		T(test_slow_head_times_out),
		T(test_idle_closed_silently),
		T(test_backpressure),
		T(test_suspended_request_in_order),
		T(test_idempotency_while_suspended),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for the front's event loop, driven step by step in one
 * thread: a loopback listener, client sockets, front_step() between
 * writes and reads. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
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

#include "host/api/api_fake.h"
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

static int
client(struct env *e)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(
	    connect(fd, (struct sockaddr *)&e->sin, sizeof(e->sin)), 0);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
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
	collect(e, fd, buf, sizeof(buf), 1 << 20, 20, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 201 Created"));
	/* Chunked, with Expect: 100-continue. */
	put(fd,
	    "POST /v1/sandboxes HTTP/1.1\r\nHost: a\r\nAuthorization: "
	    "Bearer t\r\nTransfer-Encoding: chunked\r\nExpect: "
	    "100-continue\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
	assert_string_equal(buf, "HTTP/1.1 100 Continue\r\n\r\n");
	put(fd, "7\r\n{\"image\r\n7\r\n\":\"js\"}\r\n0\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1 << 20, 50, &closed);
	assert_int_equal(count(buf, "HTTP/1.1 "), 1);
	assert_non_null(strstr(buf, "HTTP/1.1 400 Bad Request"));
	assert_non_null(strstr(buf, "Connection: close"));
	assert_true(closed);
	close(fd);
	/* The other connection is still served. */
	put(other, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, other, buf, sizeof(buf), 1, 50, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "\r\nConnection: keep-alive\r\n"));
	assert_false(closed);
	put(fd, "GET /healthz HTTP/1.0\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, 50, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "201 Created"));

	/* A deferred run, then a quick request pipelined behind it. */
	post(fd, "/v1/sandboxes/sbx-1/execute", "{\"code\":\"defer-1\"}");
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	/* Other connections are served meanwhile. */
	put(gone, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, gone, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "200 OK"));
	post(gone, "/v1/sandboxes/sbx-1/execute", "{\"code\":\"defer-2\"}");
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
	close(gone);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);

	/* The runs finish: replies in request order; the one whose client
	 * left is dropped. */
	assert_int_equal(api_fake_flush(e->fake), 2);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 20, &closed);
	a = strstr(buf, "\"stdout\":\"defer-1\"");
	b = strstr(buf, "{\"status\":\"ok\"}");
	assert_non_null(a);
	assert_non_null(b);
	assert_true(a < b);
	assert_false(closed);
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
	collect(e, fd, buf, sizeof(buf), 1, 50, &closed);
	snprintf(head, sizeof(head),
	    "POST /v1/sandboxes/sbx-1/execute HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\nAccept: text/event-stream\r\n"
	    "Content-Length: %zu\r\n\r\n%s",
	    strlen(body), body);
	put(fd, head);
	put(fd, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n");
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_int_equal(api_fake_flush(e->fake), 1);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 20, &closed);
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

static void
test_connection_limit(void **state)
{
	struct env *e = *state;
	char buf[8192];
	int fds[5], closed;

	for (int i = 0; i < 5; i++)
		fds[i] = client(e);
	assert_int_equal(front_nconns(e->front), 4);
	collect(e, fds[4], buf, sizeof(buf), 1 << 20, 5, &closed);
	assert_non_null(strstr(buf, "HTTP/1.1 503 "));
	assert_true(closed);
	for (int i = 0; i < 5; i++)
		close(fds[i]);
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
	char *buf = malloc(1 << 22);
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
		    e, fd, buf + total, (1 << 22) - total, 1 << 22, 1, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_non_null(parked);

	/* The loop serves other connections while the task waits. */
	put(other,
	    "GET /v1/sandboxes HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer t\r\n\r\n");
	collect(e, other, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "200 OK"));

	/* Its reply comes when it ends, before the pipelined request's. */
	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	collect(e, fd, buf, sizeof(buf), 1 << 20, 20, &closed);
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
	collect(e, fd, buf, sizeof(buf), 1, 10, &closed);
	assert_non_null(parked);
	close(fd);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
	assert_int_equal(front_nconns(e->front), 2);
	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	for (int i = 0; i < 5; i++)
		front_step(e->front, 10);
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
	collect(e, a, buf, sizeof(buf), 1 << 20, 10, &closed);
	assert_int_equal(strlen(buf), 0);
	assert_non_null(parked);

	create_with_key(b);
	collect(e, b, buf, sizeof(buf), 1, 50, &closed);
	assert_non_null(strstr(buf, "409 Conflict"));
	assert_non_null(strstr(buf, "in progress"));

	assert_int_equal(task_run(parked), TASK_DONE);
	task_free(parked);
	collect(e, a, first, sizeof(first), 1, 50, &closed);
	assert_non_null(strstr(first, "201 Created"));
	assert_non_null(id = strstr(first, "\"id\":\""));

	/* Afterwards: the first result again, the same sandbox. */
	create_with_key(b);
	collect(e, b, buf, sizeof(buf), 1, 50, &closed);
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
		T(test_connection_limit),
		T(test_slow_head_times_out),
		T(test_idle_closed_silently),
		T(test_backpressure),
		T(test_suspended_request_in_order),
		T(test_idempotency_while_suspended),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

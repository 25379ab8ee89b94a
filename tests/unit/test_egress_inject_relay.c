/*
 * Unit tests for the TLS relay of secrets injected at egress
 * (host/egress/relay.c), without keepd: a guest (libtls client trusting
 * the appliance CA), the relay, and an upstream server (libtls, its
 * certificate from a CA the relay's bundle holds), each in its own
 * process over socketpairs. The server answers with the head it
 * received as the body, so the test sees exactly what reached it.
 */
#include <sys/socket.h>
#include <sys/wait.h>

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
#include <tls.h>

#include "host/egress/appca.h"
#include "host/egress/relay.h"

#define NAME "api.example.test"
#define PH "keep-placeholder-gh-0123456789abcdef0123456789abcdef"
#define VAL "s3cr3t-value-42"

struct pem {
	char *cert, *key;
	size_t cert_len, key_len;
};

static char dir[] = "/tmp/keep-relay-XXXXXX";
static struct pem appca, upca, upleaf, otherca;

static void
slurp(const char *path, char **out, size_t *len)
{
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	*out = calloc(1, 8192);
	*len = fread(*out, 1, 8191, f);
	fclose(f);
}

static void
make_ca(const char *tag, struct pem *p)
{
	char kp[128], cp[128];

	snprintf(kp, sizeof(kp), "%s/%s.key", dir, tag);
	snprintf(cp, sizeof(cp), "%s/%s.pem", dir, tag);
	assert_int_equal(egress_appca_ensure(kp, cp), 0);
	slurp(cp, &p->cert, &p->cert_len);
	slurp(kp, &p->key, &p->key_len);
	unlink(kp);
	unlink(cp);
}

static int
setup(void **state)
{
	(void)state;
	/* As in every keepd process (host/parent.c): a peer's close is an
	 * error to handle, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (mkdtemp(dir) == NULL)
		return -1;
	make_ca("appca", &appca);
	make_ca("upca", &upca);
	make_ca("other", &otherca);
	/* The upstream server's certificate, for NAME, from upca. */
	if (egress_appca_leaf(upca.cert, upca.cert_len, upca.key, upca.key_len,
	        NAME, &upleaf.cert, &upleaf.cert_len, &upleaf.key,
	        &upleaf.key_len) != 0)
		return -1;
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	rmdir(dir);
	return 0;
}

/* The upstream server: one request head in, echoed as the body. Exits
 * 0 when it got a request, 1 when none came. */
static void __attribute__((noreturn)) upstream(int fd)
{
	struct tls_config *cfg = tls_config_new();
	struct tls *srv = tls_server(), *c = NULL;
	char buf[16384], out[17000];
	size_t got = 0;
	ssize_t n;
	int len;

	if (tls_config_set_keypair_mem(cfg, (uint8_t *)upleaf.cert,
	        upleaf.cert_len, (uint8_t *)upleaf.key, upleaf.key_len) != 0 ||
	    tls_configure(srv, cfg) != 0 || tls_accept_socket(srv, &c, fd) != 0)
		_exit(1);
	while (got < sizeof(buf) - 1 &&
	    (n = tls_read(c, buf + got, sizeof(buf) - 1 - got)) > 0) {
		got += (size_t)n;
		buf[got] = '\0';
		if (strstr(buf, "\r\n\r\n") != NULL)
			break;
	}
	if (got == 0)
		_exit(1);
	len = snprintf(out, sizeof(out),
	    "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n%s", got, buf);
	(void)tls_write(c, out, (size_t)len);
	tls_close(c);
	_exit(0);
}

/*
 * One connection through the relay: the guest sends `request` (with
 * ALPN `alpn`), the reply is read into reply. The relay's result comes
 * back in *r; *upstream_got says whether the server got a request.
 */
static void
run(const struct pem *bundle, const char *alpn, const char *request,
    char *reply, size_t replylen, struct egress_relay_result *r,
    int *upstream_got)
{
	int gp[2], up[2], rp[2], st;
	pid_t relay, server;
	struct tls_config *cfg;
	struct tls *c;
	size_t got = 0;
	ssize_t n;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, gp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, up), 0);
	assert_int_equal(pipe(rp), 0);
	if ((server = fork()) == 0) {
		close(gp[0]);
		close(gp[1]);
		close(up[0]);
		upstream(up[1]);
	}
	if ((relay = fork()) == 0) {
		struct egress_relay_cfg rc;
		struct egress_relay_result res;

		close(gp[0]);
		close(up[1]);
		memset(&rc, 0, sizeof(rc));
		rc.inject.name = NAME;
		rc.inject.port = 443;
		rc.inject.header = "Authorization";
		rc.inject.placeholder = PH;
		rc.inject.value = (const uint8_t *)VAL;
		rc.inject.value_len = strlen(VAL);
		rc.ca_bundle = bundle->cert;
		rc.ca_len = bundle->cert_len;
		rc.appca_cert = appca.cert;
		rc.appca_cert_len = appca.cert_len;
		rc.appca_key = appca.key;
		rc.appca_key_len = appca.key_len;
		rc.idle_ms = 5000;
		(void)egress_relay_run(&rc, gp[1], up[0], &res);
		_exit(write(rp[1], &res, sizeof(res)) == (ssize_t)sizeof(res)
		        ? 0
		        : 1);
	}
	close(gp[1]);
	close(up[0]);
	close(up[1]);
	close(rp[1]);
	cfg = tls_config_new();
	assert_int_equal(
	    tls_config_set_ca_mem(cfg, (uint8_t *)appca.cert, appca.cert_len),
	    0);
	if (alpn != NULL)
		assert_int_equal(tls_config_set_alpn(cfg, alpn), 0);
	c = tls_client();
	assert_int_equal(tls_configure(c, cfg), 0);
	assert_int_equal(tls_connect_socket(c, gp[0], NAME), 0);
	assert_int_equal(tls_handshake(c), 0);
	if (alpn != NULL) {
		assert_non_null(tls_conn_alpn_selected(c));
		assert_string_equal(tls_conn_alpn_selected(c), "http/1.1");
	}
	do
		n = tls_write(c, request, strlen(request));
	while (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT);
	assert_int_equal(n, (ssize_t)strlen(request));
	/* TLS 1.3's tickets make a blocking read say "again" now and then. */
	while (got < replylen - 1) {
		n = tls_read(c, reply + got, replylen - 1 - got);
		if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	reply[got] = '\0';
	tls_close(c);
	tls_free(c);
	tls_config_free(cfg);
	close(gp[0]);
	assert_int_equal(read(rp[0], r, sizeof(*r)), (ssize_t)sizeof(*r));
	close(rp[0]);
	assert_int_equal(waitpid(relay, &st, 0), relay);
	/* The server waits for a request or for the relay's close. */
	assert_int_equal(waitpid(server, &st, 0), server);
	*upstream_got = WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static void
test_injected(void **state)
{
	struct egress_relay_result r;
	char reply[32768];
	int got;

	(void)state;
	run(&upca, "h2,http/1.1",
	    "GET /x HTTP/1.1\r\nHost: " NAME "\r\nAuthorization: Bearer " PH
	    "\r\nConnection: keep-alive\r\n\r\n",
	    reply, sizeof(reply), &r, &got);
	assert_true(got);
	assert_non_null(strstr(reply, "HTTP/1.1 200 OK"));
	assert_non_null(strstr(reply, "Authorization: Bearer " VAL "\r\n"));
	assert_non_null(strstr(reply, "Connection: close\r\n\r\n"));
	assert_null(strstr(reply, "keep-alive"));
	assert_null(strstr(reply, "keep-placeholder"));
	assert_int_equal(r.refused, 0);
	assert_int_equal(r.replaced, 1);
	assert_string_equal(r.method, "GET");
}

static void
test_refused_other_header(void **state)
{
	struct egress_relay_result r;
	char reply[32768];
	int got;

	(void)state;
	run(&upca, NULL,
	    "GET /x HTTP/1.1\r\nHost: " NAME "\r\nX-Other: " PH "\r\n\r\n",
	    reply, sizeof(reply), &r, &got);
	assert_false(got);
	assert_non_null(strstr(reply, "HTTP/1.1 403 Forbidden"));
	assert_non_null(strstr(reply, "placeholder"));
	assert_int_equal(r.refused, 1);
	assert_null(strstr(reply, VAL));
}

static void
test_refused_held_body(void **state)
{
	struct egress_relay_result r;
	char reply[32768];
	int got;

	(void)state;
	run(&upca, NULL,
	    "POST /x HTTP/1.1\r\nHost: " NAME "\r\nContent-Length: 55\r\n\r\n"
	    "t=" PH "x",
	    reply, sizeof(reply), &r, &got);
	assert_false(got);
	assert_non_null(strstr(reply, "403 Forbidden"));
	assert_non_null(strstr(reply, "a placeholder in the body"));
}

/* A server whose chain the bundle does not hold: nothing is sent. */
static void
test_unverified_server(void **state)
{
	struct egress_relay_result r;
	char reply[32768];
	int got;

	(void)state;
	run(&otherca, NULL,
	    "GET /x HTTP/1.1\r\nHost: " NAME "\r\nAuthorization: " PH
	    "\r\n\r\n",
	    reply, sizeof(reply), &r, &got);
	assert_non_null(strstr(reply, "HTTP/1.1 502 Bad Gateway"));
	assert_int_equal(r.upstream_failed, 1);
	assert_null(strstr(reply, VAL));
	(void)got; /* the server saw a handshake fail, no request */
}

/* The scanning relay: bytes both ways as they are, cut at a marker. */
static void
test_scan(void **state)
{
	struct egress_relay_result r;
	int gp[2], up[2];
	char buf[64];
	pid_t pid;
	ssize_t n;
	int st;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, gp), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, up), 0);
	if ((pid = fork()) == 0) {
		close(gp[0]);
		close(up[1]);
		_exit(
		    egress_relay_scan(gp[1], up[0], 5000, &r) == -1 && r.refused
		        ? 0
		        : 1);
	}
	close(gp[1]);
	close(up[0]);
	assert_int_equal(write(gp[0], "hello ", 6), 6);
	assert_int_equal(read(up[1], buf, sizeof(buf)), 6);
	assert_int_equal(write(up[1], "back", 4), 4);
	assert_int_equal(read(gp[0], buf, sizeof(buf)), 4);
	/* Split across two writes. */
	assert_int_equal(write(gp[0], "x keep-place", 12), 12);
	n = read(up[1], buf, sizeof(buf));
	assert_int_equal(n, 12);
	assert_int_equal(write(gp[0], "holder-t-0", 10), 10);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The rest never reached the server: it sees the end. */
	assert_int_equal(read(up[1], buf, sizeof(buf)), 0);
	close(gp[0]);
	close(up[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_injected),
		cmocka_unit_test(test_refused_other_header),
		cmocka_unit_test(test_refused_held_body),
		cmocka_unit_test(test_unverified_server),
		cmocka_unit_test(test_scan),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

/*
 * End-to-end tests for egress_fetch and webhooks against servers this
 * test starts on 127.0.0.1 only: an HTTPS server with a CA made at test
 * time (openssl CLI) and a plain HTTP one, both Debian's python3. Names
 * are resolved by an injected resolver, so no test touches any address
 * outside loopback; refused destinations are refused before connecting.
 * Skips (cleanly) when openssl or python3 are missing.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
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

#include "host/egress/egress.h"
#include "lib/util.h"

#define PYTHON "/usr/bin/python3"

static const char server_py[] =
    "import http.server, ssl, sys, threading, time, json, urllib.parse\n"
    "hits, last = {}, {}\n"
    "class H(http.server.BaseHTTPRequestHandler):\n"
    "    protocol_version = 'HTTP/1.1'\n"
    "    def log_message(self, *a): pass\n"
    "    def send(self, code, body, extra=()):\n"
    "        self.send_response(code)\n"
    "        for k, v in extra: self.send_header(k, v)\n"
    "        self.send_header('Content-Length', str(len(body)))\n"
    "        self.end_headers()\n"
    "        if self.command != 'HEAD': self.wfile.write(body)\n"
    "    def any(self):\n"
    "        u = urllib.parse.urlsplit(self.path)\n"
    "        q = dict(urllib.parse.parse_qsl(u.query))\n"
    "        n = int(self.headers.get('Content-Length') or 0)\n"
    "        body = self.rfile.read(n) if n else b''\n"
    "        p = u.path\n"
    "        if p == '/ok': return self.send(200, b'hello')\n"
    "        if p == '/big': return self.send(200, b'x' * (1 << 20))\n"
    "        if p == '/stream':\n"
    "            self.send_response(200)\n"
    "            self.send_header('Connection', 'close')\n"
    "            self.end_headers()\n"
    "            self.close_connection = True\n"
    "            try:\n"
    "                for i in range(64): self.wfile.write(b'y' * 16384)\n"
    "            except OSError: pass\n"
    "            return\n"
    "        if p == '/slow':\n"
    "            time.sleep(3)\n"
    "            return self.send(200, b'late')\n"
    "        if p == '/redirect':\n"
    "            return self.send(int(q.get('code', '302')), b'',\n"
    "                [('Location', q['to'])])\n"
    "        if p == '/echo':\n"
    "            h = {k.lower(): v for k, v in self.headers.items()}\n"
    "            return self.send(200, json.dumps({'method': self.command,\n"
    "                'body': body.decode(), 'headers': h}).encode())\n"
    "        if p == '/hook':\n"
    "            k = self.headers.get('X-Keep-Delivery', '')\n"
    "            hits[k] = hits.get(k, 0) + 1\n"
    "            last[k] = {'body': body.decode(),\n"
    "                'sig': self.headers.get('X-Keep-Signature', ''),\n"
    "                'ct': self.headers.get('Content-Type', '')}\n"
    "            if hits[k] <= int(q.get('fail', '0')):\n"
    "                return self.send(503, b'busy')\n"
    "            return self.send(int(q.get('code', '200')), b'ok')\n"
    "        if p == '/last':\n"
    "            d = dict(last.get(q['id'], {}))\n"
    "            d['hits'] = hits.get(q['id'], 0)\n"
    "            return self.send(200, json.dumps(d).encode())\n"
    "        self.send(404, b'no')\n"
    "    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = any\n"
    "import socket\n"
    "class H6(http.server.ThreadingHTTPServer):\n"
    "    address_family = socket.AF_INET6\n"
    "def serve(tls, v6=False):\n"
    "    if v6:\n"
    "        try: s = H6(('::1', 0), H)\n"
    "        except OSError: return 0\n"
    "    else: s = http.server.ThreadingHTTPServer(('127.0.0.1', 0), H)\n"
    "    s.daemon_threads = True\n"
    "    if tls:\n"
    "        c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)\n"
    "        c.load_cert_chain(sys.argv[1], sys.argv[2])\n"
    "        s.socket = c.wrap_socket(s.socket, server_side=True)\n"
    "    threading.Thread(target=s.serve_forever, daemon=True).start()\n"
    "    return s.server_address[1]\n"
    "print(serve(True), serve(False), serve(True, True), flush=True)\n"
    "sys.stdin.read()\n";

static struct {
	int skip;
	char dir[64];
	pid_t pid;
	int stdin_fd;
	unsigned https_port, http_port, v6_port;
	char *ca;
	size_t ca_len;
	char *other_ca;
	size_t other_ca_len;
	unsigned resolves;
	uint64_t now_ms, wall;
	uint64_t slept[16];
	size_t nslept;
} T;

static int run(const char *fmt, ...) KEEP_PRINTF(1, 2);

static int
run(const char *fmt, ...)
{
	char cmd[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

static char *
slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	if (n < 0 || (buf = malloc((size_t)n + 1)) == NULL) {
		fclose(f);
		return NULL;
	}
	if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fclose(f);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int
make_ca(const char *name)
{
	return run("cd %s && openssl req -x509 -newkey ec "
	           "-pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
	           "-subj /CN=keep-test-%s -addext "
	           "basicConstraints=critical,CA:TRUE -addext "
	           "keyUsage=critical,keyCertSign -keyout %s.key -out %s.pem "
	           ">/dev/null 2>&1",
	    T.dir, name, name, name);
}

static int
setup_failed(int step)
{
	print_error("egress test set-up failed at step %d\n", step);
	return -1;
}

static int
setup(void **state)
{
	char path[128], line[64];
	int in[2], out[2];
	FILE *f;
	ssize_t n;
	size_t got;

	(void)state;
	memset(&T, 0, sizeof(T));
	if (access(PYTHON, X_OK) != 0 ||
	    run("command -v openssl >/dev/null") != 0) {
		T.skip = 1;
		return 0;
	}
	strlcpy(T.dir, "/tmp/keep-egress-XXXXXX", sizeof(T.dir));
	if (mkdtemp(T.dir) == NULL)
		return setup_failed(1);
	if (make_ca("ca") != 0 || make_ca("other") != 0)
		return setup_failed(2);
	snprintf(path, sizeof(path), "%s/ext.cnf", T.dir);
	if ((f = fopen(path, "w")) == NULL)
		return setup_failed(3);
	fputs("subjectAltName=DNS:allowed.test,DNS:evil.test,DNS:"
	      "localhost,DNS:v6.test,IP:127.0.0.1,IP:::1\n",
	    f);
	fclose(f);
	if (run("cd %s && openssl req -newkey ec "
	        "-pkeyopt ec_paramgen_curve:prime256v1 -nodes "
	        "-subj /CN=allowed.test -keyout srv.key -out srv.csr "
	        ">/dev/null 2>&1 && openssl x509 -req -in srv.csr -CA ca.pem "
	        "-CAkey ca.key -CAcreateserial -days 1 -extfile ext.cnf "
	        "-out srv.pem >/dev/null 2>&1",
	        T.dir) != 0)
		return setup_failed(4);
	snprintf(path, sizeof(path), "%s/server.py", T.dir);
	if ((f = fopen(path, "w")) == NULL)
		return setup_failed(5);
	fputs(server_py, f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/ca.pem", T.dir);
	if ((T.ca = slurp(path, &T.ca_len)) == NULL)
		return setup_failed(6);
	snprintf(path, sizeof(path), "%s/other.pem", T.dir);
	if ((T.other_ca = slurp(path, &T.other_ca_len)) == NULL)
		return setup_failed(7);
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1)
		return setup_failed(8);
	if ((T.pid = fork()) == -1)
		return setup_failed(9);
	if (T.pid == 0) {
		char script[128], crt[128], key[128], err[128];
		int fd;

		snprintf(script, sizeof(script), "%s/server.py", T.dir);
		snprintf(crt, sizeof(crt), "%s/srv.pem", T.dir);
		snprintf(key, sizeof(key), "%s/srv.key", T.dir);
		snprintf(err, sizeof(err), "%s/server.log", T.dir);
		dup2(in[0], 0);
		dup2(out[1], 1);
		if ((fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600)) != -1)
			dup2(fd, 2);
		execl(PYTHON, PYTHON, script, crt, key, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	T.stdin_fd = in[1];
	/* The line may arrive in pieces; read up to its newline. */
	got = 0;
	while (got < sizeof(line) - 1 && memchr(line, '\n', got) == NULL) {
		n = read(out[0], line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(out[0]);
	if (got == 0)
		return setup_failed(10);
	line[got] = '\0';
	if (sscanf(line, "%u %u %u", &T.https_port, &T.http_port, &T.v6_port) !=
	    3)
		return print_error("server said: %s\n", line), setup_failed(11);
	/* No proxy may ever be used, whatever the environment says. */
	setenv("http_proxy", "http://127.0.0.1:9", 1);
	setenv("https_proxy", "http://127.0.0.1:9", 1);
	setenv("HTTPS_PROXY", "http://127.0.0.1:9", 1);
	setenv("ALL_PROXY", "http://127.0.0.1:9", 1);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (T.pid > 0) {
		close(T.stdin_fd);
		kill(T.pid, SIGTERM);
		waitpid(T.pid, NULL, 0);
	}
	if (T.dir[0] != '\0')
		run("rm -rf %s", T.dir);
	free(T.ca);
	free(T.other_ca);
	return 0;
}

/* Test names -> fixed addresses; "localhost" goes to the real resolver. */
static int
fake_resolve(void *arg, const char *host, uint16_t port,
    struct sockaddr_storage *out, size_t max, size_t *n)
{
	static const struct {
		const char *name;
		const char *addr[2];
	} names[] = {
		{ "allowed.test", { "127.0.0.1", NULL } },
		{ "evil.test", { "127.0.0.1", NULL } },
		{ "meta.test", { "169.254.169.254", NULL } },
		{ "meta6.test", { "::ffff:169.254.169.254", NULL } },
		{ "mixed.test", { "127.0.0.1", "10.0.0.1" } },
		{ "v6.test", { "::1", NULL } },
	};
	size_t i, j;

	(void)arg;
	(void)port;
	T.resolves++;
	*n = 0;
	if (strcmp(host, "localhost") == 0) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&out[0];

		/* What getaddrinfo says for it without /etc/hosts games. */
		memset(s4, 0, sizeof(*s4));
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		*n = 1;
		return 0;
	}
	for (i = 0; i < nitems(names); i++) {
		if (strcmp(host, names[i].name) != 0)
			continue;
		for (j = 0; j < 2 && names[i].addr[j] && *n < max; j++) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&out[*n];
			struct sockaddr_in6 *s6 =
			    (struct sockaddr_in6 *)&out[*n];

			memset(&out[*n], 0, sizeof(out[*n]));
			if (inet_pton(
			        AF_INET, names[i].addr[j], &s4->sin_addr) == 1)
				s4->sin_family = AF_INET;
			else if (inet_pton(AF_INET6, names[i].addr[j],
			             &s6->sin6_addr) == 1)
				s6->sin6_family = AF_INET6;
			(*n)++;
		}
		return 0;
	}
	return EGRESS_E_RESOLVE;
}

static uint64_t
fake_wall(void *arg)
{
	(void)arg;
	return T.wall;
}

static void
fake_sleep(void *arg, uint64_t ms)
{
	(void)arg;
	if (T.nslept < nitems(T.slept))
		T.slept[T.nslept++] = ms;
}

static struct egress_ctx *
new_ctx(const char *ca, size_t ca_len)
{
	struct egress_config cfg;
	struct egress_ctx *ctx;

	memset(&cfg, 0, sizeof(cfg));
	cfg.ca_blob = ca;
	cfg.ca_blob_len = ca_len;
	cfg.resolve = fake_resolve;
	cfg.wallclock = fake_wall;
	cfg.sleep = fake_sleep;
	assert_int_equal(egress_ctx_new(&cfg, &ctx), 0);
	return ctx;
}

static struct egress_rule
rule(const char *h, unsigned port, int http, int priv)
{
	struct egress_rule r;

	memset(&r, 0, sizeof(r));
	strlcpy(r.host, h, sizeof(r.host));
	r.port = (uint16_t)port;
	r.allow_http = (uint8_t)http;
	r.allow_private = (uint8_t)priv;
	return r;
}

/* Small limits, but time enough for a loaded machine: no fetch here
 * should time out unless its test says so (the slow one asks for 300 ms
 * against a server that waits 3 s). */
static void
small_limits(struct egress_limits *l)
{
	egress_limits_default(l);
	l->max_response = 64 << 10;
	l->timeout_ms = 60000;
	l->connect_timeout_ms = 30000;
	l->max_redirects = 3;
}

static void
show(const struct egress_decision *d)
{
	char line[512];

	egress_decision_format(d, line, sizeof(line));
	print_message("%s\n", line);
}

static int
get(struct egress_ctx *ctx, const char *url, const struct egress_rule *rules,
    size_t nrules, struct egress_response *resp, struct egress_decision *d)
{
	struct egress_request req;
	char line[512];
	int rc;

	memset(&req, 0, sizeof(req));
	req.principal = "agent-b";
	req.method = "GET";
	req.url = url;
	req.url_len = strlen(url);
	req.rules = rules;
	req.nrules = nrules;
	small_limits(&req.limits);
	rc = egress_fetch(ctx, &req, resp, d);
	egress_decision_format(d, line, sizeof(line));
	print_message("%s\n", line);
	return rc;
}

#define SKIP_IF_NO_SERVER()                                                    \
	do {                                                                   \
		if (T.skip)                                                    \
			skip();                                                \
	} while (0)

static void
test_allowed(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r[2];
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r[0] = rule("allowed.test", T.https_port, 0, 1);
	r[1] = rule("127.0.0.1", T.https_port, 0, 1);
	snprintf(url, sizeof(url), "https://allowed.test:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(resp.body_len, 5);
	assert_memory_equal(resp.body, "hello", 5);
	assert_non_null(strstr(resp.headers, "Content-Length: 5"));
	assert_int_equal(d.allowed, 1);
	assert_int_equal(d.rule, 0);
	assert_string_equal(d.addr, "127.0.0.1");
	assert_int_equal(d.addr_class, EGRESS_ADDR_LOOPBACK);
	assert_int_equal(d.bytes_in, 5);
	egress_response_free(&resp);
	/* An IP literal needs no resolution at all. */
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(d.rule, 1);
	egress_response_free(&resp);
	assert_int_equal(egress_principal_count(ctx, "agent-b"), 0);
	egress_ctx_free(ctx);
}

static void
test_ca_path_and_wrong_ca(void **state)
{
	struct egress_config cfg;
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("allowed.test", T.https_port, 0, 1);
	char url[128], path[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	snprintf(url, sizeof(url), "https://allowed.test:%u/ok", T.https_port);
	snprintf(path, sizeof(path), "%s/ca.pem", T.dir);
	memset(&cfg, 0, sizeof(cfg));
	cfg.ca_path = path;
	cfg.resolve = fake_resolve;
	assert_int_equal(egress_ctx_new(&cfg, &ctx), 0);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	egress_response_free(&resp);
	egress_ctx_free(ctx);
	/* A CA that did not sign the server: the handshake must fail. */
	ctx = new_ctx(T.other_ca, T.other_ca_len);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), EGRESS_E_TLS);
	egress_ctx_free(ctx);
}

static void
test_refused_before_dns(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r[2];
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r[0] = rule("allowed.test", T.https_port, 0, 1);
	r[1] = rule("*.github.com", 0, 0, 1);
	T.resolves = 0;
	snprintf(url, sizeof(url), "https://evil.test:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), EGRESS_E_NOT_ALLOWED);
	assert_int_equal(d.allowed, 0);
	assert_string_equal(d.host, "evil.test");
	snprintf(url, sizeof(url), "https://evilapi.github.com.attacker:%u/",
	    T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), EGRESS_E_NOT_ALLOWED);
	snprintf(url, sizeof(url), "http://allowed.test:%u/ok", T.http_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), EGRESS_E_PORT_DENIED);
	snprintf(url, sizeof(url), "http://allowed.test:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), EGRESS_E_HTTP_DENIED);
	snprintf(
	    url, sizeof(url), "https://u:p@allowed.test:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), EGRESS_E_USERINFO);
	assert_int_equal(
	    get(ctx, "ftp://allowed.test/", r, 2, &resp, &d), EGRESS_E_SCHEME);
	assert_int_equal(T.resolves, 0);
	egress_ctx_free(ctx);
}

static void
test_http_when_allowed(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r;
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r = rule("allowed.test", T.http_port, 1, 1);
	snprintf(url, sizeof(url), "http://allowed.test:%u/ok", T.http_port);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	egress_response_free(&resp);
	egress_ctx_free(ctx);
}

static void
test_private_addresses(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r[6];
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r[0] = rule("allowed.test", 0, 0, 0);
	r[1] = rule("localhost", 0, 0, 0);
	r[2] = rule("meta.test", 0, 0, 0);
	r[3] = rule("*.test", 0, 0, 1);
	r[4] = rule("127.0.0.1", 0, 0, 0);
	r[5] = rule("::ffff:127.0.0.1", 0, 0, 0);
	snprintf(url, sizeof(url), "https://allowed.test:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 6, &resp, &d), EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.addr_class, EGRESS_ADDR_LOOPBACK);
	assert_string_equal(d.addr, "127.0.0.1");
	assert_int_equal(d.allowed, 0);
	snprintf(url, sizeof(url), "https://localhost:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 6, &resp, &d), EGRESS_E_ADDR_DENIED);
	snprintf(url, sizeof(url), "https://127.0.0.1:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 6, &resp, &d), EGRESS_E_ADDR_DENIED);
	snprintf(
	    url, sizeof(url), "https://[::ffff:127.0.0.1]:%u/ok", T.https_port);
	assert_int_equal(get(ctx, url, r, 6, &resp, &d), EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.addr_class, EGRESS_ADDR_LOOPBACK);
	assert_int_equal(
	    get(ctx, "https://meta.test/latest/meta-data/", r, 6, &resp, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.addr_class, EGRESS_ADDR_METADATA);
	assert_string_equal(d.addr, "169.254.169.254");
	/* Through the wildcard with allow_private: metadata still refused. */
	assert_int_equal(get(ctx, "https://meta6.test/", r, 6, &resp, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.rule, 3);
	assert_int_equal(d.addr_class, EGRESS_ADDR_METADATA);
	egress_ctx_free(ctx);
}

/* A name pinned to an IPv6 address (CURLOPT_RESOLVE with brackets). */
static void
test_ipv6(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r[2];
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	if (T.v6_port == 0)
		skip();
	ctx = new_ctx(T.ca, T.ca_len);
	r[0] = rule("v6.test", T.v6_port, 0, 1);
	r[1] = rule("::1", T.v6_port, 0, 1);
	snprintf(url, sizeof(url), "https://v6.test:%u/ok", T.v6_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	assert_string_equal(d.addr, "::1");
	egress_response_free(&resp);
	snprintf(url, sizeof(url), "https://[::1]:%u/ok", T.v6_port);
	assert_int_equal(get(ctx, url, r, 2, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	egress_response_free(&resp);
	r[0].allow_private = 0;
	snprintf(url, sizeof(url), "https://v6.test:%u/ok", T.v6_port);
	assert_int_equal(get(ctx, url, r, 1, &resp, &d), EGRESS_E_ADDR_DENIED);
	egress_ctx_free(ctx);
}

/* A guest's connection by name (host/egress/connect.c): the same checks
 * as a fetch's hop, then a connected socket to the checked address. */
static void
test_connect(void **state)
{
	struct egress_ctx *ctx;
	struct egress_decision d;
	struct egress_rule r;
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	int fd, err;

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r = rule("allowed.test", T.http_port, 0, 1);
	assert_int_equal(egress_connect(ctx, &r, 30000, &fd, &err, &d), 0);
	show(&d);
	assert_true(fd >= 0);
	assert_int_equal(err, 0);
	assert_int_equal(d.allowed, 1);
	assert_string_equal(d.addr, "127.0.0.1");
	assert_int_equal(getpeername(fd, (struct sockaddr *)&peer, &pl), 0);
	assert_int_equal(ntohs(peer.sin_port), T.http_port);
	assert_true(write(fd, "GET / HTTP/1.0\r\n\r\n", 18) == 18);
	close(fd);
	/* Refused: loopback without private, metadata, a mixed answer (a
	 * rebinding trick), a name that does not resolve, a bad name, no
	 * port. */
	r = rule("allowed.test", T.http_port, 0, 0);
	assert_int_equal(egress_connect(ctx, &r, 30000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(fd, -1);
	assert_int_equal(err, EACCES);
	assert_int_equal(d.addr_class, EGRESS_ADDR_LOOPBACK);
	r = rule("meta6.test", 80, 0, 0);
	assert_int_equal(egress_connect(ctx, &r, 30000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.addr_class, EGRESS_ADDR_METADATA);
	r = rule("mixed.test", 80, 0, 0);
	assert_int_equal(egress_connect(ctx, &r, 30000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	r = rule("nowhere.test", 80, 0, 1);
	assert_int_equal(
	    egress_connect(ctx, &r, 30000, &fd, &err, &d), EGRESS_E_RESOLVE);
	assert_int_equal(err, EHOSTUNREACH);
	r = rule("bad..test", 80, 0, 1);
	assert_int_equal(
	    egress_connect(ctx, &r, 30000, &fd, &err, &d), EGRESS_E_HOST);
	assert_int_equal(err, EACCES);
	r = rule("allowed.test", 0, 0, 1);
	assert_int_equal(
	    egress_connect(ctx, &r, 30000, &fd, &err, &d), EGRESS_E_HOST);
	/* A literal is no name, but its class is checked the same. */
	r = rule("127.0.0.1", T.http_port, 0, 0);
	assert_int_equal(egress_connect(ctx, &r, 30000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	egress_ctx_free(ctx);
}

/* A guest's connection to an address an address rule allowed: what no
 * rule reaches is refused before any connect (metadata even with
 * private, loopback, unspecified, keep's 198.18/15), private needs
 * private, and the text must be an address. Nothing here connects: a
 * connect that succeeds is tests/integration/egress_addr.sh's. */
static void
test_connect_addr(void **state)
{
	static const char *never[] = { "169.254.169.254", "[fd00:ec2::254]",
		"168.63.129.16", "127.0.0.1", "[::1]", "0.0.0.0", "[::]",
		"198.18.0.5", "198.19.255.1" };
	static const char *malformed[] = { "", "10.0.0", "010.0.0.1", "fd00::1",
		"[fd00::1", "fd00::1]", "[]", "[10.0.0.1]", "10.0.0.1:80",
		"host.test", "10.0.0.0/8", "[::ffff:10.0.0.1]",
		"[::ffff:169.254.169.254]", "[::ffff:198.18.0.5]" };
	struct egress_ctx *ctx;
	struct egress_decision d;
	size_t i;
	int fd, err;

	(void)state;
	ctx = new_ctx(NULL, 0);
	for (i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		fd = 7;
		if (egress_connect_addr(ctx, never[i], 80, SOCK_STREAM, 1, 1000,
		        &fd, &err, &d) != EGRESS_E_ADDR_DENIED)
			fail_msg("connected to %s", never[i]);
		assert_int_equal(fd, -1);
		assert_int_equal(err, EACCES);
		assert_int_equal(d.allowed, 0);
		assert_true(d.addr[0] != '\0');
	}
	for (i = 0; i < sizeof(malformed) / sizeof(malformed[0]); i++)
		if (egress_connect_addr(ctx, malformed[i], 80, SOCK_DGRAM, 1,
		        1000, &fd, &err, &d) != EGRESS_E_HOST)
			fail_msg("took '%s' for an address", malformed[i]);
	assert_int_equal(egress_connect_addr(ctx, "10.0.0.1", 0, SOCK_STREAM, 1,
	                     1000, &fd, &err, &d),
	    EGRESS_E_HOST);
	assert_int_equal(egress_connect_addr(ctx, "10.0.0.1", 80, SOCK_DGRAM, 0,
	                     1000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(d.addr_class, EGRESS_ADDR_PRIVATE);
	assert_string_equal(d.addr, "10.0.0.1");
	assert_int_equal(egress_connect_addr(ctx, "[fd00::1]", 80, SOCK_STREAM,
	                     0, 1000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_connect_addr(ctx, "224.0.0.1", 80, SOCK_DGRAM,
	                     1, 1000, &fd, &err, &d),
	    EGRESS_E_ADDR_DENIED);
	egress_ctx_free(ctx);
}

/* The system resolver (getaddrinfo) path: localhost is loopback. */
static void
test_system_resolver(void **state)
{
	struct egress_config cfg;
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("localhost", 0, 0, 0);
	char url[128];
	int rc;

	(void)state;
	SKIP_IF_NO_SERVER();
	memset(&cfg, 0, sizeof(cfg));
	cfg.ca_blob = T.ca;
	cfg.ca_blob_len = T.ca_len;
	assert_int_equal(egress_ctx_new(&cfg, &ctx), 0);
	snprintf(url, sizeof(url), "https://localhost:%u/ok", T.https_port);
	rc = get(ctx, url, &r, 1, &resp, &d);
	/* Refused either way; which depends on the host's NSS set-up. */
	assert_true(rc == EGRESS_E_ADDR_DENIED || rc == EGRESS_E_RESOLVE);
	if (rc == EGRESS_E_ADDR_DENIED)
		assert_int_equal(d.addr_class, EGRESS_ADDR_LOOPBACK);
	assert_int_equal(d.allowed, 0);
	egress_ctx_free(ctx);
}

static void
test_mixed_answers(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("mixed.test", 0, 0, 0);

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	/* One refused address in the answer refuses the name. */
	assert_int_equal(get(ctx, "https://mixed.test/", &r, 1, &resp, &d),
	    EGRESS_E_ADDR_DENIED);
	egress_ctx_free(ctx);
}

static void
test_redirects(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_request req;
	struct egress_rule r = rule("allowed.test", T.https_port, 0, 1);
	char url[256];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	snprintf(url, sizeof(url),
	    "https://allowed.test:%u/redirect?to=https://evil.test:%u/ok",
	    T.https_port, T.https_port);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), EGRESS_E_NOT_ALLOWED);
	assert_int_equal(d.redirects, 1);
	assert_string_equal(d.host, "evil.test");
	assert_int_equal(d.allowed, 0);
	/* Relative and absolute hops to allowed places are followed. */
	snprintf(url, sizeof(url), "https://allowed.test:%u/redirect?to=/ok",
	    T.https_port);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(d.redirects, 1);
	egress_response_free(&resp);
	/* To the metadata address by IP literal. */
	snprintf(url, sizeof(url),
	    "https://allowed.test:%u/redirect?to=http://169.254.169.254/",
	    T.https_port);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), EGRESS_E_NOT_ALLOWED);
	/* A loop stops at the bound. */
	snprintf(url, sizeof(url),
	    "https://allowed.test:%u/redirect?to=/redirect%%3Fto%%3D/redirect",
	    T.https_port);
	memset(&req, 0, sizeof(req));
	req.method = "GET";
	req.url = url;
	req.url_len = strlen(url);
	req.rules = &r;
	req.nrules = 1;
	small_limits(&req.limits);
	req.limits.max_redirects = 1;
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_REDIRECT);
	show(&d);
	/* max_redirects 0: the 3xx itself comes back, unfollowed. */
	req.limits.max_redirects = 0;
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), 0);
	assert_int_equal(resp.status, 302);
	assert_non_null(strstr(resp.headers, "Location: /redirect"));
	egress_response_free(&resp);
	egress_ctx_free(ctx);
}

/* Credentials stay with their origin; 303 turns POST into GET. */
static void
test_redirect_headers(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_request req;
	struct egress_rule r[2];
	struct egress_header h = { "Authorization", "Bearer s3cret" };
	char url[256];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	r[0] = rule("allowed.test", T.https_port, 0, 1);
	r[1] = rule("127.0.0.1", T.https_port, 0, 1);
	memset(&req, 0, sizeof(req));
	req.method = "POST";
	req.headers = &h;
	req.nheaders = 1;
	req.body = "x=1";
	req.body_len = 3;
	req.rules = r;
	req.nrules = 2;
	small_limits(&req.limits);
	/* Same origin, 307: method, body and headers kept. */
	snprintf(url, sizeof(url),
	    "https://allowed.test:%u/redirect?code=307&to=/echo", T.https_port);
	req.url = url;
	req.url_len = strlen(url);
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), 0);
	assert_non_null(strstr((char *)resp.body, "\"method\": \"POST\""));
	assert_non_null(strstr((char *)resp.body, "\"body\": \"x=1\""));
	assert_non_null(strstr((char *)resp.body, "Bearer s3cret"));
	egress_response_free(&resp);
	/* Another origin (allowed), 303: GET, no body, no credentials. */
	snprintf(url, sizeof(url),
	    "https://allowed.test:%u/redirect?code=303&to=https://"
	    "127.0.0.1:%u/echo",
	    T.https_port, T.https_port);
	req.url = url;
	req.url_len = strlen(url);
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), 0);
	assert_int_equal(d.redirects, 1);
	assert_non_null(strstr((char *)resp.body, "\"method\": \"GET\""));
	assert_non_null(strstr((char *)resp.body, "\"body\": \"\""));
	assert_null(strstr((char *)resp.body, "s3cret"));
	egress_response_free(&resp);
	egress_ctx_free(ctx);
}

static void
test_limits(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("allowed.test", T.https_port, 0, 1);
	struct egress_request req;
	struct egress_header h;
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	snprintf(url, sizeof(url), "https://allowed.test:%u/big", T.https_port);
	assert_int_equal(
	    get(ctx, url, &r, 1, &resp, &d), EGRESS_E_RESPONSE_SIZE);
	assert_true(d.bytes_in <= 64 << 10);
	/* No Content-Length: the write callback stops it at the limit. */
	snprintf(
	    url, sizeof(url), "https://allowed.test:%u/stream", T.https_port);
	assert_int_equal(
	    get(ctx, url, &r, 1, &resp, &d), EGRESS_E_RESPONSE_SIZE);
	assert_true(d.bytes_in <= 64 << 10);
	snprintf(
	    url, sizeof(url), "https://allowed.test:%u/slow", T.https_port);
	memset(&req, 0, sizeof(req));
	req.principal = "p";
	req.method = "GET";
	req.url = url;
	req.url_len = strlen(url);
	req.rules = &r;
	req.nrules = 1;
	small_limits(&req.limits);
	req.limits.timeout_ms = 300;
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_TIMEOUT);
	show(&d);
	assert_int_equal(d.allowed, 1);
	/* Request-side limits, checked before anything is resolved. */
	req.limits.max_request = 10;
	assert_int_equal(
	    egress_fetch(ctx, &req, &resp, &d), EGRESS_E_REQUEST_SIZE);
	small_limits(&req.limits);
	req.method = "TRACE";
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_METHOD);
	req.method = "GET";
	h.name = "Host";
	h.value = "evil.test";
	req.headers = &h;
	req.nheaders = 1;
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_HEADER);
	h.name = "X-Ok";
	h.value = "a\r\nHost: evil.test";
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_HEADER);
	h.name = "Bad Name";
	h.value = "x";
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), EGRESS_E_HEADER);
	/* Concurrency per principal. */
	req.headers = NULL;
	req.nheaders = 0;
	req.limits.max_concurrent = 1;
	assert_int_equal(egress_principal_acquire(ctx, "p", 1), 0);
	assert_int_equal(
	    egress_fetch(ctx, &req, &resp, &d), EGRESS_E_CONCURRENCY);
	egress_principal_release(ctx, "p");
	assert_int_equal(egress_principal_count(ctx, "p"), 0);
	egress_ctx_free(ctx);
}

static void
test_post_echo(void **state)
{
	struct egress_ctx *ctx;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("allowed.test", T.https_port, 0, 1);
	struct egress_request req;
	struct egress_header h[3] = { { "X-Trace", "abc" },
		{ "Content-Type", "text/plain" }, { "X-Empty", "" } };
	char url[128];

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	snprintf(
	    url, sizeof(url), "https://allowed.test:%u/echo", T.https_port);
	memset(&req, 0, sizeof(req));
	req.method = "PUT";
	req.url = url;
	req.url_len = strlen(url);
	req.headers = h;
	req.nheaders = 3;
	req.body = "payload";
	req.body_len = 7;
	req.rules = &r;
	req.nrules = 1;
	small_limits(&req.limits);
	assert_int_equal(egress_fetch(ctx, &req, &resp, &d), 0);
	assert_int_equal(resp.status, 200);
	assert_int_equal(d.bytes_out, 7);
	assert_non_null(strstr((char *)resp.body, "\"method\": \"PUT\""));
	assert_non_null(strstr((char *)resp.body, "\"body\": \"payload\""));
	assert_non_null(strstr((char *)resp.body, "\"x-trace\": \"abc\""));
	assert_non_null(
	    strstr((char *)resp.body, "\"content-type\": \"text/plain\""));
	assert_non_null(strstr((char *)resp.body, "\"x-empty\": \"\""));
	egress_response_free(&resp);
	egress_ctx_free(ctx);
}

static void
test_webhook(void **state)
{
	static const uint8_t secret[EGRESS_WEBHOOK_KEYBYTES] = { 1, 2, 3 };
	static const char body[] = "{\"exit_code\":0}";
	struct egress_ctx *ctx;
	struct egress_webhook wh;
	struct egress_response resp;
	struct egress_decision d;
	struct egress_rule r = rule("allowed.test", T.https_port, 0, 1);
	char url[128], sig[128], want[160];
	unsigned attempts;

	(void)state;
	SKIP_IF_NO_SERVER();
	ctx = new_ctx(T.ca, T.ca_len);
	T.wall = 1700000000;
	T.nslept = 0;
	snprintf(url, sizeof(url), "https://allowed.test:%u/hook?fail=2",
	    T.https_port);
	memset(&wh, 0, sizeof(wh));
	wh.principal = "agent-b";
	wh.url = url;
	wh.delivery_id = "d1";
	wh.body = body;
	wh.body_len = strlen(body);
	wh.secret = secret;
	wh.rules = &r;
	wh.nrules = 1;
	small_limits(&wh.limits);
	wh.max_attempts = 4;
	wh.backoff_ms = 100;
	wh.max_backoff_ms = 150;
	assert_int_equal(egress_webhook_deliver(ctx, &wh, &attempts, &d), 0);
	show(&d);
	assert_int_equal(attempts, 3);
	assert_int_equal(T.nslept, 2);
	assert_int_equal(T.slept[0], 100);
	assert_int_equal(T.slept[1], 150);
	/* What the receiver saw, and that its signature checks. */
	snprintf(url, sizeof(url), "https://allowed.test:%u/last?id=d1",
	    T.https_port);
	assert_int_equal(get(ctx, url, &r, 1, &resp, &d), 0);
	assert_int_equal(egress_webhook_sign(secret, T.wall, body, strlen(body),
	                     sig, sizeof(sig)),
	    0);
	snprintf(want, sizeof(want), "\"sig\": \"%s\"", sig);
	assert_non_null(strstr((char *)resp.body, want));
	assert_non_null(strstr((char *)resp.body, "\"hits\": 3"));
	assert_non_null(
	    strstr((char *)resp.body, "\"ct\": \"application/json\""));
	assert_non_null(
	    strstr((char *)resp.body, "\"body\": \"{\\\"exit_code\\\":0}\""));
	egress_response_free(&resp);

	/* Never succeeds: exactly max_attempts tries. */
	snprintf(url, sizeof(url), "https://allowed.test:%u/hook?fail=99",
	    T.https_port);
	wh.url = url;
	wh.delivery_id = "d2";
	wh.max_attempts = 3;
	T.nslept = 0;
	assert_int_equal(
	    egress_webhook_deliver(ctx, &wh, &attempts, &d), EGRESS_E_WEBHOOK);
	assert_int_equal(attempts, 3);
	assert_int_equal(T.nslept, 2);
	/* A 4xx is final. */
	snprintf(url, sizeof(url), "https://allowed.test:%u/hook?code=404",
	    T.https_port);
	wh.delivery_id = "d3";
	assert_int_equal(
	    egress_webhook_deliver(ctx, &wh, &attempts, &d), EGRESS_E_WEBHOOK);
	assert_int_equal(attempts, 1);
	/* A refused destination is never retried. */
	snprintf(url, sizeof(url), "https://evil.test:%u/hook", T.https_port);
	assert_int_equal(egress_webhook_deliver(ctx, &wh, &attempts, &d),
	    EGRESS_E_NOT_ALLOWED);
	assert_int_equal(attempts, 1);
	/* A bad delivery id is refused before anything else. */
	wh.delivery_id = "a\r\nb";
	assert_int_equal(
	    egress_webhook_deliver(ctx, &wh, &attempts, &d), EGRESS_E_MSG);
	assert_int_equal(attempts, 0);
	egress_ctx_free(ctx);
}

static void
test_sign_vector(void **state)
{
	uint8_t key[EGRESS_WEBHOOK_KEYBYTES];
	char out[128];

	(void)state;
	memset(key, 'k', sizeof(key));
	/* python3: hmac.new(b'k'*32, b'1700000000.{}', 'sha256').hexdigest() */
	assert_int_equal(
	    egress_webhook_sign(key, 1700000000, "{}", 2, out, sizeof(out)), 0);
	assert_string_equal(out,
	    "t=1700000000,v1="
	    "0b3b35525c10b3757ffa78df69037021fc3168d8390a51a4fcb4a8d56a25b557");
	assert_int_equal(
	    egress_webhook_sign(key, 1, "{}", 2, out, 10), EGRESS_E_INTERNAL);
}

static void
test_secret_vector(void **state)
{
	uint8_t master[EGRESS_WEBHOOK_KEYBYTES], out[32];
	char hex[65];

	(void)state;
	memset(master, 'm', sizeof(master));
	/* python3: hmac.new(b'm'*32, b'keep webhook secret v1\0sbx_123',
	 * 'sha256').hexdigest() */
	assert_int_equal(egress_webhook_secret(master, "sbx_123", out), 0);
	for (size_t i = 0; i < sizeof(out); i++)
		snprintf(hex + 2 * i, 3, "%02x", out[i]);
	assert_string_equal(hex,
	    "73aacbe5b6558d993fb806ea673870b96161a5cc97f2f63811d9082a832c198e");
	assert_int_equal(egress_webhook_secret(master, "", out), EGRESS_E_MSG);
	assert_int_equal(
	    egress_webhook_secret(master, NULL, out), EGRESS_E_MSG);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sign_vector),
		cmocka_unit_test(test_secret_vector),
		cmocka_unit_test(test_allowed),
		cmocka_unit_test(test_ca_path_and_wrong_ca),
		cmocka_unit_test(test_refused_before_dns),
		cmocka_unit_test(test_http_when_allowed),
		cmocka_unit_test(test_private_addresses),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_connect_addr),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_system_resolver),
		cmocka_unit_test(test_mixed_answers),
		cmocka_unit_test(test_redirects),
		cmocka_unit_test(test_redirect_headers),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_post_echo),
		cmocka_unit_test(test_webhook),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}

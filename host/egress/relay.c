/*
 * The TLS relay for a destination that injects a secret (relay.h). One
 * connection, one request (the head says Connection: close), in a
 * worker of its own: the value lives in this process only, for this
 * connection.
 *
 * Both sockets are non-blocking; libtls says what it waits for
 * (TLS_WANT_POLLIN / _POLLOUT), and the loop polls only when neither
 * side can make progress, so bytes OpenSSL already holds are never
 * left waiting for the socket to become readable.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <tls.h>

#include "host/egress/appca.h"
#include "host/egress/relay.h"
#include "lib/clock.h"

struct side {
	struct tls *t;
	int fd;
	short want; /* POLLIN or POLLOUT: what the last call waits for */
	int eof;
};

static int
wait_fd(int fd, short ev, uint32_t ms)
{
	struct pollfd p = { fd, ev, 0 };
	int n;

	do
		n = poll(&p, 1, (int)ms);
	while (n == -1 && errno == EINTR);
	return n == 1 ? 0 : -1;
}

static int
handshake(struct side *s, uint32_t ms)
{
	int rc;

	for (;;) {
		rc = tls_handshake(s->t);
		if (rc == 0)
			return 0;
		if (rc != TLS_WANT_POLLIN && rc != TLS_WANT_POLLOUT)
			return -1;
		if (wait_fd(s->fd, rc == TLS_WANT_POLLIN ? POLLIN : POLLOUT,
		        ms) != 0)
			return -1;
	}
}

static int
write_all_tls(struct side *s, const void *buf, size_t len, uint32_t ms)
{
	const uint8_t *p = buf;
	ssize_t n;

	while (len > 0) {
		n = tls_write(s->t, p, len);
		if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT) {
			if (wait_fd(s->fd,
			        n == TLS_WANT_POLLIN ? POLLIN : POLLOUT,
			        ms) != 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
write_all_fd(int fd, const uint8_t *p, size_t len, uint32_t ms)
{
	ssize_t n;

	while (len > 0) {
		n = write(fd, p, len);
		if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLOUT, ms) != 0)
				return -1;
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* A refusal the program can read: 403 and keep's reason. */
static void
answer(struct side *g, int status, const char *why, uint32_t ms)
{
	char buf[512];
	int n, body;

	body = (int)strlen("keep egress: ") + (int)strlen(why) + 1;
	n = snprintf(buf, sizeof(buf),
	    "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
	    "Connection: close\r\nContent-Length: %d\r\n\r\n"
	    "keep egress: %s\n",
	    status, status == 403 ? "Forbidden" : "Bad Gateway", body, why);
	if (n > 0 && (size_t)n < sizeof(buf))
		(void)write_all_tls(g, buf, (size_t)n, ms);
}

static struct tls *
server_ctx(const struct egress_relay_cfg *c, struct egress_relay_result *r)
{
	struct tls_config *cfg = NULL;
	struct tls *t = NULL;
	char *cert = NULL, *key = NULL;
	size_t cl = 0, kl = 0;

	if (egress_appca_leaf(c->appca_cert, c->appca_cert_len, c->appca_key,
	        c->appca_key_len, c->inject.name, &cert, &cl, &key, &kl) != 0) {
		strlcpy(r->why, "no leaf certificate (the appliance CA)",
		    sizeof(r->why));
		return NULL;
	}
	/* ALPN http/1.1 only: the head is parsed as HTTP/1.1, never h2. */
	if ((cfg = tls_config_new()) == NULL ||
	    tls_config_set_protocols(cfg, TLS_PROTOCOLS_DEFAULT) != 0 ||
	    tls_config_set_keypair_mem(cfg, (const uint8_t *)cert, cl,
	        (const uint8_t *)key, kl) != 0 ||
	    tls_config_set_alpn(cfg, "http/1.1") != 0 ||
	    (t = tls_server()) == NULL || tls_configure(t, cfg) != 0) {
		strlcpy(r->why, "TLS server set-up failed", sizeof(r->why));
		tls_free(t);
		t = NULL;
	}
	if (cfg != NULL)
		tls_config_free(cfg); /* clears the key it holds */
	free(cert);
	sodium_memzero(key, kl);
	free(key);
	return t;
}

static struct tls *
client_ctx(const struct egress_relay_cfg *c)
{
	struct tls_config *cfg;
	struct tls *t = NULL;

	if ((cfg = tls_config_new()) == NULL)
		return NULL;
	/* Full verification: chain to the bundle, the name, expiry. */
	if (tls_config_set_protocols(cfg, TLS_PROTOCOLS_DEFAULT) == 0 &&
	    c->ca_len > 0 &&
	    tls_config_set_ca_mem(cfg, c->ca_bundle, c->ca_len) == 0 &&
	    tls_config_set_alpn(cfg, "http/1.1") == 0 &&
	    (t = tls_client()) != NULL && tls_configure(t, cfg) != 0) {
		tls_free(t);
		t = NULL;
	}
	tls_config_free(cfg);
	return t;
}

/*
 * Read from `from` into buf; -1 closed or failed, 0 nothing now (from->
 * want says on what), else bytes.
 */
static ssize_t
pull(struct side *from, uint8_t *buf, size_t len)
{
	ssize_t n = tls_read(from->t, buf, len);

	if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT) {
		from->want = n == TLS_WANT_POLLIN ? POLLIN : POLLOUT;
		return 0;
	}
	if (n <= 0) {
		from->eof = 1;
		return -1;
	}
	return n;
}

int
egress_relay_run(const struct egress_relay_cfg *c, int guest_fd,
    int upstream_fd, struct egress_relay_result *r)
{
	struct side g = { NULL, guest_fd, POLLIN, 0 },
	            u = { NULL, upstream_fd, POLLIN, 0 };
	struct tls *srv = NULL;
	struct egress_marker_scan scan = { 0, 0 };
	uint8_t *head = NULL, *out = NULL, *held = NULL, buf[16384];
	size_t hlen = 0, end = 0, outlen = 0, hcap = EGRESS_INJECT_HEAD_MAX;
	uint64_t cl = 0;
	uint32_t ms = c->idle_ms != 0 ? c->idle_ms : 30000;
	uint64_t last;
	const char *why;
	struct pollfd pfd[2];
	ssize_t n;
	int rc = -1, fl;

	memset(r, 0, sizeof(*r));
	if ((fl = fcntl(guest_fd, F_GETFL)) == -1 ||
	    fcntl(guest_fd, F_SETFL, fl | O_NONBLOCK) == -1 ||
	    (fl = fcntl(upstream_fd, F_GETFL)) == -1 ||
	    fcntl(upstream_fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		strlcpy(r->why, "socket set-up failed", sizeof(r->why));
		return -1;
	}
	if ((srv = server_ctx(c, r)) == NULL)
		return -1;
	if (tls_accept_socket(srv, &g.t, guest_fd) != 0 ||
	    handshake(&g, ms) != 0) {
		snprintf(r->why, sizeof(r->why), "guest TLS: %s",
		    g.t != NULL && tls_error(g.t) != NULL ? tls_error(g.t)
		                                          : "handshake failed");
		goto out;
	}
	/* The request head, bounded. */
	if ((head = malloc(EGRESS_INJECT_HEAD_MAX)) == NULL)
		goto out;
	while ((end = egress_inject_head_end(head, hlen)) == 0) {
		if (hlen == EGRESS_INJECT_HEAD_MAX) {
			strlcpy(r->why,
			    egress_inject_strerror(EGRESS_INJECT_TOO_LARGE),
			    sizeof(r->why));
			r->refused = 1;
			answer(&g, 403, r->why, ms);
			goto out;
		}
		n = pull(&g, head + hlen, EGRESS_INJECT_HEAD_MAX - hlen);
		if (n < 0) {
			strlcpy(r->why, "the guest closed before a request",
			    sizeof(r->why));
			goto out;
		}
		if (n == 0 && wait_fd(g.fd, g.want, ms) != 0) {
			strlcpy(r->why, "no request in time", sizeof(r->why));
			goto out;
		}
		hlen += (size_t)n;
	}
	egress_inject_method(head, end, r->method, sizeof(r->method));
	if (egress_inject_head(&c->inject, head, end, &out, &outlen,
	        &r->replaced, &why) != EGRESS_INJECT_OK) {
		snprintf(r->why, sizeof(r->why), "refused: %s", why);
		r->refused = 1;
		answer(&g, 403, r->why, ms);
		goto out;
	}
	/* A body of a known, small length is held whole first: a
	 * placeholder in it is refused before the server sees a byte. */
	if (egress_inject_content_length(head, end, &cl) &&
	    cl <= EGRESS_INJECT_BODY_HOLD && cl > hlen - end) {
		if ((held = malloc(end + cl)) == NULL)
			goto out;
		memcpy(held, head, hlen);
		while (hlen < end + cl) {
			n = pull(&g, held + hlen, end + cl - hlen);
			if (n < 0) {
				strlcpy(r->why, "the guest closed in a body",
				    sizeof(r->why));
				goto out;
			}
			if (n == 0 && wait_fd(g.fd, g.want, ms) != 0) {
				strlcpy(
				    r->why, "no body in time", sizeof(r->why));
				goto out;
			}
			hlen += (size_t)n;
		}
		sodium_memzero(head, EGRESS_INJECT_HEAD_MAX);
		free(head);
		head = held;
		held = NULL;
		hcap = end + cl;
	}
	/* What came after the head is body: scanned as the rest will be. */
	if (egress_marker_scan(&scan, head + end, hlen - end)) {
		strlcpy(r->why, "refused: a placeholder in the body",
		    sizeof(r->why));
		r->refused = 1;
		answer(&g, 403, r->why, ms);
		goto out;
	}
	if ((u.t = client_ctx(c)) == NULL ||
	    tls_connect_socket(u.t, upstream_fd, c->inject.name) != 0 ||
	    handshake(&u, ms) != 0) {
		snprintf(r->why, sizeof(r->why), "server TLS: %s",
		    u.t != NULL && tls_error(u.t) != NULL ? tls_error(u.t)
		                                          : "set-up failed");
		r->upstream_failed = 1;
		answer(&g, 502, r->why, ms);
		goto out;
	}
	if (write_all_tls(&u, out, outlen, ms) != 0 ||
	    write_all_tls(&u, head + end, hlen - end, ms) != 0) {
		strlcpy(r->why, "the server closed", sizeof(r->why));
		goto out;
	}
	r->bytes_out = outlen + hlen - end;
	sodium_memzero(out, outlen);
	free(out);
	out = NULL;
	/* Both ways until the server is done (it closes: one request). */
	last = mono_ms();
	while (!u.eof) {
		int moved = 0;

		if (!g.eof && (n = pull(&g, buf, sizeof(buf))) > 0) {
			moved = 1;
			if (egress_marker_scan(&scan, buf, (size_t)n)) {
				strlcpy(r->why,
				    "refused: a placeholder in the body",
				    sizeof(r->why));
				r->refused = 1;
				goto out; /* cut: the request is half sent */
			}
			if (write_all_tls(&u, buf, (size_t)n, ms) != 0)
				break;
			r->bytes_out += (uint64_t)n;
		}
		if ((n = pull(&u, buf, sizeof(buf))) > 0) {
			moved = 1;
			if (write_all_tls(&g, buf, (size_t)n, ms) != 0)
				break;
			r->bytes_in += (uint64_t)n;
		}
		if (moved) {
			last = mono_ms();
			continue;
		}
		if (u.eof)
			break;
		if (mono_ms() - last >= ms) {
			strlcpy(r->why, "idle", sizeof(r->why));
			break;
		}
		pfd[0].fd = g.eof ? -1 : g.fd;
		pfd[0].events = g.want;
		pfd[1].fd = u.fd;
		pfd[1].events = u.want;
		pfd[0].revents = pfd[1].revents = 0;
		(void)poll(pfd, 2, (int)(ms - (mono_ms() - last)));
	}
	rc = r->refused ? -1 : 0;
out:
	if (out != NULL) {
		sodium_memzero(out, outlen);
		free(out);
	}
	if (head != NULL) {
		sodium_memzero(head, hcap);
		free(head);
	}
	if (held != NULL) {
		sodium_memzero(held, hlen);
		free(held);
	}
	sodium_memzero(buf, sizeof(buf));
	if (g.t != NULL) {
		(void)tls_close(g.t);
		tls_free(g.t);
	}
	if (u.t != NULL) {
		(void)tls_close(u.t);
		tls_free(u.t);
	}
	tls_free(srv);
	return rc;
}

/*
 * Plain bytes both ways, in order, with the guest's scanned: the
 * connection is cut the moment the marker appears. A half-close is
 * passed on (shutdown), so request-then-EOF protocols work.
 */
int
egress_relay_scan(int guest_fd, int upstream_fd, uint32_t idle_ms,
    struct egress_relay_result *r)
{
	struct egress_marker_scan scan = { 0, 0 };
	struct pollfd pfd[2];
	uint8_t buf[16384];
	int open_in[2] = { 1, 1 }; /* 0: guest -> server, 1: back */
	int fds[2] = { guest_fd, upstream_fd };
	uint32_t ms = idle_ms != 0 ? idle_ms : 30000;
	ssize_t n;
	int i, rc = 0;

	memset(r, 0, sizeof(*r));
	while (open_in[0] || open_in[1]) {
		for (i = 0; i < 2; i++) {
			pfd[i].fd = open_in[i] ? fds[i] : -1;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if ((n = poll(pfd, 2, (int)ms)) == 0) {
			strlcpy(r->why, "idle", sizeof(r->why));
			break;
		}
		if (n == -1) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < 2; i++) {
			if (pfd[i].revents == 0)
				continue;
			n = read(fds[i], buf, sizeof(buf));
			if (n == -1 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n <= 0) {
				open_in[i] = 0;
				(void)shutdown(fds[1 - i], SHUT_WR);
				continue;
			}
			if (i == 0 &&
			    egress_marker_scan(&scan, buf, (size_t)n)) {
				strlcpy(r->why,
				    "refused: a placeholder sent in "
				    "clear",
				    sizeof(r->why));
				r->refused = 1;
				rc = -1;
				goto out;
			}
			if (write_all_fd(fds[1 - i], buf, (size_t)n, ms) != 0) {
				open_in[0] = open_in[1] = 0;
				break;
			}
			if (i == 0)
				r->bytes_out += (uint64_t)n;
			else
				r->bytes_in += (uint64_t)n;
		}
	}
out:
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

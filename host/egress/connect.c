/*
 * A guest's TCP connection by name (docs/egress.md, "Names and
 * connections"): the destination through the same checks as a fetch's
 * hop (syntax, the one granted rule, resolution, every address's class),
 * then a connect to the checked address with a time limit. The socket
 * goes back to the vmm and the guest; no byte of it is looked at here.
 */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/egress/egress.h"
#include "host/egress/egress_int.h"

static uint64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * A non-blocking connect of a socket of type (SOCK_STREAM or SOCK_DGRAM:
 * a UDP connect only sets the peer) to pin within timeout_ms, answering
 * the supervisor's pings meanwhile: 0 and *fdp, or an EGRESS_E_* code
 * with *err the guest's errno and d filled.
 */
static int
connect_bounded(struct egress_ctx *ctx, const struct sockaddr_storage *pin,
    socklen_t pinlen, int type, uint32_t timeout_ms, int *fdp, int *err,
    struct egress_decision *d)
{
	struct pollfd p;
	socklen_t sl;
	uint64_t end;
	int rc, fd, left, soerr = 0;

	if ((fd = socket(pin->ss_family, type | SOCK_NONBLOCK | SOCK_CLOEXEC,
	         0)) == -1) {
		*err = errno;
		d->error = EGRESS_E_CONNECT;
		return d->error;
	}
	end = now_ms() + timeout_ms;
	if (connect(fd, (const struct sockaddr *)pin, pinlen) == -1) {
		if (errno != EINPROGRESS) {
			soerr = errno;
			goto fail;
		}
		for (;;) {
			uint64_t now = now_ms();

			left = now >= end ? 0 : (int)(end - now);
			p.fd = fd;
			p.events = POLLOUT;
			p.revents = 0;
			/* A second at a time: the caller's supervisor is
			 * answered meanwhile (egress_config.tick), as during a
			 * transfer. */
			rc = poll(&p, 1, left > 1000 ? 1000 : left);
			if (rc == -1 && errno == EINTR)
				continue;
			if (rc == 0 && left > 1000) {
				if (ctx->cfg.tick != NULL)
					ctx->cfg.tick(ctx->cfg.arg);
				continue;
			}
			if (rc == 0) {
				soerr = ETIMEDOUT;
				close(fd);
				*err = ETIMEDOUT;
				d->error = EGRESS_E_TIMEOUT;
				return d->error;
			}
			break;
		}
		sl = sizeof(soerr);
		if (rc == -1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == -1)
			soerr = rc == -1 ? errno : EIO;
		if (soerr != 0)
			goto fail;
	}
	d->allowed = 1;
	*err = 0;
	*fdp = fd;
	return 0;
fail:
	close(fd);
	*err = soerr;
	d->error = EGRESS_E_CONNECT;
	snprintf(d->detail, sizeof(d->detail), "connect: %s", strerror(soerr));
	return d->error;
}

int
egress_connect(struct egress_ctx *ctx, const struct egress_rule *rule,
    uint32_t timeout_ms, int *fdp, int *err, struct egress_decision *d)
{
	return egress_connect_type(
	    ctx, rule, SOCK_STREAM, timeout_ms, fdp, err, d);
}

int
egress_connect_type(struct egress_ctx *ctx, const struct egress_rule *rule,
    int type, uint32_t timeout_ms, int *fdp, int *err,
    struct egress_decision *d)
{
	struct sockaddr_storage pin;
	struct egress_url u;
	socklen_t pinlen = 0;
	char url[EGRESS_HOST_MAX + 32];
	size_t which;
	int rc;

	*fdp = -1;
	*err = EACCES;
	memset(d, 0, sizeof(*d));
	d->rule = -1;
	d->addr_class = -1;
	strlcpy(d->host, rule->host, sizeof(d->host));
	d->port = rule->port;
	/* The name as a URL's host: the same syntax and canonical forms
	 * as every other destination. */
	if (rule->port == 0 ||
	    snprintf(url, sizeof(url), "https://%s:%u/", rule->host,
	        (unsigned)rule->port) >= (int)sizeof(url) ||
	    (rc = egress_url_parse(url, strlen(url), &u)) != 0) {
		d->error = EGRESS_E_HOST;
		return EGRESS_E_HOST;
	}
	if ((rc = egress_allow_match(rule, 1, &u, &which)) != 0 ||
	    (rc = egress_resolve_checked(
	         ctx, &u, rule, AF_INET, &pin, &pinlen, d)) != 0) {
		if (rc == EGRESS_E_RESOLVE)
			*err = EHOSTUNREACH;
		d->error = rc;
		return rc;
	}
	d->rule = 0;
	if (type != SOCK_STREAM && type != SOCK_DGRAM) {
		d->error = EGRESS_E_INTERNAL;
		return d->error;
	}
	return connect_bounded(
	    ctx, &pin, pinlen, type, timeout_ms, fdp, err, d);
}

/* Whether ss is in 198.18.0.0/15, the range keep's resolver hands out
 * (docs/egress.md): those addresses stand for names, never for
 * themselves. */
static int
addr_keeps_range(const struct sockaddr_storage *ss)
{
	const uint8_t *b =
	    (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;

	return ss->ss_family == AF_INET && b[0] == 198 && (b[1] & 0xfe) == 18;
}

int
egress_connect_addr(struct egress_ctx *ctx, const char *addr, uint16_t port,
    int type, int allow_private, uint32_t timeout_ms, int *fdp, int *err,
    struct egress_decision *d)
{
	struct sockaddr_storage pin;
	struct sockaddr_in *in = (struct sockaddr_in *)&pin;
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&pin;
	struct egress_rule r;
	char a[EGRESS_HOST_MAX + 1];
	size_t n = strnlen(addr, EGRESS_HOST_MAX + 1);
	socklen_t pinlen;
	int c;

	*fdp = -1;
	*err = EACCES;
	memset(d, 0, sizeof(*d));
	d->rule = -1;
	d->addr_class = -1;
	strlcpy(d->host, addr, sizeof(d->host));
	d->port = port;
	d->error = EGRESS_E_HOST;
	memset(&pin, 0, sizeof(pin));
	if (port == 0 || n == 0 || n > EGRESS_HOST_MAX ||
	    (type != SOCK_STREAM && type != SOCK_DGRAM))
		return d->error;
	if (addr[0] == '[') {
		if (n < 3 || addr[n - 1] != ']')
			return d->error;
		memcpy(a, addr + 1, n - 2);
		a[n - 2] = '\0';
		/* IPv4 is asked as IPv4: a mapped form is no second way to
		 * write an address the checks below refuse. */
		if (inet_pton(AF_INET6, a, &in6->sin6_addr) != 1 ||
		    IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr))
			return d->error;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		pinlen = sizeof(*in6);
	} else {
		if (inet_pton(AF_INET, addr, &in->sin_addr) != 1)
			return d->error;
		in->sin_family = AF_INET;
		in->sin_port = htons(port);
		pinlen = sizeof(*in);
	}
	c = egress_addr_classify((struct sockaddr *)&pin, pinlen);
	d->addr_class = c;
	if (pin.ss_family == AF_INET6)
		inet_ntop(AF_INET6, &in6->sin6_addr, d->addr, sizeof(d->addr));
	else
		inet_ntop(AF_INET, &in->sin_addr, d->addr, sizeof(d->addr));
	/* What no address rule reaches: a metadata service whatever the
	 * rule says; loopback and the unspecified address, which are the
	 * guest's own in its namespace and this host's here; and keep's
	 * range for names. The other classes as for a fetch, non-public
	 * ones only with `private`. */
	memset(&r, 0, sizeof(r));
	r.allow_private = allow_private != 0;
	if (c == EGRESS_ADDR_METADATA || c == EGRESS_ADDR_LOOPBACK ||
	    c == EGRESS_ADDR_UNSPECIFIED || addr_keeps_range(&pin) ||
	    egress_addr_permitted((enum egress_addr_class)c, &r) != 0) {
		d->error = EGRESS_E_ADDR_DENIED;
		return d->error;
	}
	d->error = 0;
	d->rule = 0;
	return connect_bounded(
	    ctx, &pin, pinlen, type, timeout_ms, fdp, err, d);
}

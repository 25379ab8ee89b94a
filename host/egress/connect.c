/*
 * A guest's TCP connection by name (docs/egress.md, "Names and
 * connections"): the destination through the same checks as a fetch's
 * hop (syntax, the one granted rule, resolution, every address's class),
 * then a connect to the checked address with a time limit. The socket
 * goes back to the vmm and the guest; no byte of it is looked at here.
 */
#include <sys/socket.h>

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

int
egress_connect(struct egress_ctx *ctx, const struct egress_rule *rule,
    uint32_t timeout_ms, int *fdp, int *err, struct egress_decision *d)
{
	struct sockaddr_storage pin;
	struct egress_url u;
	socklen_t pinlen = 0, sl;
	struct pollfd p;
	char url[EGRESS_HOST_MAX + 32];
	uint64_t end;
	size_t which;
	int rc, fd, left, soerr = 0;

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
	if ((fd = socket(pin.ss_family,
	         SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		*err = errno;
		d->error = EGRESS_E_CONNECT;
		return d->error;
	}
	end = now_ms() + timeout_ms;
	if (connect(fd, (struct sockaddr *)&pin, pinlen) == -1) {
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

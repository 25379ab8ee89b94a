/*
 * Error names, their errno for guests, and default limits: apart from
 * ctx.c so that code without libcurl (the `keep run` binary's vmm) can
 * use the wire codec and these without pulling libcurl in.
 */
#include <errno.h>
#include <string.h>

#include "host/egress/egress.h"
#include "lib/util.h"

static const char *const errstr[] = {
	[EGRESS_E_URL - EGRESS_E_BASE] = "malformed URL",
	[EGRESS_E_SCHEME - EGRESS_E_BASE] = "scheme not http or https",
	[EGRESS_E_USERINFO - EGRESS_E_BASE] = "userinfo in URL refused",
	[EGRESS_E_HOST - EGRESS_E_BASE] = "malformed host",
	[EGRESS_E_PORT - EGRESS_E_BASE] = "malformed port",
	[EGRESS_E_RULE - EGRESS_E_BASE] = "malformed allowlist rule",
	[EGRESS_E_NOT_ALLOWED - EGRESS_E_BASE] = "host not on the allowlist",
	[EGRESS_E_PORT_DENIED - EGRESS_E_BASE] = "port not allowed for host",
	[EGRESS_E_HTTP_DENIED - EGRESS_E_BASE] = "http not allowed, https only",
	[EGRESS_E_RESOLVE - EGRESS_E_BASE] = "host did not resolve",
	[EGRESS_E_ADDR_DENIED - EGRESS_E_BASE] = "resolved address not allowed",
	[EGRESS_E_METHOD - EGRESS_E_BASE] = "method not allowed",
	[EGRESS_E_HEADER - EGRESS_E_BASE] = "malformed or forbidden header",
	[EGRESS_E_REQUEST_SIZE - EGRESS_E_BASE] = "request too large",
	[EGRESS_E_RESPONSE_SIZE - EGRESS_E_BASE] = "response too large",
	[EGRESS_E_TIMEOUT - EGRESS_E_BASE] = "timed out",
	[EGRESS_E_CONNECT - EGRESS_E_BASE] = "could not connect",
	[EGRESS_E_TLS - EGRESS_E_BASE] = "TLS failure",
	[EGRESS_E_TRANSFER - EGRESS_E_BASE] = "transfer failed",
	[EGRESS_E_REDIRECT - EGRESS_E_BASE] = "redirect refused",
	[EGRESS_E_CONCURRENCY - EGRESS_E_BASE] = "too many concurrent requests",
	[EGRESS_E_PIN - EGRESS_E_BASE] = "connection to an unchecked address",
	[EGRESS_E_NOMEM - EGRESS_E_BASE] = "out of memory",
	[EGRESS_E_MSG - EGRESS_E_BASE] = "malformed egress message",
	[EGRESS_E_WEBHOOK - EGRESS_E_BASE] = "webhook not delivered",
	[EGRESS_E_INTERNAL - EGRESS_E_BASE] = "internal error",
};

const char *
egress_strerror(int err)
{
	if (err == 0)
		return "ok";
	if (err <= EGRESS_E_BASE || err >= EGRESS_E_LAST ||
	    errstr[err - EGRESS_E_BASE] == NULL)
		return "unknown egress error";
	return errstr[err - EGRESS_E_BASE];
}

int
egress_errno(int err)
{
	switch (err) {
	case 0:
		return 0;
	case EGRESS_E_URL:
	case EGRESS_E_SCHEME:
	case EGRESS_E_USERINFO:
	case EGRESS_E_HOST:
	case EGRESS_E_PORT:
	case EGRESS_E_NOT_ALLOWED:
	case EGRESS_E_PORT_DENIED:
	case EGRESS_E_HTTP_DENIED:
	case EGRESS_E_ADDR_DENIED:
	case EGRESS_E_REDIRECT:
	case EGRESS_E_RULE:
		return -EACCES;
	case EGRESS_E_METHOD:
	case EGRESS_E_HEADER:
	case EGRESS_E_MSG:
		return -EINVAL;
	case EGRESS_E_REQUEST_SIZE:
		return -E2BIG;
	case EGRESS_E_RESPONSE_SIZE:
		return -EMSGSIZE;
	case EGRESS_E_TIMEOUT:
		return -ETIMEDOUT;
	case EGRESS_E_CONCURRENCY:
		return -EAGAIN;
	case EGRESS_E_NOMEM:
		return -ENOMEM;
	default:
		return -EIO;
	}
}

void
egress_limits_default(struct egress_limits *l)
{
	memset(l, 0, sizeof(*l));
	l->max_request = 1 << 20;
	l->max_response = 8 << 20;
	l->max_resp_headers = 64 << 10;
	l->timeout_ms = 30000;
	l->connect_timeout_ms = 10000;
	l->max_redirects = 5;
	l->max_concurrent = 4;
}

static const char *const methods[] = { "GET", "HEAD", "POST", "PUT", "PATCH",
	"DELETE", "OPTIONS" };

int
egress_method_check(const char *m)
{
	size_t i;

	if (m == NULL)
		return EGRESS_E_METHOD;
	for (i = 0; i < nitems(methods); i++)
		if (strcmp(m, methods[i]) == 0)
			return 0;
	return EGRESS_E_METHOD;
}

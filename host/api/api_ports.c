/*
 * /v1/sandboxes/{id}/ports/{port}/{path...} (docs/architecture.md,
 * "Ports"): a request to a server the guest runs on 127.0.0.1:port in
 * its sandbox's network namespace. The checks are those of every sandbox
 * route (token, decision, the sandbox is the caller's), and the policy's
 * expose rule for the port, on every request; then the request goes on a
 * connection to the port: one kept from an earlier request of the same
 * principal to the same sandbox and port, or a new one that the backend
 * has made where the namespace is. The loop (api_pipe_ops) passes the
 * response back as it comes, reading only its framing, and keeps the
 * connection for the next request when the server lets it; a WebSocket
 * after its 101 passes as a byte pipe.
 *
 * The request goes on rewritten: the path from the port on, the query;
 * the caller's headers but keep's own (its bearer token never reaches the
 * guest) and those that frame the hop (Connection and its kin); its body,
 * whole, with its length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sodium.h>

#include "host/api/api_int.h"
#include "lib/units.h"

#define BE(r) ((r)->api->be)

/* Headers that stay here: keep's credentials and the hop's framing.
 * (A Cookie header goes on without keep's link cookie, in build_head.) */
static int
hop_header(const struct http_header *h)
{
	static const char *const drop[] = { "authorization", "connection",
		"keep-alive", "proxy-authorization", "proxy-connection", "te",
		"trailer", "transfer-encoding", "content-length", "expect",
		"keep-lock", "idempotency-key", "e2b-traffic-access-token",
		"x-access-token", "x-api-key", "cookie" };

	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++)
		if (h->namelen == strlen(drop[i]) &&
		    strncasecmp(h->name, drop[i], h->namelen) == 0)
			return 1;
	return 0;
}

/* Does header name hold token (comma-separated, any case)? */
static int
has_token(const struct http_request *req, const char *name, const char *tok)
{
	size_t tl = strlen(tok);

	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		const char *v = h->value, *end = h->value + h->valuelen;

		if (h->namelen != strlen(name) ||
		    strncasecmp(h->name, name, h->namelen) != 0)
			continue;
		while (v < end) {
			const char *c = memchr(v, ',', (size_t)(end - v));
			const char *e = c != NULL ? c : end;

			while (v < e && (*v == ' ' || *v == '\t'))
				v++;
			while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
				e--;
			if ((size_t)(e - v) == tl &&
			    strncasecmp(v, tok, tl) == 0)
				return 1;
			v = c != NULL ? c + 1 : end;
		}
	}
	return 0;
}

/* The port from its path segment: 1..65535, digits only, no leading 0. */
unsigned
api_port_number(const char *s)
{
	unsigned long v = 0;
	size_t i;

	if (s[0] < '1' || s[0] > '9')
		return 0;
	for (i = 0; s[i] != '\0'; i++) {
		if (s[i] < '0' || s[i] > '9' || i >= 5)
			return 0;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	return v <= 65535 ? (unsigned)v : 0;
}

/*
 * The request as the guest's server gets it. rest: the path after
 * "/ports/{port}" ("" or starting with '/').
 */
static void
build_head(const struct rq *r, const char *rest, size_t restlen, int upgrade,
    struct http_buf *b)
{
	const struct http_request *req = r->req;

	http_buf_add(b, req->method_str, req->method_len);
	http_buf_puts(b, " ");
	if (restlen == 0)
		http_buf_puts(b, "/");
	else
		http_buf_add(b, rest, restlen);
	if (req->query != NULL) {
		/* Without the link, if it came in the URL. */
		size_t at = b->len;

		http_buf_puts(b, "?");
		api_link_query_strip(req->query, req->query_len, b);
		if (b->len == at + 1 && !b->oom && req->query_len > 0)
			b->len = at;
	}
	http_buf_puts(b, " HTTP/1.1\r\n");
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];

		if (hop_header(h))
			continue;
		/* Upgrade only goes with its Connection: Upgrade below. */
		if (!upgrade && h->namelen == 7 &&
		    strncasecmp(h->name, "upgrade", 7) == 0)
			continue;
		http_buf_add(b, h->name, h->namelen);
		http_buf_puts(b, ": ");
		http_buf_add(b, h->value, h->valuelen);
		http_buf_puts(b, "\r\n");
	}
	/* The guest's own cookies, never keep's link. */
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];
		size_t at = b->len;

		if (h->namelen != 6 || strncasecmp(h->name, "cookie", 6) != 0)
			continue;
		http_buf_puts(b, "Cookie: ");
		if (api_link_cookie_strip(h->value, h->valuelen, b) > 0)
			http_buf_puts(b, "\r\n");
		else if (!b->oom)
			b->len = at;
	}
	/* HTTP/1.1's default, keep-alive, but for an upgrade: the
	 * connection is the front's to keep, whatever the client asked. */
	if (upgrade)
		http_buf_puts(b, "Connection: Upgrade\r\n");
	if (req->body_len > 0 || req->method == HTTP_POST ||
	    req->method == HTTP_PUT || req->method == HTTP_PATCH) {
		http_buf_puts(b, "Content-Length: ");
		http_buf_putu(b, req->body_len);
		http_buf_puts(b, "\r\n");
	}
	if (req->peer[0] != '\0') {
		http_buf_puts(b, "X-Forwarded-For: ");
		http_buf_puts(b, req->peer);
		http_buf_puts(b, "\r\n");
	}
	http_buf_puts(b, "\r\n");
	if (req->body_len > 0)
		http_buf_add(b, req->body, req->body_len);
}

void
api_set_tls(struct api *a, int tls)
{
	a->tls = tls != 0;
}

void
api_set_ports_domain(struct api *a, const char *domain)
{
	strlcpy(a->ports_domain, domain != NULL ? domain : "",
	    sizeof(a->ports_domain));
}

/*
 * "{port}-{id}.DOMAIN", as E2B's SDK builds a sandbox's host (getHost),
 * with an optional ":port" of keepd's listener, any case. The sandbox id
 * may hold '-' itself: the port is what comes before the first one.
 * Returns the ports route's index for the method, -2 for a port's host
 * with another method, -1 for any other host.
 */
long
api_port_host(
    const struct api *a, const struct http_request *req, char *id, char *port)
{
	const struct http_header *h;
	const char *v, *dash, *dot;
	size_t n, dl = strlen(a->ports_domain), pl, il;
	enum http_method m = req->method == HTTP_HEAD ? HTTP_GET : req->method;

	if (dl == 0 || (h = http_find_header(req, "host")) == NULL)
		return -1;
	v = h->value;
	n = h->valuelen;
	/* keepd's own port after the name, if any. */
	for (size_t i = n; i > 0; i--)
		if (v[i - 1] == ':') {
			n = i - 1;
			break;
		} else if (v[i - 1] < '0' || v[i - 1] > '9')
			break;
	if (n < dl + 4 || v[n - dl - 1] != '.' ||
	    strncasecmp(v + n - dl, a->ports_domain, dl) != 0)
		return -1;
	dot = v + n - dl - 1;
	if ((dash = memchr(v, '-', (size_t)(dot - v))) == NULL)
		return -1;
	pl = (size_t)(dash - v);
	il = (size_t)(dot - dash - 1);
	if (pl == 0 || pl > 5 || !api_valid_id(dash + 1, il) ||
	    memchr(dash + 1, '.', il) != NULL)
		return -1;
	for (size_t i = 0; i < pl; i++)
		if (v[i] < '0' || v[i] > '9')
			return -1;
	memcpy(port, v, pl);
	port[pl] = '\0';
	/* Ids are lower case; a host name is not. */
	for (size_t i = 0; i < il; i++) {
		char c = dash[1 + i];

		id[i] = c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	id[il] = '\0';
	for (size_t i = 0; i < api_nroutes; i++)
		if (api_routes[i].fn == h_port && api_routes[i].method == m)
			return (long)i;
	id[0] = port[0] = '\0';
	return -2;
}

static void link_redirect(struct rq *r, unsigned port);

/*
 * The connection the request goes on: a kept one (*reused), else one
 * the backend makes. API_OK, or an error with err filled.
 */
static int
port_conn(struct rq *r, unsigned port, const char *key, int fresh, int *fd,
    int *reused, struct api_error *err)
{
	int rc;

	*fd = -1;
	*reused = 0;
	if (!fresh && (*fd = r->api->pipe->take(r->api->pipe_arg, key)) >= 0) {
		*reused = 1;
		return API_OK;
	}
	memset(err, 0, sizeof(*err));
	rc = BE(r)->port_open(BE(r)->ctx, &r->call, r->id, port, fd, err);
	if (rc == API_OK && *fd < 0)
		rc = API_EINTERNAL;
	if (rc != API_OK && *fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	return rc;
}

void
h_port(struct rq *r)
{
	const struct http_request *req = r->req;
	struct api_error err;
	struct http_buf b;
	const char *rest, *p, *end = req->path + req->path_len;
	char key[API_PIPE_KEY_MAX];
	unsigned port;
	int fd = -1, rc, upgrade, reused, flags, tries, fresh;

	if ((port = api_port_number(r->tail)) == 0) {
		rq_error(r, API_EBADREQ, "The port must be 1 to 65535");
		return;
	}
	if (BE(r)->port_open == NULL || r->api->pipe == NULL || !r->can_defer) {
		rq_error(r, API_ENOTIMPL, "Ports are not served here");
		return;
	}
	/* The path after "/ports/{port}": the route matched it, so both
	 * are there. By host name, the whole path is the guest's. */
	if (r->host_form)
		rest = req->path;
	else if ((p = memmem(req->path, req->path_len, "/ports/", 7)) == NULL) {
		rq_error(r, API_EINTERNAL, "Internal error");
		return;
	} else
		rest = p + 7 + strlen(r->tail);
	if (rest > end)
		rest = end;
	upgrade = has_token(req, "connection", "upgrade") &&
	    http_find_header(req, "upgrade") != NULL;
	/* A browser opening a link: the cookie, and the URL without it. */
	if (r->link_from == API_LINK_FROM_QUERY && !upgrade &&
	    (req->method == HTTP_GET || req->method == HTTP_HEAD)) {
		link_redirect(r, port);
		return;
	}
	memset(&err, 0, sizeof(err));
	if (BE(r)->port_check != NULL &&
	    (rc = BE(r)->port_check(BE(r)->ctx, &r->call, r->id, port, &err)) !=
	        API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	/* Kept connections are the principal's that the vmm found the
	 * sandbox's owner: an id has no space, a port is digits. */
	if ((size_t)snprintf(key, sizeof(key), "%u %s %s", port, r->id,
	        r->who.sub) >= sizeof(key)) {
		rq_error(r, API_EINTERNAL, "Internal error");
		return;
	}
	http_buf_init(&b);
	build_head(r, rest, (size_t)(end - rest), upgrade, &b);
	if (b.oom) {
		http_buf_free(&b);
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	flags = (upgrade ? API_PIPE_UPGRADE : 0) |
	    (req->method == HTTP_HEAD ? API_PIPE_HEAD : 0) |
	    (r->close ? API_PIPE_CLOSE : 0);
	/* A kept connection the server closed meanwhile costs the client
	 * nothing: its request goes once more, on a new one. Only a
	 * request that may be sent twice (RFC 9110 9.2.2) goes on a kept
	 * connection: a POST or PATCH that a server read and then closed
	 * on, unanswered, must not be done again. */
	fresh =
	    upgrade || req->method == HTTP_POST || req->method == HTTP_PATCH;
	for (tries = 0;; tries++) {
		rc = port_conn(
		    r, port, key, fresh || tries > 0, &fd, &reused, &err);
		if (rc != API_OK) {
			http_buf_free(&b);
			rq_backend_error(r, rc, &err);
			return;
		}
		if (r->api->pipe->open(r->api->pipe_arg, r->conn, fd, b.data,
		        b.len, key,
		        flags | (reused ? API_PIPE_REUSED : 0)) != 0) {
			close(fd);
			http_buf_free(&b);
			/* The client has gone meanwhile, or no memory. */
			rq_error(
			    r, API_EUNAVAIL, "The port could not be joined");
			r->close = 1;
			return;
		}
		if (!reused ||
		    (rc = r->api->pipe->wait(r->api->pipe_arg, r->conn)) != -1)
			break;
	}
	http_buf_free(&b);
	/* The guest's server answers through the loop; what is counted and
	 * audited here is that the request went through. */
	r->status = 200;
	if (reused && rc == -2)
		r->close = 1;
}

/* ---- links ------------------------------------------------------------ */

#define API_LINK_COOKIES_MAX 8 /* keep_link cookies tried in one request */

enum link_check {
	LINK_OK,
	LINK_NOT_LINK, /* a bearer token */
	LINK_ELSEWHERE,
	LINK_INVALID,
	LINK_UNAVAIL
};

/*
 * Verify one link value (nothing is replied): LINK_OK and *who its
 * issuer when it is this request's sandbox and port; LINK_ELSEWHERE for
 * a good link to another; LINK_INVALID (err says why) or LINK_UNAVAIL
 * (the backend cannot tell now).
 */
static enum link_check
link_check(struct rq *r, const char *v, size_t vl, unsigned port,
    struct api_principal *who, struct api_error *err)
{
	const struct api_backend *be = r->api->be;
	int rc;

	memset(err, 0, sizeof(*err));
	rc = be->link_verify(be->ctx, v, vl, who, err);
	err->message[sizeof(err->message) - 1] = '\0';
	if (rc != API_OK) {
		memset(who, 0, sizeof(*who));
		return rc == API_EUNAUTH   ? LINK_INVALID
		    : rc == API_EFORBIDDEN ? LINK_NOT_LINK
		                           : LINK_UNAVAIL;
	}
	who->sub[sizeof(who->sub) - 1] = '\0';
	who->jti[sizeof(who->jti) - 1] = '\0';
	who->sbx[sizeof(who->sbx) - 1] = '\0';
	if (!who->via_link || who->link_port != port ||
	    strcmp(who->sbx, r->id) != 0)
		return LINK_ELSEWHERE;
	return LINK_OK;
}

/* The answer to a link that does not open this port; -1. */
static int
link_refuse(struct rq *r, enum link_check c, const struct api_principal *who,
    const struct api_error *err)
{
	const char *msg = c == LINK_NOT_LINK ? "Invalid link: not a link"
	    : err->message[0] != '\0'        ? err->message
	                                     : "Invalid link";

	if (c == LINK_UNAVAIL) {
		rq_backend_error(r, API_EUNAVAIL, err);
		return -1;
	}
	if (c == LINK_ELSEWHERE) {
		/* Audited with who gave it: a link tried elsewhere. */
		r->who = *who;
		rq_error(r, API_EFORBIDDEN,
		    "This link is for another sandbox or port");
		api_audit_refused(r, NULL, 403, "link",
		    "the link is for another sandbox or port");
		memset(&r->who, 0, sizeof(r->who));
		return -1;
	}
	memset(&r->who, 0, sizeof(r->who));
	rq_error(r, API_EUNAUTH, "%s", msg);
	api_audit_refused(r, NULL, 401, "link", msg);
	return -1;
}

/*
 * A ports request without Authorization: a link in the URL (keep_link=,
 * a fresh one wins over a cookie), in E2B's traffic token header, or in
 * the cookie the first request left. E2B's header may as well hold a
 * bearer token (the sandbox's own, E2B's trafficAccessToken): then *tok
 * is it and 1 is returned, as when there is no link at all (*tok NULL).
 * 0: r->who is the link's issuer, r->link_from where it came from; -1:
 * refused, the reply sent and audited.
 */
int
api_port_link_auth(struct rq *r, const char **tok, size_t *tlen)
{
	const struct http_request *req = r->req;
	const struct http_header *h;
	struct api_principal who;
	struct api_error err;
	enum link_check c, worst = LINK_OK;
	const char *v;
	size_t vl, pos;
	unsigned port = api_port_number(r->tail);
	int rc, n = 0;

	*tok = NULL;
	*tlen = 0;
	memset(&err, 0, sizeof(err));
	if (r->api->be->link_verify == NULL || port == 0)
		return 1;
	rc = api_link_query(req->query, req->query_len, &v, &vl);
	if (rc < 0) {
		strlcpy(err.message, "Malformed link (" API_LINK_PARAM ")",
		    sizeof(err.message));
		return link_refuse(r, LINK_INVALID, NULL, &err);
	}
	if (rc == 1) {
		if ((c = link_check(r, v, vl, port, &who, &err)) != LINK_OK)
			return link_refuse(r, c, &who, &err);
		r->who = who;
		r->link_from = API_LINK_FROM_QUERY;
		return 0;
	}
	if ((h = http_find_header(req, "e2b-traffic-access-token")) != NULL) {
		if (!api_link_value_ok(h->value, h->valuelen)) {
			strlcpy(err.message, "Missing or malformed token",
			    sizeof(err.message));
			return link_refuse(r, LINK_INVALID, NULL, &err);
		}
		c = link_check(r, h->value, h->valuelen, port, &who, &err);
		if (c == LINK_NOT_LINK) {
			/* Not a link: a bearer token, verified as one. */
			*tok = h->value;
			*tlen = h->valuelen;
			return 1;
		}
		if (c != LINK_OK)
			return link_refuse(r, c, &who, &err);
		r->who = who;
		r->link_from = API_LINK_FROM_HEADER;
		return 0;
	}
	/* The cookies: each keep_link one until one is this port's (a
	 * browser sends every one whose host and path match). */
	for (size_t i = 0; i < req->nheaders; i++) {
		h = &req->headers[i];
		if (h->namelen != 6 || strncasecmp(h->name, "cookie", 6) != 0)
			continue;
		pos = 0;
		while ((rc = api_link_cookie(
		            h->value, h->valuelen, &pos, &v, &vl)) != 0) {
			if (rc < 0 || ++n > API_LINK_COOKIES_MAX) {
				strlcpy(err.message,
				    "Malformed link cookie (" API_LINK_PARAM
				    ")",
				    sizeof(err.message));
				return link_refuse(r, LINK_INVALID, NULL, &err);
			}
			c = link_check(r, v, vl, port, &who, &err);
			if (c == LINK_OK) {
				r->who = who;
				r->link_from = API_LINK_FROM_COOKIE;
				return 0;
			}
			if (c > worst || worst == LINK_OK)
				worst = c;
		}
	}
	if (n > 0)
		return link_refuse(r, worst, &who, &err);
	return 1;
}

/* A host or a host:port as a client named keepd (Host): printable
 * host characters only, else NULL. */
static const char *
request_host(const struct rq *r, size_t *len)
{
	const struct http_header *h = http_find_header(r->req, "host");

	if (h == NULL || h->valuelen == 0 || h->valuelen > 255)
		return NULL;
	for (size_t i = 0; i < h->valuelen; i++) {
		char c = h->value[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		        c == ':' || c == '[' || c == ']'))
			return NULL;
	}
	*len = h->valuelen;
	return h->value;
}

/*
 * A link that came in the URL, on a browser's GET: answered with a
 * redirect to the same URL without it and a cookie that holds it, so
 * that the page's own requests (its scripts, images, links) carry it
 * too, and the link leaves the address bar. The cookie is the port's
 * alone: host-only on the port's host name, or the port's path.
 */
static void
link_redirect(struct rq *r, unsigned port)
{
	const struct http_request *req = r->req;
	const char *v;
	size_t vl;
	int64_t left = r->who.exp - (int64_t)(api_now_ms(r->api) / 1000);
	struct http_buf loc, ck;

	if (api_link_query(req->query, req->query_len, &v, &vl) != 1 ||
	    left <= 0) {
		rq_error(r, API_EUNAUTH, "Invalid link");
		return;
	}
	http_buf_init(&loc);
	http_buf_init(&ck);
	/* "//host" or "/\\host" would be another site to a browser (an
	 * open redirect): "/." keeps it a path on this one. */
	if (req->path_len >= 2 && (req->path[1] == '/' || req->path[1] == '\\'))
		http_buf_puts(&loc, "/.");
	http_buf_add(&loc, req->path, req->path_len);
	{
		size_t at = loc.len;

		http_buf_puts(&loc, "?");
		api_link_query_strip(req->query, req->query_len, &loc);
		if (loc.len == at + 1 && !loc.oom)
			loc.len = at;
	}
	http_buf_puts(&ck, API_LINK_PARAM "=");
	http_buf_add(&ck, v, vl);
	if (r->host_form)
		http_buf_puts(&ck, "; Path=/");
	else
		http_buf_printf(
		    &ck, "; Path=/v1/sandboxes/%s/ports/%u", r->id, port);
	http_buf_printf(&ck, "; Max-Age=%lld; HttpOnly; SameSite=Lax%s",
	    (long long)left, r->api->tls ? "; Secure" : "");
	http_buf_add(&loc, "", 1);
	http_buf_add(&ck, "", 1);
	if (loc.oom || ck.oom)
		rq_error(r, API_EINTERNAL, "Out of memory");
	else {
		r->location = loc.data;
		r->set_cookie = ck.data;
		rq_raw(r, 303, "text/plain", "", 0);
		r->location = r->set_cookie = NULL;
	}
	http_buf_free(&loc);
	if (ck.data != NULL)
		sodium_memzero(ck.data, ck.cap);
	http_buf_free(&ck);
}

/*
 * POST /v1/sandboxes/{id}/links {"port": 8000, "ttl": "1h"}: a link to
 * a port of the caller's sandbox, as the URLs that open it (the path
 * form on the host the caller named keepd by, and the host-name form
 * where keepd.yaml has ports.domain) and the link alone (for E2B's
 * E2B-Traffic-Access-Token header). ttl: a duration (30s, 15m, 1h, 7d)
 * or seconds, at most what the policy's rule says and never past the
 * caller's token; without one, 1h or less where either ends sooner.
 */
void
h_port_link(struct rq *r)
{
	static const char *const fields[] = { "port", "ttl", NULL };
	const struct api_backend *be = r->api->be;
	json_t *jp, *jt;
	struct api_link link;
	struct api_error err;
	const char *host;
	size_t hlen = 0;
	int64_t ttl_s = 0; /* the backend's default */
	json_int_t port;
	char *url = NULL, *host_url = NULL;
	const char *scheme = r->api->tls ? "https" : "http";
	int rc;

	if (be->port_link == NULL || be->port_open == NULL) {
		rq_error(r, API_ENOTIMPL, "Links are not served here");
		return;
	}
	if (r->who.via_link) {
		rq_error(r, API_EFORBIDDEN, "A link cannot make links");
		return;
	}
	if (r->body == NULL || rq_fields(r, r->body, fields))
		return;
	jp = json_object_get(r->body, "port");
	if (!json_is_integer(jp) || (port = json_integer_value(jp)) < 1 ||
	    port > 65535) {
		rq_error(r, API_EBADREQ, "port: an integer from 1 to 65535");
		return;
	}
	if ((jt = json_object_get(r->body, "ttl")) != NULL) {
		uint64_t ms = 0;

		if (json_is_integer(jt) && json_integer_value(jt) > 0 &&
		    json_integer_value(jt) <= API_LINK_TTL_MAX_S)
			ttl_s = (int64_t)json_integer_value(jt);
		else if (json_is_string(jt) &&
		    units_parse_duration(json_string_value(jt),
		        json_string_length(jt), &ms) == 0 &&
		    ms >= 1000 && ms / 1000 <= API_LINK_TTL_MAX_S)
			ttl_s = (int64_t)(ms / 1000);
		else {
			rq_error(r, API_EBADREQ,
			    "ttl: a duration from 1s to 30d (e.g. \"1h\") or "
			    "seconds");
			return;
		}
	}
	memset(&link, 0, sizeof(link));
	memset(&err, 0, sizeof(err));
	rc = be->port_link(
	    be->ctx, &r->call, r->id, (unsigned)port, ttl_s, &link, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	link.token[sizeof(link.token) - 1] = '\0';
	link.jti[sizeof(link.jti) - 1] = '\0';
	if ((host = request_host(r, &hlen)) != NULL &&
	    asprintf(&url,
	        "%s://%.*s/v1/sandboxes/%s/ports/%u/?" API_LINK_PARAM "=%s",
	        scheme, (int)hlen, host, r->id, (unsigned)port, link.token) < 0)
		url = NULL;
	if (r->api->ports_domain[0] != '\0') {
		/* keepd's own port, as the caller named it, if any. */
		const char *colon = host != NULL && host[0] != '['
		    ? memchr(host, ':', hlen)
		    : NULL;
		int pl = colon != NULL ? (int)(host + hlen - colon) : 0;

		if (asprintf(&host_url,
		        "%s://%u-%s.%s%.*s/?" API_LINK_PARAM "=%s", scheme,
		        (unsigned)port, r->id, r->api->ports_domain, pl,
		        colon != NULL ? colon : "", link.token) < 0)
			host_url = NULL;
	}
	rq_json(r, 201,
	    json_pack("{s:s,s:i,s:s,s:s?,s:s?,s:o}", "id", link.jti, "port",
	        (int)port, "token", link.token, "url", url, "host_url",
	        host_url, "expires_at", iso_time(link.expires_at)));
	if (url != NULL)
		sodium_memzero(url, strlen(url));
	if (host_url != NULL)
		sodium_memzero(host_url, strlen(host_url));
	free(url);
	free(host_url);
	sodium_memzero(&link, sizeof(link));
}

/*
 * /v1/sandboxes/{id}/ports/{port}/{path...} (docs/architecture.md,
 * "Ports"): a request to a server the guest runs on 127.0.0.1:port in
 * its sandbox's network namespace. The checks are those of every sandbox
 * route (token, decision, the sandbox is the caller's); then the backend
 * has the socket made where the namespace is, and the connection becomes
 * a byte pipe to it (api_pipe_fn), so a response of any framing and a
 * WebSocket after its 101 pass through unread.
 *
 * The request goes on rewritten: the path from the port on, the query;
 * the caller's headers but keep's own (its bearer token never reaches the
 * guest) and those that frame the hop (Connection and its kin, which the
 * head here restates); its body, whole, with its length.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "host/api/api_int.h"

#define BE(r) ((r)->api->be)

/* Headers that stay here: keep's credentials and the hop's framing. */
static int
hop_header(const struct http_header *h)
{
	static const char *const drop[] = { "authorization", "connection",
		"keep-alive", "proxy-authorization", "proxy-connection", "te",
		"trailer", "transfer-encoding", "content-length", "expect",
		"keep-lock", "idempotency-key" };

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
static unsigned
port_parse(const char *s)
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
		http_buf_puts(b, "?");
		http_buf_add(b, req->query, req->query_len);
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
	/* One request per connection to the port: its response's end is
	 * then the connection's, whatever its framing. */
	http_buf_puts(
	    b, upgrade ? "Connection: Upgrade\r\n" : "Connection: close\r\n");
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

void
h_port(struct rq *r)
{
	const struct http_request *req = r->req;
	struct api_error err;
	struct http_buf b;
	const char *rest, *p, *end = req->path + req->path_len;
	unsigned port;
	int fd = -1, rc, upgrade;

	if ((port = port_parse(r->tail)) == 0) {
		rq_error(r, API_EBADREQ, "The port must be 1 to 65535");
		return;
	}
	if (BE(r)->port_open == NULL || r->api->pipe_fn == NULL ||
	    !r->can_defer) {
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

	memset(&err, 0, sizeof(err));
	rc = BE(r)->port_open(BE(r)->ctx, &r->call, r->id, port, &fd, &err);
	if (rc != API_OK || fd < 0) {
		if (rc == API_OK)
			rc = API_EINTERNAL;
		if (fd >= 0)
			close(fd);
		rq_backend_error(r, rc, &err);
		return;
	}
	http_buf_init(&b);
	build_head(r, rest, (size_t)(end - rest), upgrade, &b);
	if (b.oom ||
	    r->api->pipe_fn(r->api->pipe_arg, r->conn, fd, b.data, b.len) !=
	        0) {
		http_buf_free(&b);
		close(fd);
		/* The client has gone meanwhile, or there is no memory. */
		rq_error(r, API_EUNAVAIL, "The port could not be joined");
		r->close = 1;
		return;
	}
	http_buf_free(&b);
	/* The guest's server answers on the pipe; what is counted and
	 * audited here is that the request went through. */
	r->status = 200;
	r->close = 1;
}

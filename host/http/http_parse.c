/*
 * Strict HTTP/1.1 request-head parser and chunked decoder (RFC 9112).
 * Every byte is classified by a table; anything outside the grammar is a
 * refusal, never a guess, because a lenient parser behind a proxy is how
 * request smuggling happens.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "host/http/http.h"
#include "lib/util.h"

/* tchar (RFC 9110 5.6.2). */
static int
is_tchar(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Characters of an origin-form target: pchar, '/', '?' (RFC 3986). */
static int
is_target_char(unsigned char c)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9'))
		return 1;
	return c != '\0' && strchr("-._~%!$&'()*+,;=:@/?", c) != NULL;
}

/* field-vchar, SP, HTAB; obs-text (0x80-0xff) is allowed as opaque. */
static int
is_value_char(unsigned char c)
{
	return c == ' ' || c == '\t' || (c >= 0x21 && c != 0x7f);
}

static int
hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void
http_limits_default(struct http_limits *l)
{
	l->max_head = 8192;
	l->max_target = 4096;
	l->max_headers = 64;
	l->max_body = 1 << 20;
}

int
http_token_eq(const char *s, size_t len, const char *lit)
{
	size_t n = strlen(lit);

	if (len != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char a = (unsigned char)s[i],
		              b = (unsigned char)lit[i];
		if (a >= 'A' && a <= 'Z')
			a += 'a' - 'A';
		if (b >= 'A' && b <= 'Z')
			b += 'a' - 'A';
		if (a != b)
			return 0;
	}
	return 1;
}

const struct http_header *
http_find_header(const struct http_request *req, const char *name)
{
	for (size_t i = 0; i < req->nheaders; i++)
		if (http_token_eq(
		        req->headers[i].name, req->headers[i].namelen, name))
			return &req->headers[i];
	return NULL;
}

static enum http_method
method_of(const char *m, size_t n)
{
	static const struct {
		const char *name;
		enum http_method m;
	} tab[] = {
		{ "GET", HTTP_GET },
		{ "HEAD", HTTP_HEAD },
		{ "POST", HTTP_POST },
		{ "PUT", HTTP_PUT },
		{ "PATCH", HTTP_PATCH },
		{ "DELETE", HTTP_DELETE },
		{ "OPTIONS", HTTP_OPTIONS },
	};

	/* Methods are case-sensitive (RFC 9110 9.1). */
	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strlen(tab[i].name) == n && memcmp(tab[i].name, m, n) == 0)
			return tab[i].m;
	return HTTP_OTHER;
}

/*
 * Find the end of a line starting at p: the index of its CR, which must be
 * followed by LF. Returns HTTP_OK, HTTP_MORE, or HTTP_ERROR for a bare CR
 * or LF.
 */
static int
line_end(const char *buf, size_t len, size_t p, size_t *cr)
{
	for (size_t i = p; i < len; i++) {
		if (buf[i] == '\n')
			return HTTP_ERROR;
		if (buf[i] == '\r') {
			if (i + 1 == len)
				return HTTP_MORE;
			if (buf[i + 1] != '\n')
				return HTTP_ERROR;
			*cr = i;
			return HTTP_OK;
		}
	}
	return HTTP_MORE;
}

static int
parse_uint(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;

	/* 1*DIGIT, no sign, no list; 18 digits keeps it from overflowing. */
	if (n == 0 || n > 18)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v;
	return 0;
}

/* Walk a comma-separated token list; set flags for close/keep-alive. */
static int
parse_connection(const char *v, size_t n, int *close, int *keep)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e;

		while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < n && is_tchar((unsigned char)v[i]))
			i++;
		e = i;
		while (i < n && (v[i] == ' ' || v[i] == '\t'))
			i++;
		if (i < n && v[i] != ',')
			return -1;
		if (e > s) {
			if (http_token_eq(v + s, e - s, "close"))
				*close = 1;
			else if (http_token_eq(v + s, e - s, "keep-alive"))
				*keep = 1;
		}
	}
	return 0;
}

static int
fail(int *status, int code)
{
	*status = code;
	return HTTP_ERROR;
}

static int
parse_request_line(const char *buf, size_t s, size_t cr,
    const struct http_limits *lim, struct http_request *req, int *status)
{
	size_t i = s, m0, t0;

	m0 = i;
	while (i < cr && is_tchar((unsigned char)buf[i]))
		i++;
	if (i == m0 || i >= cr || buf[i] != ' ')
		return fail(status, 400);
	req->method_str = buf + m0;
	req->method_len = i - m0;
	req->method = method_of(buf + m0, i - m0);
	i++;

	t0 = i;
	while (i < cr && buf[i] != ' ') {
		if (!is_target_char((unsigned char)buf[i]))
			return fail(status, 400);
		i++;
	}
	if (i == t0 || i >= cr)
		return fail(status, 400);
	if (i - t0 > lim->max_target)
		return fail(status, 414);
	req->target = buf + t0;
	req->target_len = i - t0;
	if (req->target_len == 1 && buf[t0] == '*') {
		if (req->method != HTTP_OPTIONS)
			return fail(status, 400);
	} else if (buf[t0] != '/')
		/* absolute-form is for proxies; we are an origin server. */
		return fail(status, 400);
	req->path = req->target;
	req->path_len = req->target_len;
	req->query = NULL;
	req->query_len = 0;
	{
		const char *q = memchr(req->target, '?', req->target_len);
		if (q != NULL) {
			req->path_len = (size_t)(q - req->target);
			req->query = q + 1;
			req->query_len = req->target_len - req->path_len - 1;
		}
	}
	i++;

	if (cr - i != 8 || memcmp(buf + i, "HTTP/", 5) != 0 ||
	    buf[i + 5] < '0' || buf[i + 5] > '9' || buf[i + 6] != '.' ||
	    buf[i + 7] < '0' || buf[i + 7] > '9')
		return fail(status, 400);
	if (buf[i + 5] != '1')
		return fail(status, 505);
	req->version_minor = buf[i + 7] - '0';
	if (req->version_minor > 1)
		req->version_minor = 1; /* 1.x, x > 1: answer as 1.1 */
	return HTTP_OK;
}

static int
parse_field(
    const char *buf, size_t s, size_t cr, struct http_header *h, int *status)
{
	size_t i = s, v0, v1;

	/* obs-fold: a continuation line (RFC 9112 5.2) is refused. */
	if (buf[s] == ' ' || buf[s] == '\t')
		return fail(status, 400);
	while (i < cr && is_tchar((unsigned char)buf[i]))
		i++;
	/* No whitespace between name and colon (RFC 9112 5.1). */
	if (i == s || i >= cr || buf[i] != ':')
		return fail(status, 400);
	h->name = buf + s;
	h->namelen = i - s;
	i++;
	while (i < cr && (buf[i] == ' ' || buf[i] == '\t'))
		i++;
	v0 = i;
	for (; i < cr; i++)
		if (!is_value_char((unsigned char)buf[i]))
			return fail(status, 400);
	v1 = cr;
	while (v1 > v0 && (buf[v1 - 1] == ' ' || buf[v1 - 1] == '\t'))
		v1--;
	h->value = buf + v0;
	h->valuelen = v1 - v0;
	return HTTP_OK;
}

/* Fields a request may carry once, beside Authorization. */
static const char *const once_fields[] = { "x-api-key", "x-access-token",
	"e2b-traffic-access-token", "e2b-sandbox-id" };

static int
once_field(const struct http_header *h)
{
	for (size_t i = 0; i < nitems(once_fields); i++)
		if (http_token_eq(h->name, h->namelen, once_fields[i]))
			return (int)i;
	return -1;
}

/* Framing and connection semantics from the parsed fields. */
static int
interpret_fields(struct http_request *req, int *status)
{
	int ncl = 0, nte = 0, nhost = 0, nauth = 0, close = 0, keep = 0, k;
	int seen[nitems(once_fields)] = { 0 };

	req->chunked = 0;
	req->content_length = 0;
	req->expect_continue = 0;
	for (size_t i = 0; i < req->nheaders; i++) {
		const struct http_header *h = &req->headers[i];

		if (http_token_eq(h->name, h->namelen, "content-length")) {
			if (++ncl > 1 ||
			    parse_uint(h->value, h->valuelen,
			        &req->content_length) != 0)
				return fail(status, 400);
		} else if (http_token_eq(
		               h->name, h->namelen, "transfer-encoding")) {
			if (++nte > 1)
				return fail(status, 400);
			if (!http_token_eq(h->value, h->valuelen, "chunked"))
				return fail(status, 501);
			req->chunked = 1;
		} else if (http_token_eq(h->name, h->namelen, "host")) {
			if (++nhost > 1)
				return fail(status, 400);
		} else if (http_token_eq(
		               h->name, h->namelen, "authorization")) {
			/* Two credentials: which one a proxy checked is unknown. */
			if (++nauth > 1)
				return fail(status, 400);
		} else if ((k = once_field(h)) >= 0) {
			/* E2B's credentials and sandbox (docs/e2b.md): the
			 * same reason. */
			if (seen[k]++ > 0)
				return fail(status, 400);
		} else if (http_token_eq(h->name, h->namelen, "connection")) {
			if (parse_connection(
			        h->value, h->valuelen, &close, &keep) != 0)
				return fail(status, 400);
		} else if (http_token_eq(h->name, h->namelen, "expect")) {
			if (!http_token_eq(
			        h->value, h->valuelen, "100-continue"))
				return fail(status, 417);
			req->expect_continue = 1;
		}
	}
	/* Both framings at once is the classic smuggling vector. */
	if (ncl && nte)
		return fail(status, 400);
	if (nte && req->version_minor == 0)
		return fail(status, 400);
	if (req->version_minor == 1 && nhost != 1)
		return fail(status, 400);
	if (req->version_minor == 1)
		req->keep_alive = !close;
	else
		req->keep_alive = keep && !close;
	return HTTP_OK;
}

int
http_parse_head(const char *buf, size_t len, const struct http_limits *lim,
    struct http_request *req, int *status)
{
	size_t p = 0, cr;
	int rc;

	*status = 0;
	req->nheaders = 0;
	req->body = NULL;
	req->body_len = 0;
	while (len - p >= 2 && buf[p] == '\r' && buf[p + 1] == '\n')
		p += 2;
	if (p > lim->max_head)
		return fail(status, 400);
	if (len - p == 1 && buf[p] == '\r')
		return HTTP_MORE;

	rc = line_end(buf, len, p, &cr);
	if (rc == HTTP_ERROR)
		return fail(status, 400);
	if (rc == HTTP_MORE) {
		if (len - p > lim->max_target + 32)
			return fail(status, 414);
		if (len > lim->max_head)
			return fail(status, 431);
		/* Reject garbage before waiting for the rest. */
		for (size_t i = p; i < len; i++)
			if (buf[i] != ' ' && buf[i] != '\r' &&
			    !is_target_char((unsigned char)buf[i]) &&
			    !is_tchar((unsigned char)buf[i]))
				return fail(status, 400);
		return HTTP_MORE;
	}
	if (cr + 2 > lim->max_head)
		return fail(status, cr - p > lim->max_target + 32 ? 414 : 431);
	if (parse_request_line(buf, p, cr, lim, req, status) != HTTP_OK)
		return HTTP_ERROR;
	p = cr + 2;

	for (;;) {
		rc = line_end(buf, len, p, &cr);
		if (rc == HTTP_ERROR)
			return fail(status, 400);
		if (rc == HTTP_MORE) {
			if (len > lim->max_head)
				return fail(status, 431);
			return HTTP_MORE;
		}
		if (cr + 2 > lim->max_head)
			return fail(status, 431);
		if (cr == p) {
			p += 2;
			break;
		}
		if (req->nheaders >= lim->max_headers ||
		    req->nheaders >= HTTP_MAX_HEADERS)
			return fail(status, 431);
		if (parse_field(buf, p, cr, &req->headers[req->nheaders],
		        status) != HTTP_OK)
			return HTTP_ERROR;
		req->nheaders++;
		p = cr + 2;
	}
	req->head_len = p;
	if (interpret_fields(req, status) != HTTP_OK)
		return HTTP_ERROR;
	if (!req->chunked && req->content_length > lim->max_body)
		return fail(status, 413);
	return HTTP_OK;
}

enum {
	CH_SIZE, /* reading hex digits */
	CH_SIZE_LF, /* saw CR after the size */
	CH_DATA, /* copying chunk data */
	CH_DATA_CR, /* expecting CR after data */
	CH_DATA_LF, /* expecting LF after data */
	CH_TRAILER, /* after the last chunk: expecting CR */
	CH_TRAILER_LF /* expecting the final LF */
};

void
http_chunked_init(struct http_chunked *c)
{
	c->state = CH_SIZE;
	c->remaining = 0;
	c->ndigits = 0;
	c->total = 0;
}

int
http_chunked_decode(struct http_chunked *c, char *buf, size_t len, size_t *rpos,
    size_t *wpos, uint64_t max_body, int *status)
{
	size_t r = *rpos, w = *wpos;
	int rc = HTTP_MORE;

	*status = 0;
	while (r < len && rc == HTTP_MORE) {
		unsigned char ch = (unsigned char)buf[r];

		switch (c->state) {
		case CH_SIZE:
			if (hexval(ch) >= 0) {
				/* 15 hex digits cannot overflow 64 bits. */
				if (++c->ndigits > 15)
					return fail(status, 413);
				c->remaining =
				    c->remaining * 16 + (uint64_t)hexval(ch);
				r++;
			} else if (ch == '\r' && c->ndigits > 0) {
				c->state = CH_SIZE_LF;
				r++;
			} else
				/* Extensions (';'), whitespace, junk. */
				return fail(status, 400);
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				return fail(status, 400);
			r++;
			if (c->remaining > max_body - c->total)
				return fail(status, 413);
			c->state = c->remaining == 0 ? CH_TRAILER : CH_DATA;
			break;
		case CH_DATA: {
			size_t n = len - r;

			if (n > c->remaining)
				n = (size_t)c->remaining;
			memmove(buf + w, buf + r, n);
			w += n;
			r += n;
			c->remaining -= n;
			c->total += n;
			if (c->remaining == 0)
				c->state = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			if (ch != '\r')
				return fail(status, 400);
			r++;
			c->state = CH_DATA_LF;
			break;
		case CH_DATA_LF:
			if (ch != '\n')
				return fail(status, 400);
			r++;
			c->state = CH_SIZE;
			c->ndigits = 0;
			c->remaining = 0;
			break;
		case CH_TRAILER:
			/* Trailer fields are refused: only the empty line. */
			if (ch != '\r')
				return fail(status, 400);
			r++;
			c->state = CH_TRAILER_LF;
			break;
		case CH_TRAILER_LF:
			if (ch != '\n')
				return fail(status, 400);
			r++;
			rc = HTTP_OK;
			break;
		default:
			return fail(status, 400);
		}
	}
	*rpos = r;
	*wpos = w;
	return rc;
}

static const char *
moved(const char *p, const char *from, const char *to)
{
	/* As integers: from may already be freed (realloc). */
	return p == NULL ? NULL : to + ((uintptr_t)p - (uintptr_t)from);
}

void
http_request_move(struct http_request *req, const char *from, const char *to)
{
	size_t i;

	req->method_str = moved(req->method_str, from, to);
	req->target = moved(req->target, from, to);
	req->path = moved(req->path, from, to);
	req->query = moved(req->query, from, to);
	req->body = moved(req->body, from, to);
	for (i = 0; i < req->nheaders; i++) {
		req->headers[i].name = moved(req->headers[i].name, from, to);
		req->headers[i].value = moved(req->headers[i].value, from, to);
	}
}

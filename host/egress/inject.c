/*
 * Secrets injected at egress: the grant's target, the request head's
 * check and rewrite, the placeholder scanner (host/egress/inject.h).
 * Every byte here comes from a guest: bounded, checked, never trusted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "host/egress/inject.h"

const char *
egress_inject_strerror(int err)
{
	switch (err) {
	case EGRESS_INJECT_OK:
		return "ok";
	case EGRESS_INJECT_MALFORMED:
		return "not an HTTP/1.1 request";
	case EGRESS_INJECT_TOO_LARGE:
		return "request head too large";
	case EGRESS_INJECT_PLACEHOLDER:
		return "a placeholder where it may not be";
	case EGRESS_INJECT_HOST:
		return "Host is not the connection's name";
	case EGRESS_INJECT_VALUE:
		return "the secret's value cannot be a header value";
	case EGRESS_INJECT_ARG:
		return "bad argument";
	}
	return "unknown error";
}

static int
tchar(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

int
egress_grant_target_inject(const char *host, uint16_t port, int allow_http,
    int allow_private, const char *secret, const char *header, char *buf,
    size_t buflen)
{
	char base[EGRESS_GRANT_TARGET_MAX], h[EGRESS_INJECT_NAME_MAX];
	size_t i, sl, hl;
	int n;

	if (secret == NULL || header == NULL)
		return EGRESS_INJECT_ARG;
	sl = strnlen(secret, EGRESS_INJECT_NAME_MAX);
	hl = strnlen(header, EGRESS_INJECT_NAME_MAX);
	if (sl == 0 || sl >= EGRESS_INJECT_NAME_MAX || hl == 0 ||
	    hl >= EGRESS_INJECT_NAME_MAX ||
	    egress_grant_target(
	        host, port, allow_http, allow_private, base, sizeof(base)) != 0)
		return EGRESS_INJECT_ARG;
	for (i = 0; i < hl; i++) {
		if (!tchar((unsigned char)header[i]))
			return EGRESS_INJECT_ARG;
		h[i] = (char)((header[i] >= 'A' && header[i] <= 'Z')
		        ? header[i] - 'A' + 'a'
		        : header[i]);
	}
	h[hl] = '\0';
	for (i = 0; i < sl; i++)
		if (secret[i] == ' ')
			return EGRESS_INJECT_ARG;
	n = snprintf(buf, buflen, "%s inject %s as %s", base, secret, h);
	return n < 0 || (size_t)n >= buflen ? EGRESS_INJECT_ARG : 0;
}

int
egress_placeholder_make(
    const char *name, const uint8_t random[16], char *out, size_t outlen)
{
	char hex[33];
	size_t nl = strnlen(name, 64);
	int n;

	if (nl == 0 || nl > 63)
		return -1;
	sodium_bin2hex(hex, sizeof(hex), random, 16);
	n = snprintf(out, outlen, "%s%s-%s", EGRESS_INJECT_MARKER, name, hex);
	return n < 0 || (size_t)n >= outlen ? -1 : 0;
}

size_t
egress_inject_head_end(const uint8_t *buf, size_t len)
{
	size_t i;

	for (i = 3; i < len; i++)
		if (buf[i] == '\n' && buf[i - 1] == '\r' &&
		    buf[i - 2] == '\n' && buf[i - 3] == '\r')
			return i + 1;
	return 0;
}

static const uint8_t *
find(const uint8_t *h, size_t hl, const void *n, size_t nl)
{
	return nl == 0 ? NULL : memmem(h, hl, n, nl);
}

static int
has_marker(const uint8_t *p, size_t len)
{
	return find(p, len, EGRESS_INJECT_MARKER, EGRESS_INJECT_MARKER_LEN) !=
	    NULL;
}

/* An output buffer that grows, zeroed before it is given up (it holds
 * the value). */
struct obuf {
	uint8_t *p;
	size_t len, cap;
	int failed;
};

static void
put(struct obuf *o, const void *data, size_t len)
{
	uint8_t *np;
	size_t ncap;

	if (o->failed)
		return;
	if (o->len + len > o->cap) {
		ncap = (o->len + len) * 2 + 256;
		if ((np = malloc(ncap)) == NULL) {
			o->failed = 1;
			return;
		}
		if (o->p != NULL) {
			memcpy(np, o->p, o->len);
			sodium_memzero(o->p, o->cap);
			free(o->p);
		}
		o->p = np;
		o->cap = ncap;
	}
	memcpy(o->p + o->len, data, len);
	o->len += len;
}

static void
obuf_drop(struct obuf *o)
{
	if (o->p != NULL) {
		sodium_memzero(o->p, o->cap);
		free(o->p);
	}
	memset(o, 0, sizeof(*o));
}

/* A header name equal to s, case-insensitively. */
static int
name_is(const uint8_t *n, size_t nl, const char *s)
{
	return strlen(s) == nl && strncasecmp((const char *)n, s, nl) == 0;
}

/* Host's value is the connection's name, with its port optional. */
static int
host_ok(const struct egress_inject *in, const uint8_t *v, size_t vl)
{
	size_t nl = strlen(in->name);
	char port[8];
	int n;

	if (vl > 0 && v[vl - 1] == '.') /* one trailing dot */
		vl--;
	if (vl == nl)
		return strncasecmp((const char *)v, in->name, nl) == 0;
	if (vl < nl + 2 || v[nl] != ':' ||
	    strncasecmp((const char *)v, in->name, nl) != 0)
		return 0;
	n = snprintf(port, sizeof(port), "%u", (unsigned)in->port);
	return n > 0 && vl - nl - 1 == (size_t)n &&
	    memcmp(v + nl + 1, port, (size_t)n) == 0;
}

/*
 * The injected header's value: each placeholder becomes the value; a
 * marker that is not this placeholder refuses.
 */
static int
substitute(const struct egress_inject *in, const uint8_t *v, size_t vl,
    struct obuf *o, unsigned *replaced)
{
	size_t pl = in->placeholder != NULL ? strlen(in->placeholder) : 0;
	const uint8_t *hit;
	int can = pl > EGRESS_INJECT_MARKER_LEN && in->value != NULL &&
	    in->value_len > 0;

	while (vl > 0) {
		hit = can ? find(v, vl, in->placeholder, pl) : NULL;
		if (hit == NULL) {
			if (has_marker(v, vl))
				return EGRESS_INJECT_PLACEHOLDER;
			put(o, v, vl);
			return 0;
		}
		if (has_marker(v, (size_t)(hit - v)))
			return EGRESS_INJECT_PLACEHOLDER;
		put(o, v, (size_t)(hit - v));
		put(o, in->value, in->value_len);
		(*replaced)++;
		vl -= (size_t)(hit - v) + pl;
		v = hit + pl;
	}
	return 0;
}

static int
value_ok(const uint8_t *v, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (v[i] != '\t' && (v[i] < 0x20 || v[i] == 0x7f))
			return 0;
	return 1;
}

int
egress_inject_head(const struct egress_inject *in, const uint8_t *head,
    size_t len, uint8_t **out, size_t *outlen, unsigned *replaced,
    const char **why)
{
	static const char closing[] = "Connection: close\r\n\r\n";
	struct obuf o = { NULL, 0, 0, 0 };
	const uint8_t *p, *end, *eol, *colon, *v, *ve, *sp1, *sp2;
	unsigned nheaders = 0, nhost = 0;
	int rc = EGRESS_INJECT_MALFORMED, sub;

	*out = NULL;
	*outlen = 0;
	*replaced = 0;
	*why = egress_inject_strerror(EGRESS_INJECT_ARG);
	if (in == NULL || in->name == NULL || in->header == NULL ||
	    head == NULL)
		return EGRESS_INJECT_ARG;
	if (len > EGRESS_INJECT_HEAD_MAX) {
		*why = egress_inject_strerror(EGRESS_INJECT_TOO_LARGE);
		return EGRESS_INJECT_TOO_LARGE;
	}
	if (len < 4 || egress_inject_head_end(head, len) != len)
		goto out;
	if (in->value != NULL && !value_ok(in->value, in->value_len)) {
		rc = EGRESS_INJECT_VALUE;
		goto out;
	}
	end = head + len - 2; /* the last line's CRLF is the blank one */
	/* The request line: METHOD SP origin-form-or-* SP HTTP/1.x CRLF. */
	eol = find(head, (size_t)(end - head), "\r\n", 2);
	if (eol == NULL || eol == head)
		goto out;
	if (has_marker(head, (size_t)(eol - head))) {
		rc = EGRESS_INJECT_PLACEHOLDER;
		goto out;
	}
	for (sp1 = head; sp1 < eol && tchar(*sp1); sp1++)
		;
	if (sp1 == head || sp1 >= eol || *sp1 != ' ' || sp1 - head > 16)
		goto out;
	for (sp2 = sp1 + 1; sp2<eol && * sp2> 0x20 && *sp2 < 0x7f; sp2++)
		;
	if (sp2 == sp1 + 1 || sp2 >= eol || *sp2 != ' ' ||
	    !(sp1[1] == '/' || (sp2 == sp1 + 2 && sp1[1] == '*')) ||
	    eol - sp2 != 9 ||
	    (memcmp(sp2 + 1, "HTTP/1.1", 8) != 0 &&
	        memcmp(sp2 + 1, "HTTP/1.0", 8) != 0))
		goto out;
	put(&o, head, (size_t)(eol - head) + 2);
	for (p = eol + 2; p < end; p = eol + 2) {
		eol = find(p, (size_t)(end - p) + 2, "\r\n", 2);
		if (eol == NULL || eol == p)
			goto out;
		if (++nheaders > EGRESS_INJECT_HEADERS_MAX) {
			rc = EGRESS_INJECT_TOO_LARGE;
			goto out;
		}
		for (colon = p; colon < eol && tchar(*colon); colon++)
			;
		if (colon == p || colon >= eol || *colon != ':')
			goto out; /* no name, folding, space before ':' */
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		for (ve = eol; ve > v && (ve[-1] == ' ' || ve[-1] == '\t');
		     ve--)
			;
		if (!value_ok(v, (size_t)(ve - v)))
			goto out; /* a bare CR or LF, NUL, controls */
		if (name_is(p, (size_t)(colon - p), "connection") ||
		    name_is(p, (size_t)(colon - p), "keep-alive") ||
		    name_is(p, (size_t)(colon - p), "proxy-connection")) {
			if (has_marker(v, (size_t)(ve - v))) {
				rc = EGRESS_INJECT_PLACEHOLDER;
				goto out;
			}
			continue;
		}
		if (name_is(p, (size_t)(colon - p), "host")) {
			if (++nhost > 1 || !host_ok(in, v, (size_t)(ve - v))) {
				rc = EGRESS_INJECT_HOST;
				goto out;
			}
		}
		if (name_is(p, (size_t)(colon - p), in->header)) {
			put(&o, p, (size_t)(v - p));
			if ((sub = substitute(
			         in, v, (size_t)(ve - v), &o, replaced)) != 0) {
				rc = sub;
				goto out;
			}
			put(&o, "\r\n", 2);
			continue;
		}
		if (has_marker(p, (size_t)(eol - p))) {
			rc = EGRESS_INJECT_PLACEHOLDER;
			goto out;
		}
		put(&o, p, (size_t)(eol - p) + 2);
	}
	if (nhost != 1) {
		rc = EGRESS_INJECT_HOST;
		goto out;
	}
	put(&o, closing, sizeof(closing) - 1);
	if (o.failed) {
		rc = EGRESS_INJECT_ARG;
		goto out;
	}
	*out = o.p;
	*outlen = o.len;
	*why = "";
	return EGRESS_INJECT_OK;
out:
	obuf_drop(&o);
	*replaced = 0;
	*why = egress_inject_strerror(rc);
	return rc;
}

int
egress_inject_content_length(const uint8_t *head, size_t len, uint64_t *cl)
{
	const uint8_t *p, *eol, *colon, *v, *end;
	unsigned n = 0;
	uint64_t x = 0;

	if (len < 4 || egress_inject_head_end(head, len) != len)
		return 0;
	end = head + len - 2;
	if ((eol = find(head, (size_t)(end - head), "\r\n", 2)) == NULL)
		return 0;
	for (p = eol + 2; p < end; p = eol + 2) {
		if ((eol = find(p, (size_t)(end - p) + 2, "\r\n", 2)) == NULL)
			return 0;
		if ((colon = memchr(p, ':', (size_t)(eol - p))) == NULL)
			return 0;
		if (name_is(p, (size_t)(colon - p), "transfer-encoding"))
			return 0;
		if (!name_is(p, (size_t)(colon - p), "content-length"))
			continue;
		if (++n > 1)
			return 0;
		for (v = colon + 1; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		if (v == eol)
			return 0;
		for (x = 0; v < eol && *v >= '0' && *v <= '9'; v++) {
			if (x > UINT64_MAX / 10 - 10)
				return 0;
			x = x * 10 + (uint64_t)(*v - '0');
		}
		for (; v < eol && (*v == ' ' || *v == '\t'); v++)
			;
		if (v != eol)
			return 0;
	}
	if (n != 1)
		return 0;
	*cl = x;
	return 1;
}

void
egress_inject_method(const uint8_t *head, size_t len, char *out, size_t outlen)
{
	size_t i;

	for (i = 0; i < len && i + 1 < outlen && tchar(head[i]); i++)
		out[i] = (char)head[i];
	if (outlen > 0)
		out[i < outlen ? i : outlen - 1] = '\0';
}

int
egress_marker_scan(struct egress_marker_scan *s, const uint8_t *buf, size_t len)
{
	static const char m[] = EGRESS_INJECT_MARKER;
	size_t i;

	/* The marker has no proper prefix that is also its suffix, so a
	 * mismatch restarts at 0, or 1 if the byte begins it. */
	for (i = 0; i < len && !s->found; i++) {
		if ((char)buf[i] == m[s->matched])
			s->matched++;
		else
			s->matched = (char)buf[i] == m[0] ? 1 : 0;
		if (s->matched == EGRESS_INJECT_MARKER_LEN)
			s->found = 1;
	}
	return s->found;
}

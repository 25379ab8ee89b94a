/*
 * Where a port's link travels (docs/architecture.md, "Ports"): the
 * query parameter keep_link of the URL it was given as, then the cookie
 * keep_link that the first answer set. These read them out of a request
 * and write the request on without them, so that the guest's server
 * never sees a credential. Pure: text in, text out.
 *
 * Every byte comes from the client. A link is a PASETO token, whose
 * characters ([A-Za-z0-9_.-]) need no escaping in a URL or a cookie: a
 * value with any other byte is malformed, never decoded.
 */
#include <string.h>

#include "host/api/api_int.h"

static const char link_name[] = API_LINK_PARAM;
#define LINK_NAME_LEN (sizeof(link_name) - 1)

int
api_link_value_ok(const char *v, size_t n)
{
	if (n == 0 || n > API_TOKEN_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = v[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		        (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		        c == '.'))
			return 0;
	}
	return 1;
}

/* Is the parameter [p, pe) named keep_link (with or without a value)? */
static int
param_is_link(const char *p, const char *pe)
{
	const char *eq = memchr(p, '=', (size_t)(pe - p));
	size_t nl = (size_t)((eq != NULL ? eq : pe) - p);

	return nl == LINK_NAME_LEN && memcmp(p, link_name, nl) == 0;
}

int
api_link_query(const char *q, size_t qlen, const char **val, size_t *vlen)
{
	const char *end, *p = q;
	int found = 0;

	*val = NULL;
	*vlen = 0;
	if (q == NULL)
		return 0;
	end = q + qlen;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp != NULL ? amp : end;

		if (param_is_link(p, pe)) {
			const char *v = p + LINK_NAME_LEN;

			/* Twice is ambiguous: which one a cache or a proxy
			 * read is unknown. */
			if (found++ || v == pe || *v != '=' ||
			    !api_link_value_ok(v + 1, (size_t)(pe - v - 1)))
				return -1;
			*val = v + 1;
			*vlen = (size_t)(pe - v - 1);
		}
		p = pe + (amp != NULL);
	}
	return found;
}

void
api_link_query_strip(const char *q, size_t qlen, struct http_buf *b)
{
	const char *end, *p = q;
	int first = 1;

	if (q == NULL)
		return;
	end = q + qlen;
	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp != NULL ? amp : end;

		if (!param_is_link(p, pe) && pe > p) {
			if (!first)
				http_buf_puts(b, "&");
			http_buf_add(b, p, (size_t)(pe - p));
			first = 0;
		}
		p = pe + (amp != NULL);
	}
}

/*
 * One cookie of a Cookie header value at *pos: [name, name + nlen) and
 * [val, val + vlen), *pos moved past it. 0 at the end. Cookies are
 * separated by ';' and optional white space (RFC 6265 5.4); a pair
 * without '=' is a name with no value.
 */
static int
cookie_next(const char *v, size_t len, size_t *pos, const char **name,
    size_t *nlen, const char **val, size_t *vlen)
{
	size_t i = *pos, s, e;
	const char *eq;

	while (i < len && (v[i] == ' ' || v[i] == '\t' || v[i] == ';'))
		i++;
	if (i >= len) {
		*pos = len;
		return 0;
	}
	s = i;
	while (i < len && v[i] != ';')
		i++;
	e = i;
	while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
		e--;
	*pos = i;
	*name = v + s;
	if ((eq = memchr(v + s, '=', e - s)) == NULL) {
		*nlen = e - s;
		*val = v + e;
		*vlen = 0;
	} else {
		*nlen = (size_t)(eq - (v + s));
		*val = eq + 1;
		*vlen = (size_t)(v + e - (eq + 1));
	}
	while (*nlen > 0 &&
	    ((*name)[*nlen - 1] == ' ' || (*name)[*nlen - 1] == '\t'))
		(*nlen)--;
	return 1;
}

int
api_link_cookie(
    const char *v, size_t len, size_t *pos, const char **val, size_t *vlen)
{
	const char *name, *cv;
	size_t nlen, cvlen;

	while (cookie_next(v, len, pos, &name, &nlen, &cv, &cvlen))
		if (nlen == LINK_NAME_LEN &&
		    memcmp(name, link_name, nlen) == 0) {
			/* A quoted value (RFC 6265 allows DQUOTE around
			 * it): keep never sets one. */
			if (!api_link_value_ok(cv, cvlen))
				return -1;
			*val = cv;
			*vlen = cvlen;
			return 1;
		}
	*val = NULL;
	*vlen = 0;
	return 0;
}

int
api_link_cookie_strip(const char *v, size_t len, struct http_buf *b)
{
	const char *name, *cv;
	size_t nlen, cvlen, pos = 0;
	int n = 0;

	while (cookie_next(v, len, &pos, &name, &nlen, &cv, &cvlen)) {
		if (nlen == LINK_NAME_LEN && memcmp(name, link_name, nlen) == 0)
			continue;
		if (n++ > 0)
			http_buf_puts(b, "; ");
		/* name, then '=' and the value when it had one */
		http_buf_add(b, name, (size_t)(cv + cvlen - name));
	}
	return n;
}

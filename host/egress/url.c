/*
 * A strict URL parser for egress. It accepts a deliberately small subset
 * of RFC 3986 http(s) URLs so that what we check is exactly what libcurl
 * connects to: we hand curl our canonical re-serialisation, never the
 * caller's string. Anything a browser would "fix up" (backslashes, spaces,
 * non-ASCII, odd numeric hosts like 0x7f.1 or 2130706433) is refused.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include "host/egress/egress.h"

static int
is_alpha(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static int
is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static int
is_hex(int c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int
lower(int c)
{
	return (c >= 'A' && c <= 'Z') ? c + ('a' - 'A') : c;
}

/*
 * RFC 3986 pchar plus '/' and '?', i.e. what may appear in path and query.
 * '%' must start a valid escape (checked by the caller).
 */
static int
is_target_char(int c)
{
	if (is_alpha(c) || is_digit(c))
		return 1;
	return strchr("-._~!$&'()*+,;=:@/?%", c) != NULL && c != '\0';
}

/*
 * A host name: labels of [a-z0-9_-], 1..63 bytes, joined by dots, at most
 * EGRESS_HOST_MAX bytes. Labels may not start or end with '-'. '_' is
 * allowed because real service names use it. Returns 1 if valid.
 */
static int
valid_hostname(const char *h, size_t n)
{
	size_t i, lab = 0;

	if (n == 0 || n > EGRESS_HOST_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		int c = (unsigned char)h[i];

		if (c == '.') {
			if (lab == 0 || h[i - 1] == '-')
				return 0;
			lab = 0;
			continue;
		}
		if (!(is_alpha(c) || is_digit(c) || c == '-' || c == '_'))
			return 0;
		if (c == '-' && lab == 0)
			return 0;
		if (++lab > 63)
			return 0;
	}
	return lab != 0 && h[n - 1] != '-';
}

/*
 * WHATWG and getaddrinfo treat a host whose last label is numeric (or
 * 0x-prefixed) as an IPv4 address in any of several legacy spellings.
 * We allow only canonical dotted-quad for those; everything else of that
 * shape is refused so no spelling can smuggle 127.0.0.1 past a reader.
 */
static int
last_label_numeric(const char *h, size_t n)
{
	size_t i = n;

	while (i > 0 && h[i - 1] != '.')
		i--;
	if (i == n)
		return 0;
	if (n - i >= 2 && h[i] == '0' && (h[i + 1] == 'x' || h[i + 1] == 'X'))
		return 1;
	for (; i < n; i++)
		if (!is_digit((unsigned char)h[i]))
			return 0;
	return 1;
}

static int
canonical_ipv4(const char *h, size_t n)
{
	char buf[INET_ADDRSTRLEN], back[INET_ADDRSTRLEN];
	struct in_addr a;

	if (n >= sizeof(buf))
		return 0;
	memcpy(buf, h, n);
	buf[n] = '\0';
	if (inet_pton(AF_INET, buf, &a) != 1)
		return 0;
	/* inet_pton accepts no leading zeros in glibc, but be explicit. */
	if (inet_ntop(AF_INET, &a, back, sizeof(back)) == NULL)
		return 0;
	return strcmp(buf, back) == 0;
}

static int
parse_port(const char *p, size_t n, uint16_t *port)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return EGRESS_E_PORT;
	for (i = 0; i < n; i++) {
		if (!is_digit((unsigned char)p[i]))
			return EGRESS_E_PORT;
		v = v * 10 + (unsigned long)(p[i] - '0');
	}
	if (v == 0 || v > 65535)
		return EGRESS_E_PORT;
	*port = (uint16_t)v;
	return 0;
}

static int
parse_authority(const char *a, size_t n, struct egress_url *out)
{
	const char *port = NULL;
	size_t hn, pn = 0, i;
	char tmp[EGRESS_HOST_MAX + 2];
	struct in6_addr a6;
	int rc;

	if (memchr(a, '@', n) != NULL)
		return EGRESS_E_USERINFO;
	if (n == 0)
		return EGRESS_E_HOST;
	if (a[0] == '[') {
		const char *close = memchr(a, ']', n);

		if (close == NULL)
			return EGRESS_E_HOST;
		hn = (size_t)(close - a) - 1;
		if (hn == 0 || hn >= INET6_ADDRSTRLEN)
			return EGRESS_E_HOST;
		/* No zone ids, no IPvFuture: '%' and 'v' fail inet_pton. */
		memcpy(tmp, a + 1, hn);
		tmp[hn] = '\0';
		if (inet_pton(AF_INET6, tmp, &a6) != 1)
			return EGRESS_E_HOST;
		if (inet_ntop(AF_INET6, &a6, out->host, sizeof(out->host)) ==
		    NULL)
			return EGRESS_E_HOST;
		out->kind = EGRESS_HOST_IPV6;
		i = (size_t)(close - a) + 1;
		if (i < n) {
			if (a[i] != ':')
				return EGRESS_E_HOST;
			port = a + i + 1;
			pn = n - i - 1;
		}
	} else {
		const char *colon = memchr(a, ':', n);

		hn = colon ? (size_t)(colon - a) : n;
		if (colon != NULL) {
			port = colon + 1;
			pn = n - hn - 1;
		}
		/* One trailing dot names the same host; drop it. */
		if (hn > 1 && a[hn - 1] == '.')
			hn--;
		if (!valid_hostname(a, hn))
			return EGRESS_E_HOST;
		for (i = 0; i < hn; i++)
			out->host[i] = (char)lower((unsigned char)a[i]);
		out->host[hn] = '\0';
		out->kind = EGRESS_HOST_NAME;
		if (last_label_numeric(out->host, hn)) {
			if (!canonical_ipv4(out->host, hn))
				return EGRESS_E_HOST;
			out->kind = EGRESS_HOST_IPV4;
		}
	}
	if (port != NULL) {
		if ((rc = parse_port(port, pn, &out->port)) != 0)
			return rc;
	} else
		out->port = out->scheme == EGRESS_SCHEME_HTTPS ? 443 : 80;
	return 0;
}

int
egress_url_parse(const char *s, size_t len, struct egress_url *out)
{
	size_t i, a0, a1, t1;
	int rc;

	memset(out, 0, sizeof(*out));
	if (s == NULL || len == 0 || len > EGRESS_URL_MAX)
		return EGRESS_E_URL;
	/* Printable ASCII only: no spaces, controls, NUL, DEL or UTF-8. */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c <= 0x20 || c >= 0x7f || c == '\\')
			return EGRESS_E_URL;
	}
	for (i = 0; i < len && s[i] != ':'; i++)
		if (!(is_alpha((unsigned char)s[i]) ||
		        (i > 0 &&
		            (is_digit((unsigned char)s[i]) || s[i] == '+' ||
		                s[i] == '-' || s[i] == '.'))))
			return EGRESS_E_URL;
	if (i == 0 || i == len)
		return EGRESS_E_URL;
	if (i == 5 && strncasecmp(s, "https", 5) == 0)
		out->scheme = EGRESS_SCHEME_HTTPS;
	else if (i == 4 && strncasecmp(s, "http", 4) == 0)
		out->scheme = EGRESS_SCHEME_HTTP;
	else
		return EGRESS_E_SCHEME;
	if (len - i < 3 || s[i + 1] != '/' || s[i + 2] != '/')
		return EGRESS_E_URL;
	a0 = i + 3;
	for (a1 = a0; a1 < len; a1++)
		if (s[a1] == '/' || s[a1] == '?' || s[a1] == '#')
			break;
	if ((rc = parse_authority(s + a0, a1 - a0, out)) != 0)
		return rc;
	/* The fragment never goes on the wire. */
	for (t1 = a1; t1 < len && s[t1] != '#'; t1++)
		;
	i = 0;
	if (a1 == t1 || s[a1] == '?')
		out->target[i++] = '/';
	for (size_t j = a1; j < t1; j++) {
		int c = (unsigned char)s[j];

		if (!is_target_char(c))
			return EGRESS_E_URL;
		if (c == '%' &&
		    (j + 2 >= t1 || !is_hex((unsigned char)s[j + 1]) ||
		        !is_hex((unsigned char)s[j + 2])))
			return EGRESS_E_URL;
		if (i >= EGRESS_URL_MAX)
			return EGRESS_E_URL;
		out->target[i++] = (char)c;
	}
	out->target[i] = '\0';
	/* The URL as it goes on the wire (a '/' may have been added before
	 * a query) is held to the same limit as the text. */
	if (a1 + i > EGRESS_URL_MAX)
		return EGRESS_E_URL;
	return 0;
}

int
egress_url_format(const struct egress_url *u, char *buf, size_t buflen)
{
	const char *scheme =
	    u->scheme == EGRESS_SCHEME_HTTPS ? "https" : "http";
	uint16_t def = u->scheme == EGRESS_SCHEME_HTTPS ? 443 : 80;
	const char *lb = u->kind == EGRESS_HOST_IPV6 ? "[" : "";
	const char *rb = u->kind == EGRESS_HOST_IPV6 ? "]" : "";
	char port[8] = "";
	int n;

	if (u->port != def)
		snprintf(port, sizeof(port), ":%u", (unsigned)u->port);
	n = snprintf(buf, buflen, "%s://%s%s%s%s%s", scheme, lb, u->host, rb,
	    port, u->target);
	if (n < 0 || (size_t)n >= buflen)
		return EGRESS_E_URL;
	return 0;
}

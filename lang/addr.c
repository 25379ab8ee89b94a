/*
 * Address literals and ranges in egress endpoints ("10.0.0.5",
 * "10.1.0.0/16", "fd00::/8"): parsed once by the checker, for its
 * diagnostics, and by both evaluators when they match a request's
 * address target (policy_egress_match). A text that is neither is a
 * host name, and not this file's business.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lang/lang.h"

static void __attribute__((format(printf, 3, 4)))
say(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (why == NULL || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

int
lang_addr_range_parse(const char *s, size_t n, struct lang_addr_range *r,
    char *why, size_t whylen)
{
	char a[INET6_ADDRSTRLEN + 1];
	const char *slash = memchr(s, '/', n);
	size_t an = slash != NULL ? (size_t)(slash - s) : n, i;
	unsigned bits = 0, max;

	memset(r, 0, sizeof(*r));
	if (why != NULL && whylen > 0)
		why[0] = '\0';
	/* Not an address form: a name (no '/', no ':', not a dotted quad
	 * that inet_pton reads). */
	if (an >= sizeof(a)) {
		if (slash == NULL && memchr(s, ':', n) == NULL)
			return 0;
		say(why, whylen, "%s is not an IPv4 or IPv6 address",
		    slash != NULL ? "the text before '/'" : "it");
		return -1;
	}
	memcpy(a, s, an);
	a[an] = '\0';
	if (inet_pton(AF_INET, a, r->addr) == 1) {
		r->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, a, r->addr) == 1) {
		r->family = AF_INET6;
		max = 128;
		if (IN6_IS_ADDR_V4MAPPED((struct in6_addr *)r->addr)) {
			say(why, whylen,
			    "'%s' is an IPv4 address in IPv6 form: write it "
			    "as IPv4",
			    a);
			return -1;
		}
	} else if (slash == NULL && memchr(s, ':', n) == NULL)
		return 0;
	else {
		say(why, whylen, "'%s' is not an IPv4 or IPv6 address", a);
		return -1;
	}
	r->bits = max;
	if (slash == NULL)
		return 1;
	/* The prefix length: decimal digits, no sign, no leading zero. */
	n -= an + 1;
	s = slash + 1;
	if (n == 0 || n > 3 || (n > 1 && s[0] == '0'))
		goto badlen;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			goto badlen;
		bits = bits * 10 + (unsigned)(s[i] - '0');
	}
	if (bits > max)
		goto badlen;
	r->bits = bits;
	/* No bit set past the prefix: "10.1.2.0/16" is a typo or a
	 * misunderstanding, never what a reviewer should have to guess. */
	for (i = 0; i < max / 8; i++) {
		unsigned keep = bits >= (i + 1) * 8 ? 8
		    : bits > i * 8                  ? bits - (unsigned)i * 8
		                                    : 0;
		uint8_t mask = keep == 8 ? 0xff : (uint8_t)(0xff00u >> keep);

		if ((r->addr[i] & ~mask) != 0) {
			say(why, whylen,
			    "'%s' has bits set past its prefix length %u", a,
			    bits);
			return -1;
		}
	}
	return 1;
badlen:
	say(why, whylen,
	    "the prefix length after '/' must be a number from 0 to %u", max);
	return -1;
}

int
lang_addr_range_has(
    const struct lang_addr_range *r, int family, const uint8_t *addr)
{
	unsigned full = r->bits / 8, rest = r->bits % 8;

	if (family != r->family)
		return 0;
	if (memcmp(r->addr, addr, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	return ((r->addr[full] ^ addr[full]) & (uint8_t)(0xff00u >> rest)) == 0;
}

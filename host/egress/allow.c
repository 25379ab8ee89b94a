/*
 * The allowlist matcher. Host names are compared as whole labels: a
 * wildcard "*.github.com" is the suffix ".github.com" anchored at the end
 * of the name, so "evilapi.github.com.attacker" and "evilgithub.com" do
 * not match it, and neither does "github.com" itself (list it as well if
 * it is wanted).
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "host/egress/egress.h"

static size_t
rule_len(const struct egress_rule *r)
{
	const char *nul = memchr(r->host, '\0', sizeof(r->host));

	return nul ? (size_t)(nul - r->host) : sizeof(r->host);
}

int
egress_rule_check(const struct egress_rule *r)
{
	struct egress_url u;
	char url[EGRESS_HOST_MAX + 32];
	const char *h = r->host;
	size_t n = rule_len(r);

	if (n == sizeof(r->host) || n == 0)
		return EGRESS_E_RULE;
	if (n >= 2 && h[0] == '*' && h[1] == '.') {
		h += 2;
		n -= 2;
		/* "*.com" would be legal but "*." or "*.*.x" are not. */
		if (n == 0 || memchr(h, '*', n) != NULL)
			return EGRESS_E_RULE;
	}
	for (size_t i = 0; i < n; i++) {
		char c = h[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		        c == '_' || c == ':'))
			return EGRESS_E_RULE;
	}
	/* Reuse the URL parser so rules and URLs agree on what a host is. */
	if (memchr(h, ':', n) != NULL) {
		struct in6_addr a6;
		char tmp[EGRESS_HOST_MAX + 1];

		if (h != r->host || n >= sizeof(tmp))
			return EGRESS_E_RULE;
		memcpy(tmp, h, n);
		tmp[n] = '\0';
		return inet_pton(AF_INET6, tmp, &a6) == 1 ? 0 : EGRESS_E_RULE;
	}
	memcpy(url, "https://", 8);
	memcpy(url + 8, h, n);
	if (egress_url_parse(url, 8 + n, &u) != 0)
		return EGRESS_E_RULE;
	if (u.kind != EGRESS_HOST_NAME && h != r->host)
		return EGRESS_E_RULE; /* "*.1.2.3.4" */
	return 0;
}

/* Case-insensitive, one trailing dot on the rule side ignored. */
static int
host_match(const struct egress_rule *r, const struct egress_url *u)
{
	const char *p = r->host;
	size_t pn = rule_len(r), hn = strlen(u->host);

	if (pn > 1 && p[pn - 1] == '.')
		pn--;
	if (u->kind == EGRESS_HOST_IPV6) {
		struct in6_addr a, b;
		char tmp[EGRESS_HOST_MAX + 1];

		if (pn >= sizeof(tmp) || memchr(p, ':', pn) == NULL)
			return 0;
		memcpy(tmp, p, pn);
		tmp[pn] = '\0';
		if (inet_pton(AF_INET6, tmp, &a) != 1 ||
		    inet_pton(AF_INET6, u->host, &b) != 1)
			return 0;
		return memcmp(&a, &b, sizeof(a)) == 0;
	}
	if (pn >= 2 && p[0] == '*' && p[1] == '.') {
		/* Suffix including its leading dot: ".github.com". */
		p++;
		pn--;
		if (u->kind != EGRESS_HOST_NAME || hn <= pn)
			return 0;
		return strncasecmp(u->host + hn - pn, p, pn) == 0;
	}
	return pn == hn && strncasecmp(u->host, p, pn) == 0;
}

int
egress_allow_match(const struct egress_rule *rules, size_t nrules,
    const struct egress_url *u, size_t *which)
{
	int best = EGRESS_E_NOT_ALLOWED;
	size_t i;

	for (i = 0; i < nrules; i++) {
		const struct egress_rule *r = &rules[i];

		if (egress_rule_check(r) != 0 || !host_match(r, u))
			continue;
		if (r->port != 0 && r->port != u->port) {
			if (best == EGRESS_E_NOT_ALLOWED)
				best = EGRESS_E_PORT_DENIED;
			continue;
		}
		if (u->scheme == EGRESS_SCHEME_HTTP && !r->allow_http) {
			best = EGRESS_E_HTTP_DENIED;
			continue;
		}
		*which = i;
		return 0;
	}
	return best;
}

int
egress_grant_target(const char *host, uint16_t port, int allow_http,
    int allow_private, char *buf, size_t buflen)
{
	return egress_grant_target_proto(
	    host, port, 0, allow_http, allow_private, buf, buflen);
}

int
egress_grant_target_proto(const char *host, uint16_t port, int udp,
    int allow_http, int allow_private, char *buf, size_t buflen)
{
	size_t hl = strnlen(host, EGRESS_HOST_MAX + 1);
	int n;

	if (hl == 0 || hl > EGRESS_HOST_MAX)
		return EGRESS_E_HOST;
	n = snprintf(buf, buflen, "%s:%u%s%s%s", host, (unsigned)port,
	    udp ? "/udp" : "", allow_http ? " http" : "",
	    allow_private ? " private" : "");
	return n < 0 || (size_t)n >= buflen ? EGRESS_E_HOST : 0;
}

/*
 * Fuzz the egress URL parser, the allowlist matcher and the address
 * classifier. Input: "RULE\nURL". Properties: nothing crashes; a parsed
 * URL formats to text that parses to the same URL; a match by a wildcard
 * rule is a true label suffix; an IPv4-mapped address classifies as the
 * IPv4 address it maps.
 */
#include <sys/socket.h>

#include <netinet/in.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_classifier(const uint8_t *data, size_t size)
{
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;
	uint8_t b[16] = { 0 };
	int c4, c6;

	memcpy(b, data, size < 16 ? size : 16);
	memset(&s4, 0, sizeof(s4));
	memset(&s6, 0, sizeof(s6));
	s4.sin_family = AF_INET;
	memcpy(&s4.sin_addr, b, 4);
	s6.sin6_family = AF_INET6;
	memcpy(&s6.sin6_addr, b, 16);
	(void)egress_addr_classify((struct sockaddr *)&s6, sizeof(s6));
	c4 = egress_addr_classify((struct sockaddr *)&s4, sizeof(s4));
	memset(&s6.sin6_addr, 0, 10);
	s6.sin6_addr.s6_addr[10] = 0xff;
	s6.sin6_addr.s6_addr[11] = 0xff;
	memcpy(&s6.sin6_addr.s6_addr[12], b, 4);
	c6 = egress_addr_classify((struct sockaddr *)&s6, sizeof(s6));
	if (c4 != c6)
		abort();
	if (egress_addr_class_name(c4) == NULL)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	const char *url = (const char *)data;
	size_t url_len = size, which, rl, hl;
	struct egress_rule rules[2];
	struct egress_url u, v;
	char buf[EGRESS_URL_MAX + 64];

	check_classifier(data, size);
	memset(rules, 0, sizeof(rules));
	strlcpy(rules[1].host, "*.github.com", sizeof(rules[1].host));
	rules[1].port = 443;
	if (nl != NULL) {
		rl = (size_t)(nl - data);
		if (rl >= sizeof(rules[0].host))
			rl = sizeof(rules[0].host) - 1;
		memcpy(rules[0].host, data, rl);
		rules[0].allow_http = 1;
		url = (const char *)nl + 1;
		url_len = size - (size_t)(nl - data) - 1;
	}
	(void)egress_rule_check(&rules[0]);
	if (egress_url_parse(url, url_len, &u) != 0)
		return 0;
	if (egress_url_format(&u, buf, sizeof(buf)) == 0) {
		if (egress_url_parse(buf, strlen(buf), &v) != 0 ||
		    v.scheme != u.scheme || v.kind != u.kind ||
		    v.port != u.port || strcmp(v.host, u.host) != 0 ||
		    strcmp(v.target, u.target) != 0)
			abort();
	}
	if (egress_allow_match(rules, 2, &u, &which) == 0) {
		const char *p = rules[which].host;

		if (which > 1)
			abort();
		hl = strlen(u.host);
		rl = strlen(p);
		if (rl > 1 && p[rl - 1] == '.')
			rl--;
		if (rl > 2 && p[0] == '*' && p[1] == '.') {
			/* A true suffix at a label boundary, never the apex. */
			if (hl <= rl - 1 ||
			    strncasecmp(
			        u.host + hl - (rl - 1), p + 1, rl - 1) != 0)
				abort();
		} else if (u.kind != EGRESS_HOST_IPV6 &&
		    (hl != rl || strncasecmp(u.host, p, rl) != 0))
			abort();
	}
	return 0;
}

/* Unit tests for host/egress: URL parser, allowlist matcher, classifier. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "host/egress/egress.h"
#include "lib/util.h"

struct url_case {
	const char *in;
	int rc;
	const char *host; /* expected host when rc == 0 */
	unsigned port;
	const char *target;
	const char *canon; /* egress_url_format result */
};

static const struct url_case url_cases[] = {
	{ "https://api.github.com/repos?x=1", 0, "api.github.com", 443,
	    "/repos?x=1", "https://api.github.com/repos?x=1" },
	{ "HTTPS://API.GitHub.COM", 0, "api.github.com", 443, "/",
	    "https://api.github.com/" },
	{ "https://api.github.com.:443/", 0, "api.github.com", 443, "/",
	    "https://api.github.com/" },
	{ "http://example.com:8080/a/b", 0, "example.com", 8080, "/a/b",
	    "http://example.com:8080/a/b" },
	{ "https://example.com?q", 0, "example.com", 443, "/?q",
	    "https://example.com/?q" },
	{ "https://example.com/p#frag", 0, "example.com", 443, "/p",
	    "https://example.com/p" },
	{ "https://example.com#frag", 0, "example.com", 443, "/",
	    "https://example.com/" },
	{ "https://127.0.0.1:8443/x", 0, "127.0.0.1", 8443, "/x",
	    "https://127.0.0.1:8443/x" },
	{ "https://[::1]:8443/", 0, "::1", 8443, "/", "https://[::1]:8443/" },
	{ "https://[0:0:0:0:0:ffff:7f00:1]/", 0, "::ffff:127.0.0.1", 443, "/",
	    "https://[::ffff:127.0.0.1]/" },
	{ "https://a_b.example.com/%2e%2E", 0, "a_b.example.com", 443,
	    "/%2e%2E", "https://a_b.example.com/%2e%2E" },
	/* refused */
	{ "", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "ftp://example.com/", EGRESS_E_SCHEME, NULL, 0, NULL, NULL },
	{ "file:///etc/passwd", EGRESS_E_SCHEME, NULL, 0, NULL, NULL },
	{ "gopher://127.0.0.1:25/", EGRESS_E_SCHEME, NULL, 0, NULL, NULL },
	{ "javascript:alert(1)", EGRESS_E_SCHEME, NULL, 0, NULL, NULL },
	{ "https:example.com", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https:/example.com", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "example.com", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "://example.com", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://user:pw@example.com/", EGRESS_E_USERINFO, NULL, 0, NULL,
	    NULL },
	{ "https://example.com@evil.com/", EGRESS_E_USERINFO, NULL, 0, NULL,
	    NULL },
	{ "https://@evil.com/", EGRESS_E_USERINFO, NULL, 0, NULL, NULL },
	{ "https://example.com /", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://example.com\\@evil.com/", EGRESS_E_URL, NULL, 0, NULL,
	    NULL },
	{ "https://ex\tample.com/", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://exämple.com/", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://xn--exmple-cua.com/", 0, "xn--exmple-cua.com", 443, "/",
	    "https://xn--exmple-cua.com/" },
	{ "https:///path", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://:443/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://a..b/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://.a.b/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://a.b../", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://-a.b/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://a-.b/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://a.b:/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:0/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:65536/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:123456/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:+443/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:44x/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	{ "https://a.b:443:443/", EGRESS_E_PORT, NULL, 0, NULL, NULL },
	/* legacy numeric spellings of 127.0.0.1 */
	{ "https://2130706433/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://0x7f000001/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://0177.0.0.1/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://127.1/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://127.0.0.01/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://0x7f.0.0.1/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://1.2.3.0x4/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://256.0.0.1/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://example.123/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[::1%25eth0]/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[v1.x]/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[::1/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[::1]x/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[]/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://[127.0.0.1]/", EGRESS_E_HOST, NULL, 0, NULL, NULL },
	{ "https://a.b/%", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://a.b/%4", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://a.b/%zz", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://a.b/<script>", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://a.b/\"", EGRESS_E_URL, NULL, 0, NULL, NULL },
	{ "https://a.b/{x}", EGRESS_E_URL, NULL, 0, NULL, NULL },
};

static void
test_url_table(void **state)
{
	struct egress_url u;
	char canon[EGRESS_URL_MAX + 64];
	size_t i;

	(void)state;
	for (i = 0; i < nitems(url_cases); i++) {
		const struct url_case *c = &url_cases[i];
		int rc = egress_url_parse(c->in, strlen(c->in), &u);

		if (rc != c->rc)
			fail_msg("%s: got %d want %d", c->in, rc, c->rc);
		if (rc != 0)
			continue;
		assert_string_equal(u.host, c->host);
		assert_int_equal(u.port, c->port);
		assert_string_equal(u.target, c->target);
		assert_int_equal(
		    egress_url_format(&u, canon, sizeof(canon)), 0);
		assert_string_equal(canon, c->canon);
	}
}

static void
test_url_limits(void **state)
{
	static char big[EGRESS_URL_MAX + 16];
	struct egress_url u;
	char host[300];
	size_t n;

	(void)state;
	/* An embedded NUL stops nothing: it is refused. */
	assert_int_equal(
	    egress_url_parse("https://a.b\0.evil/", 18, &u), EGRESS_E_URL);
	assert_int_equal(egress_url_parse(NULL, 0, &u), EGRESS_E_URL);
	memcpy(big, "https://a.b/", 12);
	memset(big + 12, 'a', sizeof(big) - 12);
	assert_int_equal(egress_url_parse(big, EGRESS_URL_MAX, &u), 0);
	assert_int_equal(
	    egress_url_parse(big, EGRESS_URL_MAX + 1, &u), EGRESS_E_URL);
	/* A query right after the host gains a '/' on the wire: at the
	 * limit, that is one byte too many, and refused. */
	memcpy(big, "https://a.b?", 12);
	assert_int_equal(
	    egress_url_parse(big, EGRESS_URL_MAX, &u), EGRESS_E_URL);
	assert_int_equal(egress_url_parse(big, EGRESS_URL_MAX - 1, &u), 0);
	assert_int_equal(strlen(u.target), EGRESS_URL_MAX - 11 + 1 - 1);
	/* A 64-byte label is too long, 63 is fine. */
	n = (size_t)snprintf(host, sizeof(host), "https://%063d.com/", 0);
	assert_int_equal(egress_url_parse(host, n, &u), 0);
	n = (size_t)snprintf(host, sizeof(host), "https://%064d.com/", 0);
	assert_int_equal(egress_url_parse(host, n, &u), EGRESS_E_HOST);
}

static struct egress_rule
rule(const char *h, uint16_t port, int http, int priv)
{
	struct egress_rule r;

	memset(&r, 0, sizeof(r));
	strlcpy(r.host, h, sizeof(r.host));
	r.port = port;
	r.allow_http = (uint8_t)http;
	r.allow_private = (uint8_t)priv;
	return r;
}

struct match_case {
	const char *url;
	int rc;
	int which;
};

static void
test_allow_table(void **state)
{
	struct egress_rule rules[6];
	static const struct match_case cases[] = {
		{ "https://api.github.com/", 0, 0 },
		{ "https://API.GITHUB.COM./x", 0, 0 },
		{ "https://raw.github.com/", 0, 0 },
		{ "https://a.b.github.com/", 0, 0 },
		{ "https://github.com/", EGRESS_E_NOT_ALLOWED, 0 },
		{ "https://evilapi.github.com.attacker/", EGRESS_E_NOT_ALLOWED,
		    0 },
		{ "https://evilgithub.com/", EGRESS_E_NOT_ALLOWED, 0 },
		{ "https://github.com.evil.com/", EGRESS_E_NOT_ALLOWED, 0 },
		{ "https://xgithub.com/", EGRESS_E_NOT_ALLOWED, 0 },
		{ "https://api.github.com:8443/", EGRESS_E_PORT_DENIED, 0 },
		{ "http://api.github.com:443/", EGRESS_E_HTTP_DENIED, 0 },
		{ "http://api.github.com/", EGRESS_E_PORT_DENIED, 0 },
		{ "https://registry.npmjs.org/", 0, 1 },
		{ "https://npmjs.org/", 0, 2 },
		{ "http://npmjs.org/", EGRESS_E_HTTP_DENIED, 0 },
		{ "http://plain.example:8080/", 0, 3 },
		{ "https://plain.example:1/", 0, 3 },
		{ "https://127.0.0.1:8443/", 0, 4 },
		{ "https://127.0.0.1:8444/", EGRESS_E_PORT_DENIED, 0 },
		{ "https://[::1]/", 0, 5 },
		{ "https://[0::1]/", 0, 5 },
		{ "https://[::2]/", EGRESS_E_NOT_ALLOWED, 0 },
		{ "https://1.github.com/", 0, 0 },
		{ "https://evil.com/", EGRESS_E_NOT_ALLOWED, 0 },
	};
	struct egress_url u;
	size_t i, which;

	(void)state;
	rules[0] = rule("*.github.com", 443, 0, 0);
	rules[1] = rule("*.NPMJS.org.", 443, 0, 0);
	rules[2] = rule("npmjs.org", 0, 0, 0);
	rules[3] = rule("plain.example", 0, 1, 0);
	rules[4] = rule("127.0.0.1", 8443, 0, 1);
	rules[5] = rule("::1", 443, 0, 1);
	for (i = 0; i < nitems(rules); i++)
		assert_int_equal(egress_rule_check(&rules[i]), 0);
	for (i = 0; i < nitems(cases); i++) {
		int rc;

		assert_int_equal(
		    egress_url_parse(cases[i].url, strlen(cases[i].url), &u),
		    0);
		which = 99;
		rc = egress_allow_match(rules, nitems(rules), &u, &which);
		if (rc != cases[i].rc)
			fail_msg("%s: got %s want %s", cases[i].url,
			    egress_strerror(rc), egress_strerror(cases[i].rc));
		if (rc == 0)
			assert_int_equal(which, (size_t)cases[i].which);
	}
	/* No rules: nothing is allowed. */
	assert_int_equal(egress_url_parse("https://a.b/", 12, &u), 0);
	assert_int_equal(
	    egress_allow_match(NULL, 0, &u, &which), EGRESS_E_NOT_ALLOWED);
}

static void
test_rule_check(void **state)
{
	static const char *const bad[] = { "", "*", "*.", "**.a", "*.*.a",
		"a.*.b", "a b", "https://a", "a/b", "a:b", "*.1.2.3.4",
		"0x7f.1", "user@a", "[::1]", "::1%eth0", "-a.b", "a..b",
		"ä.com" };
	static const char *const good[] = { "a", "a.b", "*.a", "*.a.b.",
		"1.2.3.4", "::ffff:1.2.3.4", "fd00:ec2::254", "A-B.c" };
	struct egress_rule r;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(bad); i++) {
		r = rule(bad[i], 443, 0, 0);
		if (egress_rule_check(&r) != EGRESS_E_RULE)
			fail_msg("rule %s accepted", bad[i]);
	}
	for (i = 0; i < nitems(good); i++) {
		r = rule(good[i], 443, 0, 0);
		if (egress_rule_check(&r) != 0)
			fail_msg("rule %s refused", good[i]);
	}
	/* Not NUL-terminated within the field. */
	memset(r.host, 'a', sizeof(r.host));
	assert_int_equal(egress_rule_check(&r), EGRESS_E_RULE);
}

struct addr_case {
	const char *addr;
	int cls;
};

static const struct addr_case addr_cases[] = {
	{ "8.8.8.8", EGRESS_ADDR_PUBLIC },
	{ "1.1.1.1", EGRESS_ADDR_PUBLIC },
	{ "0.0.0.0", EGRESS_ADDR_UNSPECIFIED },
	{ "0.1.2.3", EGRESS_ADDR_UNSPECIFIED },
	{ "127.0.0.1", EGRESS_ADDR_LOOPBACK },
	{ "127.255.255.254", EGRESS_ADDR_LOOPBACK },
	{ "10.0.0.1", EGRESS_ADDR_PRIVATE },
	{ "172.16.0.1", EGRESS_ADDR_PRIVATE },
	{ "172.31.255.255", EGRESS_ADDR_PRIVATE },
	{ "172.32.0.1", EGRESS_ADDR_PUBLIC },
	{ "172.15.255.255", EGRESS_ADDR_PUBLIC },
	{ "192.168.1.1", EGRESS_ADDR_PRIVATE },
	{ "169.254.1.1", EGRESS_ADDR_LINKLOCAL },
	{ "169.254.169.254", EGRESS_ADDR_METADATA },
	{ "168.63.129.16", EGRESS_ADDR_METADATA },
	{ "100.100.100.200", EGRESS_ADDR_METADATA },
	{ "100.64.0.1", EGRESS_ADDR_CGNAT },
	{ "100.127.255.255", EGRESS_ADDR_CGNAT },
	{ "100.128.0.1", EGRESS_ADDR_PUBLIC },
	{ "224.0.0.1", EGRESS_ADDR_MULTICAST },
	{ "239.255.255.250", EGRESS_ADDR_MULTICAST },
	{ "255.255.255.255", EGRESS_ADDR_BROADCAST },
	{ "240.0.0.1", EGRESS_ADDR_RESERVED },
	{ "192.0.2.1", EGRESS_ADDR_DOCUMENTATION },
	{ "198.51.100.1", EGRESS_ADDR_DOCUMENTATION },
	{ "203.0.113.1", EGRESS_ADDR_DOCUMENTATION },
	{ "198.18.0.1", EGRESS_ADDR_RESERVED },
	{ "192.0.0.8", EGRESS_ADDR_RESERVED },
	{ "::", EGRESS_ADDR_UNSPECIFIED },
	{ "::1", EGRESS_ADDR_LOOPBACK },
	{ "2606:4700::1111", EGRESS_ADDR_PUBLIC },
	{ "2001:4860:4860::8888", EGRESS_ADDR_PUBLIC },
	{ "::ffff:127.0.0.1", EGRESS_ADDR_LOOPBACK },
	{ "::ffff:169.254.169.254", EGRESS_ADDR_METADATA },
	{ "::ffff:10.1.2.3", EGRESS_ADDR_PRIVATE },
	{ "::ffff:8.8.8.8", EGRESS_ADDR_PUBLIC },
	{ "::127.0.0.1", EGRESS_ADDR_LOOPBACK },
	{ "::169.254.169.254", EGRESS_ADDR_METADATA },
	{ "::8.8.8.8", EGRESS_ADDR_RESERVED },
	{ "::ffff:0:127.0.0.1", EGRESS_ADDR_LOOPBACK },
	{ "64:ff9b::7f00:1", EGRESS_ADDR_LOOPBACK },
	{ "64:ff9b::a9fe:a9fe", EGRESS_ADDR_METADATA },
	{ "64:ff9b::808:808", EGRESS_ADDR_PUBLIC },
	{ "64:ff9b:1::808:808", EGRESS_ADDR_PRIVATE },
	{ "64:ff9b:1::a00:1", EGRESS_ADDR_PRIVATE },
	{ "2002:7f00:1::1", EGRESS_ADDR_LOOPBACK },
	{ "2002:a9fe:a9fe::1", EGRESS_ADDR_METADATA },
	{ "2002:808:808::1", EGRESS_ADDR_PUBLIC },
	{ "fd00:ec2::254", EGRESS_ADDR_METADATA },
	{ "fd00:ec2::253", EGRESS_ADDR_PRIVATE },
	{ "fc00::1", EGRESS_ADDR_PRIVATE },
	{ "fdff:ffff::1", EGRESS_ADDR_PRIVATE },
	{ "fec0::1", EGRESS_ADDR_PRIVATE },
	{ "fe80::1", EGRESS_ADDR_LINKLOCAL },
	{ "febf::1", EGRESS_ADDR_LINKLOCAL },
	{ "ff02::1", EGRESS_ADDR_MULTICAST },
	{ "2001:db8::1", EGRESS_ADDR_DOCUMENTATION },
	{ "3fff::1", EGRESS_ADDR_DOCUMENTATION },
	{ "3fff:1000::1", EGRESS_ADDR_PUBLIC },
	{ "2001::1", EGRESS_ADDR_RESERVED },
	{ "100::1", EGRESS_ADDR_RESERVED },
	{ "4000::1", EGRESS_ADDR_RESERVED },
	{ "1::1", EGRESS_ADDR_RESERVED },
};

static int
classify(const char *s)
{
	struct sockaddr_in s4;
	struct sockaddr_in6 s6;

	memset(&s4, 0, sizeof(s4));
	memset(&s6, 0, sizeof(s6));
	if (inet_pton(AF_INET, s, &s4.sin_addr) == 1) {
		s4.sin_family = AF_INET;
		return egress_addr_classify((struct sockaddr *)&s4, sizeof(s4));
	}
	if (inet_pton(AF_INET6, s, &s6.sin6_addr) == 1) {
		s6.sin6_family = AF_INET6;
		return egress_addr_classify((struct sockaddr *)&s6, sizeof(s6));
	}
	fail_msg("bad test address %s", s);
	return -1;
}

static void
test_addr_table(void **state)
{
	struct sockaddr_in s4;
	size_t i;

	(void)state;
	for (i = 0; i < nitems(addr_cases); i++) {
		int c = classify(addr_cases[i].addr);

		if (c != addr_cases[i].cls)
			fail_msg("%s: got %s want %s", addr_cases[i].addr,
			    egress_addr_class_name(c),
			    egress_addr_class_name(addr_cases[i].cls));
	}
	/* Short sockaddrs and other families are never public. */
	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_addr.s_addr = htonl(0x08080808);
	assert_int_equal(egress_addr_classify((struct sockaddr *)&s4, 4),
	    EGRESS_ADDR_RESERVED);
	s4.sin_family = AF_UNIX;
	assert_int_equal(
	    egress_addr_classify((struct sockaddr *)&s4, sizeof(s4)),
	    EGRESS_ADDR_RESERVED);
	assert_int_equal(egress_addr_classify(NULL, 0), EGRESS_ADDR_RESERVED);
}

static void
test_addr_permitted(void **state)
{
	struct egress_rule strict = rule("a.b", 443, 0, 0);
	struct egress_rule priv = rule("a.b", 443, 0, 1);
	struct egress_rule wild = rule("*.b", 443, 0, 1);
	int c;

	(void)state;
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_PUBLIC, &strict), 0);
	for (c = 1; c < EGRESS_ADDR_CLASS_LAST; c++)
		assert_int_equal(
		    egress_addr_permitted(c, &strict), EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_LOOPBACK, &priv), 0);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_PRIVATE, &priv), 0);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_METADATA, &priv), 0);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_METADATA, &wild),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_LOOPBACK, &wild), 0);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_UNSPECIFIED, &priv),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_MULTICAST, &priv),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_BROADCAST, &priv),
	    EGRESS_E_ADDR_DENIED);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_PUBLIC, NULL), 0);
	assert_int_equal(egress_addr_permitted(EGRESS_ADDR_LOOPBACK, NULL),
	    EGRESS_E_ADDR_DENIED);
}

static void
test_addr_equal(void **state)
{
	struct sockaddr_in a, b;
	struct sockaddr_in6 c, e;

	(void)state;
	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons(443);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	b = a;
	assert_true(egress_addr_equal((struct sockaddr *)&a, sizeof(a),
	    (struct sockaddr *)&b, sizeof(b)));
	b.sin_port = htons(444);
	assert_false(egress_addr_equal((struct sockaddr *)&a, sizeof(a),
	    (struct sockaddr *)&b, sizeof(b)));
	b = a;
	inet_pton(AF_INET, "127.0.0.2", &b.sin_addr);
	assert_false(egress_addr_equal((struct sockaddr *)&a, sizeof(a),
	    (struct sockaddr *)&b, sizeof(b)));
	assert_false(egress_addr_equal(
	    (struct sockaddr *)&a, 4, (struct sockaddr *)&a, sizeof(a)));
	memset(&c, 0, sizeof(c));
	c.sin6_family = AF_INET6;
	c.sin6_port = htons(443);
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &c.sin6_addr);
	/* Same host, other family: not the pinned sockaddr. */
	assert_false(egress_addr_equal((struct sockaddr *)&a, sizeof(a),
	    (struct sockaddr *)&c, sizeof(c)));
	e = c;
	assert_true(egress_addr_equal((struct sockaddr *)&c, sizeof(c),
	    (struct sockaddr *)&e, sizeof(e)));
	e.sin6_addr.s6_addr[15] ^= 1;
	assert_false(egress_addr_equal((struct sockaddr *)&c, sizeof(c),
	    (struct sockaddr *)&e, sizeof(e)));
	assert_false(
	    egress_addr_equal(NULL, 0, (struct sockaddr *)&c, sizeof(c)));
}

static void
test_strerror(void **state)
{
	int e;

	(void)state;
	assert_string_equal(egress_strerror(0), "ok");
	for (e = EGRESS_E_BASE + 1; e < EGRESS_E_LAST; e++)
		assert_string_not_equal(
		    egress_strerror(e), "unknown egress error");
	assert_string_equal(
	    egress_strerror(EGRESS_E_LAST), "unknown egress error");
	assert_string_equal(egress_strerror(-1), "unknown egress error");
	assert_string_equal(egress_addr_class_name(99), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_url_table),
		cmocka_unit_test(test_url_limits),
		cmocka_unit_test(test_allow_table),
		cmocka_unit_test(test_rule_check),
		cmocka_unit_test(test_addr_table),
		cmocka_unit_test(test_addr_permitted),
		cmocka_unit_test(test_addr_equal),
		cmocka_unit_test(test_strerror),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for the egress glue: the grant target that binds the
 * policy's http/private flags (host/egress/allow.c, policy/hooks.c,
 * host/proc_egress.c) and the static hosts table (host/egress/hosts.c).
 */
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
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "lib/caps.h"
#include "policy/policy_hooks.h"

static void
test_grant_target(void **state)
{
	char buf[EGRESS_GRANT_TARGET_MAX], tiny[8];

	(void)state;
	assert_int_equal(
	    egress_grant_target("a.test", 443, 0, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a.test:443");
	assert_int_equal(
	    egress_grant_target("a.test", 80, 1, 0, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a.test:80 http");
	assert_int_equal(
	    egress_grant_target("a.test", 8443, 1, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a.test:8443 http private");
	assert_int_equal(
	    egress_grant_target("a.test", 8443, 0, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a.test:8443 private");
	assert_int_equal(egress_grant_target("", 443, 0, 0, buf, sizeof(buf)),
	    EGRESS_E_HOST);
	assert_int_equal(
	    egress_grant_target("a.test", 443, 0, 0, tiny, sizeof(tiny)),
	    EGRESS_E_HOST);
	/* A guest's UDP socket: its own target, never a TCP grant's. */
	assert_int_equal(egress_grant_target_proto(
	                     "ntp.test", 123, 1, 0, 1, buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "ntp.test:123/udp private");
	assert_int_equal(egress_grant_target_proto(
	                     "[fd00::1]", 53, 1, 0, 0, buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "[fd00::1]:53/udp");
	assert_int_equal(egress_grant_target_proto(
	                     "ntp.test", 123, 0, 0, 1, buf, sizeof(buf)),
	    0);
	assert_string_equal(buf, "ntp.test:123 private");
}

/* The flags a relay reads back are exactly the ones bound. */
static void
test_grant_flags(void **state)
{
	struct grant g;
	char t[EGRESS_GRANT_TARGET_MAX];
	uint8_t http, priv;
	int h, p;

	(void)state;
	for (h = 0; h < 2; h++)
		for (p = 0; p < 2; p++) {
			memset(&g, 0, sizeof(g));
			egress_grant_target("x.test", 9, h, p, t, sizeof(t));
			grant_target_hash(t, strlen(t), g.target);
			egress_grant_flags(&g, "x.test", 9, &http, &priv);
			assert_int_equal(http, h);
			assert_int_equal(priv, p);
		}
	/* A TCP grant read as a UDP one (or the reverse) yields nothing:
	 * a relay cannot turn one into the other. */
	memset(&g, 0, sizeof(g));
	egress_grant_target("x.test", 9, 0, 1, t, sizeof(t));
	grant_target_hash(t, strlen(t), g.target);
	egress_grant_flags_proto(&g, "x.test", 9, 1, &http, &priv);
	assert_int_equal(priv, 0);
	egress_grant_target_proto("x.test", 9, 1, 0, 1, t, sizeof(t));
	grant_target_hash(t, strlen(t), g.target);
	egress_grant_flags_proto(&g, "x.test", 9, 1, &http, &priv);
	assert_int_equal(priv, 1);
	egress_grant_flags(&g, "x.test", 9, &http, &priv);
	assert_int_equal(priv, 0);
	/* Another destination's grant yields nothing. */
	memset(&g, 0, sizeof(g));
	grant_target_hash("y.test:9 http", 13, g.target);
	egress_grant_flags(&g, "x.test", 9, &http, &priv);
	assert_int_equal(http, 0);
	assert_int_equal(priv, 0);
}

static void
decide(void *compiled, const char *target, struct msg_policy_decision *r)
{
	struct msg_policy_decide q;

	memset(&q, 0, sizeof(q));
	memset(r, 0, sizeof(*r));
	q.cap = CAP_EGRESS;
	q.link = 5;
	q.token_caps = CAP_BIT(CAP_EGRESS);
	strlcpy(q.principal, "bot", sizeof(q.principal));
	q.target_len = (uint32_t)strlen(target);
	memcpy(q.target, target, q.target_len);
	grant_target_hash(q.target, q.target_len, r->grant.target);
	policy_lang_hooks.decide(compiled, &q, r);
}

/* The policy process binds the matching entries' flags. */
static void
test_policy_binds_flags(void **state)
{
	static const char text[] = "role r {\n"
	                           "\tegress \"a.test\":443 private\n"
	                           "\tegress \"*.b.test\":80 http\n"
	                           "\tegress \"c.test\":443\n"
	                           "\tegress \"10.1.0.0/16\":53 udp private\n"
	                           "\tegress \"ntp.test\":123 udp\n"
	                           "}\n"
	                           "agent \"bot\" : r\n";
	struct msg_policy_decision r;
	uint8_t h[GRANT_HASH_BYTES];
	void *compiled = NULL;
	char err[256];

	(void)state;
	assert_int_equal(policy_lang_hooks.compile(text, sizeof(text) - 1,
	                     &compiled, err, sizeof(err)),
	    0);
	decide(compiled, "a.test:443", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("a.test:443 private", 18, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "x.b.test:80", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("x.b.test:80 http", 16, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "c.test:443", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("c.test:443", 10, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "evil.test:443", &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	grant_target_hash("evil.test:443", 13, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	/* An address under a range, over UDP and over TCP (udp is "UDP
	 * too"); a UDP request under a rule without udp is refused. */
	decide(compiled, "10.1.2.3:53/udp", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("10.1.2.3:53/udp private", 23, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "10.1.2.3:53", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("10.1.2.3:53 private", 19, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "ntp.test:123/udp", &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	grant_target_hash("ntp.test:123/udp", 16, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	decide(compiled, "a.test:443/udp", &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	grant_target_hash("a.test:443/udp", 14, h);
	assert_memory_equal(h, r.grant.target, sizeof(h));
	policy_lang_hooks.free(compiled);
}

static void
test_hosts(void **state)
{
	static const char text[] = "# a comment\n"
	                           "127.0.0.1 good.test Other.Test\n"
	                           "\n"
	                           "169.254.169.254\tmeta.test # metadata\r\n"
	                           "::1 six.test";
	struct egress_hosts *h = NULL;
	struct sockaddr_storage out[4];
	char a[64];
	size_t n, line;

	(void)state;
	assert_int_equal(
	    egress_hosts_parse(text, sizeof(text) - 1, &h, &line), 0);
	assert_int_equal(
	    egress_hosts_resolve(h, "other.test", 443, out, 4, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(out[0].ss_family, AF_INET);
	inet_ntop(
	    AF_INET, &((struct sockaddr_in *)&out[0])->sin_addr, a, sizeof(a));
	assert_string_equal(a, "127.0.0.1");
	assert_int_equal(
	    egress_hosts_resolve(h, "META.test", 443, out, 4, &n), 0);
	inet_ntop(
	    AF_INET, &((struct sockaddr_in *)&out[0])->sin_addr, a, sizeof(a));
	assert_string_equal(a, "169.254.169.254");
	assert_int_equal(
	    egress_hosts_resolve(h, "six.test", 443, out, 4, &n), 0);
	assert_int_equal(out[0].ss_family, AF_INET6);
	egress_hosts_free(h);
}

static void
test_hosts_malformed(void **state)
{
	static const char *const bad[] = {
		"127.0.0.1 ok.test\nnot-an-address x.test\n",
		"127.0.0.1 bad_name\n",
		"127.0.0.1 ok\0nul\n",
	};
	static const size_t want_line[] = { 2, 1, 1 };
	struct egress_hosts *h;
	size_t i, line;

	(void)state;
	for (i = 0; i < 2; i++) {
		h = (void *)1;
		assert_int_equal(
		    egress_hosts_parse(bad[i], strlen(bad[i]), &h, &line),
		    EGRESS_E_MSG);
		assert_null(h);
		assert_int_equal(line, want_line[i]);
	}
	assert_int_equal(
	    egress_hosts_parse(bad[2], 17, &h, &line), EGRESS_E_MSG);
	assert_int_equal(line, want_line[2]);
	/* Empty is fine: DNS only. */
	assert_int_equal(egress_hosts_parse("", 0, &h, &line), 0);
	egress_hosts_free(h);
}

static void
test_resolv(void **state)
{
	static const char text[] = "# resolv.conf\n"
	                           "search example.com\n"
	                           "nameserver 10.0.0.2\n"
	                           "nameserver ::1\n"
	                           "nameserver\tnot-an-address\n"
	                           "nameserver 127.0.0.1 # local\r\n"
	                           "options ndots:2\n";
	struct sockaddr_storage ns[3];
	struct sockaddr_in *in4;
	char a[32];
	size_t n;

	(void)state;
	assert_int_equal(
	    egress_resolv_parse(text, sizeof(text) - 1, 5353, ns, 3, &n), 0);
	assert_int_equal(n, 2); /* IPv4 only */
	in4 = (struct sockaddr_in *)&ns[0];
	inet_ntop(AF_INET, &in4->sin_addr, a, sizeof(a));
	assert_string_equal(a, "10.0.0.2");
	assert_int_equal(ntohs(in4->sin_port), 5353);
	in4 = (struct sockaddr_in *)&ns[1];
	inet_ntop(AF_INET, &in4->sin_addr, a, sizeof(a));
	assert_string_equal(a, "127.0.0.1");
	assert_int_equal(
	    egress_resolv_parse(text, sizeof(text) - 1, 53, ns, 1, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(egress_resolv_parse("", 0, 53, ns, 3, &n), 0);
	assert_int_equal(n, 0);
}

static void
test_hosts_lookup_only(void **state)
{
	struct egress_hosts *h = NULL;
	struct sockaddr_storage out[2];
	size_t n, line;

	(void)state;
	assert_int_equal(
	    egress_hosts_lookup(NULL, "a.test", out, 2, &n), EGRESS_E_RESOLVE);
	assert_int_equal(
	    egress_hosts_parse("127.0.0.1 a.test\n", 17, &h, &line), 0);
	assert_int_equal(egress_hosts_lookup(h, "A.TEST", out, 2, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(
	    egress_hosts_lookup(h, "b.test", out, 2, &n), EGRESS_E_RESOLVE);
	egress_hosts_free(h);
}

/* ---- the egress process's grant check ------------------------------- */

static uint8_t key[GRANT_KEY_BYTES];

static void
mint(struct grant *g, uint32_t decision, uint32_t cap, const char *principal,
    const char *target, uint64_t reqid)
{
	memset(g, 0, sizeof(*g));
	g->link = PROC_EGRESS;
	g->decision = decision;
	g->cap = cap;
	strlcpy(g->principal, principal, sizeof(g->principal));
	grant_target_hash(target, strlen(target), g->target);
	g->reqid = reqid;
	g->expires = grant_now_ms() + 30000;
	assert_int_equal(grant_mint(g, key), GRANT_OK);
}

static void
rule(struct egress_rule *r, const char *host, uint16_t port, int http, int priv)
{
	memset(r, 0, sizeof(*r));
	strlcpy(r->host, host, sizeof(r->host));
	r->port = port;
	r->allow_http = (uint8_t)http;
	r->allow_private = (uint8_t)priv;
}

/* What the vmm says is checked against what the policy signed. */
static void
test_check_grant(void **state)
{
	struct proc_ctx ctx;
	struct msg m;
	struct grant g, out;
	struct egress_rule r[2];

	(void)state;
	memset(&ctx, 0, sizeof(ctx));
	memset(&m, 0, sizeof(m));
	ctx.self = PROC_EGRESS;
	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (uint8_t)(i * 7 + 1);
	memcpy(ctx.grant_key[PROC_EGRESS], key, sizeof(key));
	ctx.grant_keys_held = PROC_BIT(PROC_EGRESS);
	m.hdr.reqid = 42;

	mint(&g, GRANT_ALLOW, CAP_EGRESS, "bot", "a.test:443 private", 42);
	rule(&r[0], "a.test", 443, 0, 1);
	assert_int_equal(
	    egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out), GRANT_OK);
	/* The relay claims http too, or drops private: not what was signed. */
	rule(&r[0], "a.test", 443, 1, 1);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_TARGET);
	rule(&r[0], "a.test", 443, 0, 0);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_TARGET);
	/* Another host, port, principal, or a second rule. */
	rule(&r[0], "b.test", 443, 0, 1);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_TARGET);
	rule(&r[0], "a.test", 444, 0, 1);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_TARGET);
	rule(&r[0], "a.test", 443, 0, 1);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "other", r, 1, &out),
	    GRANT_ERR_TARGET);
	rule(&r[1], "evil.test", 443, 0, 1);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 2, &out),
	    GRANT_ERR_TARGET);
	/* Another request's grant, a forged one, another cap. */
	m.hdr.reqid = 43;
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_REQID);
	m.hdr.reqid = 42;
	g.mac[0] ^= 1;
	assert_int_equal(
	    egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out), GRANT_ERR_MAC);
	mint(&g, GRANT_ALLOW, CAP_EXEC, "bot", "a.test:443 private", 42);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_TARGET);
	/* An authentic refusal is reported as one. */
	mint(&g, GRANT_DENY, CAP_EGRESS, "bot", "a.test:443", 42);
	rule(&r[0], "a.test", 443, 0, 0);
	assert_int_equal(egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out),
	    GRANT_ERR_DENIED);
	/* A grant for another link does not verify here. */
	mint(&g, GRANT_ALLOW, CAP_EGRESS, "bot", "a.test:443", 42);
	g.link = PROC_VMM;
	assert_int_not_equal(
	    egress_check_grant(&ctx, &m, &g, "bot", r, 1, &out), GRANT_OK);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grant_target),
		cmocka_unit_test(test_grant_flags),
		cmocka_unit_test(test_policy_binds_flags),
		cmocka_unit_test(test_hosts),
		cmocka_unit_test(test_hosts_malformed),
		cmocka_unit_test(test_resolv),
		cmocka_unit_test(test_hosts_lookup_only),
		cmocka_unit_test(test_check_grant),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

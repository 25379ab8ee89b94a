/* Unit tests for policy/: compiler, evaluator, quotas, service functions,
 * the process hooks, and the differential test against the reference
 * evaluator on random policies. */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "host/egress/egress.h"
#include "host/grant.h"
#include "host/msg.h"
#include "lang/lang.h"
#include "policy/policy.h"
#include "policy/policy_hooks.h"

struct fx {
	struct lang_file *f;
	struct policy *p;
	struct policy_quota *q;
};

static int
setup(void **state)
{
	*state = calloc(1, sizeof(struct fx));
	return *state == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	struct fx *fx = *state;

	policy_quota_free(fx->q);
	policy_free(fx->p);
	lang_free(fx->f);
	free(fx);
	return 0;
}

static void
build(struct fx *fx, const char *text)
{
	policy_quota_free(fx->q);
	policy_free(fx->p);
	lang_free(fx->f);
	fx->q = NULL;
	fx->p = NULL;
	assert_int_equal(lang_parse("t", text, strlen(text), &fx->f), LANG_OK);
	assert_int_equal(lang_check(fx->f), LANG_OK);
	assert_int_equal(policy_compile(fx->f, &fx->p), POLICY_OK);
	assert_non_null(fx->q = policy_quota_new(fx->p));
}

static struct policy_result
ask_at(struct fx *fx, const char *who, const char *cap, const char *target,
    uint16_t port, uint64_t now)
{
	struct policy_request req;
	struct policy_result res, ref;

	memset(&req, 0, sizeof(req));
	req.principal = who;
	req.principal_len = strlen(who);
	req.cap = cap_lookup(cap, strlen(cap));
	req.target = target;
	req.target_len = target != NULL ? strlen(target) : 0;
	req.port = port;
	policy_decide(fx->p, now == UINT64_MAX ? NULL : fx->q,
	    now == UINT64_MAX ? 0 : now, &req, &res);
	/* every static answer must match the reference evaluator */
	policy_ref_decide(fx->f, &req, &ref);
	if (res.reason != POLICY_R_RATE && res.reason != POLICY_R_BUDGET) {
		assert_int_equal(res.allow, ref.allow);
		assert_int_equal(res.rule, ref.rule);
		assert_int_equal(res.reason, ref.reason);
	}
	return res;
}

static struct policy_result
ask(struct fx *fx, const char *who, const char *cap, const char *target,
    uint64_t now)
{
	return ask_at(fx, who, cap, target, 0, now);
}

#define STATIC UINT64_MAX

static void
test_default_deny(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;

	build(fx, "agent \"a\" { allow artifact:read }\n");
	r = ask(fx, "a", "artifact:read", NULL, STATIC);
	assert_true(r.allow);
	assert_int_equal(r.rule, 1);
	assert_int_equal(r.line, 1);
	r = ask(fx, "a", "artifact:write", NULL, STATIC);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_DEFAULT);
	assert_int_equal(r.rule, 0);
	r = ask(fx, "nobody", "artifact:read", NULL, STATIC);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_PRINCIPAL);
	assert_null(r.limits);
	/* a prefix of a name is another name */
	r = ask(fx, "", "artifact:read", NULL, STATIC);
	assert_false(r.allow);
}

/* expose: the ports of its guests a principal may reach (sandbox:read
 * through the ports route); none listed is none reachable. */
static struct policy_result
ask_port(struct fx *fx, const char *who, const char *cap, uint16_t port)
{
	return ask_at(fx, who, cap, NULL, port, STATIC);
}

static void
test_expose(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;

	build(fx,
	    "role web { allow sandbox:read\n expose 8000, 3000 }\n"
	    "agent \"a\" : web { expose 3000 }\n"
	    "agent \"b\" { allow sandbox:read }\n"
	    "agent \"c\" { allow sandbox:read\n expose * }\n"
	    "agent \"d\" { expose 8000 }\n");
	r = ask_port(fx, "a", "sandbox:read", 8000);
	assert_true(r.allow);
	assert_int_equal(r.line, 2);
	/* the lowest rule among those that name it: the role's 3000 */
	r = ask_port(fx, "a", "sandbox:read", 3000);
	assert_true(r.allow);
	assert_int_equal(r.rule, 3);
	r = ask_port(fx, "a", "sandbox:read", 8080);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	/* sandbox:read without expose: no port at all, the rest as ever */
	r = ask_port(fx, "b", "sandbox:read", 8000);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	assert_true(ask(fx, "b", "sandbox:read", NULL, STATIC).allow);
	assert_true(ask_port(fx, "c", "sandbox:read", 65535).allow);
	/* expose grants nothing by itself */
	r = ask_port(fx, "d", "sandbox:read", 8000);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_DEFAULT);
	/* a range holds both its ends and nothing past them */
	build(fx,
	    "agent \"r\" { allow sandbox:read\n expose 3000-3999, 8000 }\n");
	assert_false(ask_port(fx, "r", "sandbox:read", 2999).allow);
	r = ask_port(fx, "r", "sandbox:read", 3000);
	assert_true(r.allow);
	assert_int_equal(r.rule, 2); /* allow sandbox:read is rule 1 */
	assert_true(ask_port(fx, "r", "sandbox:read", 3500).allow);
	assert_true(ask_port(fx, "r", "sandbox:read", 3999).allow);
	r = ask_port(fx, "r", "sandbox:read", 4000);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	assert_int_equal(ask_port(fx, "r", "sandbox:read", 8000).rule, 3);
	/* a port with another capability is a malformed request */
	build(fx, "agent \"e\" { allow exec, sandbox:read\n expose * }\n");
	r = ask_port(fx, "e", "exec", 8000);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_REQUEST);
}

/* expose ... link: by a link, only a rule that says so names the port,
 * and it bounds the link's life. */
static void
test_expose_link(void **state)
{
	struct fx *fx = *state;
	struct policy_request req;
	struct policy_result r, ref;

	build(fx,
	    "agent \"a\" { allow sandbox:read\n"
	    " expose 9000, 8000 link 2h, 3000-3999 link, 9000 link 1h }\n"
	    "agent \"b\" { allow sandbox:read\n expose * }\n");
	memset(&req, 0, sizeof(req));
	req.principal = "a";
	req.principal_len = 1;
	req.cap = CAP_SANDBOX_READ;
	req.link = 1;
	req.port = 8000;
	policy_decide(fx->p, NULL, 0, &req, &r);
	policy_ref_decide(fx->f, &req, &ref);
	assert_true(r.allow);
	assert_int_equal(r.rule, 3);
	assert_int_equal(ref.rule, 3);
	assert_int_equal(r.link_ms, 2 * 3600 * 1000ull);
	req.port = 3999;
	policy_decide(fx->p, NULL, 0, &req, &r);
	assert_true(r.allow);
	assert_int_equal(r.link_ms, LANG_LINK_DEFAULT_MS);
	/* 9000's lowest rule gives no links: the one that does decides */
	req.port = 9000;
	policy_decide(fx->p, NULL, 0, &req, &r);
	policy_ref_decide(fx->f, &req, &ref);
	assert_true(r.allow);
	assert_int_equal(r.rule, 5);
	assert_int_equal(ref.rule, 5);
	assert_int_equal(r.link_ms, 3600 * 1000ull);
	/* with a token, the lowest rule decides and no link life is told */
	req.link = 0;
	policy_decide(fx->p, NULL, 0, &req, &r);
	assert_int_equal(r.rule, 2);
	assert_int_equal(r.link_ms, 0);
	/* expose * without link: no link anywhere */
	req.principal = "b";
	req.link = 1;
	req.port = 8000;
	policy_decide(fx->p, NULL, 0, &req, &r);
	policy_ref_decide(fx->f, &req, &ref);
	assert_false(r.allow);
	assert_false(ref.allow);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	assert_int_equal(r.link_ms, 0);
}

static void
test_deny_overrides(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;

	/* whatever the order, wherever the deny */
	build(fx,
	    "deny admin for role base\n"
	    "role base { allow artifact:read }\n"
	    "role top : base { allow admin, artifact:write }\n"
	    "agent \"a\" : top\n"
	    "agent \"b\" : top { deny artifact:write }\n"
	    "agent \"c\" { allow admin }\n"
	    "deny artifact:read for agent \"b\"\n");
	r = ask(fx, "a", "admin", NULL, STATIC);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_DENY);
	assert_int_equal(r.line, 1);
	assert_true(ask(fx, "a", "artifact:write", NULL, STATIC).allow);
	assert_true(ask(fx, "a", "artifact:read", NULL, STATIC).allow);
	assert_false(ask(fx, "b", "artifact:write", NULL, STATIC).allow);
	r = ask(fx, "b", "artifact:read", NULL, STATIC);
	assert_false(r.allow);
	assert_int_equal(r.line, 7);
	assert_true(ask(fx, "c", "admin", NULL, STATIC).allow);
}

static void
test_inheritance_limits(void **state)
{
	struct fx *fx = *state;
	const struct policy_limits *l;

	build(fx,
	    "role a { budget 10\n memory 64M\n timeout 5s\n"
	    " rate read 10/s\n cost exec 7\n allow exec }\n"
	    "role b : a { budget 20\n lock writes\n output 1K }\n"
	    "agent \"x\" : b { memory 1G\n egress bytes 100M\n"
	    " egress budget 1536K/day }\n"
	    "agent \"y\" : a\n");
	l = policy_limits_of(fx->p, "x");
	assert_non_null(l);
	assert_int_equal(l->budget, 20);
	assert_int_equal(l->mem_max, 1ull << 30);
	assert_int_equal(l->timeout_ms, 5000);
	assert_int_equal(l->output_max, 1024);
	assert_int_equal(l->lock_writes, 1);
	assert_int_equal(l->rate_count[0], 10);
	assert_int_equal(l->rate_period_ms[0], 1000);
	assert_int_equal(l->rate_count[1], 0);
	assert_int_equal(l->cost[CAP_EXEC], 7);
	assert_int_equal(l->cost[CAP_ADMIN], 1);
	assert_int_equal(l->egress_max, 100ull << 20);
	assert_int_equal(l->egress_budget, 1536ull << 10);
	assert_int_equal(l->egress_budget_ms, 86400000);
	l = policy_limits_of(fx->p, "y");
	assert_int_equal(l->egress_budget, 0);
	assert_int_equal(l->budget, 10);
	assert_int_equal(l->egress_max, 0);
	assert_int_equal(l->lock_writes, 0);
	assert_null(policy_limits_of(fx->p, "z"));
}

/* isolation kvm is inherited through roles, an agent overrides it, and
 * its slot does not meet a cost's (a cost set first must not hide it). */
static void
test_isolation(void **state)
{
	struct fx *fx = *state;
	const struct policy_limits *l;
	int c;

	build(fx,
	    "role h { cost exec 3\n cost admin 2\n isolation kvm\n"
	    " allow exec }\n"
	    "agent \"a\" : h\n"
	    "agent \"b\" : h { isolation any }\n"
	    "agent \"c\" { allow exec }\n");
	l = policy_limits_of(fx->p, "a");
	assert_non_null(l);
	assert_int_equal(l->isolation, POLICY_ISO_KVM);
	assert_int_equal(l->cost[CAP_EXEC], 3);
	assert_int_equal(l->cost[CAP_ADMIN], 2);
	assert_int_equal(
	    policy_limits_of(fx->p, "b")->isolation, POLICY_ISO_ANY);
	assert_int_equal(
	    policy_limits_of(fx->p, "c")->isolation, POLICY_ISO_ANY);
	for (c = 0; c < CAP_COUNT; c++)
		assert_int_equal(l->cost[c],
		    c == CAP_EXEC        ? 3
		        : c == CAP_ADMIN ? 2
		                         : 1);
}

static void
test_exec_allowlist(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;

	build(fx,
	    "agent \"b\" { exec \"node\", \"pnpm\" }\n"
	    "agent \"c\" { allow exec }\n"
	    "agent \"d\" { exec \"node\"\n deny exec }\n");
	assert_int_equal(policy_exec_allowed(fx->p, "b", "node"), 1);
	assert_int_equal(policy_exec_allowed(fx->p, "b", "pnpm"), 1);
	assert_int_equal(policy_exec_allowed(fx->p, "b", "npm"), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "b", "node "), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "b", "nod"), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "b", ""), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "c", "node"), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "d", "node"), 0);
	assert_int_equal(policy_exec_allowed(fx->p, "x", "node"), 0);
	r = ask(fx, "b", "exec", "pnpm", STATIC);
	assert_true(r.allow);
	assert_int_equal(r.rule, 2);
	r = ask(fx, "b", "exec", "sh", STATIC);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	/* without a target: may it exec at all */
	assert_true(ask(fx, "b", "exec", NULL, STATIC).allow);
}

static void
test_egress(void **state)
{
	struct fx *fx = *state;
	struct egress_rule rules[4];
	size_t n;

	build(fx,
	    "agent \"g\" { egress \"api.github.com\":443, "
	    "\"*.npmjs.org\":* http, \"10.0.0.5\":8080 private }\n"
	    "agent \"n\" { egress \"x.com\"\n deny egress }\n"
	    "agent \"e\" { allow artifact:read }\n");
	assert_true(ask(fx, "g", "egress", "api.github.com:443", STATIC).allow);
	assert_true(ask(fx, "g", "egress", "API.GitHub.com", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "api.github.com:80", STATIC).allow);
	assert_false(
	    ask(fx, "g", "egress", "evilapi.github.com:443", STATIC).allow);
	assert_false(
	    ask(fx, "g", "egress", "api.github.com.attacker:443", STATIC)
	        .allow);
	assert_true(ask(fx, "g", "egress", "a.b.npmjs.org:1", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "npmjs.org:443", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "xnpmjs.org:443", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "a.npmjs.org:0", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "a.npmjs.org:", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "a.npmjs.org:99999", STATIC).allow);
	assert_true(ask(fx, "g", "egress", "10.0.0.5:8080", STATIC).allow);
	assert_false(ask(fx, "g", "egress", ":443", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "[api.github.com]x", STATIC).allow);
	assert_true(
	    ask(fx, "g", "egress", "[api.github.com]:443", STATIC).allow);
	/* "host:*": any port of a rule for the host (a guest's name query,
	 * docs/egress.md "Names and connections"). */
	assert_true(ask(fx, "g", "egress", "api.github.com:*", STATIC).allow);
	assert_true(ask(fx, "g", "egress", "10.0.0.5:*", STATIC).allow);
	assert_true(ask(fx, "g", "egress", "a.npmjs.org:*", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "evil.com:*", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "npmjs.org:*", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "api.github.com:**", STATIC).allow);
	assert_false(ask(fx, "g", "egress", "*:*", STATIC).allow);
	assert_false(ask(fx, "n", "egress", "x.com:*", STATIC).allow);

	assert_int_equal(
	    policy_egress_export(fx->p, "g", rules, 4, &n), POLICY_OK);
	assert_int_equal(n, 3);
	assert_string_equal(rules[0].host, "api.github.com");
	assert_int_equal(rules[0].port, 443);
	assert_int_equal(rules[0].allow_http, 0);
	assert_int_equal(rules[1].port, 0);
	assert_int_equal(rules[1].allow_http, 1);
	assert_int_equal(rules[2].allow_private, 1);
	assert_int_equal(egress_rule_check(&rules[1]), 0);
	assert_int_equal(
	    policy_egress_export(fx->p, "g", rules, 2, &n), POLICY_E_SPACE);
	assert_int_equal(n, 3);
	assert_int_equal(
	    policy_egress_export(fx->p, "n", rules, 4, &n), POLICY_OK);
	assert_int_equal(n, 0);
	assert_int_equal(
	    policy_egress_export(fx->p, "e", rules, 4, &n), POLICY_OK);
	assert_int_equal(n, 0);
	assert_int_equal(
	    policy_egress_export(fx->p, "zz", rules, 4, &n), POLICY_E_NOTFOUND);
}

static void
test_egress_v6(void **state)
{
	struct fx *fx = *state;

	build(fx,
	    "agent \"v\" { egress \"2001:db8::1\":8443, \"::1\" "
	    "private }\n");
	assert_true(ask(fx, "v", "egress", "[2001:db8::1]:8443", STATIC).allow);
	assert_false(ask(fx, "v", "egress", "[2001:db8::1]:443", STATIC).allow);
	assert_false(ask(fx, "v", "egress", "[2001:db8::1]", STATIC).allow);
	assert_true(ask(fx, "v", "egress", "::1", STATIC).allow);
	assert_true(ask(fx, "v", "egress", "[::1]", STATIC).allow);
	assert_true(ask(fx, "v", "egress", "[::1]:443", STATIC).allow);
	assert_false(ask(fx, "v", "egress", "[::1", STATIC).allow);
	assert_false(ask(fx, "v", "egress", "[::1]:", STATIC).allow);
}

/* Address ranges (docs/policy-language.md): addresses in the range on
 * the rule's port, compared as addresses; names never; a range never
 * covers a metadata address; the exact address rule still does. */
static void
test_egress_ranges(void **state)
{
	struct fx *fx = *state;

	build(fx,
	    "agent \"r\" { egress \"10.1.0.0/16\":5432 private, "
	    "\"fd00:ab::/32\":* private, \"192.168.7.128/25\":53 "
	    "private, \"169.254.0.0/16\":* private, \"0.0.0.0/0\":9999, "
	    "\"100.100.100.200\":80 }\n");
	assert_true(ask(fx, "r", "egress", "10.1.2.3:5432", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "10.1.0.0:5432", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "10.1.255.255:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "10.2.0.1:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "10.1.2.3:5433", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "10.1.2.3", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "10.1.2.3:*", STATIC).allow);
	/* Not an address, or not the canonical text of one: no match. */
	assert_false(ask(fx, "r", "egress", "10.1.2:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "010.1.2.3:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "10.1.2.3x:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "a10.1.0.0/16:5432", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "10.1.0.0/16:5432", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "[fd00:ab::1]:1", STATIC).allow);
	assert_true(ask(fx, "r", "egress",
	    "[fd00:ab:ffff:ffff:ffff:ffff:ffff:ffff]:1", STATIC)
	                .allow);
	assert_true(ask(fx, "r", "egress", "[FD00:AB:0::1]:1", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "[fd00:ac::1]:1", STATIC).allow);
	assert_false(
	    ask(fx, "r", "egress", "[::ffff:10.1.2.3]:5432", STATIC).allow);
	/* A prefix that is not a multiple of 8. */
	assert_true(ask(fx, "r", "egress", "192.168.7.128:53", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "192.168.7.255:53", STATIC).allow);
	assert_false(ask(fx, "r", "egress", "192.168.7.127:53", STATIC).allow);
	/* Metadata: never under a range, even /0 or 169.254/16; an exact
	 * rule still names one (egress refuses it for a guest's connect). */
	assert_true(ask(fx, "r", "egress", "169.254.1.1:80", STATIC).allow);
	assert_false(
	    ask(fx, "r", "egress", "169.254.169.254:80", STATIC).allow);
	assert_false(
	    ask(fx, "r", "egress", "169.254.169.254:9999", STATIC).allow);
	assert_false(
	    ask(fx, "r", "egress", "168.63.129.16:9999", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "8.8.8.8:9999", STATIC).allow);
	assert_true(ask(fx, "r", "egress", "100.100.100.200:80", STATIC).allow);
	/* A name never matches an address rule. */
	assert_false(ask(fx, "r", "egress", "example.com:9999", STATIC).allow);
}

/* Whether a decision spends a quota (policy_decision_spends): what lets
 * the vmm reuse an egress decision (docs/egress.md, "Decisions
 * reused"). A budget that counts the capability, or a rate on its
 * bucket, spends; none, a cost of 0 or an operation the budget does not
 * count does not. */
static void
test_decision_spends(void **state)
{
	struct fx *fx = *state;
	int e = CAP_EGRESS, w;

	build(fx,
	    "agent \"free\" { egress \"x.test\":443 }\n"
	    "agent \"budget\" { egress \"x.test\":443; budget 100 }\n"
	    "agent \"zero\" { egress \"x.test\":443; budget 100; "
	    "cost egress 0 }\n"
	    "agent \"read\" { egress \"x.test\":443; rate read 100/min }\n"
	    "agent \"write\" { egress \"x.test\":443; rate write 100/min "
	    "}\n");
	w = (fx->p->writes & CAP_BIT(CAP_EGRESS)) != 0;
	assert_int_equal(
	    policy_decision_spends(fx->p, policy_find(fx->p, "free", 4), e, 0),
	    0);
	assert_int_equal(policy_decision_spends(
	                     fx->p, policy_find(fx->p, "budget", 6), e, 0),
	    1);
	assert_int_equal(policy_decision_spends(
	                     fx->p, policy_find(fx->p, "budget", 6), e, 1),
	    0);
	assert_int_equal(
	    policy_decision_spends(fx->p, policy_find(fx->p, "zero", 4), e, 0),
	    0);
	/* A rate on the bucket egress is counted in, and not the other. */
	assert_int_equal(
	    policy_decision_spends(fx->p, policy_find(fx->p, "read", 4), e, 0),
	    !w);
	assert_int_equal(
	    policy_decision_spends(fx->p, policy_find(fx->p, "write", 5), e, 0),
	    w);
	/* What it cannot know about spends. */
	assert_int_equal(policy_decision_spends(fx->p, -1, e, 0), 1);
	assert_int_equal(
	    policy_decision_spends(fx->p, (int)fx->p->npr, e, 0), 1);
	assert_int_equal(policy_decision_spends(fx->p,
	                     policy_find(fx->p, "free", 4), CAP_COUNT, 0),
	    1);
	assert_int_equal(policy_decision_spends(NULL, 0, e, 0), 1);
}

/* udp: a target ending in "/udp" (a guest's UDP socket) matches only an
 * entry that says udp; such an entry allows TCP too, as http does. */
static void
test_egress_udp(void **state)
{
	struct fx *fx = *state;

	build(fx,
	    "agent \"u\" { egress \"ntp.test\":123 udp private, "
	    "\"tcp.test\":123 private, \"10.9.0.0/16\":53 udp, "
	    "\"*.dns.test\":* udp }\n");
	assert_true(ask(fx, "u", "egress", "ntp.test:123/udp", STATIC).allow);
	assert_true(ask(fx, "u", "egress", "ntp.test:123", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "ntp.test:124/udp", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "tcp.test:123/udp", STATIC).allow);
	assert_true(ask(fx, "u", "egress", "tcp.test:123", STATIC).allow);
	assert_true(ask(fx, "u", "egress", "10.9.1.1:53/udp", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "10.8.1.1:53/udp", STATIC).allow);
	assert_true(
	    ask(fx, "u", "egress", "a.dns.test:5353/udp", STATIC).allow);
	/* Malformed: the suffix once, at the end, after a port. */
	assert_false(ask(fx, "u", "egress", "ntp.test/udp", STATIC).allow);
	assert_false(
	    ask(fx, "u", "egress", "ntp.test:123/udp/udp", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "ntp.test:123/UDP", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "/udp", STATIC).allow);
	assert_false(ask(fx, "u", "egress", "ntp.test:/udp", STATIC).allow);
}

/* The parser of addresses and ranges, on hostile text. */
static void
test_addr_range_parse(void **state)
{
	static const char *bad[] = { "10.0.0.0/33", "10.0.0.0/8x",
		"10.0.0.0/08", "10.0.0.0/", "10.0.0.0/-1", "10.0.0.0/+8",
		"10.0.0.0/ 8", "10.0.0.0//8", "10.1.2.0/16", "/8", "10.0.0/8",
		"1.2.3.4.5/8", "fd00::/129", "fd00::1/64", "fd00::g/8",
		"::ffff:10.0.0.0/104", "fe80::1%eth0", ":::", "10.0.0.0/1000",
		"0x0a.0.0.0/8", "010.0.0.0/8", "[fd00::]/8",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa:/8" };
	struct lang_addr_range r;
	char why[LANG_MSG_MAX];
	uint8_t a[16] = { 10, 1, 2, 3 };
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		if (lang_addr_range_parse(
		        bad[i], strlen(bad[i]), &r, why, sizeof(why)) != -1)
			fail_msg("accepted '%s'", bad[i]);
		assert_true(why[0] != '\0');
	}
	assert_int_equal(
	    lang_addr_range_parse("example.com", 11, &r, why, sizeof(why)), 0);
	assert_int_equal(lang_addr_range_parse("*.a.b", 5, &r, NULL, 0), 0);
	assert_int_equal(
	    lang_addr_range_parse("10.1.0.0/16", 11, &r, NULL, 0), 1);
	assert_int_equal(r.bits, 16);
	assert_true(lang_addr_range_has(&r, AF_INET, a));
	a[1] = 2;
	assert_false(lang_addr_range_has(&r, AF_INET, a));
	assert_false(lang_addr_range_has(&r, AF_INET6, a));
	assert_int_equal(lang_addr_range_parse("0.0.0.0/0", 9, &r, NULL, 0), 1);
	assert_true(lang_addr_range_has(&r, AF_INET, a));
	assert_int_equal(lang_addr_range_parse("10.0.0.5", 8, &r, NULL, 0), 1);
	assert_int_equal(r.bits, 32);
	assert_int_equal(lang_addr_range_parse("::/0", 4, &r, NULL, 0), 1);
	assert_int_equal(r.family, AF_INET6);
	/* n bounds the text: no NUL needed, nothing read past it. */
	assert_int_equal(
	    lang_addr_range_parse("10.1.0.0/16trailing", 11, &r, NULL, 0), 1);
}

static void
test_rate(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;
	uint64_t t0 = 1000000000000ull, s = 1000000000ull;
	int i;

	build(fx,
	    "agent \"a\" { allow artifact:read, artifact:write\n"
	    " rate read 3/s\n rate write 1/min }\n"
	    "agent \"b\" { allow artifact:read\n rate read 3/s }\n");
	/* a burst of three, then empty */
	for (i = 0; i < 3; i++)
		assert_true(ask(fx, "a", "artifact:read", NULL, t0).allow);
	r = ask(fx, "a", "artifact:read", NULL, t0);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_RATE);
	assert_int_equal(r.retry_after_ms, 334);
	/* each principal has its own bucket, each kind its own */
	assert_true(ask(fx, "b", "artifact:read", NULL, t0).allow);
	assert_true(ask(fx, "a", "artifact:write", NULL, t0).allow);
	r = ask(fx, "a", "artifact:write", NULL, t0 + s);
	assert_false(r.allow);
	assert_int_equal(r.retry_after_ms, 59000);
	/* a third of a second later, one token is back */
	assert_true(ask(fx, "a", "artifact:read", NULL, t0 + s / 3 + 1).allow);
	assert_false(ask(fx, "a", "artifact:read", NULL, t0 + s / 3 + 1).allow);
	/* a long pause refills to the burst, never beyond */
	for (i = 0; i < 3; i++)
		assert_true(
		    ask(fx, "a", "artifact:read", NULL, t0 + 100 * s).allow);
	assert_false(ask(fx, "a", "artifact:read", NULL, t0 + 100 * s).allow);
	/* the static answer ignores quotas */
	assert_true(ask(fx, "a", "artifact:read", NULL, STATIC).allow);
}

static void
test_budget_and_cost(void **state)
{
	struct fx *fx = *state;
	struct policy_result r;
	int i, k;

	build(fx,
	    "role r { allow artifact:read, artifact:write\n"
	    " cost artifact:write 10 }\n"
	    "agent \"a\" : r { budget 25 }\n"
	    "agent \"b\" : r { budget 100 }\n"
	    "agent \"c\" : r\n");
	k = policy_find(fx->p, "a", 1);
	assert_true(ask(fx, "a", "artifact:write", NULL, 1).allow);
	assert_true(ask(fx, "a", "artifact:write", NULL, 2).allow);
	r = ask(fx, "a", "artifact:write", NULL, 3);
	assert_false(r.allow);
	assert_int_equal(r.reason, POLICY_R_BUDGET);
	assert_int_equal(policy_quota_spent(fx->q, k), 20);
	for (i = 0; i < 5; i++)
		assert_true(ask(fx, "a", "artifact:read", NULL, 4).allow);
	assert_false(ask(fx, "a", "artifact:read", NULL, 5).allow);
	/* b's budget is its own */
	assert_true(ask(fx, "b", "artifact:write", NULL, 6).allow);
	/* no budget: unlimited */
	for (i = 0; i < 100; i++)
		assert_true(ask(fx, "c", "artifact:write", NULL, 7).allow);
	/* restored from the store */
	policy_quota_set_spent(fx->q, k, 0);
	assert_true(ask(fx, "a", "artifact:write", NULL, 8).allow);
}

static void
test_concurrency(void **state)
{
	struct fx *fx = *state;
	int a, b;

	build(fx,
	    "agent \"a\" { allow exec\n concurrent 2 }\n"
	    "agent \"b\" { allow exec }\n");
	a = policy_find(fx->p, "a", 1);
	b = policy_find(fx->p, "b", 1);
	assert_int_equal(policy_quota_enter(fx->q, a), POLICY_OK);
	assert_int_equal(policy_quota_enter(fx->q, a), POLICY_OK);
	assert_int_equal(policy_quota_enter(fx->q, a), POLICY_E_BUSY);
	policy_quota_leave(fx->q, a);
	assert_int_equal(policy_quota_enter(fx->q, a), POLICY_OK);
	assert_int_equal(policy_quota_enter(fx->q, b), POLICY_OK);
	assert_int_equal(policy_quota_enter(fx->q, -1), POLICY_E_NOTFOUND);
	assert_int_equal(policy_quota_enter(fx->q, 99), POLICY_E_NOTFOUND);
	policy_quota_leave(fx->q, 99);
}

static void
test_bad_requests(void **state)
{
	struct fx *fx = *state;
	struct policy_request req;
	struct policy_result res;

	build(fx, "agent \"a\" { allow admin }\n");
	memset(&req, 0, sizeof(req));
	req.principal = "a";
	req.principal_len = 1;
	req.cap = CAP_COUNT;
	policy_decide(fx->p, fx->q, 0, &req, &res);
	assert_false(res.allow);
	assert_int_equal(res.reason, POLICY_R_REQUEST);
	req.cap = -1;
	policy_decide(fx->p, fx->q, 0, &req, &res);
	assert_false(res.allow);
	/* refuse to compile an unchecked or failed file */
	{
		struct lang_file *f = NULL;
		struct policy *p = NULL;
		assert_int_equal(
		    lang_parse("x", "agent \"a\"", 9, &f), LANG_OK);
		assert_int_equal(policy_compile(f, &p), POLICY_E_ARG);
		lang_free(f);
	}
}

static void
test_hash_and_compile_text(void **state)
{
	static const char text[] = "agent \"a\" { allow admin }\n";
	uint8_t want[32];
	struct policy *p = NULL;
	char err[512];

	assert_int_equal(
	    policy_compile_text("t", text, strlen(text), &p, err, sizeof(err)),
	    POLICY_OK);
	crypto_generichash(want, sizeof(want), (const unsigned char *)text,
	    strlen(text), NULL, 0);
	assert_memory_equal(policy_hash(p), want, 32);
	policy_free(p);
	assert_int_not_equal(policy_compile_text("t", "agent \"a\" { allow x }",
	                         22, &p, err, sizeof(err)),
	    POLICY_OK);
	assert_null(p);
	assert_non_null(strstr(err, "t:1:19: error: unknown capability 'x'"));
}

static void
test_hooks(void **state)
{
	static const char text[] =
	    "agent \"a\" { allow artifact:read, exec\n exec \"node\"\n"
	    " memory 64M\n timeout 3s\n output 2K\n concurrent 1\n"
	    " egress bytes 1500\n egress budget 1025/min }\n";
	struct msg_policy_decide q;
	struct msg_policy_decision r;
	void *c = NULL;
	char err[256];

	assert_int_equal(
	    policy_lang_hooks.compile("bad", 3, &c, err, sizeof(err)), -1);
	assert_null(c);
	assert_non_null(strstr(err, "error:"));
	assert_int_equal(
	    policy_lang_hooks.compile(text, strlen(text), &c, err, sizeof(err)),
	    0);
	assert_non_null(policy_hooks_policy(c));
	memset(&q, 0, sizeof(q));
	q.cap = CAP_EXEC;
	q.token_caps = CAP_ALL;
	strlcpy(q.principal, "a", sizeof(q.principal));
	memcpy(q.target, "node", 4);
	q.target_len = 4;
	memset(&r, 0, sizeof(r));
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	assert_int_equal(r.grant.cap, CAP_EXEC);
	assert_string_equal(r.grant.principal, "a");
	assert_int_equal(r.grant.mem_max, 64u << 20);
	assert_int_equal(r.grant.timeout_ms, 3000);
	assert_int_equal(r.grant.output_max, 2048);
	assert_int_equal(r.grant.egress_kib, 2); /* KiB, rounded up */
	assert_int_equal(r.grant.egress_budget_kib, 2);
	assert_int_equal(r.grant.egress_budget_s, 60);
	assert_int_equal(r.line, 2);
	assert_int_equal(r.rule, 3);
	/* token caps narrow the policy */
	q.token_caps = CAP_BIT(CAP_ARTIFACT_READ);
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	/* a target off the list; a malformed request; no policy */
	q.token_caps = CAP_ALL;
	memcpy(q.target, "sh", 2);
	q.target_len = 2;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	q.target_len = sizeof(q.target) + 1;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	q.target_len = 0;
	memset(q.principal, 'x', sizeof(q.principal));
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	policy_lang_hooks.decide(NULL, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	/* concurrency, reported by the process that runs the operation */
	assert_int_equal(policy_hooks_enter(c, "a"), POLICY_OK);
	assert_int_equal(policy_hooks_enter(c, "a"), POLICY_E_BUSY);
	policy_hooks_leave(c, "a");
	assert_int_equal(policy_hooks_enter(c, "a"), POLICY_OK);
	assert_int_equal(policy_hooks_enter(c, "zz"), POLICY_E_NOTFOUND);
	assert_int_equal(policy_hooks_enter(NULL, "a"), POLICY_E_NOTFOUND);
	policy_lang_hooks.free(c);
	policy_lang_hooks.free(NULL);
}

/* Runs take a slot with the decision; dry runs spend nothing; a reload
 * keeps what was spent; a restarted front frees every slot. */
static void
test_hooks_quota(void **state)
{
	static const char text[] =
	    "agent \"a\" { allow exec\n exec \"node\"\n concurrent 1\n"
	    " budget 3 }\n";
	static const char text2[] = "agent \"b\" { allow exec }\n"
	                            "agent \"a\" { allow exec\n exec \"node\"\n"
	                            " concurrent 1\n budget 3 }\n";
	struct msg_policy_decide q;
	struct msg_policy_decision r;
	void *c = NULL, *c2 = NULL;
	char err[256];

	assert_int_equal(
	    policy_lang_hooks.compile(text, strlen(text), &c, err, sizeof(err)),
	    0);
	memset(&q, 0, sizeof(q));
	q.cap = CAP_EXEC;
	q.token_caps = CAP_ALL;
	strlcpy(q.principal, "a", sizeof(q.principal));
	memcpy(q.target, "node", 4);
	q.target_len = 4;
	q.flags = DECIDE_ENTER;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	assert_int_equal(r.reason, POLICY_R_BUSY);
	assert_true(r.retry_after_ms > 0);
	/* the refusal spent no budget: 1 of 3 */
	assert_int_equal(policy_quota_spent(policy_hooks_quota(c), 0), 1);
	/* a dry run neither enters nor spends */
	q.flags = DECIDE_DRY_RUN;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	assert_int_equal(policy_quota_spent(policy_hooks_quota(c), 0), 1);
	/* a denied decision gives its slot back */
	policy_hooks_leave(c, "a");
	q.flags = DECIDE_ENTER;
	memcpy(q.target, "sh", 2);
	q.target_len = 2;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.reason, POLICY_R_TARGET);
	memcpy(q.target, "node", 4);
	q.target_len = 4;
	policy_lang_hooks.decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	/* reload: "a" keeps its slot in use and 2 of 3 spent */
	assert_int_equal(policy_lang_hooks.compile(
	                     text2, strlen(text2), &c2, err, sizeof(err)),
	    0);
	policy_quota_carry(policy_hooks_quota(c2), policy_hooks_quota(c));
	policy_lang_hooks.free(c);
	policy_lang_hooks.decide(c2, &q, &r);
	assert_int_equal(r.reason, POLICY_R_BUSY);
	/* the front restarted: its runs are gone */
	policy_quota_leave_all(policy_hooks_quota(c2));
	policy_lang_hooks.decide(c2, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	policy_hooks_leave(c2, "a");
	policy_lang_hooks.decide(c2, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_DENY);
	assert_int_equal(r.reason, POLICY_R_BUDGET);
	{
		uint64_t left;
		double tok[2];

		policy_hooks_levels(c2, "a", &left, tok);
		assert_int_equal(left, 0);
		assert_true(tok[0] < 0 && tok[1] < 0);
		policy_hooks_levels(c2, "b", &left, tok);
		assert_true(left == POLICY_UNLIMITED);
	}
	policy_lang_hooks.free(c2);
}

/* Rate levels as decide sees them: a full bucket, then one fewer each. */
static void
test_quota_levels(void **state)
{
	static const char text[] =
	    "agent \"a\" { allow artifact:read\n rate read 3/min }\n";
	struct policy *p = NULL;
	struct policy_quota *q;
	struct policy_request req;
	struct policy_result res;
	uint64_t left, now = 1000000000ull;
	double tok[2];
	char err[256];

	assert_int_equal(
	    policy_compile_text("t", text, strlen(text), &p, err, sizeof(err)),
	    POLICY_OK);
	q = policy_quota_new(p);
	policy_quota_levels(q, 0, now, &left, tok);
	assert_true(left == POLICY_UNLIMITED);
	assert_true(tok[0] == 3.0 && tok[1] < 0);
	memset(&req, 0, sizeof(req));
	req.principal = "a";
	req.principal_len = 1;
	req.cap = CAP_ARTIFACT_READ;
	policy_decide(p, q, now, &req, &res);
	assert_true(res.allow);
	policy_quota_levels(q, 0, now, &left, tok);
	assert_true(tok[0] == 2.0);
	policy_decide(p, q, now, &req, &res);
	policy_decide(p, q, now, &req, &res);
	policy_quota_levels(q, 0, now, &left, tok);
	assert_true(tok[0] == 0.0);
	policy_decide(p, q, now, &req, &res);
	assert_false(res.allow);
	/* twenty seconds later, one token is back */
	policy_quota_levels(q, 0, now + 20000000000ull, &left, tok);
	assert_true(tok[0] == 1.0);
	policy_quota_free(q);
	policy_free(p);
}

/* ---- the differential test ------------------------------------------ */

static uint64_t
rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *const execs[] = { "node", "pnpm", "sh", "python3" };
static const char *const hosts[] = { "api.github.com", "*.npmjs.org",
	"*.github.com", "example.com", "10.0.0.1" };
static const char *const targets[] = { "node", "pnpm", "sh", "python3",
	"api.github.com", "api.github.com:443", "api.github.com:80",
	"a.npmjs.org:443", "npmjs.org", "x.github.com:8443", "example.com:443",
	"10.0.0.1:443", "" };

static void
caps_text(uint64_t *s, char *buf, size_t len)
{
	size_t n = 0;
	int k = 1 + rnd(s) % 3, i;

	for (i = 0; i < k; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : "",
		    cap_name(rnd(s) % CAP_COUNT));
}

/* A random, valid policy of nroles roles and nagents agents. */
static size_t
random_policy(uint64_t *s, char *buf, size_t len, int nroles, int nagents)
{
	size_t n = 0;
	char caps[256];
	int i, j, k;

	for (i = 0; i < nroles; i++) {
		n += snprintf(buf + n, len - n, "role r%d", i);
		/* parents only among earlier roles: acyclic */
		for (j = 0, k = 0; i > 0 && j < 2; j++)
			if (rnd(s) % 2)
				n += snprintf(buf + n, len - n, "%s r%d",
				    k++ ? "," : " :", (int)(rnd(s) % i));
		n += snprintf(buf + n, len - n, " {\n");
		for (j = 0; j < 3; j++) {
			caps_text(s, caps, sizeof(caps));
			switch (rnd(s) % 6) {
			case 5:
				n += snprintf(buf + n, len - n,
				    "secret \"%s\"\n", execs[rnd(s) % 4]);
				break;
			case 0:
			case 1:
				n += snprintf(
				    buf + n, len - n, "allow %s\n", caps);
				break;
			case 2:
				n += snprintf(
				    buf + n, len - n, "deny %s\n", caps);
				break;
			case 3:
				n += snprintf(buf + n, len - n, "exec \"%s\"\n",
				    execs[rnd(s) % 4]);
				break;
			default:
				n += snprintf(buf + n, len - n,
				    "egress \"%s\":%s\n", hosts[rnd(s) % 5],
				    rnd(s) % 2 ? "443" : "*");
				break;
			}
		}
		n += snprintf(buf + n, len - n, "}\n");
	}
	for (i = 0; i < nagents; i++) {
		n += snprintf(buf + n, len - n, "agent \"a%d\"", i);
		if (nroles > 0)
			n += snprintf(
			    buf + n, len - n, " : r%d", (int)(rnd(s) % nroles));
		caps_text(s, caps, sizeof(caps));
		n += snprintf(buf + n, len - n, " { %s %s }\n",
		    rnd(s) % 3 ? "allow" : "deny", caps);
	}
	for (i = 0; i < 2; i++) {
		caps_text(s, caps, sizeof(caps));
		switch (rnd(s) % 3) {
		case 0:
			n += snprintf(
			    buf + n, len - n, "deny %s for all\n", caps);
			break;
		case 1:
			n += snprintf(buf + n, len - n,
			    "deny %s for agent \"a%d\"\n", caps,
			    (int)(rnd(s) % (nagents + 1)));
			break;
		default:
			if (nroles > 0)
				n += snprintf(buf + n, len - n,
				    "deny %s for role r%d\n", caps,
				    (int)(rnd(s) % nroles));
			break;
		}
	}
	return n;
}

static void
test_differential(void **state)
{
	static char buf[1 << 16];
	struct lang_file *f;
	struct policy *p;
	struct policy_request req;
	struct policy_result a, b;
	uint64_t s = 0x9e3779b97f4a7c15ull;
	char name[16];
	size_t len, t;
	int iter, i, cap, checked = 0, allowed = 0;

	for (iter = 0; iter < 300; iter++) {
		len = random_policy(
		    &s, buf, sizeof(buf), rnd(&s) % 8, 1 + rnd(&s) % 8);
		f = NULL;
		p = NULL;
		assert_int_equal(lang_parse("r", buf, len, &f), LANG_OK);
		assert_int_equal(lang_check(f), LANG_OK);
		assert_int_equal(policy_compile(f, &p), POLICY_OK);
		for (i = 0; i < 9; i++)
			for (cap = 0; cap < CAP_COUNT; cap++)
				for (t = 0;
				     t < sizeof(targets) / sizeof(targets[0]);
				     t++) {
					if (t > 0 && cap != CAP_EXEC &&
					    cap != CAP_EGRESS &&
					    cap != CAP_SECRET_READ)
						break;
					snprintf(name, sizeof(name), "a%d", i);
					memset(&req, 0, sizeof(req));
					req.principal = name;
					req.principal_len = strlen(name);
					req.cap = cap;
					req.target = targets[t];
					req.target_len = strlen(targets[t]);
					policy_decide(p, NULL, 0, &req, &a);
					policy_ref_decide(f, &req, &b);
					if (a.allow != b.allow ||
					    a.rule != b.rule ||
					    a.reason != b.reason)
						fail_msg("differ: %s %s '%s': "
						         "%d/%u/%d vs "
						         "%d/%u/%d\n%s",
						    name, cap_name(cap),
						    targets[t], a.allow, a.rule,
						    a.reason, b.allow, b.rule,
						    b.reason, buf);
					checked++;
					allowed += a.allow;
				}
		policy_free(p);
		lang_free(f);
	}
	/* the generator must exercise both answers */
	assert_true(allowed > 1000);
	assert_true(checked - allowed > 1000);
}

static void
test_large(void **state)
{
	size_t cap = 40u << 20, n = 0;
	char *buf = malloc(cap);
	struct policy *p = NULL;
	char err[256];
	int i;

	assert_non_null(buf);
	for (i = 0; i < 1000; i++)
		n += snprintf(buf + n, cap - n,
		    "role r%d { allow %s\n rate read 100/min }\n", i,
		    cap_name(i % CAP_COUNT));
	for (i = 0; i < 20000; i++)
		n += snprintf(buf + n, cap - n, "agent \"agent-%d\" : r%d\n", i,
		    i % 1000);
	assert_int_equal(
	    policy_compile_text("big", buf, n, &p, err, sizeof(err)),
	    POLICY_OK);
	assert_int_equal(p->npr, 20000);
	assert_true(policy_find(p, "agent-19999", 11) >= 0);
	assert_int_equal(policy_find(p, "agent-20000", 11), -1);
	policy_free(p);
	free(buf);
}

/* Principal names of every length up to 48 are found, each looked up
 * from a buffer of exactly its size (AddressSanitizer sees any read
 * past it: the name hash once read up to 7 bytes too far). */
static void
test_names_of_every_length(void **state)
{
	char text[8192], name[49];
	struct policy *p = NULL;
	size_t off = 0, n;
	char err[256], *copy;

	(void)state;
	for (n = 1; n <= 48; n++) {
		memset(name, 'a' + (char)(n % 26), n);
		name[n] = '\0';
		off += (size_t)snprintf(text + off, sizeof(text) - off,
		    "agent \"%s\" { allow sandbox:read }\n", name);
	}
	assert_int_equal(
	    policy_compile_text("len.policy", text, off, &p, err, sizeof(err)),
	    POLICY_OK);
	for (n = 1; n <= 48; n++) {
		assert_non_null(copy = malloc(n));
		memset(copy, 'a' + (char)(n % 26), n);
		assert_true(policy_find(p, copy, n) >= 0);
		copy[n - 1] ^= 1;
		assert_int_equal(policy_find(p, copy, n), -1);
		free(copy);
	}
	policy_free(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names_of_every_length),
		cmocka_unit_test_setup_teardown(
		    test_default_deny, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_deny_overrides, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_inheritance_limits, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_isolation, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_exec_allowlist, setup, teardown),
		cmocka_unit_test_setup_teardown(test_egress, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_egress_ranges, setup, teardown),
		cmocka_unit_test(test_addr_range_parse),
		cmocka_unit_test_setup_teardown(
		    test_egress_udp, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_egress_v6, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_decision_spends, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_budget_and_cost, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_concurrency, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_bad_requests, setup, teardown),
		cmocka_unit_test(test_hash_and_compile_text),
		cmocka_unit_test(test_hooks),
		cmocka_unit_test(test_hooks_quota),
		cmocka_unit_test(test_quota_levels),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_large),
		cmocka_unit_test_setup_teardown(test_expose, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_expose_link, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

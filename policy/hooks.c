/*
 * Glue between the policy process (host/proc_policy.c) and the compiler.
 * The only place in policy/ that reads a clock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/egress/egress.h"
#include "host/egress/inject.h"
#include "host/grant.h"
#include "host/msg.h"
#include "policy/policy.h"
#include "policy/policy_hooks.h"

struct compiled {
	struct policy *p;
	struct policy_quota *q;
};

static int
hook_compile(const char *text, size_t len, void **out, char *err, size_t errlen)
{
	struct compiled *c;
	int rc;

	*out = NULL;
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		if (errlen > 0)
			strlcpy(err, "out of memory", errlen);
		return -1;
	}
	rc = policy_compile_text("policy", text, len, &c->p, err, errlen);
	if (rc != POLICY_OK) {
		free(c);
		return -1;
	}
	if ((c->q = policy_quota_new(c->p)) == NULL) {
		policy_free(c->p);
		free(c);
		if (errlen > 0)
			strlcpy(err, "out of memory", errlen);
		return -1;
	}
	*out = c;
	return 0;
}

/* Whether the principal's `secret` list names this secret. */
static int
secret_listed(
    const struct policy *p, const struct policy_principal *pr, const char *name)
{
	uint32_t i;

	for (i = 0; i < pr->nsecret; i++)
		if (strcmp(p->secrets[pr->secret_off + i].name, name) == 0)
			return 1;
	return 0;
}

/*
 * An egress grant also carries, under its MAC, whether the principal's
 * entries for this destination allow plain http or non-public addresses:
 * the target hash is over egress_grant_target()'s string, which the
 * egress process recomputes (host/egress/egress.h). Any matching entry
 * that allows it is enough.
 */
static void
egress_bind_flags(const struct policy *p, int principal,
    const struct msg_policy_decide *q, struct msg_policy_decision *r)
{
	const struct policy_principal *pr;
	const struct policy_egress *e;
	char host[EGRESS_HOST_MAX + 1], t[EGRESS_GRANT_TARGET_MAX];
	char ti[EGRESS_INJECT_TARGET_MAX];
	const char *colon;
	const struct policy_egress *inj = NULL;
	int http = 0, priv = 0, udp = 0;
	unsigned long port;
	uint32_t i;
	size_t hl, tl = q->target_len;
	char *end;

	if (principal < 0 || (uint32_t)principal >= p->npr)
		return;
	/* A guest's UDP socket asks for "host:port/udp" (docs/egress.md). */
	if (tl > 4 && memcmp(q->target + tl - 4, "/udp", 4) == 0) {
		udp = 1;
		tl -= 4;
	}
	colon = memrchr(q->target, ':', tl);
	if (colon == NULL)
		return;
	hl = (size_t)(colon - q->target);
	if (hl == 0 || hl > EGRESS_HOST_MAX || tl - hl - 1 == 0 ||
	    tl - hl - 1 > 5)
		return;
	memcpy(host, q->target, hl);
	host[hl] = '\0';
	{
		char num[6];

		memcpy(num, colon + 1, tl - hl - 1);
		num[tl - hl - 1] = '\0';
		port = strtoul(num, &end, 10);
		if (*end != '\0' || port == 0 || port > 65535)
			return;
	}
	pr = &p->pr[principal];
	for (i = 0; i < pr->negress; i++) {
		e = &p->egress[pr->egress_off + i];
		if (!policy_egress_match_proto(
		        e->host, e->port, e->udp, q->target, q->target_len))
			continue;
		http |= e->http;
		priv |= e->private_;
		/* The first matching entry that injects decides which
		 * secret, and only where the principal may use it. */
		if (inj == NULL && (q->flags & DECIDE_CONNECT) &&
		    e->inject_secret != NULL &&
		    secret_listed(p, pr, e->inject_secret))
			inj = e;
	}
	if (inj != NULL &&
	    egress_grant_target_inject(host, (uint16_t)port, http, priv,
	        inj->inject_secret, inj->inject_header, ti, sizeof(ti)) == 0) {
		grant_target_hash(ti, strlen(ti), r->grant.target);
		strlcpy(r->inject_secret, inj->inject_secret,
		    sizeof(r->inject_secret));
		strlcpy(r->inject_header, inj->inject_header,
		    sizeof(r->inject_header));
		return;
	}
	if ((http || priv) &&
	    egress_grant_target_proto(
	        host, (uint16_t)port, udp, http, priv, t, sizeof(t)) == 0)
		grant_target_hash(t, strlen(t), r->grant.target);
}

/* A secret:read grant for a secret one of the principal's egress
 * entries injects says so: the vmm gives the run a placeholder. */
static void
secret_bind_egress(const struct policy *p, int principal,
    const struct msg_policy_decide *q, struct msg_policy_decision *r)
{
	const struct policy_principal *pr;
	const struct policy_egress *e;
	uint32_t i;

	if (principal < 0 || (uint32_t)principal >= p->npr)
		return;
	pr = &p->pr[principal];
	for (i = 0; i < pr->negress; i++) {
		e = &p->egress[pr->egress_off + i];
		if (e->inject_secret != NULL &&
		    strlen(e->inject_secret) == q->target_len &&
		    memcmp(e->inject_secret, q->target, q->target_len) == 0) {
			r->grant.flags |= GRANT_F_SECRET_EGRESS;
			return;
		}
	}
}

static uint64_t
now_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* A port's decimal digits, 1 to 65535, no leading 0; else 0. */
static uint16_t
port_target(const char *t, size_t len)
{
	unsigned v = 0;

	if (len == 0 || len > 5 || t[0] == '0')
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (t[i] < '0' || t[i] > '9')
			return 0;
		v = v * 10 + (unsigned)(t[i] - '0');
	}
	return v <= 65535 ? (uint16_t)v : 0;
}

static void
hook_decide(void *compiled, const struct msg_policy_decide *q,
    struct msg_policy_decision *r)
{
	struct compiled *c = compiled;
	struct policy_request req;
	struct policy_result res;
	size_t plen;
	int i;

	r->grant.decision = GRANT_DENY;
	r->rule = 0;
	r->line = 0;
	r->retry_after_ms = 0;
	r->reason = POLICY_R_REQUEST;
	r->flags = 0;
	r->link_ms = 0;
	r->grant.mem_max = r->grant.timeout_ms = r->grant.output_max = 0;
	r->grant.count_max = 0;
	r->grant.procs_max = 0;
	r->grant.flags = r->grant.egress_kib = 0;
	r->grant.egress_budget_kib = r->grant.egress_budget_s = 0;
	if (c == NULL || q->cap >= CAP_COUNT ||
	    q->target_len > sizeof(q->target))
		return;
	plen = strnlen(q->principal, sizeof(q->principal));
	if (plen == 0 || plen == sizeof(q->principal))
		return;
	r->grant.cap = q->cap;
	memset(r->grant.principal, 0, sizeof(r->grant.principal));
	memcpy(r->grant.principal, q->principal, plen);
	/* A capability the token lacks is not asked of the policy, so it
	 * spends no quota. */
	if ((q->token_caps & CAP_BIT(q->cap)) == 0) {
		r->reason = POLICY_R_TOKEN;
		return;
	}
	memset(&req, 0, sizeof(req));
	req.principal = q->principal;
	req.principal_len = plen;
	req.cap = q->cap;
	req.target = q->target;
	req.target_len = q->target_len;
	req.no_budget = (q->flags & DECIDE_NO_BUDGET) != 0;
	if ((q->flags & DECIDE_PORT) &&
	    (req.port = port_target(q->target, q->target_len)) == 0)
		return;
	req.link = (q->flags & DECIDE_LINK) != 0;
	if (req.link && req.port == 0)
		return;
	/* The slot first, so a refused operation spends no rate or budget. */
	i = policy_find(c->p, q->principal, plen);
	if ((q->flags & DECIDE_ENTER) && !(q->flags & DECIDE_DRY_RUN) &&
	    policy_quota_enter(c->q, i) == POLICY_E_BUSY) {
		r->reason = POLICY_R_BUSY;
		r->retry_after_ms = 1000;
		return;
	}
	policy_decide(c->p, (q->flags & DECIDE_DRY_RUN) ? NULL : c->q, now_ns(),
	    &req, &res);
	if ((q->flags & DECIDE_ENTER) && !(q->flags & DECIDE_DRY_RUN) &&
	    !res.allow)
		policy_quota_leave(c->q, i);
	r->rule = res.rule;
	r->line = res.line;
	r->retry_after_ms = res.retry_after_ms;
	r->reason = res.reason;
	if (res.limits != NULL && res.limits->lock_writes &&
	    (c->p->writes & CAP_BIT(q->cap)))
		r->flags |= DECISION_LOCK_WRITES;
	if (res.limits != NULL) {
		r->grant.mem_max = res.limits->mem_max;
		r->grant.timeout_ms = res.limits->timeout_ms;
		r->grant.output_max = res.limits->output_max;
		if (q->cap == CAP_SANDBOX_WRITE)
			r->grant.count_max = res.limits->sandboxes;
		r->grant.procs_max = res.limits->procs_max;
		/* KiB, rounded up (the language's bound keeps it in a
		 * uint32). */
		r->grant.egress_kib =
		    (uint32_t)((res.limits->egress_max + 1023) / 1024);
		r->grant.egress_budget_kib =
		    (uint32_t)((res.limits->egress_budget + 1023) / 1024);
		r->grant.egress_budget_s =
		    (uint32_t)(res.limits->egress_budget_ms / 1000);
		if (res.limits->isolation == POLICY_ISO_KVM)
			r->grant.flags |= GRANT_F_KVM;
	}
	r->grant.decision = res.allow ? GRANT_ALLOW : GRANT_DENY;
	r->link_ms = res.allow ? res.link_ms : 0;
	if (res.allow && q->cap == CAP_EGRESS)
		egress_bind_flags(c->p, res.principal, q, r);
	if (res.allow && q->cap == CAP_SECRET_READ)
		secret_bind_egress(c->p, res.principal, q, r);
}

static void
hook_free(void *compiled)
{
	struct compiled *c = compiled;

	if (c == NULL)
		return;
	policy_quota_free(c->q);
	policy_free(c->p);
	free(c);
}

const struct policy *
policy_hooks_policy(void *compiled)
{
	return compiled != NULL ? ((struct compiled *)compiled)->p : NULL;
}

struct policy_quota *
policy_hooks_quota(void *compiled)
{
	return compiled != NULL ? ((struct compiled *)compiled)->q : NULL;
}

void
policy_hooks_levels(void *compiled, const char *principal,
    uint64_t *budget_left, double tokens[2])
{
	struct compiled *c = compiled;

	*budget_left = POLICY_UNLIMITED;
	tokens[0] = tokens[1] = -1;
	if (c != NULL)
		policy_quota_levels(c->q,
		    policy_find(c->p, principal, strlen(principal)), now_ns(),
		    budget_left, tokens);
}

const struct policy_limits *
policy_hooks_limits(void *compiled, const char *principal)
{
	struct compiled *c = compiled;
	int i;

	if (c == NULL ||
	    (i = policy_find(c->p, principal, strlen(principal))) < 0)
		return NULL;
	return &c->p->pr[i].lim;
}

int
policy_hooks_enter(void *compiled, const char *principal)
{
	struct compiled *c = compiled;

	if (c == NULL)
		return POLICY_E_NOTFOUND;
	return policy_quota_enter(
	    c->q, policy_find(c->p, principal, strlen(principal)));
}

void
policy_hooks_leave(void *compiled, const char *principal)
{
	struct compiled *c = compiled;

	if (c != NULL)
		policy_quota_leave(
		    c->q, policy_find(c->p, principal, strlen(principal)));
}

const struct policy_hooks policy_lang_hooks = { hook_compile, hook_decide,
	hook_free };

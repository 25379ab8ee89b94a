/*
 * The evaluator and the quota engine. policy_decide is the hot path: a
 * hash lookup, a bit test, and for exec and egress a short list scan.
 * Quotas: rates are GCRA (the token bucket as one "theoretical arrival
 * time" per bucket), budgets a counter, concurrency a counter the caller
 * moves with enter and leave.
 */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdlib.h>
#include <string.h>

#include "host/egress/egress.h"
#include "policy/policy.h"
#include "policy/policy_int.h"

struct policy_quota {
	const struct policy *p;
	uint32_t n;
	struct pq {
		uint64_t tat[2]; /* read, write: ns */
		uint64_t spent;
		uint32_t active;
	} * v;
};

/* memcmp for short names, inline and in overlapping loads: a library
 * call costs more than the comparison. */
static inline int
same(const char *a, const char *b, size_t len)
{
	uint64_t x, y, u, v;

	if (len >= 8) {
		while (len > 16) {
			memcpy(&x, a, 8);
			memcpy(&y, b, 8);
			if (x != y)
				return 0;
			a += 8;
			b += 8;
			len -= 8;
		}
		memcpy(&x, a, 8);
		memcpy(&y, b, 8);
		memcpy(&u, a + len - 8, 8);
		memcpy(&v, b + len - 8, 8);
		return ((x ^ y) | (u ^ v)) == 0;
	}
	while (len > 0) {
		if (*a++ != *b++)
			return 0;
		len--;
	}
	return 1;
}

int
policy_find(const struct policy *p, const char *name, size_t len)
{
	uint32_t h = policy_hash_name(name, len), k, i;
	const struct policy_principal *pr;
	uint64_t e;

	for (k = h & p->mask; (e = p->slot[k]) != 0; k = (k + 1) & p->mask) {
		if ((uint32_t)(e >> 32) != h)
			continue;
		i = (uint32_t)e - 1;
		pr = &p->pr[i];
		if (pr->len == len && same(pr->name, name, len))
			return i;
	}
	return -1;
}

/* A port of 1 to 65535 in s[0..n), else 0. */
static unsigned long
parse_port(const char *s, size_t n)
{
	unsigned long v = 0;
	size_t i;

	if (n == 0 || n > 5)
		return 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return 0;
		v = v * 10 + (s[i] - '0');
	}
	return v <= 65535 ? v : 0;
}

/* Whether an entry's pattern may be an address or a range: ':' or '/'
 * in it, or digits and dots only. A cheap test that keeps names (most
 * entries) away from inet_pton. */
static int
addr_form(const char *s, size_t n)
{
	size_t i;

	if (memchr(s, ':', n) != NULL || memchr(s, '/', n) != NULL)
		return 1;
	for (i = 0; i < n; i++)
		if ((s[i] < '0' || s[i] > '9') && s[i] != '.')
			return 0;
	return n > 0;
}

/*
 * An address entry ("10.0.0.5", "fd00::1") or range ("10.1.0.0/16")
 * against a target's host, compared as addresses. A range never covers
 * a metadata address (169.254.169.254 and the others egress classifies
 * so): only an entry that names one exactly may reach it, as a fetch's
 * rule must (docs/egress.md). -1: the pattern is no address form after
 * all ("1.2.3"), and is matched as a name.
 */
static int
addr_match(const char *pattern, size_t plen, const char *host, size_t hlen)
{
	struct lang_addr_range r;
	struct sockaddr_storage ss;
	char h[INET6_ADDRSTRLEN];
	uint8_t a[16];
	int fam, rc;

	if ((rc = lang_addr_range_parse(pattern, plen, &r, NULL, 0)) != 1)
		return rc == 0 ? -1 : 0;
	if (hlen >= sizeof(h))
		return 0;
	memcpy(h, host, hlen);
	h[hlen] = '\0';
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, h, a) == 1) {
		fam = AF_INET;
		memcpy(&((struct sockaddr_in *)&ss)->sin_addr, a, 4);
	} else if (inet_pton(AF_INET6, h, a) == 1) {
		fam = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, a, 16);
	} else
		return 0;
	if (!lang_addr_range_has(&r, fam, a))
		return 0;
	ss.ss_family = (sa_family_t)fam;
	return memchr(pattern, '/', plen) == NULL ||
	    egress_addr_classify((struct sockaddr *)&ss, sizeof(ss)) !=
	    EGRESS_ADDR_METADATA;
}

/*
 * Whether a request target matches an egress entry (pattern, port; port
 * 0 is any). Targets: "host", "host:port", "host:*" (any port),
 * "[v6]" or "[v6]:port"; no port means 443. A bare IPv6 literal ("::1")
 * has no port. Address entries and ranges match address targets as
 * addresses.
 */
int
policy_egress_match(
    const char *pattern, uint16_t port, const char *target, size_t len)
{
	const char *host = target, *colon, *rb;
	size_t hlen = len, plen, slen;
	unsigned long tport = 443;
	int any = 0, m;

	if (len > 0 && target[0] == '[') {
		if ((rb = memchr(target, ']', len)) == NULL)
			return 0;
		host = target + 1;
		hlen = rb - host;
		if ((size_t)(rb - target) + 1 < len) {
			if (rb[1] != ':')
				return 0;
			tport = parse_port(rb + 2, len - (rb - target) - 2);
			if (tport == 0)
				return 0;
		}
	} else if ((colon = memchr(target, ':', len)) != NULL &&
	    memchr(colon + 1, ':', len - (colon - target) - 1) == NULL) {
		/* one colon: host:port, or host:* for any port (a guest's
		 * name query: docs/egress.md, "Names and connections") */
		hlen = colon - target;
		if (len - hlen - 1 == 1 && colon[1] == '*')
			any = 1;
		else if ((tport = parse_port(colon + 1, len - hlen - 1)) == 0)
			return 0;
	}
	if (hlen == 0 || (port != 0 && !any && tport != port))
		return 0;
	plen = strlen(pattern);
	if (addr_form(pattern, plen) &&
	    (m = addr_match(pattern, plen, host, hlen)) >= 0)
		return m;
	if (plen >= 2 && pattern[0] == '*' && pattern[1] == '.') {
		slen = plen - 1; /* ".suffix" */
		if (hlen <= slen)
			return 0;
		return strncasecmp(host + hlen - slen, pattern + 1, slen) == 0;
	}
	return hlen == plen && strncasecmp(host, pattern, plen) == 0;
}

int
policy_egress_match_proto(
    const char *pattern, uint16_t port, int udp, const char *target, size_t len)
{
	static const char sfx[] = "/udp";
	const size_t n = sizeof(sfx) - 1;

	if (len > n && memcmp(target + len - n, sfx, n) == 0)
		return udp &&
		    policy_egress_match(pattern, port, target, len - n);
	return policy_egress_match(pattern, port, target, len);
}

void
policy_decide_index(
    const struct policy *p, int i, int cap, struct policy_result *res)
{
	const struct policy_principal *pr = &p->pr[i];

	res->principal = i;
	res->limits = &pr->lim;
	res->rule = pr->rule[cap];
	res->line = pr->line[cap];
	if (pr->allow & CAP_BIT(cap)) {
		res->allow = 1;
		res->reason = POLICY_R_ALLOW;
	} else {
		res->allow = 0;
		res->reason = (pr->deny & CAP_BIT(cap)) ? POLICY_R_DENY
		                                        : POLICY_R_DEFAULT;
	}
}

static void
check_target(const struct policy *p, const struct policy_principal *pr,
    const struct policy_request *req, struct policy_result *res)
{
	uint32_t i, best = 0, line = 0;

	if (req->cap == CAP_EXEC || req->cap == CAP_SECRET_READ) {
		uint32_t n = req->cap == CAP_EXEC ? pr->nexec : pr->nsecret;
		/* A policy without secrets (or execs) has no list at all:
		 * no pointer is made into it. */
		const struct policy_exec *list = n == 0 ? NULL
		    : req->cap == CAP_EXEC ? &p->execs[pr->exec_off]
		                           : &p->secrets[pr->secret_off];

		for (i = 0; i < n; i++) {
			const struct policy_exec *e = &list[i];
			if ((best == 0 || e->rule < best) &&
			    strlen(e->name) == req->target_len &&
			    memcmp(e->name, req->target, req->target_len) ==
			        0) {
				best = e->rule;
				line = e->line;
			}
		}
	} else {
		for (i = 0; i < pr->negress; i++) {
			const struct policy_egress *e =
			    &p->egress[pr->egress_off + i];
			if ((best == 0 || e->rule < best) &&
			    policy_egress_match_proto(e->host, e->port, e->udp,
			        req->target, req->target_len)) {
				best = e->rule;
				line = e->line;
			}
		}
	}
	if (best == 0) {
		res->allow = 0;
		res->reason = POLICY_R_TARGET;
		res->rule = 0;
		res->line = 0;
	} else {
		res->rule = best;
		res->line = line;
	}
}

/* A guest's port: the lowest expose rule that names it (or '*'); none is
 * a refusal, as a target off its list is. Only sandbox:read reaches a
 * port: another capability with one is a malformed request. By a link,
 * only a rule that says "link" names it. */
static void
check_port(const struct policy *p, const struct policy_principal *pr,
    const struct policy_request *req, struct policy_result *res)
{
	uint32_t i, best = 0, line = 0;
	uint64_t link_ms = 0;

	if (req->cap != CAP_SANDBOX_READ) {
		res->allow = 0;
		res->reason = POLICY_R_REQUEST;
		res->rule = res->line = 0;
		return;
	}
	for (i = 0; i < pr->nexpose; i++) {
		const struct policy_expose *x = &p->expose[pr->expose_off + i];
		if ((best == 0 || x->rule < best) &&
		    (!req->link || x->link_ms != 0) &&
		    (x->port == 0 ||
		        (req->port >= x->port && req->port <= x->last))) {
			best = x->rule;
			line = x->line;
			link_ms = x->link_ms;
		}
	}
	if (best == 0) {
		res->allow = 0;
		res->reason = POLICY_R_TARGET;
		res->rule = res->line = 0;
	} else {
		res->rule = best;
		res->line = line;
		res->link_ms = req->link ? link_ms : 0;
	}
}

void
policy_decide(const struct policy *p, struct policy_quota *q, uint64_t now,
    const struct policy_request *req, struct policy_result *res)
{
	const struct policy_principal *pr;
	const struct policy_limits *l;
	struct pq *c;
	uint64_t tat, cost;
	int i, w;

	res->allow = 0;
	res->rule = res->line = 0;
	res->retry_after_ms = 0;
	res->link_ms = 0;
	res->limits = NULL;
	res->principal = -1;
	if (req->cap < 0 || req->cap >= CAP_COUNT || p == NULL) {
		res->reason = POLICY_R_REQUEST;
		return;
	}
	if ((i = policy_find(p, req->principal, req->principal_len)) < 0) {
		res->reason = POLICY_R_PRINCIPAL;
		return;
	}
	policy_decide_index(p, i, req->cap, res);
	if (!res->allow)
		return;
	pr = &p->pr[i];
	if (req->target_len > 0 &&
	    (req->cap == CAP_EXEC || req->cap == CAP_EGRESS ||
	        req->cap == CAP_SECRET_READ)) {
		check_target(p, pr, req, res);
		if (!res->allow)
			return;
	}
	if (req->port != 0) {
		check_port(p, pr, req, res);
		if (!res->allow)
			return;
	}
	if (q == NULL || (uint32_t)i >= q->n)
		return;
	l = &pr->lim;
	c = &q->v[i];
	w = (p->writes & CAP_BIT(req->cap)) ? 1 : 0;
	cost = l->cost[req->cap];
	if (req->no_budget)
		cost = 0;
	if (l->budget != POLICY_UNLIMITED && cost > 0 &&
	    (c->spent > l->budget || cost > l->budget - c->spent)) {
		res->allow = 0;
		res->reason = POLICY_R_BUDGET;
		return;
	}
	if (pr->gcra_t[w] != 0) {
		tat = c->tat[w] > now ? c->tat[w] : now;
		if (tat - now > pr->gcra_tau[w]) {
			res->allow = 0;
			res->reason = POLICY_R_RATE;
			res->retry_after_ms =
			    (tat - now - pr->gcra_tau[w] + 999999) / 1000000;
			return;
		}
		c->tat[w] = tat + pr->gcra_t[w];
	}
	c->spent += cost;
}

int
policy_decision_spends(
    const struct policy *p, int principal, int cap, int no_budget)
{
	const struct policy_principal *pr;
	int w;

	if (p == NULL || principal < 0 || (uint32_t)principal >= p->npr ||
	    cap < 0 || cap >= CAP_COUNT)
		return 1;
	pr = &p->pr[principal];
	w = (p->writes & CAP_BIT(cap)) ? 1 : 0;
	/* As policy_decide spends: a budget (an unlimited one is counted
	 * there, but nothing reads that count), then the rate. */
	if (pr->lim.budget != POLICY_UNLIMITED && !no_budget &&
	    pr->lim.cost[cap] > 0)
		return 1;
	return pr->gcra_t[w] != 0;
}

struct policy_quota *
policy_quota_new(const struct policy *p)
{
	struct policy_quota *q;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return NULL;
	if ((q->v = calloc(p->npr + 1, sizeof(*q->v))) == NULL) {
		free(q);
		return NULL;
	}
	q->p = p;
	q->n = p->npr;
	return q;
}

void
policy_quota_free(struct policy_quota *q)
{
	if (q == NULL)
		return;
	free(q->v);
	free(q);
}

int
policy_quota_enter(struct policy_quota *q, int i)
{
	uint32_t max;

	if (q == NULL || i < 0 || (uint32_t)i >= q->n)
		return POLICY_E_NOTFOUND;
	max = q->p->pr[i].lim.concurrent;
	if (max != 0 && q->v[i].active >= max)
		return POLICY_E_BUSY;
	q->v[i].active++;
	return POLICY_OK;
}

void
policy_quota_leave(struct policy_quota *q, int i)
{
	if (q != NULL && i >= 0 && (uint32_t)i < q->n && q->v[i].active > 0)
		q->v[i].active--;
}

void
policy_quota_leave_all(struct policy_quota *q)
{
	uint32_t i;

	if (q != NULL)
		for (i = 0; i < q->n; i++)
			q->v[i].active = 0;
}

void
policy_quota_levels(const struct policy_quota *q, int i, uint64_t now,
    uint64_t *budget_left, double tokens[2])
{
	const struct policy_principal *pr;
	uint64_t tat, used;
	int w;

	*budget_left = POLICY_UNLIMITED;
	tokens[0] = tokens[1] = -1;
	if (q == NULL || i < 0 || (uint32_t)i >= q->n)
		return;
	pr = &q->p->pr[i];
	if (pr->lim.budget != POLICY_UNLIMITED)
		*budget_left = q->v[i].spent >= pr->lim.budget
		    ? 0
		    : pr->lim.budget - q->v[i].spent;
	for (w = 0; w < 2; w++) {
		if (pr->gcra_t[w] == 0)
			continue;
		/* As decide would see it: requests allowed while the
		 * theoretical arrival time stays within the tolerance. */
		tat = q->v[i].tat[w] > now ? q->v[i].tat[w] : now;
		used = tat - now;
		tokens[w] = used > pr->gcra_tau[w]
		    ? 0
		    : (double)((pr->gcra_tau[w] - used) / pr->gcra_t[w] + 1);
	}
}

uint64_t
policy_quota_spent(const struct policy_quota *q, int i)
{
	if (q == NULL || i < 0 || (uint32_t)i >= q->n)
		return 0;
	return q->v[i].spent;
}

void
policy_quota_set_spent(struct policy_quota *q, int i, uint64_t spent)
{
	if (q != NULL && i >= 0 && (uint32_t)i < q->n)
		q->v[i].spent = spent;
}

void
policy_quota_carry(struct policy_quota *to, const struct policy_quota *from)
{
	const struct policy_principal *pr;
	uint32_t i;
	int j;

	if (to == NULL || from == NULL)
		return;
	for (i = 0; i < to->n; i++) {
		pr = &to->p->pr[i];
		j = policy_find(from->p, pr->name, strlen(pr->name));
		if (j >= 0 && (uint32_t)j < from->n)
			to->v[i] = from->v[j];
	}
}

int
policy_exec_allowed(
    const struct policy *p, const char *principal, const char *name)
{
	struct policy_request req;
	struct policy_result res;

	memset(&req, 0, sizeof(req));
	req.principal = principal;
	req.principal_len = strlen(principal);
	req.cap = CAP_EXEC;
	req.target = name;
	req.target_len = strlen(name);
	if (req.target_len == 0)
		return 0;
	policy_decide(p, NULL, 0, &req, &res);
	return res.allow;
}

int
policy_egress_export(const struct policy *p, const char *principal,
    struct egress_rule *out, size_t max, size_t *n)
{
	const struct policy_principal *pr;
	const struct policy_egress *e;
	uint32_t i;
	int k;

	*n = 0;
	if ((k = policy_find(p, principal, strlen(principal))) < 0)
		return POLICY_E_NOTFOUND;
	pr = &p->pr[k];
	if (!(pr->allow & CAP_BIT(CAP_EGRESS)))
		return POLICY_OK;
	*n = pr->negress;
	if (pr->negress > max)
		return POLICY_E_SPACE;
	for (i = 0; i < pr->negress; i++) {
		e = &p->egress[pr->egress_off + i];
		memset(&out[i], 0, sizeof(out[i]));
		strlcpy(out[i].host, e->host, sizeof(out[i].host));
		out[i].port = e->port;
		out[i].allow_http = e->http;
		out[i].allow_private = e->private_;
	}
	return POLICY_OK;
}

const struct policy_limits *
policy_limits_of(const struct policy *p, const char *principal)
{
	int k;

	if ((k = policy_find(p, principal, strlen(principal))) < 0)
		return NULL;
	return &p->pr[k].lim;
}

const uint8_t *
policy_hash(const struct policy *p)
{
	return p->hash;
}

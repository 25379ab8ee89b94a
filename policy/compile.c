/*
 * The compiler: a checked tree to decision tables. For every agent it
 * folds the agent's inheritance closure (nearest first) and the top-level
 * denies that apply into one row: effective rights, the deciding rule per
 * capability (the lowest rule id, so the reference evaluator can agree),
 * limits (the nearest setting wins) and the exec and egress lists.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "policy/policy.h"
#include "policy/policy_int.h"

static const char *const errs[] = {
	"out of memory",
	"bad argument",
	"output array too small",
	"no such principal",
	"concurrency limit reached",
};

const char *
policy_strerror(int err)
{
	if (err == POLICY_OK)
		return "success";
	if (err >= POLICY_E_NOMEM &&
	    err < POLICY_E_NOMEM + (int)(sizeof(errs) / sizeof(errs[0])))
		return errs[err - POLICY_E_NOMEM];
	return "unknown error";
}

static const char *const reasons[] = {
	[POLICY_R_ALLOW] = "allowed",
	[POLICY_R_DEFAULT] = "no rule allows it (default deny)",
	[POLICY_R_PRINCIPAL] = "unknown principal",
	[POLICY_R_DENY] = "denied by rule",
	[POLICY_R_TARGET] = "target not on the allowlist",
	[POLICY_R_RATE] = "rate limited",
	[POLICY_R_BUDGET] = "budget spent",
	[POLICY_R_REQUEST] = "malformed request",
	[POLICY_R_TOKEN] = "the token does not carry it",
	[POLICY_R_BUSY] = "too many operations at once",
	[POLICY_R_RESTORING] = "its spent budget is still being restored",
};

static const char *const keywords[] = {
	[POLICY_R_ALLOW] = "allowed",
	[POLICY_R_DEFAULT] = "default deny",
	[POLICY_R_PRINCIPAL] = "unknown principal",
	[POLICY_R_DENY] = "deny rule",
	[POLICY_R_TARGET] = "target not allowed",
	[POLICY_R_RATE] = "rate",
	[POLICY_R_BUDGET] = "budget",
	[POLICY_R_REQUEST] = "malformed request",
	[POLICY_R_TOKEN] = "token caps",
	[POLICY_R_BUSY] = "concurrent",
	[POLICY_R_RESTORING] = "budget restoring",
};

const char *
policy_reason_keyword(enum policy_reason r)
{
	if ((size_t)r < sizeof(keywords) / sizeof(keywords[0]))
		return keywords[r];
	return "?";
}

const char *
policy_reason_name(enum policy_reason r)
{
	if ((size_t)r < sizeof(reasons) / sizeof(reasons[0]))
		return reasons[r];
	return "?";
}

/*
 * The hash of a principal name for the lookup table. Names are short, so
 * it reads them in at most a few overlapping loads (the first and last
 * eight or four bytes) instead of looping byte by byte: fewer branches
 * that depend on the length, which mispredict on mixed-length names.
 */
static inline uint64_t
load8(const char *s)
{
	uint64_t w;
	memcpy(&w, s, 8);
	return w;
}

static inline uint64_t
load4(const char *s)
{
	uint32_t w;
	memcpy(&w, s, 4);
	return w;
}

static inline uint64_t
mix(uint64_t a, uint64_t b)
{
	unsigned __int128 r = (unsigned __int128)(a ^ 0xa0761d6478bd642full) *
	    (b ^ 0xe7037ed1a0b428dbull);
	return (uint64_t)r ^ (uint64_t)(r >> 64);
}

uint32_t
policy_hash_name(const char *s, size_t len)
{
	uint64_t a, b, seed = len;

	if (len > 16) {
		const char *end = s + len;

		while (len > 16) {
			seed = mix(load8(s) ^ seed, load8(s + 8));
			s += 16;
			len -= 16;
		}
		/* The last 16 bytes, overlapping what the loop read: 1 to
		 * 16 are left, too few for two loads of their own. */
		a = load8(end - 16);
		b = load8(end - 8);
	} else if (len >= 8) {
		a = load8(s);
		b = load8(s + len - 8);
	} else if (len >= 4) {
		a = load4(s);
		b = load4(s + len - 4);
	} else if (len > 0) {
		a = ((uint64_t)(unsigned char)s[0] << 16) |
		    ((uint64_t)(unsigned char)s[len >> 1] << 8) |
		    (unsigned char)s[len - 1];
		b = 0;
	} else
		a = b = 0;
	return (uint32_t)mix(a ^ seed, b ^ 0x8ebc6af09c88c6e3ull);
}

static void
set_rule(uint32_t *rule, uint32_t *line, const struct lang_item *it)
{
	if (*rule == 0 || it->rule < *rule) {
		*rule = it->rule;
		*line = it->loc.line;
	}
}

/* isolation's slot in fold_stmt's set[64], past the costs' (32 + cap) */
#define SET_ISOLATION 63
#define SET_EGRESS_BYTES 62 /* `egress bytes`'s, the same way */
#define SET_EGRESS_BUDGET 61 /* and `egress budget`'s */
_Static_assert(32 + CAP_COUNT <= SET_EGRESS_BUDGET, "set[] slots overlap");

static void
fold_stmt(struct policy_principal *pr, const struct lang_stmt *s,
    uint32_t *arule, uint32_t *aline, uint32_t *drule, uint32_t *dline,
    uint8_t *set)
{
	struct policy_limits *l = &pr->lim;
	size_t i;

	switch (s->kind) {
	case LANG_S_ALLOW:
		for (i = 0; i < s->nitems; i++) {
			pr->allow |= CAP_BIT(s->items[i].cap);
			set_rule(&arule[s->items[i].cap],
			    &aline[s->items[i].cap], &s->items[i]);
		}
		return;
	case LANG_S_DENY:
		for (i = 0; i < s->nitems; i++) {
			pr->deny |= CAP_BIT(s->items[i].cap);
			set_rule(&drule[s->items[i].cap],
			    &dline[s->items[i].cap], &s->items[i]);
		}
		return;
	case LANG_S_EXEC:
	case LANG_S_EGRESS:
	case LANG_S_SECRET: {
		int c = s->kind == LANG_S_EXEC ? CAP_EXEC
		    : s->kind == LANG_S_SECRET ? CAP_SECRET_READ
		                               : CAP_EGRESS;
		pr->allow |= CAP_BIT(c);
		for (i = 0; i < s->nitems; i++)
			set_rule(&arule[c], &aline[c], &s->items[i]);
		return;
	}
	case LANG_S_LOCK:
		l->lock_writes = 1;
		return;
	case LANG_S_ISOLATION:
		/* its own slot: kind * 2 would meet the costs' at 32 */
		if (set[SET_ISOLATION]++)
			return;
		l->isolation =
		    s->value == LANG_ISO_KVM ? POLICY_ISO_KVM : POLICY_ISO_ANY;
		return;
	case LANG_S_EGRESS_BYTES:
		if (set[SET_EGRESS_BYTES]++)
			return;
		l->egress_max = s->value;
		return;
	case LANG_S_EGRESS_BUDGET:
		if (set[SET_EGRESS_BUDGET]++)
			return;
		l->egress_budget = s->value;
		l->egress_budget_ms = s->period_ms;
		return;
	case LANG_S_RATE:
		if (set[LANG_S_RATE * 2 + s->which]++)
			return;
		l->rate_count[s->which] = s->value;
		l->rate_period_ms[s->which] = s->period_ms;
		return;
	case LANG_S_COST:
		/* costs are per capability; keyed after the other kinds */
		if (set[32 + s->which]++)
			return;
		l->cost[s->which] = s->value;
		return;
	default:
		break;
	}
	if (set[s->kind * 2]++)
		return;
	switch (s->kind) {
	case LANG_S_CONCURRENT:
		l->concurrent = s->value;
		break;
	case LANG_S_BUDGET:
		l->budget = s->value;
		break;
	case LANG_S_MEMORY:
		l->mem_max = s->value;
		break;
	case LANG_S_TIMEOUT:
		l->timeout_ms = s->value;
		break;
	case LANG_S_OUTPUT:
		l->output_max = s->value;
		break;
	case LANG_S_SANDBOXES:
		l->sandboxes = (uint32_t)s->value;
		break;
	case LANG_S_CONTEXTS:
		l->contexts = (uint32_t)s->value;
		break;
	case LANG_S_PAUSE:
		l->pause_ms = s->value;
		break;
	case LANG_S_SNAPSHOTS:
		l->snapshots_max = s->value;
		break;
	case LANG_S_PROCESSES:
		l->procs_max = (uint32_t)s->value;
		break;
	default:
		break;
	}
}

static int
cmp_name(const void *a, const void *b)
{
	const struct lang_decl *const *x = a, *const *y = b;
	return strcmp((*x)->name, (*y)->name);
}

struct build {
	const struct lang_file *f;
	struct policy *p;
	uint32_t *clos, *mark, stamp;
	size_t cexec, cegress, csecret, cexpose;
};

static int
add_lists(struct build *b, struct policy_principal *pr, const uint32_t *clos,
    size_t n)
{
	struct policy *p = b->p;
	const struct lang_stmt *s;
	size_t i, j;
	void *nv;

	pr->exec_off = p->nexecs;
	pr->egress_off = p->negress;
	pr->secret_off = p->nsecrets;
	pr->expose_off = p->nexpose;
	for (i = 0; i < n; i++)
		for (s = b->f->byindex[clos[i]]->stmts; s != NULL; s = s->next)
			for (j = 0; j < s->nitems; j++) {
				const struct lang_item *it = &s->items[j];
				if (s->kind == LANG_S_EXEC) {
					/* duplicates stay: the evaluator takes
					 * the lowest rule among matches */
					if (p->nexecs == b->cexec) {
						b->cexec = b->cexec * 2 + 16;
						if ((nv = reallocarray(p->execs,
						         b->cexec,
						         sizeof(*p->execs))) ==
						    NULL)
							return -1;
						p->execs = nv;
					}
					p->execs[p->nexecs].name = it->str;
					p->execs[p->nexecs].rule = it->rule;
					p->execs[p->nexecs++].line =
					    it->loc.line;
				} else if (s->kind == LANG_S_SECRET) {
					if (p->nsecrets == b->csecret) {
						b->csecret =
						    b->csecret * 2 + 16;
						if ((nv = reallocarray(
						         p->secrets, b->csecret,
						         sizeof(
						             *p->secrets))) ==
						    NULL)
							return -1;
						p->secrets = nv;
					}
					p->secrets[p->nsecrets].name = it->str;
					p->secrets[p->nsecrets].rule = it->rule;
					p->secrets[p->nsecrets++].line =
					    it->loc.line;
				} else if (s->kind == LANG_S_EXPOSE) {
					if (p->nexpose == b->cexpose) {
						b->cexpose =
						    b->cexpose * 2 + 16;
						if ((nv = reallocarray(
						         p->expose, b->cexpose,
						         sizeof(*p->expose))) ==
						    NULL)
							return -1;
						p->expose = nv;
					}
					p->expose[p->nexpose].port = it->port;
					p->expose[p->nexpose].last =
					    it->port_last;
					p->expose[p->nexpose].link_ms =
					    !it->link ? 0
					    : it->link_ms != 0
					    ? it->link_ms
					    : LANG_LINK_DEFAULT_MS;
					p->expose[p->nexpose].rule = it->rule;
					p->expose[p->nexpose++].line =
					    it->loc.line;
				} else if (s->kind == LANG_S_EGRESS) {
					struct policy_egress *e;
					if (p->negress == b->cegress) {
						b->cegress =
						    b->cegress * 2 + 16;
						if ((nv = reallocarray(
						         p->egress, b->cegress,
						         sizeof(*p->egress))) ==
						    NULL)
							return -1;
						p->egress = nv;
					}
					e = &p->egress[p->negress++];
					e->host = it->str;
					e->port = it->port;
					e->http = it->http;
					e->private_ = it->private_;
					e->inject_secret = it->inject_secret;
					e->inject_header = it->inject_header;
					e->udp = it->udp;
					e->rule = it->rule;
					e->line = it->loc.line;
				}
			}
	pr->nexec = p->nexecs - pr->exec_off;
	pr->negress = p->negress - pr->egress_off;
	pr->nsecret = p->nsecrets - pr->secret_off;
	pr->nexpose = p->nexpose - pr->expose_off;
	return 0;
}

static int
build_principal(struct build *b, const struct lang_decl *a,
    struct policy_principal *pr, const struct lang_decl *const *denies,
    size_t ndenies)
{
	uint32_t arule[CAP_COUNT] = { 0 }, aline[CAP_COUNT] = { 0 };
	uint32_t drule[CAP_COUNT] = { 0 }, dline[CAP_COUNT] = { 0 };
	uint8_t set[64] = { 0 };
	const struct lang_stmt *s;
	size_t n, i;
	int c;

	pr->lim.budget = POLICY_UNLIMITED;
	for (c = 0; c < CAP_COUNT; c++)
		pr->lim.cost[c] = 1;
	n = lang_closure(b->f, a, b->clos, b->mark, ++b->stamp);
	for (i = 0; i < n; i++)
		for (s = b->f->byindex[b->clos[i]]->stmts; s != NULL;
		     s = s->next)
			fold_stmt(pr, s, arule, aline, drule, dline, set);
	for (i = 0; i < ndenies; i++)
		if (lang_deny_applies(denies[i], a, b->mark, b->stamp))
			fold_stmt(pr, denies[i]->stmts, arule, aline, drule,
			    dline, set);
	pr->allow &= ~pr->deny;
	for (c = 0; c < 2; c++) {
		uint64_t period = pr->lim.rate_period_ms[c] * 1000000;
		if (pr->lim.rate_count[c] == 0)
			continue;
		/* GCRA: a token every t ns, a burst of rate_count */
		pr->gcra_t[c] = period / pr->lim.rate_count[c];
		if (pr->gcra_t[c] == 0)
			pr->gcra_t[c] = 1;
		pr->gcra_tau[c] = period - pr->gcra_t[c];
	}
	for (c = 0; c < CAP_COUNT; c++) {
		if (pr->deny & CAP_BIT(c)) {
			pr->rule[c] = drule[c];
			pr->line[c] = dline[c];
		} else if (pr->allow & CAP_BIT(c)) {
			pr->rule[c] = arule[c];
			pr->line[c] = aline[c];
		}
	}
	return add_lists(b, pr, b->clos, n);
}

int
policy_compile(const struct lang_file *f, struct policy **out)
{
	const struct lang_decl *d, **agents = NULL, **denies = NULL;
	struct build b;
	struct policy *p;
	size_t na = 0, nd = 0, i, strsize = 0, size, off;
	uint32_t h, k;
	int rc = POLICY_E_NOMEM;

	if (f == NULL || out == NULL || !f->checked || f->nerrors || f->oom)
		return POLICY_E_ARG;
	*out = NULL;
	memset(&b, 0, sizeof(b));
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return POLICY_E_NOMEM;
	b.f = f;
	b.p = p;
	p->nrules = f->nrules;
	for (i = 0; i < CAP_COUNT; i++)
		if (cap_is_write(i))
			p->writes |= CAP_BIT(i);
	crypto_generichash(p->hash, sizeof(p->hash),
	    (const unsigned char *)f->text, f->len, NULL, 0);
	agents = calloc(f->ndecls + 1, sizeof(*agents));
	denies = calloc(f->ndecls + 1, sizeof(*denies));
	b.clos = calloc(f->ndecls + 1, sizeof(uint32_t));
	b.mark = calloc(f->ndecls + 1, sizeof(uint32_t));
	if (agents == NULL || denies == NULL || b.clos == NULL ||
	    b.mark == NULL)
		goto fail;
	for (d = f->decls; d != NULL; d = d->next) {
		if (d->kind == LANG_D_AGENT) {
			agents[na++] = d;
			strsize += strlen(d->name) + 1;
		} else if (d->kind == LANG_D_DENY)
			denies[nd++] = d;
	}
	qsort(agents, na, sizeof(*agents), cmp_name);
	p->npr = na;
	if ((p->pr = calloc(na + 1, sizeof(*p->pr))) == NULL)
		goto fail;
	for (i = 0; i < na; i++)
		if (build_principal(&b, agents[i], &p->pr[i], denies, nd) < 0)
			goto fail;
	/* Strings: agent names, exec names and hosts in one block, so the
	 * policy keeps no pointer into the tree. */
	for (i = 0; i < p->nexecs; i++)
		strsize += strlen(p->execs[i].name) + 1;
	for (i = 0; i < p->negress; i++) {
		strsize += strlen(p->egress[i].host) + 1;
		if (p->egress[i].inject_secret != NULL)
			strsize += strlen(p->egress[i].inject_secret) +
			    strlen(p->egress[i].inject_header) + 2;
	}
	for (i = 0; i < p->nsecrets; i++)
		strsize += strlen(p->secrets[i].name) + 1;
	if ((p->strings = malloc(strsize + 1)) == NULL)
		goto fail;
	off = 0;
#define INTERN(ptr)                                                            \
	do {                                                                   \
		size_t l_ = strlen(ptr) + 1;                                   \
		memcpy(p->strings + off, (ptr), l_);                           \
		(ptr) = p->strings + off;                                      \
		off += l_;                                                     \
	} while (0)
	for (i = 0; i < na; i++) {
		p->pr[i].name = agents[i]->name;
		INTERN(p->pr[i].name);
		p->pr[i].len = strlen(p->pr[i].name);
		p->pr[i].hash = policy_hash_name(p->pr[i].name, p->pr[i].len);
	}
	for (i = 0; i < p->nexecs; i++)
		INTERN(p->execs[i].name);
	for (i = 0; i < p->negress; i++) {
		INTERN(p->egress[i].host);
		if (p->egress[i].inject_secret != NULL) {
			INTERN(p->egress[i].inject_secret);
			INTERN(p->egress[i].inject_header);
		}
	}
	for (i = 0; i < p->nsecrets; i++)
		INTERN(p->secrets[i].name);
#undef INTERN
	for (size = 16; size < (size_t)na * 2 + 2; size <<= 1)
		;
	if ((p->slot = calloc(size, sizeof(*p->slot))) == NULL)
		goto fail;
	p->mask = size - 1;
	for (i = 0; i < na; i++) {
		h = p->pr[i].hash;
		for (k = h & p->mask; p->slot[k] != 0; k = (k + 1) & p->mask)
			;
		p->slot[k] = (uint64_t)h << 32 | (i + 1);
	}
	*out = p;
	p = NULL;
	rc = POLICY_OK;
fail:
	free(agents);
	free(denies);
	free(b.clos);
	free(b.mark);
	policy_free(p);
	return rc;
}

void
policy_free(struct policy *p)
{
	if (p == NULL)
		return;
	free(p->pr);
	free(p->slot);
	free(p->execs);
	free(p->egress);
	free(p->secrets);
	free(p->expose);
	free(p->strings);
	free(p);
}

int
policy_compile_text(const char *name, const char *text, size_t len,
    struct policy **out, char *errbuf, size_t errlen)
{
	struct lang_file *f = NULL;
	size_t i;
	int rc;

	*out = NULL;
	if (errlen > 0)
		errbuf[0] = '\0';
	rc = lang_parse(name, text, len, &f);
	if (rc == LANG_OK)
		rc = lang_check(f);
	if (rc != LANG_OK) {
		for (i = 0; f != NULL && i < f->ndiags; i++)
			if (f->diags[i].sev == LANG_ERROR) {
				lang_diag_format(
				    f, &f->diags[i], errbuf, errlen);
				break;
			}
		if (errlen > 0 && errbuf[0] == '\0')
			snprintf(
			    errbuf, errlen, "%s: %s", name, lang_strerror(rc));
		lang_free(f);
		return rc == LANG_E_NOMEM ? POLICY_E_NOMEM : POLICY_E_ARG;
	}
	rc = policy_compile(f, out);
	if (rc != POLICY_OK)
		snprintf(errbuf, errlen, "%s: %s", name, policy_strerror(rc));
	lang_free(f);
	return rc;
}

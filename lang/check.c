/*
 * Name resolution and checks: the pass after parsing. It gives every
 * declaration an index, resolves role references, rejects duplicates,
 * cycles and over-deep inheritance, and computes, for every agent, what
 * it is allowed and denied, to find rules that decide nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lang/lang_int.h"

static uint32_t
hash_name(int kind, const char *s)
{
	uint32_t h = 2166136261u ^ (uint32_t)kind;

	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

/* An open-addressing table of role and agent declarations by name. */
struct names {
	uint32_t *slot; /* decl index + 1, 0 empty */
	size_t mask;
};

static int
names_init(struct lang_file *f, struct names *n, size_t count)
{
	size_t size = 16;

	while (size < count * 2)
		size <<= 1;
	if ((n->slot = lang_alloc(f, size * sizeof(uint32_t))) == NULL)
		return -1;
	n->mask = size - 1;
	return 0;
}

static int
names_find(const struct lang_file *f, const struct names *n, int kind,
    const char *name)
{
	size_t i = hash_name(kind, name) & n->mask;
	const struct lang_decl *d;

	for (; n->slot[i] != 0; i = (i + 1) & n->mask) {
		d = f->byindex[n->slot[i] - 1];
		if ((int)d->kind == kind && strcmp(d->name, name) == 0)
			return n->slot[i] - 1;
	}
	return -1;
}

static void
names_add(struct names *n, int kind, const char *name, uint32_t idx)
{
	size_t i = hash_name(kind, name) & n->mask;

	while (n->slot[i] != 0)
		i = (i + 1) & n->mask;
	n->slot[i] = idx + 1;
}

/*
 * Longest inheritance chain from d; -1 on a cycle (reported once), -2
 * after an error. level is how deep the recursion is: it stops past
 * LANG_DEPTH_MAX, so a hostile chain cannot exhaust the stack.
 */
static int
depth(struct lang_file *f, struct lang_decl *d, uint8_t *state, int *dep,
    int level)
{
	struct lang_decl *pd;
	size_t i;
	int m = 0, k;

	if (state[d->index] == 2)
		return dep[d->index];
	if (state[d->index] == 1)
		return -1;
	state[d->index] = 1;
	for (i = 0; i < d->nparents; i++) {
		if (d->parents[i].idx < 0)
			continue;
		pd = f->byindex[d->parents[i].idx];
		if (level >= LANG_DEPTH_MAX) {
			lang_diag(f, LANG_ERROR, d->parents[i].loc,
			    "inheritance deeper than %d", LANG_DEPTH_MAX);
			state[d->index] = 2;
			dep[d->index] = -2;
			return -2;
		}
		if ((k = depth(f, pd, state, dep, level + 1)) < 0) {
			if (k == -1)
				lang_diag(f, LANG_ERROR, d->parents[i].loc,
				    "role '%s' inherits from itself", pd->name);
			state[d->index] = 2;
			dep[d->index] = -2;
			return -2;
		}
		if (k + 1 > m)
			m = k + 1;
		if (m > LANG_DEPTH_MAX) {
			lang_diag(f, LANG_ERROR, d->parents[i].loc,
			    "inheritance deeper than %d", LANG_DEPTH_MAX);
			state[d->index] = 2;
			dep[d->index] = -2;
			return -2;
		}
	}
	state[d->index] = 2;
	dep[d->index] = m;
	return m;
}

/*
 * The declarations an agent or role draws from, nearest first: itself,
 * then its parents breadth-first in the order written, each once. mark
 * is per declaration scratch, stamp a value not yet in it. Returns the
 * count written to out (room for f->ndecls).
 */
size_t
lang_closure(const struct lang_file *f, const struct lang_decl *d,
    uint32_t *out, uint32_t *mark, uint32_t stamp)
{
	const struct lang_decl *c;
	size_t n = 0, head = 0, i;

	out[n++] = d->index;
	mark[d->index] = stamp;
	while (head < n) {
		c = f->byindex[out[head++]];
		for (i = 0; i < c->nparents; i++) {
			int p = c->parents[i].idx;
			if (p < 0 || mark[p] == stamp)
				continue;
			mark[p] = stamp;
			out[n++] = p;
		}
	}
	return n;
}

/* Whether a top-level deny applies to an agent with this closure. */
int
lang_deny_applies(const struct lang_decl *deny, const struct lang_decl *agent,
    const uint32_t *mark, uint32_t stamp)
{
	switch (deny->for_kind) {
	case LANG_FOR_ALL:
		return 1;
	case LANG_FOR_AGENT:
		return strcmp(deny->for_ref.name, agent->name) == 0;
	case LANG_FOR_ROLE:
		return deny->for_ref.idx >= 0 &&
		    mark[deny->for_ref.idx] == stamp;
	}
	return 0;
}

static cap_set_t
stmt_allows(const struct lang_stmt *s)
{
	cap_set_t c = 0;
	size_t i;

	switch (s->kind) {
	case LANG_S_ALLOW:
		for (i = 0; i < s->nitems; i++)
			c |= CAP_BIT(s->items[i].cap);
		return c;
	case LANG_S_EXEC:
		return CAP_BIT(CAP_EXEC);
	case LANG_S_EGRESS:
		return CAP_BIT(CAP_EGRESS);
	case LANG_S_SECRET:
		return CAP_BIT(CAP_SECRET_READ);
	default:
		return 0;
	}
}

/* Whether the agent's closure lists `secret "name"`. */
static int
closure_has_secret(
    const struct lang_file *f, const uint32_t *clos, size_t n, const char *name)
{
	const struct lang_stmt *s;
	size_t i, j;

	for (i = 0; i < n; i++)
		for (s = f->byindex[clos[i]]->stmts; s != NULL; s = s->next)
			if (s->kind == LANG_S_SECRET)
				for (j = 0; j < s->nitems; j++)
					if (strcmp(s->items[j].str, name) == 0)
						return 1;
	return 0;
}

/*
 * An `egress ... inject "S" as "H"` reaching an agent without `secret
 * "S"` injects nothing for it (the policy binds an injection only for
 * a secret the agent may use): said, not refused, as a role may serve
 * agents with and without the secret.
 */
static void
check_injects(struct lang_file *f, const struct lang_decl *a,
    const uint32_t *clos, size_t n)
{
	const struct lang_stmt *s;
	size_t i, j;

	for (i = 0; i < n; i++)
		for (s = f->byindex[clos[i]]->stmts; s != NULL; s = s->next) {
			if (s->kind != LANG_S_EGRESS)
				continue;
			for (j = 0; j < s->nitems; j++) {
				const struct lang_item *it = &s->items[j];
				if (it->inject_secret == NULL ||
				    closure_has_secret(
				        f, clos, n, it->inject_secret))
					continue;
				lang_diag(f, LANG_WARNING, it->loc,
				    "egress \"%s\" injects secret \"%s\", "
				    "which agent '%s' may not use (no secret "
				    "\"%s\"): nothing is injected for it",
				    it->str, it->inject_secret, a->name,
				    it->inject_secret);
			}
		}
}

static void
check_agents(struct lang_file *f)
{
	uint32_t *clos, *mark, stamp = 0;
	uint8_t *reached;
	struct lang_decl *a, *d, *g, **denies;
	struct lang_stmt *s;
	cap_set_t allow, deny;
	size_t n, i, j, k, ndenies = 0;
	uint64_t work = 0;

	clos = lang_alloc(f, f->ndecls * sizeof(uint32_t));
	mark = lang_alloc(f, f->ndecls * sizeof(uint32_t));
	reached = lang_alloc(f, f->ndecls);
	denies = lang_alloc(f, f->ndecls * sizeof(*denies));
	if (clos == NULL || mark == NULL || reached == NULL || denies == NULL)
		return;
	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == LANG_D_DENY)
			denies[ndenies++] = d;
	for (a = f->decls; a != NULL; a = a->next) {
		if (a->kind != LANG_D_AGENT)
			continue;
		n = lang_closure(f, a, clos, mark, ++stamp);
		/* What compiling this agent will cost; the compiler and the
		 * reference evaluator do the same walk. */
		work += n + ndenies;
		for (i = 0; i < n; i++)
			for (s = f->byindex[clos[i]]->stmts; s != NULL;
			     s = s->next)
				work += 1 + s->nitems;
		if (work > LANG_WORK_MAX) {
			lang_diag(f, LANG_ERROR, a->loc,
			    "policy too complex: its agents inherit more than "
			    "%u rules in all",
			    LANG_WORK_MAX);
			return;
		}
		allow = deny = 0;
		for (i = 0; i < n; i++) {
			d = f->byindex[clos[i]];
			reached[d->index] = 1;
			for (s = d->stmts; s != NULL; s = s->next) {
				allow |= stmt_allows(s);
				if (s->kind == LANG_S_DENY)
					for (j = 0; j < s->nitems; j++)
						deny |=
						    CAP_BIT(s->items[j].cap);
			}
		}
		for (k = 0; k < ndenies; k++)
			if ((g = denies[k]) != NULL &&
			    lang_deny_applies(g, a, mark, stamp)) {
				s = g->stmts;
				for (j = 0; j < s->nitems; j++) {
					deny |= CAP_BIT(s->items[j].cap);
					if (allow & CAP_BIT(s->items[j].cap))
						s->items[j].used = 1;
				}
			}
		check_injects(f, a, clos, n);
		for (i = 0; i < n; i++) {
			d = f->byindex[clos[i]];
			for (s = d->stmts; s != NULL; s = s->next)
				for (j = 0; j < s->nitems; j++) {
					struct lang_item *it = &s->items[j];
					int c = it->cap >= 0         ? it->cap
					    : s->kind == LANG_S_EXEC ? CAP_EXEC
					    : s->kind == LANG_S_SECRET
					    ? CAP_SECRET_READ
					    : s->kind == LANG_S_EXPOSE
					    ? CAP_SANDBOX_READ
					    : CAP_EGRESS;
					if (s->kind == LANG_S_DENY) {
						if (allow & CAP_BIT(c))
							it->used = 1;
					} else if (!(deny & CAP_BIT(c)))
						it->used = 1;
				}
		}
	}
	for (d = f->decls; d != NULL; d = d->next) {
		if (d->kind == LANG_D_ROLE && !reached[d->index])
			continue; /* reported as unused or unreached */
		if (d->kind != LANG_D_ROLE && d->kind != LANG_D_AGENT &&
		    d->kind != LANG_D_DENY)
			continue;
		for (s = d->stmts; s != NULL; s = s->next)
			for (j = 0; j < s->nitems; j++) {
				struct lang_item *it = &s->items[j];
				if (it->used)
					continue;
				if (s->kind == LANG_S_DENY)
					lang_diag(f, LANG_WARNING, it->loc,
					    "deny %s denies nothing: no agent "
					    "it applies to is allowed it",
					    cap_name(it->cap));
				else if (s->kind == LANG_S_ALLOW)
					lang_diag(f, LANG_WARNING, it->loc,
					    "allow %s is shadowed: every "
					    "agent it reaches is denied it",
					    cap_name(it->cap));
				else
					lang_diag(f, LANG_WARNING, it->loc,
					    "%s \"%s\" is shadowed: every "
					    "agent it reaches is denied %s",
					    lang_stmt_name(s->kind), it->str,
					    lang_stmt_name(s->kind));
			}
	}
	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == LANG_D_ROLE && d->referenced &&
		    !reached[d->index])
			lang_diag(f, LANG_WARNING, d->loc,
			    "role '%s' reaches no agent", d->name);
}

/* A position as messages name it: "file:line:col" in the files the
 * loader read (lang/source.c), so a repeat in another file is found. */
static const char *
where(const struct lang_file *f, struct lang_loc loc, char *buf, size_t len)
{
	lang_source_format(
	    f->text, f->len, f->name, loc.line, loc.col, buf, len);
	return buf;
}

/* "role r" or "agent \"a\"", for messages. */
static const char *
decl_what(const struct lang_decl *d, char *buf, size_t len)
{
	snprintf(buf, len, d->kind == LANG_D_ROLE ? "role %s" : "agent \"%s\"",
	    d->name);
	return buf;
}

/* Each limit may be set once per block. */
static void
check_block(struct lang_file *f, struct lang_decl *d)
{
	const struct lang_stmt *seen[LANG_S_LAST + 1][CAP_COUNT];
	struct lang_stmt *s;
	int k;

	const struct lang_item *capseen[2][CAP_COUNT];
	char what[LANG_NAME_MAX + 16], at[LANG_MSG_MAX];
	size_t i;

	memset(seen, 0, sizeof(seen));
	memset(capseen, 0, sizeof(capseen));
	for (s = d->stmts; s != NULL; s = s->next) {
		switch (s->kind) {
		case LANG_S_ALLOW:
		case LANG_S_DENY:
			/* A repeat can never decide: the first one, with the
			 * lower rule id, always does. */
			k = s->kind == LANG_S_DENY;
			for (i = 0; i < s->nitems; i++) {
				const struct lang_item *it = &s->items[i];
				if (capseen[k][it->cap] != NULL)
					lang_diag(f, LANG_WARNING, it->loc,
					    "%s %s repeated in %s (first at "
					    "%s)",
					    lang_stmt_name(s->kind),
					    cap_name(it->cap),
					    decl_what(d, what, sizeof(what)),
					    where(f, capseen[k][it->cap]->loc,
					        at, sizeof(at)));
				else
					capseen[k][it->cap] = it;
			}
			continue;
		case LANG_S_EXEC:
		case LANG_S_EGRESS:
		case LANG_S_SECRET:
		case LANG_S_EXPOSE:
			continue;
		case LANG_S_RATE:
		case LANG_S_COST:
			k = s->which;
			break;
		default:
			k = 0;
			break;
		}
		if (k < 0 || k >= CAP_COUNT)
			continue;
		if (seen[s->kind][k] != NULL)
			lang_diag(f, LANG_ERROR, s->loc,
			    "'%s' set twice in %s (first at %s)",
			    lang_stmt_name(s->kind),
			    decl_what(d, what, sizeof(what)),
			    where(f, seen[s->kind][k]->loc, at, sizeof(at)));
		else
			seen[s->kind][k] = s;
	}
}

static void
resolve_ref(struct lang_file *f, struct names *nm, struct lang_ref *r)
{
	r->idx = names_find(f, nm, LANG_D_ROLE, r->name);
	if (r->idx < 0)
		lang_diag(f, LANG_WARNING, r->loc,
		    "unknown role '%s' (ignored)", r->name);
	else
		f->byindex[r->idx]->referenced = 1;
}

/* Diagnostics in source order (insertion sort: stable, few items). */
static void
sort_diags(struct lang_file *f)
{
	struct lang_diag t;
	size_t i, j;

	for (i = 1; i < f->ndiags; i++) {
		t = f->diags[i];
		for (j = i; j > 0 &&
		     (f->diags[j - 1].loc.line > t.loc.line ||
		         (f->diags[j - 1].loc.line == t.loc.line &&
		             f->diags[j - 1].loc.col > t.loc.col));
		     j--)
			f->diags[j] = f->diags[j - 1];
		f->diags[j] = t;
	}
}

int
lang_check(struct lang_file *f)
{
	struct lang_decl *d;
	struct lang_expect *e;
	struct names nm;
	uint8_t *state;
	int *dep, prev;
	size_t i;
	char at[LANG_MSG_MAX];

	if (f == NULL || f->nerrors || f->oom)
		return LANG_E_ARG;
	if (f->checked)
		return f->nerrors ? LANG_E_SYNTAX : LANG_OK;
	f->checked = 1;
	f->byindex = lang_alloc(f, (f->ndecls + 1) * sizeof(*f->byindex));
	state = lang_alloc(f, f->ndecls + 1);
	dep = lang_alloc(f, (f->ndecls + 1) * sizeof(int));
	if (f->byindex == NULL || state == NULL || dep == NULL ||
	    names_init(f, &nm, f->ndecls) < 0)
		return LANG_E_NOMEM;
	i = 0;
	for (d = f->decls; d != NULL; d = d->next) {
		d->index = i;
		f->byindex[i++] = d;
		if (d->kind != LANG_D_ROLE && d->kind != LANG_D_AGENT)
			continue;
		if ((prev = names_find(f, &nm, d->kind, d->name)) >= 0) {
			lang_diag(f, LANG_ERROR, d->loc,
			    "%s '%s' defined twice (first at %s)",
			    d->kind == LANG_D_ROLE ? "role" : "agent", d->name,
			    where(f, f->byindex[prev]->loc, at, sizeof(at)));
			d->referenced = 1; /* one report is enough */
			continue;
		}
		names_add(&nm, d->kind, d->name, d->index);
	}
	for (d = f->decls; d != NULL; d = d->next) {
		for (i = 0; i < d->nparents; i++)
			resolve_ref(f, &nm, &d->parents[i]);
		if (d->kind == LANG_D_DENY && d->for_kind == LANG_FOR_ROLE)
			resolve_ref(f, &nm, &d->for_ref);
		if (d->kind == LANG_D_DENY && d->for_kind == LANG_FOR_AGENT &&
		    names_find(f, &nm, LANG_D_AGENT, d->for_ref.name) < 0)
			lang_diag(f, LANG_WARNING, d->for_ref.loc,
			    "unknown agent '%s'", d->for_ref.name);
		if (d->kind == LANG_D_ROLE || d->kind == LANG_D_AGENT)
			check_block(f, d);
		if (d->kind == LANG_D_TEST)
			for (e = d->expects; e != NULL; e = e->next)
				if (names_find(
				        f, &nm, LANG_D_AGENT, e->principal) < 0)
					lang_diag(f, LANG_WARNING, e->loc,
					    "unknown agent '%s'", e->principal);
	}
	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == LANG_D_ROLE || d->kind == LANG_D_AGENT)
			depth(f, d, state, dep, 0);
	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == LANG_D_ROLE && !d->referenced)
			lang_diag(f, LANG_WARNING, d->loc,
			    "role '%s' is never used", d->name);
	if (f->nerrors == 0)
		check_agents(f);
	sort_diags(f);
	if (f->oom)
		return LANG_E_NOMEM;
	return f->nerrors ? LANG_E_SYNTAX : LANG_OK;
}

const struct lang_decl *
lang_find(const struct lang_file *f, enum lang_decl_kind kind, const char *name)
{
	const struct lang_decl *d;

	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == kind && d->name != NULL &&
		    strcmp(d->name, name) == 0)
			return d;
	return NULL;
}

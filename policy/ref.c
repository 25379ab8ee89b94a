/*
 * The reference evaluator: the language's meaning written as directly as
 * possible, over the checked tree, with no precomputation. Slow on
 * purpose. The differential test requires policy_decide to agree with it
 * on every request.
 *
 * Meaning: find the agent; gather the rules of the agent and every role
 * it inherits, and the top-level denies that name it, its roles or all.
 * A deny of the capability decides (the lowest rule id among them).
 * Otherwise an allow of it (allow, or an exec/egress list for exec and
 * egress) decides; with a target, exec and egress need a list entry that
 * matches it, and a port (sandbox:read only) an expose rule that names
 * it. Otherwise default deny.
 */
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

struct best {
	uint32_t rule, line;
};

static void
consider(struct best *b, const struct lang_item *it)
{
	if (b->rule == 0 || it->rule < b->rule) {
		b->rule = it->rule;
		b->line = it->loc.line;
	}
}

/* Walk the inheritance graph depth-first; seen stops revisits. */
static void
walk(const struct lang_file *f, const struct lang_decl *d, int cap,
    const struct policy_request *req, uint8_t *seen, struct best *deny,
    struct best *allow, struct best *target)
{
	const struct lang_stmt *s;
	size_t i;

	if (seen[d->index])
		return;
	seen[d->index] = 1;
	for (s = d->stmts; s != NULL; s = s->next)
		for (i = 0; i < s->nitems; i++) {
			const struct lang_item *it = &s->items[i];
			if (s->kind == LANG_S_DENY && it->cap == cap)
				consider(deny, it);
			else if (s->kind == LANG_S_ALLOW && it->cap == cap)
				consider(allow, it);
			else if (s->kind == LANG_S_EXEC && cap == CAP_EXEC) {
				consider(allow, it);
				if (req->target_len == strlen(it->str) &&
				    memcmp(req->target, it->str,
				        req->target_len) == 0)
					consider(target, it);
			} else if (s->kind == LANG_S_SECRET &&
			    cap == CAP_SECRET_READ) {
				consider(allow, it);
				if (req->target_len == strlen(it->str) &&
				    memcmp(req->target, it->str,
				        req->target_len) == 0)
					consider(target, it);
			} else if (s->kind == LANG_S_EXPOSE &&
			    cap == CAP_SANDBOX_READ) {
				/* expose narrows sandbox:read to ports; it
				 * allows nothing by itself */
				if (req->port != 0 &&
				    (!req->link || it->link) &&
				    (it->port == 0 ||
				        (req->port >= it->port &&
				            req->port <= it->port_last)))
					consider(target, it);
			} else if (s->kind == LANG_S_EGRESS &&
			    cap == CAP_EGRESS) {
				consider(allow, it);
				if (req->target_len > 0 &&
				    policy_egress_match_proto(it->str, it->port,
				        it->udp, req->target, req->target_len))
					consider(target, it);
			}
		}
	for (i = 0; i < d->nparents; i++)
		if (d->parents[i].idx >= 0)
			walk(f, f->byindex[d->parents[i].idx], cap, req, seen,
			    deny, allow, target);
}

/* Does role r lie in the inheritance of d? */
static int
inherits(
    const struct lang_file *f, const struct lang_decl *d, int r, uint8_t *seen)
{
	size_t i;

	if ((int)d->index == r)
		return 1;
	if (seen[d->index])
		return 0;
	seen[d->index] = 1;
	for (i = 0; i < d->nparents; i++)
		if (d->parents[i].idx >= 0 &&
		    inherits(f, f->byindex[d->parents[i].idx], r, seen))
			return 1;
	return 0;
}

void
policy_ref_decide(const struct lang_file *f, const struct policy_request *req,
    struct policy_result *res)
{
	const struct lang_decl *d, *agent = NULL;
	struct best deny = { 0, 0 }, allow = { 0, 0 }, target = { 0, 0 };
	uint8_t *seen;
	size_t i;
	int applies;

	memset(res, 0, sizeof(*res));
	res->principal = -1;
	if (req->cap < 0 || req->cap >= CAP_COUNT) {
		res->reason = POLICY_R_REQUEST;
		return;
	}
	for (d = f->decls; d != NULL; d = d->next)
		if (d->kind == LANG_D_AGENT &&
		    strlen(d->name) == req->principal_len &&
		    memcmp(d->name, req->principal, req->principal_len) == 0) {
			agent = d;
			break;
		}
	if (agent == NULL) {
		res->reason = POLICY_R_PRINCIPAL;
		return;
	}
	if ((seen = calloc(f->ndecls + 1, 1)) == NULL) {
		res->reason = POLICY_R_REQUEST;
		return;
	}
	walk(f, agent, req->cap, req, seen, &deny, &allow, &target);
	for (d = f->decls; d != NULL; d = d->next) {
		if (d->kind != LANG_D_DENY)
			continue;
		applies = 0;
		if (d->for_kind == LANG_FOR_ALL)
			applies = 1;
		else if (d->for_kind == LANG_FOR_AGENT)
			applies = strcmp(d->for_ref.name, agent->name) == 0;
		else if (d->for_ref.idx >= 0) {
			memset(seen, 0, f->ndecls + 1);
			applies = inherits(f, agent, d->for_ref.idx, seen);
		}
		if (!applies)
			continue;
		for (i = 0; i < d->stmts->nitems; i++)
			if (d->stmts->items[i].cap == req->cap)
				consider(&deny, &d->stmts->items[i]);
	}
	free(seen);
	if (deny.rule != 0) {
		res->reason = POLICY_R_DENY;
		res->rule = deny.rule;
		res->line = deny.line;
	} else if (allow.rule == 0) {
		res->reason = POLICY_R_DEFAULT;
	} else if (req->port != 0 && req->cap != CAP_SANDBOX_READ) {
		res->reason = POLICY_R_REQUEST;
	} else if (req->port != 0) {
		if (target.rule == 0)
			res->reason = POLICY_R_TARGET;
		else {
			res->allow = 1;
			res->reason = POLICY_R_ALLOW;
			res->rule = target.rule;
			res->line = target.line;
		}
	} else if (req->target_len > 0 &&
	    (req->cap == CAP_EXEC || req->cap == CAP_EGRESS ||
	        req->cap == CAP_SECRET_READ) &&
	    target.rule == 0) {
		res->reason = POLICY_R_TARGET;
	} else {
		res->allow = 1;
		res->reason = POLICY_R_ALLOW;
		if (req->target_len > 0 &&
		    (req->cap == CAP_EXEC || req->cap == CAP_EGRESS ||
		        req->cap == CAP_SECRET_READ)) {
			res->rule = target.rule;
			res->line = target.line;
		} else {
			res->rule = allow.rule;
			res->line = allow.line;
		}
	}
}

/*
 * The policy process: keeps the compiled policy and mints grants. It does
 * no I/O but its links: the policy text arrives from the parent as a memfd
 * (MSG_POLICY_LOAD), decisions are asked for with MSG_POLICY_DECIDE.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_policy.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lang/lang.h"
#include "lib/caps.h"
#include "lib/log.h"
#include "lib/memfd.h"
#include "policy/policy.h"
#include "policy/policy_hooks.h"
#include "token/token.h"

struct policy_state {
	uint8_t mint_sk[64];
	int have_mint_key;
	struct token_verifier *tv; /* built for tv_keys */
	const struct msg_pubkeys *tv_keys;
	void *compiled;
	char *text; /* the text as loaded, kept for explain and reload */
	size_t len;
	uint64_t generation;
	int64_t loaded_at;
	uint8_t hash[32];
	struct lang_srcmap *srcmap; /* where each rule of text is */
	/* The store has what was spent (budgets) and the audit log. */
	int budgets_restored;
	/* By principal index: its spent budget has been asked of the store
	 * and not answered yet. Such a principal gets no decision: until the
	 * answer, a spent budget would look whole. */
	uint8_t *budget_pending;
	uint32_t pending_len, npending;
	int load_audited;
	/* Egress decisions since this process started, for /metrics. */
	uint64_t egress_allow, egress_deny;
};

/* The policy language (policy/); tests may point this elsewhere. */
const struct policy_hooks *policy_hooks = &policy_lang_hooks;

/* Exactly size bytes of the memfd, NUL-terminated; the parent sealed it. */
static char *
read_text(int fd, uint64_t size)
{
	char *text;

	if ((text = memfd_read(fd, size, MSG_POLICY_MAX_TEXT)) == NULL)
		log_warn("%s: the policy memfd", __func__);
	return text;
}

/* ---- the store: spent budgets and the audit of each load --------------- */

/*
 * Budgets must outlive a restart of the policy process or of keepd: every
 * decision that spends sets the principal's "budget" counter in the store
 * (in order on the link, not waited for: a crash may forget the last few
 * operations, never invent any), and the first policy loaded after a
 * start reads them back. The request id of a read says which principal it
 * was for, in which generation.
 */
#define BUDGET_READ_TAG (UINT64_C(1) << 63)

static void
store_send(
    struct proc_ctx *ctx, uint16_t type, uint64_t reqid, void *msg, size_t len)
{
	if (ctx->fd[PROC_STORE] < 0 ||
	    msg_send(ctx->fd[PROC_STORE], type, 0, reqid, msg, len, -1) !=
	        MSG_OK)
		log_warnx("%s: the store did not get it", __func__);
	free(msg);
}

static void
budget_save(struct proc_ctx *ctx, const char *principal)
{
	struct policy_state *ps = ctx->arg;
	const struct policy *p = policy_hooks_policy(ps->compiled);
	const struct policy_limits *l;
	void *msg;
	size_t len;
	int i;

	if (p == NULL || (l = policy_limits_of(p, principal)) == NULL ||
	    l->budget == POLICY_UNLIMITED)
		return;
	i = policy_find(p, principal, strlen(principal));
	if (store_wire_counter_encode(STORE_COUNTER_SET, principal, "budget",
	        (int64_t)policy_quota_spent(
	            policy_hooks_quota(ps->compiled), i),
	        &msg, &len) == STORE_OK)
		store_send(ctx, MSG_STORE_COUNTER, 0, msg, len);
}

static void
budgets_restore(struct proc_ctx *ctx)
{
	struct policy_state *ps = ctx->arg;
	const struct policy *p = policy_hooks_policy(ps->compiled);
	void *msg;
	size_t len;
	uint32_t i;

	if (p == NULL || ps->budgets_restored || ctx->fd[PROC_STORE] < 0)
		return;
	ps->budgets_restored = 1;
	free(ps->budget_pending);
	ps->npending = 0;
	ps->pending_len = (uint32_t)p->npr;
	if ((ps->budget_pending = calloc(p->npr + 1, 1)) == NULL)
		log_warnx(
		    "%s: out of memory; budgets are not waited for", __func__);
	for (i = 0; i < p->npr; i++) {
		if (p->pr[i].lim.budget == POLICY_UNLIMITED)
			continue;
		if (store_wire_counter_encode(STORE_COUNTER_GET, p->pr[i].name,
		        "budget", 0, &msg, &len) != STORE_OK)
			continue;
		if (ps->budget_pending != NULL) {
			ps->budget_pending[i] = 1;
			ps->npending++;
		}
		store_send(ctx, MSG_STORE_COUNTER,
		    BUDGET_READ_TAG | ps->generation << 32 | i, msg, len);
	}
}

/* 1 when principal's spent budget is still being read back. */
static int
budget_unknown(const struct policy_state *ps, const char *principal)
{
	const struct policy *p;
	int i;

	if (ps->npending == 0 ||
	    (p = policy_hooks_policy(ps->compiled)) == NULL)
		return 0;
	i = policy_find(p, principal, strlen(principal));
	return i >= 0 && (uint32_t)i < ps->pending_len && ps->budget_pending[i];
}

/* keepd's own policy.load entry for generation gen. */
static void
policy_load_entry(struct proc_ctx *ctx, const char *gen, uint32_t decision,
    const char *rule, const char *detail)
{
	struct store_audit e;
	struct timespec ts;
	void *msg;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&e, 0, sizeof(e));
	e.time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	e.request_id = "";
	e.principal = "keepd";
	e.jti = "";
	e.action = "policy.load";
	e.target = gen;
	e.decision = decision;
	e.rule = rule;
	e.detail = detail;
	if (store_wire_audit_encode(&e, 1, &msg, &len) == STORE_OK)
		store_send(ctx, MSG_STORE_AUDIT, 0, msg, len);
}

/* Every policy in force is in the audit log, with its hash. */
static void
load_audit(struct proc_ctx *ctx)
{
	struct policy_state *ps = ctx->arg;
	char detail[128], hex[65], gen[24];

	if (ps->load_audited || ps->text == NULL || ctx->fd[PROC_STORE] < 0)
		return;
	ps->load_audited = 1;
	sodium_bin2hex(hex, sizeof(hex), ps->hash, sizeof(ps->hash));
	snprintf(gen, sizeof(gen), "%llu", (unsigned long long)ps->generation);
	snprintf(detail, sizeof(detail), "generation %s, %zu bytes, blake2b %s",
	    gen, ps->len, hex);
	policy_load_entry(ctx, gen, STORE_DECISION_INFO, "", detail);
}

/* A policy that was refused (it does not compile, or could not be read):
 * the previous one stays in force, and the refusal is in the audit log. */
static void
refusal_audit(struct proc_ctx *ctx, uint64_t generation, const char *why)
{
	char gen[24];

	if (ctx->fd[PROC_STORE] < 0) {
		log_warnx("%s: the store is down; lost: policy generation %llu "
		          "refused",
		    __func__, (unsigned long long)generation);
		return;
	}
	snprintf(gen, sizeof(gen), "%llu", (unsigned long long)generation);
	policy_load_entry(
	    ctx, gen, STORE_DECISION_DENY, "policy does not compile", why);
}

static int
policy_h_store_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	uint64_t gen = (m->hdr.reqid & ~BUDGET_READ_TAG) >> 32;
	uint32_t i = (uint32_t)m->hdr.reqid;
	struct policy_quota *q;

	if (store_wire_reply_decode(m->data, m->hdr.len, &hdr, next) !=
	    STORE_OK)
		return -1;
	if ((m->hdr.reqid & BUDGET_READ_TAG) == 0) {
		if (hdr.status != STORE_OK)
			log_warnx("%s: the store refused: %s", __func__,
			    store_strerror((int)hdr.status));
		return 0;
	}
	/* A read: the spent value, if the policy it was asked for is still
	 * the one in force; never less than what was spent since. */
	if (gen == ps->generation && ps->budget_pending != NULL &&
	    i < ps->pending_len && ps->budget_pending[i]) {
		ps->budget_pending[i] = 0;
		ps->npending--;
	}
	if (hdr.status != STORE_OK)
		log_warnx("%s: budget %u not restored: %s", __func__, i,
		    store_strerror((int)hdr.status));
	if (hdr.status != STORE_OK || gen != ps->generation || hdr.value < 0)
		return 0;
	q = policy_hooks_quota(ps->compiled);
	if ((uint64_t)hdr.value > policy_quota_spent(q, (int)i))
		policy_quota_set_spent(q, (int)i, (uint64_t)hdr.value);
	return 0;
}

static void changed_tell_one(struct proc_ctx *ctx, enum proc_id to);

/* A restarted front has no runs in flight: their slots are free. A new
 * store link is where the restore and the load's audit can happen. A
 * restarted egress is told the generation in force. */
static void
policy_on_peer(struct proc_ctx *ctx, enum proc_id peer)
{
	struct policy_state *ps = ctx->arg;

	if (policy_hooks != &policy_lang_hooks)
		return;
	if (peer == PROC_FRONT)
		policy_quota_leave_all(policy_hooks_quota(ps->compiled));
	/* A restarted egress knows no generation: until told, it keeps
	 * no decision for a direct link. */
	if (peer == PROC_EGRESS && ps->compiled != NULL)
		changed_tell_one(ctx, PROC_EGRESS);
	if (peer == PROC_STORE) {
		budgets_restore(ctx);
		load_audit(ctx);
	}
}

/*
 * The vmm and egress may be reusing decisions of the policy just
 * replaced (DECIDE_REUSE; egress for runs' direct links): they drop
 * them on this message. Sent before the load is logged or answered, and
 * to the vmm on the link its decisions come by, so that nothing that
 * learns of the load (a test reading the log, the front's GET
 * /v1/policy) can have a connect decided by a reuse after it; a
 * decision the old policy made and sent before it is dropped with it.
 * Egress reads its policy link before it serves a direct connect, and
 * keeps only decisions of the generation this names.
 */
static void
changed_tell_one(struct proc_ctx *ctx, enum proc_id to)
{
	const struct policy_state *ps = ctx->arg;
	struct msg_policy_changed c;

	if (ctx->fd[to] < 0)
		return;
	memset(&c, 0, sizeof(c));
	c.generation = ps->generation;
	if (msg_send(ctx->fd[to], MSG_POLICY_CHANGED, 0, 0, &c, sizeof(c),
	        -1) != MSG_OK)
		log_warnx("%s: the %s did not get it", __func__, proc_name(to));
}

static void
changed_tell(struct proc_ctx *ctx)
{
	changed_tell_one(ctx, PROC_VMM);
	changed_tell_one(ctx, PROC_EGRESS);
}

static int
policy_h_load(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct msg_policy_load req;
	struct msg_policy_loaded rep;
	char err[256] = "";
	void *compiled = NULL;
	char *text;

	memcpy(&req, m->data, sizeof(req));
	memset(&rep, 0, sizeof(rep));
	rep.generation = req.generation;
	if (req.size > MSG_POLICY_MAX_TEXT ||
	    (text = read_text(m->fd, req.size)) == NULL) {
		close(m->fd);
		rep.status = 1;
		refusal_audit(ctx, req.generation, "unreadable or too large");
		msg_reply(ctx, m, MSG_POLICY_LOADED, &rep, sizeof(rep), -1);
		return -1;
	}
	close(m->fd);
	crypto_generichash(
	    rep.hash, sizeof(rep.hash), (uint8_t *)text, req.size, NULL, 0);
	if (policy_hooks->compile(
	        text, req.size, &compiled, err, sizeof(err)) != 0) {
		/* Keep serving the old policy. */
		log_warnx("%s: generation %llu refused: %s", __func__,
		    (unsigned long long)req.generation, err);
		free(text);
		rep.status = 2;
		refusal_audit(ctx, req.generation, err);
		msg_reply(ctx, m, MSG_POLICY_LOADED, &rep, sizeof(rep), -1);
		return 0;
	}
	/* Principal indexes change with the policy: reads still out for
	 * the old one are no longer waited for. */
	if (ps->npending > 0)
		log_warnx("%s: %u budgets not read back before this load",
		    __func__, ps->npending);
	free(ps->budget_pending);
	ps->budget_pending = NULL;
	ps->pending_len = ps->npending = 0;
	if (ps->compiled != NULL) {
		if (policy_hooks == &policy_lang_hooks)
			policy_quota_carry(policy_hooks_quota(compiled),
			    policy_hooks_quota(ps->compiled));
		policy_hooks->free(ps->compiled);
	}
	free(ps->text);
	lang_srcmap_free(ps->srcmap);
	/* Decisions name their rule as file:line:col (NULL: by line). */
	ps->srcmap = lang_srcmap_new(text, req.size);
	ps->compiled = compiled;
	ps->text = text;
	ps->len = req.size;
	ps->generation = req.generation;
	ps->loaded_at = (int64_t)(grant_now_ms() / 1000);
	memcpy(ps->hash, rep.hash, sizeof(ps->hash));
	changed_tell(ctx);
	log_info("%s: policy generation %llu loaded, %zu bytes", __func__,
	    (unsigned long long)ps->generation, ps->len);
	ps->load_audited = 0;
	if (policy_hooks == &policy_lang_hooks) {
		budgets_restore(ctx);
		load_audit(ctx);
	}
	msg_reply(ctx, m, MSG_POLICY_LOADED, &rep, sizeof(rep), -1);
	return 0;
}

/*
 * How long the asker may reuse decision r of q (msg_policy_decision's
 * reuse_ms): only an allowed egress the asker said it would reuse
 * (DECIDE_REUSE), not a dry run, and only one that spends no quota, so
 * that a reuse skips nothing a repeat would have counted or refused.
 */
static uint32_t
reuse_ms(const struct policy_state *ps, const struct msg_policy_decide *q,
    const struct msg_policy_decision *r)
{
	const struct policy *p;

	if ((q->flags & DECIDE_REUSE) == 0 || (q->flags & DECIDE_DRY_RUN) ||
	    q->cap != CAP_EGRESS || r->grant.decision != GRANT_ALLOW ||
	    policy_hooks != &policy_lang_hooks ||
	    (p = policy_hooks_policy(ps->compiled)) == NULL ||
	    policy_decision_spends(p,
	        policy_find(p, q->principal, strlen(q->principal)), q->cap,
	        (q->flags & DECIDE_NO_BUDGET) != 0))
		return 0;
	return POLICY_REUSE_MS;
}

/*
 * Decide q for request reqid into r, grant minted. 0, or -1 when q is
 * malformed or its link has no key (r is then a DENY, POLICY_R_REQUEST).
 */
static int
decide_one(struct proc_ctx *ctx, const struct msg_policy_decide *q,
    uint64_t reqid, struct msg_policy_decision *r)
{
	struct policy_state *ps = ctx->arg;
	int rc;

	memset(r, 0, sizeof(*r));
	r->grant.decision = GRANT_DENY;
	r->reason = POLICY_R_REQUEST;
	if (q->cap >= CAP_COUNT || q->link >= PROC_COUNT ||
	    q->link == PROC_PARENT || q->target_len > sizeof(q->target) ||
	    memchr(q->principal, '\0', sizeof(q->principal)) == NULL ||
	    q->principal[0] == '\0')
		return -1;
	if ((ctx->grant_keys_held & PROC_BIT(q->link)) == 0) {
		log_warnx(
		    "%s: no key for link %s", __func__, proc_name(q->link));
		return -1;
	}
	r->reason = 0;
	r->grant.link = q->link;
	r->grant.cap = q->cap;
	r->grant.reqid = reqid;
	strlcpy(r->grant.principal, q->principal, sizeof(r->grant.principal));
	grant_target_hash(q->target, q->target_len, r->grant.target);
	r->grant.expires = grant_now_ms() + POLICY_GRANT_TTL_MS;
	if (budget_unknown(ps, q->principal) &&
	    (q->flags & DECIDE_DRY_RUN) == 0) {
		r->grant.decision = GRANT_DENY;
		r->reason = POLICY_R_RESTORING;
	} else
		policy_hooks->decide(ps->compiled, q, r);
	if (r->rule != 0 &&
	    lang_srcmap_rule(ps->srcmap, r->rule, r->where, sizeof(r->where)) <
	        0)
		r->where[0] = '\0';
	/* Effective rights = token caps & policy rights. */
	if ((q->token_caps & CAP_BIT(q->cap)) == 0)
		r->grant.decision = GRANT_DENY;
	if (r->grant.decision != GRANT_ALLOW || (q->flags & DECIDE_LINK) == 0)
		r->link_ms = 0;
	r->reuse_ms = reuse_ms(ps, q, r);
	r->generation = (uint32_t)ps->generation;
	/* The hook may not widen what was asked for. */
	r->grant.link = q->link;
	r->grant.cap = q->cap;
	r->grant.reqid = reqid;
	if (r->grant.procs_max > GRANT_PROCS_MAX)
		r->grant.procs_max = GRANT_PROCS_MAX;
	if (r->grant.decision == GRANT_ALLOW &&
	    (q->flags & DECIDE_DRY_RUN) == 0 &&
	    policy_hooks == &policy_lang_hooks)
		budget_save(ctx, q->principal);
	if (q->cap == CAP_EGRESS && (q->flags & DECIDE_DRY_RUN) == 0) {
		if (r->grant.decision == GRANT_ALLOW)
			ps->egress_allow++;
		else
			ps->egress_deny++;
	}
	rc = grant_mint(&r->grant, ctx->grant_key[q->link]);
	if (rc != GRANT_OK) {
		log_warnx("%s: %s", __func__, grant_strerror(rc));
		memset(r, 0, sizeof(*r));
		r->grant.decision = GRANT_DENY;
		r->reason = POLICY_R_REQUEST;
		return -1;
	}
	return 0;
}

static int
policy_h_decide(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_policy_decide q;
	struct msg_policy_decision r;

	memcpy(&q, m->data, sizeof(q));
	if (decide_one(ctx, &q, m->hdr.reqid, &r) != 0)
		return -1;
	msg_reply(ctx, m, MSG_POLICY_DECISION, &r, sizeof(r), -1);
	return 0;
}

/* The front's decisions of one pass: every entry gets an answer, a
 * malformed one a refusal, so no request waits for nothing. */
static int
policy_h_decide_batch(struct proc_ctx *ctx, const struct msg *m)
{
	static struct {
		struct msg_batch_hdr h;
		struct msg_policy_decision_entry e[MSG_DECIDE_BATCH_MAX];
	} out;
	struct msg_batch_hdr h;
	struct msg_policy_decide_entry in;
	uint32_t i;

	if (m->hdr.len < sizeof(h))
		return -1;
	memcpy(&h, m->data, sizeof(h));
	if (h.count == 0 || h.count > MSG_DECIDE_BATCH_MAX || h.pad != 0 ||
	    m->hdr.len != sizeof(h) + h.count * sizeof(in))
		return -1;
	memset(&out.h, 0, sizeof(out.h));
	out.h.count = h.count;
	for (i = 0; i < h.count; i++) {
		memcpy(&in, m->data + sizeof(h) + i * sizeof(in), sizeof(in));
		out.e[i].reqid = in.reqid;
		/* decide_one leaves a refusal in place when it fails. */
		(void)decide_one(ctx, &in.q, in.reqid, &out.e[i].d);
	}
	msg_reply(ctx, m, MSG_POLICY_DECISIONS, &out,
	    sizeof(out.h) + h.count * sizeof(out.e[0]), -1);
	return 0;
}

static int
policy_h_mint_key(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;

	memcpy(ps->mint_sk, m->data, sizeof(ps->mint_sk));
	ps->have_mint_key = 1;
	return 0;
}

/* The verifier follows the keys the parent sent last. */
static struct token_verifier *
verifier(struct proc_ctx *ctx)
{
	struct policy_state *ps = ctx->arg;
	struct token_verifier_config vc;
	struct token_key keys[MSG_PUBKEYS_MAX];

	if (ps->tv != NULL && ps->tv_keys == ctx->token_keys)
		return ps->tv;
	token_verifier_free(ps->tv);
	ps->tv = NULL;
	ps->tv_keys = ctx->token_keys;
	if (proc_token_config(ctx, keys, &vc) != 0)
		return NULL;
	if (token_verifier_new(&vc, &ps->tv) != 0)
		ps->tv = NULL;
	return ps->tv;
}

/*
 * A link to a port (msg_policy_mint.port): sandbox:read of one sandbox,
 * made from a bearer token (never from another link), to a port the
 * policy lets the parent's principal give links to, for no longer than
 * the rule says. The front decided it already; this is the check of the
 * process that holds the key, which trusts no one's word for it.
 */
static int
link_claims(struct policy_state *ps, const struct msg_policy_mint *q,
    const struct token_claims *parent, struct token_claims *child)
{
	struct msg_policy_decide d;
	struct msg_policy_decision r;
	int64_t now = (int64_t)(grant_now_ms() / 1000);
	int n;

	if (q->port > 65535 || parent->port != 0 ||
	    q->caps != CAP_BIT(CAP_SANDBOX_READ) || q->sbx[0] == '\0' ||
	    strcmp(child->sbx, q->sbx) != 0 || q->exp <= now)
		return TOKEN_E_INVAL;
	if (ps->compiled == NULL || strlen(parent->sub) >= sizeof(d.principal))
		return TOKEN_E_WIDER;
	memset(&d, 0, sizeof(d));
	memset(&r, 0, sizeof(r));
	d.cap = CAP_SANDBOX_READ;
	d.link = PROC_VMM;
	d.token_caps = parent->caps;
	d.flags = DECIDE_PORT | DECIDE_LINK | DECIDE_DRY_RUN;
	strlcpy(d.principal, parent->sub, sizeof(d.principal));
	n = snprintf(d.target, sizeof(d.target), "%u", q->port);
	d.target_len = (uint32_t)n;
	policy_hooks->decide(ps->compiled, &d, &r);
	if (r.grant.decision != GRANT_ALLOW ||
	    (uint64_t)(q->exp - now) * 1000 > r.link_ms)
		return TOKEN_E_WIDER;
	strlcpy(child->aud, TOKEN_LINK_AUD, sizeof(child->aud));
	child->port = q->port;
	return 0;
}

static int
policy_h_mint(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct msg_policy_mint *q;
	struct msg_policy_minted *r;
	struct token_claims parent, child;
	struct token_verifier *tv;
	char *tok = NULL;
	int rc;

	if ((q = malloc(sizeof(*q))) == NULL)
		return -1;
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		free(q);
		return -1;
	}
	memcpy(q, m->data, sizeof(*q));
	if (q->token_len > sizeof(q->token) ||
	    memchr(q->sbx, '\0', sizeof(q->sbx)) == NULL ||
	    (q->caps & ~CAP_ALL) != 0)
		rc = TOKEN_E_INVAL;
	else if (!ps->have_mint_key || (tv = verifier(ctx)) == NULL)
		rc = TOKEN_E_KEY;
	else if ((rc = token_verify(tv, q->token, q->token_len, &parent)) ==
	        0 &&
	    (rc = token_attenuate(&parent, q->caps, q->exp, q->sbx,
	         (int64_t)(grant_now_ms() / 1000), &child)) == 0 &&
	    (q->port == 0 || (rc = link_claims(ps, q, &parent, &child)) == 0) &&
	    (rc = token_mint(ps->mint_sk, &child, &tok)) == 0) {
		if (strlen(tok) > sizeof(r->token))
			rc = TOKEN_E_TOO_LARGE;
		else {
			r->token_len = (uint32_t)strlen(tok);
			memcpy(r->token, tok, r->token_len);
			r->exp = child.exp;
		}
		free(tok);
	}
	r->status = rc;
	if (rc != 0)
		log_info("%s: refused: %s", __func__, token_strerror(rc));
	msg_reply(ctx, m, MSG_POLICY_MINTED, r, sizeof(*r), -1);
	sodium_memzero(q, sizeof(*q));
	free(q);
	free(r);
	return 0;
}

static int
policy_h_info(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct msg_policy_info r;

	memset(&r, 0, sizeof(r));
	r.egress_allow = ps->egress_allow;
	r.egress_deny = ps->egress_deny;
	if (ps->text != NULL) {
		r.generation = ps->generation;
		r.loaded_at = ps->loaded_at;
		memcpy(r.hash, ps->hash, sizeof(r.hash));
	}
	msg_reply(ctx, m, MSG_POLICY_INFO_REPLY, &r, sizeof(r), -1);
	return 0;
}

static int
policy_h_usage(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct msg_policy_leave q;
	struct msg_policy_usage r;
	uint64_t left = POLICY_UNLIMITED;
	double tokens[2] = { -1, -1 };

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.principal, '\0', sizeof(q.principal)) == NULL)
		return -1;
	memset(&r, 0, sizeof(r));
	if (policy_hooks == &policy_lang_hooks) {
		const struct policy_limits *lim;

		policy_hooks_levels(ps->compiled, q.principal, &left, tokens);
		if ((lim = policy_hooks_limits(ps->compiled, q.principal)) !=
		    NULL) {
			r.contexts_max = lim->contexts;
			r.pause_ms = lim->pause_ms;
			r.snapshots_max = lim->snapshots_max;
		}
	}
	r.budget_remaining = left == POLICY_UNLIMITED ? -1 : (int64_t)left;
	r.read_tokens = tokens[0];
	r.write_tokens = tokens[1];
	msg_reply(ctx, m, MSG_POLICY_USAGE_REPLY, &r, sizeof(r), -1);
	return 0;
}

/* A run that took a concurrency slot (DECIDE_ENTER) has ended. */
static int
policy_h_leave(struct proc_ctx *ctx, const struct msg *m)
{
	struct policy_state *ps = ctx->arg;
	struct msg_policy_leave q;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.principal, '\0', sizeof(q.principal)) == NULL)
		return -1;
	if (policy_hooks == &policy_lang_hooks)
		policy_hooks_leave(ps->compiled, q.principal);
	return 0;
}

static const struct msg_handler policy_handlers[] = {
	MSG_HANDLERS_COMMON,
	{ MSG_POLICY_LOAD, PROC_BIT(PROC_PARENT),
	    sizeof(struct msg_policy_load), MSG_H_FD, policy_h_load },
	{ MSG_POLICY_DECIDE, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM),
	    sizeof(struct msg_policy_decide), 0, policy_h_decide },
	{ MSG_POLICY_DECIDE_BATCH, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_batch_hdr) +
	        MSG_DECIDE_BATCH_MAX * sizeof(struct msg_policy_decide_entry),
	    MSG_H_VARIABLE, policy_h_decide_batch },
	{ MSG_CTL_MINT_KEY, PROC_BIT(PROC_PARENT), sizeof(struct msg_mint_key),
	    0, policy_h_mint_key },
	{ MSG_POLICY_MINT, PROC_BIT(PROC_FRONT), sizeof(struct msg_policy_mint),
	    0, policy_h_mint },
	{ MSG_POLICY_INFO, PROC_BIT(PROC_FRONT), 0, 0, policy_h_info },
	{ MSG_POLICY_LEAVE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_policy_leave), 0, policy_h_leave },
	{ MSG_POLICY_USAGE, PROC_BIT(PROC_FRONT),
	    sizeof(struct msg_policy_leave), 0, policy_h_usage },
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, policy_h_store_reply },
};

int
policy_main(struct proc_ctx *ctx)
{
	static struct policy_state ps;

	ctx->handlers = policy_handlers;
	ctx->nhandlers = nitems(policy_handlers);
	ctx->arg = &ps;
	ctx->on_peer = policy_on_peer;
	/* Tokens are JSON: seed jansson's hash here, or it would open
	 * /dev/urandom, which this process may not. */
	json_object_seed(randombytes_random() | 1);
	log_info("%s: ready", __func__);
	return proc_loop(ctx);
}

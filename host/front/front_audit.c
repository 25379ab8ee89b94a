/*
 * The front's side of the store: every decision and lifecycle event goes
 * to the hash-chained audit log (MSG_STORE_AUDIT, not waited for: the
 * store answers in order and a failure is logged), token revocation is
 * asked of the store for each request (fail closed), and GET /v1/audit
 * reads the log back.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/front/front_backend_int.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "policy/policy.h"

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Entries wait in fb->audit_buf, then go in one message, so the store
 * commits them in one transaction: one fsync for a burst of requests
 * rather than one each. They wait at most FB_AUDIT_DELAY_MS (the event
 * loop wakes for it, front_backend_flush_in), or until the message is
 * full.
 */
static void
audit_send(struct front_backend *fb, const struct store_audit *e)
{
	struct store_wire_audit hdr;
	void *msg = NULL;
	size_t len;
	int rc;

	if ((rc = store_wire_audit_encode(e, 1, &msg, &len)) != STORE_OK) {
		log_warnx("audit: %s", store_strerror(rc));
		return;
	}
	/* One entry's encoding: the header, then its length and record. */
	len -= sizeof(hdr);
	if (fb->audit_len + len > MSG_MAX_PAYLOAD - sizeof(hdr) ||
	    fb->audit_count == STORE_WIRE_MAX_AUDIT)
		fb_audit_flush(fb);
	if (fb->audit_buf == NULL &&
	    (fb->audit_buf = malloc(MSG_MAX_PAYLOAD)) == NULL) {
		log_warnx(
		    "audit: out of memory; lost: %s %s", e->action, e->target);
		free(msg);
		return;
	}
	if (fb->audit_len == 0) {
		fb->audit_len = sizeof(hdr);
		fb->audit_since_ms = mono_ms();
	}
	memcpy(
	    fb->audit_buf + fb->audit_len, (uint8_t *)msg + sizeof(hdr), len);
	fb->audit_len += len;
	fb->audit_count++;
	free(msg);
}

/* ms until the interval of refusals without a principal ends, -1 none. */
static int
anon_due_in(const struct front_backend *fb, uint64_t now)
{
	if (fb->anon_n == 0 && fb->anon_other == 0)
		return -1;
	if (now >= fb->anon_since_ms + FB_ANON_INTERVAL_MS)
		return 0;
	return (int)(fb->anon_since_ms + FB_ANON_INTERVAL_MS - now);
}

int
front_backend_flush_in(struct front_backend *fb)
{
	uint64_t now = mono_ms();
	int in = anon_due_in(fb, now), a;

	if (fb->audit_count == 0)
		return in;
	a = now >= fb->audit_since_ms + FB_AUDIT_DELAY_MS
	    ? 0
	    : (int)(fb->audit_since_ms + FB_AUDIT_DELAY_MS - now);
	return in < 0 || a < in ? a : in;
}

void
front_backend_flush(struct front_backend *fb)
{
	uint64_t now = mono_ms();

	fb_flush_decisions(fb);
	fb_flush_vmm(fb);
	if (anon_due_in(fb, now) == 0)
		fb_audit_anon_flush(fb);
	if (fb->audit_count != 0 &&
	    now >= fb->audit_since_ms + FB_AUDIT_DELAY_MS)
		fb_audit_flush(fb);
}

void
fb_audit_flush(struct front_backend *fb)
{
	struct store_wire_audit hdr;

	if (fb->audit_count == 0)
		return;
	hdr.version = STORE_WIRE_VERSION;
	hdr.count = fb->audit_count;
	memcpy(fb->audit_buf, &hdr, sizeof(hdr));
	if (fb->ctx->fd[PROC_STORE] < 0 ||
	    msg_send(fb->ctx->fd[PROC_STORE], MSG_STORE_AUDIT, 0,
	        ++fb->next_reqid, fb->audit_buf, fb->audit_len, -1) != MSG_OK)
		log_warnx("audit: the store is down; %u entries lost",
		    fb->audit_count);
	fb->audit_len = 0;
	fb->audit_count = 0;
}

/*
 * Why a decision went as it did, in the audit log's words: rule says
 * what governed it (the policy rule by id and line, or what stood in for
 * one: the token's capabilities, the default deny), detail the reason
 * and the answer the client was given ("reason=rate status=429"). A
 * refusal for a limit (rate, concurrent, budget) names the rule whose
 * limit it is, and the reason says it was the limit, not the rule.
 */
static void
decision_why(const struct msg_policy_decision *d, const char *override,
    char *rule, size_t rlen, char *detail, size_t dlen)
{
	const char *reason;
	char at[64];
	int status;

	reason = policy_reason_keyword((enum policy_reason)d->reason);
	if (d->grant.decision == GRANT_ALLOW && override == NULL)
		status = 0;
	else if (override != NULL) {
		reason = override;
		status = 423;
	} else if (d->reason == POLICY_R_RATE || d->reason == POLICY_R_BUSY)
		status = 429;
	else if (d->reason == POLICY_R_RESTORING)
		status = 503;
	else
		status = 403;
	/* The rule by its id and where it is written (file:line:col). */
	if (d->where[0] != '\0' && memchr(d->where, '\0', sizeof(d->where)))
		snprintf(at, sizeof(at), "rule %u, %s", d->rule, d->where);
	else
		snprintf(at, sizeof(at), "rule %u, line %u", d->rule, d->line);
	if (override != NULL)
		snprintf(rule, rlen, "lock writes (%s)", at);
	else if (d->reason == POLICY_R_BUSY)
		strlcpy(rule, "concurrent limit", rlen);
	else if (d->rule != 0 && d->reason == POLICY_R_RATE)
		snprintf(rule, rlen, "rate limit (%s)", at);
	else if (d->rule != 0 && d->reason == POLICY_R_BUDGET)
		snprintf(rule, rlen, "budget (%s)", at);
	else if (d->rule != 0)
		strlcpy(rule, at, rlen);
	else if (d->reason == POLICY_R_TOKEN)
		strlcpy(rule, "token caps", rlen);
	else if (d->reason == POLICY_R_PRINCIPAL)
		strlcpy(rule, "unknown principal", rlen);
	else if (d->grant.decision == GRANT_ALLOW)
		strlcpy(rule, "", rlen);
	else
		strlcpy(rule, "default deny", rlen);
	if (status == 0)
		snprintf(detail, dlen, "reason=%s", reason);
	else if (d->reason == POLICY_R_RATE && override == NULL)
		snprintf(detail, dlen,
		    "reason=%s status=%d retry_after_ms=%llu", reason, status,
		    (unsigned long long)d->retry_after_ms);
	else
		snprintf(detail, dlen, "reason=%s status=%d", reason, status);
}

/*
 * Append one entry and wait until the store has committed it: API_OK, or
 * API_ESTORAGE (507) when the store has no room. The entries waiting in
 * the batch go first (in order on the link), so the log keeps the order
 * of the requests; this one is its own message, so its outcome is its
 * own whatever other requests are doing meanwhile.
 */
static int
commit_entry(struct front_backend *fb, const struct store_audit *e,
    struct api_error *err)
{
	void *msg = NULL, *reply;
	size_t len, rlen = MSG_MAX_PAYLOAD;
	uint32_t status;
	int rc;

	if (store_wire_audit_encode(e, 1, &msg, &len) != STORE_OK)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	fb_audit_flush(fb);
	if ((reply = malloc(rlen)) == NULL) {
		free(msg);
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	}
	rc = fb_call(fb, PROC_STORE, MSG_STORE_AUDIT, ++fb->next_reqid, msg,
	    len, -1, MSG_STORE_REPLY, FB_R_VARIABLE, reply, &rlen, NULL, err);
	free(msg);
	if (rc != API_OK) {
		free(reply);
		log_warnx("audit: %s %s not committed: %s", e->action,
		    e->target, err->message);
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	}
	if (store_wire_reply_status(reply, rlen, &status) != STORE_OK)
		status = STORE_E_IO;
	free(reply);
	if (status == STORE_OK) {
		fb->audit_full = 0;
		return API_OK;
	}
	log_warnx("audit: the store refused %s %s: %s; the operation is "
	          "refused",
	    e->action, e->target, store_strerror((int)status));
	if (status == STORE_E_FULL || status == STORE_E_NOSPC) {
		fb->audit_full = 1;
		return fb_fail(err, API_ESTORAGE,
		    "The audit log is full: the operation was not done");
	}
	return fb_fail(err, API_EINTERNAL,
	    "The audit log cannot be written: the operation was not done");
}

/* The decision's entry; err NULL: batched, else committed (waited). */
static int
audit_decision(struct front_backend *fb, const struct api_call *call,
    const char *target, const struct msg_policy_decision *d,
    const char *override, struct api_error *err)
{
	char esc[4 * 64 + 1], rule[96], detail[96];
	int allow = d->grant.decision == GRANT_ALLOW && override == NULL;

	decision_why(d, override, rule, sizeof(rule), detail, sizeof(detail));
	/* Every decision is in the audit log; the operator's log has the
	 * refusals, and the allowed ones with -v. */
	(allow ? log_debug : log_info)("decision %s: %s %s %s on %s: %s (%s)",
	    call->request_id,
	    log_escape(
	        esc, sizeof(esc), call->who->sub, strnlen(call->who->sub, 64)),
	    allow ? "allow" : "deny", cap_name(call->cap),
	    target[0] != '\0' ? target : "-", rule[0] ? rule : "-", detail);
	return fb_audit_outcome(
	    fb, call, cap_name(call->cap), target, allow, rule, detail, err);
}

/*
 * A request that came by a link to a port rather than with a token: its
 * entries say so ("by link", and the link's id is the entry's jti), the
 * principal being who gave the link. The link itself is never written.
 */
static const char *
link_mark(
    const struct api_call *call, const char *detail, char *buf, size_t len)
{
	if (call->who == NULL || !call->who->via_link)
		return detail;
	snprintf(buf, len, "%s%sby link", detail != NULL ? detail : "",
	    detail != NULL && detail[0] != '\0' ? "; " : "");
	return buf;
}

int
fb_audit_outcome(struct front_backend *fb, const struct api_call *call,
    const char *action, const char *target, int allow, const char *rule,
    const char *detail, struct api_error *err)
{
	struct store_audit e;
	char marked[API_MSG_MAX + 400];

	memset(&e, 0, sizeof(e));
	e.time_ms = wall_ms();
	e.request_id = call->request_id;
	e.client_request_id = call->client_request_id;
	e.principal = call->who->sub;
	e.jti = call->who->jti;
	e.action = action;
	e.target = target;
	e.decision = allow ? STORE_DECISION_ALLOW : STORE_DECISION_DENY;
	e.rule = rule;
	e.detail = link_mark(call, detail, marked, sizeof(marked));
	if (err != NULL)
		return commit_entry(fb, &e, err);
	audit_send(fb, &e);
	return API_OK;
}

int
fb_audit_decision_commit(struct front_backend *fb, const struct api_call *call,
    const char *target, const struct msg_policy_decision *d,
    struct api_error *err)
{
	if (!fb_audit_must_commit(fb, call->cap))
		return audit_decision(fb, call, target, d, NULL, NULL);
	return audit_decision(fb, call, target, d, NULL, err);
}

void
fb_audit_decision(struct front_backend *fb, const struct api_call *call,
    const char *target, const struct msg_policy_decision *d)
{
	audit_decision(fb, call, target, d, NULL, NULL);
}

void
fb_audit_lock_refusal(struct front_backend *fb, const struct api_call *call,
    const char *target, const struct msg_policy_decision *d)
{
	audit_decision(fb, call, target, d, "lock", NULL);
}

/*
 * A request refused before any policy decision: no token, a token that
 * does not verify, or one that lacks the route's capability or is scoped
 * to another sandbox. The principal is the token's when it verified, ""
 * otherwise; rule names what refused it, detail the reason and status.
 */
/*
 * The interval of refusals without a principal has ended: one entry per
 * source for those counted, not written one by one (and one for the
 * sources past the table's), then a new interval.
 */
void
fb_audit_anon_flush(struct front_backend *fb)
{
	struct store_audit e;
	char detail[512];

	for (unsigned i = 0; i <= fb->anon_n; i++) {
		const struct fb_anon *a = i < fb->anon_n ? &fb->anon[i] : NULL;
		uint64_t n = a != NULL ? a->counted : fb->anon_other;

		if (n == 0)
			continue;
		snprintf(detail, sizeof(detail),
		    "reason=%s status=401 count=%llu source=%s (refusals "
		    "without a principal in %d s past the first %d of a "
		    "source, counted)",
		    a != NULL ? a->reason : "several", (unsigned long long)n,
		    a != NULL ? a->peer : "other", FB_ANON_INTERVAL_MS / 1000,
		    FB_ANON_EACH);
		memset(&e, 0, sizeof(e));
		e.time_ms = wall_ms();
		e.request_id = "";
		e.principal = "";
		e.jti = "";
		e.action = "token.refused";
		e.target = a != NULL ? a->peer : "";
		e.decision = STORE_DECISION_DENY;
		e.rule = "token";
		e.detail = detail;
		audit_send(fb, &e);
	}
	memset(fb->anon, 0, sizeof(fb->anon));
	fb->anon_n = 0;
	fb->anon_other = 0;
	fb->anon_entries = 0;
	fb->anon_since_ms = mono_ms();
}

/*
 * A refusal without a principal: 1 when it is to be an entry of its own
 * (the first FB_ANON_EACH of its source in the interval, FB_ANON_ENTRIES
 * in all), 0 when it was counted for the interval's aggregate entry. No
 * token costs the log a bounded number of entries, however many come.
 */
static int
anon_refusal(struct front_backend *fb, const char *peer, const char *action,
    const char *reason)
{
	struct fb_anon *a = NULL;
	uint64_t now = mono_ms();

	if (anon_due_in(fb, now) == 0)
		fb_audit_anon_flush(fb);
	if (fb->anon_n == 0 && fb->anon_other == 0)
		fb->anon_since_ms = now;
	for (unsigned i = 0; i < fb->anon_n && a == NULL; i++)
		if (strcmp(fb->anon[i].peer, peer) == 0)
			a = &fb->anon[i];
	if (a == NULL && fb->anon_n < FB_ANON_SOURCES) {
		a = &fb->anon[fb->anon_n++];
		strlcpy(a->peer, peer, sizeof(a->peer));
	}
	if (a != NULL && ++a->seen <= FB_ANON_EACH &&
	    fb->anon_entries < FB_ANON_ENTRIES) {
		fb->anon_entries++;
		fb->anon_total[0]++;
		return 1;
	}
	fb->anon_total[1]++;
	if (a == NULL) {
		fb->anon_other++;
		return 0;
	}
	if (a->counted++ == 0) {
		strlcpy(a->action, action, sizeof(a->action));
		strlcpy(a->reason, reason, sizeof(a->reason));
	}
	return 0;
}

static void
fb_audit_refused(void *arg, const struct api_call *call, const char *action,
    const char *target, int status, const char *rule, const char *reason)
{
	struct front_backend *fb = arg;
	const char *peer = call->peer != NULL ? call->peer : "";
	struct store_audit e;
	char detail[API_MSG_MAX + 96];

	if (call->who->sub[0] == '\0') {
		if (!anon_refusal(fb, peer, action, reason))
			return;
		snprintf(detail, sizeof(detail),
		    "reason=%s status=%d source=%s", reason, status,
		    peer[0] != '\0' ? peer : "-");
	} else
		snprintf(detail, sizeof(detail), "reason=%s status=%d%s",
		    reason, status, call->who->via_link ? "; by link" : "");
	memset(&e, 0, sizeof(e));
	e.time_ms = wall_ms();
	e.request_id = call->request_id;
	e.client_request_id = call->client_request_id;
	e.principal = call->who->sub;
	e.jti = call->who->jti;
	e.action = action;
	e.target = target;
	e.decision = STORE_DECISION_DENY;
	e.rule = rule;
	e.detail = detail;
	audit_send(fb, &e);
}

void
fb_audit_event(struct front_backend *fb, const struct api_call *call,
    const char *action, const char *target, const char *detail)
{
	struct store_audit e;

	memset(&e, 0, sizeof(e));
	e.time_ms = wall_ms();
	e.request_id = call->request_id;
	e.client_request_id = call->client_request_id;
	e.principal = call->who->sub;
	e.jti = call->who->jti;
	e.action = action;
	e.target = target;
	e.decision = STORE_DECISION_INFO;
	e.rule = "";
	e.detail = detail;
	audit_send(fb, &e);
}

int
fb_audit_must_commit(const struct front_backend *fb, enum cap_id cap)
{
	return fb->audit_full || cap_is_write(cap);
}

/* Replies to writes not waited for (audit appends, idempotency records
 * of deferred replies): the store answers each in order. */
static int
h_store_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	uint32_t status;

	if (store_wire_reply_status(m->data, m->hdr.len, &status) != STORE_OK)
		return -1;
	if (status != STORE_OK)
		log_warnx("the store refused a write: %s",
		    store_strerror((int)status));
	/* Until an append commits again, requests wait for theirs. */
	if (status == STORE_E_FULL || status == STORE_E_NOSPC)
		fb->audit_full = 1;
	return 0;
}

const struct msg_handler fb_store_handlers[] = {
	{ MSG_STORE_REPLY, PROC_BIT(PROC_STORE), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, h_store_reply },
};
const size_t fb_store_nhandlers = nitems(fb_store_handlers);

int
fb_store_call(struct front_backend *fb, uint64_t reqid, uint16_t type,
    const void *q, size_t qlen, void **reply, size_t *rlen,
    struct store_wire_reply *hdr, char *next, struct api_error *err)
{
	return fb_store_call_fd(
	    fb, reqid, type, q, qlen, -1, reply, rlen, hdr, next, err);
}

int
fb_store_get(struct front_backend *fb, unsigned db, const char *k1,
    const char *k2, int bad_key, const char *bad_msg, void **reply,
    const void **rec, size_t *len, uint32_t *status, struct api_error *err)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	size_t qlen, rlen;
	void *q;
	int rc;

	*reply = NULL;
	*rec = NULL;
	*len = 0;
	if (store_wire_key_encode(
	        MSG_STORE_GET, db, k1, k2, 0, NULL, &q, &qlen) != STORE_OK)
		return fb_fail(err, bad_key, "%s", bad_msg);
	rc = fb_store_call(
	    fb, 0, MSG_STORE_GET, q, qlen, reply, &rlen, &hdr, next, err);
	free(q);
	if (rc != API_OK)
		return rc;
	*status = hdr.status;
	/* One record, whole, or the answer is not STORE_OK. */
	if (hdr.status == STORE_OK &&
	    (hdr.count != 1 ||
	        store_wire_reply_record(*reply, rlen, 0, rec, len) != STORE_OK))
		*status = STORE_E_CORRUPT;
	return API_OK;
}

int
fb_store_call_fd(struct front_backend *fb, uint64_t reqid, uint16_t type,
    const void *q, size_t qlen, int qfd, void **reply, size_t *rlen,
    struct store_wire_reply *hdr, char *next, struct api_error *err)
{
	int rc;

	if ((*reply = malloc(MSG_MAX_PAYLOAD)) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	*rlen = MSG_MAX_PAYLOAD;
	/* What the store is asked after an audit entry is made sees it. */
	fb_audit_flush(fb);
	if (reqid == 0)
		reqid = ++fb->next_reqid;
	rc = fb_call(fb, PROC_STORE, type, reqid, q, qlen, qfd, MSG_STORE_REPLY,
	    FB_R_VARIABLE, *reply, rlen, NULL, err);
	if (rc == API_OK &&
	    store_wire_reply_decode(*reply, *rlen, hdr, next) != STORE_OK)
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
	if (rc != API_OK) {
		free(*reply);
		*reply = NULL;
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	}
	if (hdr->status == STORE_E_FULL || hdr->status == STORE_E_NOSPC) {
		free(*reply);
		*reply = NULL;
		return fb_fail(err, API_ESTORAGE, "The store is full");
	}
	return API_OK;
}

static int
fb_audit_list(void *arg, const struct api_call *call,
    const struct api_page *page, struct api_audit_entry **out, size_t *n,
    char next[API_ID_MAX + 1], struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_wire_reply hdr;
	char cursor[STORE_CURSOR_MAX];
	void *q = NULL, *reply = NULL;
	size_t qlen, rlen, i;
	int rc;

	if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_AUDIT, NULL,
	        page->cursor, page->limit, NULL, &q, &qlen) != STORE_OK)
		return fb_fail(err, API_EBADREQ, "Bad cursor");
	rc = fb_store_call(
	    fb, 0, MSG_STORE_LIST, q, qlen, &reply, &rlen, &hdr, cursor, err);
	free(q);
	if (rc != API_OK)
		return rc;
	if (hdr.status != STORE_OK) {
		free(reply);
		return fb_fail(
		    err, API_EINTERNAL, "%s", store_strerror((int)hdr.status));
	}
	if ((*out = calloc(hdr.count ? hdr.count : 1, sizeof(**out))) == NULL) {
		free(reply);
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	}
	*n = 0;
	for (i = 0; i < hdr.count; i++) {
		struct api_audit_entry *a = &(*out)[*n];
		struct store_audit e;
		const void *rec;
		size_t reclen;

		if (store_wire_reply_record(
		        reply, rlen, (uint32_t)i, &rec, &reclen) != STORE_OK ||
		    store_audit_decode(rec, reclen, &e) != STORE_OK)
			continue;
		a->seq = e.seq;
		a->time = e.time_ms / 1000;
		strlcpy(a->request_id, e.request_id, sizeof(a->request_id));
		strlcpy(a->client_request_id,
		    e.client_request_id != NULL ? e.client_request_id : "",
		    sizeof(a->client_request_id));
		strlcpy(a->principal, e.principal, sizeof(a->principal));
		strlcpy(a->action, e.action, sizeof(a->action));
		strlcpy(a->target, e.target, sizeof(a->target));
		strlcpy(a->decision,
		    e.decision == STORE_DECISION_ALLOW      ? "allow"
		        : e.decision == STORE_DECISION_DENY ? "deny"
		                                            : "info",
		    sizeof(a->decision));
		strlcpy(a->rule, e.rule, sizeof(a->rule));
		strlcpy(a->detail, e.detail, sizeof(a->detail));
		(*n)++;
	}
	strlcpy(next, cursor, API_ID_MAX + 1);
	free(reply);
	return API_OK;
}

void
fb_audit_ops(struct api_backend *ops)
{
	ops->audit_list = fb_audit_list;
	ops->audit_refused = fb_audit_refused;
}

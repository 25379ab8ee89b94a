/*
 * Sandboxes, from the front's side: each op is one synchronous call to
 * the vmm (host/vmm_msg.h), which owns the sandboxes and their
 * workspaces, carrying the policy's grant. A new sandbox's token is
 * derived from the caller's by the policy process (fb_mint): scoped to
 * the sandbox with `sbx`, never wider than the caller's, and expiring no
 * later than the sandbox.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "host/config.h"
#include "host/front/front_backend_int.h"
#include "host/proc_egress.h"
#include "host/vmm_msg.h"
#include "lib/log.h"

/* What a sandbox token may hold at most. */
#define SBX_TOKEN_CAPS                                                         \
	(CAP_BIT(CAP_SANDBOX_READ) | CAP_BIT(CAP_SANDBOX_WRITE) |              \
	    CAP_BIT(CAP_EXEC) | CAP_BIT(CAP_ARTIFACT_READ) |                   \
	    CAP_BIT(CAP_ARTIFACT_WRITE))

int
fb_sbx_error(int status, struct api_error *err)
{
	switch (status) {
	case SBX_OK:
		return API_OK;
	case SBX_E_NOTFOUND:
		return fb_fail(err, API_ENOTFOUND, "Sandbox not found");
	case SBX_E_EXISTS:
		return fb_fail(err, API_ECONFLICT, "Sandbox id taken");
	case SBX_E_IMAGE:
		return fb_fail(err, API_ENOTFOUND,
		    "Image not found or not signed by a trusted key");
	case SBX_E_FULL:
		return fb_fail(err, API_ESTORAGE, "Sandbox limit reached");
	case SBX_E_QUOTA:
		return fb_fail(err, API_EFORBIDDEN,
		    "Sandbox quota reached: the policy's `sandboxes` limit; "
		    "delete one first");
	case SBX_E_GRANT:
		return fb_fail(err, API_EFORBIDDEN, "Not authorized");
	case SBX_E_RESTORING:
		err->retry_after = 1;
		return fb_fail(err, API_EUNAVAIL,
		    "Sandboxes are being restored; try again");
	case SBX_E_FORK_BUSY:
		err->retry_after = 1;
		return fb_fail(
		    err, API_EUNAVAIL, "Too many forks in progress; try again");
	case SBX_E_CTX_FULL:
		return fb_fail(err, API_EFORBIDDEN,
		    "Context limit reached: the sandbox's contexts, which a "
		    "fork takes along, pass the `contexts` quota");
	case SBX_E_SNAP_FULL:
		return fb_fail(err, API_EFORBIDDEN,
		    "Snapshot quota reached: the sandbox's contexts, which a "
		    "fork takes along, pass the `snapshots` quota");
	case SBX_E_FORK_TOOBIG:
		return fb_fail(err, API_ESTORAGE,
		    "The workspace is too large to fork: past the workspace "
		    "quota, 200000 names, 64 levels, or 4 s to copy");
	case SBX_E_PAUSED:
		return fb_fail(err, API_ECONFLICT, "The sandbox is paused");
	case SBX_E_ISOLATION:
		return fb_fail(err, API_EUNAVAIL,
		    "unavailable: isolation kvm; this box runs trap (the "
		    "policy asks hardware isolation for this principal)");
	default:
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
}

static void
to_api(const struct msg_vmm_sandbox_info *i, struct api_sandbox *out)
{
	memset(out, 0, sizeof(*out));
	strlcpy(out->id, i->id, sizeof(out->id));
	strlcpy(out->image, i->image, sizeof(out->image));
	out->created_at = i->created_at;
	out->expires_at = i->expires_at;
	strlcpy(
	    out->status, i->paused ? "paused" : "running", sizeof(out->status));
}

/* The grant authorize obtained for this call, for the vmm. */
static const struct fb_authz *
authz(const struct api_call *call)
{
	const struct fb_authz *a = call->authz;

	return a != NULL && a->link == PROC_VMM ? a : NULL;
}

/* One sandbox request to the vmm with an INFO reply. */
static int
sbx_call(struct front_backend *fb, uint32_t type, uint64_t reqid, const void *q,
    size_t qlen, struct msg_vmm_sandbox_info *r, struct api_error *err)
{
	size_t rlen = sizeof(*r);
	int rc;

	rc = fb_call(fb, PROC_VMM, type, reqid, q, qlen, -1,
	    MSG_VMM_SANDBOX_INFO, 0, r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	return fb_sbx_error((int)r->status, err);
}

/* "sbx-" and 20 random base32 characters; "sbx-<node>-" and 20 when
 * keepd.yaml names the node, so a balancer in front of several boxes
 * routes every request for the sandbox to the box that holds it
 * (docs/scaling.md). The random part has no '-', so the node is always
 * the text between the first two dashes. */
static void
new_id(const struct msg_config *cfg, char out[SBX_ID_MAX])
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz234567";
	uint8_t rnd[20];
	size_t i, at = 4;

	memcpy(out, "sbx-", 4);
	if (cfg != NULL && cfg->node[0] != '\0') {
		i = strnlen(cfg->node, CONFIG_NODE_MAX);
		memcpy(out + at, cfg->node, i);
		at += i;
		out[at++] = '-';
	}
	randombytes_buf(rnd, sizeof(rnd));
	for (i = 0; i < sizeof(rnd); i++)
		out[at + i] = alpha[rnd[i] & 31];
	out[at + sizeof(rnd)] = '\0';
}

/*
 * why NULL: a trial, whose token is thrown away (not a mint). keep's
 * sandbox token ends with its sandbox (token_expires_at says when; POST
 * .../token makes another). E2B's SDK keeps the token create or connect
 * gave it for the sandbox's whole life, which setTimeout may extend: on
 * E2B's routes it lives as long as the caller's own, and reaches only
 * its sandbox, whose id is never reused (docs/e2b.md, "Credentials").
 */
static int
sandbox_token(struct front_backend *fb, const struct api_call *call,
    const char *id, int64_t expires_at, const char *why, struct api_token *tok,
    struct api_error *err)
{
	int64_t exp = call->who->exp;

	if ((!call->e2b || exp == 0) && expires_at != 0 &&
	    (exp == 0 || expires_at < exp))
		exp = expires_at;
	if (why == NULL) {
		int rc = fb_mint(fb, call, call->who->caps & SBX_TOKEN_CAPS,
		    exp, id, tok, err);

		sodium_memzero(tok, sizeof(*tok));
		return rc;
	}
	return fb_mint_recorded(
	    fb, call, call->who->caps & SBX_TOKEN_CAPS, exp, id, why, tok, err);
}

/* The sandbox's webhook secret from the egress process, or "". */
static void
webhook_secret(
    struct front_backend *fb, const char *id, char *out, size_t outlen)
{
	struct msg_egress_secret q;
	struct api_error err;
	size_t rlen = sizeof(q);

	out[0] = '\0';
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	memset(&err, 0, sizeof(err));
	if (fb_call(fb, PROC_EGRESS, MSG_EGRESS_SECRET, ++fb->next_reqid, &q,
	        sizeof(q), -1, MSG_EGRESS_SECRET_REPLY, 0, &q, &rlen, NULL,
	        &err) != API_OK) {
		log_warnx("sandbox %s: no webhook secret: %s", id, err.message);
		return;
	}
	q.hex[sizeof(q.hex) - 1] = '\0';
	strlcpy(out, q.hex, outlen);
	sodium_memzero(&q, sizeof(q));
}

/* Take back a sandbox the vmm made when it cannot be recorded. */
static void
sandbox_undo(
    struct front_backend *fb, const struct api_call *call, const char *id)
{
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_sandbox_info r;
	struct msg_policy_decision d;
	struct api_error err;
	uint64_t reqid = ++fb->next_reqid;

	memset(&q, 0, sizeof(q));
	memset(&err, 0, sizeof(err));
	strlcpy(q.id, id, sizeof(q.id));
	if (fb_decide(fb, call->who, CAP_SANDBOX_WRITE, PROC_VMM, id, reqid,
	        DECIDE_DRY_RUN, &d, &err) != API_OK ||
	    d.grant.decision != GRANT_ALLOW)
		goto fail;
	q.grant = d.grant;
	if (sbx_call(fb, MSG_VMM_SANDBOX_DELETE, reqid, &q, sizeof(q), &r,
	        &err) == API_OK)
		return;
fail:
	log_warnx(
	    "sandbox %s: not recorded and not taken back: %s", id, err.message);
}

/* A new sandbox, or with from a fork of the caller's sandbox from (the
 * vmm copies its workspace; spec carries its image and environment). */
static int
sandbox_make(struct front_backend *fb, const struct api_call *call,
    const struct api_sandbox_spec *spec, const char *from,
    struct api_sandbox *out, struct api_token *tok, struct api_error *err)
{
	struct msg_vmm_sandbox_new *q;
	struct msg_vmm_sandbox_info r;
	struct msg_policy_decision d;
	uint64_t reqid = ++fb->next_reqid;
	size_t i, used = 0;
	int rc;

	if ((q = calloc(1, sizeof(*q))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	new_id(fb->ctx->config, q->id);
	/* The decision the API layer asked for had no target yet: decide
	 * again for this sandbox, so the grant names it (a dry run: the
	 * operation was counted once already). */
	rc = fb_decide(fb, call->who, CAP_SANDBOX_WRITE, PROC_VMM, q->id, reqid,
	    DECIDE_DRY_RUN, &d, err);
	if (rc != API_OK)
		goto out;
	if (d.grant.decision != GRANT_ALLOW) {
		rc = fb_fail(err, API_EFORBIDDEN,
		    "Missing required capability: sandbox:write");
		goto out;
	}
	q->grant = d.grant;
	if (strlcpy(q->image, spec->image, sizeof(q->image)) >=
	    sizeof(q->image)) {
		rc = fb_fail(err, API_ENOTFOUND, "Image not found");
		goto out;
	}
	q->ttl_s = spec->ttl_s;
	if (spec->home_user)
		q->flags |= SBX_NEW_HOME_USER;
	for (i = 0; i < spec->nenv; i++) {
		int n = snprintf(q->env + used, sizeof(q->env) - used, "%s=%s",
		    spec->env[i].key, spec->env[i].value);

		if (n < 0 || (size_t)n + 1 > sizeof(q->env) - used ||
		    spec->env[i].key[0] == '\0' ||
		    strchr(spec->env[i].key, '=') != NULL) {
			rc = fb_fail(
			    err, API_EBADREQ, "env: bad name or too large");
			goto out;
		}
		used += (size_t)n + 1;
	}
	q->env_len = (uint32_t)used;
	if (from != NULL &&
	    strlcpy(q->from, from, sizeof(q->from)) >= sizeof(q->from)) {
		rc = fb_fail(err, API_ENOTFOUND, "Sandbox not found");
		goto out;
	}
	/* The fork's contexts count toward the caller's quota. */
	if (from != NULL &&
	    (rc = fb_contexts_max(fb, call, &q->contexts_max, err)) != API_OK)
		goto out;
	/*
	 * The new sandbox's token must be derivable before anything is
	 * made: a token scoped to a sandbox, or one at the derivation
	 * depth limit, cannot derive it, and a request answered with an
	 * error must have done nothing. A schedule's fresh sandbox
	 * (host/front/front_sched.c) has no caller's token to derive one
	 * from, and needs none.
	 */
	if (tok != NULL &&
	    (rc = sandbox_token(fb, call, q->id, 0, NULL, tok, err)) != API_OK)
		goto out;
	if ((rc = sbx_call(fb, MSG_VMM_SANDBOX_CREATE, reqid, q, sizeof(*q), &r,
	         err)) != API_OK)
		goto out;
	if ((rc = fb_persist_sandbox(fb, call->who, &r, spec, err)) != API_OK) {
		/* Not durable, so not created. */
		sandbox_undo(fb, call, r.id);
		goto out;
	}
	/* Now with the sandbox's expiry; the check above makes a refusal
	 * here unlikely, and then the sandbox is taken back. */
	if (tok != NULL &&
	    (rc = sandbox_token(fb, call, r.id, r.expires_at,
	         from != NULL ? "sandbox fork" : "sandbox create", tok, err)) !=
	        API_OK) {
		struct api_error ferr;

		memset(&ferr, 0, sizeof(ferr));
		sandbox_undo(fb, call, r.id);
		if (fb_forget_sandbox(fb, call->who, r.id, &ferr) != API_OK)
			log_warnx("sandbox %s: store record not deleted: %s",
			    r.id, ferr.message);
		goto out;
	}
	to_api(&r, out);
	webhook_secret(
	    fb, r.id, out->webhook_secret, sizeof(out->webhook_secret));
	if (from != NULL) {
		char detail[SBX_ID_MAX + 8];

		snprintf(detail, sizeof(detail), "from %s", from);
		fb_audit_event(fb, call, "sandbox.fork", r.id, detail);
	} else
		fb_audit_event(fb, call, "sandbox.create", r.id, r.image);
	/* What was just stored is the answer's metadata. */
	if (rc == API_OK &&
	    fb_kv_copy(spec->metadata, spec->nmetadata, &out->metadata,
	        &out->nmetadata) != 0)
		log_warnx("sandbox %s: its metadata not answered: out of "
		          "memory",
		    r.id);
out:
	free(q);
	return rc;
}

static int
fb_sandbox_create(void *arg, const struct api_call *call,
    const struct api_sandbox_spec *spec, struct api_sandbox *out,
    struct api_token *tok, struct api_error *err)
{
	return sandbox_make(arg, call, spec, NULL, out, tok, err);
}

/* A get or delete of sandbox id with the call's grant; r its info. */
static int
sbx_ref_call(void *arg, const struct api_call *call, uint32_t type,
    const char *id, struct msg_vmm_sandbox_info *r, struct api_error *err)
{
	const struct fb_authz *a = authz(call);
	struct msg_vmm_sandbox_ref q;

	if (a == NULL)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	return sbx_call(arg, type, a->reqid, &q, sizeof(q), r, err);
}

static int
fb_sandbox_get(void *arg, const struct api_call *call, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	struct msg_vmm_sandbox_info r;
	int rc;

	if ((rc = sbx_ref_call(arg, call, MSG_VMM_SANDBOX_GET, id, &r, err)) !=
	    API_OK)
		return rc;
	to_api(&r, out);
	return fb_sandbox_metadata(
	    arg, call->who, id, &out->metadata, &out->nmetadata, err);
}

/* The vmm moves the end (it owns the clock that ends sandboxes), then
 * the store record follows, for a restart. */
static int
fb_sandbox_timeout(void *arg, const struct api_call *call, const char *id,
    uint64_t ttl_s, struct api_sandbox *out, struct api_error *err)
{
	const struct fb_authz *a = authz(call);
	struct msg_vmm_sandbox_ttl q;
	struct msg_vmm_sandbox_info r;
	char ttl[24];
	int rc;

	if (a == NULL || ttl_s == 0 || ttl_s > SBX_TTL_MAX)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	q.ttl_s = (uint32_t)ttl_s;
	if ((rc = sbx_call(arg, MSG_VMM_SANDBOX_TTL, a->reqid, &q, sizeof(q),
	         &r, err)) != API_OK)
		return rc;
	snprintf(ttl, sizeof(ttl), "ttl_s=%llu", (unsigned long long)ttl_s);
	fb_audit_event(arg, call, "sandbox.timeout", id, ttl);
	if ((rc = fb_persist_sandbox_end(
	         arg, call->who, id, r.expires_at, err)) != API_OK)
		log_warnx("sandbox %s: its new end is not in the store: %s", id,
		    err->message);
	to_api(&r, out);
	return fb_sandbox_metadata(
	    arg, call->who, id, &out->metadata, &out->nmetadata, err);
}

/* E2B's pause and resume: the vmm's, audited; nothing is stored (a
 * restarted vmm has its sandboxes running, their contexts paused). */
static int
sandbox_pause_resume(void *arg, const struct api_call *call, const char *id,
    int pause, struct api_sandbox *out, struct api_error *err)
{
	struct msg_vmm_sandbox_info r;
	int rc;

	if ((rc = sbx_ref_call(arg, call,
	         pause ? MSG_VMM_SANDBOX_PAUSE : MSG_VMM_SANDBOX_RESUME, id, &r,
	         err)) != API_OK)
		return rc;
	fb_audit_event(
	    arg, call, pause ? "sandbox.pause" : "sandbox.resume", id, "");
	to_api(&r, out);
	return fb_sandbox_metadata(
	    arg, call->who, id, &out->metadata, &out->nmetadata, err);
}

static int
fb_sandbox_pause(void *arg, const struct api_call *call, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	return sandbox_pause_resume(arg, call, id, 1, out, err);
}

static int
fb_sandbox_resume(void *arg, const struct api_call *call, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	return sandbox_pause_resume(arg, call, id, 0, out, err);
}

static int
fb_sandbox_delete(void *arg, const struct api_call *call, const char *id,
    struct api_error *err)
{
	struct msg_vmm_sandbox_info r;
	int rc;

	/* The vmm first: it checks that the caller owns the sandbox. */
	if ((rc = sbx_ref_call(
	         arg, call, MSG_VMM_SANDBOX_DELETE, id, &r, err)) != API_OK)
		return rc;
	fb_audit_event(arg, call, "sandbox.delete", id, "");
	/* A record left behind is not restored: its workspace is gone. */
	if (fb_forget_sandbox(arg, call->who, id, err) != API_OK)
		log_warnx("sandbox %s: store record not deleted: %s", id,
		    err->message);
	return API_OK;
}

static int
fb_sandbox_list(void *arg, const struct api_call *call,
    const struct api_page *page, struct api_sandbox *out, size_t max, size_t *n,
    char next[API_ID_MAX + 1], struct api_error *err)
{
	struct front_backend *fb = arg;
	const struct fb_authz *a = authz(call);
	struct msg_vmm_sandbox_list q;
	struct msg_vmm_sandbox_page *r;
	size_t rlen, i;
	int rc;

	if (a == NULL)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	if (page->cursor != NULL)
		strlcpy(q.cursor, page->cursor, sizeof(q.cursor));
	q.limit = page->limit < max ? page->limit : (uint32_t)max;
	rlen = sizeof(*r);
	rc = fb_call(fb, PROC_VMM, MSG_VMM_SANDBOX_LIST, a->reqid, &q,
	    sizeof(q), -1, MSG_VMM_SANDBOX_PAGE, 0, r, &rlen, NULL, err);
	if (rc != API_OK)
		rc = rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	else if ((rc = fb_sbx_error((int)r->status, err)) == API_OK) {
		*n = r->n < max ? r->n : max;
		for (i = 0; i < *n; i++) {
			r->items[i].id[sizeof(r->items[i].id) - 1] = '\0';
			r->items[i].image[sizeof(r->items[i].image) - 1] = '\0';
			to_api(&r->items[i], &out[i]);
		}
		/* Each one's metadata is in its store record. */
		for (i = 0; rc == API_OK && i < *n; i++)
			rc = fb_sandbox_metadata(fb, call->who, out[i].id,
			    &out[i].metadata, &out[i].nmetadata, err);
		if (rc != API_OK) {
			for (i = 0; i < *n; i++) {
				fb_kv_free(out[i].metadata, out[i].nmetadata);
				out[i].metadata = NULL;
				out[i].nmetadata = 0;
			}
			*n = 0;
		}
		r->next[sizeof(r->next) - 1] = '\0';
		strlcpy(next, r->next, API_ID_MAX + 1);
	}
	free(r);
	return rc;
}

static int
fb_sandbox_refresh(void *arg, const struct api_call *call, const char *id,
    struct api_token *out, struct api_error *err)
{
	struct msg_vmm_sandbox_info r;
	int rc;

	/* The grant is for sandbox:write on id; the vmm checks it and that
	 * the caller owns the sandbox, then the token is derived. */
	if ((rc = sbx_ref_call(arg, call, MSG_VMM_SANDBOX_GET, id, &r, err)) !=
	    API_OK)
		return rc;
	return sandbox_token(arg, call, id, r.expires_at,
	    call->route != NULL ? call->route : "sandbox token", out, err);
}

/* ---- environment ------------------------------------------------------ */

static int
env_call(struct front_backend *fb, const struct api_call *call, const char *id,
    uint32_t op, const struct api_kv *kv, const char *const *keys, size_t n,
    struct msg_vmm_env *r, struct api_error *err)
{
	const struct fb_authz *a = authz(call);
	struct msg_vmm_env *q;
	size_t rlen = sizeof(*r), used = 0, i;
	uint64_t vmm_link;
	int rc, len;

	if (a == NULL)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	vmm_link = fb_link_id(fb, PROC_VMM);
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	q->grant = a->d.grant;
	strlcpy(q->id, id, sizeof(q->id));
	q->op = op;
	for (i = 0; i < n; i++) {
		const char *k = kv != NULL ? kv[i].key : keys[i];

		len = kv != NULL
		    ? snprintf(q->env + used, sizeof(q->env) - used, "%s=%s", k,
		          kv[i].value)
		    : snprintf(q->env + used, sizeof(q->env) - used, "%s", k);
		if (len < 0 || (size_t)len + 1 > sizeof(q->env) - used ||
		    k[0] == '\0' || strchr(k, '=') != NULL) {
			free(q);
			return fb_fail(
			    err, API_EBADREQ, "env: bad name or too large");
		}
		used += (size_t)len + 1;
	}
	q->env_len = (uint32_t)used;
	rc = fb_call(fb, PROC_VMM, MSG_VMM_ENV, a->reqid, q, sizeof(*q), -1,
	    MSG_VMM_ENV_REPLY, 0, r, &rlen, NULL, err);
	free(q);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if (r->env_len > sizeof(r->env) ||
	    (r->env_len > 0 && r->env[r->env_len - 1] != '\0'))
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if ((rc = fb_sbx_error((int)r->op, err)) != API_OK || op == ENV_GET)
		return rc;
	if ((rc = fb_sync_env(fb, call->who, id, r->env, r->env_len, err)) !=
	    API_OK)
		return rc;
	/*
	 * A vmm that restarted while the store was written may have read
	 * the sandbox's variables back before our writes landed: it would
	 * not have this change, and its next answer would take it out of
	 * the store as well. Not acknowledged then: the client retries
	 * against the new vmm. A vmm still on the same link has not
	 * restarted, so one that restarts later reads our writes.
	 */
	if (vmm_link == 0 || fb_link_id(fb, PROC_VMM) != vmm_link)
		return fb_fail(err, API_EUNAVAIL,
		    "The vmm service restarted during the change: retry");
	return API_OK;
}

static int
fb_env_get(void *arg, const struct api_call *call, const char *id,
    struct api_kv **out, size_t *n, struct api_error *err)
{
	struct msg_vmm_env *r;
	size_t i, count = 0;
	char *eq;
	int rc;

	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	if ((rc = env_call(arg, call, id, ENV_GET, NULL, NULL, 0, r, err)) !=
	    API_OK)
		goto out;
	for (i = 0; i < r->env_len; i += strlen(r->env + i) + 1)
		count++;
	if ((*out = calloc(count ? count : 1, sizeof(**out))) == NULL) {
		rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		goto out;
	}
	*n = 0;
	for (i = 0; i < r->env_len; i += strlen(r->env + i) + 1) {
		struct api_kv *kv = &(*out)[*n];

		if ((eq = strchr(r->env + i, '=')) == NULL)
			continue;
		kv->key = strndup(r->env + i, (size_t)(eq - (r->env + i)));
		kv->value = strdup(eq + 1);
		(*n)++;
		if (kv->key == NULL || kv->value == NULL) {
			rc = fb_fail(err, API_EINTERNAL, "Out of memory");
			break;
		}
	}
out:
	free(r);
	return rc;
}

static int
fb_env_set(void *arg, const struct api_call *call, const char *id,
    const struct api_kv *kv, size_t n, int replace, struct api_error *err)
{
	struct msg_vmm_env *r;
	int rc;

	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	rc = env_call(arg, call, id, replace ? ENV_REPLACE : ENV_MERGE, kv,
	    NULL, n, r, err);
	free(r);
	return rc;
}

static int
fb_env_delete(void *arg, const struct api_call *call, const char *id,
    const char *const *keys, size_t n, struct api_error *err)
{
	struct msg_vmm_env *r;
	int rc;

	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	rc = env_call(arg, call, id, keys == NULL ? ENV_CLEAR : ENV_DELETE,
	    NULL, keys, keys == NULL ? 0 : n, r, err);
	free(r);
	return rc;
}

/*
 * The source is read with the call's grant (sandbox:write on it, which
 * the vmm also accepts for reading): its image and environment go into
 * the new sandbox's spec, so the store records the fork as any sandbox,
 * and a restart restores it as one.
 */
static int
fb_sandbox_fork(void *arg, const struct api_call *call, const char *id,
    const struct api_sandbox_spec *given, struct api_sandbox *out,
    struct api_token *tok, struct api_error *err)
{
	struct msg_vmm_sandbox_info src;
	struct api_sandbox_spec spec;
	struct api_kv *env = NULL;
	size_t nenv = 0, i;
	int rc;

	if ((rc = sbx_ref_call(
	         arg, call, MSG_VMM_SANDBOX_GET, id, &src, err)) != API_OK ||
	    (rc = fb_env_get(arg, call, id, &env, &nenv, err)) != API_OK)
		goto out;
	src.image[sizeof(src.image) - 1] = '\0';
	spec = *given;
	spec.home_user = 0; /* a fork's workspace is its source's copy */
	spec.image = src.image;
	spec.env = env;
	spec.nenv = nenv;
	rc = sandbox_make(arg, call, &spec, id, out, tok, err);
out:
	for (i = 0; env != NULL && i < nenv; i++) {
		free(env[i].key);
		free(env[i].value);
	}
	free(env);
	return rc;
}

void
fb_sandbox_ops(struct api_backend *ops)
{
	ops->sandbox_pause = fb_sandbox_pause;
	ops->sandbox_resume = fb_sandbox_resume;
	ops->sandbox_create = fb_sandbox_create;
	ops->sandbox_fork = fb_sandbox_fork;
	ops->sandbox_get = fb_sandbox_get;
	ops->sandbox_timeout = fb_sandbox_timeout;
	ops->sandbox_delete = fb_sandbox_delete;
	ops->sandbox_list = fb_sandbox_list;
	ops->sandbox_token = fb_sandbox_refresh;
	ops->env_get = fb_env_get;
	ops->env_set = fb_env_set;
	ops->env_delete = fb_env_delete;
}

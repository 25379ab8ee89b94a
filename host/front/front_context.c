/*
 * Live contexts, from the front's side (docs/contexts.md): create, list,
 * delete and restart are one synchronous call each to the vmm
 * (MSG_VMM_CONTEXT_*, host/vmm_msg.h), which owns the contexts' `keepd:
 * vm` processes. A cell is a run (host/front/front_run.c) with the
 * context's id.
 *
 * Decisions: creating a context starts its interpreter, so it is exec
 * of the interpreter's program ("python", "js"), decided by the policy's
 * exec allowlist as a run of it would be; restarting and deleting name
 * no program (exec without a target, as kill: every cell is decided
 * again on its program); listing is sandbox:read.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/log.h"
#include "policy/policy.h"

static const char *const ctx_state_name[] = {
	[CTX_IDLE] = "idle",
	[CTX_BUSY] = "busy",
	[CTX_DEAD] = "dead",
	[CTX_PAUSED] = "paused",
};

/* "ctx-" and 20 random base32 characters, as sandbox ids. */
static void
new_context_id(char out[CTX_ID_MAX])
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz234567";
	uint8_t rnd[20];
	size_t i;

	randombytes_buf(rnd, sizeof(rnd));
	memcpy(out, "ctx-", 4);
	for (i = 0; i < sizeof(rnd); i++)
		out[4 + i] = alpha[rnd[i] & 31];
	out[4 + sizeof(rnd)] = '\0';
}

static int
ctx_error(uint32_t status, struct api_error *err)
{
	switch (status) {
	case SBX_E_CTX_NOTFOUND:
		return fb_fail(err, API_ENOTFOUND, "Context not found");
	case SBX_E_CTX_FULL:
		/* 403, not 429: the quota does not refill by waiting. */
		return fb_fail(err, API_EFORBIDDEN,
		    "Context limit reached: delete a context first");
	case SBX_E_IMAGE:
		return fb_fail(err, API_EBADREQ,
		    "The sandbox's image cannot run this language");
	case SBX_E_EXISTS:
		return fb_fail(err, API_ECONFLICT, "A context has this id");
	case SBX_E_SNAP_NOTFOUND:
		return fb_fail(err, API_ENOTFOUND, "Snapshot not found");
	case SBX_E_SNAP_EXISTS:
		return fb_fail(err, API_ECONFLICT,
		    "A snapshot of that name exists in this sandbox");
	case SBX_E_SNAP_FULL:
		return fb_fail(err, API_EFORBIDDEN,
		    "Snapshot quota reached (snapshots in the policy)");
	default:
		return fb_sbx_error((int)status, err);
	}
}

static void
to_api(const struct vmm_context_info *i, struct api_context *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->id, i->id, sizeof(i->id));
	out->id[sizeof(i->id) - 1] = '\0';
	strlcpy(out->language, i->language == CTX_LANG_JS ? "js" : "python",
	    sizeof(out->language));
	memcpy(out->cwd, i->cwd, sizeof(out->cwd));
	out->cwd[sizeof(out->cwd) - 1] = '\0';
	strlcpy(out->state,
	    i->state < nitems(ctx_state_name) ? ctx_state_name[i->state]
	                                      : "dead",
	    sizeof(out->state));
	out->execution_count = i->execution_count;
	out->created_at = i->created_at;
}

/*
 * Decide (exec of program, "" for none) when the route deferred it, then
 * make one call to the vmm. r is the caller's, filled on API_OK.
 */
static int
ctx_call(struct front_backend *fb, const struct api_call *call, uint32_t type,
    const char *program, struct msg_vmm_context *q, struct msg_vmm_contexts *r,
    struct api_error *err)
{
	struct fb_authz *a = call->authz;
	size_t rlen = sizeof(*r);
	int rc;

	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if (a->deferred) {
		rc = fb_decide(fb, call->who, CAP_EXEC, PROC_VMM, program,
		    a->reqid, 0, &a->d, err);
		if (rc != API_OK)
			return rc;
		fb_audit_decision(fb, call, program, &a->d);
		if (a->d.grant.decision != GRANT_ALLOW) {
			if (a->d.reason != POLICY_R_TARGET)
				return fb_refusal(&a->d, CAP_EXEC, err);
			return fb_fail(err, API_EFORBIDDEN,
			    "Not allowed to run %s (exec: the policy's "
			    "allowlist)",
			    program);
		}
	}
	q->grant = a->d.grant;
	rc = fb_call(fb, PROC_VMM, type, a->reqid, q, sizeof(*q), -1,
	    MSG_VMM_CONTEXT_REPLY, 0, r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if (r->n > CTX_PAGE_MAX)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	return ctx_error(r->status, err);
}

/*
 * The principal's `contexts` quota (0: none), `pause` time and
 * `snapshots` quota, from the policy process, into q. The vmm counts the
 * live contexts and the disk they use, which only it knows; the front
 * carries the numbers as it carries the end of a concurrent operation.
 */
static int contexts_quota(struct front_backend *fb, const struct api_call *call,
    struct msg_vmm_context *ctxq, struct api_error *err);

/* The caller's `contexts` quota alone: a sandbox's fork takes its
 * contexts along (front_sandbox.c). */
int
fb_contexts_max(struct front_backend *fb, const struct api_call *call,
    uint32_t *max, struct api_error *err)
{
	struct msg_vmm_context q;
	int rc;

	memset(&q, 0, sizeof(q));
	if ((rc = contexts_quota(fb, call, &q, err)) == API_OK)
		*max = q.max_contexts;
	return rc;
}

static int
contexts_quota(struct front_backend *fb, const struct api_call *call,
    struct msg_vmm_context *ctxq, struct api_error *err)
{
	struct msg_policy_leave q;
	struct msg_policy_usage r;
	size_t rlen = sizeof(r);
	int rc;

	memset(&q, 0, sizeof(q));
	strlcpy(q.principal, call->who->sub, sizeof(q.principal));
	rc = fb_call(fb, PROC_POLICY, MSG_POLICY_USAGE, ++fb->next_reqid, &q,
	    sizeof(q), -1, MSG_POLICY_USAGE_REPLY, 0, &r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	ctxq->max_contexts = r.contexts_max;
	ctxq->pause_ms = r.pause_ms;
	ctxq->disk_max = r.snapshots_max;
	return API_OK;
}

static int
fb_context_create(void *arg, const struct api_call *call, const char *id,
    enum api_lang language, const char *cwd, const char *cid,
    struct api_context *out, struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	/* The vmm checks the name again (its file under contexts/). */
	if (cid == NULL)
		new_context_id(q.context);
	else if (strlcpy(q.context, cid, sizeof(q.context)) >=
	    sizeof(q.context)) {
		free(r);
		return fb_fail(err, API_EBADREQ, "Context id too long");
	}
	strlcpy(q.cwd, cwd, sizeof(q.cwd));
	q.language =
	    language == API_LANG_JAVASCRIPT ? CTX_LANG_JS : CTX_LANG_PYTHON;
	if ((rc = contexts_quota(arg, call, &q, err)) != API_OK) {
		free(r);
		return rc;
	}
	rc = ctx_call(arg, call, MSG_VMM_CONTEXT_CREATE,
	    language == API_LANG_JAVASCRIPT ? "js" : "python", &q, r, err);
	if (rc == API_OK && r->n == 1) {
		to_api(&r->c[0], out);
		fb_audit_event(arg, call, "context.create", id, out->id);
	} else if (rc == API_OK)
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
	else if (r->status == SBX_E_CTX_FULL)
		fb_audit_event(
		    arg, call, "context.refused", id, "at the contexts quota");
	free(r);
	return rc;
}

static int
fb_context_list(void *arg, const struct api_call *call, const char *id,
    struct api_context **out, size_t *n, struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	size_t i;
	int rc;

	*out = NULL;
	*n = 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	rc = ctx_call(arg, call, MSG_VMM_CONTEXT_LIST, "", &q, r, err);
	if (rc == API_OK) {
		if ((*out = calloc(r->n ? r->n : 1, sizeof(**out))) == NULL)
			rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		else {
			for (i = 0; i < r->n; i++)
				to_api(&r->c[i], &(*out)[i]);
			*n = r->n;
		}
	}
	free(r);
	return rc;
}

static int
fb_context_delete(void *arg, const struct api_call *call, const char *id,
    const char *cid, struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.context, cid, sizeof(q.context)) >= sizeof(q.context))
		rc = fb_fail(err, API_ENOTFOUND, "Context not found");
	else
		rc =
		    ctx_call(arg, call, MSG_VMM_CONTEXT_DELETE, "", &q, r, err);
	if (rc == API_OK)
		fb_audit_event(arg, call, "context.delete", id, cid);
	free(r);
	return rc;
}

static int
fb_context_restart(void *arg, const struct api_call *call, const char *id,
    const char *cid, struct api_context *out, struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.context, cid, sizeof(q.context)) >= sizeof(q.context))
		rc = fb_fail(err, API_ENOTFOUND, "Context not found");
	else
		rc = ctx_call(
		    arg, call, MSG_VMM_CONTEXT_RESTART, "", &q, r, err);
	if (rc == API_OK && r->n == 1) {
		to_api(&r->c[0], out);
		fb_audit_event(arg, call, "context.restart", id, cid);
	} else if (rc == API_OK)
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
	free(r);
	return rc;
}

/* A new context from cid (fork) or from snapshot name (restore). */
static int
context_from(struct front_backend *fb, const struct api_call *call,
    const char *id, const char *cid, const char *name, struct api_context *out,
    struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	new_context_id(q.context);
	if (strlcpy(q.from, cid, sizeof(q.from)) >= sizeof(q.from) ||
	    strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		rc = fb_fail(err, API_ENOTFOUND,
		    cid[0] ? "Context not found" : "Snapshot not found");
	else
		rc = contexts_quota(fb, call, &q, err);
	if (rc == API_OK)
		rc = ctx_call(fb, call,
		    cid[0] ? MSG_VMM_CONTEXT_FORK : MSG_VMM_CONTEXT_CREATE, "",
		    &q, r, err);
	if (rc == API_OK && r->n == 1) {
		to_api(&r->c[0], out);
		fb_audit_event(fb, call,
		    cid[0] ? "context.fork" : "context.restore", id, out->id);
	} else if (rc == API_OK)
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
	else if (r->status == SBX_E_CTX_FULL || r->status == SBX_E_SNAP_FULL)
		fb_audit_event(fb, call, "context.refused", id,
		    r->status == SBX_E_CTX_FULL ? "at the contexts quota"
		                                : "at the snapshots quota");
	free(r);
	return rc;
}

static int
fb_context_fork(void *arg, const struct api_call *call, const char *id,
    const char *cid, struct api_context *out, struct api_error *err)
{
	return context_from(arg, call, id, cid, "", out, err);
}

static int
fb_context_restore(void *arg, const struct api_call *call, const char *id,
    const char *name, struct api_context *out, struct api_error *err)
{
	return context_from(arg, call, id, "", name, out, err);
}

static void
to_api_snapshot(const struct vmm_context_info *i, struct api_snapshot *out)
{
	memset(out, 0, sizeof(*out));
	memcpy(out->name, i->id, sizeof(i->id));
	out->name[sizeof(i->id) - 1] = '\0';
	memcpy(out->context_id, i->from, sizeof(i->from));
	out->context_id[sizeof(i->from) - 1] = '\0';
	strlcpy(out->language, i->language == CTX_LANG_JS ? "js" : "python",
	    sizeof(out->language));
	memcpy(out->cwd, i->cwd, sizeof(out->cwd));
	out->cwd[sizeof(out->cwd) - 1] = '\0';
	out->execution_count = i->execution_count;
	out->bytes = i->bytes;
	out->created_at = i->created_at;
}

static int
fb_context_snapshot(void *arg, const struct api_call *call, const char *id,
    const char *cid, const char *name, struct api_snapshot *out,
    struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.context, cid, sizeof(q.context)) >= sizeof(q.context))
		rc = fb_fail(err, API_ENOTFOUND, "Context not found");
	else if (strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		rc = fb_fail(err, API_EBADREQ, "The name is too long");
	else
		rc = ctx_call(
		    arg, call, MSG_VMM_CONTEXT_SNAPSHOT, "", &q, r, err);
	if (rc == API_OK && r->n == 1) {
		to_api_snapshot(&r->c[0], out);
		fb_audit_event(arg, call, "context.snapshot", id, name);
	} else if (rc == API_OK)
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
	else if (r->status == SBX_E_SNAP_FULL)
		fb_audit_event(
		    arg, call, "context.refused", id, "at the snapshots quota");
	free(r);
	return rc;
}

static int
fb_context_snapshots(void *arg, const struct api_call *call, const char *id,
    const char *cid, struct api_snapshot **out, size_t *n,
    struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	size_t i;
	int rc;

	*out = NULL;
	*n = 0;
	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.context, cid, sizeof(q.context)) >= sizeof(q.context))
		rc = fb_fail(err, API_ENOTFOUND, "Context not found");
	else
		rc = ctx_call(
		    arg, call, MSG_VMM_CONTEXT_SNAPSHOTS, "", &q, r, err);
	if (rc == API_OK) {
		if ((*out = calloc(r->n ? r->n : 1, sizeof(**out))) == NULL)
			rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		else {
			for (i = 0; i < r->n; i++)
				to_api_snapshot(&r->c[i], &(*out)[i]);
			*n = r->n;
		}
	}
	free(r);
	return rc;
}

static int
fb_context_snapshot_delete(void *arg, const struct api_call *call,
    const char *id, const char *cid, const char *name, struct api_error *err)
{
	struct msg_vmm_context q;
	struct msg_vmm_contexts *r;
	int rc;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.context, cid, sizeof(q.context)) >= sizeof(q.context) ||
	    strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		rc = fb_fail(err, API_ENOTFOUND, "Snapshot not found");
	else
		rc = ctx_call(
		    arg, call, MSG_VMM_CONTEXT_SNAPSHOT_DELETE, "", &q, r, err);
	if (rc == API_OK)
		fb_audit_event(arg, call, "context.snapshot.delete", id, name);
	free(r);
	return rc;
}

void
fb_context_ops(struct api_backend *ops)
{
	ops->context_create = fb_context_create;
	ops->context_list = fb_context_list;
	ops->context_delete = fb_context_delete;
	ops->context_restart = fb_context_restart;
	ops->context_fork = fb_context_fork;
	ops->context_restore = fb_context_restore;
	ops->context_snapshot = fb_context_snapshot;
	ops->context_snapshots = fb_context_snapshots;
	ops->context_snapshot_delete = fb_context_snapshot_delete;
}

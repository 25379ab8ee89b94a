/*
 * POST /v1/sandboxes/{id}/execute/async {code, language, webhook_url}:
 * 202 {run_id} at once; the run goes through front_run.c's machinery
 * (the exec decision, MSG_VMM_RUN) with no request waiting, and when it
 * ends its result is POSTed to webhook_url by the egress process.
 *
 * The webhook is an egress like any other: the policy decides `egress`
 * on the URL's "host:port" for the caller (token caps & policy), once
 * up front (a refused URL is a 403 before anything runs) and again when
 * the result is ready (a fresh grant; the policy may have changed). The
 * egress process verifies the grant, applies the same checks as a
 * guest's fetch (allowlist, https, public addresses, pinning, limits),
 * signs the body with the sandbox's secret (HMAC-SHA256, derived from
 * egress.webhook_key_file, host/egress/egress.h), retries with bounded
 * backoff, and audits every attempt's outcome.
 *
 * Webhook body (JSON): {"run_id", "sandbox_id", "status": "completed" |
 * "failed", "exit_code", "stdout", "stderr", "duration_ms", "reason",
 * "limits" (when any), "error"}.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <sodium.h>

#include "host/egress/egress.h"
#include "host/front/front_backend_int.h"
#include "host/proc_egress.h"
#include "lib/log.h"

#define ASYNC_ATTEMPTS 5
#define ASYNC_BACKOFF_MS 1000
#define ASYNC_MAX_BACKOFF_MS 30000

struct fb_async {
	struct api_principal who;
	char request_id[40];
	char sandbox[API_ID_MAX + 1];
	char run_id[API_ID_MAX + 1];
	char url[EGRESS_URL_MAX + 1];
	char host[EGRESS_HOST_MAX + 1];
	uint16_t port;
};

/* The egress decision for the webhook's destination. Returns API_OK with
 * an allow in *d, or an API error. */
static int
hook_decide(struct front_backend *fb, const struct api_principal *who,
    const char *host, uint16_t port, uint64_t reqid,
    struct msg_policy_decision *d, struct api_error *err)
{
	char target[EGRESS_HOST_MAX + 8];
	int rc;

	snprintf(target, sizeof(target), "%s:%u", host, (unsigned)port);
	rc = fb_decide(
	    fb, who, CAP_EGRESS, PROC_EGRESS, target, reqid, 0, d, err);
	if (rc != API_OK)
		return rc;
	if (d->grant.decision != GRANT_ALLOW)
		return fb_fail(err, API_EFORBIDDEN,
		    "webhook_url not allowed: egress to %s is not granted "
		    "by the policy",
		    target);
	return API_OK;
}

static void
audit_hook(
    struct front_backend *fb, const struct fb_async *a, const char *detail)
{
	struct api_call call;

	memset(&call, 0, sizeof(call));
	call.who = &a->who;
	call.request_id = a->request_id;
	fb_audit_event(fb, &call, "webhook", a->url, detail);
}

/* Output as a JSON string: UTF-8 as it is; other bytes become '?' (a
 * webhook body must be valid JSON whatever the guest printed). */
static json_t *
text(const char *s, size_t len)
{
	json_t *j;
	char *c;
	size_t i;

	if (s == NULL)
		return json_string("");
	if ((j = json_stringn(s, len)) != NULL)
		return j;
	if ((c = malloc(len + 1)) == NULL)
		return NULL;
	for (i = 0; i < len; i++)
		c[i] = (unsigned char)s[i] < 0x80 && s[i] != '\0' ? s[i] : '?';
	j = json_stringn(c, len);
	free(c);
	return j;
}

static char *
result_json(const struct fb_async *a, int rc, const struct api_run_result *res,
    const struct api_error *err, const char *platform)
{
	json_t *o;
	char *s;

	o = json_pack("{s:s,s:s,s:s}", "run_id", a->run_id, "sandbox_id",
	    a->sandbox, "status", rc == API_OK ? "completed" : "failed");
	if (o == NULL)
		return NULL;
	if (rc == API_OK) {
		json_object_set_new(
		    o, "exit_code", json_integer(res->exit_code));
		json_object_set_new(o, "stdout", text(res->out, res->out_len));
		json_object_set_new(o, "stderr", text(res->err, res->err_len));
		json_object_set_new(o, "duration_ms",
		    json_integer((json_int_t)res->duration_ms));
		json_object_set_new(o, "reason", json_string(res->reason));
		api_run_limits(o, res->limits, res->egress);
		api_run_egress_bytes(o, res);
		api_run_platform(o, platform);
	} else
		json_object_set_new(o, "error", json_string(err->message));
	s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	return s;
}

/* The run ended: hand its result to egress for delivery. */
static void
async_done(struct front_backend *fb, void *arg, int rc,
    struct api_run_result *res, const struct api_error *err)
{
	struct fb_async *a = arg;
	struct msg_policy_decision d;
	struct msg_egress_req q;
	struct api_error derr;
	struct egress_webhook wh;
	struct egress_rule rule;
	uint8_t zero[EGRESS_WEBHOOK_KEYBYTES];
	uint64_t reqid = ++fb->next_reqid;
	char *body;
	void *wire = NULL;
	size_t wlen = 0;
	int mfd = -1;

	body = result_json(a, rc, res, err, fb_platform(fb));
	free(res->out);
	free(res->err);
	free(res->results);
	res->out = res->err = res->results = NULL;
	memset(&derr, 0, sizeof(derr));
	if (body == NULL) {
		audit_hook(fb, a, "not sent: out of memory");
		goto out;
	}
	if (hook_decide(fb, &a->who, a->host, a->port, reqid, &d, &derr) !=
	    API_OK) {
		log_warnx("webhook for run %s: %s", a->run_id, derr.message);
		audit_hook(fb, a, derr.message);
		goto out;
	}
	memset(&rule, 0, sizeof(rule));
	strlcpy(rule.host, a->host, sizeof(rule.host));
	rule.port = a->port;
	egress_grant_flags(
	    &d.grant, a->host, a->port, &rule.allow_http, &rule.allow_private);
	/* The secret is the egress process's to derive: this one is only
	 * the wire's placeholder. */
	memset(zero, 0, sizeof(zero));
	memset(&wh, 0, sizeof(wh));
	wh.principal = a->who.sub;
	wh.url = a->url;
	wh.delivery_id = a->run_id;
	wh.body = body;
	wh.body_len = strlen(body);
	wh.secret = zero;
	wh.rules = &rule;
	wh.nrules = 1;
	egress_limits_default(&wh.limits);
	wh.limits.max_request = wh.body_len + 4096;
	wh.limits.max_redirects = 0;
	wh.max_attempts = ASYNC_ATTEMPTS;
	wh.backoff_ms = ASYNC_BACKOFF_MS;
	wh.max_backoff_ms = ASYNC_MAX_BACKOFF_MS;
	memset(&q, 0, sizeof(q));
	q.grant = d.grant;
	strlcpy(q.sandbox, a->sandbox, sizeof(q.sandbox));
	strlcpy(q.request_id, a->request_id, sizeof(q.request_id));
	if (egress_wire_encode_webhook(&wh, &wire, &wlen) != 0 ||
	    (mfd = memfd_make_sealed("keep-webhook", wire, wlen)) == -1) {
		audit_hook(fb, a, "not sent: the request could not be encoded");
		goto out;
	}
	q.len = wlen;
	if (fb->ctx->fd[PROC_EGRESS] < 0 ||
	    msg_send(fb->ctx->fd[PROC_EGRESS], MSG_EGRESS_WEBHOOK, 0, reqid, &q,
	        sizeof(q), mfd) != MSG_OK) {
		log_warnx("webhook for run %s: the egress service is down",
		    a->run_id);
		audit_hook(fb, a, "not sent: the egress service is down");
		goto out;
	}
	log_info("webhook for run %s: handed to egress", a->run_id);
out:
	if (mfd != -1)
		close(mfd);
	free(wire);
	free(body);
	free(a);
}

/* The delivery's outcome (egress has audited it): logged here. */
int
fb_async_h_webhook_reply(struct proc_ctx *ctx, const struct msg *m)
{
	struct msg_egress_rep r;
	const struct egress_wire_reply *h;
	const uint8_t *hd, *bd;
	void *buf;

	(void)ctx;
	memcpy(&r, m->data, sizeof(r));
	buf = memfd_read(m->fd, r.len, EGRESS_REPLY_MAX);
	close(m->fd);
	if (buf == NULL || egress_wire_decode_reply(buf, r.len, &h, &hd, &bd)) {
		free(buf);
		return -1;
	}
	log_info("webhook %llu: %s, status %u after %u attempt(s)%s%s",
	    (unsigned long long)m->hdr.reqid,
	    h->error == 0 ? "delivered" : egress_strerror(h->error), h->status,
	    h->attempts, h->detail[0] != '\0' ? ": " : "", h->detail);
	free(buf);
	return 0;
}

static int
fb_execute_async(void *arg, const struct api_call *call, const char *id,
    const struct api_exec *ex, const char *webhook_url,
    char run_id[API_ID_MAX + 1], struct api_error *err)
{
	struct front_backend *fb = arg;
	struct msg_policy_decision d;
	struct egress_url u;
	struct fb_async *a;
	uint8_t rnd[10];
	int rc;

	if (webhook_url == NULL || webhook_url[0] == '\0')
		return fb_fail(err, API_EBADREQ, "webhook_url is required");
	if (strlen(webhook_url) > EGRESS_URL_MAX ||
	    egress_url_parse(webhook_url, strlen(webhook_url), &u) != 0)
		return fb_fail(err, API_EBADREQ,
		    "webhook_url is not an http(s) URL keep accepts");
	/* Refuse a destination the policy does not grant before running. */
	memset(&d, 0, sizeof(d));
	d.grant.decision = UINT32_MAX; /* no decision unless one comes */
	rc = hook_decide(
	    fb, call->who, u.host, u.port, ++fb->next_reqid, &d, err);
	if (d.grant.decision == GRANT_ALLOW || d.grant.decision == GRANT_DENY) {
		struct api_call ec = *call; /* the decision was on egress */
		char target[EGRESS_HOST_MAX + 8];

		ec.cap = CAP_EGRESS;
		snprintf(
		    target, sizeof(target), "%s:%u", u.host, (unsigned)u.port);
		fb_audit_decision(fb, &ec, target, &d);
	}
	if (rc != API_OK)
		return rc;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	a->who = *call->who;
	strlcpy(a->request_id, call->request_id, sizeof(a->request_id));
	strlcpy(a->sandbox, id, sizeof(a->sandbox));
	strlcpy(a->url, webhook_url, sizeof(a->url));
	strlcpy(a->host, u.host, sizeof(a->host));
	a->port = u.port;
	randombytes_buf(rnd, sizeof(rnd));
	strlcpy(a->run_id, "run-", sizeof(a->run_id));
	sodium_bin2hex(a->run_id + 4, sizeof(a->run_id) - 4, rnd, sizeof(rnd));
	rc = fb_run_async(fb, call, id, ex, async_done, a, err);
	if (rc != API_PENDING && rc != API_OK) {
		free(a);
		return rc;
	}
	strlcpy(run_id, a->run_id, API_ID_MAX + 1);
	log_info("run %s: async in sandbox %s, webhook %s:%u", run_id, id,
	    a->host, (unsigned)a->port);
	return API_OK;
}

void
fb_async_ops(struct api_backend *ops)
{
	ops->execute_async = fb_execute_async;
}

/*
 * The front's api_backend over its links (host/front/front_backend.h).
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/front/front_backend.h"
#include "host/front/front_backend_int.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/vmm_msg.h"
#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/task.h"
#include "policy/policy.h"
#include "token/token.h"

int
fb_fail(struct api_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->message, sizeof(err->message), fmt, ap);
	va_end(ap);
	return code;
}

/*
 * The reply h (a whole message, len bytes, fd with it or -1) to a call of
 * type that expects rtype: copy its payload to r. Returns API_OK, or an
 * error with err filled: MSG_F_ERROR from the peer (its text is logged,
 * not shown; its code returned) or malformed. Consumes fd on error.
 */
static int
fb_reply(enum proc_id peer, uint32_t type, uint32_t rtype, uint32_t rflags,
    const uint8_t *buf, size_t len, int fd, void *r, size_t *rlen, int *rfd,
    struct api_error *err)
{
	const struct msg_hdr *h = (const struct msg_hdr *)buf;

	(void)len;
	if (h->flags & MSG_F_ERROR) {
		struct msg_error me;
		char esc[sizeof(me.text) * 4];

		if (fd != -1)
			close(fd);
		memset(&me, 0, sizeof(me));
		memcpy(&me, buf + sizeof(*h),
		    h->len < sizeof(me) ? h->len : sizeof(me));
		me.text[sizeof(me.text) - 1] = '\0';
		log_info("%s: %s refused %s: %s", __func__, proc_name(peer),
		    msg_type_name(type),
		    log_escape(esc, sizeof(esc), me.text, strlen(me.text)));
		err->retry_after = 0;
		return me.code;
	}
	if (h->type != rtype ||
	    ((rflags & FB_R_VARIABLE) ? h->len > *rlen : h->len != *rlen) ||
	    (!(rflags & FB_R_FD_OPT) &&
	        (fd != -1) != ((rflags & FB_R_FD) != 0))) {
		if (fd != -1)
			close(fd);
		log_warnx("%s: malformed %s from %s", __func__,
		    msg_type_name(h->type), proc_name(peer));
		return fb_fail(err, API_EINTERNAL, "Internal error");
	}
	memcpy(r, buf + sizeof(*h), h->len);
	*rlen = h->len;
	if (rfd != NULL)
		*rfd = fd;
	return API_OK;
}

/* A call of a task, suspended until its reply, its deadline or the end
 * of its link. */
struct fb_wait {
	struct fb_wait *next;
	struct task *task;
	enum proc_id peer;
	uint64_t reqid;
	uint32_t type, rtype, rflags;
	void *r;
	size_t *rlen;
	int *rfd;
	struct api_error *err;
	uint64_t deadline;
	int rc;
};

/* The waits are hashed by request id: with many requests in flight, a
 * reply finds its task without walking them all. */
static struct fb_wait **
wait_bucket(struct front_backend *fb, uint64_t reqid)
{
	return &fb->waits[reqid & (FB_WAIT_BUCKETS - 1)];
}

static void
wait_add(struct front_backend *fb, struct fb_wait *w)
{
	struct fb_wait **b = wait_bucket(fb, w->reqid);

	w->next = *b;
	*b = w;
	fb->nwaits++;
}

static struct fb_wait *
wait_find(struct front_backend *fb, enum proc_id peer, uint64_t reqid)
{
	struct fb_wait *w;

	for (w = *wait_bucket(fb, reqid); w != NULL; w = w->next)
		if (w->peer == peer && w->reqid == reqid)
			return w;
	return NULL;
}

/* The first wait that pred accepts, or NULL. */
static struct fb_wait *
wait_first(struct front_backend *fb,
    int (*pred)(const struct fb_wait *, const void *), const void *arg)
{
	struct fb_wait *w;
	size_t i;

	for (i = 0; i < FB_WAIT_BUCKETS; i++)
		for (w = fb->waits[i]; w != NULL; w = w->next)
			if (pred(w, arg))
				return w;
	return NULL;
}

/* Take w off the table and run its task on; free the task if it ends. */
static void
fb_wake(struct front_backend *fb, struct fb_wait *w, int rc)
{
	struct fb_wait **pp;
	struct task *t = w->task;

	for (pp = wait_bucket(fb, w->reqid); *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	fb->nwaits--;
	w->rc = rc;
	if (task_run(t) == TASK_DONE)
		task_free(t);
}

static int
on_peer(const struct fb_wait *w, const void *arg)
{
	enum proc_id peer = *(const enum proc_id *)arg;

	return peer == PROC_COUNT || w->peer == peer;
}

static int
past_deadline(const struct fb_wait *w, const void *arg)
{
	return *(const uint64_t *)arg >= w->deadline;
}

/* Fail every call waiting on peer (PROC_COUNT: every call). */
static void
fb_fail_waits(struct front_backend *fb, enum proc_id peer, const char *why)
{
	struct fb_wait *w;

	for (;;) {
		if ((w = wait_first(fb, on_peer, &peer)) == NULL)
			return;
		fb_fail(w->err, API_EUNAVAIL, "The %s service %s",
		    proc_name(w->peer), why);
		fb_wake(fb, w, API_EUNAVAIL);
	}
}

void
fb_expire_waits(struct front_backend *fb)
{
	uint64_t now = mono_ms();
	struct fb_wait *w;

	if (fb->nwaits == 0)
		return;
	for (;;) {
		if ((w = wait_first(fb, past_deadline, &now)) == NULL)
			return;
		log_warnx("%s: %s did not answer %s in time", __func__,
		    proc_name(w->peer), msg_type_name(w->type));
		fb_fail(w->err, API_EUNAVAIL, "The %s service did not answer",
		    proc_name(w->peer));
		fb_wake(fb, w, API_EUNAVAIL);
	}
}

/* If the message in fb->buf is the reply a task waits for, hand it over
 * and run the task on at once, before anything else from that link (a
 * run's output may follow its start's reply): 1. Else 0. */
static int
fb_deliver_buf(struct front_backend *fb, enum proc_id from, const uint8_t *buf,
    size_t len, int fd)
{
	struct msg_hdr h;
	struct fb_wait *w;
	int rc;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (!(h.flags & MSG_F_REPLY) || h.len != len - sizeof(h))
		return 0;
	if ((w = wait_find(fb, from, h.reqid)) == NULL)
		return 0;
	rc = fb_reply(from, w->type, w->rtype, w->rflags, buf, len, fd, w->r,
	    w->rlen, w->rfd, w->err);
	fb_wake(fb, w, rc);
	return 1;
}

static int
fb_deliver(struct front_backend *fb, enum proc_id from, size_t len, int fd)
{
	return fb_deliver_buf(fb, from, fb->buf, len, fd);
}

/*
 * Requests to the vmm from tasks go in batches too (host/msg.h): queued
 * in this pass of the loop, sent at its end in one MSG_VMM_BATCH, and
 * the replies come back in MSG_VMM_BATCH_REPLY. A request with a
 * descriptor goes alone.
 */
static int
fb_vmm_queue(struct front_backend *fb, uint32_t type, uint64_t reqid,
    const void *q, size_t qlen)
{
	struct fb_batch *b = fb->vbatch;

	if (b == NULL && (b = fb->vbatch = calloc(1, sizeof(*b))) == NULL)
		return MSG_ERR_IO;
	if (b->count == MSG_DECIDE_BATCH_MAX ||
	    msg_batch_add(b->buf, sizeof(b->buf), &b->len, &b->count, type, 0,
	        reqid, q, qlen) != MSG_OK) {
		fb_flush_vmm(fb);
		if (msg_batch_add(b->buf, sizeof(b->buf), &b->len, &b->count,
		        type, 0, reqid, q, qlen) != MSG_OK)
			return MSG_ERR_TOOBIG;
	}
	return MSG_OK;
}

void
fb_flush_vmm(struct front_backend *fb)
{
	struct fb_batch *b = fb->vbatch;
	struct msg_batch_hdr bh;
	int rc;

	if (b == NULL || b->count == 0)
		return;
	memset(&bh, 0, sizeof(bh));
	bh.count = b->count;
	memcpy(b->buf, &bh, sizeof(bh));
	rc = fb->ctx->fd[PROC_VMM] < 0
	    ? MSG_ERR_IO
	    : msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_BATCH, 0,
	          ++fb->next_reqid, b->buf, b->len, -1);
	b->count = 0;
	b->len = 0;
	if (rc != MSG_OK) {
		log_warnx(
		    "%s: a batch not sent: %s", __func__, msg_strerror(rc));
		fb_fail_waits(fb, PROC_VMM, "is restarting");
	}
}

/* The vmm's replies to a batch, each to its task. */
static void
fb_deliver_vmm_batch(struct front_backend *fb, size_t len)
{
	const struct msg_hdr *h = (const struct msg_hdr *)fb->buf;
	const uint8_t *inner;
	size_t off = 0, ilen;
	int rc;

	if (len < sizeof(*h) || h->len != len - sizeof(*h)) {
		fb->ctx->ndropped++;
		return;
	}
	while ((rc = msg_batch_next(
	            fb->buf + sizeof(*h), h->len, &off, &inner, &ilen)) == 1)
		if (!fb_deliver_buf(fb, PROC_VMM, inner, ilen, -1))
			log_debug("%s: a reply nobody waits for", __func__);
	if (rc != 0) {
		log_warnx("%s: a malformed batch of replies", __func__);
		fb->ctx->ndropped++;
	}
}

uint64_t
fb_link_id(struct front_backend *fb, enum proc_id peer)
{
	int fd = fb->ctx->fd[peer];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct stat st;

	/* Each socketpair has an inode of its own. */
	if (fd < 0 || fstat(fd, &st) == -1)
		return 0;
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)))
		return 0;
	return (uint64_t)st.st_ino;
}

/* A link read failed (rc): the peer is gone until the parent restarts
 * it; what waits on it fails now. */
static void
link_closed(struct front_backend *fb, enum proc_id peer, int rc)
{
	struct proc_ctx *ctx = fb->ctx;

	log_info(
	    "front: link to %s closed (%s)", proc_name(peer), msg_strerror(rc));
	close(ctx->fd[peer]);
	ctx->fd[peer] = -1;
	front_backend_link_down(fb, peer);
}

/*
 * Send q to peer and wait for the reply to reqid of type rtype (exactly
 * rlen bytes, or at most rlen with FB_VARIABLE). In a task (every API
 * request runs in one, host/http/front.c), the task suspends and the
 * event loop goes on with other requests; on the loop's own stack the
 * call waits on that one link, dispatching anything else that arrives
 * meanwhile. Returns API_OK, or an error with err filled: the peer is
 * down, did not answer in time, answered with MSG_F_ERROR or malformed.
 */
int
fb_call(struct front_backend *fb, enum proc_id peer, uint32_t type,
    uint64_t reqid, const void *q, size_t qlen, int qfd, uint32_t rtype,
    uint32_t rflags, void *r, size_t *rlen, int *rfd, struct api_error *err)
{
	struct proc_ctx *ctx = fb->ctx;
	const struct msg_hdr *h = (const struct msg_hdr *)fb->buf;
	uint64_t deadline = mono_ms() + FRONT_CALL_TIMEOUT_MS, now;
	struct pollfd pfd;
	struct task *self;
	size_t len;
	int fd, rc;

	if (rfd != NULL)
		*rfd = -1;
	if (ctx->fd[peer] < 0)
		return fb_fail(err, API_EUNAVAIL,
		    "The %s service is restarting", proc_name(peer));
	/* What waits in the batches must not wait behind this call. */
	if (task_self() == NULL) {
		fb_flush_decisions(fb);
		fb_flush_vmm(fb);
	}
	if (peer == PROC_VMM && qfd == -1 && task_self() != NULL)
		rc = fb_vmm_queue(fb, type, reqid, q, qlen);
	else
		rc = msg_send(ctx->fd[peer], type, 0, reqid, q, qlen, qfd);
	if (rc != MSG_OK) {
		log_warnx("%s: send to %s: %s", __func__, proc_name(peer),
		    msg_strerror(rc));
		return fb_fail(err, API_EUNAVAIL, "The %s service is busy",
		    proc_name(peer));
	}
	if ((self = task_self()) != NULL) {
		struct fb_wait w = { .task = self,
			.peer = peer,
			.reqid = reqid,
			.type = type,
			.rtype = rtype,
			.rflags = rflags,
			.r = r,
			.rlen = rlen,
			.rfd = rfd,
			.err = err,
			.deadline = deadline };

		wait_add(fb, &w);
		task_suspend();
		return w.rc;
	}
	for (;;) {
		now = mono_ms();
		if (now >= deadline) {
			log_warnx("%s: %s did not answer %s in time", __func__,
			    proc_name(peer), msg_type_name(type));
			return fb_fail(err, API_EUNAVAIL,
			    "The %s service did not answer", proc_name(peer));
		}
		pfd.fd = ctx->fd[peer];
		pfd.events = POLLIN;
		pfd.revents = 0;
		rc = poll(&pfd, 1, (int)(deadline - now));
		if (rc == -1 && errno == EINTR)
			continue;
		if (rc <= 0)
			continue;
		rc = msg_recv(ctx->fd[peer], fb->buf, MSG_BUFSZ, &len, &fd);
		if (rc == MSG_ERR_AGAIN || rc == MSG_ERR_TRUNCATED)
			continue;
		if (rc != MSG_OK) {
			link_closed(fb, peer, rc);
			return fb_fail(err, API_EUNAVAIL,
			    "The %s service is restarting", proc_name(peer));
		}
		if (len >= sizeof(*h) && h->reqid == reqid &&
		    (h->flags & MSG_F_REPLY) && h->len == len - sizeof(*h))
			break;
		fb_dispatch(fb, peer, len, fd);
	}
	return fb_reply(
	    peer, type, rtype, rflags, fb->buf, len, fd, r, rlen, rfd, err);
}

/*
 * Decisions go to the policy process in batches: a task's question waits
 * for the end of the loop's pass (fb_flush_decisions), to go with the
 * others of that pass in one message, and one message brings the
 * answers back (docs/architecture.md). Its waiter has type
 * MSG_POLICY_DECIDE_BATCH; the answer is copied to it by
 * fb_deliver_decisions.
 */
static int
fb_decide_batched(struct front_backend *fb, const struct msg_policy_decide *q,
    uint64_t reqid, struct msg_policy_decision *d, struct api_error *err)
{
	size_t rlen = sizeof(*d);
	struct fb_wait w = { .task = task_self(),
		.peer = PROC_POLICY,
		.reqid = reqid,
		.type = MSG_POLICY_DECIDE_BATCH,
		.rtype = MSG_POLICY_DECISIONS,
		.r = d,
		.rlen = &rlen,
		.err = err,
		.deadline = mono_ms() + FRONT_CALL_TIMEOUT_MS };

	if (fb->ctx->fd[PROC_POLICY] < 0)
		return fb_fail(
		    err, API_EUNAVAIL, "The policy service is restarting");
	if (fb->dbatch == NULL &&
	    (fb->dbatch = malloc(sizeof(*fb->dbatch))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	if (fb->dbatch_n == MSG_DECIDE_BATCH_MAX)
		fb_flush_decisions(fb);
	fb->dbatch->e[fb->dbatch_n].reqid = reqid;
	fb->dbatch->e[fb->dbatch_n].q = *q;
	fb->dbatch_n++;
	wait_add(fb, &w);
	task_suspend();
	return w.rc;
}

void
fb_flush_decisions(struct front_backend *fb)
{
	struct proc_ctx *ctx = fb->ctx;
	uint32_t n = fb->dbatch_n;
	int rc;

	if (n == 0)
		return;
	fb->dbatch_n = 0;
	fb->dbatch->h.count = n;
	fb->dbatch->h.pad = 0;
	rc = ctx->fd[PROC_POLICY] < 0
	    ? MSG_ERR_IO
	    : msg_send(ctx->fd[PROC_POLICY], MSG_POLICY_DECIDE_BATCH, 0,
	          ++fb->next_reqid, fb->dbatch,
	          sizeof(fb->dbatch->h) + n * sizeof(fb->dbatch->e[0]), -1);
	if (rc != MSG_OK) {
		log_warnx("%s: %u decisions not asked: %s", __func__, n,
		    msg_strerror(rc));
		fb_fail_waits(fb, PROC_POLICY, "is restarting");
	}
}

/* The answers to a batch: each to its task, which runs on at once. A
 * malformed batch is dropped; its tasks fail at their deadline. */
static int
fb_deliver_decisions(struct front_backend *fb, size_t len)
{
	const struct msg_hdr *h = (const struct msg_hdr *)fb->buf;
	const uint8_t *p = fb->buf + sizeof(*h);
	struct msg_policy_decision_entry e;
	struct msg_batch_hdr bh;
	struct fb_wait *w;
	uint32_t i;

	if (len < sizeof(*h) + sizeof(bh) || h->len != len - sizeof(*h) ||
	    !(h->flags & MSG_F_REPLY) || (h->flags & MSG_F_ERROR))
		return -1;
	memcpy(&bh, p, sizeof(bh));
	if (bh.count == 0 || bh.count > MSG_DECIDE_BATCH_MAX ||
	    h->len != sizeof(bh) + bh.count * sizeof(e))
		return -1;
	for (i = 0; i < bh.count; i++) {
		memcpy(&e, p + sizeof(bh) + i * sizeof(e), sizeof(e));
		if ((w = wait_find(fb, PROC_POLICY, e.reqid)) == NULL ||
		    w->type != MSG_POLICY_DECIDE_BATCH)
			continue; /* it gave up waiting */
		memcpy(w->r, &e.d, sizeof(e.d));
		fb_wake(fb, w, API_OK);
	}
	return 0;
}

/* A message on a link that is not the reply being waited for: a task's
 * reply, or a message for the handlers. */
void
fb_dispatch(struct front_backend *fb, enum proc_id from, size_t len, int fd)
{
	struct proc_ctx *ctx = fb->ctx;
	const struct msg_handler *h;
	struct msg m;
	int rc;

	if (fb_deliver(fb, from, len, fd))
		return;
	if (from == PROC_VMM && len >= sizeof(struct msg_hdr) &&
	    ((const struct msg_hdr *)fb->buf)->type == MSG_VMM_BATCH_REPLY) {
		if (fd != -1)
			close(fd);
		fb_deliver_vmm_batch(fb, len);
		return;
	}
	if (from == PROC_POLICY && len >= sizeof(struct msg_hdr) &&
	    ((const struct msg_hdr *)fb->buf)->type == MSG_POLICY_DECISIONS) {
		if (fd != -1)
			close(fd);
		if (fb_deliver_decisions(fb, len) != 0) {
			log_warnx(
			    "%s: a malformed batch of decisions", __func__);
			ctx->ndropped++;
		}
		return;
	}
	rc = msg_decode(ctx->handlers, ctx->nhandlers, from, fb->buf, len,
	    fd != -1, &m, &h);
	if (rc != MSG_OK) {
		log_warnx("%s: dropped a message from %s: %s", __func__,
		    proc_name(from), msg_strerror(rc));
		ctx->ndropped++;
		if (fd != -1)
			close(fd);
		return;
	}
	m.fd = fd;
	ctx->nrecv++;
	if (h->fn(ctx, &m) != 0)
		ctx->ndropped++;
}

/* The messages waiting on a link, at most this many per loop pass, so one
 * busy peer cannot starve the clients. */
#define FB_LINK_BATCH 64

int
front_backend_link_event(struct front_backend *fb, enum proc_id peer)
{
	struct proc_ctx *ctx = fb->ctx;
	size_t len;
	int i, rc, fd;

	if (peer == PROC_PARENT)
		return proc_link_event(ctx, peer, fb->buf, MSG_BUFSZ);
	for (i = 0; i < FB_LINK_BATCH && ctx->fd[peer] >= 0; i++) {
		rc = msg_recv_nowait(
		    ctx->fd[peer], fb->buf, MSG_BUFSZ, &len, &fd);
		if (rc == MSG_ERR_AGAIN)
			break;
		if (rc == MSG_ERR_TRUNCATED) {
			ctx->ndropped++;
			continue;
		}
		if (rc != MSG_OK) {
			link_closed(fb, peer, rc);
			break;
		}
		fb_dispatch(fb, peer, len, fd);
	}
	return 0;
}

/* ---- authentication --------------------------------------------------- */

static struct token_verifier *
verifier(struct front_backend *fb)
{
	struct proc_ctx *ctx = fb->ctx;
	struct token_verifier_config vc;
	struct token_key keys[MSG_PUBKEYS_MAX];

	if (fb->tv != NULL && fb->tv_keys == ctx->token_keys &&
	    fb->tv_config == ctx->config)
		return fb->tv;
	token_verifier_free(fb->tv);
	fb->tv = NULL;
	fb->tv_keys = ctx->token_keys;
	fb->tv_config = ctx->config;
	if (proc_token_config(ctx, keys, &vc) != 0)
		return NULL;
	vc.cache_entries = 4096;
	vc.revoked = fb_revoked;
	vc.revoked_ctx = fb;
	if (token_verifier_new(&vc, &fb->tv) != 0)
		fb->tv = NULL;
	return fb->tv;
}

static int
fb_authenticate(void *arg, const char *tok, size_t len,
    struct api_principal *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct token_verifier *tv;
	struct token_claims c;
	int rc;

	if ((tv = verifier(fb)) == NULL)
		return fb_fail(err, API_EUNAVAIL, "Not ready");
	if ((rc = token_verify(tv, tok, len, &c)) ==
	    TOKEN_E_REVOCATION_UNKNOWN) {
		/* The store is restarting: the client retries, as for any
		 * child that is (not a 401 for a token that may be good). */
		log_info("token refused for now: %s", token_strerror(rc));
		rc = fb_fail(err, API_EUNAVAIL,
		    "Token revocation status unknown; try again");
		err->retry_after = 1;
		return rc;
	}
	if (rc != 0) {
		log_info("token refused: %s", token_strerror(rc));
		return fb_fail(
		    err, API_EUNAUTH, "Invalid token: %s", token_strerror(rc));
	}
	if (strlen(c.sub) >= GRANT_PRINCIPAL_MAX)
		return fb_fail(err, API_EUNAUTH, "Invalid token: sub too long");
	memset(out, 0, sizeof(*out));
	strlcpy(out->sub, c.sub, sizeof(out->sub));
	strlcpy(out->jti, c.jti, sizeof(out->jti));
	strlcpy(out->sbx, c.sbx, sizeof(out->sbx));
	for (size_t i = 0; i < c.nchain && i < TOKEN_CHAIN_MAX; i++) {
		if (i > 0)
			strlcat(out->chain, " ", sizeof(out->chain));
		strlcat(out->chain, c.chain[i], sizeof(out->chain));
	}
	out->caps = c.caps;
	out->exp = c.exp;
	return API_OK;
}

/* ---- authorization ---------------------------------------------------- */

/* Which process carries out an effect needing cap. */
static enum proc_id
performer(enum cap_id cap)
{
	switch (cap) {
	case CAP_EXEC:
	case CAP_ARTIFACT_READ:
	case CAP_ARTIFACT_WRITE:
		return PROC_VMM;
	case CAP_SANDBOX_READ:
	case CAP_SANDBOX_WRITE:
		return PROC_VMM; /* sandboxes live with their workspaces */
	case CAP_IMAGE_READ:
	case CAP_IMAGE_WRITE:
		return PROC_VMM; /* it verifies and keeps the images */
	case CAP_AUDIT_READ:
		return PROC_STORE;
	case CAP_EGRESS:
		return PROC_EGRESS;
	default:
		return PROC_FRONT;
	}
}

int
fb_decide(struct front_backend *fb, const struct api_principal *who,
    enum cap_id cap, enum proc_id link, const char *target, uint64_t reqid,
    uint32_t flags, struct msg_policy_decision *d, struct api_error *err)
{
	struct msg_policy_decide q;
	size_t rlen = sizeof(*d);
	int rc;

	memset(&q, 0, sizeof(q));
	q.cap = cap;
	q.link = link;
	q.token_caps = who->caps;
	q.flags = flags;
	if (strlcpy(q.principal, who->sub, sizeof(q.principal)) >=
	    sizeof(q.principal))
		return fb_fail(err, API_EFORBIDDEN, "Principal name too long");
	if (target != NULL) {
		q.target_len = (uint32_t)strnlen(target, sizeof(q.target));
		memcpy(q.target, target, q.target_len);
	}
	if (task_self() != NULL)
		rc = fb_decide_batched(fb, &q, reqid, d, err);
	else
		rc = fb_call(fb, PROC_POLICY, MSG_POLICY_DECIDE, reqid, &q,
		    sizeof(q), -1, MSG_POLICY_DECISION, 0, d, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	return API_OK;
}

/*
 * The route's decision (as fb_decide, in a task) and, in the same batch
 * so the same round trip, a dry run beside it: the same principal and
 * capability on target2 with flags2 (a port's expose rule). *allowed2:
 * whether that one allowed; a failure of it is not the route's.
 */
static int
fb_decide_beside(struct front_backend *fb, const struct api_principal *who,
    enum cap_id cap, enum proc_id link, const char *target, uint64_t reqid,
    uint32_t flags, struct msg_policy_decision *d, const char *target2,
    uint32_t flags2, int *allowed2, struct api_error *err)
{
	struct msg_policy_decide q[2];
	struct msg_policy_decision d2;
	struct api_error err2;
	size_t rlen[2] = { sizeof(*d), sizeof(d2) };
	struct fb_wait w[2];
	const char *targets[2] = { target, target2 };
	uint32_t fl[2] = { flags, flags2 | DECIDE_DRY_RUN };
	uint64_t ids[2] = { reqid, ++fb->next_reqid };
	int i;

	*allowed2 = 0;
	if (task_self() == NULL || fb->ctx->fd[PROC_POLICY] < 0)
		return fb_decide(
		    fb, who, cap, link, target, reqid, flags, d, err);
	if (fb->dbatch == NULL &&
	    (fb->dbatch = malloc(sizeof(*fb->dbatch))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(q, 0, sizeof(q));
	memset(&err2, 0, sizeof(err2));
	for (i = 0; i < 2; i++) {
		q[i].cap = cap;
		q[i].link = link;
		q[i].token_caps = who->caps;
		q[i].flags = fl[i];
		if (strlcpy(q[i].principal, who->sub, sizeof(q[i].principal)) >=
		    sizeof(q[i].principal))
			return fb_fail(
			    err, API_EFORBIDDEN, "Principal name too long");
		q[i].target_len =
		    (uint32_t)strnlen(targets[i], sizeof(q[i].target));
		memcpy(q[i].target, targets[i], q[i].target_len);
	}
	if (fb->dbatch_n + 2 > MSG_DECIDE_BATCH_MAX)
		fb_flush_decisions(fb);
	for (i = 0; i < 2; i++) {
		w[i] = (struct fb_wait){ .task = task_self(),
			.peer = PROC_POLICY,
			.reqid = ids[i],
			.type = MSG_POLICY_DECIDE_BATCH,
			.rtype = MSG_POLICY_DECISIONS,
			.r = i == 0 ? (void *)d : (void *)&d2,
			.rlen = &rlen[i],
			.err = i == 0 ? err : &err2,
			.deadline = mono_ms() + FRONT_CALL_TIMEOUT_MS,
			.rc = -1 }; /* not yet: rcs are 0 or above */
		fb->dbatch->e[fb->dbatch_n].reqid = ids[i];
		fb->dbatch->e[fb->dbatch_n].q = q[i];
		fb->dbatch_n++;
		wait_add(fb, &w[i]);
	}
	/* Each answer wakes the task; it waits for both (a failure or a
	 * deadline wakes it too, with an error). */
	while (w[0].rc == -1 || w[1].rc == -1)
		task_suspend();
	*allowed2 = w[1].rc == API_OK && d2.grant.decision == GRANT_ALLOW;
	if (w[0].rc != API_OK)
		return w[0].rc > API_ERR_COUNT ? API_EUNAVAIL : w[0].rc;
	return API_OK;
}

void
fb_leave(struct front_backend *fb, const char *principal)
{
	struct msg_policy_leave q;

	memset(&q, 0, sizeof(q));
	strlcpy(q.principal, principal, sizeof(q.principal));
	if (fb->ctx->fd[PROC_POLICY] < 0 ||
	    msg_send(fb->ctx->fd[PROC_POLICY], MSG_POLICY_LEAVE, 0,
	        ++fb->next_reqid, &q, sizeof(q), -1) != MSG_OK)
		log_warnx("%s: the policy process did not get it", __func__);
}

/*
 * A decision's refusal as the API error a client sees. The message names
 * the capability and nothing of the policy's text; the deciding rule goes
 * to the log and the audit log. A spent budget is 403, not 429: it does
 * not refill, so a client that retries on 429 would retry for ever.
 */
int
fb_refusal(
    const struct msg_policy_decision *d, enum cap_id cap, struct api_error *err)
{
	switch (d->reason) {
	case POLICY_R_RATE:
		err->retry_after = (uint32_t)((d->retry_after_ms + 999) / 1000);
		if (err->retry_after == 0)
			err->retry_after = 1;
		return fb_fail(err, API_ERATE, "Rate limit for %s exceeded",
		    cap_name(cap));
	case POLICY_R_BUSY:
		err->retry_after = 1;
		return fb_fail(err, API_ERATE,
		    "Too many operations at once (the policy's concurrent "
		    "limit)");
	case POLICY_R_BUDGET:
		return fb_fail(err, API_EFORBIDDEN,
		    "Operation budget exhausted (%s)", cap_name(cap));
	case POLICY_R_RESTORING:
		err->retry_after = 1;
		return fb_fail(
		    err, API_EUNAVAIL, "Budgets are being restored; try again");
	default:
		return fb_fail(err, API_EFORBIDDEN,
		    "Missing required capability: %s", cap_name(cap));
	}
}

/*
 * Operations the budget does not count: an agent whose budget is spent
 * can still read its own usage and delete its own sandboxes (the vmm
 * serves both only for the sandbox's owner), so it can see why and clean
 * up. docs/policy-language.md.
 */
static int
budget_free(const struct api_call *call)
{
	return strcmp(call->route, "system") == 0 ||
	    strcmp(call->route, "sandbox_delete") == 0;
}

static int
fb_authorize(
    void *arg, struct api_call *call, const char *target, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = (struct fb_authz *)call->authz_room;
	int rc;

	memset(a, 0, sizeof(*a));
	a->reqid = ++fb->next_reqid;
	a->link = performer(call->cap);
	/* exec is decided on the executable's name, which only the run op
	 * knows (front_run.c): the policy's exec allowlist names programs,
	 * not sandboxes. */
	if (call->cap == CAP_EXEC) {
		a->deferred = 1;
		call->authz = a;
		return API_OK;
	}
	if (call->port != 0 && call->cap == CAP_SANDBOX_READ) {
		/* A request through a port: its expose rule is asked
		 * beside the route's decision (fb_port_check). */
		char port[12];

		snprintf(port, sizeof(port), "%u", call->port);
		a->port = call->port;
		rc = fb_decide_beside(fb, call->who, call->cap, a->link, target,
		    a->reqid, 0, &a->d, port,
		    DECIDE_PORT | (call->who->via_link ? DECIDE_LINK : 0),
		    &a->port_allowed, err);
	} else
		rc = fb_decide(fb, call->who, call->cap, a->link, target,
		    a->reqid, budget_free(call) ? DECIDE_NO_BUDGET : 0, &a->d,
		    err);
	if (rc != API_OK)
		return rc;
	if (a->d.grant.decision != GRANT_ALLOW) {
		fb_audit_decision(fb, call, target, &a->d);
		return fb_refusal(&a->d, call->cap, err);
	}
	/* target is the sandbox id on routes under /v1/sandboxes/{id}. The
	 * audit entry is the answer given: a write the lock refuses is a
	 * deny, whatever the policy said. */
	if (strncmp(call->route, "sandbox", 7) == 0 ||
	    strncmp(call->route, "file", 4) == 0 ||
	    strncmp(call->route, "env", 3) == 0)
		if ((rc = fb_lock_check(fb, call, target, &a->d, err)) !=
		    API_OK) {
			fb_audit_lock_refusal(fb, call, target, &a->d);
			return rc;
		}
	/* Nothing changes unless its entry is in the audit log. */
	if ((rc = fb_audit_decision_commit(fb, call, target, &a->d, err)) !=
	    API_OK)
		return rc;
	call->authz = a;
	return API_OK;
}

/* ---- tokens ----------------------------------------------------------- */

_Static_assert(sizeof(struct fb_authz) <= API_AUTHZ_ROOM,
    "a decision fits the call's room");

int
fb_mint(struct front_backend *fb, const struct api_call *call, cap_set_t caps,
    int64_t exp, const char *sbx, struct api_token *out, struct api_error *err)
{
	return fb_mint_port(fb, call, caps, exp, sbx, 0, out, err);
}

int
fb_mint_port(struct front_backend *fb, const struct api_call *call,
    cap_set_t caps, int64_t exp, const char *sbx, unsigned port,
    struct api_token *out, struct api_error *err)
{
	struct msg_policy_mint *q;
	struct msg_policy_minted *r;
	size_t rlen = sizeof(*r);
	int rc;

	if (call->token == NULL || call->token_len == 0 ||
	    call->token_len > sizeof(q->token))
		return fb_fail(
		    err, API_EUNAUTH, "Token too large to attenuate");
	q = calloc(1, sizeof(*q));
	r = calloc(1, sizeof(*r));
	if (q == NULL || r == NULL) {
		rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		goto out;
	}
	q->caps = caps;
	q->exp = exp;
	q->port = port;
	if (sbx != NULL)
		strlcpy(q->sbx, sbx, sizeof(q->sbx));
	q->token_len = (uint32_t)call->token_len;
	memcpy(q->token, call->token, call->token_len);
	rc = fb_call(fb, PROC_POLICY, MSG_POLICY_MINT, ++fb->next_reqid, q,
	    sizeof(*q), -1, MSG_POLICY_MINTED, 0, r, &rlen, NULL, err);
	if (rc != API_OK) {
		rc = rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
		goto out;
	}
	if (r->status != 0) {
		rc = fb_fail(err,
		    r->status == TOKEN_E_WIDER ? API_EFORBIDDEN : API_EBADREQ,
		    "Cannot derive the token: %s", token_strerror(r->status));
		goto out;
	}
	if (r->token_len >= sizeof(out->token)) {
		rc = fb_fail(err, API_EINTERNAL, "Token too large");
		goto out;
	}
	memcpy(out->token, r->token, r->token_len);
	out->token[r->token_len] = '\0';
	out->expires_at = r->exp;
	rc = API_OK;
out:
	free(q);
	free(r);
	return rc;
}

static void
caps_text(cap_set_t caps, char *out, size_t len)
{
	out[0] = '\0';
	for (int c = 0; c < CAP_COUNT; c++)
		if (caps & CAP_BIT(c)) {
			if (out[0] != '\0')
				strlcat(out, ",", len);
			strlcat(out, cap_name((enum cap_id)c), len);
		}
}

/* The jti of a token just minted ("?" if it does not verify here). */
static void
minted_jti(struct front_backend *fb, const struct api_token *t,
    char jti[TOKEN_JTI_MAX])
{
	struct token_verifier *tv = verifier(fb);
	struct token_claims c;

	strlcpy(jti, "?", TOKEN_JTI_MAX);
	if (tv != NULL && token_verify(tv, t->token, strlen(t->token), &c) == 0)
		strlcpy(jti, c.jti, TOKEN_JTI_MAX);
	sodium_memzero(&c, sizeof(c));
}

int
fb_mint_recorded(struct front_backend *fb, const struct api_call *call,
    cap_set_t caps, int64_t exp, const char *sbx, const char *why,
    struct api_token *out, struct api_error *err)
{
	char capstr[256], jti[TOKEN_JTI_MAX], detail[API_MSG_MAX + 320];
	int rc;

	if ((rc = fb_mint(fb, call, caps, exp, sbx, out, err)) != API_OK)
		return rc;
	minted_jti(fb, out, jti);
	caps_text(caps, capstr, sizeof(capstr));
	snprintf(detail, sizeof(detail),
	    "minted (%s): jti %s, caps %s, sandbox %s, expires %lld", why, jti,
	    capstr, sbx != NULL && sbx[0] ? sbx : "any",
	    (long long)out->expires_at);
	/* A credential is given out only once its entry is committed. */
	if ((rc = fb_audit_outcome(fb, call, "token.mint",
	         sbx != NULL ? sbx : "", 1, "token", detail, err)) != API_OK)
		sodium_memzero(out, sizeof(*out));
	return rc;
}

/* Every token minted, and every one refused, is in the audit log. */
static int
fb_token_attenuate(void *arg, const struct api_call *call,
    const struct api_attenuate *at, struct api_token *out,
    struct api_error *err)
{
	char caps[256], detail[API_MSG_MAX + 320], jti[TOKEN_JTI_MAX];
	int rc;

	rc = fb_mint(arg, call, at->caps, at->exp, at->sbx, out, err);
	caps_text(at->caps, caps, sizeof(caps));
	if (rc != API_OK) {
		snprintf(detail, sizeof(detail),
		    "refused: caps %s, sandbox %s: status=%d %s", caps,
		    at->sbx != NULL && at->sbx[0] ? at->sbx : "any",
		    api_err_status(rc), err->message);
		fb_audit_outcome(arg, call, "token.attenuate",
		    at->sbx != NULL ? at->sbx : "", 0, "token", detail, NULL);
		return rc;
	}
	minted_jti(arg, out, jti);
	snprintf(detail, sizeof(detail),
	    "allowed: jti %s, caps %s, sandbox %s, expires %lld", jti, caps,
	    at->sbx != NULL && at->sbx[0] ? at->sbx : "any",
	    (long long)out->expires_at);
	/* A credential is given out only once its entry is committed. */
	if ((rc = fb_audit_outcome(arg, call, "token.attenuate",
	         at->sbx != NULL ? at->sbx : "", 1, "token", detail, err)) !=
	    API_OK)
		memset(out, 0, sizeof(*out));
	return rc;
}

/* ---- policy ----------------------------------------------------------- */

static int
fb_policy_check(void *arg, const struct api_call *call,
    const struct api_check *chk, struct api_check_result *out,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	struct api_principal who;
	struct msg_policy_decision d;
	int rc;

	/* A dry run: as if the principal held every capability, so the
	 * answer is the policy's alone. */
	memset(&who, 0, sizeof(who));
	strlcpy(who.sub, chk->principal, sizeof(who.sub));
	who.caps = CAP_ALL;
	rc = fb_decide(fb, &who, chk->cap, PROC_FRONT, chk->target,
	    ++fb->next_reqid, DECIDE_DRY_RUN, &d, err);
	if (rc != API_OK)
		return rc;
	memset(out, 0, sizeof(*out));
	out->allow = d.grant.decision == GRANT_ALLOW;
	if (d.rule == 0) {
		strlcpy(out->rule, "default-deny", sizeof(out->rule));
		snprintf(out->explanation, sizeof(out->explanation),
		    "no rule allows %s to %s: denied by default",
		    chk->principal, cap_name(chk->cap));
	} else {
		snprintf(out->rule, sizeof(out->rule), "rule %u", d.rule);
		/* file:line:col in policy_dir, as `keep policy` says it. */
		if (d.where[0] != '\0' &&
		    memchr(d.where, '\0', sizeof(d.where)) != NULL)
			strlcpy(out->location, d.where, sizeof(out->location));
		else
			snprintf(out->location, sizeof(out->location),
			    "line %u", d.line);
		snprintf(out->explanation, sizeof(out->explanation),
		    "%s %s to %s by the rule at %s",
		    out->allow ? "allows" : "denies", chk->principal,
		    cap_name(chk->cap), out->location);
		if (d.reason == POLICY_R_RATE || d.reason == POLICY_R_BUDGET)
			snprintf(out->explanation, sizeof(out->explanation),
			    "allowed by the rule at %s, but %s now",
			    out->location, policy_reason_name(d.reason));
	}
	return API_OK;
}

static int
fb_policy_version(void *arg, const struct api_call *call,
    struct api_policy_version *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct msg_policy_info r;
	size_t rlen = sizeof(r);
	char hex[65];
	int rc;

	rc = fb_call(fb, PROC_POLICY, MSG_POLICY_INFO, ++fb->next_reqid, NULL,
	    0, -1, MSG_POLICY_INFO_REPLY, 0, &r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if (r.generation == 0)
		return fb_fail(err, API_EUNAVAIL, "No policy is loaded");
	memset(out, 0, sizeof(*out));
	snprintf(out->version, sizeof(out->version), "%llu",
	    (unsigned long long)r.generation);
	sodium_bin2hex(hex, sizeof(hex), r.hash, sizeof(r.hash));
	snprintf(out->hash, sizeof(out->hash), "blake2b:%s", hex);
	out->loaded_at = r.loaded_at;
	return API_OK;
}

/* ---- setup ------------------------------------------------------------ */

struct front_backend *
front_backend_new(struct proc_ctx *ctx)
{
	struct front_backend *fb;

	if ((fb = calloc(1, sizeof(*fb))) == NULL)
		return NULL;
	if ((fb->buf = malloc(MSG_BUFSZ)) == NULL) {
		free(fb);
		return NULL;
	}
	fb->ctx = ctx;
	fb->ops.ctx = fb;
	fb->ops.authenticate = fb_authenticate;
	fb->ops.authorize = fb_authorize;
	fb->ops.token_attenuate = fb_token_attenuate;
	fb->ops.policy_check = fb_policy_check;
	fb->ops.policy_version = fb_policy_version;
	fb_sandbox_ops(&fb->ops);
	fb_file_ops(&fb->ops);
	fb_audit_ops(&fb->ops);
	fb_run_ops(&fb->ops);
	fb_async_ops(&fb->ops);
	fb_persist_ops(&fb->ops);
	fb_image_ops(&fb->ops);
	fb_lock_ops(&fb->ops);
	fb_sched_ops(&fb->ops);
	fb_watch_ops(&fb->ops);
	fb_context_ops(&fb->ops);
	fb_secret_ops(&fb->ops);
	fb_link_ops(&fb->ops);
	return fb;
}

void
front_backend_free(struct front_backend *fb)
{
	if (fb == NULL)
		return;
	/* Runs must be resumed while the api lives (front_backend_stop). */
	token_verifier_free(fb->tv);
	token_verifier_free(fb->link_tv);
	free(fb->audit_buf);
	fb_revoked_free(fb);
	fb_locks_free(fb);
	fb_sched_free(fb);
	free(fb->dbatch);
	free(fb->vbatch);
	free(fb->buf);
	free(fb);
}

const struct api_backend *
front_backend_ops(struct front_backend *fb)
{
	return &fb->ops;
}

void
front_backend_stop(struct front_backend *fb)
{
	fb_flush_decisions(fb);
	fb_flush_vmm(fb);
	fb_fail_waits(fb, PROC_COUNT, "is stopping");
	fb_runs_fail_all(fb);
	front_backend_resume(fb);
	fb_watch_end_all(fb, "keepd is stopping");
	fb_audit_anon_flush(fb);
	fb_audit_flush(fb);
}

void
front_backend_link_down(struct front_backend *fb, enum proc_id peer)
{
	/* What was queued for it is dropped; its waiters fail below. */
	if (peer == PROC_POLICY)
		fb->dbatch_n = 0;
	if (peer == PROC_VMM && fb->vbatch != NULL)
		fb->vbatch->count = fb->vbatch->len = 0;
	fb_fail_waits(fb, peer, "is restarting");
	if (peer == PROC_VMM)
		fb_runs_fail_all(fb);
	if (peer == PROC_VMM)
		fb_watch_end_all(fb, "the vmm restarted");
}

/*
 * Runs, from the front's side: execute and commands/run become a
 * MSG_VMM_RUN to the vmm with the policy's grant (host/vmm_msg.h); the
 * HTTP reply is deferred (api_defer) until MSG_VMM_RUN_DONE, so a long run
 * never holds the event loop. A finished run is resumed from the loop
 * (front_backend_resume), never from inside a handler that may itself run
 * inside an op.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/log.h"

struct fb_run {
	struct fb_run *next;
	uint64_t reqid;
	struct api_pending *pending;
	uint64_t t0; /* monotonic ms */
	uint64_t deadline; /* give up on the vmm after this */
	int done;
	int rc;
	struct api_run_result res;
	struct api_error err;
	/* For the audit entry when it ends. */
	struct api_principal who;
	char request_id[40];
	char target[160]; /* sandbox id and command */
	/* A run nobody waits for (execute/async, host/front_async.c):
	 * called instead of resuming a request; owns res.out, res.err. */
	fb_run_done_fn on_done;
	void *on_done_arg;
};

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
put_bytes(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	ssize_t n;

	while (len > 0) {
		if ((n = write(fd, b, len)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		b += n;
		len -= (size_t)n;
	}
	return 0;
}

static int
put_str(int fd, const char *s, size_t len)
{
	uint8_t l[4] = { (uint8_t)len, (uint8_t)(len >> 8),
		(uint8_t)(len >> 16), (uint8_t)(len >> 24) };

	if (memchr(s, '\0', len) != NULL)
		return -1;
	return put_bytes(fd, l, sizeof(l)) || put_bytes(fd, s, len) ? -1 : 0;
}

static int
put_env(int fd, const struct api_kv *kv)
{
	size_t kl = strlen(kv->key), vl = strlen(kv->value);
	char *s;
	int rc;

	if (kl == 0 || memchr(kv->key, '=', kl) != NULL ||
	    (s = malloc(kl + vl + 2)) == NULL)
		return -1;
	memcpy(s, kv->key, kl);
	s[kl] = '=';
	memcpy(s + kl + 1, kv->value, vl + 1);
	rc = put_str(fd, s, kl + vl + 1);
	free(s);
	return rc;
}

/*
 * Send one run to the vmm and park the request. args/env/stdin are only
 * valid during the op, so they go into the memfd here.
 */
static int
run_start(struct front_backend *fb, const struct api_call *call, const char *id,
    const char *command, const char *const *args, size_t nargs,
    const struct api_kv *env, size_t nenv, const char *in, size_t inlen,
    uint64_t timeout_ms, fb_run_done_fn on_done, void *on_done_arg,
    struct api_error *err)
{
	struct fb_authz *a = call->authz;
	struct msg_vmm_run q;
	size_t i;
	struct fb_run *run;
	struct stat st;
	int mfd = -1, rc;

	if (a == NULL || a->link != PROC_VMM || !a->deferred)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	/* The decision, on the program: the policy's exec allowlist. */
	rc = fb_decide(
	    fb, call->who, CAP_EXEC, PROC_VMM, command, a->reqid, &a->d, err);
	if (rc != API_OK)
		return rc;
	fb_audit_decision(fb, call, command, &a->d);
	if (a->d.grant.decision != GRANT_ALLOW) {
		if (a->d.retry_after_ms != 0)
			return fb_refusal(&a->d, CAP_EXEC, err);
		return fb_fail(err, API_EFORBIDDEN,
		    "Not allowed to run %s (exec: the policy's allowlist)",
		    command);
	}
	memset(&q, 0, sizeof(q));
	if (nargs > RUN_MAX_ARGS || nenv > RUN_MAX_ENV)
		return fb_fail(
		    err, API_EBADREQ, "Too many arguments or variables");
	q.grant = a->d.grant;
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.command, command, sizeof(q.command)) >=
	    sizeof(q.command)) {
		rc = fb_fail(err, API_EBADREQ, "Command name too long");
		goto out;
	}
	q.nargs = (uint32_t)nargs;
	q.nenv = (uint32_t)nenv;
	q.stdin_len = inlen;
	q.timeout_ms = timeout_ms;
	if ((mfd = memfd_create("keep-run", MFD_CLOEXEC | MFD_ALLOW_SEALING)) ==
	    -1) {
		rc = fb_fail(err, API_EINTERNAL, "Internal error");
		goto out;
	}
	for (i = 0; i < nargs; i++)
		if (put_str(mfd, args[i], strlen(args[i])) != 0)
			goto bad;
	/* The vmm adds the sandbox's variables after these. */
	for (i = 0; i < nenv; i++)
		if (put_env(mfd, &env[i]) != 0)
			goto bad;
	if (put_bytes(mfd, in, inlen) != 0 || fstat(mfd, &st) == -1 ||
	    (uint64_t)st.st_size > RUN_MAX_INPUT)
		goto bad;
	q.input_len = (uint64_t)st.st_size;
	if (fcntl(mfd, F_ADD_SEALS,
	        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) == -1)
		goto bad;
	if ((run = calloc(1, sizeof(*run))) == NULL) {
		rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		goto out;
	}
	run->on_done = on_done;
	run->on_done_arg = on_done_arg;
	if (on_done == NULL && (run->pending = api_defer(call)) == NULL) {
		free(run);
		rc = fb_fail(err, API_EINTERNAL, "Runs need a connection");
		goto out;
	}
	/* egress: the token's caps for the run's egress decisions
	 * (host/vmm_egress.h). */
	{
		struct msg_vmm_run_caps rc_caps = { call->who->caps, 0 };

		if (fb->ctx->fd[PROC_VMM] >= 0)
			msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_RUN_CAPS, 0,
			    a->reqid, &rc_caps, sizeof(rc_caps), -1);
	}
	if (fb->ctx->fd[PROC_VMM] < 0 ||
	    msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_RUN, 0, a->reqid, &q,
	        sizeof(q), mfd) != MSG_OK) {
		/* The reply was deferred: it must be resumed, not returned. */
		run->done = 1;
		run->rc = fb_fail(
		    &run->err, API_EUNAVAIL, "The vmm service is restarting");
	}
	run->reqid = a->reqid;
	run->who = *call->who;
	strlcpy(run->request_id, call->request_id, sizeof(run->request_id));
	snprintf(run->target, sizeof(run->target), "%s %s", id, command);
	run->t0 = mono_ms();
	run->deadline = run->t0 + FB_RUN_WAIT_MS;
	run->next = fb->runs;
	fb->runs = run;
	rc = API_PENDING;
	goto out;
bad:
	rc = fb_fail(err, API_EBADREQ,
	    "Arguments, variables or stdin malformed or too large");
out:
	if (mfd != -1)
		close(mfd);
	return rc;
}

static int
fb_execute(void *arg, const struct api_call *call, const char *id,
    const struct api_exec *ex, struct api_run_result *out,
    struct api_error *err)
{
	/* The interpreters take the code as an argument: no temporary file
	 * and no shell in between. */
	const char *args[2] = { ex->language == API_LANG_PYTHON ? "-c" : "-e",
		ex->code };

	if (memchr(ex->code, '\0', ex->code_len) != NULL)
		return fb_fail(err, API_EBADREQ, "code contains NUL");
	return run_start(arg, call, id,
	    ex->language == API_LANG_PYTHON ? "python" : "js", args, 2, NULL, 0,
	    NULL, 0, ex->timeout_ms, NULL, NULL, err);
}

int
fb_run_async(struct front_backend *fb, const struct api_call *call,
    const char *id, const struct api_exec *ex, fb_run_done_fn done, void *arg,
    struct api_error *err)
{
	const char *args[2] = { ex->language == API_LANG_PYTHON ? "-c" : "-e",
		ex->code };

	if (memchr(ex->code, '\0', ex->code_len) != NULL)
		return fb_fail(err, API_EBADREQ, "code contains NUL");
	return run_start(fb, call, id,
	    ex->language == API_LANG_PYTHON ? "python" : "js", args, 2, NULL, 0,
	    NULL, 0, ex->timeout_ms, done, arg, err);
}

static int
fb_command_run(void *arg, const struct api_call *call, const char *id,
    const struct api_command *c, struct api_run_result *out,
    struct api_error *err)
{
	return run_start(arg, call, id, c->cmd, c->args, c->nargs, c->env,
	    c->nenv, c->stdin_data, c->stdin_len, c->timeout_ms, NULL, NULL,
	    err);
}

static struct fb_run *
run_find(struct front_backend *fb, uint64_t reqid)
{
	struct fb_run *r;

	for (r = fb->runs; r != NULL; r = r->next)
		if (r->reqid == reqid && !r->done)
			return r;
	return NULL;
}

static char *
read_exact(int fd, uint64_t off, uint64_t len)
{
	char *buf;
	size_t got = 0;
	ssize_t n;

	if ((buf = malloc(len + 1)) == NULL)
		return NULL;
	while (got < len) {
		n = pread(fd, buf + got, len - got, (off_t)(off + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			free(buf);
			return NULL;
		}
		got += (size_t)n;
	}
	buf[len] = '\0';
	return buf;
}

static const char *const status_reason[] = {
	[RUN_EXITED] = "",
	[RUN_FAULT] = "fault",
	[RUN_TIMEOUT] = "timeout",
	[RUN_OUTPUT_LIMIT] = "output-limit",
	[RUN_REFUSED] = "refused",
	[RUN_ERROR] = "error",
};

static int
h_run_done(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	struct msg_vmm_run_done d;
	struct fb_run *r;
	struct stat st;

	memcpy(&d, m->data, sizeof(d));
	if ((r = run_find(fb, m->hdr.reqid)) == NULL) {
		close(m->fd);
		return -1;
	}
	r->done = 1;
	if (d.status >= nitems(status_reason) ||
	    memchr(d.reason, '\0', sizeof(d.reason)) == NULL ||
	    fstat(m->fd, &st) == -1 || d.out_len > (uint64_t)st.st_size ||
	    d.err_len > (uint64_t)st.st_size - d.out_len ||
	    (r->res.out = read_exact(m->fd, 0, d.out_len)) == NULL ||
	    (r->res.err = read_exact(m->fd, d.out_len, d.err_len)) == NULL) {
		close(m->fd);
		free(r->res.out);
		r->res.out = NULL;
		r->rc = fb_fail(&r->err, API_EINTERNAL, "Internal error");
		return -1;
	}
	close(m->fd);
	r->res.out_len = d.out_len;
	r->res.err_len = d.err_len;
	r->res.exit_code = d.exit_code;
	r->res.duration_ms = d.duration_ms;
	if (d.status == RUN_REFUSED) {
		r->rc = fb_fail(&r->err, API_EBADREQ, "%s", d.reason);
		return 0;
	}
	if (d.status == RUN_ERROR) {
		r->rc = fb_fail(&r->err, API_EINTERNAL, "%s", d.reason);
		return 0;
	}
	/* The API's reason is the short code; the vmm's detail (vector,
	 * address) is in its log under the same request. */
	strlcpy(r->res.reason, status_reason[d.status], sizeof(r->res.reason));
	r->rc = API_OK;
	return 0;
}

const struct msg_handler fb_run_handlers[] = {
	{ MSG_VMM_RUN_DONE, PROC_BIT(PROC_VMM), sizeof(struct msg_vmm_run_done),
	    MSG_H_FD, h_run_done },
	FB_ASYNC_HANDLERS, /* host/front_async.c */
};
const size_t fb_run_nhandlers = nitems(fb_run_handlers);

static void
run_audit(struct front_backend *fb, const struct fb_run *r)
{
	struct api_call call;
	char detail[96];

	memset(&call, 0, sizeof(call));
	call.who = &r->who;
	call.request_id = r->request_id;
	if (r->rc != API_OK) {
		strlcpy(detail, "not run: ", sizeof(detail));
		strlcat(detail, r->err.message, sizeof(detail));
	} else if (r->res.reason[0] != '\0')
		snprintf(detail, sizeof(detail), "stopped: %s, %llu ms",
		    r->res.reason, (unsigned long long)r->res.duration_ms);
	else
		snprintf(detail, sizeof(detail), "exit %d, %llu ms",
		    r->res.exit_code, (unsigned long long)r->res.duration_ms);
	fb_audit_event(fb, &call, "run", r->target, detail);
}

void
front_backend_resume(struct front_backend *fb)
{
	struct fb_run **rp = &fb->runs, *r;

	uint64_t now = mono_ms();

	while ((r = *rp) != NULL) {
		if (!r->done && now >= r->deadline) {
			log_warnx("%s: the vmm did not finish run %llu",
			    __func__, (unsigned long long)r->reqid);
			r->done = 1;
			r->rc = fb_fail(&r->err, API_EUNAVAIL,
			    "The run did not finish in time");
		}
		if (!r->done) {
			rp = &r->next;
			continue;
		}
		*rp = r->next;
		run_audit(fb, r);
		if (r->on_done != NULL)
			r->on_done(fb, r->on_done_arg, r->rc, &r->res, &r->err);
		else
			api_resume_run(r->pending, r->rc, &r->res, &r->err);
		free(r);
	}
}

void
fb_runs_fail_all(struct front_backend *fb)
{
	struct fb_run *r;

	for (r = fb->runs; r != NULL; r = r->next)
		if (!r->done) {
			r->done = 1;
			r->rc = fb_fail(&r->err, API_EUNAVAIL,
			    "The vmm restarted during the run");
		}
}

void
fb_run_ops(struct api_backend *ops)
{
	ops->execute = fb_execute;
	ops->command_run = fb_command_run;
}

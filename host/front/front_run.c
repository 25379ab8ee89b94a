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

#include <sodium.h>

#include "host/vmm/vmm.h"
#include "host/front/front_backend_int.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm_msg.h"
#include "lib/clock.h"
#include "lib/fdio.h"
#include "lib/log.h"
#include "policy/policy.h"

#define FB_RUN_READERS 4 /* readers of a run beside its own request */

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
	char sbx[SBX_ID_MAX];
	char command[RUN_NAME_MAX];
	int64_t started_ms; /* unix ms */
	/* RUN_F_STREAM: stdout, stderr bytes passed on as they came
	 * (h_run_output); the final output is what follows them. */
	uint64_t sent[2];
	/* A run nobody waits for (execute/async, host/front/front_async.c):
	 * called instead of resuming a request; owns res.out, res.err. */
	fb_run_done_fn on_done;
	void *on_done_arg;
	int cell; /* a live context's cell: its output is JSON lines */
	char results_nonce[20]; /* a plain python execute's (keep_once.py) */
	/* Other readers of a streaming run (fb_run_attach): its output
	 * from when they came, and its end. */
	struct api_pending *readers[FB_RUN_READERS];
	int reader_told[FB_RUN_READERS]; /* its stream has begun */
	size_t nreaders;
};

/* How a run ended, as the API and /metrics name it. */
static const char *const proc_status[] = {
	[RUN_EXITED] = "exited",
	[RUN_FAULT] = "fault",
	[RUN_TIMEOUT] = "timeout",
	[RUN_OUTPUT_LIMIT] = "output-limit",
	[RUN_REFUSED] = "refused",
	[RUN_ERROR] = "error",
	[RUN_STARTED] = "running",
	[RUN_KILLED] = "killed",
	[RUN_NOSANDBOX] = "refused",
	[RUN_NOTFOUND] = "not-found",
	[RUN_NOCWD] = "refused",
};

static int64_t
wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int
put_str(int fd, const char *s, size_t len)
{
	uint8_t l[4] = { (uint8_t)len, (uint8_t)(len >> 8),
		(uint8_t)(len >> 16), (uint8_t)(len >> 24) };

	if (memchr(s, '\0', len) != NULL)
		return -1;
	return write_all(fd, l, sizeof(l)) || write_all(fd, s, len) ? -1 : 0;
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
 * A background run: the vmm answers as soon as the guest runs; its end
 * comes later as MSG_VMM_BG_DONE (h_bg_done).
 */
static int
run_background(struct front_backend *fb, const struct api_call *call,
    uint64_t reqid, const struct msg_vmm_run *q, int mfd, uint64_t *pid,
    struct api_error *err)
{
	struct msg_vmm_run_done d;
	size_t dlen = sizeof(d);
	int rfd = -1, rc;

	rc = fb_call(fb, PROC_VMM, MSG_VMM_RUN, reqid, q, sizeof(*q), mfd,
	    MSG_VMM_RUN_DONE, FB_R_FD, &d, &dlen, &rfd, err);
	if (rfd >= 0)
		close(rfd);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	d.reason[sizeof(d.reason) - 1] = '\0';
	switch (d.status) {
	case RUN_STARTED:
		*pid = d.pid;
		fb_audit_event(
		    fb, call, "run.background", q->sandbox, q->command);
		return API_OK;
	case RUN_NOSANDBOX:
		return fb_fail(err, API_ENOTFOUND, "Sandbox not found");
	case RUN_NOCWD:
		return fb_fail(err, API_ENOTFOUND, "%s", d.reason);
	case RUN_REFUSED:
		return fb_fail(err, API_EBADREQ, "%s", d.reason);
	default:
		return fb_fail(err, API_EINTERNAL, "%s", d.reason);
	}
}

/*
 * Send one run to the vmm and park the request. args/env/stdin are only
 * valid during the op, so they go into the memfd here.
 */
static int
run_start_flags(struct front_backend *fb, const struct api_call *call,
    const char *id, const char *command, const char *const *args, size_t nargs,
    const struct api_kv *env, size_t nenv, const char *in, size_t inlen,
    uint64_t timeout_ms, uint64_t *bg_pid, fb_run_done_fn on_done,
    void *on_done_arg, const char *context, const char *results_nonce,
    const char *cwd, uint32_t run_flags, struct api_error *err)
{
	struct fb_authz *a = call->authz;
	struct msg_vmm_run q;
	size_t i, argbytes;
	struct fb_run *run;
	struct stat st;
	int mfd = -1, rc;

	if (a == NULL || a->link != PROC_VMM || !a->deferred)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	/* Arguments (an execute's code is one) and variables go on the
	 * guest's stack, at least 2 MiB whatever its memory: refused here,
	 * whole, before any budget is spent. */
	for (i = 0, argbytes = 0; i < nargs; i++)
		argbytes += strlen(args[i]) + 1;
	for (i = 0; i < nenv; i++)
		argbytes += strlen(env[i].key) + strlen(env[i].value) + 2;
	if (argbytes > RUN_ARGS_BYTES_MAX)
		return fb_fail(err, API_ETOOLARGE,
		    "Code, arguments and environment are limited to %u bytes "
		    "together; this request has %zu",
		    (unsigned)RUN_ARGS_BYTES_MAX, argbytes);
	/* The decision, on the program: the policy's exec allowlist. */
	rc = fb_decide(fb, call->who, CAP_EXEC, PROC_VMM, command, a->reqid,
	    DECIDE_ENTER, &a->d, err);
	if (rc != API_OK)
		return rc;
	if (a->d.grant.decision != GRANT_ALLOW) {
		fb_audit_decision(fb, call, command, &a->d);
		if (a->d.reason != POLICY_R_TARGET)
			return fb_refusal(&a->d, CAP_EXEC, err);
		return fb_fail(err, API_EFORBIDDEN,
		    "Not allowed to run %s (exec: the policy's allowlist)",
		    command);
	}
	if ((rc = fb_lock_check(fb, call, id, &a->d, err)) != API_OK) {
		fb_audit_lock_refusal(fb, call, command, &a->d);
		fb_leave(fb, call->who->sub);
		return rc;
	}
	if ((rc = fb_audit_decision_commit(fb, call, command, &a->d, err)) !=
	    API_OK) {
		fb_leave(fb, call->who->sub);
		return rc;
	}
	/* Secrets the variables name go to the vmm first (docs/secrets.md). */
	if ((rc = fb_run_secrets(fb, call, id, a->reqid, env, nenv,
	         context != NULL, err)) != API_OK) {
		fb_leave(fb, call->who->sub);
		return rc;
	}
	memset(&q, 0, sizeof(q));
	if (nargs > RUN_MAX_ARGS || nenv > RUN_MAX_ENV) {
		fb_leave(fb, call->who->sub);
		return fb_fail(
		    err, API_EBADREQ, "Too many arguments or variables");
	}
	q.grant = a->d.grant;
	strlcpy(q.sandbox, id, sizeof(q.sandbox));
	if (strlcpy(q.command, command, sizeof(q.command)) >=
	    sizeof(q.command)) {
		rc = fb_fail(err, API_EBADREQ, "Command name too long");
		goto out;
	}
	q.nargs = (uint32_t)nargs;
	q.nenv = (uint32_t)nenv;
	q.flags |= run_flags;
	q.stdin_len = inlen;
	q.timeout_ms = timeout_ms;
	/* The API layer checked it (absolute, no ".."); the vmm checks it
	 * again, and that it is a directory of the workspace. */
	if (cwd != NULL && strcmp(cwd, "/") != 0 &&
	    strlcpy(q.cwd, cwd, sizeof(q.cwd)) >= sizeof(q.cwd)) {
		rc = fb_fail(err, API_EBADREQ, "cwd is too long");
		goto out;
	}
	if (context != NULL) {
		q.flags |= RUN_F_CONTEXT;
		if (strlcpy(q.context, context, sizeof(q.context)) >=
		    sizeof(q.context)) {
			rc = fb_fail(err, API_ENOTFOUND, "Context not found");
			goto out;
		}
	}
	if ((mfd = memfd_new("keep-run")) == -1) {
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
	if (write_all(mfd, in, inlen) != 0 || fstat(mfd, &st) == -1 ||
	    (uint64_t)st.st_size > RUN_MAX_INPUT)
		goto bad;
	q.input_len = (uint64_t)st.st_size;
	if (memfd_seal(mfd) == -1)
		goto bad;
	/* egress: the token's caps for the run's egress decisions
	 * (host/vmm_egress.h). */
	{
		struct msg_vmm_run_caps rc_caps;

		memset(&rc_caps, 0, sizeof(rc_caps));
		rc_caps.token_caps = call->who->caps;
		strlcpy(rc_caps.request_id, call->request_id,
		    sizeof(rc_caps.request_id));
		if (fb->ctx->fd[PROC_VMM] >= 0)
			msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_RUN_CAPS, 0,
			    a->reqid, &rc_caps, sizeof(rc_caps), -1);
	}
	/* A client that reads the output as it comes gets it so: a run's
	 * as events, a cell's as its lines. */
	if (bg_pid == NULL && on_done == NULL &&
	    (context != NULL ? call->ndjson : call->sse))
		q.flags |= RUN_F_STREAM;
	if (bg_pid != NULL) {
		q.flags |= RUN_F_BACKGROUND;
		rc = run_background(fb, call, a->reqid, &q, mfd, bg_pid, err);
		goto out;
	}
	if ((run = calloc(1, sizeof(*run))) == NULL) {
		rc = fb_fail(err, API_EINTERNAL, "Out of memory");
		goto out;
	}
	run->on_done = on_done;
	run->on_done_arg = on_done_arg;
	run->cell = context != NULL;
	if (results_nonce != NULL)
		strlcpy(run->results_nonce, results_nonce,
		    sizeof(run->results_nonce));
	if (on_done == NULL && (run->pending = api_defer(call)) == NULL) {
		free(run);
		rc = fb_fail(err, API_EINTERNAL, "Runs need a connection");
		goto out;
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
	strlcpy(run->sbx, id, sizeof(run->sbx));
	strlcpy(run->command, command, sizeof(run->command));
	run->started_ms = wall_ms();
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
	/* A parked or background run gives its slot back when it ends. */
	if (rc != API_PENDING && !(bg_pid != NULL && rc == API_OK))
		fb_leave(fb, call->who->sub);
	return rc;
}

static int
run_start(struct front_backend *fb, const struct api_call *call, const char *id,
    const char *command, const char *const *args, size_t nargs,
    const struct api_kv *env, size_t nenv, const char *in, size_t inlen,
    uint64_t timeout_ms, uint64_t *bg_pid, fb_run_done_fn on_done,
    void *on_done_arg, const char *context, const char *results_nonce,
    struct api_error *err)
{
	return run_start_flags(fb, call, id, command, args, nargs, env, nenv,
	    in, inlen, timeout_ms, bg_pid, on_done, on_done_arg, context,
	    results_nonce, NULL, 0, err);
}

/* A command: an executable by name, in its cwd. */
static int
run_command(struct front_backend *fb, const struct api_call *call,
    const char *id, const struct api_command *c, uint64_t *bg_pid,
    fb_run_done_fn on_done, void *on_done_arg, struct api_error *err)
{
	/* A stdin stream is fed by later requests that find the run by its
	 * pid, which only a streaming reply tells (its start). */
	if (c->stdin_stream &&
	    (bg_pid != NULL || on_done != NULL || !call->sse ||
	        c->stdin_len != 0))
		return fb_fail(err, API_EBADREQ,
		    "A stdin stream needs a streaming reply and no stdin");
	return run_start_flags(fb, call, id, c->cmd, c->args, c->nargs, c->env,
	    c->nenv, c->stdin_data, c->stdin_len, c->timeout_ms, bg_pid,
	    on_done, on_done_arg, NULL, NULL, c->cwd,
	    c->stdin_stream ? RUN_F_STDIN : 0, err);
}

/* The terminal's input to the vmm for the run of pending p
 * (docs/terminal.md), or a command's stdin stream (RUN_F_STDIN); data
 * longer than one message goes in several. */
static void
fb_terminal_input(void *arg, struct api_pending *p, int kind, const void *data,
    size_t len, unsigned cols, unsigned rows)
{
	struct front_backend *fb = arg;
	struct msg_vmm_term_input *m;
	struct fb_run *r;
	size_t off = 0, n;

	for (r = fb->runs; r != NULL; r = r->next)
		if (r->pending == p && !r->done)
			break;
	if (r == NULL || fb->ctx->fd[PROC_VMM] < 0 ||
	    (m = calloc(1, sizeof(*m))) == NULL)
		return;
	do {
		n = len - off < sizeof(m->data) ? len - off : sizeof(m->data);
		memset(m, 0, sizeof(*m));
		m->kind = kind == API_TERM_RESIZE ? TERM_IN_RESIZE
		    : kind == API_TERM_EOF        ? TERM_IN_EOF
		                                  : TERM_IN_DATA;
		m->cols = (uint16_t)cols;
		m->rows = (uint16_t)rows;
		m->len = (uint32_t)n;
		if (n > 0)
			memcpy(m->data, (const char *)data + off, n);
		if (msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_TERM_INPUT, 0,
		        r->reqid, m, sizeof(*m), -1) != MSG_OK)
			break;
		off += n;
	} while (off < len);
	free(m);
}

/*
 * Another reader of the streaming run of pending run (E2B's Connect):
 * its request waits as the run's own does, with the run's start (its
 * pid) first, then what the run writes from now on, then its end.
 * The API layer found the run as its owner's (api_input_find).
 */
static int
fb_run_attach(void *arg, const struct api_call *call, struct api_pending *run,
    uint64_t pid, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct api_pending *p;
	struct fb_run *r;

	for (r = fb->runs; r != NULL; r = r->next)
		if (r->pending == run && run != NULL && !r->done && !r->cell &&
		    r->on_done == NULL)
			break;
	if (r == NULL)
		return fb_fail(err, API_ENOTFOUND, "No such running command");
	if (r->nreaders == FB_RUN_READERS)
		return fb_fail(err, API_ERATE,
		    "The command has %d readers already", FB_RUN_READERS);
	if ((p = api_defer(call)) == NULL)
		return fb_fail(err, API_EINTERNAL, "Readers need a connection");
	/* Its start goes out at the next pass (front_backend_resume): the
	 * connection takes a deferred reply's bytes once the op is over. */
	r->reader_told[r->nreaders] = 0;
	r->readers[r->nreaders++] = p;
	api_stream_reader(p, pid);
	return API_PENDING;
}

/* An interactive shell, `sh -i` unless t names another program, bound
 * to a terminal (docs/terminal.md). */
static int
fb_terminal_open(void *arg, const struct api_call *call, const char *id,
    const struct api_terminal *t, struct api_error *err)
{
	static const char *const sh_args[] = { "-i" };
	struct front_backend *fb = arg;
	struct api_kv *env;
	size_t nenv = 1;
	char term[64];
	int rc;

	if ((env = calloc(t->nenv + 1, sizeof(*env))) == NULL) {
		snprintf(err->message, sizeof(err->message), "Out of memory");
		return API_EINTERNAL;
	}
	snprintf(term, sizeof(term), "%s", t->term);
	env[0].key = "TERM";
	env[0].value = term;
	for (size_t i = 0; i < t->nenv; i++)
		if (strcmp(t->env[i].key, "TERM") != 0)
			env[nenv++] = t->env[i];
	rc = run_start_flags(fb, call, id, t->cmd != NULL ? t->cmd : "sh",
	    t->cmd != NULL ? t->args : sh_args, t->cmd != NULL ? t->nargs : 1,
	    env, nenv, NULL, 0, 0, NULL, NULL, NULL, NULL, NULL, t->cwd,
	    RUN_F_TERMINAL | RUN_F_STREAM, err);
	free(env);
	if (rc == API_PENDING) {
		const struct fb_authz *a = call->authz;
		struct fb_run *r;

		for (r = fb->runs; r != NULL; r = r->next)
			if (r->pending != NULL && r->reqid == a->reqid)
				break;
		if (r != NULL)
			fb_terminal_input(fb, r->pending, API_TERM_RESIZE, NULL,
			    0, t->cols, t->rows);
	}
	return rc;
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
	    ex->language == API_LANG_PYTHON ? "python" : "js", args, 2, ex->env,
	    ex->nenv, NULL, 0, ex->timeout_ms, NULL, done, arg, NULL, NULL,
	    err);
}

int
fb_run_command_async(struct front_backend *fb, const struct api_call *call,
    const char *id, const struct api_command *c, fb_run_done_fn done, void *arg,
    struct api_error *err)
{
	return run_command(fb, call, id, c, NULL, done, arg, err);
}

/* The interpreters take the code as an argument: no temporary file and
 * no shell in between. pid NULL: in the foreground. */
extern const char keep_once_py[]; /* build/gen/context_drivers.c */

static int
execute_code(void *arg, const struct api_call *call, const char *id,
    const struct api_exec *ex, uint64_t *pid, struct api_error *err)
{
	const char *args[4] = { ex->language == API_LANG_PYTHON ? "-c" : "-e",
		ex->code };
	const char *lang = ex->language == API_LANG_PYTHON ? "python" : "js";
	char nonce[20];
	uint8_t rnd[8];

	if (memchr(ex->code, '\0', ex->code_len) != NULL)
		return fb_fail(err, API_EBADREQ, "code contains NUL");
	/* A cell: the code alone; the context's driver runs it. */
	if (ex->context_id != NULL && pid == NULL)
		return run_start(arg, call, id, lang, args + 1, 1, ex->env,
		    ex->nenv, NULL, 0, ex->timeout_ms, NULL, NULL, NULL,
		    ex->context_id, NULL, err);
	/* Python in the foreground: through keep_once.py, which runs the
	 * code as -c would and adds its results (docs/contexts.md). */
	if (ex->language == API_LANG_PYTHON && pid == NULL) {
		randombytes_buf(rnd, sizeof(rnd));
		sodium_bin2hex(nonce, sizeof(nonce), rnd, sizeof(rnd));
		args[1] = keep_once_py;
		args[2] = nonce;
		args[3] = ex->code;
		return run_start(arg, call, id, lang, args, 4, ex->env,
		    ex->nenv, NULL, 0, ex->timeout_ms, NULL, NULL, NULL, NULL,
		    nonce, err);
	}
	return run_start(arg, call, id, lang, args, 2, ex->env, ex->nenv, NULL,
	    0, ex->timeout_ms, pid, NULL, NULL, NULL, NULL, err);
}

static int
fb_execute(void *arg, const struct api_call *call, const char *id,
    const struct api_exec *ex, struct api_run_result *out,
    struct api_error *err)
{
	return execute_code(arg, call, id, ex, NULL, err);
}

static int
fb_execute_background(void *arg, const struct api_call *call, const char *id,
    const struct api_exec *ex, uint64_t *pid, struct api_error *err)
{
	return execute_code(arg, call, id, ex, pid, err);
}

static int
fb_command_run(void *arg, const struct api_call *call, const char *id,
    const struct api_command *c, struct api_run_result *out,
    struct api_error *err)
{
	return run_command(arg, call, id, c, NULL, NULL, NULL, err);
}

static int
fb_command_background(void *arg, const struct api_call *call, const char *id,
    const struct api_command *c, uint64_t *pid, struct api_error *err)
{
	return run_command(arg, call, id, c, pid, NULL, NULL, err);
}

static int
fb_processes(void *arg, const struct api_call *call, const char *id,
    struct api_process **out, size_t *n, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_procs *r;
	size_t rlen, i;
	int rc, bg_only;

	/* execute/processes: the background runs (docs/api.yaml);
	 * processes: every run the sandbox remembers. */
	bg_only = strcmp(call->route, "execute_processes") == 0;
	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if ((r = malloc(sizeof(*r))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	rlen = sizeof(*r);
	rc = fb_call(fb, PROC_VMM, MSG_VMM_PROCS, a->reqid, &q, sizeof(q), -1,
	    MSG_VMM_PROCS_REPLY, 0, r, &rlen, NULL, err);
	if (rc != API_OK)
		rc = rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	else if ((rc = fb_sbx_error((int)r->status, err)) == API_OK) {
		if (r->n > SBX_PROCS_MAX)
			r->n = 0;
		if ((*out = calloc(r->n ? r->n : 1, sizeof(**out))) == NULL) {
			free(r);
			return fb_fail(err, API_EINTERNAL, "Out of memory");
		}
		for (i = 0, *n = 0; i < r->n; i++) {
			struct api_process *p = &(*out)[*n];

			if (bg_only && !r->p[i].background)
				continue;
			(*n)++;
			p->background = r->p[i].background != 0;
			p->pid = r->p[i].pid;
			r->p[i].cmd[sizeof(r->p[i].cmd) - 1] = '\0';
			strlcpy(p->cmd, r->p[i].cmd, sizeof(p->cmd));
			strlcpy(p->status,
			    r->p[i].status < nitems(proc_status) &&
			            proc_status[r->p[i].status] != NULL
			        ? proc_status[r->p[i].status]
			        : "error",
			    sizeof(p->status));
			p->exit_code = r->p[i].exit_code;
			p->started_at = r->p[i].started_at;
		}
	}
	free(r);
	return rc;
}

/* The sandbox's usage (vmm) and its principal's quotas (policy). */
static int
fb_system(void *arg, const struct api_call *call, const char *id,
    struct api_usage *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_vmm_sandbox_ref q;
	struct msg_vmm_system r;
	struct msg_policy_leave pq;
	struct msg_policy_usage pr;
	size_t rlen = sizeof(r), plen = sizeof(pr);
	int rc;

	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	rc = fb_call(fb, PROC_VMM, MSG_VMM_SYSTEM, a->reqid, &q, sizeof(q), -1,
	    MSG_VMM_SYSTEM_REPLY, 0, &r, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if ((rc = fb_sbx_error((int)r.status, err)) != API_OK)
		return rc;
	out->runs = r.runs;
	out->cpu_ms = r.cpu_ms;
	out->memory_bytes = r.memory_bytes;
	out->workspace_bytes = r.workspace_bytes;
	memset(&pq, 0, sizeof(pq));
	strlcpy(pq.principal, call->who->sub, sizeof(pq.principal));
	rc = fb_call(fb, PROC_POLICY, MSG_POLICY_USAGE, ++fb->next_reqid, &pq,
	    sizeof(pq), -1, MSG_POLICY_USAGE_REPLY, 0, &pr, &plen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	out->budget_remaining = pr.budget_remaining;
	out->read_tokens = pr.read_tokens;
	out->write_tokens = pr.write_tokens;
	return API_OK;
}

/*
 * Whether the policy exposes port to the caller (its expose rules): the
 * route's own decision allowed sandbox:read and spent its rate; this one
 * spends nothing more (a dry run) and is audited only when it refuses.
 */
static int
port_exposed(struct front_backend *fb, const struct api_call *call,
    const struct fb_authz *a, unsigned port, struct api_error *err)
{
	struct msg_policy_decision d;
	char target[8];
	int rc;

	snprintf(target, sizeof(target), "%u", port);
	/* By a link, only a rule that says "link" names the port: a link
	 * stops working when its rule goes. */
	rc = fb_decide(fb, call->who, CAP_SANDBOX_READ, PROC_VMM, target,
	    a->reqid,
	    DECIDE_PORT | DECIDE_DRY_RUN |
	        (call->who->via_link ? DECIDE_LINK : 0),
	    &d, err);
	if (rc != API_OK)
		return rc;
	if (d.grant.decision == GRANT_ALLOW)
		return API_OK;
	fb_audit_decision(fb, call, target, &d);
	if (d.reason == POLICY_R_TARGET && call->who->via_link)
		return fb_fail(err, API_EFORBIDDEN,
		    "Port %u may not be reached by link for %s by the policy",
		    port, call->who->sub);
	if (d.reason == POLICY_R_TARGET)
		return fb_fail(err, API_EFORBIDDEN,
		    "Port %u is not exposed to %s by the policy (an expose "
		    "rule names the ports a principal may reach)",
		    port, call->who->sub);
	return fb_refusal(&d, CAP_SANDBOX_READ, err);
}

/*
 * A port into the sandbox: the vmm, which holds its namespaces, connects
 * there and hands the socket over (MSG_VMM_PORT_REPLY's descriptor). The
 * front only moves bytes on it and never joins a namespace.
 */
static int
fb_port_open(void *arg, const struct api_call *call, const char *id,
    unsigned port, int *fd, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_vmm_port q;
	struct msg_vmm_port_reply r;
	size_t rlen = sizeof(r);
	int rc, rfd = -1;

	*fd = -1;
	if (a == NULL || a->link != PROC_VMM || port == 0 || port > 65535 ||
	    (call->who->via_link &&
	        (call->who->link_port != port ||
	            strcmp(call->who->sbx, id) != 0)))
		return fb_fail(err, API_EINTERNAL, "Internal error");
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	q.port = port;
	rc = fb_call(fb, PROC_VMM, MSG_VMM_PORT_OPEN, a->reqid, &q, sizeof(q),
	    -1, MSG_VMM_PORT_REPLY, FB_R_FD_OPT, &r, &rlen, &rfd, err);
	if (rc != API_OK) {
		if (rfd >= 0)
			close(rfd);
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	}
	if (r.status == PORT_OK && rfd >= 0) {
		*fd = rfd;
		return API_OK;
	}
	if (rfd >= 0)
		close(rfd);
	if (r.status == PORT_E_REFUSED)
		return fb_fail(err, API_EBADGATEWAY,
		    "Nothing listens on port %u in sandbox %s", port, id);
	if (r.status == PORT_E_UNREACHABLE || r.status == PORT_OK)
		return fb_fail(err, API_EBADGATEWAY,
		    "Port %u in sandbox %s cannot be reached: %s", port, id,
		    strerror(r.err > 0 ? r.err : EIO));
	return fb_sbx_error((int)r.status, err);
}

/* Is the port exposed to the caller (api_backend's port_check)? Asked
 * before each request through a port, a kept connection's included. */
static int
fb_port_check(void *arg, const struct api_call *call, const char *id,
    unsigned port, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;

	if (a == NULL || a->link != PROC_VMM || port == 0 || port > 65535 ||
	    (call->who->via_link &&
	        (call->who->link_port != port ||
	            strcmp(call->who->sbx, id) != 0)))
		return fb_fail(err, API_EINTERNAL, "Internal error");
	/* Allowed when asked beside the route's decision: nothing to ask
	 * again. A refusal is asked again, to be explained and audited. */
	if (a->port == port && a->port_allowed)
		return API_OK;
	return port_exposed(fb, call, a, port, err);
}

/* Killing names no program: the decision is exec, without a target. */
static int
fb_kill(void *arg, const struct api_call *call, const char *id, uint64_t pid,
    int sig, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_vmm_kill q;
	size_t rlen = sizeof(q);
	int rc;

	if (a == NULL || a->link != PROC_VMM || !a->deferred)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	rc = fb_decide(
	    fb, call->who, CAP_EXEC, PROC_VMM, "", a->reqid, 0, &a->d, err);
	if (rc != API_OK)
		return rc;
	if (a->d.grant.decision != GRANT_ALLOW) {
		fb_audit_decision(fb, call, "", &a->d);
		return fb_refusal(&a->d, CAP_EXEC, err);
	}
	if ((rc = fb_audit_decision_commit(fb, call, "", &a->d, err)) != API_OK)
		return rc;
	memset(&q, 0, sizeof(q));
	q.grant = a->d.grant;
	strlcpy(q.id, id, sizeof(q.id));
	q.pid = pid;
	q.sig = (uint32_t)sig;
	rc = fb_call(fb, PROC_VMM, MSG_VMM_KILL, a->reqid, &q, sizeof(q), -1,
	    MSG_VMM_KILL_REPLY, 0, &q, &rlen, NULL, err);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if (q.status == SBX_E_NOTFOUND)
		return fb_fail(err, API_ENOTFOUND, "No such running process");
	return fb_sbx_error((int)q.status, err);
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

static const char *const status_reason[] = {
	[RUN_EXITED] = "",
	[RUN_FAULT] = "fault",
	[RUN_TIMEOUT] = "timeout",
	[RUN_OUTPUT_LIMIT] = "output-limit",
	[RUN_REFUSED] = "refused",
	[RUN_ERROR] = "error",
	[RUN_STARTED] = NULL,
	[RUN_KILLED] = "killed",
	[RUN_NOSANDBOX] = "refused",
	[RUN_NOTFOUND] = "not-found",
	[RUN_NOCWD] = "refused",
};

static const uint64_t boot_le_us[] = { 1000, 2000, 5000, 10000, 20000, 50000,
	100000 };

_Static_assert(RUN_NOCWD + 1 ==
        sizeof(((struct front_backend *)0)->runs_by_status) / sizeof(uint64_t),
    "a counter per run status");

static void
metrics_count(struct front_backend *fb, const struct msg_vmm_run_done *d)
{
	size_t i;

	uint32_t st = d->status;

	/* The refusals a label shares are counted under one. */
	if (st == RUN_NOSANDBOX || st == RUN_NOCWD)
		st = RUN_REFUSED;
	if (st < nitems(fb->runs_by_status))
		fb->runs_by_status[st]++;
	if (d->boot_us == 0)
		return;
	for (i = 0; i < nitems(boot_le_us) && d->boot_us > boot_le_us[i]; i++)
		;
	fb->boot_bucket[i]++;
	fb->boot_count++;
	fb->boot_sum_us += d->boot_us;
}

/* The store's room, and what is kept of it for authenticated requests;
 * left out while the store is down. */
static void
fb_metrics_store(struct front_backend *fb, struct http_buf *b)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	struct api_error err;
	void *reply = NULL;
	size_t rlen;

	memset(&err, 0, sizeof(err));
	if (fb_store_call(fb, 0, MSG_STORE_ROOM, NULL, 0, &reply, &rlen, &hdr,
	        next, &err) != API_OK ||
	    hdr.status != STORE_OK) {
		free(reply);
		return;
	}
	free(reply);
	http_buf_printf(b,
	    "# HELP keep_store_room_bytes What the store can still write "
	    "(the map's room and the file system's, the reserve "
	    "included).\n"
	    "# TYPE keep_store_room_bytes gauge\n"
	    "keep_store_room_bytes %lld\n"
	    "# HELP keep_store_unattributed_floor_bytes Below this room, "
	    "refusals without a principal are no longer recorded.\n"
	    "# TYPE keep_store_unattributed_floor_bytes gauge\n"
	    "keep_store_unattributed_floor_bytes %llu\n",
	    (long long)hdr.value, (unsigned long long)STORE_UNATTRIBUTED_FLOOR);
}

static void
fb_metrics(void *arg, struct http_buf *b)
{
	struct front_backend *fb = arg;
	struct msg_policy_info info;
	size_t ilen = sizeof(info);
	struct api_error err;
	uint64_t cum = 0;
	size_t i;

	if (fb->ctx->config != NULL)
		http_buf_printf(b,
		    "# HELP keep_platform_info What runs guests, and whether "
		    "any can run (0: none).\n"
		    "# TYPE keep_platform_info gauge\n"
		    "keep_platform_info{platform=\"%s\"} %d\n",
		    fb->ctx->config->platform == VMM_PLATFORM_TRAP ? "trap"
		                                                   : "kvm",
		    fb->ctx->config->kvm_missing ? 0 : 1);
	http_buf_puts(b,
	    "# HELP keep_runs_total Runs by how they ended.\n"
	    "# TYPE keep_runs_total counter\n");
	for (i = 0; i < nitems(fb->runs_by_status); i++)
		if (i < nitems(proc_status) && proc_status[i] != NULL &&
		    i != RUN_STARTED && i != RUN_NOSANDBOX && i != RUN_NOCWD)
			http_buf_printf(b,
			    "keep_runs_total{status=\"%s\"} %llu\n",
			    proc_status[i],
			    (unsigned long long)fb->runs_by_status[i]);
	http_buf_puts(b,
	    "# HELP keep_boot_duration_seconds Guest boot: VM created to the "
	    "program's first instruction.\n"
	    "# TYPE keep_boot_duration_seconds histogram\n");
	for (i = 0; i < nitems(boot_le_us); i++) {
		cum += fb->boot_bucket[i];
		http_buf_printf(b,
		    "keep_boot_duration_seconds_bucket{le=\"%g\"} %llu\n",
		    (double)boot_le_us[i] / 1e6, (unsigned long long)cum);
	}
	http_buf_printf(b,
	    "keep_boot_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
	    "keep_boot_duration_seconds_sum %.6f\n"
	    "keep_boot_duration_seconds_count %llu\n",
	    (unsigned long long)fb->boot_count, (double)fb->boot_sum_us / 1e6,
	    (unsigned long long)fb->boot_count);
	http_buf_printf(b,
	    "# HELP keep_audit_unattributed_total Refusals without a "
	    "principal (no token, or one that does not verify): recorded "
	    "as entries of their own, or counted into one entry per source "
	    "and minute.\n"
	    "# TYPE keep_audit_unattributed_total counter\n"
	    "keep_audit_unattributed_total{recorded=\"entry\"} %llu\n"
	    "keep_audit_unattributed_total{recorded=\"counted\"} %llu\n",
	    (unsigned long long)fb->anon_total[0],
	    (unsigned long long)fb->anon_total[1]);
	fb_metrics_store(fb, b);
	/* Egress is decided for the vmm and the egress process, never
	 * through the front: the policy process counts. Left out while it
	 * is down. */
	if (fb_call(fb, PROC_POLICY, MSG_POLICY_INFO, ++fb->next_reqid, NULL, 0,
	        -1, MSG_POLICY_INFO_REPLY, 0, &info, &ilen, NULL,
	        &err) == API_OK)
		http_buf_printf(b,
		    "# HELP keep_egress_decisions_total Egress decisions "
		    "(guest fetches, names and connections, webhooks) the "
		    "policy process made since it started; a decision the "
		    "vmm reuses counts once.\n"
		    "# TYPE keep_egress_decisions_total counter\n"
		    "keep_egress_decisions_total{result=\"allow\"} %llu\n"
		    "keep_egress_decisions_total{result=\"deny\"} %llu\n",
		    (unsigned long long)info.egress_allow,
		    (unsigned long long)info.egress_deny);
}

/*
 * keep_once.py's results line, "\x1ekeep-results:NONCE:JSON\n", the last
 * one under this run's nonce, moved out of stderr into res->results
 * (left NULL when there is none or no memory). The JSON is the API's
 * to decode as untrusted.
 */
void
fb_take_results(struct api_run_result *res, const char *nonce)
{
	char mark[48];
	char *p, *at = NULL, *end, *e = res->err;
	size_t ml, left;

	ml =
	    (size_t)snprintf(mark, sizeof(mark), "\x1ekeep-results:%s:", nonce);
	if (e == NULL || ml >= sizeof(mark))
		return;
	for (p = e; (left = res->err_len - (size_t)(p - e)) >= ml &&
	     (p = memmem(p, left, mark, ml)) != NULL;
	     p++)
		at = p;
	if (at == NULL) {
		/* None: a python execute still answers results, empty. */
		if ((res->results = strdup("[]")) != NULL)
			res->results_len = 2;
		return;
	}
	end = memchr(at, '\n', res->err_len - (size_t)(at - e));
	end = end != NULL ? end + 1 : e + res->err_len;
	res->results_len = (size_t)(end - at) - ml;
	if ((res->results = malloc(res->results_len + 1)) == NULL) {
		res->results_len = 0;
		return;
	}
	memcpy(res->results, at + ml, res->results_len);
	res->results[res->results_len] = '\0';
	memmove(at, end, res->err_len - (size_t)(end - e));
	res->err_len -= (size_t)(end - at);
	e[res->err_len] = '\0';
}

static int
h_run_done(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	struct msg_vmm_run_done d;
	struct fb_run *r;

	memcpy(&d, m->data, sizeof(d));
	if ((r = run_find(fb, m->hdr.reqid)) == NULL) {
		close(m->fd);
		return -1;
	}
	r->done = 1;
	if (d.status >= nitems(status_reason) ||
	    status_reason[d.status] == NULL ||
	    memchr(d.reason, '\0', sizeof(d.reason)) == NULL ||
	    d.err_len > UINT64_MAX - d.out_len ||
	    memfd_check(m->fd, d.out_len + d.err_len, UINT64_MAX) == -1 ||
	    (r->res.out = memfd_read_at(m->fd, 0, d.out_len)) == NULL ||
	    (r->res.err = memfd_read_at(m->fd, d.out_len, d.err_len)) == NULL) {
		close(m->fd);
		free(r->res.out);
		r->res.out = NULL;
		r->rc = fb_fail(&r->err, API_EINTERNAL, "Internal error");
		return -1;
	}
	close(m->fd);
	metrics_count(fb, &d);
	r->res.out_len = d.out_len;
	r->res.err_len = d.err_len;
	/* What went out as it came is not sent twice. */
	if (r->sent[0] > 0 && r->sent[0] <= r->res.out_len) {
		memmove(r->res.out, r->res.out + r->sent[0],
		    r->res.out_len - r->sent[0]);
		r->res.out_len -= r->sent[0];
	}
	if (r->sent[1] > 0 && r->sent[1] <= r->res.err_len) {
		memmove(r->res.err, r->res.err + r->sent[1],
		    r->res.err_len - r->sent[1]);
		r->res.err_len -= r->sent[1];
	}
	r->res.exit_code = d.exit_code;
	r->res.duration_ms = d.duration_ms;
	r->res.limits =
	    ((d.limits & RUN_LIMIT_PROCESSES) ? API_LIMIT_PROCESSES : 0) |
	    ((d.limits & RUN_LIMIT_MEMORY) ? API_LIMIT_MEMORY : 0) |
	    ((d.limits & RUN_LIMIT_EGRESS) ? API_LIMIT_EGRESS : 0);
	d.egress[sizeof(d.egress) - 1] = '\0';
	strlcpy(r->res.egress, d.egress, sizeof(r->res.egress));
	r->res.egress_out = d.egress_out;
	r->res.egress_in = d.egress_in;
	r->res.cell = r->cell;
	if (r->results_nonce[0] != '\0')
		fb_take_results(&r->res, r->results_nonce);
	if (d.status == RUN_NOSANDBOX) {
		r->rc = fb_fail(&r->err, API_ENOTFOUND, "Sandbox not found");
		return 0;
	}
	if (d.status == RUN_REFUSED && strncmp(d.reason, "restoring", 9) == 0) {
		/* The vmm is still reading its sandboxes back: try again. */
		r->err.retry_after = 1;
		r->rc = fb_fail(&r->err, API_EUNAVAIL, "%s", d.reason);
		return 0;
	}
	/* No platform can run a guest on this box (docs/vmm.md). */
	if (d.status == RUN_REFUSED &&
	    strncmp(d.reason, "unavailable", 11) == 0) {
		r->rc = fb_fail(&r->err, API_EUNAVAIL, "%s", d.reason);
		return 0;
	}
	if (d.status == RUN_NOTFOUND) {
		r->rc = fb_fail(&r->err, API_ENOTFOUND, "Context not found");
		return 0;
	}
	/* As a spawn's ENOENT: the directory it names is not there. */
	if (d.status == RUN_NOCWD) {
		r->rc = fb_fail(&r->err, API_ENOTFOUND, "%s", d.reason);
		return 0;
	}
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

/*
 * Output of a streaming run so far (RUN_F_STREAM): passed on to its
 * client at once, in order; a piece out of order (never, on one link) is
 * left for the final reply, which carries everything after what was sent.
 */
static int
h_run_output(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	struct msg_vmm_run_output h;
	struct fb_run *r;
	size_t n;
	int s;

	if (m->hdr.len < sizeof(h))
		return -1;
	memcpy(&h, m->data, sizeof(h));
	if (h.stream != 1 && h.stream != 2)
		return -1;
	s = (int)h.stream - 1;
	n = m->hdr.len - sizeof(h);
	/* An empty piece (the run's start) passes too. A cell's pieces are
	 * its driver's lines, never its raw output. */
	if ((r = run_find(fb, m->hdr.reqid)) == NULL || r->pending == NULL ||
	    h.offset != r->sent[s] || (r->cell && s != 0))
		return 0;
	if (r->cell)
		api_stream_cell(r->pending, m->data + sizeof(h), n);
	else {
		if (n == 0 && h.run_pid != 0)
			api_stream_run_pid(r->pending, h.run_pid);
		api_stream_run(r->pending, s == 0 ? "stdout" : "stderr",
		    m->data + sizeof(h), n);
		for (size_t i = 0; i < r->nreaders && n > 0; i++) {
			api_stream_run(r->readers[i],
			    s == 0 ? "stdout" : "stderr", m->data + sizeof(h),
			    n);
			r->reader_told[i] = 1;
		}
	}
	r->sent[s] += n;
	return 0;
}

/* A background run ended: its slot back, its end in the audit log. */
static int
h_bg_done(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	struct msg_vmm_bg_done d;
	struct api_principal who;
	struct api_call call;
	char target[160], detail[96];

	memcpy(&d, m->data, sizeof(d));
	if (memchr(d.principal, '\0', sizeof(d.principal)) == NULL ||
	    memchr(d.id, '\0', sizeof(d.id)) == NULL ||
	    memchr(d.cmd, '\0', sizeof(d.cmd)) == NULL)
		return -1;
	fb_leave(fb, d.principal);
	memset(&who, 0, sizeof(who));
	strlcpy(who.sub, d.principal, sizeof(who.sub));
	memset(&call, 0, sizeof(call));
	call.who = &who;
	call.request_id = "";
	snprintf(target, sizeof(target), "%s %s", d.id, d.cmd);
	snprintf(detail, sizeof(detail),
	    "pid %llu: %s, exit %d, %llu ms, on %s", (unsigned long long)d.pid,
	    d.status < nitems(proc_status) && proc_status[d.status] != NULL
	        ? proc_status[d.status]
	        : "error",
	    d.exit_code, (unsigned long long)d.duration_ms, fb_platform(fb));
	fb_audit_event(fb, &call, "run", target, detail);
	return 0;
}

const struct msg_handler fb_run_handlers[] = {
	{ MSG_VMM_RUN_DONE, PROC_BIT(PROC_VMM), sizeof(struct msg_vmm_run_done),
	    MSG_H_FD, h_run_done },
	{ MSG_VMM_BG_DONE, PROC_BIT(PROC_VMM), sizeof(struct msg_vmm_bg_done),
	    0, h_bg_done },
	{ MSG_VMM_RUN_OUTPUT, PROC_BIT(PROC_VMM), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, h_run_output },
	FB_ASYNC_HANDLERS, /* host/front/front_async.c */
};
const size_t fb_run_nhandlers = nitems(fb_run_handlers);

const char *
fb_platform(const struct front_backend *fb)
{
	return fb->ctx->config->platform == VMM_PLATFORM_TRAP ? "trap" : "kvm";
}

static void
run_audit(struct front_backend *fb, const struct fb_run *r)
{
	struct api_call call;
	char detail[128];

	memset(&call, 0, sizeof(call));
	call.who = &r->who;
	call.request_id = r->request_id;
	if (r->rc != API_OK) {
		strlcpy(detail, "not run: ", sizeof(detail));
		strlcat(detail, r->err.message, sizeof(detail));
	} else if (r->res.reason[0] != '\0')
		snprintf(detail, sizeof(detail), "stopped: %s, %llu ms, on %s",
		    r->res.reason, (unsigned long long)r->res.duration_ms,
		    fb_platform(fb));
	else
		snprintf(detail, sizeof(detail), "exit %d, %llu ms, on %s",
		    r->res.exit_code, (unsigned long long)r->res.duration_ms,
		    fb_platform(fb));
	fb_audit_event(fb, &call, "run", r->target, detail);
}

void
front_backend_resume(struct front_backend *fb)
{
	struct fb_run **rp = &fb->runs, *r;
	uint64_t now = mono_ms();

	fb_expire_waits(fb);
	fb_sched_tick(fb);
	fb_watch_tick(fb);

	while ((r = *rp) != NULL) {
		if (!r->done && now >= r->deadline) {
			log_warnx("%s: the vmm did not finish run %llu",
			    __func__, (unsigned long long)r->reqid);
			r->done = 1;
			r->rc = fb_fail(&r->err, API_EUNAVAIL,
			    "The run did not finish in time");
		}
		if (!r->done) {
			/* A reader's stream begins (its start event) once its
			 * request waits, after the op that attached it. */
			for (size_t i = 0; i < r->nreaders; i++)
				if (!r->reader_told[i]) {
					api_stream_run(
					    r->readers[i], "stdout", NULL, 0);
					r->reader_told[i] = 1;
				}
			rp = &r->next;
			continue;
		}
		*rp = r->next;
		run_audit(fb, r);
		fb_leave(fb, r->who.sub);
		fb_persist_run(fb, &r->who, r->sbx, r->request_id, r->command,
		    r->rc == API_OK, &r->res, r->started_ms);
		/* Each reader its own copy: a resumed reply frees its result. */
		for (size_t i = 0; i < r->nreaders; i++) {
			struct api_run_result res = r->res;

			res.results = NULL;
			res.results_len = 0;
			res.out = res.err = NULL;
			res.out_len = res.err_len = 0;
			if (r->res.out_len > 0 &&
			    (res.out = malloc(r->res.out_len)) != NULL) {
				memcpy(res.out, r->res.out, r->res.out_len);
				res.out_len = r->res.out_len;
			}
			if (r->res.err_len > 0 &&
			    (res.err = malloc(r->res.err_len)) != NULL) {
				memcpy(res.err, r->res.err, r->res.err_len);
				res.err_len = r->res.err_len;
			}
			api_resume_run(r->readers[i], r->rc, &res, &r->err);
		}
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
	ops->execute_background = fb_execute_background;
	ops->command_background = fb_command_background;
	ops->processes = fb_processes;
	ops->kill = fb_kill;
	ops->system = fb_system;
	ops->port_open = fb_port_open;
	ops->port_check = fb_port_check;
	ops->metrics = fb_metrics;
	ops->terminal_open = fb_terminal_open;
	ops->terminal_input = fb_terminal_input;
	ops->run_attach = fb_run_attach;
}

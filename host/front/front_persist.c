/*
 * What must outlive a restart goes to the store before the client hears
 * it is done: sandbox records with their environment, and each run with
 * its output. The vmm holds the live sandboxes and reads them back from
 * the store when it starts (host/vmmproc/vmm_restore.c).
 *
 * Every write carries a grant for the store bound to its request id. The
 * operation was decided (and counted) already, so the store's grant comes
 * from the same question asked again as a dry run: it spends nothing, but
 * a policy reloaded in between still has the last word.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/proc_egress.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "host/vmm_msg.h"
#include "lib/log.h"
#include "lib/task.h"

#define SBX_RECORD_MAX 4096

static int
store_grant(struct front_backend *fb, const struct api_principal *who,
    enum cap_id cap, const char *target, uint64_t reqid, struct grant *g,
    struct api_error *err)
{
	struct msg_policy_decision d;
	int rc;

	rc = fb_decide(
	    fb, who, cap, PROC_STORE, target, reqid, DECIDE_DRY_RUN, &d, err);
	if (rc != API_OK)
		return rc;
	if (d.grant.decision != GRANT_ALLOW)
		return fb_refusal(&d, cap, err);
	*g = d.grant;
	return API_OK;
}

static int
store_status(const struct store_wire_reply *hdr, struct api_error *err)
{
	switch (hdr->status) {
	case STORE_OK:
	case STORE_E_NOTFOUND: /* deleting what is not there */
		return API_OK;
	case STORE_E_FULL:
	case STORE_E_NOSPC:
		return fb_fail(err, API_ESTORAGE, "The store is full");
	default:
		return fb_fail(err, API_EINTERNAL, "The store refused: %s",
		    store_strerror((int)hdr->status));
	}
}

/* Send one write (its grant inside) and read how it went. A put larger
 * than a message goes in a memfd (MSG_STORE_PUT_LARGE). */
static int
write_call(struct front_backend *fb, uint64_t reqid, uint16_t type, void *q,
    size_t qlen, struct api_error *err)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX];
	void *reply = NULL;
	uint64_t len = qlen;
	size_t rlen;
	int rc, fd;

	if (type == MSG_STORE_PUT && qlen > MSG_MAX_PAYLOAD) {
		if (qlen > STORE_PUT_LARGE_MAX ||
		    (fd = memfd_make_sealed("keep-put", q, qlen)) == -1) {
			free(q);
			return fb_fail(err, API_EINTERNAL, "Record too large");
		}
		free(q);
		rc = fb_store_call_fd(fb, reqid, MSG_STORE_PUT_LARGE, &len,
		    sizeof(len), fd, &reply, &rlen, &hdr, next, err);
		close(fd);
	} else {
		rc = fb_store_call(
		    fb, reqid, type, q, qlen, &reply, &rlen, &hdr, next, err);
		free(q);
	}
	if (rc == API_OK)
		rc = store_status(&hdr, err);
	free(reply);
	return rc;
}

/* Put one record, authorized by cap on target. */
static int
put(struct front_backend *fb, const struct api_principal *who, enum cap_id cap,
    const char *target, unsigned db, const void *rec, size_t reclen,
    struct api_error *err)
{
	uint64_t reqid = ++fb->next_reqid;
	struct grant g;
	void *q;
	size_t qlen;
	int rc;

	if ((rc = store_grant(fb, who, cap, target, reqid, &g, err)) != API_OK)
		return rc;
	if (store_wire_put_encode(db, 0, &g, rec, reclen, &q, &qlen) !=
	    STORE_OK)
		return fb_fail(err, API_EINTERNAL, "Record too large");
	return write_call(fb, reqid, MSG_STORE_PUT, q, qlen, err);
}

static int
del(struct front_backend *fb, const struct api_principal *who, enum cap_id cap,
    const char *target, unsigned db, const char *k1, const char *k2,
    struct api_error *err)
{
	uint64_t reqid = ++fb->next_reqid;
	struct grant g;
	void *q;
	size_t qlen;
	int rc;

	if ((rc = store_grant(fb, who, cap, target, reqid, &g, err)) != API_OK)
		return rc;
	if (store_wire_key_encode(
	        MSG_STORE_DELETE, db, k1, k2, 0, &g, &q, &qlen) != STORE_OK)
		return fb_fail(err, API_EINTERNAL, "Bad key");
	return write_call(fb, reqid, MSG_STORE_DELETE, q, qlen, err);
}

/* For other areas' records (front_sched.c, front_secrets.c). */
int
fb_store_put(struct front_backend *fb, const struct api_principal *who,
    enum cap_id cap, const char *target, unsigned db, const void *rec,
    size_t reclen, struct api_error *err)
{
	return put(fb, who, cap, target, db, rec, reclen, err);
}

int
fb_store_del(struct front_backend *fb, const struct api_principal *who,
    enum cap_id cap, const char *target, unsigned db, const char *k1,
    const char *k2, struct api_error *err)
{
	return del(fb, who, cap, target, db, k1, k2, err);
}

int
fb_persist_sandbox(struct front_backend *fb, const struct api_principal *who,
    const struct msg_vmm_sandbox_info *info,
    const struct api_sandbox_spec *spec, struct api_error *err)
{
	struct store_sandbox s;
	void *rec;
	size_t len, i;
	int rc;

	memset(&s, 0, sizeof(s));
	s.id = info->id;
	s.image = info->image;
	s.owner = who->sub;
	s.created_ms = info->created_at * 1000;
	s.expires_ms = info->expires_at * 1000;
	s.status = STORE_SBX_RUNNING;
	if (spec->nmetadata > STORE_META_MAX)
		return fb_fail(err, API_EBADREQ, "At most %d metadata entries",
		    STORE_META_MAX);
	s.nmeta = (uint32_t)spec->nmetadata;
	for (i = 0; i < spec->nmetadata; i++) {
		s.meta_key[i] = spec->metadata[i].key;
		s.meta_val[i] = spec->metadata[i].value;
	}
	if (store_sandbox_encode(&s, &rec, &len) != STORE_OK)
		return fb_fail(err, API_EBADREQ,
		    "metadata: a key or value is "
		    "too long");
	/* The vmm reads sandboxes back a few records to a message. */
	if (len > SBX_RECORD_MAX) {
		free(rec);
		return fb_fail(err, API_EBADREQ,
		    "metadata: at most %u bytes in all", SBX_RECORD_MAX - 512);
	}
	rc = put(fb, who, CAP_SANDBOX_WRITE, info->id, STORE_DB_SANDBOXES, rec,
	    len, err);
	free(rec);
	for (i = 0; rc == API_OK && i < spec->nenv; i++)
		rc = fb_persist_env(fb, who, info->id, spec->env[i].key,
		    spec->env[i].value, err);
	return rc;
}

void
fb_kv_free(struct api_kv *kv, size_t n)
{
	size_t i;

	for (i = 0; kv != NULL && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

int
fb_kv_copy(const struct api_kv *in, size_t n, struct api_kv **out, size_t *nout)
{
	size_t i;

	*out = NULL;
	*nout = 0;
	if (n == 0)
		return 0;
	if ((*out = calloc(n, sizeof(**out))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		(*out)[i].key = strdup(in[i].key);
		(*out)[i].value = strdup(in[i].value);
		if ((*out)[i].key == NULL || (*out)[i].value == NULL) {
			fb_kv_free(*out, i + 1);
			*out = NULL;
			return -1;
		}
	}
	*nout = n;
	return 0;
}

/*
 * A sandbox's metadata, which only its store record holds (the vmm keeps
 * none): read back and checked as any record, the owner's and under its
 * own id, else there is none to answer. A record not there (a sandbox
 * made before it was written, never) has none either.
 */
int
fb_sandbox_metadata(struct front_backend *fb, const struct api_principal *who,
    const char *id, struct api_kv **out, size_t *n, struct api_error *err)
{
	struct store_sandbox s;
	struct api_kv kv[STORE_META_MAX];
	const void *rec;
	void *reply;
	size_t reclen, i;
	uint32_t status;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = fb_store_get(fb, STORE_DB_SANDBOXES, id, NULL, API_EINTERNAL,
	         "Bad key", &reply, &rec, &reclen, &status, err)) != API_OK)
		return rc;
	if (status == STORE_OK &&
	    store_sandbox_decode(rec, reclen, &s) == STORE_OK &&
	    strcmp(s.id, id) == 0 && strcmp(s.owner, who->sub) == 0 &&
	    s.nmeta <= STORE_META_MAX) {
		for (i = 0; i < s.nmeta; i++) {
			kv[i].key = (char *)s.meta_key[i];
			kv[i].value = (char *)s.meta_val[i];
		}
		if (fb_kv_copy(kv, s.nmeta, out, n) != 0)
			rc = fb_fail(err, API_EINTERNAL, "Out of memory");
	} else if (status == STORE_OK)
		log_warnx("sandbox %s: its store record does not decode as "
		          "its own: no metadata",
		    id);
	else if (status != STORE_E_NOTFOUND)
		rc = fb_fail(err, API_EINTERNAL, "The store refused: %s",
		    store_strerror((int)status));
	free(reply);
	return rc;
}

/*
 * A sandbox's new end in its store record, so a restarted vmm ends it
 * then (vmm_restore.c). The record is read back and checked as for its
 * metadata; one that is not there or not the owner's is left alone
 * (logged): the vmm's own clock already holds the new end.
 */
int
fb_persist_sandbox_end(struct front_backend *fb,
    const struct api_principal *who, const char *id, int64_t expires_at,
    struct api_error *err)
{
	struct store_sandbox s;
	const void *rec;
	void *reply, *out;
	size_t reclen, len;
	uint32_t status;
	int rc;

	if ((rc = fb_store_get(fb, STORE_DB_SANDBOXES, id, NULL, API_EINTERNAL,
	         "Bad key", &reply, &rec, &reclen, &status, err)) != API_OK)
		return rc;
	if (status != STORE_OK ||
	    store_sandbox_decode(rec, reclen, &s) != STORE_OK ||
	    strcmp(s.id, id) != 0 || strcmp(s.owner, who->sub) != 0) {
		log_warnx("sandbox %s: no store record of its own to hold its "
		          "new end",
		    id);
		free(reply);
		return API_OK;
	}
	s.expires_ms = expires_at * 1000;
	if (store_sandbox_encode(&s, &out, &len) != STORE_OK) {
		free(reply);
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	}
	free(reply);
	rc = put(
	    fb, who, CAP_SANDBOX_WRITE, id, STORE_DB_SANDBOXES, out, len, err);
	free(out);
	return rc;
}

int
fb_forget_sandbox(struct front_backend *fb, const struct api_principal *who,
    const char *id, struct api_error *err)
{
	/* The store deletes the sandbox's runs and variables with it. */
	return del(
	    fb, who, CAP_SANDBOX_WRITE, id, STORE_DB_SANDBOXES, id, NULL, err);
}

int
fb_persist_env(struct front_backend *fb, const struct api_principal *who,
    const char *id, const char *key, const char *value, struct api_error *err)
{
	struct store_env e;
	void *rec;
	size_t len;
	int rc;

	e.sandbox = id;
	e.key = key;
	e.value = value;
	if (store_env_encode(&e, &rec, &len) != STORE_OK)
		return fb_fail(
		    err, API_EBADREQ, "env: a name or value is too long");
	rc = put(fb, who, CAP_SANDBOX_WRITE, id, STORE_DB_ENV, rec, len, err);
	free(rec);
	return rc;
}

int
fb_forget_env(struct front_backend *fb, const struct api_principal *who,
    const char *id, const char *key, struct api_error *err)
{
	return del(fb, who, CAP_SANDBOX_WRITE, id, STORE_DB_ENV, id, key, err);
}

static uint32_t
run_status(const char *reason)
{
	if (reason[0] == '\0')
		return STORE_RUN_EXITED;
	if (strcmp(reason, "timeout") == 0)
		return STORE_RUN_TIMEOUT;
	if (strcmp(reason, "fault") == 0)
		return STORE_RUN_FAULT;
	return STORE_RUN_KILLED;
}

/* A run's record on its way to the store. */
struct run_job {
	struct front_backend *fb;
	struct api_principal who;
	char command[128];
	char run_id[64];
	void *rec;
	size_t len;
};

static void
run_record(void *arg)
{
	struct run_job *job = arg;
	struct api_error err;

	memset(&err, 0, sizeof(err));
	if (put(job->fb, &job->who, CAP_EXEC, job->command, STORE_DB_RUNS,
	        job->rec, job->len, &err) != API_OK)
		log_warnx("run %s not recorded: %s", job->run_id, err.message);
	free(job->rec);
	free(job);
}

void
fb_persist_run(struct front_backend *fb, const struct api_principal *who,
    const char *id, const char *run_id, const char *command, int ok,
    const struct api_run_result *res, int64_t started_ms)
{
	struct store_run r;
	struct run_job *job;
	struct timespec ts;
	struct task *t;
	void *rec;
	size_t len;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&r, 0, sizeof(r));
	r.sandbox = id;
	r.id = run_id;
	r.principal = who->sub;
	r.command = command;
	r.status = ok ? run_status(res->reason) : STORE_RUN_FAILED;
	r.exit_code = ok ? res->exit_code : -1;
	r.started_ms = started_ms;
	r.finished_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	/* The whole output: the run's grant has already bounded it by the
	 * policy's output limit. */
	if (ok) {
		r.out = res->out;
		r.out_len = (uint32_t)(res->out_len < STORE_OUTPUT_MAX
		        ? res->out_len
		        : STORE_OUTPUT_MAX);
		r.err = res->err;
		r.err_len = (uint32_t)(res->err_len < STORE_OUTPUT_MAX
		        ? res->err_len
		        : STORE_OUTPUT_MAX);
		r.reason = res->reason;
	} else
		r.reason = "not started";
	if (store_run_encode(&r, &rec, &len) != STORE_OK) {
		log_warnx("run %s: record refused by its encoder", run_id);
		return;
	}
	if ((job = calloc(1, sizeof(*job))) == NULL) {
		log_warnx("run %s not recorded: out of memory", run_id);
		free(rec);
		return;
	}
	job->fb = fb;
	job->who = *who;
	strlcpy(job->command, command, sizeof(job->command));
	strlcpy(job->run_id, run_id, sizeof(job->run_id));
	job->rec = rec;
	job->len = len;
	/*
	 * The client's answer does not wait on this record (the run's
	 * result is its output, which the client already has), and nor
	 * does the loop: the grant and the put run in a task of their own
	 * when this is called from the loop.
	 */
	if (task_self() != NULL || (t = task_new(run_record, job)) == NULL) {
		run_record(job);
		return;
	}
	if (task_run(t) == TASK_DONE)
		task_free(t);
}

/* Is name a variable of the "K=V\0..." blob? */
static int
env_has(const char *env, size_t len, const char *name)
{
	size_t i, nl = strlen(name);

	for (i = 0; i < len; i += strlen(env + i) + 1)
		if (strncmp(env + i, name, nl) == 0 && env[i + nl] == '=')
			return 1;
	return 0;
}

/*
 * Make the store's variables of sandbox id those of the blob the vmm
 * answered an env operation with: whatever the operation was (merge,
 * replace, delete, clear), the result is what must survive.
 */
static int
sync_env_once(struct front_backend *fb, const struct api_principal *who,
    const char *id, const char *env, size_t env_len, struct api_error *err)
{
	struct store_wire_reply hdr;
	char next[STORE_CURSOR_MAX], *gone[STORE_PAGE_MAX];
	void *q = NULL, *reply = NULL;
	size_t qlen, rlen, ngone = 0, i;
	char *var, *eq;
	int rc;

	if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_ENV, id, NULL,
	        STORE_WIRE_MAX_LIST, NULL, &q, &qlen) != STORE_OK)
		return fb_fail(err, API_EINTERNAL, "Bad key");
	rc = fb_store_call(
	    fb, 0, MSG_STORE_LIST, q, qlen, &reply, &rlen, &hdr, next, err);
	free(q);
	if (rc == API_OK && hdr.status != STORE_OK)
		rc = store_status(&hdr, err);
	for (i = 0; rc == API_OK && i < hdr.count; i++) {
		struct store_env e;
		const void *rec;
		size_t reclen;

		if (store_wire_reply_record(
		        reply, rlen, (uint32_t)i, &rec, &reclen) != STORE_OK ||
		    store_env_decode(rec, reclen, &e) != STORE_OK)
			continue;
		if (!env_has(env, env_len, e.key) &&
		    (gone[ngone] = strdup(e.key)) != NULL)
			ngone++;
	}
	free(reply);
	for (i = 0; i < ngone; i++) {
		if (rc == API_OK)
			rc = fb_forget_env(fb, who, id, gone[i], err);
		free(gone[i]);
	}
	for (i = 0; rc == API_OK && i < env_len; i += strlen(env + i) + 1) {
		if ((var = strdup(env + i)) == NULL)
			return fb_fail(err, API_EINTERNAL, "Out of memory");
		if ((eq = strchr(var, '=')) != NULL) {
			*eq = '\0';
			rc = fb_persist_env(fb, who, id, var, eq + 1, err);
		}
		free(var);
	}
	return rc;
}

/*
 * The syncs of one sandbox run one at a time, newest snapshot first. Two
 * at once would each delete what the other's (newer or older) snapshot
 * added, and an older one's puts could land after a newer one's: an
 * acknowledged write would then be missing from the store (and, after a
 * restart of the vmm, which reads the store back, from the sandbox).
 * Snapshots are numbered in the order the vmm made them: a reply's task
 * runs as soon as it arrives, before the next reply, so the number is
 * taken here before anything can suspend. While one task writes, the
 * others leave their snapshot (only the newest is kept: it holds all of
 * the older ones' effects) and wait; after each round the writer wakes
 * the tasks whose snapshot that round covered, with its result.
 */
struct fb_env_waiter {
	struct fb_env_waiter *next;
	struct task *task;
	uint64_t seq;
	struct api_error *err;
	int rc;
};

struct fb_env_sync {
	struct fb_env_sync *next;
	char id[SBX_ID_MAX];
	char *env; /* the newest snapshot not yet written, or NULL */
	size_t env_len;
	uint64_t want; /* its number */
	struct fb_env_waiter *waiters;
};

static void
env_sync_wake(
    struct fb_env_sync *s, uint64_t upto, int rc, const struct api_error *err)
{
	struct fb_env_waiter **pp = &s->waiters, *w;

	while ((w = *pp) != NULL) {
		if (w->seq > upto) {
			pp = &w->next;
			continue;
		}
		*pp = w->next;
		w->rc = rc;
		if (rc != API_OK)
			*w->err = *err;
		if (task_run(w->task) == TASK_DONE)
			task_free(w->task);
		pp = &s->waiters; /* the list may have changed meanwhile */
	}
}

int
fb_sync_env(struct front_backend *fb, const struct api_principal *who,
    const char *id, const char *env, size_t env_len, struct api_error *err)
{
	uint64_t seq = ++fb->env_seq, cur;
	struct fb_env_sync *s, **pp;
	struct fb_env_waiter w;
	struct api_error round_err;
	char *blob;
	size_t blob_len;
	int rc, round_rc;

	for (s = fb->env_syncs; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0)
			break;
	if (s != NULL && task_self() != NULL) {
		if ((blob = malloc(env_len + 1)) == NULL)
			return fb_fail(err, API_EINTERNAL, "Out of memory");
		memcpy(blob, env, env_len);
		free(s->env);
		s->env = blob;
		s->env_len = env_len;
		s->want = seq;
		memset(&w, 0, sizeof(w));
		w.task = task_self();
		w.seq = seq;
		w.err = err;
		w.next = s->waiters;
		s->waiters = &w;
		task_suspend();
		return w.rc;
	}
	if (s != NULL || strlen(id) >= sizeof(s->id) ||
	    (s = calloc(1, sizeof(*s))) == NULL)
		return sync_env_once(fb, who, id, env, env_len, err);
	strlcpy(s->id, id, sizeof(s->id));
	s->next = fb->env_syncs;
	fb->env_syncs = s;
	rc = sync_env_once(fb, who, id, env, env_len, err);
	env_sync_wake(s, seq, rc, err);
	while (s->want > seq && s->env != NULL) {
		cur = s->want;
		blob = s->env;
		blob_len = s->env_len;
		s->env = NULL;
		memset(&round_err, 0, sizeof(round_err));
		round_rc =
		    sync_env_once(fb, who, id, blob, blob_len, &round_err);
		free(blob);
		env_sync_wake(s, cur, round_rc, &round_err);
		seq = cur;
	}
	for (pp = &fb->env_syncs; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	free(s->env);
	free(s);
	return rc;
}

/* The images uploaded through the API, recorded in the store's images. */
int
fb_persist_image(struct front_backend *fb, const struct api_principal *who,
    const struct api_image *im, struct api_error *err)
{
	struct store_image i;
	struct timespec ts;
	const char *hex = strchr(im->digest, ':');
	void *rec;
	size_t len;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&i, 0, sizeof(i));
	i.name = im->name;
	i.version = im->version;
	hex = hex != NULL ? hex + 1 : im->digest;
	if (sodium_hex2bin(i.digest, sizeof(i.digest), hex, strlen(hex), NULL,
	        NULL, NULL) != 0)
		memset(i.digest, 0, sizeof(i.digest));
	i.size = im->size;
	i.signer = "";
	i.added_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (store_image_encode(&i, &rec, &len) != STORE_OK)
		return fb_fail(err, API_EINTERNAL, "Image record refused");
	rc = put(
	    fb, who, CAP_IMAGE_WRITE, im->name, STORE_DB_IMAGES, rec, len, err);
	free(rec);
	return rc;
}

int
fb_forget_image(struct front_backend *fb, const struct api_principal *who,
    const char *name, struct api_error *err)
{
	return del(
	    fb, who, CAP_IMAGE_WRITE, name, STORE_DB_IMAGES, name, NULL, err);
}

static int
fb_token_revoke(void *arg, const struct api_call *call, const char *jti,
    int64_t exp, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_revocation v;
	struct timespec ts;
	void *rec;
	size_t len;
	int rc;

	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&v, 0, sizeof(v));
	v.jti = jti;
	v.revoked_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	v.exp_s = exp;
	if (v.exp_s == 0)
		v.exp_s = ts.tv_sec +
		    (int64_t)(fb->ctx->config != NULL
		            ? fb->ctx->config->token_max_ttl_ms / 1000 + 3600
		            : 86400);
	if (store_revocation_encode(&v, &rec, &len) != STORE_OK)
		return fb_fail(err, API_EBADREQ, "Bad jti");
	rc = put(
	    fb, call->who, CAP_ADMIN, jti, STORE_DB_REVOCATIONS, rec, len, err);
	free(rec);
	if (rc == API_OK) {
		fb_revoked_add(fb, jti, v.exp_s);
		fb_audit_event(fb, call, "token.revoke", jti, "");
	}
	return rc;
}

/* ---- idempotency ------------------------------------------------------ */

/* The store's key for (scope, key): both are free text of up to 255
 * bytes, the store's keys are shorter; a hash names the pair. */
static void
idem_store_key(const char *scope, const char *key, char out[33])
{
	crypto_generichash_state h;
	unsigned char d[16];

	crypto_generichash_init(&h, NULL, 0, sizeof(d));
	crypto_generichash_update(
	    &h, (const unsigned char *)scope, strlen(scope) + 1);
	crypto_generichash_update(&h, (const unsigned char *)key, strlen(key));
	crypto_generichash_final(&h, d, sizeof(d));
	sodium_bin2hex(out, 33, d, sizeof(d));
}

static int
fb_idem_load(void *arg, const struct api_call *call, const char *scope,
    const char *key, struct api_idem *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_idem k;
	char skey[33];
	const void *rec;
	void *reply;
	size_t reclen;
	uint32_t status;
	int rc;

	idem_store_key(scope, key, skey);
	if ((rc = fb_store_get(fb, STORE_DB_IDEMPOTENCY, call->who->sub, skey,
	         API_EINTERNAL, "Bad key", &reply, &rec, &reclen, &status,
	         err)) != API_OK)
		return rc;
	rc = fb_fail(err, API_ENOTFOUND, "No such key");
	if (status == STORE_OK &&
	    store_idem_decode(rec, reclen, &k) == STORE_OK &&
	    strcmp(k.principal, call->who->sub) == 0 &&
	    (out->body = malloc(k.body_len + 1)) != NULL) {
		memcpy(out->hash, k.req_hash, sizeof(out->hash));
		out->status = (int)k.status;
		memcpy(out->body, k.body, k.body_len);
		out->body_len = k.body_len;
		rc = API_OK;
	}
	free(reply);
	return rc;
}

/*
 * Keep a first reply in the store. From a request's task (a reply made
 * at once) the client hears it only once it is committed; from the loop
 * (a deferred reply) it is sent without waiting, and the store's answer
 * is only logged.
 */
static void
fb_idem_keep(void *arg, const struct api_principal *who, const char *scope,
    const char *key, const struct api_idem *rec)
{
	struct front_backend *fb = arg;
	struct store_idem k;
	struct api_error err;
	struct grant none;
	char skey[33];
	void *r = NULL, *q = NULL;
	size_t rlen, qlen;
	struct timespec ts;

	idem_store_key(scope, key, skey);
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(&k, 0, sizeof(k));
	k.principal = who->sub;
	k.key = skey;
	k.created_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	memcpy(k.req_hash, rec->hash, sizeof(k.req_hash));
	k.status = (uint32_t)rec->status;
	k.body = rec->body;
	k.body_len = (uint32_t)rec->body_len;
	/* The store takes these from the front alone, without a grant. */
	memset(&none, 0, sizeof(none));
	if (rec->body_len > STORE_BODY_MAX ||
	    store_idem_encode(&k, &r, &rlen) != STORE_OK ||
	    store_wire_put_encode(STORE_DB_IDEMPOTENCY, 0, &none, r, rlen, &q,
	        &qlen) != STORE_OK) {
		/* A reply larger than a message is kept in memory only. */
		log_info("idempotency: a reply of %zu bytes is not stored",
		    rec->body_len);
		free(r);
		return;
	}
	free(r);
	memset(&err, 0, sizeof(err));
	if (task_self() != NULL) {
		if (write_call(fb, ++fb->next_reqid, MSG_STORE_PUT, q, qlen,
		        &err) != API_OK)
			log_warnx("idempotency: not stored: %s", err.message);
		return;
	}
	if (fb->ctx->fd[PROC_STORE] < 0 ||
	    msg_send(fb->ctx->fd[PROC_STORE], MSG_STORE_PUT, 0,
	        ++fb->next_reqid, q, qlen, -1) != MSG_OK)
		log_warnx("idempotency: the store is down; not stored");
	free(q);
}

void
fb_persist_ops(struct api_backend *ops)
{
	ops->token_revoke = fb_token_revoke;
	ops->idem_load = fb_idem_load;
	ops->idem_keep = fb_idem_keep;
}

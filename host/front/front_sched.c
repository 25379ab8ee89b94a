/*
 * Schedules (docs/schedules.md): the front keeps every schedule in
 * memory, loaded from the store when it starts, and fires them from its
 * own loop. A fire is a run of the schedule's owner with the
 * capabilities of the token that last wrote the schedule: it goes
 * through the same path as an API request (the policy's decisions, the
 * owner's quotas and budget, the audit log, the run record), only
 * without a connection. Each fire's outcome is a record of its own in
 * the store (STORE_DB_SCHED_RUNS, the last SCHED_KEEP_RUNS of each
 * schedule), and the schedule's record keeps the occurrence it fired
 * last, so that a restart knows what it missed.
 *
 * Why the front: it already holds timers, tasks that may wait on other
 * processes, the decision and run machinery and the store's grants; the
 * parent must not parse schedules (untrusted text), and the policy
 * process does no I/O but its links (docs/architecture.md).
 *
 * Time is the real clock, or with keepd -T the test clock the parent
 * sends (MSG_CTL_TEST_CLOCK), for tests only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/sched/sched_spec.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "token/token.h"
#include "lib/task.h"
#include "policy/policy.h"

#define SCHED_MAX_TOTAL 10000
#define SCHED_MAX_OWNER 100
#define SCHED_KEEP_RUNS 100 /* fire records kept per schedule */
#define SCHED_LOAD_PAGE 50
#define SCHED_RETRY_MS 1000
#define SCHED_FRESH_TTL_S 3600
/* Missed occurrences are walked at most this far to find the last. */
#define SCHED_WALK_MAX 100000
/* A fire the vmm cannot take yet (it is restarting, or reading its
 * sandboxes back) is tried again this often, this many times. */
#define SCHED_RETRY_FIRE_MS 1000
#define SCHED_RETRIES 60

enum { SCHEDS_UNLOADED, SCHEDS_LOADING, SCHEDS_READY };

struct fb_sched {
	struct fb_sched *next;
	char id[API_ID_MAX + 1];
	char owner[GRANT_PRINCIPAL_MAX];
	uint64_t caps; /* of the token that last wrote it */
	/* Its jti and its ancestors' (space-separated): a fire is refused
	 * once any of them is revoked. */
	char tokens[STORE_TOKENS_MAX + 1];
	struct sched_spec spec;
	int64_t created_ms, updated_ms, last_fire_ms;
	uint64_t next_seq;
	int64_t next_s; /* the next occurrence to fire; 0: none */
	int busy; /* a fire is in flight */
	int gone; /* deleted while a fire was in flight */
	/* A fire to try again (SCHED_RETRIES): its occurrence and number. */
	int retry;
	uint64_t retry_at; /* monotonic ms */
	int64_t retry_occurrence;
	uint64_t retry_seq;
	int retry_catch_up, retry_attempt;
};

struct fb_scheds {
	struct fb_sched *list;
	size_t count;
	int state;
	uint64_t retry_at; /* monotonic ms, while UNLOADED */
};

/* One fire, from its decision to its record. */
struct fb_fire {
	struct front_backend *fb;
	struct fb_sched *s;
	json_t *doc; /* the definition it fires, held against a PATCH */
	struct api_principal who;
	char request_id[40];
	char sandbox[API_ID_MAX + 1];
	int fresh; /* the sandbox was made for this fire */
	int64_t occurrence; /* unix s */
	uint64_t seq;
	int catch_up;
	int attempt; /* 0, then each retry */
	int64_t started_ms;
	int rc;
	struct api_run_result res;
	struct api_error err;
};

/* Schedules' time in ms: the test clock when keepd runs with one. */
static int64_t
sched_now_ms(struct front_backend *fb)
{
	struct timespec ts;

	if (fb->test_clock_s > 0)
		return fb->test_clock_s * 1000;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct fb_scheds *
scheds(struct front_backend *fb)
{
	if (fb->scheds == NULL)
		fb->scheds = calloc(1, sizeof(*fb->scheds));
	return fb->scheds;
}

static void
sched_free(struct fb_sched *s)
{
	sched_spec_free(&s->spec);
	free(s);
}

void
fb_sched_free(struct front_backend *fb)
{
	struct fb_sched *s, *n;

	if (fb->scheds == NULL)
		return;
	for (s = fb->scheds->list; s != NULL; s = n) {
		n = s->next;
		sched_free(s);
	}
	free(fb->scheds);
	fb->scheds = NULL;
}

/* The writing token's jti, then its ancestors'. */
static void
tokens_of(const struct api_principal *who, char out[STORE_TOKENS_MAX + 1])
{
	out[0] = '\0';
	strlcpy(out, who->jti, STORE_TOKENS_MAX + 1);
	if (who->chain[0] != '\0') {
		if (out[0] != '\0')
			strlcat(out, " ", STORE_TOKENS_MAX + 1);
		strlcat(out, who->chain, STORE_TOKENS_MAX + 1);
	}
}

/* The first of the schedule's tokens that is revoked, or NULL. A
 * revocation the store cannot tell counts as revoked (fail closed). */
static const char *
tokens_revoked(
    struct front_backend *fb, const struct fb_sched *s, char jti[TOKEN_JTI_MAX])
{
	const char *p = s->tokens, *sp;
	size_t n;

	while (*p != '\0') {
		sp = strchr(p, ' ');
		n = sp != NULL ? (size_t)(sp - p) : strlen(p);
		if (n > 0 && n < TOKEN_JTI_MAX) {
			memcpy(jti, p, n);
			jti[n] = '\0';
			if (fb_revoked(fb, jti))
				return jti;
		}
		p += n;
		if (*p == ' ')
			p++;
	}
	return NULL;
}

static void
owner_of(const struct fb_sched *s, struct api_principal *who)
{
	memset(who, 0, sizeof(*who));
	strlcpy(who->sub, s->owner, sizeof(who->sub));
	who->caps = (cap_set_t)s->caps;
}

static void
audit(struct front_backend *fb, const struct api_principal *who,
    const char *request_id, const char *action, const char *target,
    const char *detail)
{
	struct api_call call;

	memset(&call, 0, sizeof(call));
	call.who = who;
	call.request_id = request_id;
	fb_audit_event(fb, &call, action, target, detail);
}

/* ---- the store -------------------------------------------------------- */

static int
sched_save(
    struct front_backend *fb, const struct fb_sched *s, struct api_error *err)
{
	struct store_schedule r;
	struct api_principal who;
	void *rec;
	size_t len;
	char *spec;
	int rc;

	if ((spec = sched_spec_text(&s->spec)) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	memset(&r, 0, sizeof(r));
	r.id = s->id;
	r.owner = s->owner;
	r.spec = spec;
	r.caps = s->caps;
	r.tokens = s->tokens;
	r.created_ms = s->created_ms;
	r.updated_ms = s->updated_ms;
	r.last_fire_ms = s->last_fire_ms;
	r.next_seq = s->next_seq;
	rc = store_schedule_encode(&r, &rec, &len);
	free(spec);
	if (rc != STORE_OK)
		return fb_fail(err, API_EBADREQ, "The schedule is too large");
	owner_of(s, &who);
	rc = fb_store_put(fb, &who, CAP_SCHEDULE_WRITE, s->id,
	    STORE_DB_SCHEDULES, rec, len, err);
	free(rec);
	return rc;
}

static void
seq_key(uint64_t seq, char out[21])
{
	snprintf(out, 21, "%020llu", (unsigned long long)seq);
}

/* A zone by name from the parent's table (host/parent_zones.c): the
 * rule is validated as any input by tz_parse_rule. */
static int
zone_lookup(void *arg, const char *name, struct tz *out)
{
	struct front_backend *fb = arg;
	const char *p = fb->zones, *end = fb->zones + fb->zones_len, *nl;
	size_t n = strlen(name);

	if (p == NULL || !tz_name_valid(name))
		return -1;
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			return -1;
		if ((size_t)(nl - p) > n && memcmp(p, name, n) == 0 &&
		    p[n] == '\t')
			return tz_parse_rule(
			    p + n + 1, (size_t)(nl - p) - n - 1, out);
	}
	return -1;
}

/* One record read back: validated as any input. */
static struct fb_sched *
sched_from_record(struct front_backend *fb, const void *rec, size_t len)
{
	struct store_schedule r;
	struct fb_sched *s;
	char err[API_MSG_MAX];

	if (store_schedule_decode(rec, len, &r) != STORE_OK ||
	    strlen(r.owner) >= GRANT_PRINCIPAL_MAX ||
	    strlen(r.id) > API_ID_MAX || (s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	if (sched_spec_parse_text(r.spec, strlen(r.spec), zone_lookup, fb,
	        &s->spec, err, sizeof(err)) != 0) {
		log_warnx("schedule %s: its record is refused: %s", r.id, err);
		free(s);
		return NULL;
	}
	strlcpy(s->id, r.id, sizeof(s->id));
	strlcpy(s->owner, r.owner, sizeof(s->owner));
	s->caps = r.caps & CAP_ALL;
	if (r.tokens != NULL)
		strlcpy(s->tokens, r.tokens, sizeof(s->tokens));
	s->created_ms = r.created_ms;
	s->updated_ms = r.updated_ms;
	s->last_fire_ms = r.last_fire_ms;
	s->next_seq = r.next_seq;
	return s;
}

static void fire_start(struct front_backend *, struct fb_sched *,
    int64_t occurrence, int catch_up, uint64_t seq, int attempt);

/*
 * A schedule just loaded: the occurrences that came and went while
 * keepd was down are missed. "skip" lets them go; "once" fires one
 * catch-up run for the last of them now.
 */
static void
sched_arm(struct front_backend *fb, struct fb_sched *s, int64_t now)
{
	int64_t base, t, n;
	int i;

	base = (s->last_fire_ms > s->updated_ms ? s->last_fire_ms
	                                        : s->updated_ms) /
	    1000;
	s->next_s = sched_spec_next(&s->spec, now, &n) == 0 ? n : 0;
	if (!s->spec.enabled || sched_spec_next(&s->spec, base, &t) != 0 ||
	    t > now)
		return;
	for (i = 0; i < SCHED_WALK_MAX &&
	     sched_spec_next(&s->spec, t, &n) == 0 && n <= now;
	     i++)
		t = n;
	if (s->spec.missed == SCHED_MISSED_ONCE) {
		log_info(
		    "schedule %s: missed fires up to %lld: one catch-up run",
		    s->id, (long long)t);
		fire_start(fb, s, t, 1, s->next_seq++, 0);
	} else
		log_info("schedule %s: missed fires up to %lld skipped", s->id,
		    (long long)t);
}

static void
load_main(void *arg)
{
	struct front_backend *fb = arg;
	struct fb_scheds *ss = fb->scheds;
	struct store_wire_reply hdr;
	char cursor[STORE_CURSOR_MAX] = "", next[STORE_CURSOR_MAX];
	struct fb_sched *loaded = NULL, *s;
	struct api_error err;
	int64_t now;

	for (;;) {
		void *q = NULL, *reply = NULL;
		size_t qlen, rlen;
		int rc;

		memset(&err, 0, sizeof(err));
		if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_SCHEDULES,
		        NULL, cursor[0] ? cursor : NULL, SCHED_LOAD_PAGE, NULL,
		        &q, &qlen) != STORE_OK)
			goto fail;
		rc = fb_store_call(fb, 0, MSG_STORE_LIST, q, qlen, &reply,
		    &rlen, &hdr, next, &err);
		free(q);
		if (rc != API_OK || hdr.status != STORE_OK) {
			free(reply);
			goto fail;
		}
		for (uint32_t i = 0; i < hdr.count; i++) {
			const void *rec;
			size_t reclen;

			if (store_wire_reply_record(
			        reply, rlen, i, &rec, &reclen) != STORE_OK ||
			    (s = sched_from_record(fb, rec, reclen)) == NULL)
				continue;
			s->next = loaded;
			loaded = s;
		}
		free(reply);
		if (next[0] == '\0' || hdr.count == 0)
			break;
		strlcpy(cursor, next, sizeof(cursor));
	}
	ss->list = loaded;
	ss->count = 0;
	ss->state = SCHEDS_READY;
	now = sched_now_ms(fb) / 1000;
	for (s = ss->list; s != NULL; s = s->next)
		ss->count++;
	log_info("schedules: %zu loaded", ss->count);
	for (s = ss->list; s != NULL; s = s->next)
		sched_arm(fb, s, now);
	return;
fail:
	while ((s = loaded) != NULL) {
		loaded = s->next;
		sched_free(s);
	}
	log_warnx("schedules: not loaded (%s); trying again",
	    err.message[0] ? err.message : "the store refused");
	ss->state = SCHEDS_UNLOADED;
	ss->retry_at = mono_ms() + SCHED_RETRY_MS;
}

/* ---- fires ------------------------------------------------------------ */

static void fire_finish_main(void *arg);

static void
fire_spawn(struct fb_fire *f, task_fn fn)
{
	struct task *t;

	if (task_self() != NULL || (t = task_new(fn, f)) == NULL) {
		fn(f);
		return;
	}
	if (task_run(t) == TASK_DONE)
		task_free(t);
}

/* The run ended (from the loop): record it in a task of its own. */
static void
fire_done(struct front_backend *fb, void *arg, int rc,
    struct api_run_result *res, const struct api_error *err)
{
	struct fb_fire *f = arg;

	(void)fb;
	f->rc = rc;
	f->res = *res;
	res->out = res->err = NULL;
	if (err != NULL)
		f->err = *err;
	fire_spawn(f, fire_finish_main);
}

/* A run's variables from its definition's env (checked when it was
 * stored): they point into the definition. */
static size_t
fire_env(const json_t *obj, struct api_kv *kv)
{
	const json_t *env = json_object_get(obj, "env"), *v;
	const char *k;
	size_t n = 0;

	if (env == NULL)
		return 0;
	json_object_foreach((json_t *)env, k, v)
	{
		if (n == SCHED_ENV_MAX || !json_is_string(v))
			break;
		kv[n].key = (char *)k;
		kv[n++].value = (char *)json_string_value(v);
	}
	return n;
}

static int
fire_run(struct fb_fire *f, struct api_call *call)
{
	struct front_backend *fb = f->fb;
	json_t *doc = f->doc, *ex, *c;
	struct api_kv env[SCHED_ENV_MAX];
	int rc;

	call->cap = CAP_EXEC;
	call->authz = NULL;
	if ((rc = fb->ops.authorize(fb, call, f->sandbox, &f->err)) != API_OK)
		return rc;
	if ((ex = json_object_get(doc, "execute")) != NULL) {
		struct api_exec e;
		json_t *code = json_object_get(ex, "code");

		memset(&e, 0, sizeof(e));
		e.code = json_string_value(code);
		e.code_len = json_string_length(code);
		e.language =
		    strcmp(json_string_value(json_object_get(ex, "language")),
		        "python") == 0
		    ? API_LANG_PYTHON
		    : API_LANG_JAVASCRIPT;
		e.timeout_ms = (uint64_t)json_integer_value(
		    json_object_get(ex, "timeout"));
		e.env = env;
		e.nenv = fire_env(ex, env);
		return fb_run_async(
		    fb, call, f->sandbox, &e, fire_done, f, &f->err);
	}
	c = json_object_get(doc, "command");
	{
		struct api_command cmd;
		const char *args[SCHED_ARGS_MAX];
		json_t *a = json_object_get(c, "args"), *v;
		size_t i;

		memset(&cmd, 0, sizeof(cmd));
		cmd.cmd = json_string_value(json_object_get(c, "cmd"));
		json_array_foreach(a, i, v)
		{
			if (i < SCHED_ARGS_MAX)
				args[i] = json_string_value(v);
		}
		cmd.args = args;
		cmd.nargs = a != NULL ? json_array_size(a) : 0;
		if (cmd.nargs > SCHED_ARGS_MAX)
			cmd.nargs = SCHED_ARGS_MAX;
		cmd.timeout_ms =
		    (uint64_t)json_integer_value(json_object_get(c, "timeout"));
		cmd.env = env;
		cmd.nenv = fire_env(c, env);
		return fb_run_command_async(
		    fb, call, f->sandbox, &cmd, fire_done, f, &f->err);
	}
}

static void
fire_main(void *arg)
{
	struct fb_fire *f = arg;
	struct front_backend *fb = f->fb;
	struct api_call call;
	const char *image;
	char detail[96], when[24], jti[TOKEN_JTI_MAX];
	int rc;

	memset(&call, 0, sizeof(call));
	call.who = &f->who;
	call.request_id = f->request_id;
	call.route = "schedule_fire";
	sched_time_format(f->occurrence, when);
	snprintf(detail, sizeof(detail), "fire %llu for %s%s",
	    (unsigned long long)f->seq, when, f->catch_up ? " (catch-up)" : "");
	audit(fb, &f->who, f->request_id, "schedule.fire", f->s->id, detail);
	/* The token that wrote the schedule, or one it was derived from,
	 * was revoked: the schedule no longer runs. */
	if (tokens_revoked(fb, f->s, jti) != NULL) {
		char why[160];

		rc = fb_fail(&f->err, API_EFORBIDDEN,
		    "The token that wrote the schedule was revoked (jti %s)",
		    jti);
		snprintf(
		    why, sizeof(why), "reason=revoked jti=%s status=403", jti);
		fb_audit_outcome(fb, &call, "schedule.fire", f->s->id, 0,
		    "token", why, NULL);
		goto done;
	}
	image = json_string_value(json_object_get(f->doc, "image"));
	if (image != NULL) {
		struct api_sandbox_spec spec;
		struct api_sandbox out;

		call.cap = CAP_SANDBOX_WRITE;
		if ((rc = fb->ops.authorize(fb, &call, "", &f->err)) != API_OK)
			goto done;
		memset(&spec, 0, sizeof(spec));
		memset(&out, 0, sizeof(out));
		spec.image = image;
		spec.ttl_s = SCHED_FRESH_TTL_S;
		rc = fb->ops.sandbox_create(
		    fb, &call, &spec, &out, NULL, &f->err);
		fb_kv_free(out.metadata, out.nmetadata);
		if (rc != API_OK)
			goto done;
		strlcpy(f->sandbox, out.id, sizeof(f->sandbox));
		f->fresh = 1;
	} else
		strlcpy(f->sandbox,
		    json_string_value(json_object_get(f->doc, "sandbox_id")),
		    sizeof(f->sandbox));
	rc = fire_run(f, &call);
	if (rc == API_PENDING)
		return; /* fire_done goes on */
	if (rc == API_OK)
		rc = fb_fail(&f->err, API_EINTERNAL, "The run did not start");
done:
	f->rc = rc;
	fire_finish_main(f);
}

/* Give back the fresh sandbox: a dry run, so a spent budget cannot keep
 * it alive. */
static void
fire_cleanup(struct fb_fire *f)
{
	struct front_backend *fb = f->fb;
	struct api_call call;
	struct fb_authz *a;
	struct api_error err;

	memset(&call, 0, sizeof(call));
	memset(&err, 0, sizeof(err));
	call.who = &f->who;
	call.request_id = f->request_id;
	call.route = "schedule_fire";
	call.cap = CAP_SANDBOX_WRITE;
	a = (struct fb_authz *)call.authz_room;
	a->reqid = ++fb->next_reqid;
	a->link = PROC_VMM;
	if (fb_decide(fb, &f->who, CAP_SANDBOX_WRITE, PROC_VMM, f->sandbox,
	        a->reqid, DECIDE_DRY_RUN, &a->d, &err) != API_OK ||
	    a->d.grant.decision != GRANT_ALLOW) {
		log_warnx("schedule %s: sandbox %s not deleted (it expires)",
		    f->s->id, f->sandbox);
		return;
	}
	call.authz = a;
	if (fb->ops.sandbox_delete(fb, &call, f->sandbox, &err) != API_OK)
		log_warnx("schedule %s: sandbox %s not deleted: %s", f->s->id,
		    f->sandbox, err.message);
}

static void
fire_record(struct fb_fire *f)
{
	struct front_backend *fb = f->fb;
	struct fb_sched *s = f->s;
	struct store_sched_run r;
	struct api_error err;
	char seq[21], old[21];
	void *rec;
	size_t len;

	seq_key(f->seq, seq);
	memset(&r, 0, sizeof(r));
	r.schedule = s->id;
	r.seq = seq;
	r.owner = s->owner;
	r.catch_up = (uint32_t)f->catch_up;
	r.fire_ms = f->occurrence * 1000;
	r.started_ms = f->started_ms;
	r.finished_ms = sched_now_ms(fb);
	r.sandbox = f->sandbox;
	r.run_id = f->rc == API_OK || f->rc == API_PENDING ? f->request_id : "";
	if (f->rc == API_OK) {
		r.status = STORE_SCHED_COMPLETED;
		r.exit_code = f->res.exit_code;
		r.detail = f->res.reason;
		r.out = f->res.out;
		r.out_len = (uint32_t)(f->res.out_len < STORE_SCHED_OUT_MAX
		        ? f->res.out_len
		        : STORE_SCHED_OUT_MAX);
		r.err = f->res.err;
		r.err_len = (uint32_t)(f->res.err_len < STORE_SCHED_OUT_MAX
		        ? f->res.err_len
		        : STORE_SCHED_OUT_MAX);
	} else {
		r.status = f->rc == API_EFORBIDDEN || f->rc == API_ERATE
		    ? STORE_SCHED_REFUSED
		    : STORE_SCHED_FAILED;
		r.exit_code = -1;
		r.detail = f->err.message;
	}
	memset(&err, 0, sizeof(err));
	if (store_sched_run_encode(&r, &rec, &len) != STORE_OK) {
		log_warnx("schedule %s: fire %s: record refused by its encoder",
		    s->id, seq);
		return;
	}
	if (fb_store_put(fb, &f->who, CAP_SCHEDULE_WRITE, s->id,
	        STORE_DB_SCHED_RUNS, rec, len, &err) != API_OK)
		log_warnx("schedule %s: fire %s not recorded: %s", s->id, seq,
		    err.message);
	free(rec);
	if (f->seq >= SCHED_KEEP_RUNS) {
		seq_key(f->seq - SCHED_KEEP_RUNS, old);
		(void)fb_store_del(fb, &f->who, CAP_SCHEDULE_WRITE, s->id,
		    STORE_DB_SCHED_RUNS, s->id, old, &err);
	}
}

static void
fire_finish_main(void *arg)
{
	struct fb_fire *f = arg;
	struct front_backend *fb = f->fb;
	struct fb_sched *s = f->s;
	struct api_error err;
	char detail[320];

	if (f->fresh)
		fire_cleanup(f);
	if (f->rc == API_EUNAVAIL && f->attempt < SCHED_RETRIES && !s->gone) {
		log_info("schedule %s: fire %llu: %s; trying again", s->id,
		    (unsigned long long)f->seq, f->err.message);
		s->retry = 1;
		s->retry_at = mono_ms() + SCHED_RETRY_FIRE_MS;
		s->retry_occurrence = f->occurrence;
		s->retry_seq = f->seq;
		s->retry_catch_up = f->catch_up;
		s->retry_attempt = f->attempt + 1;
		s->busy = 0;
		goto out;
	}
	if (f->rc == API_OK)
		snprintf(detail, sizeof(detail), "fire %llu: exit %d%s%s",
		    (unsigned long long)f->seq, f->res.exit_code,
		    f->res.reason[0] ? ", " : "", f->res.reason);
	else
		snprintf(detail, sizeof(detail), "fire %llu: not run: %s",
		    (unsigned long long)f->seq, f->err.message);
	audit(fb, &f->who, f->request_id, "schedule.fired", s->id, detail);
	if (!s->gone) {
		fire_record(f);
		memset(&err, 0, sizeof(err));
		if (!s->gone && sched_save(fb, s, &err) != API_OK)
			log_warnx("schedule %s: state not saved: %s", s->id,
			    err.message);
	}
	s->busy = 0;
	if (s->gone)
		sched_free(s);
out:
	json_decref(f->doc);
	free(f->res.out);
	free(f->res.err);
	free(f);
}

static void
fire_start(struct front_backend *fb, struct fb_sched *s, int64_t occurrence,
    int catch_up, uint64_t seq, int attempt)
{
	struct fb_fire *f;
	uint8_t rnd[10];

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		log_warnx("schedule %s: fire skipped: out of memory", s->id);
		return;
	}
	f->fb = fb;
	f->s = s;
	f->doc = json_incref(s->spec.doc);
	owner_of(s, &f->who);
	f->occurrence = occurrence;
	f->catch_up = catch_up;
	f->seq = seq;
	f->attempt = attempt;
	f->started_ms = sched_now_ms(fb);
	s->last_fire_ms = occurrence * 1000;
	s->busy = 1;
	randombytes_buf(rnd, sizeof(rnd));
	strlcpy(f->request_id, "fire-", sizeof(f->request_id));
	sodium_bin2hex(
	    f->request_id + 5, sizeof(f->request_id) - 5, rnd, sizeof(rnd));
	log_info("schedule %s: fire %llu (%s)", s->id,
	    (unsigned long long)f->seq, f->request_id);
	fire_spawn(f, fire_main);
}

void
fb_sched_tick(struct front_backend *fb)
{
	struct fb_scheds *ss = scheds(fb);
	struct fb_sched *s;
	int64_t now, n, occ;
	int i;

	if (ss == NULL)
		return;
	if (ss->state == SCHEDS_UNLOADED) {
		struct task *t;

		if (mono_ms() < ss->retry_at || fb->ctx->fd[PROC_STORE] < 0 ||
		    fb->ctx->fd[PROC_POLICY] < 0)
			return;
		ss->state = SCHEDS_LOADING;
		if ((t = task_new(load_main, fb)) == NULL) {
			ss->state = SCHEDS_UNLOADED;
			ss->retry_at = mono_ms() + SCHED_RETRY_MS;
			return;
		}
		if (task_run(t) == TASK_DONE)
			task_free(t);
		return;
	}
	if (ss->state != SCHEDS_READY)
		return;
	now = sched_now_ms(fb) / 1000;
	for (s = ss->list; s != NULL; s = s->next) {
		if (s->retry && !s->busy && mono_ms() >= s->retry_at) {
			s->retry = 0;
			fire_start(fb, s, s->retry_occurrence,
			    s->retry_catch_up, s->retry_seq, s->retry_attempt);
			continue;
		}
		if (!s->spec.enabled || s->busy || s->retry || s->next_s == 0 ||
		    now < s->next_s)
			continue;
		/* A fire late by more than one period (a busy loop, a jump
		 * of the clock) is one fire, for the last occurrence due,
		 * not a burst. */
		occ = s->next_s;
		for (i = 0; i < SCHED_WALK_MAX &&
		     sched_spec_next(&s->spec, occ, &n) == 0 && n <= now;
		     i++)
			occ = n;
		s->next_s = sched_spec_next(&s->spec, now, &n) == 0 ? n : 0;
		fire_start(fb, s, occ, 0, s->next_seq++, 0);
	}
}

/* ---- the API ---------------------------------------------------------- */

static int
ready(struct front_backend *fb, const struct api_call *call,
    struct api_error *err)
{
	struct fb_scheds *ss = scheds(fb);

	if (ss == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	if (ss->state != SCHEDS_READY) {
		err->retry_after = 1;
		return fb_fail(err, API_EUNAVAIL, "Schedules are being loaded");
	}
	/* A token scoped to one sandbox may not set up runs elsewhere. */
	if (call->who->sbx[0] != '\0')
		return fb_fail(err, API_EFORBIDDEN,
		    "A sandbox-scoped token cannot manage schedules");
	return API_OK;
}

/* The caller's own schedule, or any for a token with admin: an
 * operator can see and stop what every principal has set up. */
static int
visible(const struct api_call *call, const struct fb_sched *s)
{
	return !s->gone &&
	    ((call->who->caps & CAP_BIT(CAP_ADMIN)) != 0 ||
	        strcmp(s->owner, call->who->sub) == 0);
}

/* The caller's schedule id (visible), or NULL (another's is as absent). */
static struct fb_sched *
find(struct front_backend *fb, const struct api_call *call, const char *id)
{
	struct fb_sched *s;

	for (s = fb->scheds->list; s != NULL; s = s->next)
		if (strcmp(s->id, id) == 0 && visible(call, s))
			return s;
	return NULL;
}

static int
to_api(struct front_backend *fb, const struct fb_sched *s,
    struct api_schedule *out, struct api_error *err)
{
	int64_t t = sched_now_ms(fb) / 1000, n;

	memset(out, 0, sizeof(*out));
	if ((out->spec = sched_spec_text(&s->spec)) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	strlcpy(out->id, s->id, sizeof(out->id));
	strlcpy(out->owner, s->owner, sizeof(out->owner));
	out->created_at = s->created_ms / 1000;
	out->updated_at = s->updated_ms / 1000;
	out->last_fire_at = s->last_fire_ms / 1000;
	out->fires = s->next_seq;
	if (!s->spec.enabled)
		return API_OK;
	/* A due fire not yet started is the first of the next ones. */
	if (s->next_s != 0 && s->next_s <= t) {
		out->next[out->nnext++] = s->next_s;
		t = s->next_s;
	}
	while (out->nnext < API_SCHED_NEXT &&
	    sched_spec_next(&s->spec, t, &n) == 0) {
		out->next[out->nnext++] = n;
		t = n;
	}
	return API_OK;
}

static void
new_id(char out[API_ID_MAX + 1])
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz234567";
	uint8_t rnd[20];

	randombytes_buf(rnd, sizeof(rnd));
	memcpy(out, "sch-", 4);
	for (size_t i = 0; i < sizeof(rnd); i++)
		out[4 + i] = alpha[rnd[i] & 31];
	out[4 + sizeof(rnd)] = '\0';
}

static int
fb_schedule_create(void *arg, const struct api_call *call, const char *text,
    struct api_schedule *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_scheds *ss;
	struct fb_sched *s, *o;
	size_t mine = 0;
	int64_t now, n;
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	ss = fb->scheds;
	for (o = ss->list; o != NULL; o = o->next)
		if (!o->gone && strcmp(o->owner, call->who->sub) == 0)
			mine++;
	if (ss->count >= SCHED_MAX_TOTAL || mine >= SCHED_MAX_OWNER)
		return fb_fail(err, API_ECONFLICT,
		    "Too many schedules (at most %d a principal)",
		    SCHED_MAX_OWNER);
	if (strlen(call->who->sub) >= GRANT_PRINCIPAL_MAX)
		return fb_fail(err, API_EFORBIDDEN, "Principal name too long");
	if ((s = calloc(1, sizeof(*s))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	if (sched_spec_parse_text(text, strlen(text), zone_lookup, fb, &s->spec,
	        err->message, sizeof(err->message)) != 0) {
		free(s);
		return API_EBADREQ;
	}
	new_id(s->id);
	strlcpy(s->owner, call->who->sub, sizeof(s->owner));
	s->caps = call->who->caps;
	tokens_of(call->who, s->tokens);
	now = sched_now_ms(fb);
	s->created_ms = s->updated_ms = now;
	if ((rc = sched_save(fb, s, err)) != API_OK) {
		sched_free(s);
		return rc;
	}
	s->next_s = sched_spec_next(&s->spec, now / 1000, &n) == 0 ? n : 0;
	s->next = ss->list;
	ss->list = s;
	ss->count++;
	audit(fb, call->who, call->request_id, "schedule.create", s->id, "");
	return to_api(fb, s, out, err);
}

static int
fb_schedule_list(void *arg, const struct api_call *call,
    struct api_schedule **out, size_t *n, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_sched *s;
	size_t k = 0;
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	*n = 0;
	for (s = fb->scheds->list; s != NULL; s = s->next)
		if (visible(call, s))
			k++;
	if ((*out = calloc(k ? k : 1, sizeof(**out))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	for (s = fb->scheds->list; s != NULL && *n < k; s = s->next)
		if (visible(call, s)) {
			if ((rc = to_api(fb, s, &(*out)[*n], err)) != API_OK) {
				for (size_t i = 0; i < *n; i++)
					free((*out)[i].spec);
				free(*out);
				*out = NULL;
				*n = 0;
				return rc;
			}
			(*n)++;
		}
	return API_OK;
}

static int
fb_schedule_get(void *arg, const struct api_call *call, const char *id,
    struct api_schedule *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_sched *s;
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	if ((s = find(fb, call, id)) == NULL)
		return fb_fail(err, API_ENOTFOUND, "Schedule not found");
	return to_api(fb, s, out, err);
}

static int
fb_schedule_update(void *arg, const struct api_call *call, const char *id,
    const char *text, struct api_schedule *out, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct sched_spec old, fresh;
	struct fb_sched *s;
	json_error_t je;
	json_t *patch;
	int64_t old_updated, now, n;
	uint64_t old_caps;
	char old_tokens[STORE_TOKENS_MAX + 1];
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	if ((s = find(fb, call, id)) == NULL)
		return fb_fail(err, API_ENOTFOUND, "Schedule not found");
	if ((patch = json_loads(text, JSON_REJECT_DUPLICATES, &je)) == NULL)
		return fb_fail(err, API_EBADREQ, "Bad JSON");
	rc = sched_spec_patch(&s->spec, patch, zone_lookup, fb, &fresh,
	    err->message, sizeof(err->message));
	json_decref(patch);
	if (rc != 0)
		return API_EBADREQ;
	old = s->spec;
	old_updated = s->updated_ms;
	old_caps = s->caps;
	memcpy(old_tokens, s->tokens, sizeof(old_tokens));
	now = sched_now_ms(fb);
	s->spec = fresh;
	s->updated_ms = now;
	s->caps = call->who->caps;
	tokens_of(call->who, s->tokens);
	if ((rc = sched_save(fb, s, err)) != API_OK) {
		s->spec = old;
		s->updated_ms = old_updated;
		s->caps = old_caps;
		memcpy(s->tokens, old_tokens, sizeof(old_tokens));
		sched_spec_free(&fresh);
		return rc;
	}
	/* A fire in flight keeps the definition it started with: it holds
	 * a reference to the old document. */
	sched_spec_free(&old);
	s->next_s = sched_spec_next(&s->spec, now / 1000, &n) == 0 ? n : 0;
	audit(fb, call->who, call->request_id, "schedule.update", s->id,
	    s->spec.enabled ? "enabled" : "disabled");
	return to_api(fb, s, out, err);
}

static int
fb_schedule_delete(void *arg, const struct api_call *call, const char *id,
    struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_sched *s, **pp;
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	if ((s = find(fb, call, id)) == NULL)
		return fb_fail(err, API_ENOTFOUND, "Schedule not found");
	if ((rc = fb_store_del(fb, call->who, CAP_SCHEDULE_WRITE, s->id,
	         STORE_DB_SCHEDULES, s->id, NULL, err)) != API_OK)
		return rc;
	for (pp = &fb->scheds->list; *pp != NULL; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	fb->scheds->count--;
	audit(fb, call->who, call->request_id, "schedule.delete", id, "");
	/* A fire in flight still points at it: it frees it when done. */
	if (s->busy)
		s->gone = 1;
	else
		sched_free(s);
	return API_OK;
}

static const char *const run_status_name[] = {
	[STORE_SCHED_COMPLETED] = "completed",
	[STORE_SCHED_FAILED] = "failed",
	[STORE_SCHED_REFUSED] = "refused",
};

static int
run_to_api(const void *rec, size_t len, struct api_schedule_run *x)
{
	struct store_sched_run r;

	memset(x, 0, sizeof(*x));
	if (store_sched_run_decode(rec, len, &r) != STORE_OK)
		return -1;
	x->seq = strtoull(r.seq, NULL, 10);
	x->fire_at = r.fire_ms / 1000;
	x->started_at = r.started_ms / 1000;
	x->finished_at = r.finished_ms / 1000;
	strlcpy(x->status, run_status_name[r.status], sizeof(x->status));
	x->exit_code = r.exit_code;
	x->catch_up = (int)r.catch_up;
	strlcpy(x->sandbox, r.sandbox, sizeof(x->sandbox));
	strlcpy(x->run_id, r.run_id, sizeof(x->run_id));
	strlcpy(x->detail, r.detail, sizeof(x->detail));
	if ((x->out = malloc(r.out_len + 1)) == NULL ||
	    (x->err = malloc(r.err_len + 1)) == NULL) {
		free(x->out);
		x->out = NULL;
		return -1;
	}
	memcpy(x->out, r.out, r.out_len);
	memcpy(x->err, r.err, r.err_len);
	x->out_len = r.out_len;
	x->err_len = r.err_len;
	return 0;
}

static int
fb_schedule_runs(void *arg, const struct api_call *call, const char *id,
    struct api_schedule_run **out, size_t *n, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct store_wire_reply hdr;
	char cursor[STORE_CURSOR_MAX] = "", next[STORE_CURSOR_MAX];
	struct api_schedule_run *x;
	size_t k = 0;
	int rc;

	if ((rc = ready(fb, call, err)) != API_OK)
		return rc;
	if (find(fb, call, id) == NULL)
		return fb_fail(err, API_ENOTFOUND, "Schedule not found");
	/* The store keeps the last SCHED_KEEP_RUNS; a fire in flight may
	 * add one before the oldest goes. */
	if ((x = calloc(SCHED_KEEP_RUNS + 1, sizeof(*x))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	while (k <= SCHED_KEEP_RUNS) {
		void *q = NULL, *reply = NULL;
		size_t qlen, rlen;

		if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_SCHED_RUNS,
		        id, cursor[0] ? cursor : NULL, SCHED_LOAD_PAGE, NULL,
		        &q, &qlen) != STORE_OK) {
			rc = fb_fail(err, API_EINTERNAL, "Bad key");
			break;
		}
		rc = fb_store_call(fb, 0, MSG_STORE_LIST, q, qlen, &reply,
		    &rlen, &hdr, next, err);
		free(q);
		if (rc == API_OK && hdr.status != STORE_OK)
			rc = fb_fail(err, API_EINTERNAL, "%s",
			    store_strerror((int)hdr.status));
		if (rc != API_OK) {
			free(reply);
			break;
		}
		for (uint32_t i = 0; i < hdr.count && k <= SCHED_KEEP_RUNS;
		     i++) {
			const void *rec;
			size_t reclen;

			if (store_wire_reply_record(
			        reply, rlen, i, &rec, &reclen) == STORE_OK &&
			    run_to_api(rec, reclen, &x[k]) == 0)
				k++;
		}
		free(reply);
		if (next[0] == '\0' || hdr.count == 0)
			break;
		strlcpy(cursor, next, sizeof(cursor));
	}
	if (rc != API_OK) {
		for (size_t i = 0; i < k; i++) {
			free(x[i].out);
			free(x[i].err);
		}
		free(x);
		return rc;
	}
	/* Newest first. */
	for (size_t i = 0; i < k / 2; i++) {
		struct api_schedule_run t = x[i];

		x[i] = x[k - 1 - i];
		x[k - 1 - i] = t;
	}
	*out = x;
	*n = k;
	return API_OK;
}

void
fb_sched_ops(struct api_backend *ops)
{
	ops->schedule_create = fb_schedule_create;
	ops->schedule_list = fb_schedule_list;
	ops->schedule_get = fb_schedule_get;
	ops->schedule_update = fb_schedule_update;
	ops->schedule_delete = fb_schedule_delete;
	ops->schedule_runs = fb_schedule_runs;
}

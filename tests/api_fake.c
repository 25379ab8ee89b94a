/*
 * The in-memory fake backend (see api_fake.h). Fixed-size tables keep it
 * simple and bounded: a full table is a 507, like a full store.
 */
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/api_fake.h"
#include "lib/util.h"

#define FAKE_TOKENS 256
#define FAKE_SANDBOXES 64
#define FAKE_FILES 64
#define FAKE_ENV 32
#define FAKE_PROCS 16
#define FAKE_AUDIT 256
#define FAKE_PRINCIPALS 16
#define FAKE_CONTEXTS 16

struct fake_token {
	char token[API_TOKEN_MAX];
	struct api_principal p;
	int used;
	int revoked;
};

struct fake_file {
	char path[256];
	char *data;
	size_t len;
	int dir;
	int used;
};

struct fake_sandbox {
	struct api_sandbox sb;
	char owner[128]; /* the principal that made it */
	struct api_kv md[8];
	size_t nmd;
	char env_k[FAKE_ENV][64];
	char env_v[FAKE_ENV][256];
	int env_used[FAKE_ENV];
	struct fake_file files[FAKE_FILES];
	struct api_process procs[FAKE_PROCS];
	size_t nprocs;
	uint64_t runs;
	char lock[API_ID_MAX + 1]; /* "" unlocked */
	int64_t lock_expires;
	int used;
};

struct fake_principal {
	char sub[128];
	unsigned rate;
	unsigned retry_s;
	unsigned spent;
	cap_set_t denied;
};

/* A live context, as far as the fake goes: its cells are counted. */
struct fake_context {
	char sbx[API_ID_MAX + 1];
	char id[API_ID_MAX + 1];
	enum api_lang lang;
	uint64_t count;
	int used;
};

struct api_fake {
	int64_t (*now_s)(void *);
	void *now_arg;
	struct fake_token tokens[FAKE_TOKENS];
	struct fake_sandbox sbx[FAKE_SANDBOXES];
	struct fake_principal pr[FAKE_PRINCIPALS];
	struct api_audit_entry audit[FAKE_AUDIT];
	struct fake_context ctxs[FAKE_CONTEXTS];
	uint64_t audit_seq;
	uint64_t next_id;
	uint64_t next_pid;
	struct api_pending *waiting[16];
	char *waiting_out[16];
	/* A cell's (its driver's lines), and whether its client reads
	 * them as they come (api_call.ndjson). */
	int waiting_cell[16], waiting_lines[16];
	/* A command with a stdin stream: it ends with what it was given. */
	int waiting_stdin[16];
	size_t nwaiting;
	/* What terminal_input brought: stdin bytes, and whether it ended. */
	struct http_buf input;
	int input_eof;
};

static int64_t
fnow(struct api_fake *f)
{
	if (f->now_s != NULL)
		return f->now_s(f->now_arg);
	return (int64_t)time(NULL);
}

static int
fail(struct api_error *err, int code, const char *msg)
{
	strlcpy(err->message, msg, sizeof(err->message));
	return code;
}

struct api_fake *
api_fake_new(int64_t (*now_s)(void *), void *arg)
{
	struct api_fake *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return NULL;
	f->now_s = now_s;
	f->now_arg = arg;
	f->next_id = 1;
	f->next_pid = 100;
	return f;
}

static void
sandbox_clear(struct fake_sandbox *s)
{
	for (size_t i = 0; i < FAKE_FILES; i++)
		free(s->files[i].data);
	for (size_t i = 0; i < s->nmd; i++) {
		free(s->md[i].key);
		free(s->md[i].value);
	}
	memset(s, 0, sizeof(*s));
}

void
api_fake_free(struct api_fake *f)
{
	if (f == NULL)
		return;
	for (size_t i = 0; i < f->nwaiting; i++)
		free(f->waiting_out[i]);
	for (size_t i = 0; i < FAKE_SANDBOXES; i++)
		sandbox_clear(&f->sbx[i]);
	http_buf_free(&f->input);
	free(f);
}

int
api_fake_add_token(struct api_fake *f, const char *token, const char *sub,
    cap_set_t caps, const char *sbx, int64_t exp)
{
	for (size_t i = 0; i < FAKE_TOKENS; i++) {
		struct fake_token *t = &f->tokens[i];
		if (t->used)
			continue;
		memset(t, 0, sizeof(*t));
		strlcpy(t->token, token, sizeof(t->token));
		strlcpy(t->p.sub, sub, sizeof(t->p.sub));
		snprintf(t->p.jti, sizeof(t->p.jti), "jti-%zu", i);
		if (sbx != NULL)
			strlcpy(t->p.sbx, sbx, sizeof(t->p.sbx));
		t->p.caps = caps;
		t->p.exp = exp;
		t->used = 1;
		return 0;
	}
	return -1;
}

static struct fake_principal *
principal(struct api_fake *f, const char *sub, int create)
{
	struct fake_principal *free_p = NULL;

	for (size_t i = 0; i < FAKE_PRINCIPALS; i++) {
		if (f->pr[i].sub[0] == '\0') {
			if (free_p == NULL)
				free_p = &f->pr[i];
			continue;
		}
		if (strcmp(f->pr[i].sub, sub) == 0)
			return &f->pr[i];
	}
	if (create && free_p != NULL) {
		strlcpy(free_p->sub, sub, sizeof(free_p->sub));
		return free_p;
	}
	return NULL;
}

void
api_fake_set_rate(
    struct api_fake *f, const char *sub, unsigned n, unsigned retry_s)
{
	struct fake_principal *p = principal(f, sub, 1);

	if (p != NULL) {
		p->rate = n;
		p->retry_s = retry_s;
		p->spent = 0;
	}
}

void
api_fake_deny(struct api_fake *f, const char *sub, enum cap_id cap)
{
	struct fake_principal *p = principal(f, sub, 1);

	if (p != NULL)
		p->denied |= CAP_BIT(cap);
}

static void
audit(struct api_fake *f, const struct api_call *c, const char *target,
    const char *decision)
{
	struct api_audit_entry *e = &f->audit[f->audit_seq % FAKE_AUDIT];

	memset(e, 0, sizeof(*e));
	e->seq = ++f->audit_seq;
	e->time = fnow(f);
	strlcpy(e->request_id, c->request_id, sizeof(e->request_id));
	strlcpy(e->principal, c->who->sub, sizeof(e->principal));
	strlcpy(e->action, c->route, sizeof(e->action));
	strlcpy(e->target, target ? target : "", sizeof(e->target));
	strlcpy(e->decision, decision, sizeof(e->decision));
	strlcpy(e->rule, "fake", sizeof(e->rule));
}

static int
f_authenticate(void *ctx, const char *tok, size_t len,
    struct api_principal *out, struct api_error *err)
{
	struct api_fake *f = ctx;

	for (size_t i = 0; i < FAKE_TOKENS; i++) {
		struct fake_token *t = &f->tokens[i];
		if (!t->used || strlen(t->token) != len ||
		    memcmp(t->token, tok, len) != 0)
			continue;
		if (t->p.exp != 0 && t->p.exp <= fnow(f))
			return fail(err, API_EUNAUTH, "Token expired");
		if (t->revoked)
			return fail(err, API_EUNAUTH, "Token revoked");
		*out = t->p;
		return API_OK;
	}
	return fail(err, API_EUNAUTH, "Invalid token");
}

static int
f_authorize(
    void *ctx, struct api_call *c, const char *target, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_principal *p = principal(f, c->who->sub, 0);

	if (p != NULL && (p->denied & CAP_BIT(c->cap))) {
		audit(f, c, target, "deny");
		snprintf(err->message, sizeof(err->message),
		    "Missing required capability: %s", cap_name(c->cap));
		return API_EFORBIDDEN;
	}
	if (p != NULL && p->rate != 0 && p->spent >= p->rate) {
		audit(f, c, target, "deny");
		err->retry_after = p->retry_s;
		return fail(err, API_ERATE, "Rate limit exceeded");
	}
	if (p != NULL)
		p->spent++;
	audit(f, c, target, "allow");
	/* Stands for the grant the policy process would mint. */
	c->authz = f;
	return API_OK;
}

static struct fake_sandbox *
find_sbx(struct api_fake *f, const char *id)
{
	for (size_t i = 0; i < FAKE_SANDBOXES; i++)
		if (f->sbx[i].used && strcmp(f->sbx[i].sb.id, id) == 0)
			return &f->sbx[i];
	return NULL;
}

#define SBX_OR_404(f, id, s, err)                                              \
	do {                                                                   \
		if (((s) = find_sbx((f), (id))) == NULL)                       \
			return fail(                                           \
			    (err), API_ENOTFOUND, "Sandbox not found");        \
	} while (0)

static void
copy_sandbox(const struct fake_sandbox *s, struct api_sandbox *out)
{
	*out = s->sb;
	out->metadata = NULL;
	out->nmetadata = 0;
	if (s->nmd == 0 ||
	    (out->metadata = calloc(s->nmd, sizeof(*out->metadata))) == NULL)
		return;
	for (size_t i = 0; i < s->nmd; i++) {
		out->metadata[i].key = strdup(s->md[i].key);
		out->metadata[i].value = strdup(s->md[i].value);
		if (out->metadata[i].key == NULL ||
		    out->metadata[i].value == NULL) {
			free(out->metadata[i].key);
			free(out->metadata[i].value);
			break;
		}
		out->nmetadata++;
	}
}

static int
env_put(struct fake_sandbox *s, const char *k, const char *v)
{
	int free_i = -1;

	for (int i = 0; i < FAKE_ENV; i++) {
		if (!s->env_used[i]) {
			if (free_i < 0)
				free_i = i;
			continue;
		}
		if (strcmp(s->env_k[i], k) == 0) {
			strlcpy(s->env_v[i], v, sizeof(s->env_v[i]));
			return 0;
		}
	}
	if (free_i < 0 || strlen(k) >= sizeof(s->env_k[0]) ||
	    strlen(v) >= sizeof(s->env_v[0]))
		return -1;
	strlcpy(s->env_k[free_i], k, sizeof(s->env_k[0]));
	strlcpy(s->env_v[free_i], v, sizeof(s->env_v[0]));
	s->env_used[free_i] = 1;
	return 0;
}

static int put_file(struct fake_sandbox *, const char *, const void *, size_t,
    int, struct api_error *);

static int
f_sandbox_create(void *ctx, const struct api_call *c,
    const struct api_sandbox_spec *spec, struct api_sandbox *out,
    struct api_token *tok, struct api_error *err)
{
	static const char *const images[] = { "hello", "toolbox", "js",
		"python", "machine" };
	struct api_fake *f = ctx;
	struct fake_sandbox *s = NULL;
	size_t i;
	int64_t now = fnow(f);
	cap_set_t scoped = CAP_BIT(CAP_SANDBOX_READ) |
	    CAP_BIT(CAP_SANDBOX_WRITE) | CAP_BIT(CAP_EXEC) |
	    CAP_BIT(CAP_ARTIFACT_READ) | CAP_BIT(CAP_ARTIFACT_WRITE);

	for (i = 0; i < nitems(images); i++)
		if (strcmp(spec->image, images[i]) == 0)
			break;
	if (i == nitems(images))
		return fail(err, API_ENOTFOUND, "Image not found");
	for (i = 0; i < FAKE_SANDBOXES && s == NULL; i++)
		if (!f->sbx[i].used)
			s = &f->sbx[i];
	if (s == NULL || spec->nenv > FAKE_ENV || spec->nmetadata > 8)
		return fail(err, API_ESTORAGE, "Too many sandboxes");
	memset(s, 0, sizeof(*s));
	snprintf(s->sb.id, sizeof(s->sb.id), "sbx-%llu",
	    (unsigned long long)f->next_id++);
	strlcpy(s->sb.image, spec->image, sizeof(s->sb.image));
	s->sb.created_at = now;
	s->sb.expires_at = now + (int64_t)(spec->ttl_s ? spec->ttl_s : 3600);
	strlcpy(s->sb.status, "running", sizeof(s->sb.status));
	strlcpy(s->owner, c->who->sub, sizeof(s->owner));
	for (i = 0; i < spec->nenv; i++)
		if (env_put(s, spec->env[i].key, spec->env[i].value) != 0) {
			memset(s, 0, sizeof(*s));
			return fail(err, API_EBADREQ, "Environment too large");
		}
	for (i = 0; i < spec->nmetadata; i++) {
		s->md[i].key = strdup(spec->metadata[i].key);
		s->md[i].value = strdup(spec->metadata[i].value);
		s->nmd++;
	}
	/* E2B's layout, as the vmm makes it (SBX_NEW_HOME_USER). */
	if (spec->home_user &&
	    (put_file(s, "/home", "", 0, 1, err) != API_OK ||
	        put_file(s, "/home/user", "", 0, 1, err) != API_OK)) {
		sandbox_clear(s);
		return API_EINTERNAL;
	}
	s->used = 1;
	snprintf(tok->token, sizeof(tok->token), "tok-%s-%llu", s->sb.id,
	    (unsigned long long)randombytes_random());
	tok->expires_at = s->sb.expires_at;
	if (api_fake_add_token(f, tok->token, c->who->sub,
	        c->who->caps & scoped, s->sb.id, tok->expires_at) != 0) {
		sandbox_clear(s);
		return fail(err, API_ESTORAGE, "Token table full");
	}
	copy_sandbox(s, out);
	return API_OK;
}

static int
f_sandbox_list(void *ctx, const struct api_call *c, const struct api_page *pg,
    struct api_sandbox *out, size_t max, size_t *n, char next[API_ID_MAX + 1],
    struct api_error *err)
{
	struct api_fake *f = ctx;
	size_t start = 0;

	*n = 0;
	next[0] = '\0';
	if (pg->cursor != NULL) {
		char *end;
		start = strtoul(pg->cursor, &end, 10);
		if (*end != '\0' || start > FAKE_SANDBOXES)
			return fail(err, API_EBADREQ, "Invalid cursor");
	}
	for (size_t i = start; i < FAKE_SANDBOXES; i++) {
		if (!f->sbx[i].used)
			continue;
		if (*n == max) {
			snprintf(next, API_ID_MAX + 1, "%zu", i);
			break;
		}
		copy_sandbox(&f->sbx[i], &out[(*n)++]);
	}
	return API_OK;
}

static int
f_sandbox_get(void *ctx, const struct api_call *c, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	copy_sandbox(s, out);
	return API_OK;
}

/* As the vmm: the owner's sandbox ends ttl_s from now. */
static int
f_sandbox_timeout(void *ctx, const struct api_call *c, const char *id,
    uint64_t ttl_s, struct api_sandbox *out, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	if (strcmp(s->owner, c->who->sub) != 0)
		return fail(err, API_ENOTFOUND, "Sandbox not found");
	s->sb.expires_at = fnow(f) + (int64_t)ttl_s;
	copy_sandbox(s, out);
	return API_OK;
}

/* As the vmm: a paused sandbox says so until resumed. */
static int
f_sandbox_pause_resume(struct api_fake *f, const struct api_call *c,
    const char *id, int pause, struct api_sandbox *out, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	if (strcmp(s->owner, c->who->sub) != 0)
		return fail(err, API_ENOTFOUND, "Sandbox not found");
	if (pause && strcmp(s->sb.status, "paused") == 0)
		return fail(err, API_ECONFLICT, "The sandbox is paused");
	strlcpy(
	    s->sb.status, pause ? "paused" : "running", sizeof(s->sb.status));
	copy_sandbox(s, out);
	return API_OK;
}

static int
f_sandbox_pause(void *ctx, const struct api_call *c, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	return f_sandbox_pause_resume(ctx, c, id, 1, out, err);
}

static int
f_sandbox_resume(void *ctx, const struct api_call *c, const char *id,
    struct api_sandbox *out, struct api_error *err)
{
	return f_sandbox_pause_resume(ctx, c, id, 0, out, err);
}

static int
f_sandbox_delete(
    void *ctx, const struct api_call *c, const char *id, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	/* As keepd's vmm: another principal's sandbox is not found. */
	if (strcmp(s->owner, c->who->sub) != 0)
		return fail(err, API_ENOTFOUND, "Sandbox not found");
	sandbox_clear(s);
	return API_OK;
}

/* The lock of a sandbox: held while unexpired; Keep-Lock with its id
 * extends or releases it, as the front does (host/front/front_lock.c). */
static int
lock_held(struct api_fake *f, const struct fake_sandbox *s)
{
	return s->lock[0] != '\0' && s->lock_expires > fnow(f);
}

static int
lock_named(const struct fake_sandbox *s, const struct api_call *c)
{
	return c->lock != NULL && c->lock_len == strlen(s->lock) &&
	    memcmp(c->lock, s->lock, c->lock_len) == 0;
}

static int
f_sandbox_lock(void *ctx, const struct api_call *c, const char *id,
    uint64_t ttl_s, char lock_id[API_ID_MAX + 1], int64_t *expires_at,
    struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	if (lock_held(f, s) && !lock_named(s, c))
		return fail(err, API_ECONFLICT, "The sandbox is locked");
	if (!lock_held(f, s))
		snprintf(s->lock, sizeof(s->lock), "lock-%llu",
		    (unsigned long long)f->next_id++);
	s->lock_expires = fnow(f) + (int64_t)(ttl_s != 0 ? ttl_s : 60);
	strlcpy(lock_id, s->lock, API_ID_MAX + 1);
	*expires_at = s->lock_expires;
	return API_OK;
}

static int
f_sandbox_unlock(
    void *ctx, const struct api_call *c, const char *id, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	if (!lock_held(f, s))
		return fail(err, API_ENOTFOUND, "The sandbox is not locked");
	if (!lock_named(s, c))
		return fail(err, API_ECONFLICT,
		    "Keep-Lock does not name this sandbox's lock");
	s->lock[0] = '\0';
	return API_OK;
}

static int
f_sandbox_token(void *ctx, const struct api_call *c, const char *id,
    struct api_token *tok, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	snprintf(tok->token, sizeof(tok->token), "tok-%s-%llu", s->sb.id,
	    (unsigned long long)randombytes_random());
	tok->expires_at = fnow(f) + 3600;
	if (api_fake_add_token(f, tok->token, c->who->sub, c->who->caps,
	        s->sb.id, tok->expires_at) != 0)
		return fail(err, API_ESTORAGE, "Token table full");
	return API_OK;
}

static char *
dup_bytes(const void *p, size_t n)
{
	char *d = malloc(n + 1);

	if (d != NULL) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

static struct fake_context *
find_ctx(struct api_fake *f, const char *sbx, const char *cid)
{
	for (size_t i = 0; i < FAKE_CONTEXTS; i++)
		if (f->ctxs[i].used && strcmp(f->ctxs[i].sbx, sbx) == 0 &&
		    strcmp(f->ctxs[i].id, cid) == 0)
			return &f->ctxs[i];
	return NULL;
}

/*
 * A cell in a context: the driver's JSON lines (docs/contexts.md) for
 * stdout "<language>: <code>", or, for code "raise", an error; the last
 * line counts the context's cells.
 */
static int
fake_cell(struct api_fake *f, const struct api_call *c, const char *id,
    const struct api_exec *ex, struct api_run_result *out,
    struct api_error *err)
{
	struct fake_context *x = find_ctx(f, id, ex->context_id);
	json_t *line;
	char *a, *b, text[160];

	if (x == NULL)
		return fail(err, API_ENOTFOUND, "Context not found");
	x->count++;
	snprintf(text, sizeof(text), "%s: %.*s\n",
	    x->lang == API_LANG_PYTHON ? "python" : "js",
	    (int)(ex->code_len < 100 ? ex->code_len : 100), ex->code);
	if (ex->code_len == 5 && memcmp(ex->code, "raise", 5) == 0)
		line = json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name",
		    "ValueError", "value", "boom", "traceback",
		    "Traceback (most recent call last):\nValueError: boom");
	else
		line = json_pack("{s:s,s:s}", "type", "stdout", "text", text);
	a = json_dumps(line, JSON_COMPACT);
	json_decref(line);
	line = json_pack("{s:s,s:I}", "type", "number_of_executions",
	    "execution_count", (json_int_t)x->count);
	b = json_dumps(line, JSON_COMPACT);
	json_decref(line);
	if (a == NULL || b == NULL ||
	    (out->out = malloc(strlen(a) + strlen(b) + 3)) == NULL) {
		free(a);
		free(b);
		return fail(err, API_EINTERNAL, "Out of memory");
	}
	out->out_len = (size_t)sprintf(out->out, "%s\n%s\n", a, b);
	free(a);
	free(b);
	out->cell = 1;
	out->duration_ms = 1;
	if (ex->code_len >= 5 && memcmp(ex->code, "defer", 5) == 0) {
		struct api_pending *p;

		if (f->nwaiting < nitems(f->waiting) &&
		    (p = api_defer(c)) != NULL) {
			f->waiting_out[f->nwaiting] = out->out;
			f->waiting_cell[f->nwaiting] = 1;
			f->waiting_stdin[f->nwaiting] = 0;
			f->waiting_lines[f->nwaiting] = c->ndjson;
			f->waiting[f->nwaiting++] = p;
			out->out = NULL;
			return API_PENDING;
		}
	}
	return API_OK;
}

static int
f_execute(void *ctx, const struct api_call *c, const char *id,
    const struct api_exec *ex, struct api_run_result *out,
    struct api_error *err)
{
	struct fake_sandbox *s;
	const char *lang =
	    ex->language == API_LANG_PYTHON ? "python" : "javascript";
	size_t n;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if (c->authz != ctx)
		return fail(err, API_EINTERNAL, "Operation without a grant");
	s->runs++;
	if (ex->context_id != NULL)
		return fake_cell(ctx, c, id, ex, out, err);
	if (ex->code_len == 4 && memcmp(ex->code, "loop", 4) == 0) {
		out->exit_code = 124;
		out->duration_ms = ex->timeout_ms ? ex->timeout_ms : 30000;
		strlcpy(out->reason, "timeout", sizeof(out->reason));
		return API_OK;
	}
	if (ex->code_len >= 5 && memcmp(ex->code, "defer", 5) == 0) {
		struct api_fake *f = ctx;
		struct api_pending *p;

		if (f->nwaiting < nitems(f->waiting) &&
		    (p = api_defer(c)) != NULL) {
			/* Inputs are gone after we return: keep a copy. */
			f->waiting_out[f->nwaiting] =
			    dup_bytes(ex->code, ex->code_len);
			f->waiting_cell[f->nwaiting] = 0;
			f->waiting_stdin[f->nwaiting] = 0;
			f->waiting[f->nwaiting++] = p;
			return API_PENDING;
		}
	}
	if (ex->code_len >= 4 && memcmp(ex->code, "fail", 4) == 0) {
		out->exit_code = 1;
		out->err = dup_bytes(ex->code + 4, ex->code_len - 4);
		out->err_len = out->err ? ex->code_len - 4 : 0;
		out->duration_ms = 1;
		return API_OK;
	}
	n = strlen(lang) + 2 + ex->code_len + 1;
	if ((out->out = malloc(n + 1)) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	snprintf(out->out, n + 1, "%s: ", lang);
	memcpy(out->out + strlen(lang) + 2, ex->code, ex->code_len);
	out->out[n - 1] = '\n';
	out->out_len = n;
	out->duration_ms = 1;
	return API_OK;
}

/*
 * A deferred cell ends as the front ends one: its start, then, to a
 * client that reads lines as they come, its first line in two pieces
 * (a line longer than a message comes so), then the rest as the reply
 * with some raw output; to another, the whole reply.
 */
static void
fake_cell_end(struct api_pending *p, char *out, int lines)
{
	struct api_run_result res;
	struct api_error err;
	size_t len = strlen(out), first;
	const char *nl = strchr(out, '\n');

	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	first = nl != NULL ? (size_t)(nl - out) + 1 : 0;
	if (lines) {
		api_stream_cell(p, NULL, 0);
		api_stream_cell(p, out, first / 2);
		api_stream_cell(p, out + first / 2, first - first / 2);
	} else
		first = 0;
	res.out = dup_bytes(out + first, len - first);
	res.out_len = res.out != NULL ? len - first : 0;
	res.err = dup_bytes("raw", 3);
	res.err_len = res.err != NULL ? 3 : 0;
	res.cell = 1;
	res.duration_ms = 5;
	free(out);
	api_resume_run(p, API_OK, &res, &err);
}

unsigned
api_fake_flush(struct api_fake *f)
{
	unsigned n = 0;

	/* Resuming may start new deferred runs: take the list first. */
	while (f->nwaiting > 0) {
		struct api_pending *p = f->waiting[0];
		char *out = f->waiting_out[0];
		int cell = f->waiting_cell[0], lines = f->waiting_lines[0];
		int fed = f->waiting_stdin[0];
		struct api_run_result res;
		struct api_error err;

		memmove(f->waiting, f->waiting + 1,
		    (f->nwaiting - 1) * sizeof(f->waiting[0]));
		memmove(f->waiting_out, f->waiting_out + 1,
		    (f->nwaiting - 1) * sizeof(f->waiting_out[0]));
		memmove(f->waiting_cell, f->waiting_cell + 1,
		    (f->nwaiting - 1) * sizeof(f->waiting_cell[0]));
		memmove(f->waiting_lines, f->waiting_lines + 1,
		    (f->nwaiting - 1) * sizeof(f->waiting_lines[0]));
		memmove(f->waiting_stdin, f->waiting_stdin + 1,
		    (f->nwaiting - 1) * sizeof(f->waiting_stdin[0]));
		f->nwaiting--;
		memset(&res, 0, sizeof(res));
		memset(&err, 0, sizeof(err));
		if (cell) {
			fake_cell_end(p, out, lines);
			n++;
			continue;
		}
		/* cat: a command with a stdin stream writes what it got. */
		if (fed && (out = malloc(f->input.len + 1)) != NULL) {
			if (f->input.len > 0)
				memcpy(out, f->input.data, f->input.len);
			out[f->input.len] = '\0';
		}
		/* The output comes as it is produced, then the end. */
		if (out != NULL) {
			api_stream_run(p, "stdout", out, strlen(out));
			api_stream_run(p, "stderr", "done", 4);
		}
		free(out);
		res.duration_ms = 5;
		api_resume_run(p, out ? API_OK : API_EINTERNAL, &res, &err);
		n++;
	}
	return n;
}

unsigned
api_fake_pending(const struct api_fake *f)
{
	return (unsigned)f->nwaiting;
}

static int
add_proc(struct fake_sandbox *s, struct api_fake *f, const char *cmd,
    uint64_t *pid, struct api_error *err)
{
	struct api_process *p;

	if (s->nprocs == FAKE_PROCS)
		return fail(err, API_ERATE, "Too many background processes");
	p = &s->procs[s->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = f->next_pid++;
	strlcpy(p->cmd, cmd, sizeof(p->cmd));
	strlcpy(p->status, "running", sizeof(p->status));
	p->started_at = fnow(f);
	*pid = p->pid;
	return API_OK;
}

static int
f_execute_background(void *ctx, const struct api_call *c, const char *id,
    const struct api_exec *ex, uint64_t *pid, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	return add_proc(s, f,
	    ex->language == API_LANG_PYTHON ? "python" : "javascript", pid,
	    err);
}

static int
f_execute_async(void *ctx, const struct api_call *c, const char *id,
    const struct api_exec *ex, const char *hook, char run_id[API_ID_MAX + 1],
    struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	snprintf(run_id, API_ID_MAX + 1, "run-%llu",
	    (unsigned long long)f->next_id++);
	return API_OK;
}

static struct fake_file *
find_file(struct fake_sandbox *s, const char *path)
{
	while (*path == '/')
		path++;
	for (size_t i = 0; i < FAKE_FILES; i++)
		if (s->files[i].used && strcmp(s->files[i].path, path) == 0)
			return &s->files[i];
	return NULL;
}

/* A command's cwd, as the vmm checks it: a directory of the files. */
static int
cwd_ok(struct fake_sandbox *s, const char *cwd, struct api_error *err)
{
	struct fake_file *d;

	if (cwd == NULL || strcmp(cwd, "/") == 0)
		return API_OK;
	if ((d = find_file(s, cwd)) == NULL || !d->dir)
		return fail(err, API_ENOTFOUND,
		    "cwd: no such directory in the workspace");
	return API_OK;
}

static int
f_command_run(void *ctx, const struct api_call *c, const char *id,
    const struct api_command *cmd, struct api_run_result *out,
    struct api_error *err)
{
	struct fake_sandbox *s;
	struct http_buf o, e;
	int rc;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if (c->authz != ctx)
		return fail(err, API_EINTERNAL, "Operation without a grant");
	if ((rc = cwd_ok(s, cmd->cwd, err)) != API_OK)
		return rc;
	/* A stdin stream: the run waits (as the front's does) for its
	 * input, found by the pid its start tells. */
	if (cmd->stdin_stream) {
		struct api_fake *f = ctx;
		struct api_pending *p;

		if (f->nwaiting == nitems(f->waiting) ||
		    (p = api_defer(c)) == NULL)
			return fail(err, API_EBADREQ, "A stdin stream streams");
		s->runs++;
		f->waiting_out[f->nwaiting] = NULL;
		f->waiting_cell[f->nwaiting] = 0;
		f->waiting_stdin[f->nwaiting] = 1;
		f->waiting[f->nwaiting++] = p;
		api_stream_run_pid(p, f->next_pid++);
		return API_PENDING;
	}
	http_buf_init(&o);
	http_buf_init(&e);
	s->runs++;
	if (strcmp(cmd->cmd, "echo") == 0) {
		for (size_t i = 0; i < cmd->nargs; i++) {
			if (i)
				http_buf_add(&o, " ", 1);
			http_buf_puts(&o, cmd->args[i]);
		}
		http_buf_add(&o, "\n", 1);
	} else if (strcmp(cmd->cmd, "cat") == 0 ||
	    strcmp(cmd->cmd, "sha256sum") == 0) {
		if (cmd->nargs == 0 && cmd->cmd[0] == 'c')
			http_buf_add(&o, cmd->stdin_data, cmd->stdin_len);
		for (size_t i = 0; i < cmd->nargs; i++) {
			struct fake_file *ff = find_file(s, cmd->args[i]);
			unsigned char h[crypto_hash_sha256_BYTES];
			if (ff == NULL || ff->dir) {
				http_buf_printf(&e,
				    "%s: %s: No such file or directory\n",
				    cmd->cmd, cmd->args[i]);
				out->exit_code = 1;
				continue;
			}
			if (cmd->cmd[0] == 'c') {
				http_buf_add(&o, ff->data, ff->len);
				continue;
			}
			crypto_hash_sha256(
			    h, (unsigned char *)ff->data, ff->len);
			for (size_t k = 0; k < sizeof(h); k++)
				http_buf_printf(&o, "%02x", h[k]);
			http_buf_printf(&o, "  %s\n", cmd->args[i]);
		}
	} else if (strcmp(cmd->cmd, "bash") == 0 && cmd->nargs == 2 &&
	    strcmp(cmd->args[0], "-c") == 0) {
		/* No shell here: "bash -c CODE" says CODE, and "false"
		 * fails, enough for E2B's bash cells (api_e2b.c). */
		if (strcmp(cmd->args[1], "false") == 0)
			out->exit_code = 1;
		else
			http_buf_printf(&o, "%s in %s\n", cmd->args[1],
			    cmd->cwd != NULL ? cmd->cwd : "/");
	} else if (strcmp(cmd->cmd, "pwd") == 0) {
		http_buf_printf(&o, "%s\n", cmd->cwd != NULL ? cmd->cwd : "/");
	} else if (strcmp(cmd->cmd, "true") == 0) {
		out->exit_code = 0;
	} else if (strcmp(cmd->cmd, "false") == 0) {
		out->exit_code = 1;
	} else {
		snprintf(err->message, sizeof(err->message),
		    "Command not allowed: %s", cmd->cmd);
		return API_EFORBIDDEN;
	}
	if (o.oom || e.oom) {
		http_buf_free(&o);
		http_buf_free(&e);
		return fail(err, API_EINTERNAL, "Out of memory");
	}
	out->out = o.data;
	out->out_len = o.len;
	out->err = e.data;
	out->err_len = e.len;
	out->duration_ms = 1;
	return API_OK;
}

static int
f_command_background(void *ctx, const struct api_call *c, const char *id,
    const struct api_command *cmd, uint64_t *pid, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;
	int rc;

	SBX_OR_404(f, id, s, err);
	if ((rc = cwd_ok(s, cmd->cwd, err)) != API_OK)
		return rc;
	return add_proc(s, f, cmd->cmd, pid, err);
}

static int
f_processes(void *ctx, const struct api_call *c, const char *id,
    struct api_process **out, size_t *n, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	*n = 0;
	if (s->nprocs == 0)
		return API_OK;
	if ((*out = calloc(s->nprocs, sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	memcpy(*out, s->procs, s->nprocs * sizeof(**out));
	*n = s->nprocs;
	return API_OK;
}

static int
f_kill(void *ctx, const struct api_call *c, const char *id, uint64_t pid,
    int sig, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid) {
			strlcpy(s->procs[i].status, "exited",
			    sizeof(s->procs[i].status));
			s->procs[i].exit_code = 128 + sig;
			return API_OK;
		}
	return fail(err, API_ENOTFOUND, "No such process");
}

/* Workspace paths: no "..", no empty result, at most 255 bytes. */
static int
check_path(const char *path, struct api_error *err)
{
	const char *p = path;

	while (*p == '/')
		p++;
	if (*p == '\0' || strlen(p) > 255)
		return fail(err, API_EBADREQ, "Invalid path");
	for (const char *q = p; *q != '\0';) {
		size_t l = strcspn(q, "/");
		if (l == 2 && q[0] == '.' && q[1] == '.')
			return fail(
			    err, API_EBADREQ, "Path escapes the workspace");
		q += l;
		while (*q == '/')
			q++;
	}
	return API_OK;
}

static int
f_file_read(void *ctx, const struct api_call *c, const char *id,
    const char *path, char **data, size_t *len, struct api_error *err)
{
	struct fake_sandbox *s;
	struct fake_file *ff;
	int rc;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if ((rc = check_path(path, err)) != API_OK)
		return rc;
	if ((ff = find_file(s, path)) == NULL || ff->dir)
		return fail(err, API_ENOTFOUND, "File not found");
	if ((*data = dup_bytes(ff->data ? ff->data : "", ff->len)) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	*len = ff->len;
	return API_OK;
}

static int
put_file(struct fake_sandbox *s, const char *path, const void *data, size_t len,
    int dir, struct api_error *err)
{
	struct fake_file *ff = find_file(s, path);
	char *copy;

	while (*path == '/')
		path++;
	if (ff == NULL) {
		for (size_t i = 0; i < FAKE_FILES && ff == NULL; i++)
			if (!s->files[i].used)
				ff = &s->files[i];
		if (ff == NULL)
			return fail(err, API_ESTORAGE, "Workspace full");
		memset(ff, 0, sizeof(*ff));
		strlcpy(ff->path, path, sizeof(ff->path));
	} else if (ff->dir != dir)
		return fail(err, API_ECONFLICT,
		    dir ? "A file exists there" : "A directory exists there");
	if ((copy = dup_bytes(data, len)) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	free(ff->data);
	ff->data = copy;
	ff->len = len;
	ff->dir = dir;
	ff->used = 1;
	return API_OK;
}

static int
f_file_write(void *ctx, const struct api_call *c, const char *id,
    const char *path, const void *data, size_t len, struct api_error *err)
{
	struct fake_sandbox *s;
	int rc;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if (c->authz != ctx)
		return fail(err, API_EINTERNAL, "Operation without a grant");
	if ((rc = check_path(path, err)) != API_OK)
		return rc;
	return put_file(s, path, data, len, 0, err);
}

static int
f_file_mkdir(void *ctx, const struct api_call *c, const char *id,
    const char *path, struct api_error *err)
{
	struct fake_sandbox *s;
	int rc;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if ((rc = check_path(path, err)) != API_OK)
		return rc;
	/* mkdir(2)'s EEXIST, as the vmm answers it. */
	if (find_file(s, path) != NULL)
		return fail(err, API_ECONFLICT, "It exists already");
	return put_file(s, path, "", 0, 1, err);
}

static int
f_file_list(void *ctx, const struct api_call *c, const char *id,
    const char *path, struct api_dirent **out, size_t *n, struct api_error *err)
{
	struct fake_sandbox *s;
	size_t plen;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	while (*path == '/')
		path++;
	plen = strlen(path);
	*n = 0;
	if ((*out = calloc(FAKE_FILES, sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	for (size_t i = 0; i < FAKE_FILES; i++) {
		struct fake_file *ff = &s->files[i];
		const char *rest;
		if (!ff->used)
			continue;
		if (plen > 0 &&
		    (strncmp(ff->path, path, plen) != 0 ||
		        ff->path[plen] != '/'))
			continue;
		rest = ff->path + plen + (plen > 0);
		if (strchr(rest, '/') != NULL)
			continue;
		strlcpy((*out)[*n].name, rest, sizeof((*out)[*n].name));
		strlcpy((*out)[*n].type, ff->dir ? "dir" : "file",
		    sizeof((*out)[*n].type));
		(*out)[*n].size = ff->len;
		(*out)[*n].mtime = s->sb.created_at;
		(*n)++;
	}
	return API_OK;
}

static int
f_file_exists(void *ctx, const struct api_call *c, const char *id,
    const char *path, int *exists, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	*exists = find_file(s, path) != NULL;
	return API_OK;
}

static int
f_file_remove(void *ctx, const struct api_call *c, const char *id,
    const char *path, struct api_error *err)
{
	struct fake_sandbox *s;
	struct fake_file *ff;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if ((ff = find_file(s, path)) == NULL)
		return fail(err, API_ENOTFOUND, "File not found");
	free(ff->data);
	memset(ff, 0, sizeof(*ff));
	return API_OK;
}

static int
f_file_move(void *ctx, const struct api_call *c, const char *id,
    const char *from, const char *to, struct api_dirent *out,
    struct api_error *err)
{
	struct fake_sandbox *s;
	struct fake_file *ff, *old;
	const char *name;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if ((ff = find_file(s, from)) == NULL)
		return fail(err, API_ENOTFOUND, "File not found");
	while (*to == '/')
		to++;
	if (strlen(to) >= sizeof(ff->path))
		return fail(err, API_EBADREQ, "Path too long");
	if ((old = find_file(s, to)) != NULL && old != ff) {
		free(old->data);
		memset(old, 0, sizeof(*old));
	}
	strlcpy(ff->path, to, sizeof(ff->path));
	memset(out, 0, sizeof(*out));
	name = strrchr(to, '/') != NULL ? strrchr(to, '/') + 1 : to;
	strlcpy(out->name, name, sizeof(out->name));
	strlcpy(out->type, ff->dir ? "dir" : "file", sizeof(out->type));
	out->size = ff->len;
	out->mtime = s->sb.created_at;
	return API_OK;
}

static int
f_env_get(void *ctx, const struct api_call *c, const char *id,
    struct api_kv **out, size_t *n, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	*n = 0;
	if ((*out = calloc(FAKE_ENV, sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	for (int i = 0; i < FAKE_ENV; i++) {
		if (!s->env_used[i])
			continue;
		(*out)[*n].key = strdup(s->env_k[i]);
		(*out)[*n].value = strdup(s->env_v[i]);
		if ((*out)[*n].key == NULL || (*out)[*n].value == NULL) {
			free((*out)[*n].key);
			free((*out)[*n].value);
			return fail(err, API_EINTERNAL, "Out of memory");
		}
		(*n)++;
	}
	return API_OK;
}

static int
f_env_set(void *ctx, const struct api_call *c, const char *id,
    const struct api_kv *kv, size_t n, int replace, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	if (replace)
		memset(s->env_used, 0, sizeof(s->env_used));
	for (size_t i = 0; i < n; i++)
		if (env_put(s, kv[i].key, kv[i].value) != 0)
			return fail(err, API_EBADREQ, "Environment too large");
	return API_OK;
}

static int
f_env_delete(void *ctx, const struct api_call *c, const char *id,
    const char *const *keys, size_t n, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	for (int i = 0; i < FAKE_ENV; i++) {
		if (!s->env_used[i])
			continue;
		if (keys == NULL)
			s->env_used[i] = 0;
		for (size_t k = 0; keys != NULL && k < n; k++)
			if (strcmp(s->env_k[i], keys[k]) == 0)
				s->env_used[i] = 0;
	}
	return API_OK;
}

static int
f_system(void *ctx, const struct api_call *c, const char *id,
    struct api_usage *u, struct api_error *err)
{
	struct fake_sandbox *s;

	SBX_OR_404((struct api_fake *)ctx, id, s, err);
	u->runs = s->runs;
	u->cpu_ms = s->runs;
	u->memory_bytes = 64 << 20;
	for (size_t i = 0; i < FAKE_FILES; i++)
		u->workspace_bytes += s->files[i].len;
	u->budget_remaining = -1;
	u->read_tokens = -1;
	u->write_tokens = -1;
	return API_OK;
}

static int
f_token_attenuate(void *ctx, const struct api_call *c,
    const struct api_attenuate *at, struct api_token *tok,
    struct api_error *err)
{
	struct api_fake *f = ctx;

	snprintf(tok->token, sizeof(tok->token), "tok-att-%llu-%08x",
	    (unsigned long long)f->next_id++, randombytes_random());
	tok->expires_at = at->exp;
	if (api_fake_add_token(
	        f, tok->token, c->who->sub, at->caps, at->sbx, at->exp) != 0)
		return fail(err, API_ESTORAGE, "Token table full");
	return API_OK;
}

/* Every registered token with this jti is refused from now on (the
 * fake keeps no record of a jti it has not issued, nor the expiry). */
static int
f_token_revoke(void *ctx, const struct api_call *c, const char *jti,
    int64_t exp, struct api_error *err)
{
	struct api_fake *f = ctx;

	for (size_t i = 0; i < FAKE_TOKENS; i++)
		if (f->tokens[i].used && strcmp(f->tokens[i].p.jti, jti) == 0)
			f->tokens[i].revoked = 1;
	audit(f, c, jti, "allow");
	return API_OK;
}

static int
f_policy_version(void *ctx, const struct api_call *c,
    struct api_policy_version *v, struct api_error *err)
{
	strlcpy(v->version, "fake-1", sizeof(v->version));
	strlcpy(v->hash, "blake2b:00", sizeof(v->hash));
	v->loaded_at = 0;
	return API_OK;
}

static int
f_policy_check(void *ctx, const struct api_call *c, const struct api_check *ck,
    struct api_check_result *res, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_principal *p = principal(f, ck->principal, 0);

	res->allow = !(p != NULL && (p->denied & CAP_BIT(ck->cap)));
	strlcpy(res->rule, res->allow ? "fake-allow" : "fake-deny",
	    sizeof(res->rule));
	strlcpy(res->location, "fake.policy:1", sizeof(res->location));
	snprintf(res->explanation, sizeof(res->explanation), "%s %s %s",
	    ck->principal, res->allow ? "may" : "may not", cap_name(ck->cap));
	return API_OK;
}

static int
f_image_list(void *ctx, const struct api_call *c, struct api_image **out,
    size_t *n, struct api_error *err)
{
	static const char *const names[] = { "hello", "toolbox", "js",
		"python" };
	static const char *const langs[] = { "", "", "javascript", "python" };

	if ((*out = calloc(nitems(names), sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	for (size_t i = 0; i < nitems(names); i++) {
		strlcpy((*out)[i].name, names[i], sizeof((*out)[i].name));
		strlcpy((*out)[i].version, "1", sizeof((*out)[i].version));
		strlcpy(
		    (*out)[i].digest, "blake2b:00", sizeof((*out)[i].digest));
		strlcpy(
		    (*out)[i].languages, langs[i], sizeof((*out)[i].languages));
	}
	*n = nitems(names);
	return API_OK;
}

static int
f_image_upload(void *ctx, const struct api_call *c, const void *blob,
    size_t len, struct api_image *out, struct api_error *err)
{
	if (len < 8 || memcmp(blob, "KEEPIMG1", 8) != 0)
		return fail(
		    err, API_EBADREQ, "Image is not signed by a trusted key");
	strlcpy(out->name, "uploaded", sizeof(out->name));
	strlcpy(out->version, "1", sizeof(out->version));
	strlcpy(out->digest, "blake2b:00", sizeof(out->digest));
	out->size = len;
	return API_OK;
}

static int
f_image_delete(void *ctx, const struct api_call *c, const char *name,
    struct api_error *err)
{
	if (strcmp(name, "uploaded") != 0)
		return fail(err, API_ENOTFOUND, "Image not found");
	return API_OK;
}

static int
f_audit_list(void *ctx, const struct api_call *c, const struct api_page *pg,
    struct api_audit_entry **out, size_t *n, char next[API_ID_MAX + 1],
    struct api_error *err)
{
	struct api_fake *f = ctx;
	uint64_t from = 1, first;

	*n = 0;
	next[0] = '\0';
	first = f->audit_seq > FAKE_AUDIT ? f->audit_seq - FAKE_AUDIT + 1 : 1;
	if (pg->cursor != NULL) {
		char *end;
		from = strtoull(pg->cursor, &end, 10);
		if (*end != '\0' || from == 0)
			return fail(err, API_EBADREQ, "Invalid cursor");
	}
	if (from < first)
		from = first;
	if ((*out = calloc(pg->limit, sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	for (uint64_t s = from; s <= f->audit_seq; s++) {
		if (*n == pg->limit) {
			snprintf(next, API_ID_MAX + 1, "%llu",
			    (unsigned long long)s);
			break;
		}
		(*out)[(*n)++] = f->audit[(s - 1) % FAKE_AUDIT];
	}
	return API_OK;
}

static void
f_metrics(void *ctx, struct http_buf *b)
{
	struct api_fake *f = ctx;
	unsigned live = 0;

	for (size_t i = 0; i < FAKE_SANDBOXES; i++)
		live += f->sbx[i].used;
	http_buf_printf(b,
	    "# HELP keep_sandboxes Sandboxes alive.\n"
	    "# TYPE keep_sandboxes gauge\nkeep_sandboxes %u\n",
	    live);
}

/*
 * What the fake does not simulate (contexts' forks and snapshots,
 * schedules, watches, the terminal, secrets): it answers as a server without them would, so
 * that production routes never need a branch for a missing op.
 */
static int
unavailable(struct api_error *err)
{
	return fail(err, API_ENOTIMPL, "Not available in the fake backend");
}

static int
f_file_watch(void *ctx, const struct api_call *p1, const char *id,
    const char *path, struct api_error *err)
{
	return unavailable(err);
}

static int
f_sandbox_fork(void *ctx, const struct api_call *p1, const char *id,
    const struct api_sandbox_spec *spec, struct api_sandbox *out,
    struct api_token *tok, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_create(void *ctx, const struct api_call *p1, const char *spec,
    struct api_schedule *out, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_list(void *ctx, const struct api_call *p1, struct api_schedule **out,
    size_t *n, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_get(void *ctx, const struct api_call *p1, const char *id,
    struct api_schedule *out, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_update(void *ctx, const struct api_call *p1, const char *id,
    const char *patch, struct api_schedule *out, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_delete(
    void *ctx, const struct api_call *p1, const char *id, struct api_error *err)
{
	return unavailable(err);
}

static int
f_schedule_runs(void *ctx, const struct api_call *p1, const char *id,
    struct api_schedule_run **out, size_t *n, struct api_error *err)
{
	return unavailable(err);
}

static void
fake_context_info(const struct fake_context *x, struct api_context *out)
{
	memset(out, 0, sizeof(*out));
	strlcpy(out->id, x->id, sizeof(out->id));
	strlcpy(out->language, x->lang == API_LANG_PYTHON ? "python" : "js",
	    sizeof(out->language));
	strlcpy(out->cwd, "/", sizeof(out->cwd));
	strlcpy(out->state, "idle", sizeof(out->state));
	out->execution_count = x->count;
}

static int
f_context_create(void *ctx, const struct api_call *p1, const char *id,
    enum api_lang language, const char *cwd, const char *cid,
    struct api_context *out, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;
	struct fake_context *x = NULL;

	SBX_OR_404(f, id, s, err);
	if (cid != NULL && find_ctx(f, id, cid) != NULL)
		return fail(err, API_ECONFLICT, "A context has this id");
	for (size_t i = 0; i < FAKE_CONTEXTS && x == NULL; i++)
		if (!f->ctxs[i].used)
			x = &f->ctxs[i];
	if (x == NULL)
		return fail(err, API_EFORBIDDEN, "Context limit reached");
	memset(x, 0, sizeof(*x));
	strlcpy(x->sbx, id, sizeof(x->sbx));
	if (cid != NULL)
		strlcpy(x->id, cid, sizeof(x->id));
	else
		snprintf(x->id, sizeof(x->id), "ctx-fake-%llu",
		    (unsigned long long)f->next_id++);
	x->lang = language;
	x->used = 1;
	fake_context_info(x, out);
	return API_OK;
}

static int
f_context_list(void *ctx, const struct api_call *p1, const char *id,
    struct api_context **out, size_t *n, struct api_error *err)
{
	struct api_fake *f = ctx;
	struct fake_sandbox *s;

	SBX_OR_404(f, id, s, err);
	*n = 0;
	if ((*out = calloc(FAKE_CONTEXTS, sizeof(**out))) == NULL)
		return fail(err, API_EINTERNAL, "Out of memory");
	for (size_t i = 0; i < FAKE_CONTEXTS; i++)
		if (f->ctxs[i].used && strcmp(f->ctxs[i].sbx, id) == 0)
			fake_context_info(&f->ctxs[i], &(*out)[(*n)++]);
	return API_OK;
}

static int
f_context_delete(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, struct api_error *err)
{
	struct fake_context *x = find_ctx(ctx, id, cid);

	if (x == NULL)
		return fail(err, API_ENOTFOUND, "Context not found");
	memset(x, 0, sizeof(*x));
	return API_OK;
}

static int
f_context_restart(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, struct api_context *out, struct api_error *err)
{
	struct fake_context *x = find_ctx(ctx, id, cid);

	if (x == NULL)
		return fail(err, API_ENOTFOUND, "Context not found");
	x->count = 0;
	fake_context_info(x, out);
	return API_OK;
}

static int
f_context_fork(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, struct api_context *out, struct api_error *err)
{
	return unavailable(err);
}

static int
f_context_restore(void *ctx, const struct api_call *p1, const char *id,
    const char *name, struct api_context *out, struct api_error *err)
{
	return unavailable(err);
}

static int
f_context_snapshot(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, const char *name, struct api_snapshot *out,
    struct api_error *err)
{
	return unavailable(err);
}

static int
f_context_snapshots(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, struct api_snapshot **out, size_t *n,
    struct api_error *err)
{
	return unavailable(err);
}

static int
f_context_snapshot_delete(void *ctx, const struct api_call *p1, const char *id,
    const char *cid, const char *name, struct api_error *err)
{
	return unavailable(err);
}

static int
f_terminal_open(void *ctx, const struct api_call *p1, const char *id,
    const struct api_terminal *p3, struct api_error *err)
{
	return unavailable(err);
}

static void
f_terminal_input(void *ctx, struct api_pending *p1, int kind, const void *data,
    size_t len, unsigned cols, unsigned rows)
{
	struct api_fake *f = ctx;

	if (kind == API_TERM_DATA)
		http_buf_add(&f->input, data, len);
	else if (kind == API_TERM_EOF)
		f->input_eof = 1;
}

const void *
api_fake_input(const struct api_fake *f, size_t *len, int *eof)
{
	*len = f->input.len;
	*eof = f->input_eof;
	return f->input.data;
}

static int
f_secret_put(void *ctx, const struct api_call *p1, const char *name,
    const char *value, size_t len, struct api_secret *out, int *created,
    struct api_error *err)
{
	return unavailable(err);
}

static int
f_secret_delete(void *ctx, const struct api_call *p1, const char *name,
    struct api_error *err)
{
	return unavailable(err);
}

static int
f_secret_list(void *ctx, const struct api_call *p1, struct api_secret **out,
    size_t *n, struct api_error *err)
{
	return unavailable(err);
}

void
api_fake_backend(struct api_fake *f, struct api_backend *be)
{
	memset(be, 0, sizeof(*be));
	be->ctx = f;
	be->authenticate = f_authenticate;
	be->authorize = f_authorize;
	be->sandbox_create = f_sandbox_create;
	be->sandbox_fork = f_sandbox_fork;
	be->sandbox_list = f_sandbox_list;
	be->sandbox_get = f_sandbox_get;
	be->sandbox_delete = f_sandbox_delete;
	be->sandbox_timeout = f_sandbox_timeout;
	be->sandbox_pause = f_sandbox_pause;
	be->sandbox_resume = f_sandbox_resume;
	be->sandbox_token = f_sandbox_token;
	be->execute = f_execute;
	be->execute_background = f_execute_background;
	be->execute_async = f_execute_async;
	be->command_run = f_command_run;
	be->command_background = f_command_background;
	be->processes = f_processes;
	be->kill = f_kill;
	be->file_read = f_file_read;
	be->file_write = f_file_write;
	be->file_list = f_file_list;
	be->file_exists = f_file_exists;
	be->file_remove = f_file_remove;
	be->file_mkdir = f_file_mkdir;
	be->file_move = f_file_move;
	be->env_get = f_env_get;
	be->env_set = f_env_set;
	be->env_delete = f_env_delete;
	be->system = f_system;
	be->token_attenuate = f_token_attenuate;
	be->sandbox_lock = f_sandbox_lock;
	be->sandbox_unlock = f_sandbox_unlock;
	be->token_revoke = f_token_revoke;
	be->policy_version = f_policy_version;
	be->policy_check = f_policy_check;
	be->image_list = f_image_list;
	be->image_upload = f_image_upload;
	be->image_delete = f_image_delete;
	be->audit_list = f_audit_list;
	be->metrics = f_metrics;
	be->file_watch = f_file_watch;
	be->schedule_create = f_schedule_create;
	be->schedule_list = f_schedule_list;
	be->schedule_get = f_schedule_get;
	be->schedule_update = f_schedule_update;
	be->schedule_delete = f_schedule_delete;
	be->schedule_runs = f_schedule_runs;
	be->context_create = f_context_create;
	be->context_list = f_context_list;
	be->context_delete = f_context_delete;
	be->context_restart = f_context_restart;
	be->context_fork = f_context_fork;
	be->context_restore = f_context_restore;
	be->context_snapshot = f_context_snapshot;
	be->context_snapshots = f_context_snapshots;
	be->context_snapshot_delete = f_context_snapshot_delete;
	be->terminal_open = f_terminal_open;
	be->terminal_input = f_terminal_input;
	be->secret_put = f_secret_put;
	be->secret_delete = f_secret_delete;
	be->secret_list = f_secret_list;
}

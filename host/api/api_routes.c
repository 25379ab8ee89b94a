/*
 * The route table and one handler per endpoint. A handler validates its
 * inputs completely (unknown fields are errors), calls one backend op, and
 * shapes the reply. The capability each route needs is in the table, next
 * to the route, and documented per operation in docs/api.yaml.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/api/api_int.h"

#define BE(r) ((r)->api->be)
#define MAX_TIMEOUT_MS (24ULL * 3600 * 1000)
#define MAX_TTL_S (30ULL * 24 * 3600)

json_t *
iso_time(int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;
	char buf[32];

	if (gmtime_r(&tt, &tm) == NULL)
		return json_null();
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_string(buf);
}

/* A JSON string from bytes that may not be UTF-8: invalid bytes -> U+FFFD. */
json_t *
bytes_string(const char *p, size_t n)
{
	json_t *s;
	char *fixed;
	size_t o = 0;

	if (p == NULL || n == 0)
		return json_string("");
	if ((s = json_stringn(p, n)) != NULL)
		return s;
	if ((fixed = malloc(n * 3 + 1)) == NULL)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		if (c < 0x80 && c != 0)
			fixed[o++] = (char)c;
		else {
			memcpy(fixed + o, "\xef\xbf\xbd", 3);
			o += 3;
		}
	}
	s = json_stringn(fixed, o);
	free(fixed);
	return s;
}

json_t *
api_kv_json(const struct api_kv *kv, size_t n)
{
	json_t *o = json_object();

	for (size_t i = 0; o != NULL && i < n; i++)
		json_object_set_new(o, kv[i].key, json_string(kv[i].value));
	return o;
}

void
api_kv_free(struct api_kv *kv, size_t n)
{
	for (size_t i = 0; kv != NULL && i < n; i++) {
		free(kv[i].key);
		free(kv[i].value);
	}
	free(kv);
}

static json_t *
sandbox_json(const struct api_sandbox *s)
{
	json_t *o = json_pack("{s:s,s:s,s:o,s:o,s:s,s:o}", "id", s->id, "image",
	    s->image, "created_at", iso_time(s->created_at), "expires_at",
	    iso_time(s->expires_at), "status",
	    s->status[0] ? s->status : "running", "metadata",
	    api_kv_json(s->metadata, s->nmetadata));
	return o;
}

void
sandbox_release(struct api_sandbox *s)
{
	api_kv_free(s->metadata, s->nmetadata);
	s->metadata = NULL;
	s->nmetadata = 0;
}

/*
 * A ".." component is refused (400) wherever it is, as docs/api.yaml
 * says: a client never needs one, and one that resolves inside the
 * workspace today is one symlink away from meaning something else.
 */
int
rq_path_check(struct rq *r, const char *path)
{
	const char *c;
	size_t n;

	if (strlen(path) >= PATH_MAX_API) {
		rq_error(r, API_EBADREQ, "path is too long");
		return -1;
	}
	for (c = path; *c != '\0'; c += n + (c[n] == '/')) {
		n = strcspn(c, "/");
		if (n == 2 && c[0] == '.' && c[1] == '.') {
			rq_error(r, API_EBADREQ,
			    "path must not contain a \"..\" component");
			return -1;
		}
	}
	return 0;
}

int
rq_e2b_path(struct rq *r, const char *in, char *out, size_t outlen)
{
	int n;

	if (in[0] == '/')
		n = snprintf(out, outlen, "%s", in);
	else if (in[0] == '\0' || strcmp(in, ".") == 0)
		n = snprintf(out, outlen, "%s", E2B_HOME);
	else
		n = snprintf(out, outlen, "%s/%s", E2B_HOME, in);
	if (n < 0 || (size_t)n >= outlen || (size_t)n >= PATH_MAX_API) {
		rq_error(r, API_EBADREQ, "path is too long");
		return -1;
	}
	return rq_path_check(r, out);
}

/*
 * A command's cwd (len: its JSON string's length): an absolute guest
 * path without NUL or ".." component, within a workspace path's bound.
 * Whether it is a directory of the workspace is the vmm's to say.
 */
int
rq_cwd_check(struct rq *r, const char *cwd, size_t len)
{
	if (strlen(cwd) != len || cwd[0] != '/') {
		rq_error(r, API_EBADREQ,
		    "cwd must be an absolute path in the workspace, without "
		    "NUL");
		return -1;
	}
	return rq_path_check(r, cwd);
}

/* ?path= inside the workspace (E2B's routes: relative to E2B_HOME).
 * Returns 0 with path filled, -1 replied. */
static int
rq_path(struct rq *r, char *path, size_t len)
{
	char asked[PATH_MAX_API];

	if (r->e2b == E2B_NO) {
		if (rq_query(r, "path", path, len, 1) != 1)
			return -1;
		return rq_path_check(r, path);
	}
	if (rq_query(r, "path", asked, sizeof(asked), 1) != 1)
		return -1;
	return rq_e2b_path(r, asked, path, len);
}

static int
rq_page(struct rq *r, char *cursor, size_t clen, struct api_page *pg)
{
	char lim[16];
	int rc;

	pg->limit = 50;
	pg->cursor = NULL;
	if ((rc = rq_query(r, "cursor", cursor, clen, 0)) < 0)
		return -1;
	if (rc == 1)
		pg->cursor = cursor;
	if ((rc = rq_query(r, "limit", lim, sizeof(lim), 0)) < 0)
		return -1;
	if (rc == 1) {
		char *end;
		unsigned long v = strtoul(lim, &end, 10);
		if (*end != '\0' || lim[0] < '0' || lim[0] > '9' || v < 1 ||
		    v > 100) {
			rq_error(r, API_EBADREQ, "limit must be 1 to 100");
			return -1;
		}
		pg->limit = (unsigned)v;
	}
	return 0;
}

void
api_set_platform(struct api *a, const char *platform, const char *problem)
{
	strlcpy(
	    a->platform, platform != NULL ? platform : "", sizeof(a->platform));
	strlcpy(a->platform_problem, problem != NULL ? problem : "",
	    sizeof(a->platform_problem));
}

/* --- public ---------------------------------------------------------- */

static void
h_healthz(struct rq *r)
{
	const struct api *a = r->api;

	if (a->platform_problem[0] != '\0')
		rq_json(r, 503,
		    json_pack("{s:s, s:s, s:s}", "status", "degraded",
		        "platform", a->platform, "reason",
		        a->platform_problem));
	else if (a->platform[0] != '\0')
		rq_json(r, 200,
		    json_pack(
		        "{s:s, s:s}", "status", "ok", "platform", a->platform));
	else
		rq_json(r, 200, json_pack("{s:s}", "status", "ok"));
}

static void
h_openapi(struct rq *r)
{
	rq_raw(
	    r, 200, "application/json", api_openapi_json, api_openapi_json_len);
}

static void
h_metrics(struct rq *r)
{
	api_metrics(r);
}

/* --- sandboxes ------------------------------------------------------- */

/* 201 with the new sandbox and a token scoped to it. */
static void
sandbox_created(struct rq *r, struct api_sandbox *sb, struct api_token *tok)
{
	json_t *o;

	sb->id[sizeof(sb->id) - 1] = '\0';
	tok->token[sizeof(tok->token) - 1] = '\0';
	o = sandbox_json(sb);
	if (o != NULL) {
		json_object_set_new(o, "auth_token", json_string(tok->token));
		json_object_set_new(
		    o, "token_expires_at", iso_time(tok->expires_at));
		sb->webhook_secret[sizeof(sb->webhook_secret) - 1] = '\0';
		if (sb->webhook_secret[0] != '\0')
			json_object_set_new(o, "webhook_secret",
			    json_string(sb->webhook_secret));
	}
	sandbox_release(sb);
	r->api->sandboxes_created++;
	rq_json(r, 201, o);
}

static void
h_sandbox_create(struct rq *r)
{
	static const char *const fields[] = { "image", "env", "ttl", "metadata",
		NULL };
	struct api_sandbox_spec spec;
	struct api_sandbox sb;
	struct api_token tok;
	struct api_error err;
	struct api_kv *env = NULL, *md = NULL;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "image", 1, &spec.image))
		return;
	if (rq_uint(r, r->body, "ttl", MAX_TTL_S, &spec.ttl_s) ||
	    rq_kv(r, r->body, "env", &env, &spec.nenv))
		return;
	if (rq_kv(r, r->body, "metadata", &md, &spec.nmetadata)) {
		free(env);
		return;
	}
	spec.env = env;
	spec.metadata = md;
	if (rq_env_refs_ok(r, env, spec.nenv)) {
		free(env);
		free(md);
		return;
	}
	memset(&sb, 0, sizeof(sb));
	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->sandbox_create(BE(r)->ctx, &r->call, &spec, &sb, &tok, &err);
	free(env);
	free(md);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	sandbox_created(r, &sb, &tok);
}

/* A fork: its source's image, environment and a copy of its workspace;
 * the body (optional) sets only ttl and metadata. */
static void
h_sandbox_fork(struct rq *r)
{
	static const char *const fields[] = { "ttl", "metadata", NULL };
	struct api_sandbox_spec spec;
	struct api_sandbox sb;
	struct api_token tok;
	struct api_error err;
	struct api_kv *md = NULL;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if (r->body != NULL &&
	    (rq_fields(r, r->body, fields) ||
	        rq_uint(r, r->body, "ttl", MAX_TTL_S, &spec.ttl_s) ||
	        rq_kv(r, r->body, "metadata", &md, &spec.nmetadata)))
		return;
	spec.metadata = md;
	memset(&sb, 0, sizeof(sb));
	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_fork(
	    BE(r)->ctx, &r->call, r->id, &spec, &sb, &tok, &err);
	free(md);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	sandbox_created(r, &sb, &tok);
}

static void
h_sandbox_list(struct rq *r)
{
	struct api_sandbox sbs[100];
	struct api_page pg;
	struct api_error err;
	char cursor[API_ID_MAX + 1], next[API_ID_MAX + 1] = "";
	size_t n = 0;
	json_t *arr, *o;
	int rc;

	if (rq_page(r, cursor, sizeof(cursor), &pg))
		return;
	memset(sbs, 0, sizeof(sbs));
	memset(&err, 0, sizeof(err));
	if (r->who.sbx[0] != '\0') {
		/* A scoped token sees its own sandbox and nothing else. */
		rc = BE(r)->sandbox_get(
		    BE(r)->ctx, &r->call, r->who.sbx, &sbs[0], &err);
		n = rc == API_OK;
		if (rc == API_ENOTFOUND)
			rc = API_OK;
	} else {
		rc = BE(r)->sandbox_list(
		    BE(r)->ctx, &r->call, &pg, sbs, pg.limit, &n, next, &err);
	}
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	if (n > pg.limit)
		n = pg.limit;
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		sbs[i].id[sizeof(sbs[i].id) - 1] = '\0';
		json_array_append_new(arr, sandbox_json(&sbs[i]));
		sandbox_release(&sbs[i]);
	}
	next[sizeof(next) - 1] = '\0';
	o = json_pack("{s:o,s:o}", "sandboxes", arr, "next_cursor",
	    next[0] ? json_string(next) : json_null());
	rq_json(r, 200, o);
}

static void
h_sandbox_get(struct rq *r)
{
	struct api_sandbox sb;
	struct api_error err;
	int rc;

	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_get(BE(r)->ctx, &r->call, r->id, &sb, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	sb.id[sizeof(sb.id) - 1] = '\0';
	rq_json(r, 200, sandbox_json(&sb));
	sandbox_release(&sb);
}

static void
h_sandbox_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_delete(BE(r)->ctx, &r->call, r->id, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	r->api->sandboxes_deleted++;
	rq_no_content(r);
}

int
rq_sandbox_end(struct rq *r, const char *key, struct api_sandbox *sb)
{
	struct api_error err;
	uint64_t ttl = 0;
	json_t *v = json_object_get(r->body, key);
	int rc;

	memset(sb, 0, sizeof(*sb));
	if (rq_uint(r, r->body, key, MAX_TTL_S, &ttl))
		return -1;
	if (v == NULL || json_is_null(v))
		return 1;
	if (ttl == 0) {
		rq_error(r, API_EBADREQ, "%s must be 1 to %llu seconds", key,
		    (unsigned long long)MAX_TTL_S);
		return -1;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_timeout(BE(r)->ctx, &r->call, r->id, ttl, sb, &err);
	if (rc != API_OK) {
		sandbox_release(sb);
		rq_backend_error(r, rc, &err);
		return -1;
	}
	sb->id[sizeof(sb->id) - 1] = '\0';
	return 0;
}

/* POST /v1/sandboxes/{id}/timeout {"ttl_s"}: the sandbox ends ttl_s
 * from now; the answer is the sandbox, its new expires_at in it. */
static void
h_sandbox_timeout(struct rq *r)
{
	static const char *const fields[] = { "ttl_s", NULL };
	struct api_sandbox sb;

	if (rq_fields(r, r->body, fields))
		return;
	switch (rq_sandbox_end(r, "ttl_s", &sb)) {
	case 1:
		rq_error(r, API_EBADREQ, "Missing field: ttl_s");
		return;
	case 0:
		rq_json(r, 200, sandbox_json(&sb));
		sandbox_release(&sb);
		return;
	}
}

/* POST .../pause and .../resume (E2B's pause, keep's too): the sandbox's
 * commands end and its idle contexts save their memory images; a run or a
 * cell, or a resume, brings it back (docs/e2b.md). */
static void
sandbox_pause_resume(struct rq *r, int pause)
{
	struct api_sandbox sb;
	struct api_error err;
	int rc;

	if (r->body != NULL && rq_fields(r, r->body, (const char *[]){ NULL }))
		return;
	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = pause
	    ? BE(r)->sandbox_pause(BE(r)->ctx, &r->call, r->id, &sb, &err)
	    : BE(r)->sandbox_resume(BE(r)->ctx, &r->call, r->id, &sb, &err);
	if (rc != API_OK) {
		sandbox_release(&sb);
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, sandbox_json(&sb));
	sandbox_release(&sb);
}

static void
h_sandbox_pause(struct rq *r)
{
	sandbox_pause_resume(r, 1);
}

static void
h_sandbox_resume(struct rq *r)
{
	sandbox_pause_resume(r, 0);
}

/* A sandbox's write lock, for agents whose policy says `lock writes`. */
static void
h_sandbox_lock(struct rq *r)
{
	static const char *const fields[] = { "ttl", NULL };
	char lock_id[API_ID_MAX + 1];
	struct api_error err;
	int64_t expires_at = 0;
	uint64_t ttl = 0;
	int rc;

	if (rq_fields(r, r->body, fields) ||
	    rq_uint(r, r->body, "ttl", 3600, &ttl))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_lock(
	    BE(r)->ctx, &r->call, r->id, ttl, lock_id, &expires_at, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	lock_id[sizeof(lock_id) - 1] = '\0';
	rq_json(r, 201,
	    json_pack("{s:s,s:o}", "lock_id", lock_id, "expires_at",
	        iso_time(expires_at)));
}

static void
h_sandbox_unlock(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_unlock(BE(r)->ctx, &r->call, r->id, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

static void
h_sandbox_token(struct rq *r)
{
	struct api_token tok;
	struct api_error err;
	int rc;

	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_token(BE(r)->ctx, &r->call, r->id, &tok, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	tok.token[sizeof(tok.token) - 1] = '\0';
	rq_json(r, 200,
	    json_pack("{s:s,s:o}", "auth_token", tok.token, "token_expires_at",
	        iso_time(tok.expires_at)));
}

/* --- runs ------------------------------------------------------------ */

static int
parse_exec(struct rq *r, struct api_exec *ex, const char **webhook)
{
	static const char *const fields[] = { "code", "language", "timeout",
		"context_id", "env_vars", NULL };
	static const char *const fields_async[] = { "code", "language",
		"timeout", "webhook_url", "env_vars", NULL };
	const char *lang;
	json_t *code;

	memset(ex, 0, sizeof(*ex));
	if (rq_fields(r, r->body, webhook ? fields_async : fields))
		return -1;
	if (rq_str(r, r->body, "code", 1, &ex->code))
		return -1;
	code = json_object_get(r->body, "code");
	ex->code_len = json_string_length(code);
	if (rq_str(r, r->body, "language", 0, &lang))
		return -1;
	if (lang == NULL || strcmp(lang, "python") == 0)
		ex->language = API_LANG_PYTHON;
	else if (strcmp(lang, "javascript") == 0 || strcmp(lang, "js") == 0)
		ex->language = API_LANG_JAVASCRIPT;
	else {
		rq_error(r, API_EBADREQ,
		    "language must be \"python\" or \"javascript\"");
		return -1;
	}
	if (rq_uint(r, r->body, "timeout", MAX_TIMEOUT_MS, &ex->timeout_ms))
		return -1;
	if (rq_str(r, r->body, "context_id", 0, &ex->context_id))
		return -1;
	if (ex->context_id != NULL &&
	    !api_valid_id(ex->context_id, strlen(ex->context_id))) {
		rq_error(r, API_EBADREQ, "context_id is not a context's id");
		return -1;
	}
	if (rq_kv(
	        r, r->body, "env_vars", (struct api_kv **)&ex->env, &ex->nenv))
		return -1;
	if (webhook != NULL) {
		if (rq_str(r, r->body, "webhook_url", 1, webhook)) {
			free((void *)ex->env);
			return -1;
		}
		if (strncmp(*webhook, "https://", 8) != 0 &&
		    strncmp(*webhook, "http://", 7) != 0) {
			free((void *)ex->env);
			rq_error(r, API_EBADREQ,
			    "webhook_url must be an http(s) URL");
			return -1;
		}
	}
	return 0;
}

void
sse_event(struct http_buf *b, const char *event, json_t *data)
{
	char *s = json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII);

	if (s == NULL) {
		b->oom = 1;
		json_decref(data);
		return;
	}
	/* JSON with ENSURE_ASCII has no raw newline: one data line. */
	http_buf_printf(b, "event: %s\ndata: %s\n\n", event, s);
	free(s);
	json_decref(data);
}

/* The stdout, stderr and exit events of a finished run. */
void
run_events(
    struct http_buf *b, const struct api_run_result *res, const char *platform)
{
	json_t *ex;

	if (res->out_len)
		sse_event(b, "stdout",
		    json_pack(
		        "{s:o}", "data", bytes_string(res->out, res->out_len)));
	if (res->err_len)
		sse_event(b, "stderr",
		    json_pack(
		        "{s:o}", "data", bytes_string(res->err, res->err_len)));
	if (res->results != NULL) {
		json_t *rs = api_results_decode(res->results, res->results_len),
		       *x;
		size_t i;

		json_array_foreach(rs, i, x)
		    sse_event(b, "result", json_incref(x));
		json_decref(rs);
	}
	ex = json_pack("{s:i,s:I,s:o}", "exit_code", res->exit_code,
	    "duration_ms", (json_int_t)res->duration_ms, "reason",
	    res->reason[0] ? json_string(res->reason) : json_null());
	api_run_limits(ex, res->limits, res->egress);
	api_run_egress_bytes(ex, res);
	api_run_platform(ex, platform);
	sse_event(b, "exit", ex);
}

void
api_run_egress_bytes(json_t *o, const struct api_run_result *res)
{
	if (o == NULL || (res->egress_out == 0 && res->egress_in == 0))
		return;
	json_object_set_new(o, "egress_bytes",
	    json_pack("{s:I,s:I}", "out", (json_int_t)res->egress_out, "in",
	        (json_int_t)res->egress_in));
}

void
api_run_platform(json_t *o, const char *platform)
{
	if (o != NULL && platform != NULL && platform[0] != '\0')
		json_object_set_new(o, "platform", json_string(platform));
}

void
api_run_limits(json_t *o, unsigned limits, const char *egress)
{
	json_t *a;

	if (o == NULL || limits == 0)
		return;
	/* Text the guest chose (a name it looked up): json_string refuses
	 * what is not UTF-8, and then the field is left out. */
	if ((limits & API_LIMIT_EGRESS) && egress != NULL && egress[0] != '\0')
		json_object_set_new(o, "egress_refused", json_string(egress));
	if ((a = json_array()) == NULL)
		return;
	if (limits & API_LIMIT_PROCESSES)
		json_array_append_new(a, json_string("processes"));
	if (limits & API_LIMIT_MEMORY)
		json_array_append_new(a, json_string("memory"));
	if (limits & API_LIMIT_EGRESS)
		json_array_append_new(a, json_string("egress"));
	json_object_set_new(o, "limits", a);
}

void
reply_run(struct rq *r, struct api_run_result *res)
{
	json_t *o;

	api_observe_run(r->api, res->duration_ms);
	res->reason[sizeof(res->reason) - 1] = '\0';
	if (r->e2b == E2B_RPC_STREAM) {
		e2b_process_reply(r, res);
		return;
	}
	if (r->e2b_cell != E2B_CELL_NONE) {
		e2b_cmd_cell_reply(r, res);
		return;
	}
	if (res->cell) {
		reply_cell(r, res);
		return;
	}
	if (rq_accepts_sse(r)) {
		struct http_buf b;

		http_buf_init(&b);
		run_events(&b, res, r->api->platform);
		if (b.oom)
			rq_error(r, API_EINTERNAL, "Out of memory");
		else
			rq_raw(r, 200, "text/event-stream", b.data, b.len);
		http_buf_free(&b);
	} else {
		o = json_pack("{s:o,s:o,s:i,s:I,s:o}", "stdout",
		    bytes_string(res->out, res->out_len), "stderr",
		    bytes_string(res->err, res->err_len), "exit_code",
		    res->exit_code, "duration_ms", (json_int_t)res->duration_ms,
		    "reason",
		    res->reason[0] ? json_string(res->reason) : json_null());
		if (o != NULL && res->results != NULL)
			json_object_set_new(o, "results",
			    api_results_decode(res->results, res->results_len));
		api_run_limits(o, res->limits, res->egress);
		api_run_egress_bytes(o, res);
		api_run_platform(o, r->api->platform);
		rq_json(r, 200, o);
	}
	free(res->out);
	free(res->err);
	free(res->results);
}

int
rq_run_answer(struct rq *r, int rc, struct api_run_result *res,
    const struct api_error *err)
{
	if (rc == API_PENDING && r->pending != NULL)
		return rc;
	if (rc != API_OK) {
		free(res->out);
		free(res->err);
		free(res->results);
		rq_backend_error(r, rc, err);
		return rc;
	}
	reply_run(r, res);
	return rc;
}

static void
h_execute(struct rq *r)
{
	struct api_exec ex;
	struct api_run_result res;
	struct api_error err;
	int rc;

	if (parse_exec(r, &ex, NULL))
		return;
	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->execute(BE(r)->ctx, &r->call, r->id, &ex, &res, &err);
	free((void *)ex.env);
	(void)rq_run_answer(r, rc, &res, &err);
}

static void
h_execute_background(struct rq *r)
{
	struct api_exec ex;
	struct api_error err;
	uint64_t pid = 0;
	int rc;

	if (parse_exec(r, &ex, NULL))
		return;
	if (ex.context_id != NULL) {
		free((void *)ex.env);
		rq_error(r, API_EBADREQ,
		    "context_id: a context's cells run in the foreground");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->execute_background(
	    BE(r)->ctx, &r->call, r->id, &ex, &pid, &err);
	free((void *)ex.env);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 202, json_pack("{s:I}", "pid", (json_int_t)pid));
}

static void
h_execute_async(struct rq *r)
{
	struct api_exec ex;
	struct api_error err;
	const char *hook = NULL;
	char run_id[API_ID_MAX + 1] = "";
	int rc;

	if (parse_exec(r, &ex, &hook))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->execute_async(
	    BE(r)->ctx, &r->call, r->id, &ex, hook, run_id, &err);
	free((void *)ex.env);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	run_id[sizeof(run_id) - 1] = '\0';
	rq_json(r, 202, json_pack("{s:s}", "run_id", run_id));
}

static void
h_processes(struct rq *r)
{
	struct api_process *ps = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->processes(BE(r)->ctx, &r->call, r->id, &ps, &n, &err);
	if (rc != API_OK) {
		free(ps);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		ps[i].cmd[sizeof(ps[i].cmd) - 1] = '\0';
		ps[i].status[sizeof(ps[i].status) - 1] = '\0';
		json_array_append_new(arr,
		    json_pack("{s:I,s:s,s:s,s:i,s:o,s:b}", "pid",
		        (json_int_t)ps[i].pid, "cmd", ps[i].cmd, "status",
		        ps[i].status, "exit_code", ps[i].exit_code,
		        "started_at", iso_time(ps[i].started_at), "background",
		        ps[i].background != 0));
	}
	free(ps);
	rq_json(r, 200, json_pack("{s:o}", "processes", arr));
}

static void
h_kill(struct rq *r)
{
	static const struct {
		const char *name;
		int sig;
	} sigs[] = { { "KILL", SIGKILL }, { "TERM", SIGTERM },
		{ "INT", SIGINT }, { "HUP", SIGHUP } };
	struct api_error err;
	char pids[24], sname[8], *end;
	unsigned long long pid;
	int rc, sig = SIGKILL;
	size_t i;

	if (rq_query(r, "pid", pids, sizeof(pids), 1) != 1)
		return;
	pid = strtoull(pids, &end, 10);
	if (*end != '\0' || pids[0] < '0' || pids[0] > '9') {
		rq_error(r, API_EBADREQ, "pid must be a number");
		return;
	}
	if ((rc = rq_query(r, "signal", sname, sizeof(sname), 0)) < 0)
		return;
	if (rc == 1) {
		for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
			if (strcmp(sname, sigs[i].name) == 0)
				break;
		if (i == sizeof(sigs) / sizeof(sigs[0])) {
			rq_error(r, API_EBADREQ,
			    "signal must be KILL, TERM, INT or HUP");
			return;
		}
		sig = sigs[i].sig;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->kill(BE(r)->ctx, &r->call, r->id, pid, sig, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

/* An executable name: no path separators, no shell syntax. */
int
api_valid_cmd(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		        c == '.' || c == '+'))
			return 0;
	}
	return s[0] != '.';
}

int
rq_command_args(
    struct rq *r, json_t *obj, const char ***args, struct api_command *c)
{
	json_t *a = json_object_get(obj, "args");

	if (a == NULL || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 256) {
		rq_error(r, API_EBADREQ,
		    "args must be an array of at most 256 strings");
		return -1;
	}
	if ((*args = calloc(json_array_size(a) + 1, sizeof(char *))) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return -1;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *e = json_array_get(a, i);

		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e)) {
			rq_error(
			    r, API_EBADREQ, "args must be strings without NUL");
			return -1;
		}
		(*args)[i] = json_string_value(e);
	}
	c->args = *args;
	c->nargs = json_array_size(a);
	return 0;
}

static int
parse_command(struct rq *r, struct api_command *c, const char ***args,
    struct api_kv **env)
{
	static const char *const fields[] = { "cmd", "args", "env", "cwd",
		"stdin", "stdin_stream", "timeout", NULL };
	json_t *in, *ss;

	memset(c, 0, sizeof(*c));
	*args = NULL;
	*env = NULL;
	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "cmd", 1, &c->cmd))
		return -1;
	if (!api_valid_cmd(c->cmd)) {
		rq_error(r, API_EBADREQ,
		    "cmd must be an executable name, not a path or a shell "
		    "string");
		return -1;
	}
	if (rq_str(r, r->body, "cwd", 0, &c->cwd) ||
	    (c->cwd != NULL &&
	        rq_cwd_check(r, c->cwd,
	            json_string_length(json_object_get(r->body, "cwd")))) ||
	    rq_str(r, r->body, "stdin", 0, &c->stdin_data) ||
	    rq_uint(r, r->body, "timeout", MAX_TIMEOUT_MS, &c->timeout_ms))
		return -1;
	if ((in = json_object_get(r->body, "stdin")) != NULL &&
	    json_is_string(in))
		c->stdin_len = json_string_length(in);
	/* stdin_stream: the command's stdin is fed by commands/input, which
	 * names it by the pid its event stream's start event tells. */
	ss = json_object_get(r->body, "stdin_stream");
	if (ss != NULL && !json_is_boolean(ss) && !json_is_null(ss)) {
		rq_error(r, API_EBADREQ, "stdin_stream must be a boolean");
		return -1;
	}
	if ((c->stdin_stream = json_is_true(ss)) &&
	    (c->stdin_data != NULL || !r->call.sse)) {
		rq_error(r, API_EBADREQ,
		    "stdin_stream needs Accept: text/event-stream "
		    "(commands/run) "
		    "and no stdin");
		return -1;
	}
	if (rq_command_args(r, r->body, args, c))
		return -1;
	if (rq_kv(r, r->body, "env", env, &c->nenv))
		return -1;
	c->env = *env;
	return 0;
}

void
rq_command_run(struct rq *r, const struct api_command *c)
{
	struct api_run_result res;
	struct api_error err;
	int rc;

	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->command_run(BE(r)->ctx, &r->call, r->id, c, &res, &err);
	(void)rq_run_answer(r, rc, &res, &err);
}

static void
h_command_run(struct rq *r)
{
	struct api_command c;
	const char **args;
	struct api_kv *env;

	/* A streaming command is listed: its pid (its stream's start
	 * event) finds it for commands/input and commands/stream. */
	if (parse_command(r, &c, &args, &env) == 0) {
		rq_command_run(r, &c);
		if (r->call.sse && r->pending != NULL)
			api_input_link(r->api, r->pending,
			    c.stdin_stream ? STDIN_OPEN : STDIN_NONE);
	}
	free(args);
	free(env);
}

/*
 * GET .../commands/stream?pid=N (an event stream): another reader of a
 * command that commands/run streams, started by this principal and still
 * running: a start event, what it writes from now on, its exit.
 */
static void
h_command_stream(struct rq *r)
{
	struct api_pending *p;
	struct api_error err;
	char pids[24], *end;
	unsigned long long pid;
	int rc;

	if (rq_query(r, "pid", pids, sizeof(pids), 1) != 1)
		return;
	pid = strtoull(pids, &end, 10);
	if (*end != '\0' || pids[0] < '1' || pids[0] > '9' ||
	    pid > UINT32_MAX) {
		rq_error(r, API_EBADREQ, "pid must be a command's pid");
		return;
	}
	if (!r->call.sse) {
		rq_error(r, API_EBADREQ,
		    "commands/stream needs Accept: text/event-stream");
		return;
	}
	if ((p = api_input_find(r->api, r->id, r->who.sub, pid)) == NULL ||
	    p->e2b_pty) {
		rq_error(r, API_ENOTFOUND,
		    "No streaming command with pid %llu of yours in this "
		    "sandbox",
		    pid);
		return;
	}
	if (BE(r)->run_attach == NULL) {
		rq_error(r, API_ENOTIMPL, "Not implemented");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->run_attach(BE(r)->ctx, &r->call, p, pid, &err);
	if (rc == API_PENDING && r->pending != NULL)
		return;
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}

/*
 * POST .../commands/input {"pid", "data" | "data_base64", "eof"}: bytes
 * for the stdin stream of a command that commands/run started with
 * stdin_stream, then, with eof, the stream's end (the program reads
 * EOF). Only the principal that started the command reaches it; a pid
 * that is none of its running commands is 404, a command whose stdin is
 * not open (started without a stream, closed, a terminal) 409.
 */
static void
h_command_input(struct rq *r)
{
	static const char *const fields[] = { "pid", "data", "data_base64",
		"eof", NULL };
	unsigned char *bytes = NULL;
	struct api_pending *p;
	const char *data, *b64;
	size_t n = 0, blen, cap;
	uint64_t pid;
	json_t *eof;

	if (rq_fields(r, r->body, fields) ||
	    rq_uint(r, r->body, "pid", UINT32_MAX, &pid) ||
	    rq_str(r, r->body, "data", 0, &data) ||
	    rq_str(r, r->body, "data_base64", 0, &b64))
		return;
	eof = json_object_get(r->body, "eof");
	if (pid == 0 || (data != NULL && b64 != NULL) ||
	    (eof != NULL && !json_is_boolean(eof) && !json_is_null(eof)) ||
	    (data == NULL && b64 == NULL && !json_is_true(eof))) {
		rq_error(r, API_EBADREQ,
		    "The body must be {\"pid\": a command's pid, \"data\" or "
		    "\"data_base64\", \"eof\": true to end its input}");
		return;
	}
	if (data != NULL) {
		n = json_string_length(json_object_get(r->body, "data"));
		bytes = (unsigned char *)data;
	} else if (b64 != NULL) {
		blen =
		    json_string_length(json_object_get(r->body, "data_base64"));
		if (blen > sodium_base64_ENCODED_LEN(
		               API_INPUT_MAX, sodium_base64_VARIANT_ORIGINAL)) {
			rq_error(r, API_ETOOLARGE,
			    "Input is limited to %u bytes a request",
			    (unsigned)API_INPUT_MAX);
			return;
		}
		cap = blen / 4 * 3 + 3;
		if ((bytes = malloc(cap)) == NULL) {
			rq_error(r, API_EINTERNAL, "Out of memory");
			return;
		}
		if (sodium_base642bin(bytes, cap, b64, blen, NULL, &n, NULL,
		        sodium_base64_VARIANT_ORIGINAL) != 0) {
			rq_error(r, API_EBADREQ, "data_base64 must be base64");
			goto out;
		}
	}
	if (n > API_INPUT_MAX) {
		rq_error(r, API_ETOOLARGE,
		    "Input is limited to %u bytes a request",
		    (unsigned)API_INPUT_MAX);
		goto out;
	}
	if ((p = api_input_find(r->api, r->id, r->who.sub, pid)) == NULL) {
		rq_error(r, API_ENOTFOUND,
		    "No running command with pid %llu of yours in this sandbox",
		    (unsigned long long)pid);
		goto out;
	}
	if (p->e2b_pty || p->stdin_state != STDIN_OPEN) {
		rq_error(r, API_ECONFLICT,
		    "The command's stdin is not open (started without "
		    "stdin_stream, or ended)");
		goto out;
	}
	if (n > 0)
		BE(r)->terminal_input(
		    BE(r)->ctx, p, API_TERM_DATA, bytes, n, 0, 0);
	if (json_is_true(eof)) {
		p->stdin_state = STDIN_CLOSED;
		BE(r)->terminal_input(
		    BE(r)->ctx, p, API_TERM_EOF, NULL, 0, 0, 0);
	}
	rq_no_content(r);
out:
	if (b64 != NULL)
		free(bytes);
}

static void
h_command_background(struct rq *r)
{
	struct api_command c;
	struct api_error err;
	const char **args;
	struct api_kv *env;
	uint64_t pid = 0;
	int rc;

	if (parse_command(r, &c, &args, &env))
		goto out;
	/* A background command has no stream to tell its start by. */
	if (c.stdin_stream) {
		rq_error(r, API_EBADREQ,
		    "stdin_stream is served by commands/run only");
		goto out;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->command_background(
	    BE(r)->ctx, &r->call, r->id, &c, &pid, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_json(r, 202, json_pack("{s:I}", "pid", (json_int_t)pid));
out:
	free(args);
	free(env);
}

/* --- files ----------------------------------------------------------- */

void
h_file_read(struct rq *r)
{
	char path[PATH_MAX_API], *data = NULL;
	struct api_error err;
	size_t len = 0;
	int rc;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_read(
	    BE(r)->ctx, &r->call, r->id, path, &data, &len, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_raw(r, 200, "application/octet-stream", data, len);
	free(data);
}

static void
h_file_write(struct rq *r)
{
	char path[PATH_MAX_API];
	struct api_error err;
	int rc;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_write(BE(r)->ctx, &r->call, r->id, path, r->req->body,
	    r->req->body_len, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200,
	    json_pack("{s:s,s:I}", "path", path, "size",
	        (json_int_t)r->req->body_len));
}

static void
h_file_list(struct rq *r)
{
	char path[PATH_MAX_API];
	struct api_dirent *ents = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr;
	int rc;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_list(
	    BE(r)->ctx, &r->call, r->id, path, &ents, &n, &err);
	if (rc != API_OK) {
		free(ents);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		ents[i].name[sizeof(ents[i].name) - 1] = '\0';
		ents[i].type[sizeof(ents[i].type) - 1] = '\0';
		json_array_append_new(arr,
		    json_pack("{s:o,s:s,s:I,s:o}", "name",
		        bytes_string(ents[i].name, strlen(ents[i].name)),
		        "type", ents[i].type, "size", (json_int_t)ents[i].size,
		        "modified_at", iso_time(ents[i].mtime)));
	}
	free(ents);
	rq_json(r, 200, json_pack("{s:s,s:o}", "path", path, "entries", arr));
}

static void
h_file_exists(struct rq *r)
{
	char path[PATH_MAX_API];
	struct api_error err;
	int rc, exists = 0;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_exists(
	    BE(r)->ctx, &r->call, r->id, path, &exists, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_json(r, 200,
		    json_pack("{s:s,s:b}", "path", path, "exists", exists));
}

static void
h_file_remove(struct rq *r)
{
	char path[PATH_MAX_API];
	struct api_error err;
	int rc;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_remove(BE(r)->ctx, &r->call, r->id, path, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_no_content(r);
}

static void
h_file_mkdir(struct rq *r)
{
	char path[PATH_MAX_API];
	struct api_error err;
	int rc;

	if (rq_path(r, path, sizeof(path)))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->file_mkdir(BE(r)->ctx, &r->call, r->id, path, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_json(r, 201, json_pack("{s:s}", "path", path));
}

/* --- env, system ----------------------------------------------------- */

static void
h_env_get(struct rq *r)
{
	struct api_kv *kv = NULL;
	struct api_error err;
	size_t n = 0;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->env_get(BE(r)->ctx, &r->call, r->id, &kv, &n, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_json(r, 200, json_pack("{s:o}", "env", api_kv_json(kv, n)));
	api_kv_free(kv, n);
}

static void
env_set(struct rq *r, int replace)
{
	static const char *const fields[] = { "env", NULL };
	struct api_kv *kv = NULL;
	struct api_error err;
	size_t n = 0;
	int rc;

	if (rq_fields(r, r->body, fields))
		return;
	if (json_object_get(r->body, "env") == NULL) {
		rq_error(r, API_EBADREQ, "Missing field: env");
		return;
	}
	if (rq_kv(r, r->body, "env", &kv, &n))
		return;
	if (rq_env_refs_ok(r, kv, n)) {
		free(kv);
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->env_set(BE(r)->ctx, &r->call, r->id, kv, n, replace, &err);
	free(kv);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		h_env_get(r);
}

static void
h_env_put(struct rq *r)
{
	env_set(r, 1);
}

static void
h_env_patch(struct rq *r)
{
	env_set(r, 0);
}

static void
h_env_delete(struct rq *r)
{
	struct api_error err;
	char key[256];
	const char *keys[1];
	int rc, have;

	/* ?key=NAME deletes one variable; no key deletes them all. */
	if ((have = rq_query(r, "key", key, sizeof(key), 0)) < 0)
		return;
	keys[0] = key;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->env_delete(BE(r)->ctx, &r->call, r->id, have ? keys : NULL,
	    have ? 1 : 0, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_no_content(r);
}

static void
h_system(struct rq *r)
{
	struct api_usage u;
	struct api_error err;
	int rc;

	memset(&u, 0, sizeof(u));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->system(BE(r)->ctx, &r->call, r->id, &u, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200,
	    json_pack("{s:I,s:I,s:I,s:I,s:o,s:{s:o,s:o}}", "runs",
	        (json_int_t)u.runs, "cpu_ms", (json_int_t)u.cpu_ms,
	        "memory_bytes", (json_int_t)u.memory_bytes, "workspace_bytes",
	        (json_int_t)u.workspace_bytes, "budget_remaining",
	        u.budget_remaining < 0 ? json_null()
	                               : json_integer(u.budget_remaining),
	        "rates", "read",
	        u.read_tokens < 0 ? json_null() : json_real(u.read_tokens),
	        "write",
	        u.write_tokens < 0 ? json_null() : json_real(u.write_tokens)));
}

/* --- tokens, policy, images, audit ----------------------------------- */

static void
h_token_attenuate(struct rq *r)
{
	static const char *const fields[] = { "caps", "ttl", "sandbox", NULL };
	struct api_attenuate at = { 0, 0, NULL };
	struct api_token tok;
	struct api_error err;
	json_t *caps = json_object_get(r->body, "caps");
	uint64_t ttl;
	int rc;

	if (rq_fields(r, r->body, fields) ||
	    rq_uint(r, r->body, "ttl", MAX_TTL_S, &ttl) ||
	    rq_str(r, r->body, "sandbox", 0, &at.sbx))
		return;
	if (caps == NULL || !json_is_array(caps) ||
	    json_array_size(caps) == 0) {
		rq_error(r, API_EBADREQ, "caps must be a non-empty array");
		return;
	}
	for (size_t i = 0; i < json_array_size(caps); i++) {
		json_t *c = json_array_get(caps, i);
		int id = json_is_string(c)
		    ? cap_lookup(json_string_value(c), json_string_length(c))
		    : -1;
		if (id < 0) {
			rq_error(r, API_EBADREQ, "Unknown capability in caps");
			return;
		}
		at.caps |= CAP_BIT(id);
	}
	/* Never wider: fewer caps, the same sandbox, an earlier expiry. */
	if (at.caps & ~r->who.caps) {
		rq_error(r, API_EFORBIDDEN,
		    "A token cannot grant capabilities it does not hold");
		api_audit_refused(r, "token.attenuate", 403, "token caps",
		    "a token cannot grant capabilities it does not hold");
		return;
	}
	if (at.sbx != NULL && !api_valid_id(at.sbx, strlen(at.sbx))) {
		rq_error(r, API_EBADREQ, "sandbox must be a sandbox id");
		return;
	}
	if (r->who.sbx[0] != '\0') {
		if (at.sbx != NULL && strcmp(at.sbx, r->who.sbx) != 0) {
			rq_error(r, API_EFORBIDDEN,
			    "A sandbox-scoped token cannot change its sandbox");
			api_audit_refused(r, "token.attenuate", 403,
			    "token scope",
			    "a sandbox-scoped token cannot change its sandbox");
			return;
		}
		at.sbx = r->who.sbx;
	}
	at.exp = r->who.exp;
	if (ttl != 0) {
		int64_t want =
		    (int64_t)(api_now_ms(r->api) / 1000) + (int64_t)ttl;
		if (want < at.exp || at.exp == 0)
			at.exp = want;
	}
	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->token_attenuate(BE(r)->ctx, &r->call, &at, &tok, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	tok.token[sizeof(tok.token) - 1] = '\0';
	rq_json(r, 201,
	    json_pack("{s:s,s:o}", "token", tok.token, "expires_at",
	        iso_time(tok.expires_at)));
}

/*
 * Revocation by jti (what `keep token inspect` shows). The record lives
 * until expires_at, which defaults to the longest lifetime a token may
 * have from now: by then any token with that jti has expired anyway.
 */
static void
h_token_revoke(struct rq *r)
{
	static const char *const fields[] = { "jti", "expires_at", NULL };
	struct api_error err;
	const char *jti = NULL;
	uint64_t exp = 0;
	size_t len;
	int rc;

	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "jti", 1, &jti) ||
	    rq_uint(r, r->body, "expires_at", INT64_MAX, &exp))
		return;
	len = strlen(jti);
	if (len == 0 || len > 64 ||
	    strspn(jti,
	        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	        "0123456789-_") != len) {
		rq_error(r, API_EBADREQ,
		    "jti must be 1 to 64 URL-safe "
		    "characters");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->token_revoke(BE(r)->ctx, &r->call, jti, (int64_t)exp, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, json_pack("{s:s,s:b}", "jti", jti, "revoked", 1));
}

static void
h_policy_version(struct rq *r)
{
	struct api_policy_version v;
	struct api_error err;
	int rc;

	memset(&v, 0, sizeof(v));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->policy_version(BE(r)->ctx, &r->call, &v, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	v.version[sizeof(v.version) - 1] = '\0';
	v.hash[sizeof(v.hash) - 1] = '\0';
	rq_json(r, 200,
	    json_pack("{s:s,s:s,s:o}", "version", v.version, "hash", v.hash,
	        "loaded_at", iso_time(v.loaded_at)));
}

static void
h_policy_check(struct rq *r)
{
	static const char *const fields[] = { "principal", "capability",
		"target", NULL };
	struct api_check ck;
	struct api_check_result res;
	struct api_error err;
	const char *cap;
	int rc, id;

	memset(&ck, 0, sizeof(ck));
	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "principal", 1, &ck.principal) ||
	    rq_str(r, r->body, "capability", 1, &cap) ||
	    rq_str(r, r->body, "target", 0, &ck.target))
		return;
	if ((id = cap_lookup(cap, strlen(cap))) < 0) {
		rq_error(r, API_EBADREQ, "Unknown capability");
		return;
	}
	ck.cap = (enum cap_id)id;
	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->policy_check(BE(r)->ctx, &r->call, &ck, &res, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	res.rule[sizeof(res.rule) - 1] = '\0';
	res.location[sizeof(res.location) - 1] = '\0';
	res.explanation[sizeof(res.explanation) - 1] = '\0';
	rq_json(r, 200,
	    json_pack("{s:s,s:s,s:s,s:s}", "decision",
	        res.allow ? "allow" : "deny", "rule", res.rule, "location",
	        res.location, "explanation", res.explanation));
}

static json_t *
image_json(struct api_image *im)
{
	im->name[sizeof(im->name) - 1] = '\0';
	im->version[sizeof(im->version) - 1] = '\0';
	im->digest[sizeof(im->digest) - 1] = '\0';
	im->languages[sizeof(im->languages) - 1] = '\0';
	return json_pack("{s:s,s:s,s:s,s:I,s:s}", "name", im->name, "version",
	    im->version, "digest", im->digest, "size", (json_int_t)im->size,
	    "languages", im->languages);
}

static void
h_image_list(struct rq *r)
{
	struct api_image *ims = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->image_list(BE(r)->ctx, &r->call, &ims, &n, &err);
	if (rc != API_OK) {
		free(ims);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, image_json(&ims[i]));
	free(ims);
	rq_json(r, 200, json_pack("{s:o}", "images", arr));
}

static void
h_image_upload(struct rq *r)
{
	struct api_image im;
	struct api_error err;
	int rc;

	if (r->req->body_len == 0) {
		rq_error(r, API_EBADREQ, "The body must be a signed image");
		return;
	}
	memset(&im, 0, sizeof(im));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->image_upload(
	    BE(r)->ctx, &r->call, r->req->body, r->req->body_len, &im, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_json(r, 201, image_json(&im));
}

static void
h_image_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->image_delete(BE(r)->ctx, &r->call, r->tail, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_no_content(r);
}

static void
h_audit(struct rq *r)
{
	struct api_audit_entry *ents = NULL;
	struct api_page pg;
	struct api_error err;
	char cursor[API_ID_MAX + 1], next[API_ID_MAX + 1] = "";
	size_t n = 0;
	json_t *arr;
	int rc;

	if (rq_page(r, cursor, sizeof(cursor), &pg))
		return;
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->audit_list(BE(r)->ctx, &r->call, &pg, &ents, &n, next, &err);
	if (rc != API_OK) {
		free(ents);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n && i < pg.limit; i++) {
		struct api_audit_entry *e = &ents[i];
		e->request_id[sizeof(e->request_id) - 1] = '\0';
		e->client_request_id[sizeof(e->client_request_id) - 1] = '\0';
		e->principal[sizeof(e->principal) - 1] = '\0';
		e->action[sizeof(e->action) - 1] = '\0';
		e->target[sizeof(e->target) - 1] = '\0';
		e->decision[sizeof(e->decision) - 1] = '\0';
		e->rule[sizeof(e->rule) - 1] = '\0';
		e->detail[sizeof(e->detail) - 1] = '\0';
		json_t *o = json_pack("{s:I,s:o,s:s,s:s,s:s,s:s,s:s,s:s,s:s}",
		    "seq", (json_int_t)e->seq, "time", iso_time(e->time),
		    "request_id", e->request_id, "principal", e->principal,
		    "action", e->action, "target", e->target, "decision",
		    e->decision, "rule", e->rule, "detail", e->detail);

		if (o != NULL && e->client_request_id[0] != '\0')
			json_object_set_new(o, "client_request_id",
			    json_string(e->client_request_id));
		json_array_append_new(arr, o);
	}
	free(ents);
	next[sizeof(next) - 1] = '\0';
	rq_json(r, 200,
	    json_pack("{s:o,s:o}", "entries", arr, "next_cursor",
	        next[0] ? json_string(next) : json_null()));
}

#define SBX "/v1/sandboxes/{id}"
#define AUTH_ONLY (-1)
#define PUBLIC (-2)

/*
 * method, path, handler, capability, JSON body, Idempotency-Key, label,
 * whether the op may defer its reply.
 * Order matters only for 405: the first path match decides the Allow.
 */
const struct api_route api_routes[] = {
	{ HTTP_GET, "/healthz", h_healthz, PUBLIC, 0, 0, "healthz", 0, E2B_NO,
	    NULL },
	{ HTTP_GET, "/v1/openapi.json", h_openapi, PUBLIC, 0, 0, "openapi", 0,
	    E2B_NO, NULL },
	{ HTTP_GET, "/metrics", h_metrics, CAP_ADMIN, 0, 0, "metrics", 0,
	    E2B_NO, NULL },
	{ HTTP_POST, "/v1/sandboxes", h_sandbox_create, CAP_SANDBOX_WRITE, 1, 1,
	    "sandbox_create", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/sandboxes", h_sandbox_list, CAP_SANDBOX_READ, 0, 0,
	    "sandbox_list", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX, h_sandbox_get, CAP_SANDBOX_READ, 0, 0, "sandbox_get",
	    0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX, h_sandbox_delete, CAP_SANDBOX_WRITE, 0, 0,
	    "sandbox_delete", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/fork", h_sandbox_fork, CAP_SANDBOX_WRITE, 2, 1,
	    "sandbox_fork", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/lock", h_sandbox_lock, CAP_SANDBOX_WRITE, 2, 0,
	    "sandbox_lock", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/timeout", h_sandbox_timeout, CAP_SANDBOX_WRITE, 1, 0,
	    "sandbox_timeout", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/pause", h_sandbox_pause, CAP_SANDBOX_WRITE, 2, 0,
	    "sandbox_pause", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/resume", h_sandbox_resume, CAP_SANDBOX_WRITE, 2, 0,
	    "sandbox_resume", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/lock", h_sandbox_unlock, CAP_SANDBOX_WRITE, 0, 0,
	    "sandbox_unlock", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/token", h_sandbox_token, CAP_SANDBOX_WRITE, 0, 0,
	    "sandbox_token", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/execute", h_execute, CAP_EXEC, 1, 1, "execute", 1,
	    E2B_NO, NULL },
	{ HTTP_POST, SBX "/execute/background", h_execute_background, CAP_EXEC,
	    1, 1, "execute_background", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/execute/async", h_execute_async, CAP_EXEC, 1, 1,
	    "execute_async", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/execute/processes", h_processes, CAP_SANDBOX_READ, 0,
	    0, "execute_processes", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/execute/kill", h_kill, CAP_EXEC, 0, 0,
	    "execute_kill", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/commands/run", h_command_run, CAP_EXEC, 1, 1,
	    "commands_run", 1, E2B_NO, NULL },
	{ HTTP_POST, SBX "/commands/background", h_command_background, CAP_EXEC,
	    1, 1, "commands_background", 0, E2B_NO, NULL },
	/* A command's stdin stream, decided as the terminal's input is:
	 * exec, and only the principal that started it reaches it. */
	{ HTTP_POST, SBX "/commands/input", h_command_input, CAP_EXEC, 1, 0,
	    "commands_input", 0, E2B_NO, NULL },
	/* Another reader of a streaming command, decided as its input. */
	{ HTTP_GET, SBX "/commands/stream", h_command_stream, CAP_EXEC, 0, 0,
	    "commands_stream", 1, E2B_NO, NULL },
	{ HTTP_GET, SBX "/files/read", h_file_read, CAP_ARTIFACT_READ, 0, 0,
	    "files_read", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/files/list", h_file_list, CAP_ARTIFACT_READ, 0, 0,
	    "files_list", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/files/exists", h_file_exists, CAP_ARTIFACT_READ, 0, 0,
	    "files_exists", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/files/write", h_file_write, CAP_ARTIFACT_WRITE, 0, 0,
	    "files_write", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/files/mkdir", h_file_mkdir, CAP_ARTIFACT_WRITE, 0, 0,
	    "files_mkdir", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/files/remove", h_file_remove, CAP_ARTIFACT_WRITE,
	    0, 0, "files_remove", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/files/watch", h_file_watch, CAP_ARTIFACT_READ, 0, 0,
	    "files_watch", 1, E2B_NO, NULL },
	{ HTTP_GET, SBX "/env", h_env_get, CAP_SANDBOX_READ, 0, 0, "env_get", 0,
	    E2B_NO, NULL },
	{ HTTP_PUT, SBX "/env", h_env_put, CAP_SANDBOX_WRITE, 1, 0, "env_put",
	    0, E2B_NO, NULL },
	{ HTTP_PATCH, SBX "/env", h_env_patch, CAP_SANDBOX_WRITE, 1, 0,
	    "env_patch", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/env", h_env_delete, CAP_SANDBOX_WRITE, 0, 0,
	    "env_delete", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/system", h_system, CAP_SANDBOX_READ, 0, 0, "system",
	    0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/processes", h_processes, CAP_SANDBOX_READ, 0, 0,
	    "processes", 0, E2B_NO, NULL },
	{ HTTP_POST, "/v1/tokens", h_token_attenuate, AUTH_ONLY, 1, 0, "tokens",
	    0, E2B_NO, NULL },
	{ HTTP_POST, "/v1/tokens/revoke", h_token_revoke, CAP_ADMIN, 1, 0,
	    "tokens_revoke", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/policy", h_policy_version, CAP_POLICY_READ, 0, 0,
	    "policy", 0, E2B_NO, NULL },
	{ HTTP_POST, "/v1/policy/check", h_policy_check, CAP_POLICY_READ, 1, 0,
	    "policy_check", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/images", h_image_list, CAP_IMAGE_READ, 0, 0,
	    "images_list", 0, E2B_NO, NULL },
	{ HTTP_POST, "/v1/images", h_image_upload, CAP_IMAGE_WRITE, 0, 0,
	    "images_upload", 0, E2B_NO, NULL },
	{ HTTP_DELETE, "/v1/images/{name}", h_image_delete, CAP_IMAGE_WRITE, 0,
	    0, "images_delete", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/audit", h_audit, CAP_AUDIT_READ, 0, 0, "audit", 0,
	    E2B_NO, NULL },
	{ HTTP_POST, "/v1/schedules", h_schedule_create, CAP_SCHEDULE_WRITE, 1,
	    1, "schedule_create", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/schedules", h_schedule_list, CAP_SCHEDULE_READ, 0, 0,
	    "schedule_list", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/schedules/{id}", h_schedule_get, CAP_SCHEDULE_READ, 0,
	    0, "schedule_get", 0, E2B_NO, NULL },
	{ HTTP_PATCH, "/v1/schedules/{id}", h_schedule_update,
	    CAP_SCHEDULE_WRITE, 1, 0, "schedule_update", 0, E2B_NO, NULL },
	{ HTTP_DELETE, "/v1/schedules/{id}", h_schedule_delete,
	    CAP_SCHEDULE_WRITE, 0, 0, "schedule_delete", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/schedules/{id}/runs", h_schedule_runs,
	    CAP_SCHEDULE_READ, 0, 0, "schedule_runs", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/contexts", h_context_create, CAP_EXEC, 2, 0,
	    "contexts_create", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/contexts", h_context_list, CAP_SANDBOX_READ, 0, 0,
	    "contexts_list", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/contexts/{name}", h_context_delete, CAP_EXEC, 0, 0,
	    "contexts_delete", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/contexts/{name}/restart", h_context_restart,
	    CAP_EXEC, 2, 0, "contexts_restart", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/contexts/{name}/fork", h_context_fork, CAP_EXEC, 2,
	    0, "contexts_fork", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/contexts/{name}/snapshots", h_context_snapshot,
	    CAP_EXEC, 1, 0, "contexts_snapshot", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/contexts/{name}/snapshots", h_context_snapshots,
	    CAP_SANDBOX_READ, 0, 0, "contexts_snapshots", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/contexts/{name}/snapshots",
	    h_context_snapshot_delete, CAP_EXEC, 0, 0,
	    "contexts_snapshot_delete", 0, E2B_NO, NULL },
	{ HTTP_GET, SBX "/terminal", h_terminal, CAP_EXEC, 0, 0, "terminal", 1,
	    E2B_NO, NULL },
	/* A signed, expiring link to a port (api_ports.c). */
	{ HTTP_POST, SBX "/links", h_port_link, CAP_SANDBOX_READ, 1, 0,
	    "port_link", 0, E2B_NO, NULL },
	/* A guest's server (api_ports.c): any path under the port. */
	{ HTTP_GET, SBX "/ports/{port}/{path}", h_port, CAP_SANDBOX_READ, 0, 0,
	    "ports", 0, E2B_NO, NULL },
	{ HTTP_POST, SBX "/ports/{port}/{path}", h_port, CAP_SANDBOX_READ, 0, 0,
	    "ports", 0, E2B_NO, NULL },
	{ HTTP_PUT, SBX "/ports/{port}/{path}", h_port, CAP_SANDBOX_READ, 0, 0,
	    "ports", 0, E2B_NO, NULL },
	{ HTTP_PATCH, SBX "/ports/{port}/{path}", h_port, CAP_SANDBOX_READ, 0,
	    0, "ports", 0, E2B_NO, NULL },
	{ HTTP_DELETE, SBX "/ports/{port}/{path}", h_port, CAP_SANDBOX_READ, 0,
	    0, "ports", 0, E2B_NO, NULL },
	{ HTTP_GET, "/v1/secrets", h_secret_list, CAP_SECRET_READ, 0, 0,
	    "secrets_list", 0, E2B_NO, NULL },
	{ HTTP_PUT, "/v1/secrets/{name}", h_secret_put, CAP_SECRET_WRITE, 1, 0,
	    "secrets_put", 0, E2B_NO, NULL },
	{ HTTP_DELETE, "/v1/secrets/{name}", h_secret_delete, CAP_SECRET_WRITE,
	    0, 0, "secrets_delete", 0, E2B_NO, NULL },
	/* E2B's API (docs/e2b.md): each route makes the checks of the keep
	 * route it names last, with that route's capability. */
	{ HTTP_POST, "/e2b/v2/sandboxes", h_e2b_sandbox_create,
	    CAP_SANDBOX_WRITE, 1, 0, "e2b_sandbox_create", 0, E2B_API,
	    "sandbox_create" },
	{ HTTP_GET, "/e2b/v2/sandboxes", h_e2b_sandbox_list, CAP_SANDBOX_READ,
	    0, 0, "e2b_sandbox_list", 0, E2B_API, "sandbox_list" },
	{ HTTP_GET, "/e2b/sandboxes/{id}", h_e2b_sandbox_get, CAP_SANDBOX_READ,
	    0, 0, "e2b_sandbox_get", 0, E2B_API, "sandbox_get" },
	{ HTTP_POST, "/e2b/sandboxes/{id}/timeout", h_e2b_sandbox_timeout,
	    CAP_SANDBOX_WRITE, 1, 0, "e2b_sandbox_timeout", 0, E2B_API,
	    "sandbox_timeout" },
	{ HTTP_POST, "/e2b/sandboxes/{id}/pause", h_e2b_sandbox_pause,
	    CAP_SANDBOX_WRITE, 2, 0, "e2b_sandbox_pause", 0, E2B_API,
	    "sandbox_pause" },
	{ HTTP_DELETE, "/e2b/sandboxes/{id}", h_e2b_sandbox_delete,
	    CAP_SANDBOX_WRITE, 0, 0, "e2b_sandbox_delete", 0, E2B_API,
	    "sandbox_delete" },
	{ HTTP_POST, "/e2b/v2/sandboxes/{id}/connect", h_e2b_sandbox_connect,
	    CAP_SANDBOX_WRITE, 2, 0, "e2b_sandbox_connect", 0, E2B_API,
	    "sandbox_token" },
	{ HTTP_GET, "/e2b/health", h_e2b_health, CAP_SANDBOX_READ, 0, 0,
	    "e2b_health", 0, E2B_SBX, "sandbox_get" },
	{ HTTP_POST, "/e2b/execute", h_e2b_execute, CAP_EXEC, 1, 0,
	    "e2b_execute", 1, E2B_SBX, "execute" },
	{ HTTP_POST, "/e2b/contexts", h_e2b_context_create, CAP_EXEC, 2, 0,
	    "e2b_contexts_create", 0, E2B_SBX, "contexts_create" },
	{ HTTP_GET, "/e2b/contexts", h_context_list, CAP_SANDBOX_READ, 0, 0,
	    "e2b_contexts_list", 0, E2B_SBX, "contexts_list" },
	{ HTTP_DELETE, "/e2b/contexts/{name}", h_e2b_context_delete, CAP_EXEC,
	    0, 0, "e2b_contexts_delete", 0, E2B_SBX, "contexts_delete" },
	{ HTTP_POST, "/e2b/contexts/{name}/restart", h_context_restart,
	    CAP_EXEC, 2, 0, "e2b_contexts_restart", 0, E2B_SBX,
	    "contexts_restart" },
	/* E2B's username is keep's sandbox's, and is not asked. */
	{ HTTP_GET, "/e2b/files", h_file_read, CAP_ARTIFACT_READ, 0, 0,
	    "e2b_files_read", 0, E2B_SBX, "files_read" },
	{ HTTP_POST, "/e2b/files", h_e2b_file_write, CAP_ARTIFACT_WRITE, 0, 0,
	    "e2b_files_write", 0, E2B_SBX, "files_write" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/ListDir", h_e2b_list_dir,
	    CAP_ARTIFACT_READ, 1, 0, "e2b_list_dir", 0, E2B_RPC, "files_list" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/Stat", h_e2b_stat,
	    CAP_ARTIFACT_READ, 1, 0, "e2b_stat", 0, E2B_RPC, "files_list" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/MakeDir", h_e2b_make_dir,
	    CAP_ARTIFACT_WRITE, 1, 0, "e2b_make_dir", 0, E2B_RPC,
	    "files_mkdir" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/Remove", h_e2b_remove,
	    CAP_ARTIFACT_WRITE, 1, 0, "e2b_remove", 0, E2B_RPC,
	    "files_remove" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/WatchDir", h_e2b_watch_dir,
	    CAP_ARTIFACT_READ, 0, 0, "e2b_watch_dir", 1, E2B_RPC_STREAM,
	    "files_watch" },
	{ HTTP_POST, "/e2b/filesystem.Filesystem/Move", h_e2b_move,
	    CAP_ARTIFACT_WRITE, 1, 0, "e2b_move", 0, E2B_RPC, "files_write" },
	{ HTTP_POST, "/e2b/process.Process/List", h_e2b_process_list,
	    CAP_SANDBOX_READ, 1, 0, "e2b_process_list", 0, E2B_RPC,
	    "processes" },
	{ HTTP_POST, "/e2b/process.Process/SendSignal", h_e2b_process_signal,
	    CAP_EXEC, 1, 0, "e2b_process_signal", 0, E2B_RPC, "execute_kill" },
	/* A pty's input and size, a command's stdin: keep's terminal's
	 * route decides, as keep's commands/input is decided. */
	{ HTTP_POST, "/e2b/process.Process/SendInput", h_e2b_process_input,
	    CAP_EXEC, 1, 0, "e2b_process_input", 0, E2B_RPC, "terminal" },
	{ HTTP_POST, "/e2b/process.Process/CloseStdin",
	    h_e2b_process_close_stdin, CAP_EXEC, 1, 0,
	    "e2b_process_close_stdin", 0, E2B_RPC, "terminal" },
	{ HTTP_POST, "/e2b/process.Process/Update", h_e2b_process_update,
	    CAP_EXEC, 1, 0, "e2b_process_update", 0, E2B_RPC, "terminal" },
	{ HTTP_POST, "/e2b/process.Process/Start", h_e2b_process_start,
	    CAP_EXEC, 0, 0, "e2b_process_start", 1, E2B_RPC_STREAM,
	    "commands_run" },
	/* Another reader of a command's output: keep's commands/stream. */
	{ HTTP_POST, "/e2b/process.Process/Connect", h_e2b_process_connect,
	    CAP_EXEC, 0, 0, "e2b_process_connect", 1, E2B_RPC_STREAM,
	    "commands_stream" },
};
const size_t api_nroutes = sizeof(api_routes) / sizeof(api_routes[0]);

int
api_test_route(size_t i, const char **pattern)
{
	static const int verb[] = { [HTTP_GET] = 0,
		[HTTP_HEAD] = 1,
		[HTTP_POST] = 2,
		[HTTP_PUT] = 3,
		[HTTP_PATCH] = 4,
		[HTTP_DELETE] = 5,
		[HTTP_OPTIONS] = 6,
		[HTTP_OTHER] = -1 };

	if (i >= api_nroutes)
		return -1;
	*pattern = api_routes[i].pattern;
	return verb[api_routes[i].method];
}

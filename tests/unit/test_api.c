/* Unit tests for host/api over the in-memory fake backend: every route,
 * the exact error envelope, scopes, rate limits, idempotency, SSE. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "host/api/api.h"
#include "host/api/api_int.h"
#include "tests/api_fake.h"

struct env {
	struct api_fake *fake;
	struct api_backend be;
	struct api *api;
	uint64_t now_ms;
};

struct resp {
	int status;
	char head[2048];
	char *body;
	size_t body_len;
	int close;
};

static uint64_t
clock_ms(void *arg)
{
	return ((struct env *)arg)->now_ms;
}

static int64_t
clock_s(void *arg)
{
	return (int64_t)(((struct env *)arg)->now_ms / 1000);
}

static int
setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct api_config cfg;

	assert_non_null(e);
	e->now_ms = 1700000000000ULL;
	e->fake = api_fake_new(clock_s, e);
	api_fake_backend(e->fake, &e->be);
	memset(&cfg, 0, sizeof(cfg));
	cfg.now_ms = clock_ms;
	cfg.now_arg = e;
	e->api = api_new(&e->be, &cfg);
	assert_non_null(e->api);
	api_fake_add_token(e->fake, "admin", "admin", CAP_ALL, NULL, 0);
	api_fake_add_token(e->fake, "reader", "reader",
	    CAP_BIT(CAP_SANDBOX_READ) | CAP_BIT(CAP_ARTIFACT_READ), NULL, 0);
	api_fake_add_token(e->fake, "old", "old", CAP_ALL, NULL, 1000);
	*state = e;
	return 0;
}

static int
teardown(void **state)
{
	struct env *e = *state;

	api_free(e->api);
	api_fake_free(e->fake);
	free(e);
	return 0;
}

static void
resp_free(struct resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* Send one request through the parser and the API; split the reply. */
static void
call(struct env *e, const char *method, const char *target, const char *token,
    const char *extra, const void *body, size_t blen, struct resp *out)
{
	struct http_limits lim;
	struct http_request req;
	struct http_buf in, o;
	char *sep;
	int status;

	memset(out, 0, sizeof(*out));
	http_buf_init(&in);
	http_buf_init(&o);
	http_buf_printf(&in, "%s %s HTTP/1.1\r\nHost: t\r\n", method, target);
	if (token != NULL)
		http_buf_printf(&in, "Authorization: Bearer %s\r\n", token);
	if (extra != NULL)
		http_buf_puts(&in, extra);
	http_buf_printf(&in, "Content-Length: %zu\r\n\r\n", blen);
	http_buf_add(&in, body, blen);
	http_limits_default(&lim);
	assert_int_equal(
	    http_parse_head(in.data, in.len, &lim, &req, &status), HTTP_OK);
	req.body = in.data + req.head_len;
	req.body_len = blen;
	out->close = api_handle(e->api, &req, &o);
	assert_false(o.oom);
	http_buf_add(&o, "", 1);
	assert_int_equal(sscanf(o.data, "HTTP/1.1 %d ", &out->status), 1);
	sep = strstr(o.data, "\r\n\r\n");
	assert_non_null(sep);
	assert_true((size_t)(sep - o.data) < sizeof(out->head));
	memcpy(out->head, o.data, (size_t)(sep - o.data));
	out->body_len = o.len - 1 - (size_t)(sep + 4 - o.data);
	out->body = malloc(out->body_len + 1);
	memcpy(out->body, sep + 4, out->body_len);
	out->body[out->body_len] = '\0';
	http_buf_free(&in);
	http_buf_free(&o);
}

static void
callj(struct env *e, const char *method, const char *target, const char *token,
    const char *json, struct resp *out)
{
	call(
	    e, method, target, token, NULL, json, json ? strlen(json) : 0, out);
}

static json_t *
body_json(const struct resp *r)
{
	json_t *j = json_loads(r->body, 0, NULL);

	assert_non_null(j);
	return j;
}

static const char *
jstr(json_t *j, const char *path)
{
	json_t *v = json_object_get(j, path);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Create a sandbox as admin; returns its id (static storage). */
static const char *
create(struct env *e, char *token_out, size_t toklen)
{
	static char id[80];
	struct resp r;
	json_t *j;

	callj(e, "POST", "/v1/sandboxes", "admin",
	    "{\"image\":\"js\",\"env\":{\"A\":\"1\"},\"ttl\":60}", &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	strlcpy(id, jstr(j, "id"), sizeof(id));
	if (token_out != NULL)
		strlcpy(token_out, jstr(j, "auth_token"), toklen);
	json_decref(j);
	resp_free(&r);
	return id;
}

static void
test_healthz_and_ids(void **state)
{
	struct env *e = *state;
	struct resp r;

	callj(e, "GET", "/healthz", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"status\":\"ok\"}");
	assert_non_null(strstr(r.head, "\r\nX-Request-Id: "));
	resp_free(&r);
	call(
	    e, "GET", "/healthz", NULL, "X-Request-Id: abc-123\r\n", "", 0, &r);
	/* The client's id is kept beside the server's own, never as it. */
	assert_null(strstr(r.head, "\r\nX-Request-Id: abc-123"));
	assert_non_null(strstr(r.head, "\r\nX-Request-Id: "));
	assert_non_null(strstr(r.head, "\r\nX-Client-Request-Id: abc-123"));
	resp_free(&r);
	callj(e, "HEAD", "/healthz", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(r.body_len, 0);
	assert_non_null(strstr(r.head, "Content-Length: 15"));
	resp_free(&r);
	callj(e, "GET", "/v1/openapi.json", NULL, NULL, &r);
	assert_int_equal(r.status, 200);
	json_decref(body_json(&r));
	resp_free(&r);
}

static void
test_errors_exact(void **state)
{
	struct env *e = *state;
	struct resp r;

	callj(e, "GET", "/v1/sandboxes", NULL, NULL, &r);
	assert_int_equal(r.status, 401);
	assert_non_null(strstr(r.head, "\r\nWWW-Authenticate: Bearer"));
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Missing or malformed bearer "
	    "token\",\"code\":\"UNAUTHORIZED\"}}");
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes", "forged", NULL, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes", "old", NULL, &r);
	assert_int_equal(r.status, 401);
	assert_non_null(strstr(r.body, "Token expired"));
	resp_free(&r);
	call(e, "GET", "/v1/sandboxes/sbx-1/files/read?path=a", "reader", NULL,
	    "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	callj(e, "POST", "/v1/sandboxes", "reader", "{\"image\":\"js\"}", &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Missing required capability: "
	    "sandbox:write\",\"code\":\"FORBIDDEN\"}}");
	resp_free(&r);
	callj(e, "GET", "/v1/nothing", "admin", NULL, &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body, "\"code\":\"NOT_FOUND\""));
	resp_free(&r);
	callj(e, "PUT", "/v1/sandboxes", "admin", NULL, &r);
	assert_int_equal(r.status, 405);
	assert_non_null(strstr(r.head, "\r\nAllow: POST, GET, HEAD"));
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes/..%2f/files/read", "admin", NULL, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

static void
test_bad_bodies(void **state)
{
	struct env *e = *state;
	static const char *const bad[] = { "", "[]", "{", "{\"image\":1}",
		"{\"image\":\"js\",\"image\":\"js\"}",
		"{\"image\":\"js\",\"extra\":1}",
		"{\"image\":\"js\",\"ttl\":-1}",
		"{\"image\":\"js\",\"env\":{\"A\":1}}",
		"{\"image\":\"j\\u0000s\"}",
		"{\"image\":\"js\",\"metadata\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
		"[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}" };
	struct resp r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		callj(e, "POST", "/v1/sandboxes", "admin", bad[i], &r);
		assert_int_equal(r.status, 400);
		assert_non_null(strstr(r.body, "\"code\":\"BAD_REQUEST\""));
		resp_free(&r);
	}
	callj(e, "POST", "/v1/sandboxes", "admin", "{\"image\":\"nope\"}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

static void
test_sandbox_lifecycle(void **state)
{
	struct env *e = *state;
	char path[256], tok[256];
	const char *id = create(e, tok, sizeof(tok));
	struct resp r;
	json_t *j;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	callj(e, "GET", path, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(jstr(j, "image"), "js");
	assert_string_equal(jstr(j, "created_at"), "2023-11-14T22:13:20Z");
	assert_string_equal(jstr(j, "expires_at"), "2023-11-14T22:14:20Z");
	json_decref(j);
	resp_free(&r);

	/* The sandbox token reaches its sandbox, and nothing else. */
	callj(e, "GET", path, tok, NULL, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes/sbx-999", tok, NULL, &r);
	assert_int_equal(r.status, 404);
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Sandbox not found\",\"code\":"
	    "\"NOT_FOUND\"}}");
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes", tok, NULL, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_int_equal(json_array_size(json_object_get(j, "sandboxes")), 1);
	json_decref(j);
	resp_free(&r);

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/token", id);
	callj(e, "POST", path, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_non_null(jstr(j, "auth_token"));
	json_decref(j);
	resp_free(&r);

	/* Another principal, with every cap, cannot delete it: the owner
	 * is checked as keepd's vmm checks it. */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s", id);
	api_fake_add_token(e->fake, "other", "other", CAP_ALL, NULL, 0);
	callj(e, "DELETE", path, "other", NULL, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	callj(e, "GET", path, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	callj(e, "DELETE", path, "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	assert_null(strstr(r.head, "Content-Length"));
	resp_free(&r);
	callj(e, "GET", path, "admin", NULL, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

static void
test_pagination(void **state)
{
	struct env *e = *state;
	struct resp r;
	json_t *j;
	char next[64], target[128];
	int total = 0;

	for (int i = 0; i < 5; i++)
		create(e, NULL, 0);
	callj(e, "GET", "/v1/sandboxes?limit=2", "admin", NULL, &r);
	for (;;) {
		json_t *nc;
		assert_int_equal(r.status, 200);
		j = body_json(&r);
		total += (int)json_array_size(json_object_get(j, "sandboxes"));
		nc = json_object_get(j, "next_cursor");
		if (!json_is_string(nc)) {
			json_decref(j);
			resp_free(&r);
			break;
		}
		strlcpy(next, json_string_value(nc), sizeof(next));
		json_decref(j);
		resp_free(&r);
		snprintf(target, sizeof(target),
		    "/v1/sandboxes?limit=2&cursor=%s", next);
		callj(e, "GET", target, "admin", NULL, &r);
	}
	assert_int_equal(total, 5);
	callj(e, "GET", "/v1/sandboxes?limit=0", "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes?limit=1&limit=2", "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
}

static void
test_files_and_commands(void **state)
{
	struct env *e = *state;
	const char *id = create(e, NULL, 0);
	char p[256];
	struct resp r;
	json_t *j;

	snprintf(
	    p, sizeof(p), "/v1/sandboxes/%s/files/write?path=dir%%2Fa.txt", id);
	call(e, "POST", p, "admin", NULL, "hello", 5, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{\"path\":\"dir/a.txt\",\"size\":5}");
	resp_free(&r);
	snprintf(
	    p, sizeof(p), "/v1/sandboxes/%s/files/read?path=dir/a.txt", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "hello");
	assert_non_null(strstr(r.head, "application/octet-stream"));
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/exists?path=nope", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_string_equal(r.body, "{\"path\":\"nope\",\"exists\":false}");
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/list?path=dir", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"name\":\"a.txt\""));
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/read?path=../x", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/read", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/files/mkdir?path=d2", id);
	callj(e, "POST", p, "admin", NULL, &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/run", id);
	callj(e, "POST", p, "admin",
	    "{\"cmd\":\"sha256sum\",\"args\":[\"dir/a.txt\"]}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(jstr(j, "stdout"),
	    "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
	    "  dir/a.txt\n");
	assert_int_equal(
	    json_integer_value(json_object_get(j, "exit_code")), 0);
	json_decref(j);
	resp_free(&r);
	/* A cwd: a directory of the workspace, else 404 as a spawn's
	 * ENOENT; relative, NUL or ".." are 400. */
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"/d2\"}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(jstr(j, "stdout"), "/d2\n");
	json_decref(j);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"/nope\"}", &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body, "cwd"));
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"/dir/a.txt\"}",
	    &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"d2\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(
	    e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"/d2/..\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "POST", p, "admin",
	    "{\"cmd\":\"pwd\",\"cwd\":\"/d2\\u0000x\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":7}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/background", id);
	callj(e, "POST", p, "admin", "{\"cmd\":\"pwd\",\"cwd\":\"/nope\"}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/run", id);
	callj(e, "POST", p, "admin", "{\"cmd\":\"sh -c 'id'\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"/bin/sh\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"cmd\":\"curl\"}", &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Command not allowed: curl\",\"code\":"
	    "\"FORBIDDEN\"}}");
	resp_free(&r);

	snprintf(
	    p, sizeof(p), "/v1/sandboxes/%s/files/remove?path=dir/a.txt", id);
	callj(e, "DELETE", p, "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
}

static void
test_execute_sse(void **state)
{
	struct env *e = *state;
	const char *id = create(e, NULL, 0);
	char p[256];
	struct resp r;

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute", id);
	callj(e, "POST", p, "admin",
	    "{\"code\":\"1+1\",\"language\":\"javascript\"}", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body,
	    "{\"stdout\":\"javascript: "
	    "1+1\\n\",\"stderr\":\"\",\"exit_code\":0,"
	    "\"duration_ms\":1,\"reason\":null}");
	resp_free(&r);
	call(e, "POST", p, "admin", "Accept: text/event-stream\r\n",
	    "{\"code\":\"failoops\"}", 19, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "Content-Type: text/event-stream"));
	assert_string_equal(r.body,
	    "event: stderr\ndata: {\"data\":\"oops\"}\n\n"
	    "event: exit\ndata: {\"exit_code\":1,\"duration_ms\":1,"
	    "\"reason\":null}\n\n");
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"code\":\"loop\",\"timeout\":100}", &r);
	assert_non_null(strstr(r.body, "\"reason\":\"timeout\""));
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"code\":\"x\",\"language\":\"cobol\"}",
	    &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute/background", id);
	callj(e, "POST", p, "admin", "{\"code\":\"x\"}", &r);
	assert_int_equal(r.status, 202);
	assert_string_equal(r.body, "{\"pid\":100}");
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute/processes", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_non_null(strstr(r.body, "\"pid\":100"));
	resp_free(&r);
	snprintf(p, sizeof(p),
	    "/v1/sandboxes/%s/execute/kill?pid=100&signal=STOP", id);
	callj(e, "POST", p, "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p),
	    "/v1/sandboxes/%s/execute/kill?pid=100&signal=TERM&signal=KILL",
	    id);
	callj(e, "POST", p, "admin", NULL, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p),
	    "/v1/sandboxes/%s/execute/kill?pid=100&signal=TERM", id);
	callj(e, "POST", p, "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute/processes", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_non_null(strstr(r.body, "\"exit_code\":143"));
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute/kill?pid=100", id);
	callj(e, "POST", p, "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/execute/async", id);
	callj(e, "POST", p, "admin",
	    "{\"code\":\"x\",\"webhook_url\":\"https://h.example/\"}", &r);
	assert_int_equal(r.status, 202);
	resp_free(&r);
}

static void
test_env_system(void **state)
{
	struct env *e = *state;
	const char *id = create(e, NULL, 0);
	char p[256];
	struct resp r;

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/env", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_string_equal(r.body, "{\"env\":{\"A\":\"1\"}}");
	resp_free(&r);
	callj(e, "PATCH", p, "admin", "{\"env\":{\"B\":\"2\"}}", &r);
	assert_string_equal(r.body, "{\"env\":{\"A\":\"1\",\"B\":\"2\"}}");
	resp_free(&r);
	callj(e, "PUT", p, "admin", "{\"env\":{\"C\":\"3\"}}", &r);
	assert_string_equal(r.body, "{\"env\":{\"C\":\"3\"}}");
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/env?key=C", id);
	callj(e, "DELETE", p, "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/system", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"budget_remaining\":null"));
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/processes", id);
	callj(e, "GET", p, "admin", NULL, &r);
	assert_string_equal(r.body, "{\"processes\":[]}");
	resp_free(&r);
}

static void
test_rate_and_policy(void **state)
{
	struct env *e = *state;
	struct resp r;

	api_fake_add_token(e->fake, "limited", "limited", CAP_ALL, NULL, 0);
	api_fake_set_rate(e->fake, "limited", 2, 7);
	for (int i = 0; i < 2; i++) {
		callj(e, "GET", "/v1/sandboxes", "limited", NULL, &r);
		assert_int_equal(r.status, 200);
		resp_free(&r);
	}
	callj(e, "GET", "/v1/sandboxes", "limited", NULL, &r);
	assert_int_equal(r.status, 429);
	assert_non_null(strstr(r.head, "\r\nRetry-After: 7"));
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Rate limit exceeded\",\"code\":"
	    "\"RATE_LIMITED\"}}");
	resp_free(&r);

	api_fake_deny(e->fake, "admin", CAP_AUDIT_READ);
	callj(e, "GET", "/v1/audit", "admin", NULL, &r);
	assert_int_equal(r.status, 403);
	assert_string_equal(r.body,
	    "{\"error\":{\"message\":\"Missing required capability: "
	    "audit:read\",\"code\":\"FORBIDDEN\"}}");
	resp_free(&r);
	callj(e, "POST", "/v1/policy/check", "admin",
	    "{\"principal\":\"admin\",\"capability\":\"audit:read\"}", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"decision\":\"deny\""));
	resp_free(&r);
	callj(e, "POST", "/v1/policy/check", "admin",
	    "{\"principal\":\"admin\",\"capability\":\"fly\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "GET", "/v1/policy", "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
}

static void
test_tokens(void **state)
{
	struct env *e = *state;
	struct resp r;
	json_t *j;
	char tok[256];

	callj(e, "POST", "/v1/tokens", "reader",
	    "{\"caps\":[\"sandbox:write\"]}", &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
	callj(e, "POST", "/v1/tokens", "reader",
	    "{\"caps\":[\"sandbox:read\"],\"ttl\":60}", &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	strlcpy(tok, jstr(j, "token"), sizeof(tok));
	json_decref(j);
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes", tok, NULL, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	/* The narrower token cannot read files any more. */
	call(e, "GET", "/v1/sandboxes/sbx-1/files/read?path=a", tok, NULL, "",
	    0, &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
	/* And it expires with its ttl. */
	e->now_ms += 61000;
	callj(e, "GET", "/v1/sandboxes", tok, NULL, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
}

static void
test_idempotency(void **state)
{
	struct env *e = *state;
	struct resp a, b, c;

	call(e, "POST", "/v1/sandboxes", "admin", "Idempotency-Key: k1\r\n",
	    "{\"image\":\"js\"}", 14, &a);
	call(e, "POST", "/v1/sandboxes", "admin", "Idempotency-Key: k1\r\n",
	    "{\"image\":\"js\"}", 14, &b);
	assert_int_equal(a.status, 201);
	assert_int_equal(b.status, 201);
	assert_string_equal(a.body, b.body);
	assert_non_null(strstr(b.head, "Idempotent-Replayed: true"));
	call(e, "POST", "/v1/sandboxes", "admin", "Idempotency-Key: k1\r\n",
	    "{\"image\":\"hello\"}", 17, &c);
	assert_int_equal(c.status, 409);
	assert_non_null(strstr(c.body, "\"code\":\"CONFLICT\""));
	resp_free(&a);
	resp_free(&b);
	resp_free(&c);
	/* After 24 h the key is forgotten. */
	e->now_ms += 25ULL * 3600 * 1000;
	call(e, "POST", "/v1/sandboxes", "admin", "Idempotency-Key: k1\r\n",
	    "{\"image\":\"hello\"}", 17, &c);
	assert_int_equal(c.status, 201);
	resp_free(&c);
}

/* The replies kept for retries are bounded in bytes, not only in
 * number: the oldest go, and /metrics says how many bytes are kept. */
static void
test_idempotency_bytes(void **state)
{
	struct env *e = *state;
	struct api_config cfg;
	struct resp a;
	char key[64];
	const char *m;

	api_free(e->api);
	memset(&cfg, 0, sizeof(cfg));
	cfg.now_ms = clock_ms;
	cfg.now_arg = e;
	cfg.idem_bytes_max = 2048;
	e->api = api_new(&e->be, &cfg);
	assert_non_null(e->api);
	for (int i = 0; i < 40; i++) {
		snprintf(key, sizeof(key), "Idempotency-Key: b%d\r\n", i);
		call(e, "POST", "/v1/sandboxes", "admin", key,
		    "{\"image\":\"js\"}", 14, &a);
		assert_int_equal(a.status, 201);
		resp_free(&a);
		callj(e, "GET", "/metrics", "admin", NULL, &a);
		assert_int_equal(a.status, 200);
		m = strstr(a.body, "\nkeep_idempotency_bytes ");
		assert_non_null(m);
		assert_true(strtoull(m + 24, NULL, 10) <= 2048);
		assert_true(strtoull(m + 24, NULL, 10) > 0);
		resp_free(&a);
	}
}

static void
test_images_audit_metrics(void **state)
{
	struct env *e = *state;
	struct resp r;

	callj(e, "GET", "/v1/images", "admin", NULL, &r);
	assert_non_null(strstr(r.body, "\"name\":\"python\""));
	resp_free(&r);
	call(e, "POST", "/v1/images", "admin", NULL, "junk", 4, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	call(e, "POST", "/v1/images", "admin", NULL, "KEEPIMG1....", 12, &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	callj(e, "DELETE", "/v1/images/uploaded", "admin", NULL, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	callj(e, "GET", "/v1/audit?limit=2", "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"next_cursor\":\"3\""));
	resp_free(&r);
	callj(e, "GET", "/metrics", "admin", NULL, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body,
	    "keep_http_requests_total{route=\"images_list\",code=\"200\"} 1"));
	assert_non_null(
	    strstr(r.body, "keep_decisions_total{result=\"allow\"}"));
	assert_non_null(strstr(r.body, "keep_sandboxes 0"));
	resp_free(&r);
	callj(e, "GET", "/metrics", "reader", NULL, &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
}

/* Every route the router serves is documented, with its capability. */
static void
test_openapi_covers_routes(void **state)
{
	static const char *const verbs[] = { "get", "head", "post", "put",
		"patch", "delete", "options" };
	json_t *doc =
	    json_loadb(api_openapi_json, api_openapi_json_len, 0, NULL);
	json_t *paths = json_object_get(doc, "paths");
	const char *path;
	json_t *item;
	size_t documented = 0;

	(void)state;
	assert_non_null(doc);
	assert_non_null(paths);
	json_object_foreach(paths, path, item)
	{
		for (size_t v = 0; v < sizeof(verbs) / sizeof(verbs[0]); v++) {
			json_t *op = json_object_get(item, verbs[v]);
			if (op == NULL)
				continue;
			documented++;
			assert_non_null(
			    json_object_get(op, "x-keep-capability"));
			assert_non_null(json_object_get(op, "responses"));
		}
	}
	for (size_t i = 0; api_test_route(i, &path) >= 0; i++) {
		const char *verb = verbs[api_test_route(i, &path)];
		item = json_object_get(paths, path);
		if (item == NULL || json_object_get(item, verb) == NULL)
			fail_msg("undocumented route: %s %s", verb, path);
	}
	assert_true(documented >= 30);
	json_decref(doc);
}

/* A port's host name (api_ports.c): "{port}-{id}.DOMAIN[:port]", any
 * case; everything else is keepd's own API. */
static long
port_host(struct api *a, const char *host, char *id, char *port)
{
	static char buf[512];
	struct http_limits lim;
	struct http_request req;
	int status;

	snprintf(buf, sizeof(buf), "GET /x HTTP/1.1\r\nHost: %s\r\n\r\n", host);
	http_limits_default(&lim);
	assert_int_equal(
	    http_parse_head(buf, strlen(buf), &lim, &req, &status), HTTP_OK);
	id[0] = port[0] = '\0';
	return api_port_host(a, &req, id, port);
}

static void
test_port_host(void **state)
{
	struct env *e = *state;
	char id[API_ID_MAX + 1], port[API_ID_MAX + 1];
	static const char *const refused[] = { "8000-sbx-1.other.test",
		"sbx.keep.test", "-sbx-1.sbx.keep.test", "8000.sbx.keep.test",
		"123456-sbx-1.sbx.keep.test", "80x0-sbx-1.sbx.keep.test",
		"8000-.sbx.keep.test", "8000-a.b.sbx.keep.test",
		"8000-sbx-1.xsbx.keep.test", "8000-sbx-1.sbx.keep.test.",
		"8000-sbx-1.sbx.keep.test:80x" };

	/* No domain: never. */
	assert_int_equal(
	    port_host(e->api, "8000-sbx-1.sbx.keep.test", id, port), -1);
	api_set_ports_domain(e->api, "sbx.keep.test");
	assert_true(
	    port_host(e->api, "8000-sbx-1.sbx.keep.test", id, port) >= 0);
	assert_string_equal(port, "8000");
	assert_string_equal(id, "sbx-1");
	assert_true(port_host(e->api, "3000-SBX-Ab1.SBX.Keep.Test:8421", id,
	                port) >= 0);
	assert_string_equal(port, "3000");
	assert_string_equal(id, "sbx-ab1");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		if (port_host(e->api, refused[i], id, port) != -1)
			fail_msg("accepted %s", refused[i]);
	api_set_ports_domain(e->api, NULL);
}

/* Where a port's link travels (api_link.c): keep_link in a query and in
 * a Cookie header, found whole, and taken out of what the guest gets. */
static void
test_link_parse(void **state)
{
	const char *v;
	size_t vl, pos = 0;
	struct http_buf b;
	static const char q[] = "a=1&keep_link=v4.public.x_y-z&b=2";
	static const char ck[] = "theme=dark; keep_link=v4.public.c1 ;x;"
	                         "keep_link=v4.public.c2";

	(void)state;
	assert_int_equal(api_link_query(q, strlen(q), &v, &vl), 1);
	assert_int_equal(vl, strlen("v4.public.x_y-z"));
	assert_memory_equal(v, "v4.public.x_y-z", vl);
	assert_int_equal(api_link_query("a=1&b", 5, &v, &vl), 0);
	assert_int_equal(api_link_query(NULL, 0, &v, &vl), 0);
	/* twice, empty, without '=', or a byte no link has: malformed */
	assert_int_equal(
	    api_link_query("keep_link=a&keep_link=a", 23, &v, &vl), -1);
	assert_int_equal(api_link_query("keep_link=", 10, &v, &vl), -1);
	assert_int_equal(api_link_query("keep_link", 9, &v, &vl), -1);
	assert_int_equal(api_link_query("keep_link=a%20b", 15, &v, &vl), -1);
	/* a longer name is another parameter */
	assert_int_equal(api_link_query("keep_links=a", 12, &v, &vl), 0);

	http_buf_init(&b);
	api_link_query_strip(q, strlen(q), &b);
	assert_int_equal(b.len, 7);
	assert_memory_equal(b.data, "a=1&b=2", 7);
	b.len = 0;
	api_link_query_strip("keep_link=x", 11, &b);
	assert_int_equal(b.len, 0);

	assert_int_equal(api_link_cookie(ck, strlen(ck), &pos, &v, &vl), 1);
	assert_memory_equal(v, "v4.public.c1", vl);
	assert_int_equal(vl, 12);
	assert_int_equal(api_link_cookie(ck, strlen(ck), &pos, &v, &vl), 1);
	assert_memory_equal(v, "v4.public.c2", vl);
	assert_int_equal(api_link_cookie(ck, strlen(ck), &pos, &v, &vl), 0);
	pos = 0;
	assert_int_equal(
	    api_link_cookie("keep_link=\"q\"", 13, &pos, &v, &vl), -1);
	b.len = 0;
	assert_int_equal(api_link_cookie_strip(ck, strlen(ck), &b), 2);
	assert_int_equal(b.len, strlen("theme=dark; x"));
	assert_memory_equal(b.data, "theme=dark; x", b.len);
	b.len = 0;
	assert_int_equal(api_link_cookie_strip("keep_link=a", 11, &b), 0);
	http_buf_free(&b);

	assert_false(api_link_value_ok("", 0));
	assert_false(api_link_value_ok("a b", 3));
	assert_true(api_link_value_ok("v4.public.AZaz09-_", 18));
}

static void
test_refuse(void **state)
{
	struct env *e = *state;
	struct http_buf o;

	http_buf_init(&o);
	api_refuse(e->api, 431, &o);
	http_buf_add(&o, "", 1);
	assert_non_null(strstr(o.data, "HTTP/1.1 431 "));
	assert_non_null(strstr(o.data, "Connection: close"));
	assert_non_null(strstr(o.data, "\"code\":\"BAD_REQUEST\""));
	http_buf_free(&o);
}

/* Every route is served: api_new refuses a backend that lacks an op
 * (but the optional ones), so no route needs a "not available" branch. */
static void
test_backend_complete(void **state)
{
	struct env *e = *state;
	struct api_backend be;
	struct api *a;

	be = e->be;
	be.metrics = NULL;
	be.idem_load = NULL;
	be.idem_keep = NULL;
	a = api_new(&be, NULL);
	assert_non_null(a);
	api_free(a);
	be = e->be;
	be.sandbox_lock = NULL;
	assert_null(api_new(&be, NULL));
	be = e->be;
	be.authorize = NULL;
	assert_null(api_new(&be, NULL));
	be = e->be;
	be.audit_list = NULL;
	assert_null(api_new(&be, NULL));
	assert_null(api_new(NULL, NULL));
}

/* A command's stdin stream and readers (commands/input, commands/stream):
 * malformed requests are 400, a pid that is no streaming command of the
 * caller's 404, oversized input 413; stdin_stream needs an event stream
 * and is not served in the background. */
static void
test_command_input(void **state)
{
	struct env *e = *state;
	const char *id = create(e, NULL, 0);
	static const char *const bad[] = {
		"{}",
		"{\"pid\":0,\"data\":\"x\"}",
		"{\"pid\":-1,\"data\":\"x\"}",
		"{\"pid\":1}",
		"{\"pid\":1,\"eof\":false}",
		"{\"pid\":1,\"eof\":\"yes\"}",
		"{\"pid\":1,\"data\":7}",
		"{\"pid\":1,\"data\":\"a\",\"data_base64\":\"YQ==\"}",
		"{\"pid\":1,\"data\":\"a\",\"x\":1}",
		"{\"pid\":\"1\",\"data\":\"a\"}",
	};
	char p[256], *big;
	size_t n = 65537 * 4 / 3 + 64;
	struct resp r;

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/input", id);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		callj(e, "POST", p, "admin", bad[i], &r);
		if (r.status != 400)
			fail_msg("%s: %d %s", bad[i], r.status, r.body);
		resp_free(&r);
	}
	callj(e, "POST", p, "admin", "{\"pid\":1,\"data_base64\":\"!!\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"pid\":77,\"data\":\"x\"}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	callj(e, "POST", p, "admin", "{\"pid\":77,\"eof\":true}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	/* 65537 bytes, as text and as base64: 413 before any lookup. */
	assert_non_null(big = malloc(n + 65537));
	strcpy(big, "{\"pid\":77,\"data\":\"");
	memset(big + strlen(big), 'a', 65537);
	strcpy(big + 18 + 65537, "\"}");
	callj(e, "POST", p, "admin", big, &r);
	if (r.status != 413)
		fail_msg("oversized data: %d %s", r.status, r.body);
	resp_free(&r);
	strcpy(big, "{\"pid\":77,\"data_base64\":\"");
	memset(big + strlen(big), 'Y', 87388);
	strcpy(big + 25 + 87388, "\"}");
	callj(e, "POST", p, "admin", big, &r);
	if (r.status != 413)
		fail_msg("oversized data_base64: %d %s", r.status, r.body);
	resp_free(&r);
	free(big);

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/stream?pid=77", id);
	call(e, "GET", p, "admin", NULL, NULL, 0, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	call(
	    e, "GET", p, "admin", "Accept: text/event-stream\r\n", NULL, 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/stream?pid=x", id);
	call(
	    e, "GET", p, "admin", "Accept: text/event-stream\r\n", NULL, 0, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);

	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/run", id);
	callj(e, "POST", p, "admin", "{\"cmd\":\"cat\",\"stdin_stream\":true}",
	    &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	call(e, "POST", p, "admin", "Accept: text/event-stream\r\n",
	    "{\"cmd\":\"cat\",\"stdin_stream\":true,\"stdin\":\"x\"}", 45, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	callj(
	    e, "POST", p, "admin", "{\"cmd\":\"cat\",\"stdin_stream\":1}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(p, sizeof(p), "/v1/sandboxes/%s/commands/background", id);
	callj(e, "POST", p, "admin", "{\"cmd\":\"cat\",\"stdin_stream\":true}",
	    &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
}

/* The lock and revoke routes over the fake, which serves them too. */
static void
test_lock_and_revoke(void **state)
{
	struct env *e = *state;
	char path[160], hdr[160];
	const char *id = create(e, NULL, 0);
	struct resp r;
	json_t *j;

	snprintf(path, sizeof(path), "/v1/sandboxes/%s/lock", id);
	callj(e, "DELETE", path, "admin", NULL, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	callj(e, "POST", path, "admin", "{\"ttl\":30}", &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	snprintf(hdr, sizeof(hdr), "Keep-Lock: %s\r\n", jstr(j, "lock_id"));
	json_decref(j);
	resp_free(&r);
	callj(e, "POST", path, "admin", "{}", &r);
	assert_int_equal(r.status, 409);
	resp_free(&r);
	call(e, "DELETE", path, "admin", hdr, "", 0, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);

	callj(e, "GET", "/v1/sandboxes", "reader", NULL, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	callj(e, "POST", "/v1/tokens/revoke", "reader", "{\"jti\":\"jti-1\"}",
	    &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
	callj(
	    e, "POST", "/v1/tokens/revoke", "admin", "{\"jti\":\"jti-1\"}", &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	callj(e, "GET", "/v1/sandboxes", "reader", NULL, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_healthz_and_ids),
		T(test_errors_exact),
		T(test_bad_bodies),
		T(test_sandbox_lifecycle),
		T(test_pagination),
		T(test_files_and_commands),
		T(test_execute_sse),
		T(test_env_system),
		T(test_rate_and_policy),
		T(test_tokens),
		T(test_idempotency),
		T(test_idempotency_bytes),
		T(test_images_audit_metrics),
		T(test_refuse),
		T(test_port_host),
		cmocka_unit_test(test_link_parse),
		T(test_openapi_covers_routes),
		T(test_backend_complete),
		T(test_lock_and_revoke),
		T(test_command_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

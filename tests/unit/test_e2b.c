/*
 * Unit tests for E2B's routes (host/api/api_e2b.c, api_e2b_rpc.c) over
 * the fake backend: each route is checked as keep's own, tokens and sandboxes come from
 * E2B's headers, errors have E2B's and Connect's shapes, a cell without
 * a context runs in one default context, an upload of several files is
 * decided once per file, a command's reply is Connect's stream. The
 * wire formats alone are test_e2b_wire.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <sodium.h>

#include "host/api/api_int.h"
#include "host/api/e2b_wire.h"
#include "tests/api_fake.h"

struct env {
	struct api_fake *fake;
	struct api_backend be;
	struct api *api;
	char sbx[API_ID_MAX + 1];
	char tok[API_TOKEN_MAX];
};

struct resp {
	int status;
	char head[2048];
	char *body;
	size_t body_len;
};

static int64_t
clock_s(void *arg)
{
	(void)arg;
	return 1700000000;
}

static void
resp_free(struct resp *r)
{
	free(r->body);
	memset(r, 0, sizeof(*r));
}

/* One request (head lines in extra, each ending in CRLF) through the
 * parser and the API. */
static void
call(struct env *e, const char *method, const char *target, const char *extra,
    const void *body, size_t blen, struct resp *out)
{
	struct http_limits lim;
	struct http_request req;
	struct http_buf in, o;
	char *sep;
	int status;

	memset(out, 0, sizeof(*out));
	http_buf_init(&in);
	http_buf_init(&o);
	http_buf_printf(&in, "%s %s HTTP/1.1\r\nHost: t\r\n%s", method, target,
	    extra != NULL ? extra : "");
	http_buf_printf(&in, "Content-Length: %zu\r\n\r\n", blen);
	http_buf_add(&in, body, blen);
	http_limits_default(&lim);
	assert_int_equal(
	    http_parse_head(in.data, in.len, &lim, &req, &status), HTTP_OK);
	req.body = in.data + req.head_len;
	req.body_len = blen;
	api_handle(e->api, &req, &o);
	assert_false(o.oom);
	assert_int_equal(sscanf(o.data, "HTTP/1.1 %d ", &out->status), 1);
	http_buf_add(&o, "", 1);
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

/* A sandbox route of the test's sandbox, with its token. */
static void
sbx_call(struct env *e, const char *method, const char *target,
    const char *ctype, const void *body, size_t blen, struct resp *out)
{
	char extra[4096];

	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n%s%s%s", e->sbx,
	    e->tok, ctype != NULL ? "Content-Type: " : "",
	    ctype != NULL ? ctype : "", ctype != NULL ? "\r\n" : "");
	call(e, method, target, extra, body, blen, out);
}

static void
sbx_json(struct env *e, const char *target, const char *json, struct resp *out)
{
	sbx_call(
	    e, "POST", target, "application/json", json, strlen(json), out);
}

static json_t *
body_json(const struct resp *r)
{
	json_t *j = json_loads(r->body, 0, NULL);

	assert_non_null(j);
	return j;
}

static const char *
jstr(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

static int
setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct resp r;
	json_t *j;
	static const char create[] =
	    "{\"templateID\":\"code-interpreter-v1\",\"timeout\":60,"
	    "\"metadata\":{\"a\":\"b\"},\"envVars\":{\"K\":\"V\"},"
	    "\"secure\":true,\"allow_internet_access\":true,"
	    "\"volumeMounts\":[],\"autoPause\":false}";

	assert_non_null(e);
	e->fake = api_fake_new(clock_s, e);
	api_fake_backend(e->fake, &e->be);
	e->api = api_new(&e->be, NULL);
	assert_non_null(e->api);
	api_fake_add_token(e->fake, "admin", "admin", CAP_ALL, NULL, 0);
	api_fake_add_token(e->fake, "bob", "bob", CAP_ALL, NULL, 0);
	call(e, "POST", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n", create,
	    strlen(create), &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	strlcpy(e->sbx, jstr(j, "sandboxID"), sizeof(e->sbx));
	strlcpy(e->tok, jstr(j, "envdAccessToken"), sizeof(e->tok));
	json_decref(j);
	resp_free(&r);
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

/* Every E2B route makes the checks of a keep route of its capability. */
static void
test_routes_checked_as(void **state)
{
	size_t n = 0;

	(void)state;
	for (size_t i = 0; i < api_nroutes; i++) {
		const struct api_route *rt = &api_routes[i], *k = NULL;

		if (rt->e2b == E2B_NO) {
			assert_null(rt->as);
			assert_int_not_equal(
			    strncmp(rt->pattern, "/e2b/", 5), 0);
			continue;
		}
		n++;
		assert_int_equal(strncmp(rt->pattern, "/e2b/", 5), 0);
		assert_non_null(rt->as);
		for (size_t j = 0; j < api_nroutes && k == NULL; j++)
			if (api_routes[j].e2b == E2B_NO &&
			    strcmp(api_routes[j].name, rt->as) == 0)
				k = &api_routes[j];
		if (k == NULL)
			fail_msg("%s: no keep route %s", rt->name, rt->as);
		if (k->cap != rt->cap)
			fail_msg("%s: capability %d, %s's is %d", rt->name,
			    rt->cap, rt->as, k->cap);
		/* The id comes from the header, or from the path as keep's. */
		assert_true(rt->e2b >= E2B_SBX ||
		    (strstr(rt->pattern, "{id}") != NULL) ==
		        (strstr(k->pattern, "{id}") != NULL));
	}
	assert_true(n >= 16);
}

static void
test_create_get_kill(void **state)
{
	struct env *e = *state;
	struct resp r;
	char path[128];
	json_t *j;

	call(e, "GET", "/e2b/sandboxes/sbx-1", "X-API-KEY: admin\r\n", "", 0,
	    &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(jstr(j, "sandboxID"), e->sbx);
	assert_string_equal(jstr(j, "templateID"), "machine");
	assert_string_equal(jstr(j, "envdVersion"), "0.5.2");
	assert_string_equal(jstr(json_object_get(j, "metadata"), "a"), "b");
	json_decref(j);
	resp_free(&r);

	/* What keep would not honour is said, not ignored. */
	static const char *const refused[] = {
		"{\"templateID\":\"python\",\"allow_internet_access\":false}",
		"{\"templateID\":\"python\",\"mcp\":{}}",
		"{\"templateID\":\"python\",\"network\":{\"denyOut\":[]}}",
		"{\"templateID\":\"python\",\"autoPause\":true}",
		"{\"templateID\":\"python\",\"volumeMounts\":[{}]}",
		"{\"templateID\":\"python\",\"unknown\":1}",
		"{\"templateID\":7}",
		"{}",
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		call(e, "POST", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n",
		    refused[i], strlen(refused[i]), &r);
		assert_int_equal(r.status, 400);
		j = body_json(&r);
		assert_int_equal(
		    json_integer_value(json_object_get(j, "code")), 400);
		assert_string_equal(
		    jstr(json_object_get(j, "error"), "code"), "BAD_REQUEST");
		json_decref(j);
		resp_free(&r);
	}
	call(e, "POST", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n",
	    "{\"templateID\":\"nope\"}", 21, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);

	/* Connect: a new token of the sandbox; no new timeout. */
	snprintf(path, sizeof(path), "/e2b/v2/sandboxes/%s/connect", e->sbx);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"memory\":false}", 16,
	    &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	assert_string_equal(jstr(j, "sandboxID"), e->sbx);
	assert_string_not_equal(jstr(j, "envdAccessToken"), e->tok);
	assert_string_equal(
	    jstr(j, "trafficAccessToken"), jstr(j, "envdAccessToken"));
	json_decref(j);
	resp_free(&r);
	/* With a timeout: the end moves first (from now), as setTimeout's. */
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"timeout\":60}", 14,
	    &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	call(
	    e, "POST", path, "X-API-KEY: admin\r\n", "{\"timeout\":0}", 13, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);

	/* setTimeout: 204, the end moved; 0 or past 30 days is 400; keep's
	 * own route answers the sandbox with its new end. */
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s/timeout", e->sbx);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"timeout\":7200}", 16,
	    &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	call(
	    e, "POST", path, "X-API-KEY: admin\r\n", "{\"timeout\":0}", 13, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"timeout\":2592001}",
	    19, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s", e->sbx);
	call(e, "GET", path, "X-API-KEY: admin\r\n", "", 0, &r);
	j = body_json(&r);
	assert_string_not_equal(jstr(j, "endAt"), "");
	json_decref(j);
	resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/timeout", e->sbx);
	call(e, "POST", path,
	    "Authorization: Bearer admin\r\nContent-Type: application/json\r\n",
	    "{\"ttl_s\":60}", 12, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, e->sbx));
	resp_free(&r);

	/* Pause: 204, then 409 (the SDK's false); paused in getInfo and
	 * keep's status, not running to envd's health; connect resumes. */
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s/pause", e->sbx);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"memory\":true}", 15,
	    &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{}", 2, &r);
	assert_int_equal(r.status, 409);
	resp_free(&r);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{\"memory\":1}", 12, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s", e->sbx);
	call(e, "GET", path, "X-API-KEY: admin\r\n", "", 0, &r);
	j = body_json(&r);
	assert_string_equal(jstr(j, "state"), "paused");
	json_decref(j);
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/health", NULL, "", 0, &r);
	assert_int_equal(r.status, 502);
	resp_free(&r);
	snprintf(path, sizeof(path), "/e2b/v2/sandboxes/%s/connect", e->sbx);
	call(e, "POST", path, "X-API-KEY: admin\r\n", "{}", 2, &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s", e->sbx);
	call(e, "GET", path, "X-API-KEY: admin\r\n", "", 0, &r);
	j = body_json(&r);
	assert_string_equal(jstr(j, "state"), "running");
	json_decref(j);
	resp_free(&r);
	/* keep's own: pause says paused, resume running. */
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/pause", e->sbx);
	call(e, "POST", path, "Authorization: Bearer admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"status\":\"paused\""));
	resp_free(&r);
	snprintf(path, sizeof(path), "/v1/sandboxes/%s/resume", e->sbx);
	call(e, "POST", path, "Authorization: Bearer admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"status\":\"running\""));
	resp_free(&r);

	/* Kill: 204, then E2B's 404 (the SDK's false). */
	snprintf(path, sizeof(path), "/e2b/sandboxes/%s", e->sbx);
	call(e, "DELETE", path, "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	call(e, "DELETE", path, "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	/* envd's health of a sandbox gone: 502, as E2B's proxy. */
	sbx_call(e, "GET", "/e2b/health", NULL, "", 0, &r);
	assert_int_equal(r.status, 502);
	resp_free(&r);
}

static void
test_credentials(void **state)
{
	struct env *e = *state;
	struct resp r;
	char extra[4096];
	json_t *j;

	call(e, "POST", "/e2b/v2/sandboxes", NULL, "{}", 2, &r);
	assert_int_equal(r.status, 401);
	j = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "code")), 401);
	assert_string_equal(
	    jstr(json_object_get(j, "error"), "code"), "UNAUTHORIZED");
	json_decref(j);
	resp_free(&r);
	/* Two different tokens: which one counts is nobody's guess. */
	call(e, "GET", "/e2b/sandboxes/sbx-1",
	    "X-API-KEY: admin\r\nAuthorization: Bearer bob\r\n", "", 0, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	/* A sandbox's access token beside the API key is not ignored. */
	call(e, "GET", "/e2b/sandboxes/sbx-1",
	    "X-API-KEY: admin\r\nX-Access-Token: bob\r\n", "", 0, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	/* The same one twice, and E2B's Basic user name beside it: fine. */
	call(e, "GET", "/e2b/sandboxes/sbx-1",
	    "X-API-KEY: admin\r\nAuthorization: Bearer admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nE2B-Traffic-Access-Token: %s\r\n"
	    "Authorization: Basic dXNlcjo=\r\n",
	    e->sbx, e->tok);
	call(e, "GET", "/e2b/health", extra, "", 0, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
	    "E2B-Traffic-Access-Token: admin\r\n",
	    e->sbx, e->tok);
	call(e, "GET", "/e2b/health", extra, "", 0, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	/* The API key is not a sandbox route's token header, and another
	 * one beside its token is refused, not ignored. */
	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nX-API-KEY: admin\r\n", e->sbx);
	call(e, "GET", "/e2b/health", extra, "", 0, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\nX-API-KEY: bob\r\n",
	    e->sbx, e->tok);
	call(e, "GET", "/e2b/health", extra, "", 0, &r);
	assert_int_equal(r.status, 401);
	resp_free(&r);
	/* No sandbox, or a malformed one: 400 before anything. */
	call(e, "GET", "/e2b/health", "X-Access-Token: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	call(e, "GET", "/e2b/health",
	    "X-Access-Token: admin\r\nE2b-Sandbox-Id: a/b\r\n", "", 0, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	/* The sandbox's token reaches no other sandbox, as on /v1. */
	call(e, "POST", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n",
	    "{\"templateID\":\"js\"}", 19, &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	snprintf(extra, sizeof(extra),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n",
	    jstr(j, "sandboxID"), e->tok);
	json_decref(j);
	resp_free(&r);
	call(e, "GET", "/e2b/health", extra, "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	/* Unknown paths under /e2b/ answer in E2B's shape. */
	call(e, "GET", "/e2b/nothing", NULL, "", 0, &r);
	assert_int_equal(r.status, 404);
	j = body_json(&r);
	assert_int_equal(json_integer_value(json_object_get(j, "code")), 404);
	json_decref(j);
	resp_free(&r);
}

/* The lines of an ndjson reply, as an array. */
static json_t *
lines_of(const struct resp *r)
{
	json_t *arr = json_array();
	const char *p = r->body;

	while (*p != '\0') {
		const char *nl = strchr(p, '\n');
		json_t *l;

		assert_non_null(nl);
		l = json_loadb(p, (size_t)(nl - p), 0, NULL);
		assert_non_null(l);
		json_array_append_new(arr, l);
		p = nl + 1;
	}
	return arr;
}

static json_int_t
cell_count(const struct resp *r)
{
	json_t *ls = lines_of(r), *last;
	json_int_t n;

	last = json_array_get(ls, json_array_size(ls) - 1);
	assert_string_equal(jstr(last, "type"), "number_of_executions");
	n = json_integer_value(json_object_get(last, "execution_count"));
	json_decref(ls);
	return n;
}

static void
test_cells(void **state)
{
	struct env *e = *state;
	struct resp r;
	json_t *j, *ls;
	char py[API_ID_MAX + 1], body[256];

	sbx_json(e, "/e2b/execute", "{\"code\":\"x = 1\"}", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "application/x-ndjson"));
	ls = lines_of(&r);
	assert_string_equal(
	    jstr(json_array_get(ls, 0), "text"), "python: x = 1\n");
	json_decref(ls);
	assert_int_equal(cell_count(&r), 1);
	resp_free(&r);
	/* The same default context: its second cell. */
	sbx_json(
	    e, "/e2b/execute", "{\"code\":\"x\",\"language\":\"python\"}", &r);
	assert_int_equal(cell_count(&r), 2);
	resp_free(&r);
	/* js has its own, named so. */
	sbx_json(e, "/e2b/execute", "{\"code\":\"1\",\"language\":\"js\"}", &r);
	assert_int_equal(cell_count(&r), 1);
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/contexts", NULL, "", 0, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_int_equal(json_array_size(j), 2);
	strlcpy(py, jstr(json_array_get(j, 0), "id"), sizeof(py));
	assert_int_equal(strncmp(py, "ctx-", 4), 0);
	assert_int_equal(strlen(py), 24);
	assert_int_equal(
	    strncmp(jstr(json_array_get(j, 1), "id"), "ctx-js-", 7), 0);
	json_decref(j);
	resp_free(&r);
	/* A bash cell is a command in E2B's home, its output a stdout
	 * line; a non-zero exit an error line as bash_kernel's. */
	sbx_json(
	    e, "/e2b/execute", "{\"code\":\"hi\",\"language\":\"bash\"}", &r);
	assert_int_equal(r.status, 200);
	ls = lines_of(&r);
	assert_int_equal(json_array_size(ls), 1);
	assert_string_equal(jstr(json_array_get(ls, 0), "type"), "stdout");
	assert_string_equal(
	    jstr(json_array_get(ls, 0), "text"), "hi in /home/user\n");
	json_decref(ls);
	resp_free(&r);
	sbx_json(e, "/e2b/execute",
	    "{\"code\":\"false\",\"language\":\"bash\"}", &r);
	ls = lines_of(&r);
	assert_int_equal(json_array_size(ls), 1);
	assert_string_equal(jstr(json_array_get(ls, 0), "type"), "error");
	assert_string_equal(jstr(json_array_get(ls, 0), "name"), "");
	assert_string_equal(jstr(json_array_get(ls, 0), "value"), "1");
	json_decref(ls);
	resp_free(&r);
	sbx_json(e, "/e2b/execute",
	    "{\"code\":\"a\\u0000b\",\"language\":\"bash\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	/* An error line. */
	sbx_json(e, "/e2b/execute", "{\"code\":\"raise\"}", &r);
	ls = lines_of(&r);
	assert_string_equal(jstr(json_array_get(ls, 0), "type"), "error");
	assert_string_equal(jstr(json_array_get(ls, 0), "name"), "ValueError");
	json_decref(ls);
	resp_free(&r);
	/* Deleted: the next cell makes it again. */
	snprintf(body, sizeof(body), "/e2b/contexts/%s", py);
	sbx_call(e, "DELETE", body, NULL, "", 0, &r);
	assert_int_equal(r.status, 204);
	resp_free(&r);
	sbx_json(e, "/e2b/execute", "{\"code\":\"x\"}", &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(cell_count(&r), 1);
	resp_free(&r);
	/* A context of its own, named in the cell. */
	sbx_json(e, "/e2b/contexts", "{\"cwd\":\"/w\"}", &r);
	assert_int_equal(r.status, 201);
	j = body_json(&r);
	snprintf(body, sizeof(body), "{\"code\":\"y\",\"context_id\":\"%s\"}",
	    jstr(j, "id"));
	json_decref(j);
	resp_free(&r);
	sbx_json(e, "/e2b/execute", body, &r);
	assert_int_equal(cell_count(&r), 1);
	resp_free(&r);
	static const char *const bad[] = {
		"{\"code\":\"1\",\"context_id\":\"c\",\"language\":\"python\"}",
		"{\"code\":\"1\",\"language\":\"r\"}",
		"{\"code\":\"1\",\"timeout\":5}",
		"{\"code\":1}",
		"{\"code\":\"1\",\"context_id\":\"a/b\"}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_json(e, "/e2b/execute", bad[i], &r);
		assert_int_equal(r.status, 400);
		resp_free(&r);
	}
	sbx_json(
	    e, "/e2b/execute", "{\"code\":\"1\",\"context_id\":\"ctx-x\"}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	sbx_json(e, "/e2b/contexts", "{\"language\":\"r\"}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
}

static void
test_cells_refused_without_exec(void **state)
{
	struct env *e = *state;
	struct resp r;

	api_fake_deny(e->fake, "admin", CAP_EXEC);
	sbx_json(e, "/e2b/execute", "{\"code\":\"x = 1\"}", &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
	sbx_json(e, "/e2b/contexts", "{}", &r);
	assert_int_equal(r.status, 403);
	resp_free(&r);
}

static void
multipart(struct http_buf *b, const char *filename, const char *data)
{
	http_buf_puts(b,
	    "--XyZ\r\nContent-Disposition: form-data; "
	    "name=\"file\"");
	if (filename != NULL)
		http_buf_printf(b, "; filename=\"%s\"", filename);
	http_buf_printf(b,
	    "\r\nContent-Type: application/octet-stream\r\n\r\n%s\r\n", data);
}

static void
test_files(void **state)
{
	struct env *e = *state;
	static const char ct[] = "multipart/form-data; boundary=XyZ";
	struct http_buf b;
	struct resp r;
	json_t *j;

	http_buf_init(&b);
	multipart(&b, "/d/a.txt", "alpha");
	http_buf_puts(&b, "--XyZ--\r\n");
	sbx_call(
	    e, "POST", "/e2b/files?path=%2Fd%2Fa.txt", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(jstr(json_array_get(j, 0), "path"), "/d/a.txt");
	assert_string_equal(jstr(json_array_get(j, 0), "name"), "a.txt");
	assert_string_equal(jstr(json_array_get(j, 0), "type"), "file");
	json_decref(j);
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/files?path=/d/a.txt&username=user", NULL, "",
	    0, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "alpha");
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/files?path=/d/none", NULL, "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);

	/* Several files: their paths are the parts' filenames. */
	http_buf_reset(&b);
	multipart(&b, "/d/b.txt", "b");
	multipart(&b, "/d/c.txt", "cc");
	http_buf_puts(&b, "--XyZ--");
	sbx_call(e, "POST", "/e2b/files", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_int_equal(json_array_size(j), 2);
	assert_string_equal(jstr(json_array_get(j, 1), "path"), "/d/c.txt");
	json_decref(j);
	resp_free(&r);
	/* ?path= names one file only. */
	sbx_call(e, "POST", "/e2b/files?path=x", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);

	/* One decision per file: two left, a third file is refused. */
	http_buf_reset(&b);
	multipart(&b, "/d/1", "1");
	multipart(&b, "/d/2", "2");
	multipart(&b, "/d/3", "3");
	http_buf_puts(&b, "--XyZ--\r\n");
	api_fake_set_rate(e->fake, "admin", 2, 9);
	sbx_call(e, "POST", "/e2b/files", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 429);
	assert_non_null(strstr(r.head, "Retry-After: 9"));
	resp_free(&r);
	api_fake_set_rate(e->fake, "admin", 0, 0);
	/* Every part was authorized before any was written: none was. */
	sbx_call(e, "GET", "/e2b/files?path=/d/1", NULL, "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/files?path=/d/2", NULL, "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	sbx_call(e, "GET", "/e2b/files?path=/d/3", NULL, "", 0, &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);

	/* Not a form, a compressed one, a malformed one, a path with .. */
	sbx_call(e, "POST", "/e2b/files?path=x", "application/octet-stream",
	    "x", 1, &r);
	assert_int_equal(r.status, 415);
	resp_free(&r);
	{
		char extra[4096];

		snprintf(extra, sizeof(extra),
		    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
		    "Content-Type: %s\r\nContent-Encoding: gzip\r\n",
		    e->sbx, e->tok, ct);
		call(e, "POST", "/e2b/files", extra, b.data, b.len, &r);
		assert_int_equal(r.status, 415);
		resp_free(&r);
	}
	sbx_call(e, "POST", "/e2b/files", ct, "--XyZ\r\n", 7, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	http_buf_reset(&b);
	multipart(&b, "/d/../x", "x");
	http_buf_puts(&b, "--XyZ--");
	sbx_call(e, "POST", "/e2b/files", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
	http_buf_free(&b);
}

static void
connect_code(const struct resp *r, int status, const char *code)
{
	json_t *j = body_json(r);

	assert_int_equal(r->status, status);
	assert_string_equal(jstr(j, "code"), code);
	json_decref(j);
}

static void
test_rpc_filesystem(void **state)
{
	struct env *e = *state;
	static const char ct[] = "multipart/form-data; boundary=XyZ";
	struct http_buf b;
	struct resp r;
	json_t *j, *ent;

	http_buf_init(&b);
	multipart(&b, "/d/a.txt", "alpha");
	multipart(&b, "/d/s/b", "b");
	http_buf_puts(&b, "--XyZ--");
	sbx_call(e, "POST", "/e2b/files", ct, b.data, b.len, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	http_buf_free(&b);

	sbx_json(e, "/e2b/filesystem.Filesystem/ListDir",
	    "{\"path\":\"/d\",\"depth\":1}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	ent = json_array_get(json_object_get(j, "entries"), 0);
	assert_string_equal(jstr(ent, "name"), "a.txt");
	assert_string_equal(jstr(ent, "type"), "FILE_TYPE_FILE");
	assert_string_equal(jstr(ent, "path"), "/d/a.txt");
	assert_string_equal(jstr(ent, "size"), "5");
	assert_string_equal(jstr(ent, "modifiedTime"), "2023-11-14T22:13:20Z");
	json_decref(j);
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/ListDir",
	    "{\"path\":\"/d\",\"depth\":2}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/ListDir",
	    "{\"path\":\"/d\",\"other\":1}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_call(e, "POST", "/e2b/filesystem.Filesystem/ListDir",
	    "application/proto", "\x0a\x01x", 3, &r);
	connect_code(&r, 415, "invalid_argument");
	resp_free(&r);

	sbx_json(e, "/e2b/filesystem.Filesystem/Stat",
	    "{\"path\":\"/d/a.txt\"}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_string_equal(
	    jstr(json_object_get(j, "entry"), "path"), "/d/a.txt");
	json_decref(j);
	resp_free(&r);
	sbx_json(
	    e, "/e2b/filesystem.Filesystem/Stat", "{\"path\":\"/d/zz\"}", &r);
	connect_code(&r, 404, "not_found");
	resp_free(&r);

	/* Three directories, three decisions: two allowed. */
	api_fake_set_rate(e->fake, "admin", 2, 9);
	sbx_json(e, "/e2b/filesystem.Filesystem/MakeDir",
	    "{\"path\":\"/m/n/o\"}", &r);
	connect_code(&r, 429, "resource_exhausted");
	resp_free(&r);
	api_fake_set_rate(e->fake, "admin", 0, 0);
	sbx_json(e, "/e2b/filesystem.Filesystem/MakeDir",
	    "{\"path\":\"/m/n/o\"}", &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/MakeDir",
	    "{\"path\":\"/m/n/o\"}", &r);
	connect_code(&r, 409, "already_exists");
	resp_free(&r);

	sbx_json(e, "/e2b/filesystem.Filesystem/Remove",
	    "{\"path\":\"/d/a.txt\"}", &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(r.body, "{}");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Remove",
	    "{\"path\":\"/d/a.txt\"}", &r);
	connect_code(&r, 404, "not_found");
	resp_free(&r);

	/* Move answers the entry at its destination. */
	sbx_json(e, "/e2b/filesystem.Filesystem/Move",
	    "{\"source\":\"/d/s/b\",\"destination\":\"/d/c/\"}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	ent = json_object_get(j, "entry");
	assert_string_equal(jstr(ent, "name"), "c");
	assert_string_equal(jstr(ent, "path"), "/d/c");
	assert_string_equal(jstr(ent, "type"), "FILE_TYPE_FILE");
	json_decref(j);
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Move",
	    "{\"source\":\"/d/s/b\",\"destination\":\"/d/e\"}", &r);
	connect_code(&r, 404, "not_found");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Move", "{}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Move",
	    "{\"source\":\"/d/c\",\"destination\":\"/d/../../x\"}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Move",
	    "{\"source\":\"/d/c\",\"destination\":\"\"}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Move",
	    "{\"source\":\"/d/c\",\"destination\":\"/x\",\"y\":1}", &r);
	connect_code(&r, 400, "invalid_argument");
	resp_free(&r);
	sbx_json(e, "/e2b/filesystem.Filesystem/Rename", "{}", &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
}

/* The envelopes of a Connect stream: each message's flags and JSON. */
static json_t *
envelopes(const struct resp *r)
{
	json_t *arr = json_array();
	const unsigned char *p = (const unsigned char *)r->body;
	size_t off = 0;

	while (off < r->body_len) {
		uint32_t l;

		assert_true(r->body_len - off >= 5);
		l = (uint32_t)p[off + 1] << 24 | (uint32_t)p[off + 2] << 16 |
		    (uint32_t)p[off + 3] << 8 | p[off + 4];
		assert_true(r->body_len - off - 5 >= l);
		json_array_append_new(arr,
		    json_pack("{s:i,s:o}", "flags", p[off], "msg",
		        json_loadb((const char *)p + off + 5, l, 0, NULL)));
		off += 5 + l;
	}
	return arr;
}

/* One enveloped Connect request to a server-streaming route. */
static void
rpc_stream(struct env *e, const char *target, const char *json,
    const char *extra, struct resp *r)
{
	char head[4096];
	struct http_buf b;

	http_buf_init(&b);
	e2b_envelope_put(&b, 0, json, strlen(json));
	snprintf(head, sizeof(head),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
	    "Content-Type: application/connect+json\r\n%s",
	    e->sbx, e->tok, extra != NULL ? extra : "");
	call(e, "POST", target, head, b.data, b.len, r);
	http_buf_free(&b);
}

static void
start(struct env *e, const char *json, const char *extra, struct resp *r)
{
	rpc_stream(e, "/e2b/process.Process/Start", json, extra, r);
}

static void
stream_error(const struct resp *r, const char *code)
{
	json_t *ev = envelopes(r), *last;

	assert_int_equal(r->status, 200);
	assert_non_null(strstr(r->head, "application/connect+json"));
	assert_int_equal(json_array_size(ev), 1);
	last = json_array_get(ev, 0);
	assert_int_equal(json_integer_value(json_object_get(last, "flags")), 2);
	assert_string_equal(
	    jstr(
	        json_object_get(json_object_get(last, "msg"), "error"), "code"),
	    code);
	json_decref(ev);
}

static void
test_rpc_process(void **state)
{
	struct env *e = *state;
	struct resp r;
	json_t *ev, *m;
	unsigned char out[64];
	size_t olen;

	start(e,
	    "{\"process\":{\"cmd\":\"/bin/echo\",\"args\":[\"hi\",\"there\"],"
	    "\"envs\":{\"A\":\"b\"}},\"stdin\":false,\"tag\":\"t\"}",
	    "Connect-Timeout-Ms: 60000\r\nKeepalive-Ping-Interval: 50\r\n", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.head, "application/connect+json"));
	ev = envelopes(&r);
	assert_int_equal(json_array_size(ev), 4);
	m = json_object_get(json_array_get(ev, 0), "msg");
	assert_non_null(json_object_get(
	    json_object_get(json_object_get(m, "event"), "start"), "pid"));
	m = json_object_get(json_array_get(ev, 1), "msg");
	assert_int_equal(
	    sodium_base642bin(out, sizeof(out),
	        jstr(json_object_get(json_object_get(m, "event"), "data"),
	            "stdout"),
	        strlen(
	            jstr(json_object_get(json_object_get(m, "event"), "data"),
	                "stdout")),
	        NULL, &olen, NULL, sodium_base64_VARIANT_ORIGINAL),
	    0);
	assert_int_equal(olen, 9);
	assert_memory_equal(out, "hi there\n", 9);
	m = json_object_get(
	    json_object_get(
	        json_object_get(json_array_get(ev, 2), "msg"), "event"),
	    "end");
	assert_int_equal(json_integer_value(json_object_get(m, "exitCode")), 0);
	assert_true(json_is_true(json_object_get(m, "exited")));
	assert_string_equal(jstr(m, "status"), "exit status 0");
	assert_int_equal(
	    json_integer_value(json_object_get(json_array_get(ev, 3), "flags")),
	    2);
	assert_int_equal(
	    json_object_size(json_object_get(json_array_get(ev, 3), "msg")), 0);
	json_decref(ev);
	resp_free(&r);

	/* A non-zero exit: its code in the end event. */
	start(e, "{\"process\":{\"cmd\":\"false\"}}", NULL, &r);
	ev = envelopes(&r);
	m = json_object_get(
	    json_object_get(
	        json_object_get(json_array_get(ev, 1), "msg"), "event"),
	    "end");
	assert_int_equal(json_integer_value(json_object_get(m, "exitCode")), 1);
	json_decref(ev);
	resp_free(&r);

	/* Refusals are the stream's end, with Connect's code. */
	start(e, "{\"process\":{\"cmd\":\"forbidden\"}}", NULL, &r);
	stream_error(&r, "permission_denied");
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"/opt/x/echo\"}}", NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	/* A cwd (no ".."), which must be a directory; a relative one is
	 * E2B's home's. */
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"/w\"}}", NULL, &r);
	stream_error(&r, "not_found");
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"w\"}}", NULL, &r);
	stream_error(&r, "not_found");
	resp_free(&r);
	sbx_json(
	    e, "/e2b/filesystem.Filesystem/MakeDir", "{\"path\":\"w\"}", &r);
	assert_int_equal(r.status, 200);
	assert_non_null(strstr(r.body, "\"/home/user/w\""));
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"w\"}}", NULL, &r);
	ev = envelopes(&r);
	assert_int_equal(json_array_size(ev), 4);
	m = json_object_get(json_array_get(ev, 1), "msg");
	assert_string_equal(
	    jstr(
	        json_object_get(json_object_get(m, "event"), "data"), "stdout"),
	    "L2hvbWUvdXNlci93Cg=="); /* "/home/user/w\n" */
	json_decref(ev);
	resp_free(&r);
	/* No cwd: E2B's home. */
	start(e, "{\"process\":{\"cmd\":\"pwd\"}}", NULL, &r);
	ev = envelopes(&r);
	assert_int_equal(json_array_size(ev), 4);
	m = json_object_get(json_array_get(ev, 1), "msg");
	assert_string_equal(
	    jstr(
	        json_object_get(json_object_get(m, "event"), "data"), "stdout"),
	    "L2hvbWUvdXNlcgo="); /* "/home/user\n" */
	json_decref(ev);
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"/w/../..\"}}", NULL,
	    &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"/w\\u0000\"}}", NULL,
	    &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	sbx_json(
	    e, "/e2b/filesystem.Filesystem/MakeDir", "{\"path\":\"/w\"}", &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"pwd\",\"cwd\":\"/w\"}}", NULL, &r);
	ev = envelopes(&r);
	assert_int_equal(json_array_size(ev), 4);
	m = json_object_get(json_array_get(ev, 1), "msg");
	assert_string_equal(
	    jstr(
	        json_object_get(json_object_get(m, "event"), "data"), "stdout"),
	    "L3cK"); /* "/w\n" */
	json_decref(ev);
	resp_free(&r);
	/* A pty with no size, or one past 1000: invalid; a pty is keep's
	 * terminal, which this backend does not serve (501). */
	start(e, "{\"process\":{\"cmd\":\"echo\"},\"pty\":{}}", NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e,
	    "{\"process\":{\"cmd\":\"bash\"},\"pty\":{\"size\":"
	    "{\"cols\":1001,\"rows\":24}}}",
	    NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e,
	    "{\"process\":{\"cmd\":\"bash\"},\"pty\":{\"size\":"
	    "{\"cols\":80,\"rows\":24,\"x\":1}}}",
	    NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e,
	    "{\"process\":{\"cmd\":\"bash\",\"args\":[\"-i\"]},\"pty\":"
	    "{\"size\":{\"cols\":80,\"rows\":24}}}",
	    NULL, &r);
	stream_error(&r, "unimplemented");
	resp_free(&r);
	start(
	    e, "{\"process\":{\"cmd\":\"echo\"},\"stdin\":\"yes\"}", NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"echo\"}}",
	    "Connect-Timeout-Ms: 12345678901\r\n", &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	start(e, "{\"process\":{\"cmd\":\"echo\",\"x\":1}}", NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	{
		char head[4096];

		snprintf(head, sizeof(head),
		    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
		    "Content-Type: application/connect+json\r\n",
		    e->sbx, e->tok);
		call(e, "POST", "/e2b/process.Process/Start", head,
		    "{\"process\":{}}", 14, &r);
		stream_error(&r, "invalid_argument");
		resp_free(&r);
		/* No token: unauthenticated, in the stream too. */
		call(e, "POST", "/e2b/process.Process/Start",
		    "Content-Type: application/connect+json\r\n"
		    "E2b-Sandbox-Id: sbx-1\r\n",
		    "", 0, &r);
		stream_error(&r, "unauthenticated");
		resp_free(&r);
	}
}

static size_t
list_len(struct resp *r)
{
	json_t *j = body_json(r);
	size_t n;

	assert_true(json_is_array(j));
	n = json_array_size(j);
	json_decref(j);
	return n;
}

/* The X-Next-Token of a reply into tok ("" when absent). */
static void
next_token(const struct resp *r, char *tok, size_t len)
{
	const char *h = strstr(r->head, "\r\nX-Next-Token: ");
	size_t n;

	tok[0] = '\0';
	if (h == NULL)
		return;
	h += strlen("\r\nX-Next-Token: ");
	n = strcspn(h, "\r");
	assert_true(n < len);
	memcpy(tok, h, n);
	tok[n] = '\0';
}

/* Sandbox.list: keep's pages, filtered as the SDK asks. */
static void
test_list(void **state)
{
	struct env *e = *state;
	static const char second[] = "{\"templateID\":\"js\","
	                             "\"metadata\":{\"k\":\"x y&=\"}}";
	struct resp r;
	char tok[128], path[256], hdr[sizeof(e->tok) + 16];
	json_t *j;

	call(e, "POST", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n", second,
	    strlen(second), &r);
	assert_int_equal(r.status, 201);
	resp_free(&r);

	call(e, "GET", "/e2b/v2/sandboxes", "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(list_len(&r), 2);
	next_token(&r, tok, sizeof(tok));
	assert_string_equal(tok, "");
	resp_free(&r);

	/* The SDK's metadata: a=b, encoded as a value of URLSearchParams. */
	call(e, "GET", "/e2b/v2/sandboxes?metadata=a%3Db",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	assert_int_equal(json_array_size(j), 1);
	assert_string_equal(jstr(json_array_get(j, 0), "sandboxID"), e->sbx);
	assert_string_equal(jstr(json_array_get(j, 0), "state"), "running");
	json_decref(j);
	resp_free(&r);
	/* k="x y&=": encodeURIComponent, URLSearchParams, then the query. */
	call(e, "GET", "/e2b/v2/sandboxes?metadata=k%3Dx%252520y%252526%25253D",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(list_len(&r), 1);
	resp_free(&r);
	call(e, "GET", "/e2b/v2/sandboxes?metadata=a%3Dz",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(list_len(&r), 0);
	resp_free(&r);

	call(e, "GET", "/e2b/v2/sandboxes?state=paused", "X-API-KEY: admin\r\n",
	    "", 0, &r);
	assert_int_equal(list_len(&r), 0);
	resp_free(&r);
	call(e, "GET", "/e2b/v2/sandboxes?state=paused&state=running",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(list_len(&r), 2);
	resp_free(&r);
	call(e, "GET", "/e2b/v2/sandboxes?template=code-interpreter-v1",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(list_len(&r), 1);
	resp_free(&r);
	call(e, "GET",
	    "/e2b/v2/sandboxes?startedAfter=2023-11-14T22:13:19.000Z",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(list_len(&r), 2);
	resp_free(&r);
	call(e, "GET", "/e2b/v2/sandboxes?startedAfter=2023-11-14T22:13:20Z",
	    "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(list_len(&r), 0);
	resp_free(&r);

	/* Pages: one sandbox each, the second reached by the token. */
	call(e, "GET", "/e2b/v2/sandboxes?limit=1", "X-API-KEY: admin\r\n", "",
	    0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(list_len(&r), 1);
	next_token(&r, tok, sizeof(tok));
	assert_string_not_equal(tok, "");
	resp_free(&r);
	snprintf(
	    path, sizeof(path), "/e2b/v2/sandboxes?limit=1&nextToken=%s", tok);
	call(e, "GET", path, "X-API-KEY: admin\r\n", "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(list_len(&r), 1);
	resp_free(&r);

	/* A sandbox's token lists its own sandbox alone (another
	 * principal's list is the real backend's: tests/e2b/). */
	snprintf(hdr, sizeof(hdr), "X-API-KEY: %s\r\n", e->tok);
	call(e, "GET", "/e2b/v2/sandboxes", hdr, "", 0, &r);
	assert_int_equal(r.status, 200);
	assert_int_equal(list_len(&r), 1);
	resp_free(&r);

	static const char *const bad[] = {
		"/e2b/v2/sandboxes?limit=0",
		"/e2b/v2/sandboxes?limit=101",
		"/e2b/v2/sandboxes?order=asc",
		"/e2b/v2/sandboxes?state=stopped",
		"/e2b/v2/sandboxes?state=running%2Cgone",
		"/e2b/v2/sandboxes?metadata=novalue",
		"/e2b/v2/sandboxes?metadata=k%3D%2500",
		"/e2b/v2/sandboxes?startedAfter=yesterday",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		call(e, "GET", bad[i], "X-API-KEY: admin\r\n", "", 0, &r);
		if (r.status != 400)
			fail_msg("%s: %d", bad[i], r.status);
		resp_free(&r);
	}
}

/* process.Process/List and SendSignal: keep's running runs and kill. */
static void
test_rpc_list_signal(void **state)
{
	struct env *e = *state;
	static const char bg[] = "{\"cmd\":\"sleep\",\"args\":[\"60\"]}";
	struct resp r;
	char body[128];
	json_t *j, *ps;
	json_int_t pid;

	call(e, "POST", "/v1/sandboxes/sbx-1/commands/background",
	    "Authorization: Bearer admin\r\nContent-Type: application/json\r\n",
	    bg, strlen(bg), &r);
	assert_int_equal(r.status, 202);
	j = body_json(&r);
	pid = json_integer_value(json_object_get(j, "pid"));
	assert_true(pid > 0);
	json_decref(j);
	resp_free(&r);

	sbx_json(e, "/e2b/process.Process/List", "{}", &r);
	assert_int_equal(r.status, 200);
	j = body_json(&r);
	ps = json_object_get(j, "processes");
	assert_int_equal(json_array_size(ps), 1);
	assert_int_equal(
	    json_integer_value(json_object_get(json_array_get(ps, 0), "pid")),
	    pid);
	assert_string_equal(
	    jstr(json_object_get(json_array_get(ps, 0), "config"), "cmd"),
	    "sleep");
	json_decref(j);
	resp_free(&r);

	snprintf(body, sizeof(body),
	    "{\"process\":{\"pid\":%lld},\"signal\":\"SIGNAL_SIGKILL\"}",
	    (long long)pid);
	sbx_json(e, "/e2b/process.Process/SendSignal", body, &r);
	assert_int_equal(r.status, 200);
	resp_free(&r);
	sbx_json(e, "/e2b/process.Process/List", "{}", &r);
	j = body_json(&r);
	assert_int_equal(json_array_size(json_object_get(j, "processes")), 0);
	json_decref(j);
	resp_free(&r);
	/* A pid that is no run: not_found, the SDK's kill answers false. */
	sbx_json(e, "/e2b/process.Process/SendSignal",
	    "{\"process\":{\"pid\":999},\"signal\":9}", &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body, "not_found"));
	resp_free(&r);

	static const char *const bad[] = {
		"{\"process\":{\"tag\":\"t\"},\"signal\":\"SIGNAL_SIGKILL\"}",
		"{\"process\":{\"pid\":0},\"signal\":\"SIGNAL_SIGKILL\"}",
		"{\"process\":{\"pid\":4294967296},\"signal\":9}",
		"{\"process\":{\"pid\":\"1\"},\"signal\":9}",
		"{\"process\":{\"pid\":1},\"signal\":\"SIGNAL_SIGHUP\"}",
		"{\"process\":{\"pid\":1}}",
		"{\"process\":7,\"signal\":9}",
		"{\"signal\":9}",
		"{\"process\":{\"pid\":1},\"signal\":9,\"x\":1}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		sbx_json(e, "/e2b/process.Process/SendSignal", bad[i], &r);
		if (r.status != 400)
			fail_msg("%s: %d", bad[i], r.status);
		resp_free(&r);
	}
	sbx_json(e, "/e2b/process.Process/List", "{\"x\":1}", &r);
	assert_int_equal(r.status, 400);
	resp_free(&r);
}

/* WatchDir: its request checked before keep's files/watch, whose refusal
 * (this backend serves no watch) is the stream's end. */
static void
test_rpc_watch_dir(void **state)
{
	struct env *e = *state;
	static const char target[] = "/e2b/filesystem.Filesystem/WatchDir";
	static const char *const bad[] = {
		"{}",
		"{\"path\":\"\"}",
		"{\"path\":\"/d\",\"recursive\":1}",
		"{\"path\":\"/d\",\"x\":1}",
		"{\"path\":\"/../etc\"}",
		"[]",
	};
	struct resp r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		rpc_stream(e, target, bad[i], NULL, &r);
		stream_error(&r, "invalid_argument");
		resp_free(&r);
	}
	rpc_stream(
	    e, target, "{\"path\":\"/d\",\"includeEntry\":true}", NULL, &r);
	stream_error(&r, "unimplemented");
	resp_free(&r);
	rpc_stream(e, target,
	    "{\"path\":\"/d/\",\"recursive\":true,\"includeEntry\":false,"
	    "\"allowNetworkMounts\":false}",
	    NULL, &r);
	stream_error(&r, "unimplemented");
	resp_free(&r);
}

/* SendInput and Update reach a pty by its pid: malformed requests are
 * 400, a pid that is no process of the sandbox 404. */
static void
test_rpc_pty_input(void **state)
{
	struct env *e = *state;
	struct resp r;
	static const char *const bad_input[] = {
		"{\"process\":{\"pid\":1},\"input\":{\"pty\":\"!!\"}}",
		"{\"process\":{\"pid\":1},\"input\":{\"pty\":7}}",
		"{\"process\":{\"pid\":1},\"input\":{}}",
		"{\"process\":{\"pid\":1},\"input\":{\"x\":\"\"}}",
		"{\"process\":{\"pid\":1},\"input\":\"aGk=\"}",
		"{\"process\":{\"pid\":0},\"input\":{\"pty\":\"aGk=\"}}",
		"{\"process\":{\"tag\":\"t\"},\"input\":{\"pty\":\"aGk=\"}}",
		"{\"input\":{\"pty\":\"aGk=\"}}",
		"{\"process\":{\"pid\":1},\"input\":{\"pty\":\"aGk=\"},"
		"\"x\":1}",
	};
	static const char *const bad_update[] = {
		"{\"process\":{\"pid\":1}}",
		"{\"process\":{\"pid\":1},\"pty\":{\"size\":{\"cols\":0,"
		"\"rows\":1}}}",
		"{\"process\":{\"pid\":1},\"pty\":{\"size\":{\"cols\":80}}}",
		"{\"process\":{\"pid\":1},\"pty\":{\"size\":{\"cols\":80,"
		"\"rows\":-1}}}",
		"{\"process\":{\"pid\":-3},\"pty\":{\"size\":{\"cols\":80,"
		"\"rows\":24}}}",
	};

	for (size_t i = 0; i < sizeof(bad_input) / sizeof(bad_input[0]); i++) {
		sbx_json(e, "/e2b/process.Process/SendInput", bad_input[i], &r);
		if (r.status != 400)
			fail_msg("%s: %d", bad_input[i], r.status);
		assert_non_null(strstr(r.body, "invalid_argument"));
		resp_free(&r);
	}
	for (size_t i = 0; i < sizeof(bad_update) / sizeof(bad_update[0]);
	     i++) {
		sbx_json(e, "/e2b/process.Process/Update", bad_update[i], &r);
		if (r.status != 400)
			fail_msg("%s: %d", bad_update[i], r.status);
		resp_free(&r);
	}
	sbx_json(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":77},\"input\":{\"pty\":\"aGk=\"}}", &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body, "not_found"));
	resp_free(&r);
	sbx_json(e, "/e2b/process.Process/Update",
	    "{\"process\":{\"pid\":77},\"pty\":{\"size\":{\"cols\":80,"
	    "\"rows\":24}}}",
	    &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	sbx_json(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":77},\"input\":{\"stdin\":\"aGk=\"}}", &r);
	assert_int_equal(r.status, 404);
	assert_non_null(strstr(r.body, "not_found"));
	resp_free(&r);
}

/* What a deferred reply sends later (api_set_resume). */
static struct http_buf resumed;

static void
resume_capture(
    void *arg, uint64_t conn, const void *resp, size_t len, int flags)
{
	(void)arg;
	(void)conn;
	(void)flags;
	http_buf_add(&resumed, resp, len);
}

/* Start over a connection that can wait: the reply is deferred. */
static void
start_deferred(struct env *e, const char *json)
{
	struct http_limits lim;
	struct http_request req;
	struct http_buf in, o, b;
	int status;

	http_buf_init(&in);
	http_buf_init(&o);
	http_buf_init(&b);
	e2b_envelope_put(&b, 0, json, strlen(json));
	http_buf_printf(&in,
	    "POST /e2b/process.Process/Start HTTP/1.1\r\nHost: t\r\n"
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: %s\r\n"
	    "Content-Type: application/connect+json\r\n"
	    "Content-Length: %zu\r\n\r\n",
	    e->sbx, e->tok, b.len);
	http_buf_add(&in, b.data, b.len);
	http_limits_default(&lim);
	assert_int_equal(
	    http_parse_head(in.data, in.len, &lim, &req, &status), HTTP_OK);
	req.body = in.data + req.head_len;
	req.body_len = b.len;
	api_set_resume(e->api, resume_capture, NULL);
	assert_int_equal(
	    api_handle_conn(e->api, &req, &o, 7), API_HANDLE_PENDING);
	assert_int_equal(o.len, 0);
	http_buf_free(&in);
	http_buf_free(&o);
	http_buf_free(&b);
}

static void
input_status(struct env *e, const char *route, const char *json, int status,
    const char *code)
{
	struct resp r;

	sbx_json(e, route, json, &r);
	if (r.status != status || strstr(r.body, code) == NULL)
		fail_msg("%s %s: %d %s", route, json, r.status, r.body);
	resp_free(&r);
}

/*
 * A command's stdin stream (Start with stdin true): SendInput's stdin
 * reaches it by its pid, CloseStdin ends it, and what it cannot take is
 * refused as envd refuses it; hostile input is refused before it.
 */
static void
test_rpc_stdin(void **state)
{
	struct env *e = *state;
	const char *in;
	char big[256], *huge;
	size_t len,
	    hl = sodium_base64_ENCODED_LEN(
	        API_INPUT_MAX + 1, sodium_base64_VARIANT_ORIGINAL);
	unsigned char *raw;
	struct resp r;
	int eof;

	http_buf_init(&resumed);
	start_deferred(e, "{\"process\":{\"cmd\":\"cat\"},\"stdin\":true}");
	assert_int_equal(api_fake_pending(e->fake), 1);
	/* The fake's pids start at 100: the command's is the first. */
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"aGkg\"}}", 200,
	    "{}");
	/* Hostile or wrong: bad base64, both fields, a pty's input to a
	 * command, a resize, another pid, oversized input. */
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"a!==\"}}", 400,
	    "invalid_argument");
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"aGk=\","
	    "\"pty\":\"aGk=\"}}",
	    400, "invalid_argument");
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"pty\":\"aGk=\"}}", 412,
	    "failed_precondition");
	input_status(e, "/e2b/process.Process/Update",
	    "{\"process\":{\"pid\":100},\"pty\":{\"size\":{\"cols\":80,"
	    "\"rows\":24}}}",
	    412, "failed_precondition");
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":101},\"input\":{\"stdin\":\"aGk=\"}}", 404,
	    "not_found");
	input_status(e, "/e2b/process.Process/CloseStdin",
	    "{\"process\":{\"pid\":101}}", 404, "not_found");
	input_status(e, "/e2b/process.Process/CloseStdin", "{\"process\":{}}",
	    400, "invalid_argument");
	assert_non_null(raw = calloc(1, API_INPUT_MAX + 1));
	assert_non_null(huge = malloc(hl + 64));
	len = (size_t)snprintf(
	    huge, 64, "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"");
	sodium_bin2base64(huge + len, hl, raw, API_INPUT_MAX + 1,
	    sodium_base64_VARIANT_ORIGINAL);
	strcat(huge, "\"}}");
	sbx_json(e, "/e2b/process.Process/SendInput", huge, &r);
	if (r.status != 413)
		fail_msg("oversized: %d %s", r.status, r.body);
	assert_non_null(strstr(r.body, "invalid_argument"));
	resp_free(&r);
	free(huge);
	free(raw);
	/* Another principal does not reach it by the sandbox and pid. */
	snprintf(big, sizeof(big),
	    "E2b-Sandbox-Id: %s\r\nX-Access-Token: bob\r\n"
	    "Content-Type: application/json\r\n",
	    e->sbx);
	in = "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"aGk=\"}}";
	call(e, "POST", "/e2b/process.Process/SendInput", big, in, strlen(in),
	    &r);
	assert_int_equal(r.status, 404);
	resp_free(&r);
	/* Only what the owner sent came through; then its end. */
	in = api_fake_input(e->fake, &len, &eof);
	assert_int_equal(len, 3);
	assert_memory_equal(in, "hi ", 3);
	assert_false(eof);
	input_status(e, "/e2b/process.Process/CloseStdin",
	    "{\"process\":{\"pid\":100}}", 200, "{}");
	(void)api_fake_input(e->fake, &len, &eof);
	assert_true(eof);
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"aGk=\"}}", 412,
	    "stdin not enabled or closed");
	input_status(e, "/e2b/process.Process/CloseStdin",
	    "{\"process\":{\"pid\":100}}", 412, "failed_precondition");
	/* The command ends with what it read: start, data, end. */
	assert_int_equal(api_fake_flush(e->fake), 1);
	assert_non_null(memmem(resumed.data, resumed.len, "\"pid\":100", 9));
	assert_non_null(memmem(resumed.data, resumed.len, "aGkg", 4));
	assert_non_null(memmem(resumed.data, resumed.len, "exitCode", 8));
	/* Input after the end: no such process; nor a reader of it. */
	input_status(e, "/e2b/process.Process/SendInput",
	    "{\"process\":{\"pid\":100},\"input\":{\"stdin\":\"aGk=\"}}", 404,
	    "not_found");
	rpc_stream(e, "/e2b/process.Process/Connect",
	    "{\"process\":{\"pid\":100}}", NULL, &r);
	stream_error(&r, "not_found");
	resp_free(&r);
	rpc_stream(
	    e, "/e2b/process.Process/Connect", "{\"process\":{}}", NULL, &r);
	stream_error(&r, "invalid_argument");
	resp_free(&r);
	http_buf_free(&resumed);
	api_set_resume(e->api, NULL, NULL);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_routes_checked_as),
		T(test_rpc_pty_input),
		T(test_rpc_stdin),
		T(test_rpc_watch_dir),
		T(test_create_get_kill),
		T(test_list),
		T(test_credentials),
		T(test_cells),
		T(test_cells_refused_without_exec),
		T(test_files),
		T(test_rpc_filesystem),
		T(test_rpc_process),
		T(test_rpc_list_signal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * /v1/secrets (docs/secrets.md): PUT /v1/secrets/{name} with {"value"},
 * DELETE /v1/secrets/{name}, GET /v1/secrets. Values go in and never come
 * out: every reply carries names and metadata only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/api/api_int.h"
#include "lib/secret_ref.h"

#define BE(r) ((r)->api->be)

static json_t *
iso_ms(int64_t ms)
{
	char when[32];
	struct tm tm;
	time_t t = (time_t)(ms / 1000);

	if (ms <= 0 || gmtime_r(&t, &tm) == NULL ||
	    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		return json_null();
	return json_string(when);
}

static json_t *
secret_json(const struct api_secret *s)
{
	return json_pack("{s:s%,s:o,s:o,s:s%}", "name", s->name,
	    strnlen(s->name, sizeof(s->name) - 1), "created_at",
	    iso_ms(s->created_at), "updated_at", iso_ms(s->updated_at),
	    "set_by", s->set_by, strnlen(s->set_by, sizeof(s->set_by) - 1));
}

static int
name_ok(struct rq *r)
{
	if (secret_name_ok(r->tail, strlen(r->tail)))
		return 1;
	rq_error(r, API_EBADREQ,
	    "A secret's name is 1 to %d letters, digits, '-' or '_'",
	    SECRET_NAME_MAX);
	return 0;
}

void
h_secret_put(struct rq *r)
{
	static const char *const fields[] = { "value", NULL };
	struct api_secret s;
	struct api_error err;
	const char *value;
	json_t *v;
	size_t len;
	int rc, created = 0;

	if (!name_ok(r) || rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "value", 1, &value))
		return;
	v = json_object_get(r->body, "value");
	len = json_string_length(v);
	if (memchr(value, '\0', len) != NULL || len < SECRET_VALUE_MIN ||
	    len > SECRET_VALUE_MAX) {
		rq_error(r, API_EBADREQ,
		    "value must be %d to %d bytes without NUL (a shorter one "
		    "could not be redacted from output)",
		    SECRET_VALUE_MIN, SECRET_VALUE_MAX);
		return;
	}
	memset(&s, 0, sizeof(s));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->secret_put(
	    BE(r)->ctx, &r->call, r->tail, value, len, &s, &created, &err);
	/* The request's parsed copy of the value goes now. */
	sodium_memzero((void *)value, len);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, created ? 201 : 200, secret_json(&s));
}

void
h_secret_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	if (!name_ok(r))
		return;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->secret_delete(BE(r)->ctx, &r->call, r->tail, &err);
	if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_no_content(r);
}

void
h_secret_list(struct rq *r)
{
	struct api_secret *s = NULL;
	struct api_error err;
	json_t *a;
	size_t n = 0, i;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->secret_list(BE(r)->ctx, &r->call, &s, &n, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	a = json_array();
	for (i = 0; a != NULL && i < n; i++)
		json_array_append_new(a, secret_json(&s[i]));
	free(s);
	rq_json(r, 200, json_pack("{s:o}", "secrets", a));
}

/*
 * A sandbox's variables keep a reference as text (in the vmm and the
 * store); each run that starts in the sandbox is given the value under
 * its own grant. Here only the syntax is checked, so that a typo is an
 * error now rather than at every run.
 */
int
rq_env_refs_ok(struct rq *r, const struct api_kv *kv, size_t n)
{
	struct secret_ref ref;
	size_t i, pos;
	int rc;

	for (i = 0; i < n; i++) {
		if (strstr(kv[i].key, "${{") != NULL) {
			rq_error(r, API_EBADREQ,
			    "A variable's name cannot refer to a secret");
			return -1;
		}
		pos = 0;
		while ((rc = secret_ref_next(
		            kv[i].value, strlen(kv[i].value), &pos, &ref)) == 1)
			;
		if (rc < 0) {
			rq_error(r, API_EBADREQ,
			    "Variable %.64s: \"${{\" must begin a reference "
			    "${{ secrets.NAME }}",
			    kv[i].key);
			return -1;
		}
	}
	return 0;
}

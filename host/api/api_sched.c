/*
 * /v1/schedules: the handlers. A schedule's definition is validated by
 * the backend (host/sched/sched_spec.c, which the store's read-back
 * shares), so a body goes to it as JSON text; the reply shows the
 * definition as kept, with the owner, times and the next fire times.
 */
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"
#include "host/sched/sched_spec.h"

#define BE(r) ((r)->api->be)

static json_t *
time_or_null(int64_t t)
{
	char buf[24];

	if (t <= 0)
		return json_null();
	sched_time_format(t, buf);
	return json_string(buf);
}

static json_t *
schedule_json(const struct api_schedule *s)
{
	json_t *o, *next;
	json_error_t je;

	o = s->spec != NULL ? json_loads(s->spec, 0, &je) : NULL;
	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		o = json_object();
	}
	if (o == NULL || (next = json_array()) == NULL) {
		json_decref(o);
		return NULL;
	}
	for (size_t i = 0; i < s->nnext && i < API_SCHED_NEXT; i++)
		json_array_append_new(next, time_or_null(s->next[i]));
	json_object_set_new(o, "id", json_string(s->id));
	json_object_set_new(o, "owner", json_string(s->owner));
	json_object_set_new(o, "created_at", time_or_null(s->created_at));
	json_object_set_new(o, "updated_at", time_or_null(s->updated_at));
	json_object_set_new(o, "last_fire_at", time_or_null(s->last_fire_at));
	json_object_set_new(o, "next_fire_at", next);
	json_object_set_new(o, "fires", json_integer((json_int_t)s->fires));
	return o;
}

static void
reply_schedule(struct rq *r, int status, struct api_schedule *s)
{
	json_t *o = schedule_json(s);

	free(s->spec);
	s->spec = NULL;
	if (o == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	rq_json(r, status, o);
}

/* The body as JSON text for the backend. */
static char *
body_text(struct rq *r)
{
	char *t = json_dumps(r->body, JSON_COMPACT);

	if (t == NULL)
		rq_error(r, API_EINTERNAL, "Out of memory");
	return t;
}

void
h_schedule_create(struct rq *r)
{
	struct api_schedule s;
	struct api_error err;
	char *text;
	int rc;

	if ((text = body_text(r)) == NULL)
		return;
	memset(&s, 0, sizeof(s));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->schedule_create(BE(r)->ctx, &r->call, text, &s, &err);
	free(text);
	if (rc != API_OK) {
		free(s.spec);
		rq_backend_error(r, rc, &err);
		return;
	}
	reply_schedule(r, 201, &s);
}

void
h_schedule_list(struct rq *r)
{
	struct api_schedule *s = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->schedule_list(BE(r)->ctx, &r->call, &s, &n, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (arr != NULL)
			json_array_append_new(arr, schedule_json(&s[i]));
		free(s[i].spec);
	}
	free(s);
	if (arr == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	rq_json(r, 200, json_pack("{s:o}", "schedules", arr));
}

void
h_schedule_get(struct rq *r)
{
	struct api_schedule s;
	struct api_error err;
	int rc;

	memset(&s, 0, sizeof(s));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->schedule_get(BE(r)->ctx, &r->call, r->id, &s, &err);
	if (rc != API_OK) {
		free(s.spec);
		rq_backend_error(r, rc, &err);
		return;
	}
	reply_schedule(r, 200, &s);
}

void
h_schedule_update(struct rq *r)
{
	struct api_schedule s;
	struct api_error err;
	char *text;
	int rc;

	if ((text = body_text(r)) == NULL)
		return;
	memset(&s, 0, sizeof(s));
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->schedule_update(BE(r)->ctx, &r->call, r->id, text, &s, &err);
	free(text);
	if (rc != API_OK) {
		free(s.spec);
		rq_backend_error(r, rc, &err);
		return;
	}
	reply_schedule(r, 200, &s);
}

void
h_schedule_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->schedule_delete(BE(r)->ctx, &r->call, r->id, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

static json_t *
run_json(const struct api_schedule_run *x)
{
	json_t *o = json_pack("{s:I,s:o,s:o,s:o,s:s,s:b}", "seq",
	    (json_int_t)x->seq, "fire_at", time_or_null(x->fire_at),
	    "started_at", time_or_null(x->started_at), "finished_at",
	    time_or_null(x->finished_at), "status", x->status, "catch_up",
	    x->catch_up);

	if (o == NULL)
		return NULL;
	json_object_set_new(o, "sandbox_id",
	    x->sandbox[0] ? json_string(x->sandbox) : json_null());
	json_object_set_new(
	    o, "run_id", x->run_id[0] ? json_string(x->run_id) : json_null());
	if (strcmp(x->status, "completed") == 0)
		json_object_set_new(o, "exit_code", json_integer(x->exit_code));
	else
		json_object_set_new(o, "exit_code", json_null());
	json_object_set_new(o, "detail", json_string(x->detail));
	json_object_set_new(o, "stdout", bytes_string(x->out, x->out_len));
	json_object_set_new(o, "stderr", bytes_string(x->err, x->err_len));
	return o;
}

void
h_schedule_runs(struct rq *r)
{
	struct api_schedule_run *x = NULL;
	struct api_error err;
	size_t n = 0;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->schedule_runs(BE(r)->ctx, &r->call, r->id, &x, &n, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (size_t i = 0; i < n; i++) {
		if (arr != NULL)
			json_array_append_new(arr, run_json(&x[i]));
		free(x[i].out);
		free(x[i].err);
	}
	free(x);
	if (arr == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	rq_json(r, 200, json_pack("{s:o}", "runs", arr));
}

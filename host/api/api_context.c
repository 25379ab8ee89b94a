/*
 * Live contexts (docs/contexts.md): the routes under
 * /v1/sandboxes/{id}/contexts and the reply of a cell run in one
 * (execute with context_id), in the shapes of E2B's code interpreter.
 *
 * A cell's output arrives as the driver's JSON lines, written by code in
 * the guest: every line is decoded as untrusted JSON and only the known
 * types and fields are passed on, rebuilt here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/api/api_int.h"
#include "host/http/http.h"

#define BE(r) ((r)->api->be)

json_t *
api_context_json(const struct api_context *c)
{
	char when[32] = "";
	struct tm tm;
	time_t t = (time_t)c->created_at;

	if (gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s%,s:s%,s:s%,s:s%,s:I,s:s}", "id", c->id,
	    strnlen(c->id, sizeof(c->id) - 1), "language", c->language,
	    strnlen(c->language, sizeof(c->language) - 1), "cwd", c->cwd,
	    strnlen(c->cwd, sizeof(c->cwd) - 1), "state", c->state,
	    strnlen(c->state, sizeof(c->state) - 1), "execution_count",
	    (json_int_t)c->execution_count, "created_at", when);
}

static int
parse_language(struct rq *r, json_t *body, enum api_lang *lang)
{
	const char *s = NULL;

	*lang = API_LANG_PYTHON;
	if (body != NULL && rq_str(r, body, "language", 0, &s))
		return -1;
	if (s == NULL || strcmp(s, "python") == 0)
		return 0;
	if (strcmp(s, "js") == 0 || strcmp(s, "javascript") == 0) {
		*lang = API_LANG_JAVASCRIPT;
		return 0;
	}
	rq_error(r, API_EBADREQ, "language must be \"python\" or \"js\"");
	return -1;
}

static json_t *
snapshot_json(const struct api_snapshot *s)
{
	char when[32] = "";
	struct tm tm;
	time_t t = (time_t)s->created_at;

	if (gmtime_r(&t, &tm) != NULL)
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s%,s:s%,s:s%,s:s%,s:I,s:I,s:s}", "name", s->name,
	    strnlen(s->name, sizeof(s->name) - 1), "context_id", s->context_id,
	    strnlen(s->context_id, sizeof(s->context_id) - 1), "language",
	    s->language, strnlen(s->language, sizeof(s->language) - 1), "cwd",
	    s->cwd, strnlen(s->cwd, sizeof(s->cwd) - 1), "execution_count",
	    (json_int_t)s->execution_count, "bytes", (json_int_t)s->bytes,
	    "created_at", when);
}

/* POST .../contexts {"snapshot":NAME}: the snapshot into a new context,
 * its language and cwd the snapshot's. */
static void
context_restore(struct rq *r, const char *name)
{
	struct api_context c;
	struct api_error err;
	int rc;

	if (json_object_get(r->body, "language") != NULL ||
	    json_object_get(r->body, "cwd") != NULL) {
		rq_error(r, API_EBADREQ,
		    "a restored snapshot has its own language and cwd");
		return;
	}
	if (!api_valid_id(name, strlen(name)) ||
	    strlen(name) >= sizeof(((struct api_snapshot *)0)->name)) {
		rq_error(r, API_EBADREQ, "snapshot is not a snapshot's name");
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->context_restore(BE(r)->ctx, &r->call, r->id, name, &c, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 201, api_context_json(&c));
}

void
h_context_create(struct rq *r)
{
	static const char *const fields[] = { "language", "cwd", "snapshot",
		NULL };
	struct api_context c;
	struct api_error err;
	enum api_lang lang;
	const char *cwd = NULL, *snap = NULL;
	int rc;

	if (r->body != NULL && rq_fields(r, r->body, fields))
		return;
	if (r->body != NULL && rq_str(r, r->body, "snapshot", 0, &snap))
		return;
	if (snap != NULL) {
		context_restore(r, snap);
		return;
	}
	if (parse_language(r, r->body, &lang))
		return;
	if (r->body != NULL && rq_str(r, r->body, "cwd", 0, &cwd))
		return;
	if (cwd != NULL &&
	    (strlen(cwd) >= sizeof(c.cwd) || cwd[0] != '/' ||
	        strlen(cwd) !=
	            json_string_length(json_object_get(r->body, "cwd")))) {
		rq_error(r, API_EBADREQ,
		    "cwd must be an absolute path of at most %zu bytes",
		    sizeof(c.cwd) - 1);
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_create(BE(r)->ctx, &r->call, r->id, lang,
	    cwd != NULL ? cwd : "", NULL, &c, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 201, api_context_json(&c));
}

void
h_context_list(struct rq *r)
{
	struct api_context *cs = NULL;
	struct api_error err;
	size_t n = 0, i;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_list(BE(r)->ctx, &r->call, r->id, &cs, &n, &err);
	if (rc != API_OK) {
		free(cs);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(arr, api_context_json(&cs[i]));
	free(cs);
	rq_json(r, 200, arr);
}

void
h_context_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_delete(BE(r)->ctx, &r->call, r->id, r->tail, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

void
h_context_restart(struct rq *r)
{
	struct api_context c;
	struct api_error err;
	int rc;

	if (r->body != NULL && json_object_size(r->body) != 0) {
		rq_error(r, API_EBADREQ, "restart takes no fields");
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_restart(
	    BE(r)->ctx, &r->call, r->id, r->tail, &c, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 200, api_context_json(&c));
}

void
h_context_fork(struct rq *r)
{
	struct api_context c;
	struct api_error err;
	int rc;

	if (r->body != NULL && json_object_size(r->body) != 0) {
		rq_error(r, API_EBADREQ, "fork takes no fields");
		return;
	}
	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->context_fork(BE(r)->ctx, &r->call, r->id, r->tail, &c, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 201, api_context_json(&c));
}

void
h_context_snapshot(struct rq *r)
{
	static const char *const fields[] = { "name", NULL };
	struct api_snapshot s;
	struct api_error err;
	const char *name = NULL;
	int rc;

	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "name", 1, &name))
		return;
	/* The vmm's file names: no dots. */
	if (!api_valid_id(name, strlen(name)) || strchr(name, '.') != NULL ||
	    strlen(name) >= sizeof(s.name)) {
		rq_error(r, API_EBADREQ,
		    "name must be 1 to %zu of [A-Za-z0-9_-]",
		    sizeof(s.name) - 1);
		return;
	}
	memset(&s, 0, sizeof(s));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_snapshot(
	    BE(r)->ctx, &r->call, r->id, r->tail, name, &s, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 201, snapshot_json(&s));
}

void
h_context_snapshots(struct rq *r)
{
	struct api_snapshot *ss = NULL;
	struct api_error err;
	size_t n = 0, i;
	json_t *arr;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_snapshots(
	    BE(r)->ctx, &r->call, r->id, r->tail, &ss, &n, &err);
	if (rc != API_OK) {
		free(ss);
		rq_backend_error(r, rc, &err);
		return;
	}
	arr = json_array();
	for (i = 0; i < n; i++)
		json_array_append_new(arr, snapshot_json(&ss[i]));
	free(ss);
	rq_json(r, 200, arr);
}

/* DELETE .../contexts/{cid}/snapshots?name=NAME */
void
h_context_snapshot_delete(struct rq *r)
{
	struct api_error err;
	char name[API_ID_MAX + 1];
	int rc;

	if (rq_query(r, "name", name, sizeof(name), 1) < 0)
		return;
	if (!api_valid_id(name, strlen(name)) || strchr(name, '.') != NULL) {
		rq_error(r, API_EBADREQ, "name is not a snapshot's name");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_snapshot_delete(
	    BE(r)->ctx, &r->call, r->id, r->tail, name, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

/* ---- a cell's reply --------------------------------------------------- */

/* The fields of a result passed on: E2B's, by type. */
static const char *const result_strings[] = { "text", "html", "markdown", "svg",
	"png", "jpeg", "latex", "pdf", "javascript" };

static json_t *
clean_result(json_t *in)
{
	json_t *o = json_object(), *v;
	size_t i;

	for (i = 0; i < sizeof(result_strings) / sizeof(result_strings[0]); i++)
		if ((v = json_object_get(in, result_strings[i])) != NULL &&
		    json_is_string(v))
			json_object_set(o, result_strings[i], v);
	if ((v = json_object_get(in, "json")) != NULL)
		json_object_set(o, "json", v);
	json_object_set_new(o, "is_main_result",
	    json_boolean(json_is_true(json_object_get(in, "is_main_result"))));
	return o;
}

#define RESULTS_MAX 64

json_t *
api_results_decode(const char *text, size_t len)
{
	json_t *v, *arr = json_array(), *x;
	size_t i;

	if (arr == NULL || text == NULL)
		return arr;
	v = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	if (json_is_array(v))
		json_array_foreach(v, i, x)
		{
			if (i >= RESULTS_MAX)
				break;
			if (json_is_object(x))
				json_array_append_new(arr, clean_result(x));
		}
	json_decref(v);
	return arr;
}

static const char *
str_of(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	return json_is_string(v) ? json_string_value(v) : "";
}

/* One line of the driver's, or NULL when it is not one we pass on. */
static json_t *
clean_line(json_t *in)
{
	const char *type = str_of(in, "type");
	json_t *o;

	if (strcmp(type, "stdout") == 0 || strcmp(type, "stderr") == 0) {
		json_t *t = json_object_get(in, "text");

		return json_pack("{s:s,s:s%}", "type", type, "text",
		    json_is_string(t) ? json_string_value(t) : "",
		    json_is_string(t) ? json_string_length(t) : 0);
	}
	if (strcmp(type, "result") == 0) {
		o = clean_result(in);
		json_object_set_new(o, "type", json_string("result"));
		return o;
	}
	if (strcmp(type, "error") == 0)
		return json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name",
		    str_of(in, "name"), "value", str_of(in, "value"),
		    "traceback", str_of(in, "traceback"));
	if (strcmp(type, "number_of_executions") == 0 &&
	    json_is_integer(json_object_get(in, "execution_count")))
		return json_pack("{s:s,s:I}", "type", type, "execution_count",
		    json_integer_value(json_object_get(in, "execution_count")));
	return NULL;
}

static void
append_text(struct http_buf *b, json_t *line)
{
	json_t *t = json_object_get(line, "text");

	http_buf_add(b, json_string_value(t), json_string_length(t));
}

/*
 * The driver's lines (out) and the raw output (err) of a cell, decoded:
 * an object with "lines" (what the ndjson reply sends: the cleaned lines
 * in order, the raw output as a last stderr line, number_of_executions
 * last) and the one-object reply's "stdout", "stderr", "logs",
 * "results", "error" and "execution_count". Lines that are not JSON
 * objects of a known type are dropped. NULL when out of memory.
 */
/* One of the driver's lines (untrusted, n bytes without its newline),
 * cleaned, or NULL when it is not a JSON object of a known type. */
static json_t *
cell_line(const char *p, size_t n)
{
	json_error_t jerr;
	json_t *v, *line;

	if ((v = json_loadb(p, n, JSON_REJECT_DUPLICATES, &jerr)) == NULL)
		return NULL;
	line = json_is_object(v) ? clean_line(v) : NULL;
	json_decref(v);
	return line;
}

json_t *
api_cell_decode(
    const char *out, size_t out_len, const char *err, size_t err_len)
{
	struct http_buf so, se;
	json_t *lines = json_array(), *results = json_array(),
	       *log_out = json_array(), *log_err = json_array(), *error = NULL,
	       *count = NULL, *line, *o, *r = NULL;
	/* out is NULL when there is nothing (a streamed cell's rest). */
	const char *p = out, *end = out != NULL ? out + out_len : NULL, *nl;
	const char *type;

	http_buf_init(&so);
	http_buf_init(&se);
	while (p != NULL && p < end) {
		if ((nl = memchr(p, '\n', (size_t)(end - p))) == NULL)
			nl = end;
		line = cell_line(p, (size_t)(nl - p));
		p = nl + 1;
		if (line == NULL)
			continue;
		type = str_of(line, "type");
		if (strcmp(type, "number_of_executions") == 0) {
			json_decref(count);
			count = line;
			continue;
		}
		if (strcmp(type, "stdout") == 0) {
			append_text(&so, line);
			json_array_append(
			    log_out, json_object_get(line, "text"));
		} else if (strcmp(type, "stderr") == 0) {
			append_text(&se, line);
			json_array_append(
			    log_err, json_object_get(line, "text"));
		} else if (strcmp(type, "result") == 0) {
			o = json_deep_copy(line);
			json_object_del(o, "type");
			json_array_append_new(results, o);
		} else if (error == NULL) {
			error = json_deep_copy(line);
			json_object_del(error, "type");
		}
		json_array_append_new(lines, line);
	}
	/* Raw writes to descriptors 1 and 2, past the driver. */
	if (err_len > 0 &&
	    (line = json_pack("{s:s,s:o}", "type", "stderr", "text",
	         bytes_string(err, err_len))) != NULL) {
		append_text(&se, line);
		json_array_append(log_err, json_object_get(line, "text"));
		json_array_append_new(lines, line);
	}
	if (count != NULL)
		json_array_append(lines, count);
	if (!so.oom && !se.oom)
		r = json_pack("{s:O,s:s%,s:s%,s:{s:O,s:O},s:O,s:O,s:O}",
		    "lines", lines, "stdout", so.data ? so.data : "", so.len,
		    "stderr", se.data ? se.data : "", se.len, "logs", "stdout",
		    log_out, "stderr", log_err, "results", results, "error",
		    error != NULL ? error : json_null(), "execution_count",
		    count != NULL ? json_object_get(count, "execution_count")
		                  : json_null());
	json_decref(lines);
	json_decref(results);
	json_decref(log_out);
	json_decref(log_err);
	json_decref(error);
	json_decref(count);
	http_buf_free(&so);
	http_buf_free(&se);
	return r;
}

/* One line of the ndjson reply. */
static void
ndjson_line(struct http_buf *b, json_t *line)
{
	char *s = json_dumps(line, JSON_COMPACT);

	if (s == NULL) {
		b->oom = 1;
		return;
	}
	http_buf_puts(b, s);
	http_buf_puts(b, "\n");
	free(s);
}

/* ---- a cell's lines as they come -------------------------------------- */

void
api_cell_stream_init(struct api_cell_stream *cs)
{
	http_buf_init(&cs->partial);
	cs->count = NULL;
}

void
api_cell_stream_free(struct api_cell_stream *cs)
{
	http_buf_free(&cs->partial);
	json_decref(cs->count);
	cs->count = NULL;
}

/*
 * The vmm passes on the driver's whole lines, but a line longer than a
 * message comes in pieces: what follows the last newline waits for the
 * rest. A number_of_executions is held back for the end, which comes
 * only once the cell is acknowledged (journaled), so a client never
 * counts a cell the context could still lose.
 */
void
api_cell_stream_feed(struct api_cell_stream *cs, const char *data, size_t len,
    struct http_buf *out)
{
	const char *p, *end, *nl;
	json_t *line;
	size_t used;

	if (len == 0)
		return;
	http_buf_add(&cs->partial, data, len);
	if (cs->partial.oom) {
		out->oom = 1;
		return;
	}
	p = cs->partial.data;
	end = p + cs->partial.len;
	while ((nl = memchr(p, '\n', (size_t)(end - p))) != NULL) {
		line = cell_line(p, (size_t)(nl - p));
		p = nl + 1;
		if (line == NULL)
			continue;
		if (strcmp(str_of(line, "type"), "number_of_executions") == 0) {
			json_decref(cs->count);
			cs->count = line;
			continue;
		}
		ndjson_line(out, line);
		json_decref(line);
	}
	used = (size_t)(p - cs->partial.data);
	memmove(cs->partial.data, p, cs->partial.len - used);
	cs->partial.len -= used;
}

/*
 * The cell's end (its reply, after what was streamed): the rest of its
 * lines, the raw output as a stderr line, then the last
 * number_of_executions, in the order of api_cell_decode's lines, so the
 * client reads what a whole reply would have held. -1 out of memory.
 */
int
api_cell_stream_end(struct api_cell_stream *cs, const char *out, size_t out_len,
    const char *err, size_t err_len, struct http_buf *o)
{
	json_t *d, *lines, *line;
	size_t i;

	http_buf_add(&cs->partial, out, out_len);
	if (cs->partial.oom ||
	    (d = api_cell_decode(
	         cs->partial.data, cs->partial.len, err, err_len)) == NULL)
		return -1;
	lines = json_object_get(d, "lines");
	json_array_foreach(lines, i, line) ndjson_line(o, line);
	if (json_is_null(json_object_get(d, "execution_count")) &&
	    cs->count != NULL)
		ndjson_line(o, cs->count);
	json_decref(d);
	cs->partial.len = 0;
	return o->oom ? -1 : 0;
}

void
reply_cell(struct rq *r, struct api_run_result *res)
{
	struct http_buf nd;
	json_t *d, *line, *error;
	size_t i;

	d = api_cell_decode(res->out, res->out_len, res->err, res->err_len);
	free(res->out);
	free(res->err);
	free(res->results);
	res->out = res->err = res->results = NULL;
	if (d == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	if (rq_accepts_ndjson(r)) {
		http_buf_init(&nd);
		json_array_foreach(json_object_get(d, "lines"), i, line)
		    ndjson_line(&nd, line);
		if (nd.oom)
			rq_error(r, API_EINTERNAL, "Out of memory");
		else
			rq_raw(r, 200, "application/x-ndjson", nd.data, nd.len);
		http_buf_free(&nd);
		json_decref(d);
		return;
	}
	json_object_del(d, "lines");
	error = json_object_get(d, "error");
	json_object_set_new(
	    d, "exit_code", json_integer(json_is_object(error)));
	json_object_set_new(
	    d, "duration_ms", json_integer((json_int_t)res->duration_ms));
	json_object_set_new(d, "reason",
	    res->reason[0] ? json_string(res->reason) : json_null());
	rq_json(r, 200, d);
}

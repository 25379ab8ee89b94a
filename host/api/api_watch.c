/*
 * GET /v1/sandboxes/{id}/files/watch?path=DIR: a server-sent event
 * stream of the paths created, modified and deleted under a directory of
 * the workspace (docs/api.yaml). The reply is always an event stream,
 * whatever Accept says: the backend defers it and sends the events as
 * they come (api_stream_event), then ends it (api_stream_end).
 */
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"
#include "host/api/e2b_wire.h"

#define WATCH_PATH_MAX 1024

void
h_file_watch(struct rq *r)
{
	struct api_error err;
	char path[WATCH_PATH_MAX];
	int rc;

	if (rq_query(r, "path", path, sizeof(path), 1) != 1)
		return;
	memset(&err, 0, sizeof(err));
	rc = r->api->be->file_watch(
	    r->api->be->ctx, &r->call, r->id, path, &err);
	if (rc == API_PENDING && r->pending != NULL)
		return;
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}

/* ---- event streams that are not runs (files/watch) ---------------------- */

void
api_set_alive(struct api *a, api_alive_fn fn, void *arg)
{
	a->alive_fn = fn;
	a->alive_arg = arg;
}

int
api_pending_alive(const struct api_pending *p)
{
	struct api *a = p->api;

	return a->alive_fn == NULL || a->alive_fn(a->alive_arg, p->conn);
}

/* One event as SSE text; refused (nothing added) if a field would break
 * the framing. */
static void
stream_event_text(struct http_buf *ev, const char *event, const char *data_json)
{
	if (event == NULL) {
		http_buf_puts(ev, ": keep-alive\n\n");
		return;
	}
	if (strpbrk(event, "\r\n") != NULL ||
	    strpbrk(data_json, "\r\n") != NULL)
		return;
	http_buf_printf(ev, "event: %s\ndata: %s\n\n", event, data_json);
}

static void
envelope_json(struct http_buf *ev, unsigned flags, json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (s == NULL) {
		ev->oom = 1;
		return;
	}
	e2b_envelope_put(ev, flags, s, strlen(s));
	free(s);
}

/*
 * A watch event as envd's WatchDirResponse (Connect JSON): ready is
 * start, created, modified and deleted are EVENT_TYPE_CREATE, _WRITE
 * and _REMOVE with the path relative to the watched directory (nested
 * ones only when recursive), a keep-alive is keepalive; dropped has no
 * counterpart and is left out.
 */
static void
e2b_watch_event(struct api_pending *p, struct http_buf *ev, const char *event,
    const char *data_json)
{
	static const struct {
		const char *keep, *envd;
	} types[] = { { "created", "EVENT_TYPE_CREATE" },
		{ "modified", "EVENT_TYPE_WRITE" },
		{ "deleted", "EVENT_TYPE_REMOVE" } };
	const char *path, *rel, *type = NULL;
	size_t rl = strlen(p->e2b_watch);
	json_t *d;

	if (event == NULL) {
		envelope_json(ev, 0, json_pack("{s:{}}", "keepalive"));
		return;
	}
	if (strcmp(event, "ready") == 0) {
		envelope_json(ev, 0, json_pack("{s:{}}", "start"));
		return;
	}
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strcmp(event, types[i].keep) == 0)
			type = types[i].envd;
	if (type == NULL ||
	    (d = json_loads(data_json, JSON_DECODE_ANY, NULL)) == NULL)
		return;
	path = json_string_value(json_object_get(d, "path"));
	/* "/" is watched as "/": its children are "/name". */
	if (rl == 1)
		rl = 0;
	if (path != NULL && strncmp(path, p->e2b_watch, rl) == 0 &&
	    path[rl] == '/' && path[rl + 1] != '\0') {
		rel = path + rl + 1;
		if (p->e2b_watch_recursive || strchr(rel, '/') == NULL)
			envelope_json(ev, 0,
			    json_pack("{s:{s:s,s:s}}", "filesystem", "name",
			        rel, "type", type));
	}
	json_decref(d);
}

void
api_stream_event(
    struct api_pending *p, const char *event, const char *data_json)
{
	struct api *a = p->api;
	struct http_buf ev, out;

	http_buf_init(&ev);
	http_buf_init(&out);
	if (!p->streaming) {
		stream_head(p, &out);
		p->streaming = 1;
	}
	if (p->e2b_watch != NULL)
		e2b_watch_event(p, &ev, event, data_json);
	else
		stream_event_text(&ev, event, data_json);
	stream_chunk(p, &out, ev.data, ev.len);
	if (!ev.oom && !out.oom && a->resume_fn != NULL)
		a->resume_fn(
		    a->resume_arg, p->conn, out.data, out.len, API_RESUME_MORE);
	http_buf_free(&ev);
	http_buf_free(&out);
}

void
api_stream_end(struct api_pending *p, const char *event, const char *data_json)
{
	struct api *a = p->api;
	struct http_buf ev, out;
	int close = p->close || p->http10;

	http_buf_init(&ev);
	http_buf_init(&out);
	if (!p->streaming) {
		stream_head(p, &out);
		p->streaming = 1;
	}
	if (p->e2b_watch != NULL)
		/* envd's watch ends cleanly: {} as the stream's end. */
		e2b_envelope_put(&ev, E2B_ENV_END, "{}", 2);
	else if (event != NULL)
		stream_event_text(&ev, event, data_json);
	stream_chunk(p, &out, ev.data, ev.len);
	if (!p->http10)
		http_buf_puts(&out, "0\r\n\r\n");
	if (ev.oom || out.oom) {
		out.len = 0;
		close = 1;
	}
	a->req_count[p->ri * API_STATUS_SLOTS + (size_t)status_slot(200)]++;
	api_hist_add(&a->req_hist[p->ri], mono_s() - p->t0);
	a->pending--;
	if (a->resume_fn != NULL)
		a->resume_fn(a->resume_arg, p->conn, out.data, out.len,
		    close ? API_RESUME_CLOSE : 0);
	http_buf_free(&ev);
	http_buf_free(&out);
	http_buf_free(&p->acc_out);
	http_buf_free(&p->acc_err);
	free(p->e2b_watch);
	free(p);
}

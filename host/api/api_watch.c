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
	if (event != NULL)
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
	free(p);
}

/*
 * files/watch, from the front's side: the vmm watches the directory
 * (host/vmmproc/vmm_watch.c) and sends what changes as MSG_VMM_WATCH_EVENTS
 * under the request's id; each becomes one server-sent event to the
 * client: `ready` first, then `created`, `modified`, `deleted` ({"path",
 * "type"}), `dropped` ({"count"}: events over the bounds), and `end`
 * ({"reason"}) when the sandbox or the directory goes. A comment every
 * WATCH_BEAT_MS keeps the connection alive; a client that has gone
 * stops the watch at the vmm.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "host/front/front_backend_int.h"
#include "host/vmm_msg.h"
#include "lib/clock.h"
#include "lib/log.h"

#define WATCH_BEAT_MS 15000

struct fb_watch {
	struct fb_watch *next;
	uint64_t id; /* the vmm's name for it: the request id */
	struct api_pending *pending;
	uint64_t beat_at; /* monotonic ms */
};

static void
event(struct fb_watch *w, const char *name, json_t *data)
{
	char *s = json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII);

	json_decref(data);
	if (s == NULL)
		return;
	api_stream_event(w->pending, name, s);
	free(s);
}

/* A path as a JSON string: names are bytes, not always UTF-8; a byte
 * that is not is shown as '?'. */
static json_t *
path_string(const char *p, size_t n)
{
	json_t *j;
	char *c;

	if ((j = json_stringn(p, n)) != NULL || (c = malloc(n + 1)) == NULL)
		return j;
	for (size_t i = 0; i < n; i++)
		c[i] = (unsigned char)p[i] < 0x80 ? p[i] : '?';
	j = json_stringn(c, n);
	free(c);
	return j;
}

static void
end(struct front_backend *fb, struct fb_watch *w, const char *reason)
{
	struct fb_watch **pp;
	json_t *data = json_pack("{s:s}", "reason", reason);
	char *s = data != NULL
	    ? json_dumps(data, JSON_COMPACT | JSON_ENSURE_ASCII)
	    : NULL;

	json_decref(data);
	api_stream_end(w->pending, s != NULL ? "end" : NULL, s);
	free(s);
	for (pp = &fb->watches; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	free(w);
}

static int
fb_file_watch(void *arg, const struct api_call *call, const char *id,
    const char *path, struct api_error *err)
{
	struct front_backend *fb = arg;
	struct fb_authz *a = call->authz;
	struct msg_vmm_watch *q;
	struct msg_vmm_watch_reply r;
	struct msg_vmm_watch_stop stop;
	struct fb_watch *w;
	size_t rlen = sizeof(r);
	int rc;

	if (a == NULL || a->link != PROC_VMM)
		return fb_fail(err, API_EINTERNAL, "Internal error");
	if ((q = calloc(1, sizeof(*q))) == NULL)
		return fb_fail(err, API_EINTERNAL, "Out of memory");
	q->grant = a->d.grant;
	strlcpy(q->id, id, sizeof(q->id));
	if (strlcpy(q->path, path, sizeof(q->path)) >= sizeof(q->path)) {
		free(q);
		return fb_fail(err, API_EBADREQ, "path too long");
	}
	rc = fb_call(fb, PROC_VMM, MSG_VMM_WATCH, a->reqid, q, sizeof(*q), -1,
	    MSG_VMM_WATCH_REPLY, 0, &r, &rlen, NULL, err);
	free(q);
	if (rc != API_OK)
		return rc > API_ERR_COUNT ? API_EUNAVAIL : rc;
	if ((rc = fb_sbx_error((int)r.status, err)) != API_OK)
		return rc;
	switch (r.error) {
	case 0:
		break;
	case ENOENT:
		return fb_fail(err, API_ENOTFOUND, "No such directory");
	case ENOTDIR:
	case ELOOP:
		return fb_fail(err, API_EBADREQ, "path is not a directory");
	case EMFILE:
		err->retry_after = 5;
		return fb_fail(err, API_ERATE,
		    "Too many watches (at most %d a sandbox, %d in all)",
		    WATCH_PER_SANDBOX, WATCH_MAX);
	default:
		return fb_fail(err, API_EBADREQ, "Cannot watch %s: %s", path,
		    strerror(r.error));
	}
	memset(&stop, 0, sizeof(stop));
	stop.watch = a->reqid;
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->pending = api_defer(call)) == NULL) {
		free(w);
		if (fb->ctx->fd[PROC_VMM] >= 0)
			msg_send(fb->ctx->fd[PROC_VMM], MSG_VMM_WATCH_STOP, 0,
			    ++fb->next_reqid, &stop, sizeof(stop), -1);
		return fb_fail(
		    err, API_EINTERNAL, "A watch needs a connection");
	}
	w->id = a->reqid;
	w->beat_at = mono_ms() + WATCH_BEAT_MS;
	w->next = fb->watches;
	fb->watches = w;
	fb_audit_event(fb, call, "files.watch", id, path);
	event(w, "ready", json_pack("{s:s}", "path", path));
	return API_PENDING;
}

static const char *const kind_name[] = {
	[WATCH_CREATED] = "created",
	[WATCH_MODIFIED] = "modified",
	[WATCH_DELETED] = "deleted",
};

static const char *const end_name[] = {
	[WATCH_END_SANDBOX] = "the sandbox is gone",
	[WATCH_END_DIR] = "the directory was deleted or moved",
	[WATCH_END_STOPPED] = "stopped",
};

static int
h_watch_events(struct proc_ctx *ctx, const struct msg *m)
{
	struct front_backend *fb = *(struct front_backend **)ctx->arg;
	struct msg_vmm_watch_events h;
	struct fb_watch *w;
	const uint8_t *p;
	size_t off;
	uint32_t i;

	p = m->data;
	if (watch_events_check(p, m->hdr.len, &h) != 0)
		return -1;
	for (w = fb->watches; w != NULL && w->id != m->hdr.reqid; w = w->next)
		;
	if (w == NULL)
		return 0; /* ended here already */
	for (i = 0, off = sizeof(h); i < h.count; i++) {
		const char *path;
		uint8_t kind;
		int is_dir;
		size_t n;

		off = watch_events_entry(p, off, &kind, &is_dir, &path, &n);
		event(w, kind_name[kind],
		    json_pack("{s:o,s:s}", "path", path_string(path, n), "type",
		        is_dir ? "dir" : "file"));
	}
	if (h.dropped != 0)
		event(w, "dropped",
		    json_pack("{s:I}", "count", (json_int_t)h.dropped));
	if (h.end != WATCH_GOING)
		end(fb, w, end_name[h.end]);
	return 0;
}

const struct msg_handler fb_watch_handlers[] = {
	{ MSG_VMM_WATCH_EVENTS, PROC_BIT(PROC_VMM), MSG_MAX_PAYLOAD,
	    MSG_H_VARIABLE, h_watch_events },
};
const size_t fb_watch_nhandlers = nitems(fb_watch_handlers);

void
fb_watch_tick(struct front_backend *fb)
{
	struct fb_watch *w, *next;
	uint64_t now = mono_ms();

	for (w = fb->watches; w != NULL; w = next) {
		next = w->next;
		if (!api_pending_alive(w->pending)) {
			struct msg_vmm_watch_stop stop = { w->id };

			if (fb->ctx->fd[PROC_VMM] >= 0)
				msg_send(fb->ctx->fd[PROC_VMM],
				    MSG_VMM_WATCH_STOP, 0, ++fb->next_reqid,
				    &stop, sizeof(stop), -1);
			log_info("watch %llu: the client went",
			    (unsigned long long)w->id);
			end(fb, w, "the client went");
			continue;
		}
		if (now >= w->beat_at) {
			api_stream_event(w->pending, NULL, NULL);
			w->beat_at = now + WATCH_BEAT_MS;
		}
	}
}

void
fb_watch_end_all(struct front_backend *fb, const char *reason)
{
	while (fb->watches != NULL)
		end(fb, fb->watches, reason);
}

void
fb_watch_ops(struct api_backend *ops)
{
	ops->file_watch = fb_file_watch;
}

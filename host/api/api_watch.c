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
	if (r->api->be->file_watch == NULL) {
		rq_error(r, API_ENOTIMPL, "Not available on this server");
		return;
	}
	memset(&err, 0, sizeof(err));
	rc = r->api->be->file_watch(
	    r->api->be->ctx, &r->call, r->id, path, &err);
	if (rc == API_PENDING && r->pending != NULL)
		return;
	if (rc == API_OK || rc == API_PENDING)
		rc = API_EINTERNAL;
	rq_backend_error(r, rc, &err);
}

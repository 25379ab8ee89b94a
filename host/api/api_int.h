/* Internals shared by api.c (core) and api_routes.c (handlers). */
#ifndef KEEP_API_INT_H
#define KEEP_API_INT_H

#include <jansson.h>

#include "host/api/api.h"

#define API_HIST_BUCKETS 12
#define API_STATUS_SLOTS 23

struct api_hist {
	uint64_t bucket[API_HIST_BUCKETS]; /* cumulative on output only */
	uint64_t count;
	double sum;
};

struct api_route;

struct idem_entry {
	char key[256];
	char scope[256]; /* principal + route + sandbox */
	unsigned char hash[32];
	uint64_t at_ms;
	int status;
	char *body; /* malloc */
	size_t body_len;
	int used;
	int in_flight; /* a deferred reply not yet made: reserved */
	uint64_t serial; /* which reservation, for the deferred reply */
};

struct api {
	const struct api_backend *be;
	struct api_config cfg;
	uint64_t reqseq;
	uint32_t boot_nonce;
	/* metrics */
	uint64_t *req_count; /* nroutes+1 x API_STATUS_SLOTS */
	struct api_hist *req_hist; /* nroutes+1 */
	uint64_t decisions[2]; /* allow, deny */
	uint64_t runs;
	struct api_hist run_hist;
	uint64_t sandboxes_created, sandboxes_deleted;
	uint64_t conn_events[API_CONN_EVENT_COUNT];
	uint64_t refused[API_STATUS_SLOTS];
	/* idempotency */
	struct idem_entry *idem;
	/* deferred replies */
	api_resume_fn resume_fn;
	void *resume_arg;
	api_auth_fn auth_fn; /* a connection's bearer token verified */
	void *auth_arg;
	api_alive_fn alive_fn; /* is a deferred reply's client still there */
	void *alive_arg;
	uint64_t pending;
	uint64_t idem_serial; /* reservations made */
	struct api_pending *ws; /* terminal sessions (api_terminal.c) */
};

struct api_pending {
	struct api *api;
	uint64_t conn;
	size_t ri;
	double t0;
	int close;
	int head_only;
	int http10;
	int sse;
	int ndjson; /* Accept: application/x-ndjson (a context's cell) */
	int streaming; /* the head of an event stream has gone out */
	struct http_buf acc_out; /* streamed output of a non-SSE request */
	struct http_buf acc_err;
	char request_id[40];
	/* An Idempotency-Key reservation, filled in by the reply. */
	struct idem_entry *idem;
	uint64_t idem_serial;
	struct api_principal who; /* for the record the reply leaves */
	/* A terminal (host/api/api_terminal.c): the 101 head waits for the
	 * run's first sign of life; sessions are listed for their input. */
	int ws, ws_up, ws_gone;
	char ws_head[256];
	struct api_pending *ws_next;
};

/* One request in flight. */
struct rq {
	struct api *api;
	const struct http_request *req;
	struct http_buf *out;
	const struct api_route *route;
	char request_id[40];
	char id[API_ID_MAX + 1]; /* {id} from the path, or "" */
	char tail[API_ID_MAX + 1]; /* {name} for images */
	struct api_principal who;
	struct api_call call;
	json_t *body;
	int close;
	int head_only;
	int status;
	char retry_after[24];
	char allow[64]; /* 405: the methods the path has */
	int http10;
	int sse; /* when req is NULL (a deferred reply) */
	int ndjson; /* the same, for application/x-ndjson */
	int can_defer;
	uint64_t conn;
	size_t ri;
	double t0;
	struct api_pending *pending;
	int replayed;
};

typedef void (*api_handler)(struct rq *);

struct api_route {
	enum http_method method;
	const char *pattern; /* "/v1/sandboxes/{id}/execute" */
	api_handler fn;
	int cap; /* enum cap_id, or -1: authenticated only, -2: public */
	int json_body; /* 1: a JSON object body is required; 2: or none */
	int idempotent; /* honours Idempotency-Key */
	const char *name; /* metric label */
	int deferrable; /* the op may answer API_PENDING */
};

extern const struct api_route api_routes[];
extern const size_t api_nroutes;

/* Replies. */
void rq_json(struct rq *, int status, json_t *obj); /* steals obj */
void rq_error(struct rq *, enum api_err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rq_backend_error(struct rq *, int rc, const struct api_error *);
/* A refusal of the API layer's own, to the audit log (the backend's
 * audit_refused op); action NULL: the route's capability or name. */
void api_audit_refused(struct rq *, const char *action, int status,
    const char *rule, const char *reason);
void rq_raw(
    struct rq *, int status, const char *ctype, const void *body, size_t len);
void rq_no_content(struct rq *);

/* Inputs. */
int rq_query(
    struct rq *, const char *name, char *out, size_t outlen, int required);
int rq_fields(struct rq *, json_t *obj, const char *const *allowed);
int rq_str(
    struct rq *, json_t *obj, const char *key, int required, const char **out);
int rq_uint(
    struct rq *, json_t *obj, const char *key, uint64_t max, uint64_t *out);
int rq_kv(
    struct rq *, json_t *obj, const char *key, struct api_kv **out, size_t *n);
int rq_accepts_sse(struct rq *);
int rq_accepts_ndjson(struct rq *);

/* Live contexts (host/api/api_context.c). */
void h_context_create(struct rq *);
void h_context_list(struct rq *);
void h_context_delete(struct rq *);
void h_context_restart(struct rq *);
void h_context_fork(struct rq *);
void h_context_snapshot(struct rq *);
void h_context_snapshots(struct rq *);
void h_context_snapshot_delete(struct rq *);
/* The terminal (host/api/api_terminal.c). */
void h_terminal(struct rq *);
/* 1 when p is a terminal whose stream or end api_terminal.c handled. */
int api_ws_stream(struct api_pending *p, const void *data, size_t len);
int api_ws_end(struct api_pending *p, int rc, struct api_run_result *res);
/* Secrets (host/api/api_secrets.c). */
void h_secret_put(struct rq *);
void h_secret_delete(struct rq *);
void h_secret_list(struct rq *);
/* -1 (and a 400 sent) when a variable holds a malformed reference. */
int rq_env_refs_ok(struct rq *, const struct api_kv *kv, size_t n);
/* A context cell's reply from the driver's JSON lines in res->out. */
void reply_cell(struct rq *, struct api_run_result *res);
json_t *api_cell_decode(
    const char *out, size_t out_len, const char *err, size_t err_len);
/* A python execute's results (keep_once.py's JSON array, untrusted) as
 * the API's array of Result objects; never NULL but out of memory. */
json_t *api_results_decode(const char *text, size_t len);
int api_valid_id(const char *s, size_t n);
void api_observe_run(struct api *, uint64_t duration_ms);
void api_hist_add(struct api_hist *, double seconds);
void api_metrics(struct rq *);
void reply_run(struct rq *, struct api_run_result *);
void run_events(struct http_buf *, const struct api_run_result *);
void sse_event(struct http_buf *, const char *event, json_t *data);
json_t *bytes_string(const char *, size_t);
uint64_t api_now_ms(struct api *);

/* Event streams (host/api/api.c): the head, one chunk of events; the
 * streams that are not runs are in host/api/api_watch.c. */
void stream_head(struct api_pending *, struct http_buf *);
void stream_chunk(
    struct api_pending *, struct http_buf *, const void *, size_t);
/* The metrics slot of an HTTP status; the monotonic clock in seconds. */
int status_slot(int status);
double mono_s(void);

/* host/api/api_watch.c: files/watch. */
void h_file_watch(struct rq *);

/* host/api/api_sched.c: /v1/schedules. */
void h_schedule_create(struct rq *);
void h_schedule_list(struct rq *);
void h_schedule_get(struct rq *);
void h_schedule_update(struct rq *);
void h_schedule_delete(struct rq *);
void h_schedule_runs(struct rq *);

#endif

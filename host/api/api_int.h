/* Internals shared by api.c (core) and api_routes.c (handlers). */
#ifndef KEEP_API_INT_H
#define KEEP_API_INT_H

#include <jansson.h>

#include "host/api/api.h"

#define API_HIST_BUCKETS 12
#define API_STATUS_SLOTS 25

/* E2B's default contexts known to exist (host/api/api_e2b.c). */
#define API_E2B_CTX_CACHE 256

struct api_hist {
	uint64_t bucket[API_HIST_BUCKETS]; /* cumulative on output only */
	uint64_t count;
	double sum;
};

struct api_route;

/* The in-memory replies' bytes, in all: past it the oldest go. */
#define API_IDEM_BYTES_MAX ((size_t)64 << 20)

struct idem_entry {
	char key[256];
	char scope[256]; /* principal + route + sandbox */
	unsigned char hash[32];
	/* Which token may see the reply (its jti, caps and sandbox), and
	 * the key its copy in the store is sealed with (from the token's
	 * own bytes, so the store alone cannot open it). */
	unsigned char tok[32];
	unsigned char seal[32];
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
	/* What runs guests ("kvm", "trap"), and why none can, if so
	 * (api_set_platform): /healthz says both. */
	char platform[8];
	char platform_problem[96];
	/* keepd.yaml ports.domain: "{port}-{id}." under it is a port's
	 * host name (api_ports.c); "" none. */
	char ports_domain[128];
	int tls; /* the listener is TLS: links' cookies are Secure */
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
	const struct api_pipe_ops *pipe; /* a port's requests (api_ports.c) */
	void *pipe_arg;
	api_auth_fn auth_fn; /* a connection's bearer token verified */
	void *auth_arg;
	api_alive_fn alive_fn; /* is a deferred reply's client still there */
	void *alive_arg;
	uint64_t pending;
	uint64_t idem_serial; /* reservations made */
	size_t idem_bytes; /* the replies' bytes kept in idem */
	struct api_pending *ws; /* terminal sessions (api_terminal.c) */
	/* The ids of E2B's default contexts made (or found made), so that
	 * only a sandbox's first cell asks for one (api_e2b.c). */
	char e2b_ctx[API_E2B_CTX_CACHE][API_ID_MAX + 1];
	unsigned e2b_ctx_next;
};

/*
 * E2B-shaped routes (docs/e2b.md): where their token and sandbox come
 * from, and the shape of their replies and errors.
 */
enum api_e2b {
	E2B_NO = 0, /* keep's own route */
	/* E2B's control plane: the token in X-API-KEY; errors
	 * {"code":STATUS,"message":...} beside keep's envelope. */
	E2B_API,
	/* A sandbox's envd or code interpreter server: the sandbox in
	 * E2b-Sandbox-Id, the token in X-Access-Token (or
	 * E2B-Traffic-Access-Token); errors as E2B_API's. */
	E2B_SBX,
	/* envd's Connect RPC, unary with the JSON codec: a sandbox's
	 * route whose errors are Connect's {"code":"not_found",...}. */
	E2B_RPC,
	/* envd's Connect RPC, server streaming: enveloped messages, the
	 * errors in the stream's end (HTTP 200). */
	E2B_RPC_STREAM,
};

/*
 * A live cell's lines as they come (host/api/api_context.c), pure and
 * bounded by what is fed: feed each piece of the driver's lines (cut
 * anywhere); each whole line of a known type goes into out as an ndjson
 * line, cleaned, but number_of_executions, which is held for the end.
 * end takes the rest of the lines and the raw output, as the cell's
 * reply carries them, and puts out what api_cell_decode's lines would
 * have held after what was fed: 0, or -1 out of memory.
 */
struct api_cell_stream {
	struct http_buf partial; /* a line not whole yet */
	json_t *count; /* the last number_of_executions */
};
void api_cell_stream_init(struct api_cell_stream *);
void api_cell_stream_feed(struct api_cell_stream *, const char *data,
    size_t len, struct http_buf *out);
int api_cell_stream_end(struct api_cell_stream *, const char *out,
    size_t out_len, const char *err, size_t err_len, struct http_buf *o);
void api_cell_stream_free(struct api_cell_stream *);

/* E2B's cells that are commands, not a live context's (api_e2b.c). */
enum e2b_cmd_cell { E2B_CELL_NONE, E2B_CELL_BASH, E2B_CELL_NODE };
#define E2B_MARK_LEN 32

struct api_pending {
	struct api *api;
	uint64_t conn;
	size_t ri;
	/* As the request's rq: allowed, and its target (audit). */
	int authorized;
	char target[API_ID_MAX + 1];
	char client_request_id[40];
	double t0;
	int close;
	int head_only;
	int http10;
	int sse;
	int ndjson; /* Accept: application/x-ndjson (a context's cell) */
	int e2b; /* enum api_e2b of the route */
	/* E2B's default context of the cell, "" for another cell: one not
	 * found is forgotten (api_e2b.c). */
	char e2b_ctx[API_ID_MAX + 1];
	int streaming; /* the head of an event stream has gone out */
	uint64_t run_pid; /* a streaming run's, once started; else 0 */
	/* A live cell whose lines stream (api_stream_cell). */
	int cell;
	struct api_cell_stream cs;
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
	int e2b_pty; /* an E2B pty (api_e2b_rpc.c), listed with them */
	/* A command listed with them for its input (api_input_link), and
	 * its stdin: enum api_stdin. */
	int input_listed;
	int stdin_state;
	int reader; /* another reader of a run (api_stream_reader) */
	/* E2B's WatchDir (api_watch.c): the watched directory (malloc),
	 * whose events go out as envd's, nested ones only if recursive. */
	char *e2b_watch;
	int e2b_watch_recursive;
	/* E2B's bash or js (node) cell, run as a command (api_e2b.c):
	 * enum e2b_cmd_cell and its result's mark; its reply is cell
	 * lines. */
	int e2b_cell;
	char e2b_mark[E2B_MARK_LEN + 1];
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
	char client_request_id[40]; /* the client's X-Request-Id, or "" */
	char id[API_ID_MAX + 1]; /* {id} from the path, or "" */
	char tail[API_ID_MAX + 1]; /* {name} for images */
	/* E2B's WatchDir: what its pending reply takes (api_defer), before
	 * the watch's first event, which may come inside the op. */
	char *e2b_watch;
	int e2b_watch_recursive;
	/* E2B's cell run as a command: what its pending reply takes. */
	int e2b_cell;
	char e2b_mark[E2B_MARK_LEN + 1];
	struct api_principal who;
	struct api_call call;
	json_t *body;
	int close;
	int head_only;
	int status;
	char retry_after[24];
	/* E2B's X-Next-Token: the next page of a list, or "". */
	char next_token[API_ID_MAX + 1];
	char allow[64]; /* 405: the methods the path has */
	int http10;
	int sse; /* when req is NULL (a deferred reply) */
	int ndjson; /* the same, for application/x-ndjson */
	int e2b; /* enum api_e2b of the route (or of a deferred reply's) */
	int can_defer;
	int host_form; /* a port named by the Host header: the whole path
			  is the guest's */
	int link_from; /* enum api_link_from: a ports request by link */
	/* Headers of a reply that h_port_link or h_port sets (a redirect
	 * that leaves a link's cookie), "" when none. */
	const char *location, *set_cookie;
	uint64_t conn;
	size_t ri;
	double t0;
	struct api_pending *pending;
	int replayed;
	/* The policy allowed the route's capability (an allow entry is in
	 * the audit log), and the error code of the last error answered:
	 * an allowed request then refused gets a deny entry too. */
	int authorized;
	char err_code[32];
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
	int e2b; /* enum api_e2b */
	/*
	 * An E2B route: keep's route whose checks it makes. The backend
	 * sees that route's name (api_call.route), so its decision, lock
	 * and budget rules are the ones keep's own route gets; the table's
	 * capability must be that route's too (tests/unit/test_e2b.c).
	 * NULL: the route's own name.
	 */
	const char *as;
};

extern const struct api_route api_routes[];
extern const size_t api_nroutes;

/* Replies. */
void rq_json(struct rq *, int status, json_t *obj); /* steals obj */
/* obj as one compact JSON line on b (b->oom when it cannot); steals obj. */
void api_json_line(struct http_buf *b, json_t *obj);
/* A run answered as the lines in b (type), or 500 when b ran out of
 * memory; the run's buffers and b are freed. */
void api_lines_reply(struct rq *r, struct api_run_result *res,
    struct http_buf *b, const char *type);
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

/* An error reply with any status (rq_error's are api_err's). */
void rq_fail(struct rq *, int status, const char *code, const char *msg);
/* The route's authorization once more, for each further effect of one
 * request that keep's own routes make one request each (E2B's uploads
 * of several files): 0, or -1 and the refusal sent. */
int rq_reauthorize(struct rq *);

/* Inputs. */
/* A JSON object from buf, as a body is parsed (depth, duplicates); NULL
 * and a 400 sent when it is not one. */
json_t *rq_load_json(struct rq *, const char *buf, size_t len);
int rq_query(
    struct rq *, const char *name, char *out, size_t outlen, int required);
/* A hex digit's value, or -1 (rq_query's percent decoding, E2B's). */
int api_unhex(char c);
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
/* Variables as a JSON object (NULL: out of memory); a list of them
 * freed, keys and values. */
json_t *api_kv_json(const struct api_kv *kv, size_t n);
/* A command's args from obj's "args" (absent or null: none): an array
 * of at most 256 strings without NUL, into *args (calloc'd; the strings
 * are obj's) and c. 0, or -1 with the error sent. */
int rq_command_args(
    struct rq *r, json_t *obj, const char ***args, struct api_command *c);
void api_kv_free(struct api_kv *kv, size_t n);
void h_context_fork(struct rq *);
void h_context_snapshot(struct rq *);
void h_context_snapshots(struct rq *);
void h_context_snapshot_delete(struct rq *);
/* The terminal (host/api/api_terminal.c). */
void h_terminal(struct rq *);
void h_port(struct rq *); /* api_ports.c */
/* A request whose Host is "{port}-{id}.<ports domain>": the index of the
 * ports route for its method, id and port (as text) filled; else -1. */
long api_port_host(
    const struct api *, const struct http_request *, char *id, char *port);
/* A port's path segment as a number: 1..65535, or 0 when it is not one. */
unsigned api_port_number(const char *);
/* A port's links (api_ports.c): POST /v1/sandboxes/{id}/links, and the
 * credential of a ports request without Authorization (api.c's
 * authenticate asks it): 0, r->who the link's issuer and r->link_from
 * set; 1, no link (*tok: E2B's traffic token header, a bearer token to
 * verify as such, or NULL); -1, refused, the reply sent and audited. */
void h_port_link(struct rq *);
int api_port_link_auth(struct rq *, const char **tok, size_t *tlen);
#define API_LINK_TTL_MAX_S (30 * 24 * 3600)

/*
 * Where a link travels (host/api/api_link.c). The value's characters
 * are PASETO's ([A-Za-z0-9_.-]), 1 to API_TOKEN_MAX of them
 * (api_link_value_ok). api_link_query: keep_link=VALUE in a query; 1
 * found, 0 absent, -1 malformed or there twice. api_link_query_strip:
 * the query without any keep_link parameter (nothing at all when none
 * is left). api_link_cookie: the next keep_link cookie of a Cookie
 * header's value from *pos (0 at the start); 1 found, 0 no more, -1
 * malformed. api_link_cookie_strip: the cookies but keep_link ones, as
 * "a=b; c=d"; returns how many.
 */
#define API_LINK_PARAM "keep_link"
enum api_link_from {
	API_LINK_NONE = 0,
	API_LINK_FROM_HEADER, /* E2B-Traffic-Access-Token */
	API_LINK_FROM_QUERY,
	API_LINK_FROM_COOKIE
};
int api_link_value_ok(const char *v, size_t n);
int api_link_query(const char *q, size_t qlen, const char **val, size_t *vlen);
void api_link_query_strip(const char *q, size_t qlen, struct http_buf *b);
int api_link_cookie(
    const char *v, size_t len, size_t *pos, const char **val, size_t *vlen);
int api_link_cookie_strip(const char *v, size_t len, struct http_buf *b);
/* 1 when p is a terminal whose stream or end api_terminal.c handled. */
int api_ws_stream(struct api_pending *p, const void *data, size_t len);
int api_ws_end(struct api_pending *p, int rc, struct api_run_result *res);
/* Secrets (host/api/api_secrets.c). */
void h_secret_put(struct rq *);
void h_secret_delete(struct rq *);
void h_secret_list(struct rq *);
/* -1 (and a 400 sent) when a variable holds a malformed reference. */
int rq_env_refs_ok(struct rq *, const struct api_kv *kv, size_t n);
/* A live context as the API shows it. */
json_t *api_context_json(const struct api_context *);
/* A context cell's reply from the driver's JSON lines in res->out. */
void reply_cell(struct rq *, struct api_run_result *res);
json_t *api_cell_decode(
    const char *out, size_t out_len, const char *err, size_t err_len);
/* A python execute's results (keep_once.py's JSON array, untrusted) as
 * the API's array of Result objects; never NULL but out of memory. */
json_t *api_results_decode(const char *text, size_t len);
int api_valid_id(const char *s, size_t n);
/* An executable's name as commands name them (no '/', no shell). */
int api_valid_cmd(const char *s);
void api_observe_run(struct api *, uint64_t duration_ms);
void api_hist_add(struct api_hist *, double seconds);
void api_metrics(struct rq *);
void reply_run(struct rq *, struct api_run_result *);
/* A run's answer from the backend's rc, res and err: none yet when it
 * is pending, else the error or the result (res freed either way).
 * Returns rc. */
int rq_run_answer(struct rq *, int rc, struct api_run_result *res,
    const struct api_error *err);
/* Run command c for the request and answer it (rq_run_answer). */
void rq_command_run(struct rq *, const struct api_command *c);
void run_events(
    struct http_buf *, const struct api_run_result *, const char *platform);
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

/* host/api/api_routes.c: 0, or -1 and a 400 sent when path holds a ".."
 * component or is too long for the backend. */
/* A workspace path's bytes, NUL included: keep's routes and E2B's. */
#define PATH_MAX_API 1024
int rq_path_check(struct rq *, const char *path);
/* E2B's user's home (docs/e2b.md, "The machine's layout"): where E2B's
 * commands and cells start and what its relative paths are relative to. */
#define E2B_HOME "/home/user"
/* in as E2B means it, into out (PATH_MAX_API bytes): a relative path is
 * E2B_HOME's, "" and "." E2B_HOME itself; then checked as
 * rq_path_check. 0, or -1 and a 400 sent. */
int rq_e2b_path(struct rq *, const char *in, char *out, size_t outlen);
/* 0, or -1 and a 400 sent when a command's cwd is not an absolute path
 * (len: its length as given, so a NUL inside is seen). */
int rq_cwd_check(struct rq *, const char *cwd, size_t len);
json_t *iso_time(int64_t t);

/* host/api/api_e2b.c, api_e2b_rpc.c: E2B's routes (docs/e2b.md). */
/* The reply of an E2B cell run as a command: its lines (ndjson). */
void e2b_cmd_cell_reply(struct rq *, struct api_run_result *);
void h_e2b_sandbox_create(struct rq *);
void h_e2b_sandbox_pause(struct rq *);
void h_e2b_sandbox_get(struct rq *);
void h_e2b_sandbox_list(struct rq *);
void h_e2b_sandbox_delete(struct rq *);
void h_e2b_sandbox_timeout(struct rq *);
void h_e2b_sandbox_connect(struct rq *);
void h_e2b_health(struct rq *);
void h_e2b_execute(struct rq *);
void h_e2b_context_create(struct rq *);
void h_e2b_context_delete(struct rq *);
void h_file_read(struct rq *);
void h_e2b_file_write(struct rq *);
void h_e2b_list_dir(struct rq *);
void h_e2b_stat(struct rq *);
void h_e2b_make_dir(struct rq *);
void h_e2b_remove(struct rq *);
void h_e2b_move(struct rq *);
void h_e2b_process_list(struct rq *);
void h_e2b_process_signal(struct rq *);
void h_e2b_process_start(struct rq *);
/* The directories of path made, as envd makes them, each decided
 * (api_e2b.c): API_OK, an api_err, or E2B_REPLIED (a refusal sent). */
#define E2B_REPLIED (-1)
int e2b_mkdirs(
    struct rq *, const char *path, int last, int decided, struct api_error *);
/* A finished command's Connect stream (E2B_RPC_STREAM): the start event
 * when it has not gone out, the output left (as pty data when pty), the
 * end event and the stream's end; rc != API_OK: only the end, with the
 * error. */
void e2b_process_events(struct http_buf *, int started, int pty, int rc,
    const struct api_run_result *, const struct api_error *);
/* A streamed piece of a command's output as Connect events whose data
 * is field ("stdout", "stderr" or "pty"); pid: the run's (the start
 * event's, when started is 0), or 0. */
void e2b_process_output(struct http_buf *, int started, uint64_t pid,
    const char *field, const void *, size_t);
/* Runs whose input comes by other requests (api_terminal.c), found by
 * their sandbox, pid and owner: E2B's ptys (a terminal run whose output
 * goes out as a Connect stream) and streaming commands (E2B's Start,
 * keep's commands/run with stdin_stream), whose stdin is STDIN_OPEN
 * when they were started with a stdin stream. */
enum api_stdin { STDIN_NONE = 0, STDIN_OPEN, STDIN_CLOSED };
/* Bytes of input a request may carry: the vmm's pipe holds 16 times
 * as much unread (VMM_STDIN_PIPE_SIZE). */
#define API_INPUT_MAX 65536
void api_pty_link(struct api *, struct api_pending *);
void api_input_link(struct api *, struct api_pending *, enum api_stdin);
void api_pty_unlink(struct api_pending *);
struct api_pending *api_input_find(
    struct api *, const char *sandbox, const char *principal, uint64_t pid);
/* A terminal type's name keep passes as TERM: 1 to 32 of [A-Za-z0-9.+-]. */
int api_term_name_ok(const char *);
void h_e2b_process_input(struct rq *);
void h_e2b_process_close_stdin(struct rq *);
void h_e2b_process_connect(struct rq *);
void h_e2b_watch_dir(struct rq *);
/* The request's sandbox ends the body's key (seconds, 1 to 30 days) from
 * now (api_routes.c): 0 with *sb as it is then (sandbox_release it), 1
 * when the key is absent or null (nothing moved), -1 with the refusal
 * sent. keep's POST .../timeout, E2B's setTimeout and connect. */
int rq_sandbox_end(struct rq *, const char *key, struct api_sandbox *sb);
void sandbox_release(struct api_sandbox *);
void h_e2b_process_update(struct rq *);
void e2b_process_reply(struct rq *, struct api_run_result *);
/* A cell's reply for a default context that was not found: forgotten. */
void e2b_ctx_forget(struct api *, const char *cid);

/* host/api/api_sched.c: /v1/schedules. */
void h_schedule_create(struct rq *);
void h_schedule_list(struct rq *);
void h_schedule_get(struct rq *);
void h_schedule_update(struct rq *);
void h_schedule_delete(struct rq *);
void h_schedule_runs(struct rq *);

#endif

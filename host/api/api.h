/*
 * The sandbox API: router, handlers, JSON bodies, the error envelope,
 * metrics and SSE. The API layer owns the wire shapes; everything it does
 * not own (token verification, policy decisions, sandboxes, runs, files,
 * images, audit) it asks of a struct api_backend, an ops table that the
 * front process fills with calls over its socketpairs (and that
 * tests/api_fake.c fills in memory for tests).
 *
 * The service function is api_handle(): one parsed HTTP request in, one
 * complete HTTP response (status line to body) appended to a buffer out.
 * No I/O and no globals: the clock and randomness come through the api
 * object, so tests are deterministic.
 *
 * Backend conventions:
 * - Every op returns API_OK or an enum api_err, and on error may fill
 *   err->message (shown to the client; never a secret) and, for
 *   API_ERATE, err->retry_after (seconds).
 * - Inputs are validated by the API layer before an op is called: ids match
 *   [A-Za-z0-9_-]{1,64}, paths are relative or absolute workspace paths
 *   without NUL, strings are UTF-8 without NUL.
 * - Outputs that own memory (pointers marked "malloc") are allocated by
 *   the backend with malloc() and freed by the API layer with free().
 * - ops may be NULL: the route then answers 501.
 *
 * Caveats: ops are synchronous, except execute and command_run, which may
 * defer their reply (api_defer below) so that a long run does not hold the
 * event loop. Any other op that waits on another process blocks the loop
 * for that time.
 */
#ifndef KEEP_API_H
#define KEEP_API_H

#include <stddef.h>
#include <stdint.h>

#include "host/http/http.h"
#include "lib/caps.h"

enum api_err {
	API_OK = 0,
	API_EBADREQ = 1, /* 400 BAD_REQUEST */
	API_EUNAUTH = 2, /* 401 UNAUTHORIZED */
	API_EFORBIDDEN = 3, /* 403 FORBIDDEN */
	API_ENOTFOUND = 4, /* 404 NOT_FOUND */
	API_ECONFLICT = 5, /* 409 CONFLICT */
	API_ETOOLARGE = 6, /* 413 PAYLOAD_TOO_LARGE */
	API_ELOCKED = 7, /* 423 LOCK_REQUIRED */
	API_ERATE = 8, /* 429 RATE_LIMITED (+ Retry-After) */
	API_EINTERNAL = 9, /* 500 INTERNAL */
	API_EUNAVAIL = 10, /* 503 UNAVAILABLE (a child is restarting) */
	API_ESTORAGE = 11, /* 507 STORAGE_FULL */
	API_ENOTIMPL = 12, /* 501 NOT_IMPLEMENTED */
	API_EBADGATEWAY = 13, /* 502 BAD_GATEWAY: a sandbox's port */
	API_ERR_COUNT
};

/* "FORBIDDEN" etc. and the HTTP status of an error code. */
const char *api_err_code(enum api_err);
int api_err_status(enum api_err);

#define API_ID_MAX 64
#define API_MSG_MAX 256
#define API_TOKEN_MAX 2048

struct api_error {
	uint32_t retry_after; /* seconds, for API_ERATE */
	char message[API_MSG_MAX];
};

/* Who is calling: filled by the backend's authenticate op. */
struct api_principal {
	char sub[128]; /* principal name in the policy */
	char jti[64]; /* token id (for audit and revocation) */
	/* The jtis of the token's ancestors (it was attenuated from them),
	 * separated by spaces; "" for a token minted by an issuer. */
	char chain[8 * 64];
	char sbx[API_ID_MAX + 1]; /* "" or the only sandbox allowed */
	cap_set_t caps; /* the token's capabilities */
	int64_t exp; /* token expiry, unix seconds */
	/* Not a bearer token but a link to port link_port of sandbox sbx
	 * (docs/architecture.md, "Ports"); sub is who gave it. */
	int via_link;
	unsigned link_port;
};

/* A link to a guest's port, as minted (api_backend.port_link). */
struct api_link {
	char token[API_TOKEN_MAX + 1];
	char jti[64];
	int64_t expires_at; /* unix seconds */
};

/* An idempotent request's first reply, as kept (idem_load, idem_keep). */
struct api_idem {
	unsigned char hash[32]; /* BLAKE2b-256 of the request body */
	int status;
	char *body;
	size_t body_len;
};

/* Bytes of api_call.authz_room. */
#define API_AUTHZ_ROOM 464 /* a decision carries an injection's two names */

/* Passed to every op after authentication. */
struct api_call {
	const struct api_principal *who;
	const char *request_id; /* also the audit log's request id */
	/* The client's X-Request-Id (short and plain), "" when none: kept
	 * beside the server's own, never as it. */
	const char *client_request_id;
	/* The client's address as the front counts it ("" unknown), for
	 * the audit log's refusals without a principal. */
	const char *peer;
	enum cap_id cap; /* the capability this route needs */
	const char *route; /* metric label, e.g. "execute" */
	/* 1: one of E2B's routes (the backend answers a few things as E2B
	 * does: a sandbox token's life, docs/e2b.md). */
	int e2b;
	/*
	 * The backend's own: authorize may set it (typically to the grant
	 * the policy process minted) and the op that follows reads it, so
	 * the grant travels with the operation. The API layer only zeroes
	 * it before authorize.
	 */
	void *authz;
	/* The Keep-Lock header (a sandbox lock id), NULL when absent; not
	 * NUL-terminated. */
	const char *lock;
	size_t lock_len;
	/* The bearer token as received, for attenuation (the policy process
	 * re-verifies it); not NUL-terminated, valid during the call. */
	const char *token;
	size_t token_len;
	/* 1: the client reads a run's output as it comes (Accept:
	 * text/event-stream): the backend may call api_stream_run. */
	int sse;
	/* 1: the client reads a live cell's lines as they come (Accept:
	 * application/x-ndjson, and E2B's cells): the backend may call
	 * api_stream_cell for a cell. */
	int ndjson;
	/*
	 * Room for what authorize keeps for the op (authz may point here).
	 * It lives exactly as long as the call, however many other calls
	 * the backend has in flight meanwhile.
	 */
	_Alignas(16) unsigned char authz_room[API_AUTHZ_ROOM];
	/* A ports route's port (1-65535), else 0: authorize may ask the
	 * policy about it beside the route's decision, in the same round
	 * trip, for port_check to use. */
	unsigned port;
};

struct api_kv {
	char *key; /* malloc when returned by a backend */
	char *value; /* malloc when returned by a backend */
};

struct api_sandbox {
	char id[API_ID_MAX + 1];
	char image[128];
	int64_t created_at; /* unix seconds */
	int64_t expires_at;
	char status[16]; /* "running", "stopped" */
	struct api_kv *metadata; /* malloc, nmetadata entries */
	size_t nmetadata;
	/* Create only: the key its webhooks are signed with (hex), or "". */
	char webhook_secret[72];
};

struct api_sandbox_spec {
	const char *image;
	const struct api_kv *env;
	size_t nenv;
	const struct api_kv *metadata;
	size_t nmetadata;
	uint64_t ttl_s; /* 0: the backend's default */
	/* E2B's layout (docs/e2b.md): the workspace starts with
	 * /home/user. */
	int home_user;
};

struct api_token {
	char token[API_TOKEN_MAX];
	int64_t expires_at;
};

enum api_lang { API_LANG_PYTHON, API_LANG_JAVASCRIPT };

struct api_exec {
	const char *code;
	size_t code_len;
	enum api_lang language;
	uint64_t timeout_ms; /* 0: the policy's limit */
	const char *context_id; /* a live context's id, or NULL: a new run */
	const struct api_kv *env; /* env_vars: for this execute only */
	size_t nenv;
};

/* A live context (docs/contexts.md). */
struct api_context {
	char id[API_ID_MAX + 1];
	char language[16]; /* "python" */
	char cwd[256];
	char state[16]; /* "idle", "busy", "paused", "dead" */
	uint64_t execution_count;
	int64_t created_at;
};

/* A named snapshot of a live context (docs/contexts.md). */
struct api_snapshot {
	char name[API_ID_MAX + 1];
	char context_id[API_ID_MAX + 1]; /* the context it was taken from */
	char language[16];
	char cwd[256];
	uint64_t execution_count; /* the acknowledged cells it holds */
	uint64_t bytes; /* on disk, counted by the snapshots quota */
	int64_t created_at;
};

struct api_command {
	const char *cmd; /* an executable name, never a shell string */
	const char *const *args;
	size_t nargs;
	const struct api_kv *env;
	size_t nenv;
	/* NULL: the workspace root; else absolute, without NUL or ".."
	 * (the API checked), and a directory of the workspace, which the
	 * backend checks (API_ENOTFOUND otherwise, as a spawn's ENOENT). */
	const char *cwd;
	const char *stdin_data;
	size_t stdin_len;
	uint64_t timeout_ms;
	/* 1: stdin is a pipe that terminal_input feeds (API_TERM_DATA, then
	 * API_TERM_EOF) while the run streams; stdin_len is 0. Only with a
	 * streaming reply (call->sse), never in the background. */
	int stdin_stream;
};

struct api_run_result {
	char *out; /* malloc, stdout bytes */
	size_t out_len;
	char *err; /* malloc, stderr bytes */
	size_t err_len;
	int exit_code;
	uint64_t duration_ms;
	char reason[64]; /* "" or "timeout", "fault", "output-limit", ... */
	unsigned limits; /* API_LIMIT_*: limits its process tree met */
	/* API_LIMIT_EGRESS: the first destination refused, "" unknown
	 * (the result's "egress_refused"). */
	char egress[264];
	/* Bytes its guest sent and received through egress (the result's
	 * "egress_bytes", when either is not 0). */
	uint64_t egress_out, egress_in;
	int cell; /* out: a live context's JSON lines (docs/contexts.md) */
	/* malloc, a python execute's results as a JSON array (untrusted:
	 * written by the guest), or NULL: no results field. */
	char *results;
	size_t results_len;
};

/* The limits a run's process tree met without being stopped by them
 * (api_run_result.limits), as the API names them in "limits":
 * "processes" (a fork refused, EAGAIN), "memory" (a mapping or a fork
 * refused, ENOMEM). */
#define API_LIMIT_PROCESSES 0x1u
#define API_LIMIT_MEMORY 0x2u
/* "egress": a socket's destination outside the sandbox refused (EACCES;
 * docs/vmm.md, "Sockets"). */
#define API_LIMIT_EGRESS 0x4u
struct json_t;
/* Add "limits" to a run's JSON result o when the tree met any. */
void api_run_limits(struct json_t *o, unsigned limits, const char *egress);
/* Add "platform" (kvm or trap: what ran the guest) to a run's result. */
void api_run_platform(struct json_t *o, const char *platform);
/* Add "egress_bytes": {"out": N, "in": N} to a run's result when its
 * guest moved any bytes through egress. */
void api_run_egress_bytes(struct json_t *o, const struct api_run_result *res);

struct api_process {
	uint64_t pid;
	char cmd[128];
	char status[16]; /* "running", "exited" */
	int exit_code;
	int64_t started_at;
	int background; /* started by a background route */
};

struct api_dirent {
	char name[256];
	char type[8]; /* "file", "dir" */
	uint64_t size;
	int64_t mtime;
};

struct api_usage {
	uint64_t runs;
	uint64_t cpu_ms;
	uint64_t memory_bytes;
	uint64_t workspace_bytes;
	int64_t budget_remaining; /* -1: unlimited */
	double read_tokens; /* token-bucket levels; -1: unlimited */
	double write_tokens;
};

struct api_attenuate {
	cap_set_t caps; /* wanted; the API checks it is a subset */
	int64_t exp; /* wanted expiry; 0: the caller's */
	const char *sbx; /* NULL or a sandbox id */
};

struct api_policy_version {
	char version[64];
	char hash[80]; /* "blake2b:<64 hex>" */
	int64_t loaded_at;
};

struct api_check {
	const char *principal;
	enum cap_id cap;
	const char *target; /* may be NULL */
};

struct api_check_result {
	int allow;
	char rule[128]; /* the deciding rule's name or id */
	char location[160]; /* file:line */
	char explanation[API_MSG_MAX];
};

struct api_image {
	char name[128];
	char version[64];
	char digest[80]; /* "blake2b:" and 64 hex digits */
	uint64_t size;
	char languages[64]; /* "python,javascript" or "" */
};

struct api_audit_entry {
	uint64_t seq;
	int64_t time;
	char request_id[40];
	char client_request_id[40]; /* "" when none */
	char principal[128];
	char action[96];
	char target[160];
	char decision[16];
	char rule[128];
	char detail[160]; /* "reason=... status=..." and the like */
};

/* A schedule as GET shows it (docs/schedules.md). */
#define API_SCHED_NEXT 5
struct api_schedule {
	char id[API_ID_MAX + 1];
	char owner[128];
	char *spec; /* malloc: the definition, compact JSON */
	int64_t created_at, updated_at; /* unix seconds */
	int64_t last_fire_at; /* 0: never */
	int64_t next[API_SCHED_NEXT]; /* the next fire times, nnext of them */
	size_t nnext;
	uint64_t fires; /* fires so far */
};

/* One fire of a schedule. */
struct api_schedule_run {
	uint64_t seq;
	int64_t fire_at; /* the occurrence it was for */
	int64_t started_at, finished_at;
	char status[16]; /* "completed", "failed", "refused" */
	int exit_code;
	int catch_up; /* a fire missed while keepd was down */
	char sandbox[API_ID_MAX + 1];
	char run_id[API_ID_MAX + 1];
	char detail[API_MSG_MAX];
	char *out; /* malloc */
	size_t out_len;
	char *err; /* malloc */
	size_t err_len;
};

/* A terminal's start (docs/terminal.md). */
struct api_terminal {
	unsigned cols, rows; /* 1..1000 */
	const char *term; /* TERM for the shell */
	/* The program and its arguments (NULL: the image's sh -i), the
	 * environment beside TERM, and its directory (NULL: the root):
	 * E2B's pty names them (api_e2b_rpc.c). */
	const char *cmd;
	const char *const *args;
	size_t nargs;
	const struct api_kv *env;
	size_t nenv;
	const char *cwd;
};
enum api_term_input { API_TERM_DATA = 1, API_TERM_RESIZE, API_TERM_EOF };
struct api_pending;

/* A secret's metadata; its value never leaves keepd's processes. */
struct api_secret {
	char name[64];
	int64_t created_at, updated_at; /* unix ms */
	char set_by[128]; /* the principal of the last PUT */
};

struct api_page {
	const char *cursor; /* NULL: from the start */
	unsigned limit; /* 1..100 */
};

/*
 * The ops table. ctx is passed back to every op. The authenticate op maps
 * a bearer token to a principal (API_EUNAUTH with a message otherwise);
 * authorize is the policy decision for call->cap on target (API_EFORBIDDEN,
 * API_ERATE + retry_after, API_ELOCKED, ...). The API layer itself checks
 * that call->cap is among the token's caps and the sandbox scope before
 * either op is asked, so a backend never sees a request the token alone
 * rules out.
 */
struct api_backend {
	void *ctx;
	int (*authenticate)(void *ctx, const char *token, size_t len,
	    struct api_principal *out, struct api_error *err);
	int (*authorize)(void *ctx, struct api_call *, const char *target,
	    struct api_error *err);

	int (*sandbox_create)(void *ctx, const struct api_call *,
	    const struct api_sandbox_spec *, struct api_sandbox *out,
	    struct api_token *token, struct api_error *err);
	/* Sandbox id ends ttl_s seconds from now (1 to 30 days), sooner or
	 * later than before; *out is the sandbox as it is then. */
	int (*sandbox_timeout)(void *ctx, const struct api_call *,
	    const char *id, uint64_t ttl_s, struct api_sandbox *out,
	    struct api_error *err);
	/* Pause sandbox id (its commands end, its idle contexts save their
	 * memory images; API_ECONFLICT: paused already), or resume it (a
	 * sandbox not paused is left as it is); *out is it then. */
	int (*sandbox_pause)(void *ctx, const struct api_call *, const char *id,
	    struct api_sandbox *out, struct api_error *err);
	int (*sandbox_resume)(void *ctx, const struct api_call *,
	    const char *id, struct api_sandbox *out, struct api_error *err);
	/* A new sandbox with a copy of sandbox id's workspace, image and
	 * environment; spec gives only ttl_s and metadata. */
	int (*sandbox_fork)(void *ctx, const struct api_call *, const char *id,
	    const struct api_sandbox_spec *, struct api_sandbox *out,
	    struct api_token *token, struct api_error *err);
	/* Fills up to max entries; next[0] = 0 at the end of the list. */
	int (*sandbox_list)(void *ctx, const struct api_call *,
	    const struct api_page *, struct api_sandbox *out, size_t max,
	    size_t *n, char next[API_ID_MAX + 1], struct api_error *err);
	int (*sandbox_get)(void *ctx, const struct api_call *, const char *id,
	    struct api_sandbox *out, struct api_error *err);
	int (*sandbox_delete)(void *ctx, const struct api_call *,
	    const char *id, struct api_error *err);
	int (*sandbox_token)(void *ctx, const struct api_call *, const char *id,
	    struct api_token *out, struct api_error *err);

	int (*execute)(void *ctx, const struct api_call *, const char *id,
	    const struct api_exec *, struct api_run_result *out,
	    struct api_error *err);
	int (*execute_background)(void *ctx, const struct api_call *,
	    const char *id, const struct api_exec *, uint64_t *pid,
	    struct api_error *err);
	int (*execute_async)(void *ctx, const struct api_call *, const char *id,
	    const struct api_exec *, const char *webhook_url,
	    char run_id[API_ID_MAX + 1], struct api_error *err);
	int (*command_run)(void *ctx, const struct api_call *, const char *id,
	    const struct api_command *, struct api_run_result *out,
	    struct api_error *err);
	int (*command_background)(void *ctx, const struct api_call *,
	    const char *id, const struct api_command *, uint64_t *pid,
	    struct api_error *err);
	/* *out malloc, *n entries. */
	int (*processes)(void *ctx, const struct api_call *, const char *id,
	    struct api_process **out, size_t *n, struct api_error *err);
	/* sig: SIGKILL, or SIGTERM, SIGINT, SIGHUP for the run's processes
	 * to act on before SIGKILL follows (docs/api.yaml). */
	int (*kill)(void *ctx, const struct api_call *, const char *id,
	    uint64_t pid, int sig, struct api_error *err);

	/* *data malloc. */
	int (*file_read)(void *ctx, const struct api_call *, const char *id,
	    const char *path, char **data, size_t *len, struct api_error *err);
	int (*file_write)(void *ctx, const struct api_call *, const char *id,
	    const char *path, const void *data, size_t len,
	    struct api_error *err);
	/* *out malloc, *n entries. */
	int (*file_list)(void *ctx, const struct api_call *, const char *id,
	    const char *path, struct api_dirent **out, size_t *n,
	    struct api_error *err);
	int (*file_exists)(void *ctx, const struct api_call *, const char *id,
	    const char *path, int *exists, struct api_error *err);
	int (*file_remove)(void *ctx, const struct api_call *, const char *id,
	    const char *path, struct api_error *err);
	int (*file_mkdir)(void *ctx, const struct api_call *, const char *id,
	    const char *path, struct api_error *err);
	/* rename(2) in the workspace: replaces a file at to, as envd's Move;
	 * *out is the entry at to, once moved. */
	int (*file_move)(void *ctx, const struct api_call *, const char *id,
	    const char *from, const char *to, struct api_dirent *out,
	    struct api_error *err);

	/* *out malloc (keys and values too), *n entries. */
	int (*env_get)(void *ctx, const struct api_call *, const char *id,
	    struct api_kv **out, size_t *n, struct api_error *err);
	/* replace: PUT (the whole set) vs PATCH (merge). */
	int (*env_set)(void *ctx, const struct api_call *, const char *id,
	    const struct api_kv *kv, size_t n, int replace,
	    struct api_error *err);
	/* keys == NULL: delete all. */
	int (*env_delete)(void *ctx, const struct api_call *, const char *id,
	    const char *const *keys, size_t n, struct api_error *err);
	int (*system)(void *ctx, const struct api_call *, const char *id,
	    struct api_usage *out, struct api_error *err);

	int (*token_attenuate)(void *ctx, const struct api_call *,
	    const struct api_attenuate *, struct api_token *out,
	    struct api_error *err);
	/* Take the sandbox's write lock for ttl_s (0: the default), or
	 * release the one named by call->lock. */
	int (*sandbox_lock)(void *ctx, const struct api_call *, const char *id,
	    uint64_t ttl_s, char lock_id[API_ID_MAX + 1], int64_t *expires_at,
	    struct api_error *err);
	int (*sandbox_unlock)(void *ctx, const struct api_call *,
	    const char *id, struct api_error *err);
	/* Refuse the token with this jti from now until exp (unix s). */
	int (*token_revoke)(void *ctx, const struct api_call *, const char *jti,
	    int64_t exp, struct api_error *err);
	int (*policy_version)(void *ctx, const struct api_call *,
	    struct api_policy_version *out, struct api_error *err);
	int (*policy_check)(void *ctx, const struct api_call *,
	    const struct api_check *, struct api_check_result *out,
	    struct api_error *err);
	/* *out malloc, *n entries. */
	int (*image_list)(void *ctx, const struct api_call *,
	    struct api_image **out, size_t *n, struct api_error *err);
	int (*image_upload)(void *ctx, const struct api_call *,
	    const void *blob, size_t len, struct api_image *out,
	    struct api_error *err);
	int (*image_delete)(void *ctx, const struct api_call *,
	    const char *name, struct api_error *err);
	/* *out malloc, *n entries; next[0] = 0 at the end. */
	int (*audit_list)(void *ctx, const struct api_call *,
	    const struct api_page *, struct api_audit_entry **out, size_t *n,
	    char next[API_ID_MAX + 1], struct api_error *err);

	/*
	 * files/watch: start watching path (a directory) of sandbox id. On
	 * success the op has deferred its reply (api_defer) and returns
	 * API_PENDING; the events then go out with api_stream_event and the
	 * stream ends with api_stream_end.
	 */
	int (*file_watch)(void *ctx, const struct api_call *, const char *id,
	    const char *path, struct api_error *err);

	/*
	 * Schedules. spec and patch are JSON text the backend validates
	 * (API_EBADREQ with the reason); out->spec is malloc. list and runs
	 * fill *out (malloc, *n entries; runs newest first).
	 */
	int (*schedule_create)(void *ctx, const struct api_call *,
	    const char *spec, struct api_schedule *out, struct api_error *err);
	int (*schedule_list)(void *ctx, const struct api_call *,
	    struct api_schedule **out, size_t *n, struct api_error *err);
	int (*schedule_get)(void *ctx, const struct api_call *, const char *id,
	    struct api_schedule *out, struct api_error *err);
	int (*schedule_update)(void *ctx, const struct api_call *,
	    const char *id, const char *patch, struct api_schedule *out,
	    struct api_error *err);
	int (*schedule_delete)(void *ctx, const struct api_call *,
	    const char *id, struct api_error *err);
	int (*schedule_runs)(void *ctx, const struct api_call *, const char *id,
	    struct api_schedule_run **out, size_t *n, struct api_error *err);

	/*
	 * Optional: put a refusal the API layer decided itself in the audit
	 * log (401 for a missing or invalid token, 403 for a capability the
	 * token lacks, 404 for a sandbox outside the token's scope). action
	 * is the capability or the route, rule what refused it ("token",
	 * "token caps", "token scope"), reason the client's message.
	 */
	void (*audit_refused)(void *ctx, const struct api_call *,
	    const char *action, const char *target, int status,
	    const char *rule, const char *reason);

	/* Optional: extra Prometheus lines (sandboxes, boot histograms...). */
	void (*metrics)(void *ctx, struct http_buf *out);

	/*
	 * Optional: idempotency records that outlive the front's memory (a
	 * restart), for 24 h. scope names the principal, route and sandbox;
	 * key is the Idempotency-Key. idem_load: API_OK with *out (out->body
	 * malloc), or an error (API_ENOTFOUND: none) and the op runs.
	 * idem_keep: best effort; it may come after the call has ended (a
	 * deferred reply), so it gets only the principal.
	 */
	int (*idem_load)(void *ctx, const struct api_call *, const char *scope,
	    const char *key, struct api_idem *out, struct api_error *err);
	void (*idem_keep)(void *ctx, const struct api_principal *,
	    const char *scope, const char *key, const struct api_idem *rec);

	/* Live contexts of sandbox id; *out malloc, *n entries.
	 * context_create: cid names the new context (E2B's default
	 * contexts, docs/e2b.md; API_ECONFLICT when that id is taken), or
	 * is NULL: the backend makes a new id. */
	int (*context_create)(void *ctx, const struct api_call *,
	    const char *id, enum api_lang language, const char *cwd,
	    const char *cid, struct api_context *out, struct api_error *err);
	int (*context_list)(void *ctx, const struct api_call *, const char *id,
	    struct api_context **out, size_t *n, struct api_error *err);
	int (*context_delete)(void *ctx, const struct api_call *,
	    const char *id, const char *cid, struct api_error *err);
	int (*context_restart)(void *ctx, const struct api_call *,
	    const char *id, const char *cid, struct api_context *out,
	    struct api_error *err);
	/* A new context with cid's state (fork), or with snapshot name's
	 * (restore); a named snapshot of cid; cid's snapshots (*out
	 * malloc, *n entries). */
	int (*context_fork)(void *ctx, const struct api_call *, const char *id,
	    const char *cid, struct api_context *out, struct api_error *err);
	int (*context_restore)(void *ctx, const struct api_call *,
	    const char *id, const char *name, struct api_context *out,
	    struct api_error *err);
	int (*context_snapshot)(void *ctx, const struct api_call *,
	    const char *id, const char *cid, const char *name,
	    struct api_snapshot *out, struct api_error *err);
	int (*context_snapshots)(void *ctx, const struct api_call *,
	    const char *id, const char *cid, struct api_snapshot **out,
	    size_t *n, struct api_error *err);
	/* Delete snapshot name of the sandbox (cid: the route's context). */
	int (*context_snapshot_delete)(void *ctx, const struct api_call *,
	    const char *id, const char *cid, const char *name,
	    struct api_error *err);

	/*
	 * The terminal (docs/terminal.md): terminal_open starts an
	 * interactive shell run in sandbox id and defers its reply
	 * (api_defer, API_PENDING); its output comes as a streaming run's
	 * does. terminal_input passes the client's input (API_TERM_DATA),
	 * a new size (API_TERM_RESIZE) or the session's end (API_TERM_EOF)
	 * to the run of that pending reply; the same carries a command's
	 * stdin stream (api_command.stdin_stream: data and its end).
	 */
	int (*terminal_open)(void *ctx, const struct api_call *, const char *id,
	    const struct api_terminal *, struct api_error *err);
	void (*terminal_input)(void *ctx, struct api_pending *, int kind,
	    const void *data, size_t len, unsigned cols, unsigned rows);
	/*
	 * A second reader of a streaming command (E2B's Connect): the
	 * request of call defers its reply (api_defer, API_PENDING) and
	 * gets the output of the run of pending run (whose pid is pid)
	 * from now on, then its end, as the run's own reply does; nothing
	 * of what went out before. API_ENOTFOUND: no such running run;
	 * API_ERATE: it has as many readers as it takes.
	 */
	int (*run_attach)(void *ctx, const struct api_call *,
	    struct api_pending *run, uint64_t pid, struct api_error *err);

	/*
	 * Secrets (docs/secrets.md). secret_put seals value (len bytes) and
	 * keeps it under name; *created is 1 when the name was new. No op
	 * ever returns a value. secret_list: *out malloc, *n entries.
	 */
	int (*secret_put)(void *ctx, const struct api_call *, const char *name,
	    const char *value, size_t len, struct api_secret *out, int *created,
	    struct api_error *err);
	int (*secret_delete)(void *ctx, const struct api_call *,
	    const char *name, struct api_error *err);
	int (*secret_list)(void *ctx, const struct api_call *,
	    struct api_secret **out, size_t *n, struct api_error *err);
	/*
	 * Ports (docs/architecture.md, "Ports"): a TCP socket connected to
	 * 127.0.0.1:port in sandbox id's network namespace, made by the
	 * process that holds that namespace, never by the caller. *fd is
	 * the caller's to close. API_EUNAVAIL with err naming the port
	 * when nothing listens there. Optional: NULL answers 501.
	 */
	int (*port_open)(void *ctx, const struct api_call *, const char *id,
	    unsigned port, int *fd, struct api_error *err);
	/*
	 * Whether the policy exposes port of sandbox id to the caller (a
	 * decision that spends nothing; a refusal is audited): API_OK, or
	 * an error with err filled. Asked before every request through a
	 * port, before port_open or a kept connection. Optional.
	 */
	int (*port_check)(void *ctx, const struct api_call *, const char *id,
	    unsigned port, struct api_error *err);
	/*
	 * Links (optional, with port_open). link_verify: tok is a link (not
	 * a bearer token) that verifies, has not expired nor been revoked;
	 * *out is its issuer with via_link, link_port and sbx set (whether
	 * they are the request's is the caller's to check). API_EUNAUTH
	 * otherwise, API_EFORBIDDEN for a token of another audience (a
	 * bearer token: no link at all). port_link: a link to port of sandbox id for ttl_s
	 * seconds, if the policy lets the caller give one (API_EFORBIDDEN
	 * naming the rule otherwise); decided and audited.
	 */
	int (*link_verify)(void *ctx, const char *tok, size_t len,
	    struct api_principal *out, struct api_error *err);
	int (*port_link)(void *ctx, const struct api_call *, const char *id,
	    unsigned port, int64_t ttl_s, struct api_link *out,
	    struct api_error *err);
};

struct api;

struct api_config {
	uint64_t (*now_ms)(void *arg); /* wall clock, ms; NULL: real clock */
	void *now_arg;
	size_t idem_max; /* idempotency entries kept (default 4096) */
	/* their replies' bytes kept in memory, in all (default 64 MiB) */
	size_t idem_bytes_max;
	uint64_t idem_ttl_ms; /* default 24 h */
	unsigned json_max_depth; /* default 32 */
};

/*
 * Deferred replies, for execute and command_run: inside the op, call
 * api_defer(call); if it returns a handle, copy what the op needs from its
 * inputs (they are valid only during the call), start the work, and
 * return API_PENDING. Later, from the event loop (never from inside the
 * op itself), call api_resume_run() exactly once with what the op would
 * have returned; it takes ownership of res->out and res->err. The reply
 * then goes out in order on its connection (later pipelined requests
 * wait), or is dropped if the client has gone. api_defer returns NULL when
 * the request cannot be deferred (api_handle without a connection): then
 * answer synchronously. Every deferred run must be resumed before
 * api_free().
 */
#define API_PENDING 100
struct api_pending;
struct api_pending *api_defer(const struct api_call *);
/*
 * Output of a deferred run as it happens (stream: "stdout" or "stderr").
 * For a client that asked for text/event-stream it goes out at once as an
 * event (the reply is then chunked, or close-delimited for HTTP/1.0);
 * otherwise it is kept and prepended to the final result's output.
 */
void api_stream_run(
    struct api_pending *, const char *stream, const void *data, size_t len);
/* The streaming run's pid, told with its start (before the start's
 * api_stream_run): E2B's start event carries it. */
void api_stream_run_pid(struct api_pending *, uint64_t pid);
/* The same for another reader of a run (run_attach): its stream, keep's
 * event stream included, begins with a start event naming pid. */
void api_stream_reader(struct api_pending *, uint64_t pid);
/*
 * A live cell's lines as they come (call->ndjson, docs/contexts.md):
 * bytes of the driver's JSON lines, in order, cut anywhere; empty: the
 * cell has started. Each whole line goes out at once as an ndjson line,
 * decoded as untrusted and rebuilt (the reply is then chunked, or
 * close-delimited for HTTP/1.0), but number_of_executions, which waits
 * for api_resume_run: the cell's result (res->cell) then carries only
 * what was not streamed (res->out the driver's lines after those fed,
 * res->err the raw output).
 */
void api_stream_cell(struct api_pending *, const void *data, size_t len);
void api_resume_run(struct api_pending *, int rc, struct api_run_result *res,
    const struct api_error *err);

/*
 * Event streams that are not runs (files/watch): one event (data: JSON
 * text without a newline, which the stream refuses) goes out at once; an
 * event NULL sends a comment, to keep the connection alive. The head of
 * the stream goes with the first. api_stream_end sends a last event (or
 * none: NULL), ends the stream and frees the handle. api_pending_alive
 * is 0 once the client has gone (closed or half-closed its connection):
 * then end the stream, nobody reads it.
 */
void api_stream_event(
    struct api_pending *, const char *event, const char *data_json);
void api_stream_end(
    struct api_pending *, const char *event, const char *data_json);
int api_pending_alive(const struct api_pending *);
typedef int (*api_alive_fn)(void *arg, uint64_t conn);
void api_set_alive(struct api *, api_alive_fn fn, void *arg);

/* The guest platform ("kvm" or "trap") and, when no guest can run, why
 * (NULL or ""): /healthz answers 503 "degraded" with it (docs/api.yaml). */
void api_set_platform(struct api *, const char *platform, const char *problem);

/* Returns NULL on allocation failure, or when an op of be is NULL but
 * the optional ones (metrics, idem_load, idem_keep): a backend serves
 * every route. be must outlive the api. */
struct api *api_new(const struct api_backend *be, const struct api_config *);
void api_free(struct api *);

/*
 * Handle one complete request (body included, req->body set). Appends a
 * whole HTTP response to out. Returns 1 if the connection must close after
 * this response, 0 if it may persist.
 */
int api_handle(
    struct api *, const struct http_request *req, struct http_buf *out);

/*
 * api_handle for a connection that can wait: conn is the caller's id for
 * it. Returns 0 or 1 as api_handle, or API_HANDLE_PENDING when the reply
 * will come later through the resume function: fn(arg, conn, response
 * bytes, length, API_RESUME_* flags), once or, streaming, several times.
 */
#define API_HANDLE_PENDING 2
#define API_RESUME_CLOSE 0x1 /* close the connection after these bytes */
#define API_RESUME_MORE 0x2 /* part of the reply; more will follow */
/* resp is a 101 head: from here on the connection is a WebSocket, and
 * what follows (API_RESUME_MORE) is the terminal's output to frame; the
 * last call (no MORE) ends the session (docs/terminal.md). */
#define API_RESUME_UPGRADE 0x4
typedef void (*api_resume_fn)(
    void *arg, uint64_t conn, const void *resp, size_t len, int flags);
void api_set_resume(struct api *, api_resume_fn fn, void *arg);
/*
 * A sandbox's port (docs/architecture.md, "Ports"), served by the event
 * loop that owns the connections:
 *
 * open: connection conn sends req (the request as it goes to the port,
 * head and body, len bytes) on fd, a connected socket that open takes
 * (and closes) on success, and passes the response back: framed
 * (host/http/http_upstream.h), so that fd, when the server lets it, is
 * kept for the next request with the same key and the client's
 * connection carries its next request through the api again; or, with
 * API_PIPE_UPGRADE, as a byte pipe both ways until either side ends (a
 * WebSocket after its 101). 0, or -1: open took nothing, fd is the
 * caller's.
 * take: a kept connection for key (one that still looks open), or -1.
 * wait: in the task of conn's request, after open with API_PIPE_REUSED:
 * 0 once the answer's first byte came; -1 when the kept connection
 * ended (or failed) before any, its request unanswered, so that the
 * caller may open a fresh one and call open again; -2 when the client's
 * connection has gone.
 */
#define API_PIPE_UPGRADE 0x1 /* the client asked for an upgrade */
#define API_PIPE_HEAD 0x2 /* a HEAD: its answer has no body */
#define API_PIPE_CLOSE 0x4 /* close the client's connection after it */
#define API_PIPE_REUSED 0x8 /* fd came from take */
struct api_pipe_ops {
	int (*open)(void *arg, uint64_t conn, int fd, const void *req,
	    size_t len, const char *key, int flags);
	int (*take)(void *arg, const char *key);
	int (*wait)(void *arg, uint64_t conn);
};
/* The key of kept connections: the sandbox, the port, the principal
 * (the one the vmm found the sandbox's owner when it was opened). */
#define API_PIPE_KEY_MAX 256
void api_set_pipe(struct api *, const struct api_pipe_ops *ops, void *arg);
/* keepd.yaml ports.domain ("" or NULL: none): a request whose Host is
 * "{port}-{sandbox id}.DOMAIN" goes to that port as if its path were
 * under /v1/sandboxes/{id}/ports/{port}. */
void api_set_ports_domain(struct api *, const char *domain);
/* The listener is TLS (the cookies of ports' links are then Secure). */
void api_set_tls(struct api *, int tls);
int api_handle_conn(struct api *, const struct http_request *req,
    struct http_buf *out, uint64_t conn);
/* A WebSocket message from the client of connection conn (opcode 1
 * text, 2 binary), and the end of its session (close, EOF, timeout). */
void api_ws_message(
    struct api *, uint64_t conn, int opcode, const void *data, size_t len);
void api_ws_closed(struct api *, uint64_t conn);

/*
 * fn(arg, conn) is called when a request on connection conn (as given to
 * api_handle_conn) carried a bearer token that verified, before its reply
 * is built: the front then treats that connection as a known client's
 * (docs/architecture.md, "Connection limits").
 */
typedef void (*api_auth_fn)(void *arg, uint64_t conn);
void api_set_auth_notify(struct api *, api_auth_fn fn, void *arg);

/*
 * A request's head, before its body is read (conn as for
 * api_handle_conn): 1 when its route needs a token and none verifies,
 * with the 401 answer in out ("Connection: close"; the body is not to be
 * read); 0: read the body, then api_handle_conn.
 */
int api_head_check(struct api *, const struct http_request *req,
    struct http_buf *out, uint64_t conn);

/*
 * Answer a request the HTTP layer refused (status from http_parse_head or
 * the body decoder) with the error envelope; always "Connection: close".
 */
void api_refuse(struct api *, int status, struct http_buf *out);

/* Count a connection-level event for /metrics. */
enum api_conn_event {
	API_CONN_ACCEPTED,
	API_CONN_REFUSED, /* over the connection limit */
	API_CONN_TIMEOUT,
	API_CONN_EVENT_COUNT
};
void api_count_conn(struct api *, enum api_conn_event);

/*
 * Route i of the router, for tests that check the router against
 * docs/api.yaml: sets *pattern ("/v1/sandboxes/{id}") and returns the
 * method as an index into get, head, post, put, patch, delete, options;
 * -1 past the last route.
 */
int api_test_route(size_t i, const char **pattern);

/* The OpenAPI document (docs/api.yaml as JSON), embedded at build time. */
extern const char api_openapi_json[];
extern const size_t api_openapi_json_len;

#endif

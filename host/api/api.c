/*
 * The API core: request ids, routing, authentication and the token-side
 * capability and scope checks, the error envelope, JSON body intake,
 * idempotency and metrics. Handlers live in api_routes.c.
 *
 * Order of checks for every request (so that nothing leaks before the
 * caller is known): route match (404/405) -> bearer token (401) -> token
 * caps (403) -> sandbox scope (404, so ids cannot be probed) -> body
 * (400/413/415) -> the backend's policy decision (403/423/429) -> handler.
 */
#include <sodium.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host/api/api_int.h"
#include "host/api/e2b_wire.h"
#include "lib/log.h"
#include "lib/util.h"

static const struct {
	const char *code;
	int status;
} errtab[API_ERR_COUNT] = {
	[API_OK] = { "OK", 200 },
	[API_EBADREQ] = { "BAD_REQUEST", 400 },
	[API_EUNAUTH] = { "UNAUTHORIZED", 401 },
	[API_EFORBIDDEN] = { "FORBIDDEN", 403 },
	[API_ENOTFOUND] = { "NOT_FOUND", 404 },
	[API_ECONFLICT] = { "CONFLICT", 409 },
	[API_ETOOLARGE] = { "PAYLOAD_TOO_LARGE", 413 },
	[API_ELOCKED] = { "LOCK_REQUIRED", 423 },
	[API_ERATE] = { "RATE_LIMITED", 429 },
	[API_EINTERNAL] = { "INTERNAL", 500 },
	[API_EUNAVAIL] = { "UNAVAILABLE", 503 },
	[API_ESTORAGE] = { "STORAGE_FULL", 507 },
	[API_ENOTIMPL] = { "NOT_IMPLEMENTED", 501 },
	[API_EBADGATEWAY] = { "BAD_GATEWAY", 502 },
};

/* Every status the API answers with (errtab, the routes' successes and
 * the HTTP layer's refusals): each is counted under its own code. */
static const int status_slots[API_STATUS_SLOTS] = { 200, 201, 202, 204, 400,
	401, 403, 404, 405, 408, 409, 411, 412, 413, 414, 415, 423, 429, 431,
	500, 501, 502, 503, 507, 0 };

static const double hist_le[API_HIST_BUCKETS] = { 0.0005, 0.001, 0.0025, 0.005,
	0.01, 0.025, 0.05, 0.1, 0.25, 1, 5, 30 };

const char *
api_err_code(enum api_err e)
{
	if ((unsigned)e >= API_ERR_COUNT)
		return "INTERNAL";
	return errtab[e].code;
}

int
api_err_status(enum api_err e)
{
	if ((unsigned)e >= API_ERR_COUNT)
		return 500;
	return errtab[e].status;
}

int
status_slot(int status)
{
	for (int i = 0; i < API_STATUS_SLOTS; i++)
		if (status_slots[i] == status)
			return i;
	/* Not reached for a status the API gives; never mislabelled as
	 * another code: the last slot, "other". */
	return API_STATUS_SLOTS - 1;
}

/* A slot's code label: the status, or "other" for the last slot. */
static const char *
slot_label(int slot, char buf[8])
{
	if (status_slots[slot] == 0)
		return "other";
	snprintf(buf, 8, "%d", status_slots[slot]);
	return buf;
}

static uint64_t
real_now_ms(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

double
mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t
api_now_ms(struct api *a)
{
	return a->cfg.now_ms(a->cfg.now_arg);
}

/* Every op but the optional ones (metrics, idem_load, idem_keep): the
 * routes call them without checking. */
static int
backend_complete(const struct api_backend *be)
{
	const void *const ops[] = { (void *)be->authenticate,
		(void *)be->authorize, (void *)be->sandbox_create,
		(void *)be->sandbox_fork, (void *)be->sandbox_list,
		(void *)be->sandbox_get, (void *)be->sandbox_delete,
		(void *)be->sandbox_timeout, (void *)be->sandbox_token,
		(void *)be->execute, (void *)be->execute_background,
		(void *)be->execute_async, (void *)be->command_run,
		(void *)be->command_background, (void *)be->processes,
		(void *)be->kill, (void *)be->file_read, (void *)be->file_write,
		(void *)be->file_list, (void *)be->file_exists,
		(void *)be->file_remove, (void *)be->file_mkdir,
		(void *)be->file_move, (void *)be->env_get, (void *)be->env_set,
		(void *)be->env_delete, (void *)be->system,
		(void *)be->token_attenuate, (void *)be->sandbox_lock,
		(void *)be->sandbox_unlock, (void *)be->token_revoke,
		(void *)be->policy_version, (void *)be->policy_check,
		(void *)be->image_list, (void *)be->image_upload,
		(void *)be->image_delete, (void *)be->audit_list,
		(void *)be->context_create, (void *)be->context_list,
		(void *)be->context_delete, (void *)be->context_restart,
		(void *)be->context_fork, (void *)be->context_restore,
		(void *)be->context_snapshot, (void *)be->context_snapshots,
		(void *)be->context_snapshot_delete, (void *)be->file_watch,
		(void *)be->schedule_create, (void *)be->schedule_list,
		(void *)be->schedule_get, (void *)be->schedule_update,
		(void *)be->schedule_delete, (void *)be->schedule_runs,
		(void *)be->terminal_open, (void *)be->terminal_input,
		(void *)be->secret_put, (void *)be->secret_delete,
		(void *)be->secret_list };

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (ops[i] == NULL)
			return 0;
	return 1;
}

struct api *
api_new(const struct api_backend *be, const struct api_config *cfg)
{
	struct api *a;

	if (be == NULL || !backend_complete(be)) {
		log_warnx("%s: the backend lacks an op", __func__);
		return NULL;
	}
	if (sodium_init() < 0)
		return NULL;
	if ((a = calloc(1, sizeof(*a))) == NULL)
		return NULL;
	a->be = be;
	if (cfg != NULL)
		a->cfg = *cfg;
	if (a->cfg.now_ms == NULL)
		a->cfg.now_ms = real_now_ms;
	if (a->cfg.idem_max == 0)
		a->cfg.idem_max = 4096;
	if (a->cfg.idem_bytes_max == 0)
		a->cfg.idem_bytes_max = API_IDEM_BYTES_MAX;
	if (a->cfg.idem_ttl_ms == 0)
		a->cfg.idem_ttl_ms = 24ULL * 3600 * 1000;
	if (a->cfg.json_max_depth == 0)
		a->cfg.json_max_depth = 32;
	a->boot_nonce = randombytes_random();
	a->req_count =
	    calloc((api_nroutes + 1) * API_STATUS_SLOTS, sizeof(*a->req_count));
	a->req_hist = calloc(api_nroutes + 1, sizeof(*a->req_hist));
	a->idem = calloc(a->cfg.idem_max, sizeof(*a->idem));
	if (a->req_count == NULL || a->req_hist == NULL || a->idem == NULL) {
		api_free(a);
		return NULL;
	}
	return a;
}

void
api_free(struct api *a)
{
	if (a == NULL)
		return;
	if (a->idem != NULL)
		for (size_t i = 0; i < a->cfg.idem_max; i++)
			free(a->idem[i].body);
	free(a->idem);
	free(a->req_count);
	free(a->req_hist);
	free(a);
}

void
api_count_conn(struct api *a, enum api_conn_event e)
{
	if ((unsigned)e < API_CONN_EVENT_COUNT)
		a->conn_events[e]++;
}

void
api_hist_add(struct api_hist *h, double s)
{
	for (int i = 0; i < API_HIST_BUCKETS; i++)
		if (s <= hist_le[i]) {
			h->bucket[i]++;
			break;
		}
	h->count++;
	h->sum += s;
}

void
api_observe_run(struct api *a, uint64_t ms)
{
	a->runs++;
	api_hist_add(&a->run_hist, (double)ms / 1000.0);
}

/* --- replies ------------------------------------------------------------ */

/* "%08x-%llx" of (nonce, seq), without printf: every request makes one. */
static void
format_request_id(char out[40], uint32_t nonce, uint64_t seq)
{
	static const char hex[] = "0123456789abcdef";
	char d[16];
	size_t i, n = 0;

	for (i = 0; i < 8; i++)
		out[i] = hex[(nonce >> (28 - 4 * i)) & 0xf];
	out[8] = '-';
	do
		d[n++] = hex[seq & 0xf];
	while ((seq >>= 4) != 0);
	for (i = 0; i < n; i++)
		out[9 + i] = d[n - 1 - i];
	out[9 + n] = '\0';
}

/*
 * One log line per refused or failed request (every request with -v),
 * named by the X-Request-Id the client got, so that a report quoting it
 * finds the line in the journal. Route names are ours; the principal and
 * the sandbox id come from outside and are escaped.
 */
static void
rq_log(const struct rq *r, int status)
{
	char sub[4 * sizeof(r->who.sub) + 1], id[4 * sizeof(r->id) + 1];

	if (status < 400 && log_verbosity() < 1)
		return;
	log_escape(sub, sizeof(sub), r->who.sub,
	    strnlen(r->who.sub, sizeof(r->who.sub)));
	log_escape(id, sizeof(id), r->id, strnlen(r->id, sizeof(r->id)));
	log_info("request %s: %s%s%s by \"%s\": %d", r->request_id,
	    r->route != NULL ? r->route->name : "-", id[0] != '\0' ? " " : "",
	    id, sub, status);
}

/*
 * A reply. wire is the status on the wire; status the one logged and
 * counted, which differs only for a Connect stream's error (HTTP 200,
 * the error in the stream's end).
 */
static void
rq_emit_as(struct rq *r, int status, int wire, const char *ctype,
    const void *body, size_t len)
{
	struct http_buf *o = r->out;

	r->status = status;
	rq_log(r, status);
	status = wire;
	/* 204 carries no Content-Length (RFC 9110 8.6). */
	http_response_begin(
	    o, status, ctype, status == 204 ? (size_t)-1 : len, r->close);
	/* An HTTP/1.0 client keeps the connection only when told so. */
	if (!r->close && r->http10)
		http_response_header(o, "Connection", "keep-alive");
	http_response_header(o, "X-Request-Id", r->request_id);
	if (r->client_request_id[0] != '\0')
		http_response_header(
		    o, "X-Client-Request-Id", r->client_request_id);
	if (status == 401)
		http_response_header(o, "WWW-Authenticate", "Bearer");
	if (r->retry_after[0] != '\0')
		http_response_header(o, "Retry-After", r->retry_after);
	if (r->replayed)
		http_response_header(o, "Idempotent-Replayed", "true");
	if (r->next_token[0] != '\0')
		http_response_header(o, "X-Next-Token", r->next_token);
	if (status == 405)
		http_response_header(o, "Allow", r->allow);
	if (r->location != NULL && r->location[0] != '\0')
		http_response_header(o, "Location", r->location);
	if (r->set_cookie != NULL && r->set_cookie[0] != '\0')
		http_response_header(o, "Set-Cookie", r->set_cookie);
	http_response_body(o, body, len, r->head_only);
}

static void
rq_emit(
    struct rq *r, int status, const char *ctype, const void *body, size_t len)
{
	rq_emit_as(r, status, status, ctype, body, len);
}

void
rq_raw(
    struct rq *r, int status, const char *ctype, const void *body, size_t len)
{
	rq_emit(r, status, ctype, body, len);
}

void
rq_no_content(struct rq *r)
{
	rq_emit(r, 204, NULL, "", 0);
}

void
rq_json(struct rq *r, int status, json_t *obj)
{
	char *s;

	if (obj == NULL ||
	    (s = json_dumps(obj, JSON_COMPACT | JSON_ENSURE_ASCII)) == NULL) {
		json_decref(obj);
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	rq_emit(r, status, "application/json", s, strlen(s));
	free(s);
	json_decref(obj);
}

/*
 * An error of an E2B route, in the shape its SDK reads (docs/e2b.md):
 * E2B's {"code":STATUS,"message":...} with keep's envelope beside it;
 * Connect's {"code":"not_found","message":...} (keep's envelope beside
 * it too) for a unary RPC; the end of the stream, after no message, for
 * a streaming one.
 */
static void
rq_envelope_e2b(struct rq *r, int status, const char *code, const char *msg)
{
	struct http_buf b;
	json_t *o;
	char *s;

	strlcpy(r->err_code, code, sizeof(r->err_code));
	if (r->e2b == E2B_RPC_STREAM)
		o = json_pack("{s:{s:s,s:s}}", "error", "code",
		    e2b_connect_code(status), "message", msg);
	else if (r->e2b == E2B_RPC)
		o = json_pack("{s:s,s:s,s:{s:s,s:s}}", "code",
		    e2b_connect_code(status), "message", msg, "error",
		    "message", msg, "code", code);
	else
		o = json_pack("{s:i,s:s,s:{s:s,s:s}}", "code", status,
		    "message", msg, "error", "message", msg, "code", code);
	if (o == NULL || (s = json_dumps(o, JSON_COMPACT)) == NULL) {
		static const char oom[] = "{\"code\":500,\"message\":\"Out of "
		                          "memory\"}";
		json_decref(o);
		rq_emit(r, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	json_decref(o);
	if (r->e2b != E2B_RPC_STREAM) {
		rq_emit(r, status, "application/json", s, strlen(s));
		free(s);
		return;
	}
	http_buf_init(&b);
	e2b_envelope_put(&b, E2B_ENV_END, s, strlen(s));
	free(s);
	if (b.oom)
		r->out->oom = 1;
	else
		rq_emit_as(
		    r, status, 200, "application/connect+json", b.data, b.len);
	http_buf_free(&b);
}

static void
rq_envelope(struct rq *r, int status, const char *code, const char *msg)
{
	json_t *o;
	char *s;

	if (r->e2b != E2B_NO) {
		rq_envelope_e2b(r, status, code, msg);
		return;
	}
	strlcpy(r->err_code, code, sizeof(r->err_code));
	o = json_pack("{s:{s:s,s:s}}", "error", "message", msg, "code", code);
	if (o == NULL || (s = json_dumps(o, JSON_COMPACT)) == NULL) {
		static const char oom[] = "{\"error\":{\"message\":\"Out of "
		                          "memory\",\"code\":\"INTERNAL\"}}";
		json_decref(o);
		rq_emit(r, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	rq_emit(r, status, "application/json", s, strlen(s));
	free(s);
	json_decref(o);
}

void
rq_fail(struct rq *r, int status, const char *code, const char *msg)
{
	rq_envelope(r, status, code, msg);
}

void
rq_error(struct rq *r, enum api_err e, const char *fmt, ...)
{
	char msg[API_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rq_envelope(r, api_err_status(e), api_err_code(e), msg);
}

void
rq_backend_error(struct rq *r, int rc, const struct api_error *err)
{
	char msg[API_MSG_MAX];

	if (rc <= API_OK || rc >= API_ERR_COUNT)
		rc = API_EINTERNAL;
	/* A backend message is untrusted text to the envelope: bound it. */
	memcpy(msg, err->message, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	if (msg[0] == '\0')
		strlcpy(msg, http_reason(api_err_status(rc)), sizeof(msg));
	if (rc == API_ERATE || (rc == API_EUNAVAIL && err->retry_after))
		snprintf(r->retry_after, sizeof(r->retry_after), "%u",
		    err->retry_after ? err->retry_after : 1);
	rq_envelope(r, api_err_status(rc), api_err_code(rc), msg);
}

void
api_refuse(struct api *a, int status, struct http_buf *out)
{
	struct rq r;
	const char *code = "BAD_REQUEST", *msg = http_reason(status);

	memset(&r, 0, sizeof(r));
	r.api = a;
	r.out = out;
	r.close = 1;
	format_request_id(r.request_id, a->boot_nonce, ++a->reqseq);
	switch (status) {
	case 413:
		code = "PAYLOAD_TOO_LARGE";
		break;
	case 408:
		code = "REQUEST_TIMEOUT";
		break;
	case 501:
		code = "NOT_IMPLEMENTED";
		break;
	case 500:
		code = "INTERNAL";
		break;
	case 503:
		code = "UNAVAILABLE";
		break;
	default:
		break;
	}
	a->refused[status_slot(status)]++;
	rq_envelope(&r, status, code, msg);
}

/* --- inputs ------------------------------------------------------------- */

int
api_valid_id(const char *s, size_t n)
{
	if (n == 0 || n > API_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '-' || c == '_' ||
		        c == '.'))
			return 0;
	}
	return !(n <= 2 && s[0] == '.');
}

int
api_unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Query parameter by name, percent-decoded ('+' is a space). Returns 1
 * found, 0 absent (an error reply was sent if required), -1 malformed or
 * duplicated (an error reply was sent).
 */
int
rq_query(struct rq *r, const char *name, char *out, size_t outlen, int required)
{
	const char *q = r->req->query, *end;
	size_t nlen = strlen(name);
	int found = 0;

	if (q == NULL)
		goto absent;
	end = q + r->req->query_len;
	while (q < end) {
		const char *amp = memchr(q, '&', (size_t)(end - q));
		const char *pe = amp ? amp : end, *eq;
		size_t o = 0;

		eq = memchr(q, '=', (size_t)(pe - q));
		if (eq == NULL || (size_t)(eq - q) != nlen ||
		    memcmp(q, name, nlen) != 0) {
			q = pe + (amp != NULL);
			continue;
		}
		if (found++) {
			rq_error(r, API_EBADREQ,
			    "Duplicate query parameter: %s", name);
			return -1;
		}
		for (const char *p = eq + 1; p < pe; p++) {
			int c = (unsigned char)*p;
			if (c == '%') {
				int hi, lo;
				if (pe - p < 3 || (hi = api_unhex(p[1])) < 0 ||
				    (lo = api_unhex(p[2])) < 0) {
					rq_error(r, API_EBADREQ,
					    "Malformed query parameter: %s",
					    name);
					return -1;
				}
				c = hi * 16 + lo;
				p += 2;
			} else if (c == '+')
				c = ' ';
			if (c == 0 || o + 1 >= outlen) {
				rq_error(r, API_EBADREQ,
				    "Invalid query parameter: %s", name);
				return -1;
			}
			out[o++] = (char)c;
		}
		out[o] = '\0';
		q = pe + (amp != NULL);
	}
	if (found)
		return 1;
absent:
	out[0] = '\0';
	if (required) {
		rq_error(r, API_EBADREQ, "Missing query parameter: %s", name);
		return -1;
	}
	return 0;
}

int
rq_fields(struct rq *r, json_t *obj, const char *const *allowed)
{
	const char *k;
	json_t *v;

	json_object_foreach(obj, k, v)
	{
		size_t i;
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], k) == 0)
				break;
		if (allowed[i] == NULL) {
			char esc[64];
			log_escape(esc, sizeof(esc), k, strlen(k));
			rq_error(r, API_EBADREQ, "Unknown field: %s", esc);
			return -1;
		}
	}
	return 0;
}

int
rq_str(
    struct rq *r, json_t *obj, const char *key, int required, const char **out)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL || json_is_null(v)) {
		if (required) {
			rq_error(r, API_EBADREQ, "Missing field: %s", key);
			return -1;
		}
		return 0;
	}
	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v)) {
		rq_error(r, API_EBADREQ, "Field %s must be a string", key);
		return -1;
	}
	*out = json_string_value(v);
	return 0;
}

int
rq_uint(struct rq *r, json_t *obj, const char *key, uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(obj, key);

	*out = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max) {
		rq_error(r, API_EBADREQ,
		    "Field %s must be an integer from 0 to %llu", key,
		    (unsigned long long)max);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* An object of string values; *out is malloc (pointers into the JSON). */
int
rq_kv(
    struct rq *r, json_t *obj, const char *key, struct api_kv **out, size_t *n)
{
	json_t *v = json_object_get(obj, key), *e;
	const char *k;
	size_t i = 0;

	*out = NULL;
	*n = 0;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_object(v) || json_object_size(v) > 256) {
		rq_error(r, API_EBADREQ,
		    "Field %s must be an object of at most 256 strings", key);
		return -1;
	}
	if (json_object_size(v) == 0)
		return 0;
	if ((*out = calloc(json_object_size(v), sizeof(**out))) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return -1;
	}
	json_object_foreach(v, k, e)
	{
		if (!json_is_string(e) ||
		    strlen(json_string_value(e)) != json_string_length(e) ||
		    k[0] == '\0' || strchr(k, '=') != NULL) {
			free(*out);
			*out = NULL;
			rq_error(r, API_EBADREQ,
			    "Field %s: values must be strings, keys non-empty "
			    "without '='",
			    key);
			return -1;
		}
		(*out)[i].key = (char *)k;
		(*out)[i].value = (char *)json_string_value(e);
		i++;
	}
	*n = i;
	return 0;
}

int
rq_accepts_sse(struct rq *r)
{
	const struct http_header *h;

	if (r->req == NULL)
		return r->sse;
	h = http_find_header(r->req, "accept");
	return h != NULL &&
	    memmem(h->value, h->valuelen, "text/event-stream", 17) != NULL;
}

int
rq_accepts_ndjson(struct rq *r)
{
	const struct http_header *h;

	/* E2B's code interpreter answers a cell with its lines, always. */
	if (r->e2b == E2B_SBX)
		return 1;
	if (r->req == NULL)
		return r->ndjson;
	h = http_find_header(r->req, "accept");
	return h != NULL &&
	    memmem(h->value, h->valuelen, "application/x-ndjson", 20) != NULL;
}

/* Nesting depth of a JSON text, counted outside strings. */
static unsigned
json_depth(const char *s, size_t n)
{
	unsigned d = 0, max = 0;
	int in_str = 0;

	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = 0;
		} else if (c == '"')
			in_str = 1;
		else if (c == '{' || c == '[') {
			if (++d > max)
				max = d;
		} else if (c == '}' || c == ']')
			d--;
	}
	return max;
}

json_t *
rq_load_json(struct rq *r, const char *buf, size_t len)
{
	json_error_t jerr;
	json_t *o;

	if (len == 0) {
		rq_error(r, API_EBADREQ, "A JSON object body is required");
		return NULL;
	}
	if (json_depth(buf, len) > r->api->cfg.json_max_depth) {
		rq_error(r, API_EBADREQ, "JSON nested too deeply");
		return NULL;
	}
	o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL) {
		char esc[128];
		log_escape(esc, sizeof(esc), jerr.text, strlen(jerr.text));
		rq_error(r, API_EBADREQ,
		    "Invalid JSON at line %d column %d: %s", jerr.line,
		    jerr.column, esc);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		rq_error(r, API_EBADREQ, "The body must be a JSON object");
		return NULL;
	}
	return o;
}

static int
rq_load_body(struct rq *r)
{
	r->body = rq_load_json(r, r->req->body, r->req->body_len);
	return r->body != NULL ? 0 : -1;
}

/* --- routing ------------------------------------------------------------ */

/*
 * Match path against pattern segment by segment; "{id}" and "{name}"
 * capture one segment that must be a valid id. Returns 1 on a match.
 */
static int
route_match(
    const char *pattern, const char *path, size_t plen, char *id, char *tail)
{
	const char *pp = pattern, *sp = path, *send = path + plen;

	while (*pp != '\0') {
		const char *pe = strchr(pp + 1, '/'), *se;
		size_t pl, sl;

		/* A last segment "{path}": whatever the path holds from
		 * here, slashes included, or nothing (a port's path, which
		 * the guest's server judges, api_ports.c). */
		if (strcmp(pp, "/{path}") == 0)
			return sp == send || *sp == '/';

		if (pe == NULL)
			pe = pp + strlen(pp);
		if (sp >= send || *sp != '/')
			return 0;
		se = memchr(sp + 1, '/', (size_t)(send - sp - 1));
		if (se == NULL)
			se = send;
		pl = (size_t)(pe - pp - 1);
		sl = (size_t)(se - sp - 1);
		if (pl == 4 && memcmp(pp + 1, "{id}", 4) == 0) {
			if (!api_valid_id(sp + 1, sl))
				return 0;
			memcpy(id, sp + 1, sl);
			id[sl] = '\0';
		} else if ((pl == 6 && memcmp(pp + 1, "{name}", 6) == 0) ||
		    (pl == 6 && memcmp(pp + 1, "{port}", 6) == 0)) {
			if (!api_valid_id(sp + 1, sl))
				return 0;
			memcpy(tail, sp + 1, sl);
			tail[sl] = '\0';
		} else if (pl != sl || memcmp(pp + 1, sp + 1, sl) != 0)
			return 0;
		pp = pe;
		sp = se;
	}
	return sp == send;
}

/* The sandbox of an E2B sandbox route: its E2b-Sandbox-Id header. */
static int
e2b_sandbox(struct rq *r)
{
	const struct http_header *h =
	    http_find_header(r->req, "e2b-sandbox-id");

	if (h == NULL) {
		rq_error(r, API_EBADREQ, "E2b-Sandbox-Id is missing");
		api_audit_refused(
		    r, NULL, 400, "request", "E2b-Sandbox-Id is missing");
		return -1;
	}
	if (!api_valid_id(h->value, h->valuelen)) {
		rq_error(r, API_EBADREQ, "E2b-Sandbox-Id is not a sandbox id");
		api_audit_refused(r, NULL, 400, "request",
		    "E2b-Sandbox-Id is not a sandbox id");
		return -1;
	}
	memcpy(r->id, h->value, h->valuelen);
	r->id[h->valuelen] = '\0';
	return 0;
}

/* value is the media type mt, with at most a charset=utf-8 parameter. */
static int
media_is(const struct http_header *h, const char *mt)
{
	size_t l = strlen(mt), i;

	if (h == NULL || h->valuelen < l || !http_token_eq(h->value, l, mt))
		return 0;
	for (i = l; i < h->valuelen && h->value[i] == ' '; i++)
		;
	if (i == h->valuelen)
		return 1;
	if (h->value[i++] != ';')
		return 0;
	while (i < h->valuelen && h->value[i] == ' ')
		i++;
	return (h->valuelen - i == 13 &&
	           http_token_eq(h->value + i, 13, "charset=utf-8")) ||
	    (h->valuelen - i == 12 &&
	        http_token_eq(h->value + i, 12, "charset=utf8"));
}

/*
 * An E2B route's body, before it is read: never compressed (a file's
 * bytes would be written as they came), and Connect's JSON codec for
 * its RPCs (the SDK's; protobuf's binary one is not served).
 */
static int
e2b_body_type(struct rq *r)
{
	const struct http_header *h =
	    http_find_header(r->req, "content-encoding");

	if (h != NULL && !http_token_eq(h->value, h->valuelen, "identity")) {
		rq_envelope(r, 415, "UNSUPPORTED_MEDIA_TYPE",
		    "Content-Encoding is not served: send the body as it is");
		return -1;
	}
	h = http_find_header(r->req, "content-type");
	if ((r->e2b == E2B_RPC && !media_is(h, "application/json")) ||
	    (r->e2b == E2B_RPC_STREAM &&
	        !media_is(h, "application/connect+json"))) {
		rq_envelope(r, 415, "UNSUPPORTED_MEDIA_TYPE",
		    r->e2b == E2B_RPC
		        ? "Content-Type must be application/json: keep serves "
		          "Connect's JSON codec"
		        : "Content-Type must be application/connect+json: "
		          "keep serves Connect's JSON codec");
		return -1;
	}
	return 0;
}

/* The request is for route rt (index ri): what its audit entries and
 * decisions name. */
static void
rq_route(struct rq *r, const struct api_route *rt, size_t ri, const char *peer)
{
	r->route = rt;
	r->ri = ri;
	r->e2b = rt->e2b;
	r->call.who = &r->who;
	r->call.request_id = r->request_id;
	r->call.client_request_id = r->client_request_id;
	r->call.peer = peer;
	r->call.cap = rt->cap >= 0 ? (enum cap_id)rt->cap : CAP_COUNT;
	r->call.route = rt->as != NULL ? rt->as : rt->name;
	r->call.e2b = rt->e2b != E2B_NO;
	r->call.port = rt->fn == h_port ? api_port_number(r->tail) : 0;
}

static void
make_request_id(struct rq *r)
{
	const struct http_header *h = http_find_header(r->req, "x-request-id");

	/* The server's id is always its own, so unique: a client cannot
	 * join its entries to another's, nor name another's run record.
	 * A caller's id is kept beside it when short and plain, for
	 * tracing (X-Client-Request-Id, the audit log's client_request_id). */
	if (h != NULL && h->valuelen < sizeof(r->client_request_id) &&
	    api_valid_id(h->value, h->valuelen)) {
		memcpy(r->client_request_id, h->value, h->valuelen);
		r->client_request_id[h->valuelen] = '\0';
	}
	format_request_id(r->request_id, r->api->boot_nonce, ++r->api->reqseq);
}

void
api_audit_refused(struct rq *r, const char *action, int status,
    const char *rule, const char *reason)
{
	const struct api_backend *be = r->api->be;

	if (action == NULL)
		action = r->route->cap >= 0
		    ? cap_name((enum cap_id)r->route->cap)
		    : r->route->name;

	if (be->audit_refused != NULL)
		be->audit_refused(be->ctx, &r->call, action,
		    r->id[0] != '\0' ? r->id : r->tail, status, rule, reason);
}

/*
 * The bearer token of a request (docs/e2b.md): E2B's SDK sends its API
 * key in X-API-KEY and a sandbox's access token in X-Access-Token or
 * E2B-Traffic-Access-Token (both, with the same value, for a cell); an
 * Authorization: Bearer counts too, and is keep's own routes' only
 * credential. On every route every one of them present must be the same
 * token: which of two a proxy checked, or a client meant, is unknown. An
 * Authorization that is not Bearer is E2B's user name (Basic, no
 * password), not a credential, and is left out. 0, or -1 and *why.
 */
static int
e2b_token(struct rq *r, const char **tok, size_t *len, const char **why)
{
	/* Authorization last: a Bearer one among them. */
	static const char *const names[] = { "x-api-key", "x-access-token",
		"e2b-traffic-access-token", "authorization" };
	size_t n = nitems(names);
	const struct http_header *h;
	const char *v, *got = NULL;
	size_t vl, gotlen = 0;
	int source;

	*tok = NULL;
	*len = 0;
	for (size_t i = 0; i < n; i++) {
		/* Where the route takes its token from: the control plane
		 * X-API-KEY, a sandbox's route its access tokens, either one
		 * and keep's own Authorization. The others, when present,
		 * must only agree. */
		source = i == n - 1 ||
		    (i == 0 ? r->e2b == E2B_API
		            : r->e2b != E2B_API && r->e2b != E2B_NO);
		if ((h = http_find_header(r->req, names[i])) == NULL)
			continue;
		v = h->value;
		vl = h->valuelen;
		if (i == n - 1) {
			if (vl < 8 || !http_token_eq(v, 7, "bearer "))
				continue;
			v += 7;
			vl -= 7;
		}
		if (vl == 0 || vl > API_TOKEN_MAX) {
			*why = "malformed token";
			return -1;
		}
		if (got != NULL && (vl != gotlen || memcmp(v, got, vl) != 0)) {
			*why = "two different tokens";
			return -1;
		}
		got = v;
		gotlen = vl;
		if (source) {
			*tok = v;
			*len = vl;
		}
	}
	if (*tok == NULL) {
		*why = r->e2b == E2B_API ? "no X-API-KEY"
		    : r->e2b != E2B_NO   ? "no X-Access-Token"
		                         : "no bearer token";
		return -1;
	}
	return 0;
}

static int
authenticate(struct rq *r)
{
	const struct http_header *h = http_find_header(r->req, "authorization");
	const struct api_backend *be = r->api->be;
	struct api_error err;
	const char *tok = NULL, *why = NULL;
	size_t tlen = 0;
	int rc;

	/* A guest's port reached without a bearer token: by a link (or
	 * E2B's traffic token), api_ports.c. */
	if (r->route->fn == h_port && h == NULL) {
		if ((rc = api_port_link_auth(r, &tok, &tlen)) < 0)
			return -1;
		if (rc == 0) {
			if (r->api->auth_fn != NULL && r->conn != UINT64_MAX)
				r->api->auth_fn(r->api->auth_arg, r->conn);
			return 0;
		}
	}
	if (tok != NULL) {
		/* E2B's traffic token header on a port: the sandbox's own
		 * token, verified as any bearer token below. */
	} else if (r->e2b != E2B_NO) {
		if (e2b_token(r, &tok, &tlen, &why) != 0) {
			rq_error(r, API_EUNAUTH,
			    "Missing or malformed token: %s", why);
			api_audit_refused(r, NULL, 401, "token", why);
			return -1;
		}
	} else if (h != NULL && h->valuelen >= 8 &&
	    http_token_eq(h->value, 7, "bearer ") &&
	    h->valuelen - 7 <= API_TOKEN_MAX &&
	    e2b_token(r, &tok, &tlen, &why) != 0) {
		/* keep's own routes read Authorization; another credential
		 * header beside it must be the same token. */
		rq_error(r, API_EUNAUTH, "Missing or malformed token: %s", why);
		api_audit_refused(r, NULL, 401, "token", why);
		return -1;
	} else if (h == NULL || h->valuelen < 8 ||
	    !http_token_eq(h->value, 7, "bearer ") ||
	    h->valuelen - 7 > API_TOKEN_MAX) {
		rq_error(r, API_EUNAUTH, "Missing or malformed bearer token");
		api_audit_refused(r, NULL, 401, "token",
		    h == NULL ? "no bearer token" : "malformed bearer token");
		return -1;
	} else {
		tok = h->value + 7;
		tlen = h->valuelen - 7;
	}
	memset(&err, 0, sizeof(err));
	rc = be->authenticate(be->ctx, tok, tlen, &r->who, &err);
	if (rc != API_OK) {
		if (rc == API_EUNAUTH || rc == API_EFORBIDDEN)
			rc = API_EUNAUTH;
		/* Nothing of a token that did not verify is trusted. */
		memset(&r->who, 0, sizeof(r->who));
		err.message[sizeof(err.message) - 1] = '\0';
		if (rc == API_EUNAUTH)
			api_audit_refused(r, NULL, 401, "token", err.message);
		rq_backend_error(r, rc, &err);
		return -1;
	}
	r->call.token = tok;
	r->call.token_len = tlen;
	if (r->api->auth_fn != NULL && r->conn != UINT64_MAX)
		r->api->auth_fn(r->api->auth_arg, r->conn);
	r->who.sub[sizeof(r->who.sub) - 1] = '\0';
	r->who.jti[sizeof(r->who.jti) - 1] = '\0';
	r->who.sbx[sizeof(r->who.sbx) - 1] = '\0';
	return 0;
}

static int
authorize(struct rq *r)
{
	const struct api_route *rt = r->route;
	const struct api_backend *be = r->api->be;
	struct api_error err;
	const char *target;
	int rc;

	if (rt->cap >= 0 && !(r->who.caps & CAP_BIT(rt->cap))) {
		rq_error(r, API_EFORBIDDEN, "Missing required capability: %s",
		    cap_name((enum cap_id)rt->cap));
		api_audit_refused(r, NULL, 403, "token caps",
		    "the token does not carry the capability");
		r->api->decisions[1]++;
		return -1;
	}
	/* Outside the token's sandbox: indistinguishable from absent. */
	if (r->id[0] != '\0' && r->who.sbx[0] != '\0' &&
	    strcmp(r->id, r->who.sbx) != 0) {
		rq_error(r, API_ENOTFOUND, "Sandbox not found");
		api_audit_refused(r, NULL, 404, "token scope",
		    "the token is scoped to another sandbox");
		return -1;
	}
	if (rt->cap < 0)
		return 0;
	target = r->id[0] != '\0' ? r->id : r->tail;
	/* A scoped token's list is a read of its own sandbox (the list
	 * route asks the backend for that sandbox alone): decided on it. */
	if (target[0] == '\0' && r->who.sbx[0] != '\0' &&
	    strcmp(rt->as != NULL ? rt->as : rt->name, "sandbox_list") == 0)
		target = r->who.sbx;
	memset(&err, 0, sizeof(err));
	rc = be->authorize(be->ctx, &r->call, target, &err);
	if (rc != API_OK) {
		r->api->decisions[1]++;
		rq_backend_error(r, rc, &err);
		return -1;
	}
	r->api->decisions[0]++;
	r->authorized = 1;
	return 0;
}

int
rq_reauthorize(struct rq *r)
{
	return authorize(r);
}

/* --- idempotency -------------------------------------------------------- */

static void
idem_scope(struct rq *r, char *scope, size_t len)
{
	snprintf(scope, len, "%s|%s|%s", r->who.sub, r->route->name, r->id);
}

/*
 * Who may see a kept reply: the token's jti, capabilities and sandbox (a
 * narrower token of the same principal, or one scoped to a sibling
 * sandbox, must not be handed a wider reply: a new sandbox's auth_token,
 * its webhook secret). seal: the key the store's copy is sealed with,
 * derived from the token's bytes, which only its holders have.
 */
static void
idem_token(const struct rq *r, unsigned char tok[32], unsigned char seal[32])
{
	static const unsigned char ctx[] = "keep idempotency seal v1";
	crypto_generichash_state h;
	uint64_t caps = (uint64_t)r->who.caps;

	crypto_generichash_init(&h, NULL, 0, 32);
	crypto_generichash_update(&h, (const unsigned char *)r->who.jti,
	    strnlen(r->who.jti, sizeof(r->who.jti)) + 1);
	crypto_generichash_update(
	    &h, (const unsigned char *)&caps, sizeof(caps));
	crypto_generichash_update(&h, (const unsigned char *)r->who.sbx,
	    strnlen(r->who.sbx, sizeof(r->who.sbx)));
	crypto_generichash_final(&h, tok, 32);
	crypto_generichash(seal, 32, (const unsigned char *)r->call.token,
	    r->call.token_len, ctx, sizeof(ctx) - 1);
}

/* The hash the store keeps: the request's and the token's together. */
static void
idem_stored_hash(const unsigned char hash[32], const unsigned char tok[32],
    unsigned char out[32])
{
	unsigned char both[64];

	memcpy(both, hash, 32);
	memcpy(both + 32, tok, 32);
	crypto_generichash(out, 32, both, sizeof(both), NULL, 0);
}

static void
idem_drop(struct api *a, struct idem_entry *e)
{
	a->idem_bytes -=
	    e->body_len <= a->idem_bytes ? e->body_len : a->idem_bytes;
	free(e->body);
	memset(e, 0, sizeof(*e));
}

/* 1: a reply was sent (replay or conflict); 0: go on; *slot for saving. */
static int
idem_check(struct rq *r, const struct http_header *key, unsigned char *hash,
    struct idem_entry **slot)
{
	struct api *a = r->api;
	uint64_t now = api_now_ms(a);
	struct idem_entry *free_e = NULL, *oldest = NULL;
	unsigned char tok[32], seal[32];
	char scope[256];

	*slot = NULL;
	idem_token(r, tok, seal);
	sodium_memzero(seal, sizeof(seal));
	if (key->valuelen == 0 || key->valuelen >= sizeof(a->idem[0].key)) {
		rq_error(r, API_EBADREQ,
		    "Idempotency-Key must be 1 to 255 characters");
		return 1;
	}
	crypto_generichash(hash, 32, (const unsigned char *)r->req->body,
	    r->req->body_len, NULL, 0);
	idem_scope(r, scope, sizeof(scope));
	for (size_t i = 0; i < a->cfg.idem_max; i++) {
		struct idem_entry *e = &a->idem[i];

		if (e->used && !e->in_flight &&
		    now - e->at_ms > a->cfg.idem_ttl_ms)
			idem_drop(a, e);
		if (!e->used) {
			if (free_e == NULL)
				free_e = e;
			continue;
		}
		if (!e->in_flight &&
		    (oldest == NULL || e->at_ms < oldest->at_ms))
			oldest = e;
		if (strlen(e->key) != key->valuelen ||
		    memcmp(e->key, key->value, key->valuelen) != 0 ||
		    strcmp(e->scope, scope) != 0)
			continue;
		if (e->in_flight) {
			rq_error(r, API_ECONFLICT,
			    "A request with this Idempotency-Key is in "
			    "progress");
			return 1;
		}
		if (sodium_memcmp(e->tok, tok, 32) != 0) {
			rq_error(r, API_ECONFLICT,
			    "Idempotency-Key used by another token: its reply "
			    "is that token's");
			return 1;
		}
		if (memcmp(e->hash, hash, 32) != 0) {
			rq_error(r, API_ECONFLICT,
			    "Idempotency-Key reused with a different body");
			return 1;
		}
		r->replayed = 1;
		rq_emit(r, e->status, "application/json", e->body, e->body_len);
		return 1;
	}
	if (free_e == NULL && oldest != NULL) {
		idem_drop(a, oldest);
		free_e = oldest;
	}
	*slot = free_e;
	return 0;
}

/* Claim e for key and this request's scope and body hash. */
static void
idem_claim(struct rq *r, struct idem_entry *e, const struct http_header *key,
    const unsigned char *hash)
{
	memcpy(e->key, key->value, key->valuelen);
	e->key[key->valuelen] = '\0';
	idem_scope(r, e->scope, sizeof(e->scope));
	idem_token(r, e->tok, e->seal);
	memcpy(e->hash, hash, 32);
	e->at_ms = api_now_ms(r->api);
	e->used = 1;
}

/*
 * Keep a 2xx JSON reply (resp: head and body) in a claimed entry, or
 * give the entry up: an error or an event stream is not replayed, so a
 * retry runs again.
 */
static int
idem_fill(struct api *a, struct idem_entry *e, int status, const char *resp,
    size_t rlen, int oom)
{
	const char *body = memmem(resp, rlen, "\r\n\r\n", 4);
	size_t len = body != NULL ? rlen - (size_t)(body + 4 - resp) : 0;

	e->in_flight = 0;
	/* The replies kept in memory are bounded in bytes: the oldest go
	 * for a new one (one larger than the bound is not kept). */
	while (body != NULL && len <= a->cfg.idem_bytes_max &&
	    a->idem_bytes + len > a->cfg.idem_bytes_max) {
		struct idem_entry *oldest = NULL;

		for (size_t i = 0; i < a->cfg.idem_max; i++) {
			struct idem_entry *o = &a->idem[i];

			if (o->used && !o->in_flight && o->body != NULL &&
			    (oldest == NULL || o->at_ms < oldest->at_ms))
				oldest = o;
		}
		if (oldest == NULL)
			break;
		idem_drop(a, oldest);
	}
	if (status < 200 || status > 299 || oom || body == NULL ||
	    a->idem_bytes + len > a->cfg.idem_bytes_max ||
	    memmem(resp, (size_t)(body - resp), "text/event-stream", 17) !=
	        NULL ||
	    (e->body = malloc(len + 1)) == NULL) {
		sodium_memzero(e->seal, sizeof(e->seal));
		memset(e, 0, sizeof(*e));
		return 0;
	}
	body += 4;
	e->body_len = len;
	memcpy(e->body, body, e->body_len);
	e->status = status;
	a->idem_bytes += len;
	return 1;
}

/* A reply kept in memory goes to the backend too, to outlive a restart. */
static void
idem_keep(
    struct api *a, const struct api_principal *who, const struct idem_entry *e)
{
	struct api_idem rec;
	unsigned char *sealed;
	size_t slen = crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES +
	    e->body_len;

	if (a->be->idem_keep == NULL ||
	    (sealed = malloc(slen)) == NULL) /* in memory only */
		return;
	/* Sealed with the key of the token that asked: a reply may carry
	 * credentials (a new sandbox's auth_token), never kept in clear. */
	randombytes_buf(sealed, crypto_secretbox_NONCEBYTES);
	crypto_secretbox_easy(sealed + crypto_secretbox_NONCEBYTES,
	    (const unsigned char *)e->body, e->body_len, sealed, e->seal);
	idem_stored_hash(e->hash, e->tok, rec.hash);
	rec.status = e->status;
	rec.body = (char *)sealed;
	rec.body_len = slen;
	a->be->idem_keep(a->be->ctx, who, e->scope, e->key, &rec);
	free(sealed);
}

/*
 * A key the front's memory does not have may be in the backend's (the
 * front restarted). 1: a reply was made (the first result, or 409 for
 * another body); 0: go on and run the op. e is this request's
 * reservation (or NULL), released or filled here when a reply is made.
 */
static int
idem_recall(struct rq *r, struct idem_entry *e, uint64_t serial,
    const char *key, const unsigned char *hash)
{
	const struct api_backend *be = r->api->be;
	struct api_error err;
	struct api_idem rec;
	unsigned char tok[32], seal[32], want[32];
	char scope[256], *plain = NULL;
	size_t plen = 0;

	if (be->idem_load == NULL)
		return 0;
	idem_scope(r, scope, sizeof(scope));
	memset(&rec, 0, sizeof(rec));
	memset(&err, 0, sizeof(err));
	if (be->idem_load(be->ctx, &r->call, scope, key, &rec, &err) != API_OK)
		return 0;
	idem_token(r, tok, seal);
	idem_stored_hash(hash, tok, want);
	if (sodium_memcmp(rec.hash, want, sizeof(want)) == 0 &&
	    rec.body_len >=
	        crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES) {
		plen = rec.body_len - crypto_secretbox_NONCEBYTES -
		    crypto_secretbox_MACBYTES;
		if ((plain = malloc(plen + 1)) != NULL &&
		    crypto_secretbox_open_easy((unsigned char *)plain,
		        (unsigned char *)rec.body + crypto_secretbox_NONCEBYTES,
		        rec.body_len - crypto_secretbox_NONCEBYTES,
		        (unsigned char *)rec.body, seal) != 0) {
			free(plain);
			plain = NULL;
		}
	}
	sodium_memzero(seal, sizeof(seal));
	free(rec.body);
	rec.body = plain;
	rec.body_len = plen;
	if (plain == NULL) {
		if (e != NULL && e->in_flight && e->serial == serial)
			memset(e, 0, sizeof(*e));
		rq_error(r, API_ECONFLICT,
		    "Idempotency-Key reused with a different body or by "
		    "another token");
		return 1;
	}
	r->replayed = 1;
	rq_emit(r, rec.status, "application/json", rec.body, rec.body_len);
	if (e != NULL && e->in_flight && e->serial == serial &&
	    r->api->idem_bytes + rec.body_len <= r->api->cfg.idem_bytes_max) {
		e->in_flight = 0;
		e->status = rec.status;
		e->body = rec.body;
		e->body_len = rec.body_len;
		r->api->idem_bytes += rec.body_len;
	} else {
		if (e != NULL && e->in_flight && e->serial == serial)
			memset(e, 0, sizeof(*e));
		free(rec.body);
	}
	return 1;
}

/* --- the service function ----------------------------------------------- */

int
api_handle(struct api *a, const struct http_request *req, struct http_buf *out)
{
	return api_handle_conn(a, req, out, UINT64_MAX);
}

void
api_set_resume(struct api *a, api_resume_fn fn, void *arg)
{
	a->resume_fn = fn;
	a->resume_arg = arg;
}

void
api_set_pipe(struct api *a, const struct api_pipe_ops *ops, void *arg)
{
	a->pipe = ops;
	a->pipe_arg = arg;
}

void
api_set_auth_notify(struct api *a, api_auth_fn fn, void *arg)
{
	a->auth_fn = fn;
	a->auth_arg = arg;
}

struct api_pending *
api_defer(const struct api_call *call)
{
	/* Every api_call is the one inside an rq (api_handle_conn's). */
	struct rq *r =
	    (struct rq *)((const char *)call - offsetof(struct rq, call));
	struct api_pending *p;

	if (!r->can_defer || r->pending != NULL || r->route == NULL ||
	    !r->route->deferrable)
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->api = r->api;
	p->conn = r->conn;
	p->ri = r->ri;
	p->t0 = r->t0;
	p->close = r->close;
	p->head_only = r->head_only;
	p->http10 = r->http10;
	p->sse = r->call.sse;
	p->ndjson = rq_accepts_ndjson(r);
	p->e2b = r->e2b;
	p->e2b_watch = r->e2b_watch;
	p->e2b_watch_recursive = r->e2b_watch_recursive;
	r->e2b_watch = NULL;
	p->e2b_cell = r->e2b_cell;
	memcpy(p->e2b_mark, r->e2b_mark, sizeof(p->e2b_mark));
	memcpy(p->request_id, r->request_id, sizeof(p->request_id));
	memcpy(p->client_request_id, r->client_request_id,
	    sizeof(p->client_request_id));
	p->who = r->who;
	p->authorized = r->authorized;
	strlcpy(
	    p->target, r->id[0] != '\0' ? r->id : r->tail, sizeof(p->target));
	r->pending = p;
	r->api->pending++;
	return p;
}

void
stream_head(struct api_pending *p, struct http_buf *o)
{
	if (p->e2b == E2B_RPC_STREAM)
		http_buf_puts(o,
		    "HTTP/1.1 200 OK\r\nContent-Type: "
		    "application/connect+json\r\n");
	else
		http_buf_printf(o,
		    "HTTP/1.1 200 OK\r\nContent-Type: %s\r\n"
		    "Cache-Control: no-cache\r\n",
		    p->cell ? "application/x-ndjson" : "text/event-stream");
	/* HTTP/1.0 has no chunked coding: the end of the stream is the
	 * end of the connection. */
	if (p->http10)
		http_buf_puts(o, "Connection: close\r\n");
	else {
		http_buf_puts(o, "Transfer-Encoding: chunked\r\n");
		if (p->close)
			http_buf_puts(o, "Connection: close\r\n");
	}
	http_buf_printf(o, "X-Request-Id: %s\r\n\r\n", p->request_id);
}

void
stream_chunk(struct api_pending *p, struct http_buf *o, const void *d, size_t n)
{
	if (n == 0)
		return;
	if (p->http10) {
		http_buf_add(o, d, n);
		return;
	}
	http_buf_printf(o, "%zx\r\n", n);
	http_buf_add(o, d, n);
	http_buf_add(o, "\r\n", 2);
}

void
api_stream_run_pid(struct api_pending *p, uint64_t pid)
{
	p->run_pid = pid;
}

void
api_stream_reader(struct api_pending *p, uint64_t pid)
{
	p->run_pid = pid;
	p->reader = 1;
}

void
api_stream_run(
    struct api_pending *p, const char *stream, const void *data, size_t len)
{
	struct api *a = p->api;
	struct http_buf ev, out;
	int is_err = strcmp(stream, "stderr") == 0;

	if (api_ws_stream(p, data, len))
		return;
	if (p->e2b == E2B_RPC_STREAM) {
		/* A command's Connect stream: its start event goes with the
		 * head (an empty piece, the run's start, carries only that). */
		http_buf_init(&ev);
		http_buf_init(&out);
		if (!p->streaming)
			stream_head(p, &out);
		e2b_process_output(&ev, p->streaming, p->run_pid,
		    p->e2b_pty   ? "pty"
		        : is_err ? "stderr"
		                 : "stdout",
		    data, len);
		p->streaming = 1;
		stream_chunk(p, &out, ev.data, ev.len);
		if (!ev.oom && !out.oom && a->resume_fn != NULL)
			a->resume_fn(a->resume_arg, p->conn, out.data, out.len,
			    API_RESUME_MORE);
		http_buf_free(&ev);
		http_buf_free(&out);
		return;
	}
	/* A streaming command (or another reader of one): its start tells
	 * the pid that commands/input, commands/stream and kill take. */
	if (len == 0 && p->sse && (p->input_listed || p->reader) &&
	    p->run_pid != 0 && !p->streaming) {
		http_buf_init(&ev);
		http_buf_init(&out);
		stream_head(p, &out);
		p->streaming = 1;
		sse_event(&ev, "start",
		    json_pack("{s:I}", "pid", (json_int_t)p->run_pid));
		stream_chunk(p, &out, ev.data, ev.len);
		if (!ev.oom && !out.oom && a->resume_fn != NULL)
			a->resume_fn(a->resume_arg, p->conn, out.data, out.len,
			    API_RESUME_MORE);
		http_buf_free(&ev);
		http_buf_free(&out);
		return;
	}
	if (len == 0)
		return;
	if (!p->sse) {
		http_buf_add(is_err ? &p->acc_err : &p->acc_out, data, len);
		return;
	}
	http_buf_init(&ev);
	http_buf_init(&out);
	if (!p->streaming) {
		stream_head(p, &out);
		p->streaming = 1;
	}
	sse_event(&ev, is_err ? "stderr" : "stdout",
	    json_pack("{s:o}", "data", bytes_string(data, len)));
	stream_chunk(p, &out, ev.data, ev.len);
	if (!ev.oom && !out.oom && a->resume_fn != NULL)
		a->resume_fn(
		    a->resume_arg, p->conn, out.data, out.len, API_RESUME_MORE);
	http_buf_free(&ev);
	http_buf_free(&out);
}

void
api_stream_cell(struct api_pending *p, const void *data, size_t len)
{
	struct api *a = p->api;
	struct http_buf lines, out;

	/* The head goes with the cell's start, so a client (E2B's SDK,
	 * which waits for it within its request timeout) knows the cell
	 * runs, however long it is silent. */
	if (!p->cell) {
		p->cell = 1;
		api_cell_stream_init(&p->cs);
	}
	http_buf_init(&lines);
	http_buf_init(&out);
	if (!p->streaming) {
		stream_head(p, &out);
		p->streaming = 1;
	}
	api_cell_stream_feed(&p->cs, data, len, &lines);
	stream_chunk(p, &out, lines.data, lines.len);
	if (!lines.oom && !out.oom && out.len > 0 && a->resume_fn != NULL)
		a->resume_fn(
		    a->resume_arg, p->conn, out.data, out.len, API_RESUME_MORE);
	http_buf_free(&lines);
	http_buf_free(&out);
}

/* A cell that failed after its lines began: the stream ends with an
 * error line of E2B's shape, the host's, with keep's code beside it. */
static void
cell_error_line(struct http_buf *b, int rc, const struct api_error *err)
{
	char msg[API_MSG_MAX];
	json_t *o;

	memcpy(msg, err->message, sizeof(msg));
	msg[sizeof(msg) - 1] = '\0';
	o = json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "error", "name",
	    "HostError", "value", msg, "traceback", "", "code",
	    api_err_code(rc));
	api_json_line(b, o);
}

void
api_lines_reply(struct rq *r, struct api_run_result *res, struct http_buf *b,
    const char *type)
{
	free(res->out);
	free(res->err);
	free(res->results);
	res->out = res->err = res->results = NULL;
	if (b->oom)
		rq_error(r, API_EINTERNAL, "Out of memory");
	else
		rq_raw(r, 200, type, b->data != NULL ? b->data : "", b->len);
	http_buf_free(b);
}

void
api_json_line(struct http_buf *b, json_t *o)
{
	char *s;

	if (o == NULL || (s = json_dumps(o, JSON_COMPACT)) == NULL) {
		b->oom = 1;
		json_decref(o);
		return;
	}
	http_buf_puts(b, s);
	http_buf_puts(b, "\n");
	free(s);
	json_decref(o);
}

/* Put streamed output back in front of the final output (non-SSE). */
static int
merge_acc(struct http_buf *acc, char **buf, size_t *len)
{
	if (acc->len == 0)
		return 0;
	http_buf_add(acc, *buf, *len);
	if (acc->oom)
		return -1;
	free(*buf);
	*buf = acc->data;
	*len = acc->len;
	http_buf_init(acc);
	return 0;
}

static void audit_outcome(struct rq *r);

void
api_resume_run(struct api_pending *p, int rc, struct api_run_result *res,
    const struct api_error *err)
{
	struct api *a = p->api;
	struct http_buf out;
	struct rq r;

	if (api_ws_end(p, rc, res))
		return;
	api_pty_unlink(p);
	memset(&r, 0, sizeof(r));
	http_buf_init(&out);
	r.api = a;
	r.out = &out;
	r.close = p->close;
	r.head_only = p->head_only;
	r.http10 = p->http10;
	r.sse = p->sse;
	r.ndjson = p->ndjson;
	r.e2b = p->e2b;
	r.e2b_cell = p->e2b_cell;
	memcpy(r.e2b_mark, p->e2b_mark, sizeof(r.e2b_mark));
	memcpy(r.request_id, p->request_id, sizeof(r.request_id));
	memcpy(r.client_request_id, p->client_request_id,
	    sizeof(r.client_request_id));
	if (rc == API_ENOTFOUND && p->e2b_ctx[0] != '\0')
		e2b_ctx_forget(a, p->e2b_ctx);
	if (p->streaming) {
		struct http_buf ev;

		http_buf_init(&ev);
		if (p->cell) {
			if (rc != API_OK) {
				if (rc < 0 || rc >= API_ERR_COUNT)
					rc = API_EINTERNAL;
				cell_error_line(&ev, rc, err);
			} else {
				api_observe_run(a, res->duration_ms);
				if (api_cell_stream_end(&p->cs, res->out,
				        res->out_len, res->err, res->err_len,
				        &ev) != 0)
					ev.oom = 1;
			}
		} else if (p->e2b == E2B_RPC_STREAM) {
			if (rc == API_OK)
				api_observe_run(a, res->duration_ms);
			e2b_process_events(&ev, 1, p->e2b_pty, rc, res, err);
		} else if (rc == API_OK) {
			api_observe_run(a, res->duration_ms);
			res->reason[sizeof(res->reason) - 1] = '\0';
			run_events(&ev, res, a->platform);
		} else {
			char msg[API_MSG_MAX];

			if (rc <= API_OK || rc >= API_ERR_COUNT)
				rc = API_EINTERNAL;
			memcpy(msg, err->message, sizeof(msg));
			msg[sizeof(msg) - 1] = '\0';
			sse_event(&ev, "error",
			    json_pack("{s:{s:s,s:s}}", "error", "message", msg,
			        "code", api_err_code(rc)));
		}
		stream_chunk(p, &out, ev.data, ev.len);
		if (!p->http10)
			http_buf_puts(&out, "0\r\n\r\n");
		r.close = p->close || p->http10;
		r.status = 200;
		if (ev.oom)
			out.oom = 1;
		http_buf_free(&ev);
		free(res->out);
		free(res->err);
		free(res->results);
	} else if (rc == API_OK) {
		if (merge_acc(&p->acc_out, &res->out, &res->out_len) != 0 ||
		    merge_acc(&p->acc_err, &res->err, &res->err_len) != 0) {
			free(res->out);
			free(res->err);
			free(res->results);
			rq_error(&r, API_EINTERNAL, "Out of memory");
		} else
			reply_run(&r, res);
	} else {
		free(res->out);
		free(res->err);
		free(res->results);
		rq_backend_error(&r, rc, err);
	}
	if (out.oom) {
		out.len = 0;
		r.close = 1;
	}
	if (p->authorized && r.status >= 400 && p->ri < api_nroutes) {
		r.route = &api_routes[p->ri];
		r.authorized = 1;
		r.who = p->who;
		r.call.who = &r.who;
		r.call.request_id = r.request_id;
		r.call.client_request_id = r.client_request_id;
		strlcpy(r.id, p->target, sizeof(r.id));
		audit_outcome(&r);
	}
	if (p->idem != NULL && p->idem->in_flight &&
	    p->idem->serial == p->idem_serial &&
	    idem_fill(a, p->idem, p->streaming ? 0 : r.status, out.data,
	        out.len, out.oom))
		idem_keep(a, &p->who, p->idem);
	a->req_count[p->ri * API_STATUS_SLOTS +
	    (size_t)status_slot(r.status)]++;
	api_hist_add(&a->req_hist[p->ri], mono_s() - p->t0);
	a->pending--;
	if (a->resume_fn != NULL)
		a->resume_fn(a->resume_arg, p->conn, out.data, out.len,
		    r.close ? API_RESUME_CLOSE : 0);
	http_buf_free(&out);
	http_buf_free(&p->acc_out);
	http_buf_free(&p->acc_err);
	if (p->cell)
		api_cell_stream_free(&p->cs);
	free(p);
}

/*
 * A request the policy allowed and that was then refused (a sandbox not
 * the caller's: 404; a bad body: 400; a full store: 507): its allow entry
 * is followed by a deny entry of the same request id, rule "outcome",
 * with the status the client was given, so the log holds the answer.
 */
static void
audit_outcome(struct rq *r)
{
	char why[64];

	if (!r->authorized || r->status < 400 || r->route == NULL)
		return;
	snprintf(why, sizeof(why), "%s",
	    r->err_code[0] != '\0' ? r->err_code : "error");
	api_audit_refused(r, NULL, r->status, "outcome", why);
}

int
api_handle_conn(struct api *a, const struct http_request *req,
    struct http_buf *out, uint64_t conn)
{
	struct rq r;
	const struct api_route *rt = NULL;
	int path_known = 0;
	double t0 = mono_s();
	size_t ri, out_start = out->len;

	memset(&r, 0, sizeof(r));
	r.api = a;
	r.req = req;
	r.out = out;
	r.close = !req->keep_alive;
	r.head_only = req->method == HTTP_HEAD;
	r.http10 = req->version_minor == 0;
	r.conn = conn;
	r.can_defer = conn != UINT64_MAX && a->resume_fn != NULL;
	r.t0 = t0;
	make_request_id(&r);

	{
		long hi = api_port_host(a, req, r.id, r.tail);

		if (hi >= 0) {
			rt = &api_routes[hi];
			ri = (size_t)hi;
			r.host_form = 1;
		} else if (hi == -2) {
			/* A port's host name with a method ports do not
			 * take. */
			path_known = 1;
			strlcpy(r.allow, "GET, HEAD, POST, PUT, PATCH, DELETE",
			    sizeof(r.allow));
		}
	}
	for (ri = rt != NULL ? api_nroutes : 0; ri < api_nroutes; ri++) {
		const struct api_route *c = &api_routes[ri];
		enum http_method m =
		    req->method == HTTP_HEAD ? HTTP_GET : req->method;

		if (!route_match(
		        c->pattern, req->path, req->path_len, r.id, r.tail)) {
			r.id[0] = r.tail[0] = '\0';
			continue;
		}
		path_known = 1;
		if (c->method == m) {
			rt = c;
			break;
		}
		if (strlen(r.allow) + 10 < sizeof(r.allow)) {
			if (r.allow[0] != '\0')
				strlcat(r.allow, ", ", sizeof(r.allow));
			strlcat(r.allow,
			    c->method == HTTP_GET         ? "GET, HEAD"
			        : c->method == HTTP_POST  ? "POST"
			        : c->method == HTTP_PUT   ? "PUT"
			        : c->method == HTTP_PATCH ? "PATCH"
			                                  : "DELETE",
			    sizeof(r.allow));
		}
		r.id[0] = r.tail[0] = '\0';
	}
	if (rt != NULL && r.host_form)
		ri = (size_t)(rt - api_routes);
	if (rt == NULL) {
		ri = api_nroutes;
		/* Under E2B's prefix, E2B's shape: its SDK reads "message". */
		if (req->path_len >= 5 && memcmp(req->path, "/e2b/", 5) == 0)
			r.e2b = E2B_API;
		if (path_known)
			rq_envelope(&r, 405, "METHOD_NOT_ALLOWED",
			    "Method not allowed");
		else
			rq_error(&r, API_ENOTFOUND, "No such endpoint");
		goto done;
	}
	rq_route(&r, rt, ri, req->peer);
	/* A command's Connect stream is streamed; E2B's other replies
	 * never are, whatever they accept. */
	r.call.sse = rt->e2b == E2B_RPC_STREAM ? 1
	    : rt->e2b != E2B_NO                ? 0
	                                       : rq_accepts_sse(&r);
	/* A cell's lines stream to who reads them as lines (E2B's code
	 * interpreter always does). */
	r.call.ndjson = rq_accepts_ndjson(&r);
	{
		const struct http_header *lk =
		    http_find_header(req, "keep-lock");

		if (lk != NULL) {
			r.call.lock = lk->value;
			r.call.lock_len = lk->valuelen;
		}
	}

	/* An E2B sandbox route's sandbox is named by a header: read after
	 * the token (a refusal for a bad one is then audited, with who). */
	if (rt->cap != -2) {
		if (authenticate(&r) != 0 ||
		    (rt->e2b >= E2B_SBX && e2b_sandbox(&r) != 0) ||
		    authorize(&r) != 0)
			goto done;
	} else if (rt->e2b >= E2B_SBX && e2b_sandbox(&r) != 0)
		goto done;
	if (rt->e2b != E2B_NO && e2b_body_type(&r) != 0)
		goto done;
	if (rt->json_body && (rt->json_body == 1 || r.req->body_len > 0) &&
	    rq_load_body(&r) != 0)
		goto done;
	if (rt->idempotent) {
		const struct http_header *key =
		    http_find_header(req, "idempotency-key");
		struct idem_entry *slot;
		unsigned char hash[32];

		if (key != NULL) {
			uint64_t serial = 0;

			if (idem_check(&r, key, hash, &slot))
				goto done;
			/* Reserved before the op runs (it may wait on other
			 * processes while other requests are served): a
			 * retry meanwhile is told it is in progress. */
			if (slot != NULL) {
				idem_claim(&r, slot, key, hash);
				slot->in_flight = 1;
				serial = slot->serial = ++a->idem_serial;
			}
			if (slot != NULL &&
			    idem_recall(&r, slot, serial, slot->key, hash))
				goto done;
			rt->fn(&r);
			if (r.pending != NULL) {
				/* Filled by api_resume_run. */
				r.pending->idem = slot;
				r.pending->idem_serial = serial;
				json_decref(r.body);
				return API_HANDLE_PENDING;
			}
			if (slot != NULL && slot->in_flight &&
			    slot->serial == serial &&
			    idem_fill(a, slot, r.status, out->data + out_start,
			        out->len - out_start, out->oom))
				idem_keep(a, &r.who, slot);
			goto done;
		}
	}
	rt->fn(&r);
	if (r.pending != NULL) {
		/* Counted when it is answered. */
		json_decref(r.body);
		return API_HANDLE_PENDING;
	}
done:
	audit_outcome(&r);
	if (out->oom) {
		/* Could not build the reply: drop the connection. */
		out->len = out_start;
		out->oom = 0;
		r.close = 1;
	}
	a->req_count[ri * API_STATUS_SLOTS + (size_t)status_slot(r.status)]++;
	api_hist_add(&a->req_hist[ri], mono_s() - t0);
	json_decref(r.body);
	return r.close;
}

/*
 * The head of a request whose body is still to come: when its route needs
 * a token and none verifies, answer 401 now (the body is never read, so
 * no one without a token holds the front's memory with bodies, and the
 * connection is closed). 1: *out holds that answer; 0: read the body.
 */
int
api_head_check(struct api *a, const struct http_request *req,
    struct http_buf *out, uint64_t conn)
{
	enum http_method m = req->method == HTTP_HEAD ? HTTP_GET : req->method;
	const struct api_route *rt = NULL;
	struct rq r;
	size_t ri;

	memset(&r, 0, sizeof(r));
	{
		long hi = api_port_host(a, req, r.id, r.tail);

		if (hi >= 0) {
			rt = &api_routes[hi];
			ri = (size_t)hi + 1;
		}
	}
	for (ri = rt != NULL ? ri : 0; ri < api_nroutes && rt == NULL; ri++) {
		const struct api_route *c = &api_routes[ri];

		if (c->method == m &&
		    route_match(
		        c->pattern, req->path, req->path_len, r.id, r.tail))
			rt = c;
		else
			r.id[0] = r.tail[0] = '\0';
	}
	if (rt == NULL || rt->cap == -2)
		return 0;
	r.api = a;
	r.req = req;
	r.out = out;
	r.close = 1;
	r.http10 = req->version_minor == 0;
	r.conn = conn;
	r.t0 = mono_s();
	make_request_id(&r);
	rq_route(&r, rt, ri - 1, req->peer);
	if (authenticate(&r) == 0)
		return 0;
	a->req_count[r.ri * API_STATUS_SLOTS + (size_t)status_slot(r.status)]++;
	return 1;
}

/* --- /metrics ----------------------------------------------------------- */

static void
hist_print(struct http_buf *b, const char *name, const char *labels,
    const struct api_hist *h)
{
	uint64_t cum = 0;
	const char *sep = labels[0] ? "," : "";

	for (int i = 0; i < API_HIST_BUCKETS; i++) {
		cum += h->bucket[i];
		http_buf_printf(b, "%s_bucket{%s%sle=\"%g\"} %llu\n", name,
		    labels, sep, hist_le[i], (unsigned long long)cum);
	}
	http_buf_printf(b, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", name, labels,
	    sep, (unsigned long long)h->count);
	http_buf_printf(b, "%s_sum{%s} %.6f\n", name, labels, h->sum);
	http_buf_printf(b, "%s_count{%s} %llu\n", name, labels,
	    (unsigned long long)h->count);
}

void
api_metrics(struct rq *r)
{
	static const char *const conn_names[] = { "accepted", "refused",
		"timeout" };
	struct api *a = r->api;
	struct http_buf b;
	char lbl[8];

	http_buf_init(&b);
	http_buf_puts(&b,
	    "# HELP keep_http_requests_total HTTP requests by route and "
	    "status.\n# TYPE keep_http_requests_total counter\n");
	for (size_t i = 0; i <= api_nroutes; i++)
		for (int s = 0; s < API_STATUS_SLOTS; s++) {
			uint64_t v =
			    a->req_count[i * API_STATUS_SLOTS + (size_t)s];
			if (v == 0)
				continue;
			http_buf_printf(&b,
			    "keep_http_requests_total{route=\"%s\",code=\"%s\"}"
			    " "
			    "%llu\n",
			    i < api_nroutes ? api_routes[i].name : "unmatched",
			    slot_label(s, lbl), (unsigned long long)v);
		}
	for (int s = 0; s < API_STATUS_SLOTS; s++)
		if (a->refused[s])
			http_buf_printf(&b,
			    "keep_http_requests_total{route=\"malformed\","
			    "code=\"%s\"} %llu\n",
			    slot_label(s, lbl),
			    (unsigned long long)a->refused[s]);
	http_buf_puts(&b,
	    "# HELP keep_http_request_duration_seconds Time to answer.\n"
	    "# TYPE keep_http_request_duration_seconds histogram\n");
	for (size_t i = 0; i < api_nroutes; i++) {
		char lab[128];
		if (a->req_hist[i].count == 0)
			continue;
		snprintf(lab, sizeof(lab), "route=\"%s\"", api_routes[i].name);
		hist_print(&b, "keep_http_request_duration_seconds", lab,
		    &a->req_hist[i]);
	}
	http_buf_printf(&b,
	    "# HELP keep_decisions_total Authorization decisions.\n"
	    "# TYPE keep_decisions_total counter\n"
	    "keep_decisions_total{result=\"allow\"} %llu\n"
	    "keep_decisions_total{result=\"deny\"} %llu\n",
	    (unsigned long long)a->decisions[0],
	    (unsigned long long)a->decisions[1]);
	http_buf_printf(&b,
	    "# HELP keep_idempotency_bytes Replies kept in memory for "
	    "Idempotency-Key retries, in bytes (bounded).\n"
	    "# TYPE keep_idempotency_bytes gauge\n"
	    "keep_idempotency_bytes %zu\n",
	    a->idem_bytes);
	http_buf_printf(&b,
	    "# HELP keep_sandboxes_created_total Sandboxes created.\n"
	    "# TYPE keep_sandboxes_created_total counter\n"
	    "keep_sandboxes_created_total %llu\n"
	    "# HELP keep_sandboxes_deleted_total Sandboxes deleted.\n"
	    "# TYPE keep_sandboxes_deleted_total counter\n"
	    "keep_sandboxes_deleted_total %llu\n",
	    (unsigned long long)a->sandboxes_created,
	    (unsigned long long)a->sandboxes_deleted);
	http_buf_puts(&b,
	    "# HELP keep_run_duration_seconds Run durations.\n"
	    "# TYPE keep_run_duration_seconds histogram\n");
	hist_print(&b, "keep_run_duration_seconds", "", &a->run_hist);
	http_buf_puts(&b,
	    "# HELP keep_connections_total Connection events.\n"
	    "# TYPE keep_connections_total counter\n");
	for (int i = 0; i < API_CONN_EVENT_COUNT; i++)
		http_buf_printf(&b,
		    "keep_connections_total{event=\"%s\"} %llu\n",
		    conn_names[i], (unsigned long long)a->conn_events[i]);
	if (a->be->metrics != NULL)
		a->be->metrics(a->be->ctx, &b);
	if (b.oom)
		rq_error(r, API_EINTERNAL, "Out of memory");
	else
		rq_raw(r, 200, "text/plain; version=0.0.4", b.data, b.len);
	http_buf_free(&b);
}

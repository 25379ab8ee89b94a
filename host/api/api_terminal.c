/*
 * GET /v1/sandboxes/{id}/terminal (docs/terminal.md): a WebSocket
 * (RFC 6455) bound to an interactive shell in the sandbox. The request is
 * checked as an upgrade, the backend starts the shell as a deferred,
 * streaming run, and the 101 goes out with the run's first sign of life
 * (so that a run the vmm refuses is still an ordinary HTTP error). The
 * front (host/http/front.c) then frames the run's output and hands the
 * client's messages here: binary messages are input bytes; text messages
 * are JSON, {"type":"input","data":"..."} or
 * {"type":"resize","cols":N,"rows":M}.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "host/api/api_int.h"
#include "host/http/ws.h"
#include "lib/clock.h"
#include "lib/log.h"

#define BE(r) ((r)->api->be)
#define TERM_DIM_MAX 1000

int
api_term_name_ok(const char *s)
{
	size_t i;

	for (i = 0; s[i] != '\0' && i <= 32; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		        s[i] == '.' || s[i] == '+'))
			return 0;
	return s[i] == '\0' && i >= 1 && i <= 32;
}

/* Whether the header's comma-separated list holds token (any case). */
static int
header_has(const struct http_request *req, const char *name, const char *token)
{
	const struct http_header *h = http_find_header(req, name);
	size_t tl = strlen(token), i = 0, s, e;

	if (h == NULL)
		return 0;
	while (i < h->valuelen) {
		while (i < h->valuelen &&
		    (h->value[i] == ' ' || h->value[i] == '\t' ||
		        h->value[i] == ','))
			i++;
		s = i;
		while (i < h->valuelen && h->value[i] != ',')
			i++;
		e = i;
		while (e > s &&
		    (h->value[e - 1] == ' ' || h->value[e - 1] == '\t'))
			e--;
		if (e - s == tl && strncasecmp(h->value + s, token, tl) == 0)
			return 1;
	}
	return 0;
}

static int
query_dim(struct rq *r, const char *name, unsigned def, unsigned *out)
{
	char buf[16], *end;
	unsigned long v;
	int have;

	if ((have = rq_query(r, name, buf, sizeof(buf), 0)) < 0)
		return -1;
	if (!have) {
		*out = def;
		return 0;
	}
	v = strtoul(buf, &end, 10);
	if (*end != '\0' || buf[0] < '1' || buf[0] > '9' || v > TERM_DIM_MAX) {
		rq_error(
		    r, API_EBADREQ, "%s must be 1 to %d", name, TERM_DIM_MAX);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

void
h_terminal(struct rq *r)
{
	const struct http_header *key;
	struct api_terminal t;
	struct api_error err;
	struct api_pending *p;
	char term[40], accept[29];
	int rc, have;

	key = http_find_header(r->req, "sec-websocket-key");
	if (!header_has(r->req, "upgrade", "websocket") ||
	    !header_has(r->req, "connection", "upgrade") || key == NULL ||
	    !ws_key_ok(key->value, key->valuelen)) {
		rq_error(r, API_EBADREQ,
		    "A WebSocket upgrade is required (Upgrade: websocket, "
		    "Connection: Upgrade, Sec-WebSocket-Key)");
		return;
	}
	if (!header_has(r->req, "sec-websocket-version", "13")) {
		rq_error(r, API_EBADREQ, "Sec-WebSocket-Version must be 13");
		return;
	}
	memset(&t, 0, sizeof(t));
	if (query_dim(r, "cols", 80, &t.cols) ||
	    query_dim(r, "rows", 24, &t.rows))
		return;
	if ((have = rq_query(r, "term", term, sizeof(term), 0)) < 0)
		return;
	if (!have)
		strlcpy(term, "xterm-256color", sizeof(term));
	if (!api_term_name_ok(term)) {
		rq_error(r, API_EBADREQ, "term must be a terminal type's name");
		return;
	}
	t.term = term;
	memset(&err, 0, sizeof(err));
	rc = BE(r)->terminal_open(BE(r)->ctx, &r->call, r->id, &t, &err);
	if (rc != API_PENDING || (p = r->pending) == NULL) {
		if (rc == API_OK || rc == API_PENDING)
			rc = API_EINTERNAL;
		rq_backend_error(r, rc, &err);
		return;
	}
	ws_accept(key->value, key->valuelen, accept);
	snprintf(p->ws_head, sizeof(p->ws_head),
	    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
	    "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
	    "X-Request-Id: %s\r\n\r\n",
	    accept, p->request_id);
	p->ws = 1;
	p->ws_next = r->api->ws;
	r->api->ws = p;
}

static void
ws_unlink(struct api *a, struct api_pending *p)
{
	struct api_pending **pp;

	for (pp = &a->ws; *pp != NULL; pp = &(*pp)->ws_next)
		if (*pp == p) {
			*pp = p->ws_next;
			return;
		}
}

/*
 * E2B's ptys are terminal runs too, whose output goes out as a Connect
 * stream (api.c) and whose input comes by other requests, SendInput and
 * Update, naming the sandbox and the run's pid. Streaming commands are
 * listed beside them, so that their stdin stream (or, started without
 * one, the refusal of input) is found the same way. They are listed
 * with the WebSocket sessions, never upgraded, so a client gone ends the
 * program's input as a session's does (api_ws_closed).
 */
void
api_pty_link(struct api *a, struct api_pending *p)
{
	p->e2b_pty = 1;
	api_input_link(a, p, STDIN_NONE);
}

void
api_input_link(struct api *a, struct api_pending *p, enum api_stdin st)
{
	if (p->input_listed)
		return;
	p->input_listed = 1;
	p->stdin_state = st;
	p->ws_next = a->ws;
	a->ws = p;
}

void
api_pty_unlink(struct api_pending *p)
{
	if (p->input_listed) {
		ws_unlink(p->api, p);
		p->input_listed = 0;
	}
}

/* Only the principal that started a run reaches its input: another
 * allowed the same route on the sandbox's id is not its owner (the vmm
 * checks ownership when a run starts, not for each piece of input). */
struct api_pending *
api_input_find(
    struct api *a, const char *sandbox, const char *principal, uint64_t pid)
{
	struct api_pending *p;

	for (p = a->ws; p != NULL; p = p->ws_next)
		if (p->input_listed && !p->ws_gone && p->run_pid == pid &&
		    pid != 0 && strcmp(p->target, sandbox) == 0 &&
		    strcmp(p->who.sub, principal) == 0)
			return p;
	return NULL;
}

/* The live session of connection conn; up: only once upgraded. */
static struct api_pending *
ws_find(struct api *a, uint64_t conn, int up)
{
	struct api_pending *p;

	for (p = a->ws; p != NULL; p = p->ws_next)
		if (p->conn == conn && (p->ws_up || !up) && !p->ws_gone)
			return p;
	return NULL;
}

int
api_ws_stream(struct api_pending *p, const void *data, size_t len)
{
	struct api *a = p->api;

	if (!p->ws)
		return 0;
	if (a->resume_fn == NULL || p->ws_gone)
		return 1;
	if (!p->ws_up) {
		p->ws_up = 1;
		a->resume_fn(a->resume_arg, p->conn, p->ws_head,
		    strlen(p->ws_head), API_RESUME_UPGRADE);
	}
	if (len > 0)
		a->resume_fn(
		    a->resume_arg, p->conn, data, len, API_RESUME_MORE);
	return 1;
}

/* The run has ended: what it wrote last, then the close. A run that
 * never started (refused) is answered as an ordinary request. */
int
api_ws_end(struct api_pending *p, int rc, struct api_run_result *res)
{
	struct api *a = p->api;

	if (!p->ws)
		return 0;
	ws_unlink(a, p);
	if (!p->ws_up) {
		p->ws = 0;
		return 0;
	}
	if (!p->ws_gone && a->resume_fn != NULL) {
		if (rc == API_OK && res->out_len > 0)
			a->resume_fn(a->resume_arg, p->conn, res->out,
			    res->out_len, API_RESUME_MORE);
		if (rc == API_OK && res->err_len > 0)
			a->resume_fn(a->resume_arg, p->conn, res->err,
			    res->err_len, API_RESUME_MORE);
		a->resume_fn(a->resume_arg, p->conn, NULL, 0, API_RESUME_CLOSE);
	}
	if (rc == API_OK)
		api_observe_run(a, res->duration_ms);
	free(res->out);
	free(res->err);
	free(res->results);
	/* 101 is not among the counted statuses: the last slot, "other". */
	a->req_count[p->ri * API_STATUS_SLOTS + API_STATUS_SLOTS - 1]++;
	api_hist_add(&a->req_hist[p->ri], (double)mono_ms() / 1000.0 - p->t0);
	a->pending--;
	http_buf_free(&p->acc_out);
	http_buf_free(&p->acc_err);
	free(p);
	return 1;
}

void
api_ws_message(
    struct api *a, uint64_t conn, int opcode, const void *data, size_t len)
{
	struct api_pending *p = ws_find(a, conn, 1);
	json_t *j, *v;
	const char *type;

	if (p == NULL)
		return;
	if (opcode == WS_OP_BINARY) {
		a->be->terminal_input(
		    a->be->ctx, p, API_TERM_DATA, data, len, 0, 0);
		return;
	}
	if ((j = json_loadb(data, len, JSON_REJECT_DUPLICATES, NULL)) == NULL ||
	    (type = json_string_value(json_object_get(j, "type"))) == NULL) {
		json_decref(j);
		return;
	}
	if (strcmp(type, "input") == 0 &&
	    json_is_string(v = json_object_get(j, "data")))
		a->be->terminal_input(a->be->ctx, p, API_TERM_DATA,
		    json_string_value(v), json_string_length(v), 0, 0);
	else if (strcmp(type, "resize") == 0) {
		json_int_t c = json_integer_value(json_object_get(j, "cols"));
		json_int_t w = json_integer_value(json_object_get(j, "rows"));

		if (c >= 1 && c <= TERM_DIM_MAX && w >= 1 && w <= TERM_DIM_MAX)
			a->be->terminal_input(a->be->ctx, p, API_TERM_RESIZE,
			    NULL, 0, (unsigned)c, (unsigned)w);
	}
	json_decref(j);
}

/* The session's end, or its client gone before the 101: the shell's
 * input ends either way, so it does not wait out its time limit. */
void
api_ws_closed(struct api *a, uint64_t conn)
{
	struct api_pending *p = ws_find(a, conn, 0);

	if (p == NULL)
		return;
	p->ws_gone = 1;
	a->be->terminal_input(a->be->ctx, p, API_TERM_EOF, NULL, 0, 0, 0);
}

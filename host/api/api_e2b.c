/*
 * E2B's API (docs/e2b.md): the routes under /e2b/ that E2B's own SDKs
 * (npm `e2b` and `@e2b/code-interpreter`) call once E2B_API_URL and
 * E2B_SANDBOX_URL name keepd. Each is a translation: it reads E2B's
 * request, calls the backend op of the keep route the table names (whose
 * capability, decision and checks it shares), and answers in E2B's
 * shape. Here: the control plane (sandboxes), the code interpreter's
 * cells and contexts, envd's health and its file upload and download.
 * envd's Connect RPC is in api_e2b_rpc.c, the wire formats in
 * e2b_wire.c.
 */
#include <sodium.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"
#include "host/api/e2b_wire.h"
#include "lib/log.h"
#include "lib/util.h"

#define BE(r) ((r)->api->be)
#define MAX_TTL_S (30ULL * 24 * 3600)

/*
 * The envd version keep answers as. The SDK gates features on it: from
 * 0.4.0 it sends no user name of its own (keep has none), from 0.5.2 it
 * calls CloseStdin (commands.closeStdin, served), and below 0.5.7 it
 * uploads files as multipart/form-data, never compressed or as a raw
 * stream, which is what keep serves. No other gate of the SDK (e2b
 * 2.51.0) lies between 0.4.0 and 0.5.2 (docs/e2b.md).
 */
#define E2B_ENVD_VERSION "0.5.2"

/* --- the control plane ------------------------------------------------ */

/*
 * A field of E2B's that asks for what keep does not do: refused (400)
 * unless it is absent, null, or the value ok ("false", "true", "[]":
 * the one that asks for nothing). Silently giving less than was asked
 * (a network rule, no internet) would be worse than saying so.
 */
static int
not_served(struct rq *r, const char *key, const char *ok)
{
	json_t *v = json_object_get(r->body, key);
	char msg[API_MSG_MAX];

	if (v == NULL || json_is_null(v))
		return 0;
	if (ok != NULL &&
	    ((strcmp(ok, "false") == 0 && json_is_false(v)) ||
	        (strcmp(ok, "true") == 0 && json_is_true(v)) ||
	        (strcmp(ok, "[]") == 0 && json_is_array(v) &&
	            json_array_size(v) == 0)))
		return 0;
	snprintf(
	    msg, sizeof(msg), "%s is not served by keep (docs/e2b.md)", key);
	rq_fail(r, 400, "BAD_REQUEST", msg);
	return -1;
}

/*
 * E2B's network options: only {"allowPublicTraffic": false} is what keep
 * does anyway (a port is reached with the sandbox's token, which the SDK
 * sends as E2B-Traffic-Access-Token, or a link: docs/e2b.md); public
 * ports and outbound rules are the policy's, so refused (400).
 */
static int
network_not_served(struct rq *r)
{
	json_t *n = json_object_get(r->body, "network"), *p;

	if (n == NULL || json_is_null(n))
		return 0;
	if (json_is_object(n) && json_object_size(n) == 1 &&
	    (p = json_object_get(n, "allowPublicTraffic")) != NULL &&
	    json_is_false(p))
		return 0;
	rq_fail(r, 400, "BAD_REQUEST",
	    "network is not served by keep but for allowPublicTraffic: "
	    "false: a port needs the sandbox's token or a link "
	    "(POST /v1/sandboxes/{id}/links; docs/e2b.md)");
	return -1;
}

static json_t *
e2b_sandbox_json(const struct api_sandbox *sb, const char *tmpl)
{
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:o,s:o,s:s,s:o}", "sandboxID",
	    sb->id, "templateID", tmpl, "alias", sb->image, "clientID", "keep",
	    "envdVersion", E2B_ENVD_VERSION, "startedAt",
	    iso_time(sb->created_at), "endAt", iso_time(sb->expires_at),
	    "state", strcmp(sb->status, "paused") == 0 ? "paused" : "running",
	    "metadata", api_kv_json(sb->metadata, sb->nmetadata));
}

/*
 * HOME=E2B_HOME appended to a sandbox's environment unless it names its
 * own, as E2B's sandboxes have it. 0, or -1 with *env freed and a reply
 * sent.
 */
static int
e2b_home_env(struct rq *r, struct api_kv **env, size_t *n)
{
	struct api_kv *more;
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp((*env)[i].key, "HOME") == 0)
			return 0;
	if ((more = reallocarray(*env, *n + 1, sizeof(**env))) == NULL) {
		free(*env);
		*env = NULL;
		rq_error(r, API_EINTERNAL, "Out of memory");
		return -1;
	}
	more[*n].key = (char *)"HOME";
	more[*n].value = (char *)E2B_HOME;
	*env = more;
	(*n)++;
	return 0;
}

/* POST /e2b/v2/sandboxes: E2B's template as keep's image. */
void
h_e2b_sandbox_create(struct rq *r)
{
	static const char *const fields[] = { "templateID", "metadata",
		"envVars", "timeout", "secure", "allow_internet_access",
		"autoPause", "autoPauseMemory", "autoResume", "mcp", "network",
		"iam", "volumeMounts", NULL };
	struct api_sandbox_spec spec;
	struct api_sandbox sb;
	struct api_token tok;
	struct api_error err;
	struct api_kv *env = NULL, *md = NULL;
	const char *tmpl;
	json_t *o, *v;
	int rc;

	memset(&spec, 0, sizeof(spec));
	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "templateID", 1, &tmpl) ||
	    rq_uint(r, r->body, "timeout", MAX_TTL_S, &spec.ttl_s))
		return;
	if ((v = json_object_get(r->body, "secure")) != NULL &&
	    !json_is_boolean(v) && !json_is_null(v)) {
		rq_error(r, API_EBADREQ, "Field secure must be a boolean");
		return;
	}
	/* Every keep sandbox is "secure": its routes need its token. Its
	 * outbound access is the policy's, not the caller's to ask for. */
	if (not_served(r, "allow_internet_access", "true") ||
	    not_served(r, "autoPause", "false") ||
	    not_served(r, "autoPauseMemory", NULL) ||
	    not_served(r, "autoResume", NULL) || not_served(r, "mcp", NULL) ||
	    network_not_served(r) || not_served(r, "iam", NULL) ||
	    not_served(r, "volumeMounts", "[]"))
		return;
	if (rq_kv(r, r->body, "envVars", &env, &spec.nenv))
		return;
	if (rq_kv(r, r->body, "metadata", &md, &spec.nmetadata) ||
	    rq_env_refs_ok(r, env, spec.nenv)) {
		free(env);
		free(md);
		return;
	}
	/* E2B's layout: /home/user, HOME unless envVars names one. */
	if (e2b_home_env(r, &env, &spec.nenv)) {
		free(md);
		return;
	}
	spec.home_user = 1;
	spec.image = e2b_template_image(tmpl);
	spec.env = env;
	spec.metadata = md;
	memset(&sb, 0, sizeof(sb));
	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc =
	    BE(r)->sandbox_create(BE(r)->ctx, &r->call, &spec, &sb, &tok, &err);
	free(env);
	free(md);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	sb.id[sizeof(sb.id) - 1] = '\0';
	sb.image[sizeof(sb.image) - 1] = '\0';
	tok.token[sizeof(tok.token) - 1] = '\0';
	/* The sandbox's token is both of E2B's: envd's access token, and
	 * the traffic token the code interpreter's SDK sends alone when it
	 * makes, lists or removes a context. */
	o = e2b_sandbox_json(&sb, tmpl);
	if (o != NULL) {
		json_object_set_new(
		    o, "envdAccessToken", json_string(tok.token));
		json_object_set_new(
		    o, "trafficAccessToken", json_string(tok.token));
		/* getHost(port) is "{port}-{id}.{domain}": keepd.yaml's
		 * ports.domain, where keepd routes that name (api_ports.c). */
		json_object_set_new(o, "domain",
		    r->api->ports_domain[0] != '\0'
		        ? json_string(r->api->ports_domain)
		        : json_null());
	}
	api_kv_free(sb.metadata, sb.nmetadata);
	r->api->sandboxes_created++;
	rq_json(r, 201, o);
}

/* --- Sandbox.list ----------------------------------------------------- */

#define E2B_LIST_MAX 100
#define E2B_FILTER_MAX 2048
#define E2B_FILTER_PAIRS 32

struct e2b_list_filter {
	struct api_kv md[E2B_FILTER_PAIRS]; /* into mdbuf */
	size_t nmd;
	char mdbuf[E2B_FILTER_MAX];
	char tmpl[128];
	int64_t started_after; /* -1: none */
	int want_running, want_paused;
};

/* Percent-decodes s in place ('+' is a space when form is set): 0, or -1
 * on a malformed escape or a NUL. */
static int
pct_decode(char *s, int form)
{
	char *o = s;
	int hi, lo;

	for (; *s != '\0'; s++) {
		if (*s == '%') {
			if ((hi = api_unhex(s[1])) < 0 ||
			    (lo = api_unhex(s[2])) < 0 || hi * 16 + lo == 0)
				return -1;
			*o++ = (char)(hi * 16 + lo);
			s += 2;
		} else
			*o++ = form && *s == '+' ? ' ' : *s;
	}
	*o = '\0';
	return 0;
}

/*
 * The SDK's metadata filter: its pairs, each key and value put through
 * encodeURIComponent and the whole through URLSearchParams, so each
 * part is decoded twice (rq_query undid the query's own encoding).
 */
static int
e2b_metadata_filter(struct rq *r, struct e2b_list_filter *f)
{
	char *p, *pair, *eq;
	int rc;

	if ((rc = rq_query(r, "metadata", f->mdbuf, sizeof(f->mdbuf), 0)) <= 0)
		return rc;
	for (p = f->mdbuf; (pair = strsep(&p, "&")) != NULL;) {
		if (*pair == '\0')
			continue;
		if ((eq = strchr(pair, '=')) == NULL || eq == pair ||
		    f->nmd == E2B_FILTER_PAIRS)
			goto bad;
		*eq = '\0';
		if (pct_decode(pair, 1) || pct_decode(pair, 0) ||
		    pct_decode(eq + 1, 1) || pct_decode(eq + 1, 0))
			goto bad;
		f->md[f->nmd].key = pair;
		f->md[f->nmd].value = eq + 1;
		f->nmd++;
	}
	return 0;
bad:
	rq_error(r, API_EBADREQ, "metadata must be at most %d key=value pairs",
	    E2B_FILTER_PAIRS);
	return -1;
}

/*
 * state, repeated (state=running&state=paused, as the SDK sends an
 * array) or comma-separated: running ones, paused ones (E2B's pause), or
 * both. Absent: both, as E2B's default.
 */
static int
e2b_state_filter(struct rq *r, struct e2b_list_filter *f)
{
	const char *q = r->req->query, *end, *amp, *pe, *v, *c;
	int seen = 0;

	f->want_running = f->want_paused = 1;
	if (q == NULL)
		return 0;
	end = q + r->req->query_len;
	for (; q < end; q = pe + (amp != NULL)) {
		amp = memchr(q, '&', (size_t)(end - q));
		pe = amp != NULL ? amp : end;
		if (pe - q < 6 || memcmp(q, "state=", 6) != 0)
			continue;
		if (!seen++)
			f->want_running = f->want_paused = 0;
		for (v = q + 6; v < pe; v = c + 1) {
			if ((c = memchr(v, ',', (size_t)(pe - v))) == NULL &&
			    (c = memchr(v, '%', (size_t)(pe - v))) == NULL)
				c = pe;
			if (c - v == 7 && memcmp(v, "running", 7) == 0)
				f->want_running = 1;
			else if (c - v == 6 && memcmp(v, "paused", 6) == 0)
				f->want_paused = 1;
			else {
				rq_error(r, API_EBADREQ,
				    "state must be running or paused");
				return -1;
			}
			/* An encoded comma ("%2C") separates too. */
			if (c < pe && *c == '%') {
				if (pe - c < 3 || memcmp(c, "%2C", 3) != 0) {
					rq_error(r, API_EBADREQ,
					    "state must be running or paused");
					return -1;
				}
				c += 2;
			}
		}
	}
	return 0;
}

/* startedAfter: an RFC 3339 time in UTC, as Date.toISOString() writes. */
static int
e2b_started_filter(struct rq *r, struct e2b_list_filter *f)
{
	char buf[40], *rest;
	struct tm tm;
	int rc;

	f->started_after = -1;
	if ((rc = rq_query(r, "startedAfter", buf, sizeof(buf), 0)) <= 0)
		return rc;
	memset(&tm, 0, sizeof(tm));
	rest = strptime(buf, "%Y-%m-%dT%H:%M:%S", &tm);
	if (rest != NULL && *rest == '.') {
		rest++;
		while (*rest >= '0' && *rest <= '9')
			rest++;
	}
	if (rest == NULL || strcmp(rest, "Z") != 0) {
		rq_error(r, API_EBADREQ,
		    "startedAfter must be a time in UTC (RFC 3339, ending in "
		    "Z)");
		return -1;
	}
	f->started_after = (int64_t)timegm(&tm);
	return 0;
}

static int
e2b_list_match(const struct e2b_list_filter *f, const struct api_sandbox *sb)
{
	size_t i, j;

	if (!(strcmp(sb->status, "paused") == 0 ? f->want_paused
	                                        : f->want_running))
		return 0;
	if (f->started_after >= 0 && sb->created_at <= f->started_after)
		return 0;
	if (f->tmpl[0] != '\0' &&
	    strcmp(e2b_template_image(f->tmpl), sb->image) != 0)
		return 0;
	for (i = 0; i < f->nmd; i++) {
		for (j = 0; j < sb->nmetadata; j++)
			if (strcmp(sb->metadata[j].key, f->md[i].key) == 0 &&
			    strcmp(sb->metadata[j].value, f->md[i].value) == 0)
				break;
		if (j == sb->nmetadata)
			return 0;
	}
	return 1;
}

/*
 * GET /e2b/v2/sandboxes (Sandbox.list and its paginator): one page of
 * keep's sandbox list, filtered. The filters apply within the page, so a
 * page may hold fewer than limit (even none) and still have a next: the
 * SDK's paginator goes on while X-Next-Token comes, as E2B's own does.
 */
void
h_e2b_sandbox_list(struct rq *r)
{
	struct e2b_list_filter *f;
	struct api_sandbox *sbs = NULL;
	struct api_page pg;
	struct api_error err;
	char cursor[API_ID_MAX + 1], next[API_ID_MAX + 1] = "", lim[16];
	char order[16];
	size_t n = 0, i;
	json_t *arr = NULL;
	int rc;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	memset(&pg, 0, sizeof(pg));
	pg.limit = E2B_LIST_MAX;
	if ((rc = rq_query(r, "nextToken", cursor, sizeof(cursor), 0)) < 0)
		goto out;
	if (rc == 1)
		pg.cursor = cursor;
	if ((rc = rq_query(r, "limit", lim, sizeof(lim), 0)) < 0)
		goto out;
	if (rc == 1) {
		char *end;
		unsigned long v = strtoul(lim, &end, 10);

		if (*end != '\0' || lim[0] < '0' || lim[0] > '9' || v < 1 ||
		    v > E2B_LIST_MAX) {
			rq_error(r, API_EBADREQ, "limit must be 1 to %d",
			    E2B_LIST_MAX);
			goto out;
		}
		pg.limit = (unsigned)v;
	}
	/* Sorting the whole set by start is not something keep's list,
	 * paged by id, can do: said rather than ignored. */
	if ((rc = rq_query(r, "order", order, sizeof(order), 0)) < 0)
		goto out;
	if (rc == 1) {
		rq_fail(r, 400, "BAD_REQUEST",
		    "order is not served by keep (docs/e2b.md)");
		goto out;
	}
	if (e2b_metadata_filter(r, f) || e2b_state_filter(r, f) ||
	    e2b_started_filter(r, f) ||
	    rq_query(r, "template", f->tmpl, sizeof(f->tmpl), 0) < 0)
		goto out;
	if ((sbs = calloc(E2B_LIST_MAX, sizeof(*sbs))) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		goto out;
	}
	memset(&err, 0, sizeof(err));
	if (r->who.sbx[0] != '\0') {
		/* A sandbox's token sees its own sandbox and nothing else. */
		rc = pg.cursor != NULL
		    ? API_OK
		    : BE(r)->sandbox_get(
		          BE(r)->ctx, &r->call, r->who.sbx, &sbs[0], &err);
		n = pg.cursor == NULL && rc == API_OK;
		if (rc == API_ENOTFOUND)
			rc = API_OK;
	} else
		rc = BE(r)->sandbox_list(
		    BE(r)->ctx, &r->call, &pg, sbs, pg.limit, &n, next, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		goto out;
	}
	if (n > pg.limit)
		n = pg.limit;
	if ((arr = json_array()) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		sbs[i].id[sizeof(sbs[i].id) - 1] = '\0';
		sbs[i].image[sizeof(sbs[i].image) - 1] = '\0';
		if (e2b_list_match(f, &sbs[i]))
			json_array_append_new(
			    arr, e2b_sandbox_json(&sbs[i], sbs[i].image));
	}
	next[sizeof(next) - 1] = '\0';
	strlcpy(r->next_token, next, sizeof(r->next_token));
	rq_json(r, 200, arr);
	arr = NULL;
out:
	json_decref(arr);
	if (sbs != NULL) {
		for (i = 0; i < n; i++)
			api_kv_free(sbs[i].metadata, sbs[i].nmetadata);
		free(sbs);
	}
	free(f);
}

/* GET /e2b/sandboxes/{id}: its image stands for E2B's template. */
void
h_e2b_sandbox_get(struct rq *r)
{
	struct api_sandbox sb;
	struct api_error err;
	int rc;

	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_get(BE(r)->ctx, &r->call, r->id, &sb, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	sb.id[sizeof(sb.id) - 1] = '\0';
	sb.image[sizeof(sb.image) - 1] = '\0';
	rq_json(r, 200, e2b_sandbox_json(&sb, sb.image));
	api_kv_free(sb.metadata, sb.nmetadata);
}

/* A pause's or connect's body: only fields, and E2B's "memory" (keep
 * the memory, or reboot) a boolean or null; keep restores either way. 0
 * after answering 400. */
static int
pause_body_ok(struct rq *r, const char *const *fields)
{
	json_t *m;

	if (r->body != NULL && rq_fields(r, r->body, fields))
		return 0;
	if (r->body != NULL &&
	    (m = json_object_get(r->body, "memory")) != NULL &&
	    !json_is_boolean(m) && !json_is_null(m)) {
		rq_error(r, API_EBADREQ, "Field memory must be a boolean");
		return 0;
	}
	return 1;
}

/*
 * POST /e2b/sandboxes/{id}/pause {"memory"} (sandbox.pause, betaPause):
 * keep's POST .../pause. 204; 409 when paused already, which the SDK
 * answers false to. keep keeps its contexts' state either way (memory
 * images, else their journals): memory false asks for less and gets
 * more.
 */
void
h_e2b_sandbox_pause(struct rq *r)
{
	static const char *const fields[] = { "memory", NULL };
	struct api_sandbox sb;
	struct api_error err;
	int rc;

	if (!pause_body_ok(r, fields))
		return;
	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_pause(BE(r)->ctx, &r->call, r->id, &sb, &err);
	sandbox_release(&sb);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_no_content(r);
}

/*
 * POST /e2b/v2/sandboxes/{id}/connect (Sandbox.connect): a paused
 * sandbox is resumed (its contexts come back from their memory images at
 * their next cell), then a new token of the sandbox for the caller, as
 * keep's POST .../token. A timeout moves the sandbox's end first, as
 * setTimeout does (E2B's connect sets it from now).
 */
void
h_e2b_sandbox_connect(struct rq *r)
{
	static const char *const fields[] = { "timeout", "memory", NULL };
	struct api_sandbox sb;
	struct api_token tok;
	struct api_error err;
	json_t *o;
	int rc;

	if (!pause_body_ok(r, fields))
		return;
	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_get(BE(r)->ctx, &r->call, r->id, &sb, &err);
	sandbox_release(&sb);
	if (rc == API_OK && strcmp(sb.status, "paused") == 0) {
		memset(&sb, 0, sizeof(sb));
		rc = BE(r)->sandbox_resume(
		    BE(r)->ctx, &r->call, r->id, &sb, &err);
		sandbox_release(&sb);
	}
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	if (r->body != NULL) {
		if ((rc = rq_sandbox_end(r, "timeout", &sb)) < 0)
			return;
		if (rc == 0)
			sandbox_release(&sb);
	}
	memset(&tok, 0, sizeof(tok));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_token(BE(r)->ctx, &r->call, r->id, &tok, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	tok.token[sizeof(tok.token) - 1] = '\0';
	o = json_pack("{s:s,s:s,s:s,s:s,s:o}", "sandboxID", r->id,
	    "envdVersion", E2B_ENVD_VERSION, "envdAccessToken", tok.token,
	    "trafficAccessToken", tok.token, "domain",
	    r->api->ports_domain[0] != '\0' ? json_string(r->api->ports_domain)
	                                    : json_null());
	rq_json(r, 201, o);
}

/* setTimeout {"timeout": seconds}: the sandbox ends that long from now,
 * as keep's POST .../timeout; 204, as E2B answers. */
void
h_e2b_sandbox_timeout(struct rq *r)
{
	static const char *const fields[] = { "timeout", NULL };
	struct api_sandbox sb;

	if (rq_fields(r, r->body, fields))
		return;
	switch (rq_sandbox_end(r, "timeout", &sb)) {
	case 1:
		rq_error(r, API_EBADREQ, "Missing field: timeout");
		return;
	case 0:
		sandbox_release(&sb);
		rq_no_content(r);
		return;
	}
}

void
h_e2b_sandbox_delete(struct rq *r)
{
	struct api_error err;
	int rc;

	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_delete(BE(r)->ctx, &r->call, r->id, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	r->api->sandboxes_deleted++;
	rq_no_content(r);
}

/* --- a sandbox: envd's health ----------------------------------------- */

/*
 * GET /e2b/health: 204 while the sandbox lives. E2B's proxy answers 502
 * for a sandbox that is gone, which the SDK reads as "not running"
 * (isRunning, and the check it makes when a connection drops).
 */
void
h_e2b_health(struct rq *r)
{
	struct api_sandbox sb;
	struct api_error err;
	int rc;

	memset(&sb, 0, sizeof(sb));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->sandbox_get(BE(r)->ctx, &r->call, r->id, &sb, &err);
	api_kv_free(sb.metadata, sb.nmetadata);
	/* Paused: not running either, until connect resumes it. */
	if (rc == API_ENOTFOUND ||
	    (rc == API_OK && strcmp(sb.status, "paused") == 0))
		rq_fail(r, 502, "SANDBOX_GONE", "The sandbox is not running");
	else if (rc != API_OK)
		rq_backend_error(r, rc, &err);
	else
		rq_no_content(r);
}

/* --- the code interpreter: contexts and cells ------------------------- */

static int
ctx_known(struct api *a, const char *cid)
{
	for (size_t i = 0; i < API_E2B_CTX_CACHE; i++)
		if (strcmp(a->e2b_ctx[i], cid) == 0)
			return 1;
	return 0;
}

/* Remembered in turn: one forgotten too soon is asked for again. */
static void
ctx_remember(struct api *a, const char *cid)
{
	if (ctx_known(a, cid))
		return;
	strlcpy(a->e2b_ctx[a->e2b_ctx_next], cid, sizeof(a->e2b_ctx[0]));
	a->e2b_ctx_next = (a->e2b_ctx_next + 1) % API_E2B_CTX_CACHE;
}

void
e2b_ctx_forget(struct api *a, const char *cid)
{
	for (size_t i = 0; i < API_E2B_CTX_CACHE; i++)
		if (strcmp(a->e2b_ctx[i], cid) == 0)
			a->e2b_ctx[i][0] = '\0';
}

static void
base32_into(char *out, const unsigned char *h, size_t n)
{
	static const char alpha[] = "abcdefghijklmnopqrstuvwxyz234567";

	for (size_t i = 0; i < n; i++)
		out[i] = alpha[h[i] & 31];
	out[n] = '\0';
}

/*
 * Keep names the contexts E2B's routes make for js "ctx-js-...", since
 * E2B's SDK sends a cell its context's id and never its language; any
 * other context's cells are python's.
 */
#define JS_PREFIX "ctx-js-"

/*
 * The default context of a sandbox's principal in a language: E2B's
 * code interpreter runs a cell without a context in one, so that
 * runCode('x = 1') then runCode('x') sees x. Its id is derived, not
 * stored: the same sandbox, principal and language always name the same
 * context, across restarts of keepd, and the principal is part of it as
 * a context is its owner's alone. "ctx-" and 20 base32 characters, as
 * the front's random ids.
 */
static void
default_id(const struct rq *r, enum api_lang lang, char out[API_ID_MAX + 1])
{
	static const char tag[] = "keep e2b default context";
	crypto_generichash_state st;
	unsigned char h[20], l = (unsigned char)lang;
	const char *pre = lang == API_LANG_JAVASCRIPT ? JS_PREFIX : "ctx-";

	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	crypto_generichash_update(&st, (const unsigned char *)tag, sizeof(tag));
	crypto_generichash_update(
	    &st, (const unsigned char *)r->id, strlen(r->id) + 1);
	crypto_generichash_update(
	    &st, (const unsigned char *)r->who.sub, strlen(r->who.sub) + 1);
	crypto_generichash_update(&st, &l, 1);
	crypto_generichash_final(&st, h, sizeof(h));
	strlcpy(out, pre, API_ID_MAX + 1);
	base32_into(out + strlen(pre), h, sizeof(h));
}

/* E2B's language names: keep's contexts hold python and js (Duktape). */
static int
e2b_language(struct rq *r, const char *s, enum api_lang *lang)
{
	char msg[API_MSG_MAX];

	*lang = API_LANG_PYTHON;
	if (s == NULL || strcmp(s, "python") == 0)
		return 0;
	if (strcmp(s, "js") == 0 || strcmp(s, "javascript") == 0) {
		*lang = API_LANG_JAVASCRIPT;
		return 0;
	}
	char esc[64];

	/* Escaped: a cut UTF-8 sequence is no JSON string. */
	log_escape(esc, sizeof(esc), s, strlen(s));
	snprintf(msg, sizeof(msg),
	    "language %s is not served: keep's contexts are python and js",
	    esc);
	rq_fail(r, 400, "BAD_REQUEST", msg);
	return -1;
}

/* --- bash and js cells that are commands ------------------------------ */

/*
 * A js cell in node (the machine image, which has node and no Duktape):
 * the cell is evaluated as a script, its last value inspected as the
 * result, an exception caught as the error; both go out after the cell's
 * own output as one line "\n" MARK JSON, MARK the cell's random mark.
 * argv: [node, CODE, MARK].
 */
static const char node_cell[] =
    "const vm=require('vm'),util=require('util');let o={};"
    "try{const v=vm.runInThisContext(process.argv[1],{filename:'<cell>'});"
    "if(v!==undefined)o.result=util.inspect(v);}"
    "catch(e){const x=e!==null&&typeof e==='object';"
    "o.error={name:x&&typeof e.name==='string'?e.name:'Error',"
    "value:x&&e.message!==undefined?String(e.message):String(e),"
    "traceback:x&&typeof e.stack==='string'?e.stack:''};"
    "process.exitCode=1;}"
    "process.on('exit',()=>{process.stdout.write("
    "'\\n'+process.argv[2]+JSON.stringify(o)+'\\n');});";

/*
 * A bash cell (every image), or a js cell where the image has node but
 * no js contexts: a command, decided as one (exec of bash or node),
 * starting in E2B's home, its output answered as the cell's lines at its
 * end. Nothing lives between two such cells but the workspace.
 */
static void
e2b_cmd_cell(struct rq *r, int kind, const char *code, const struct api_kv *env,
    size_t nenv)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[E2B_MARK_LEN / 2];
	const char *args[4];
	struct api_command c;
	size_t i;

	memset(&c, 0, sizeof(c));
	c.cwd = E2B_HOME;
	c.env = env;
	c.nenv = nenv;
	c.args = args;
	if (kind == E2B_CELL_BASH) {
		c.cmd = "bash";
		args[0] = "-c";
		args[1] = code;
		c.nargs = 2;
	} else {
		randombytes_buf(rnd, sizeof(rnd));
		for (i = 0; i < sizeof(rnd); i++) {
			r->e2b_mark[2 * i] = hex[rnd[i] >> 4];
			r->e2b_mark[2 * i + 1] = hex[rnd[i] & 15];
		}
		r->e2b_mark[E2B_MARK_LEN] = '\0';
		/* node -e SCRIPT CODE MARK: the script's argv[1] and [2]. */
		c.cmd = "node";
		args[0] = "-e";
		args[1] = node_cell;
		args[2] = code;
		args[3] = r->e2b_mark;
		c.nargs = 4;
	}
	r->e2b_cell = kind;
	rq_command_run(r, &c);
}

/* The string member key of o (guest-written), or NULL. */
static const char *
guest_str(json_t *o, const char *key, size_t *len)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_string(v))
		return NULL;
	*len = json_string_length(v);
	return json_string_value(v);
}

/*
 * A command cell's lines, as a context's driver writes them: its stdout
 * and stderr (one line each), a js cell's result, its error: bash's is
 * E2B's bash kernel's (name "", the exit status as value), a js cell's
 * the exception node caught, else how node ended. The node cell's last
 * line is the guest's, so it is parsed as untrusted JSON.
 */
void
e2b_cmd_cell_reply(struct rq *r, struct api_run_result *res)
{
	const char *out = res->out != NULL ? res->out : "";
	size_t out_len = res->out_len, user_len = out_len, n, at;
	json_t *tail = NULL, *e;
	struct http_buf b;
	const char *s;
	char status[64];

	if (r->e2b_cell == E2B_CELL_NODE &&
	    e2b_cell_split(
	        out, out_len, r->e2b_mark, E2B_MARK_LEN, &user_len, &at) == 0) {
		tail = json_loadb(
		    out + at, out_len - at, JSON_REJECT_DUPLICATES, NULL);
		if (!json_is_object(tail)) {
			json_decref(tail);
			tail = NULL;
		}
	}
	http_buf_init(&b);
	if (user_len > 0)
		api_json_line(&b,
		    json_pack("{s:s,s:o}", "type", "stdout", "text",
		        bytes_string(out, user_len)));
	if (res->err_len > 0)
		api_json_line(&b,
		    json_pack("{s:s,s:o}", "type", "stderr", "text",
		        bytes_string(res->err, res->err_len)));
	if (tail != NULL && (s = guest_str(tail, "result", &n)) != NULL)
		api_json_line(&b,
		    json_pack("{s:s,s:o,s:b}", "type", "result", "text",
		        bytes_string(s, n), "is_main_result", 1));
	e = tail != NULL ? json_object_get(tail, "error") : NULL;
	if (json_is_object(e)) {
		const char *name, *value, *tb;
		size_t nl = 0, vl = 0, tl = 0;

		name = guest_str(e, "name", &nl);
		value = guest_str(e, "value", &vl);
		tb = guest_str(e, "traceback", &tl);
		api_json_line(&b,
		    json_pack("{s:s,s:o,s:o,s:o}", "type", "error", "name",
		        name != NULL ? bytes_string(name, nl)
		                     : json_string("Error"),
		        "value", bytes_string(value != NULL ? value : "", vl),
		        "traceback", bytes_string(tb != NULL ? tb : "", tl)));
	} else if (res->exit_code != 0 || res->reason[0] != '\0' ||
	    (r->e2b_cell == E2B_CELL_NODE && tail == NULL)) {
		res->reason[sizeof(res->reason) - 1] = '\0';
		snprintf(status, sizeof(status), "%d", res->exit_code);
		api_json_line(&b,
		    json_pack("{s:s,s:s,s:s,s:s}", "type", "error", "name",
		        r->e2b_cell == E2B_CELL_BASH ? "" : "Error", "value",
		        status, "traceback",
		        res->reason[0] != '\0' ? res->reason : ""));
	}
	json_decref(tail);
	api_lines_reply(r, res, &b, "application/x-ndjson");
}

/*
 * POST /e2b/execute: a cell, always in a context (E2B's code
 * interpreter keeps state between cells), answered with the driver's
 * lines (ndjson), which are E2B's. Without a context_id, the principal's
 * default context for the language, made by the sandbox's first such
 * cell with the decision keep's POST .../contexts makes.
 */
void
h_e2b_execute(struct rq *r)
{
	static const char *const fields[] = { "code", "context_id", "language",
		"env_vars", NULL };
	struct api_exec ex;
	struct api_run_result res;
	struct api_context c;
	struct api_error err;
	struct api_kv *env = NULL;
	char cid[API_ID_MAX + 1] = "";
	const char *lang = NULL, *ctx = NULL;
	int rc, kind = E2B_CELL_NONE;

	memset(&ex, 0, sizeof(ex));
	if (rq_fields(r, r->body, fields) ||
	    rq_str(r, r->body, "code", 1, &ex.code) ||
	    rq_str(r, r->body, "language", 0, &lang) ||
	    rq_str(r, r->body, "context_id", 0, &ctx))
		return;
	ex.code_len = json_string_length(json_object_get(r->body, "code"));
	if (ctx != NULL && lang != NULL) {
		rq_error(r, API_EBADREQ, "context_id or language, not both");
		return;
	}
	if (lang != NULL && strcmp(lang, "bash") == 0)
		kind = E2B_CELL_BASH;
	else if (ctx != NULL) {
		if (!api_valid_id(ctx, strlen(ctx))) {
			rq_error(
			    r, API_EBADREQ, "context_id is not a context's id");
			return;
		}
		ex.language = strncmp(ctx, JS_PREFIX, strlen(JS_PREFIX)) == 0
		    ? API_LANG_JAVASCRIPT
		    : API_LANG_PYTHON;
	} else if (e2b_language(r, lang, &ex.language))
		return;
	if (rq_kv(r, r->body, "env_vars", &env, &ex.nenv))
		return;
	if (kind != E2B_CELL_NONE && strlen(ex.code) != ex.code_len) {
		free(env);
		rq_error(r, API_EBADREQ, "code must not hold a NUL");
		return;
	}
	if (kind != E2B_CELL_NONE) {
		e2b_cmd_cell(r, kind, ex.code, env, ex.nenv);
		free(env);
		return;
	}
	ex.env = env;
	if (ctx == NULL) {
		default_id(r, ex.language, cid);
		if (!ctx_known(r->api, cid)) {
			memset(&c, 0, sizeof(c));
			memset(&err, 0, sizeof(err));
			rc = BE(r)->context_create(BE(r)->ctx, &r->call, r->id,
			    ex.language, E2B_HOME, cid, &c, &err);
			/* An image with no js (the machine image, whose
			 * js is node): the cell is node's, a command. */
			if (rc == API_EBADREQ &&
			    ex.language == API_LANG_JAVASCRIPT &&
			    strstr(err.message, "cannot run this language") !=
			        NULL &&
			    strlen(ex.code) == ex.code_len) {
				e2b_cmd_cell(
				    r, E2B_CELL_NODE, ex.code, env, ex.nenv);
				free(env);
				return;
			}
			/* Taken: made before (by another cell, or before
			 * keepd restarted), and so there. */
			if (rc != API_OK && rc != API_ECONFLICT) {
				free(env);
				rq_backend_error(r, rc, &err);
				return;
			}
			ctx_remember(r->api, cid);
		}
		ctx = cid;
	}
	ex.context_id = ctx;
	memset(&res, 0, sizeof(res));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->execute(BE(r)->ctx, &r->call, r->id, &ex, &res, &err);
	free(env);
	if (rc == API_PENDING && r->pending != NULL)
		strlcpy(r->pending->e2b_ctx, cid, sizeof(r->pending->e2b_ctx));
	/* Deleted meanwhile: the next cell makes it again. */
	else if (rc == API_ENOTFOUND && cid[0] != '\0')
		e2b_ctx_forget(r->api, cid);
	(void)rq_run_answer(r, rc, &res, &err);
}

/* POST /e2b/contexts {"language","cwd"}: E2B's context is keep's. */
void
h_e2b_context_create(struct rq *r)
{
	static const char *const fields[] = { "language", "cwd", NULL };
	struct api_context c;
	struct api_error err;
	enum api_lang lang;
	const char *cwd = NULL, *ls = NULL;
	char cid[API_ID_MAX + 1], cwdbuf[PATH_MAX_API];
	unsigned char rnd[20];
	int rc;

	if (r->body != NULL &&
	    (rq_fields(r, r->body, fields) ||
	        rq_str(r, r->body, "language", 0, &ls) ||
	        rq_str(r, r->body, "cwd", 0, &cwd)))
		return;
	if (e2b_language(r, ls, &lang))
		return;
	/* E2B's contexts start in its user's home, relative cwds too. */
	if (rq_e2b_path(
	        r, cwd != NULL ? cwd : E2B_HOME, cwdbuf, sizeof(cwdbuf)))
		return;
	if (strlen(cwdbuf) >= sizeof(c.cwd)) {
		rq_error(r, API_EBADREQ, "cwd must be at most %zu bytes",
		    sizeof(c.cwd) - 1);
		return;
	}
	/* A js context's id says so (JS_PREFIX); python's are the front's. */
	if (lang == API_LANG_JAVASCRIPT) {
		randombytes_buf(rnd, sizeof(rnd));
		strlcpy(cid, JS_PREFIX, sizeof(cid));
		base32_into(cid + strlen(JS_PREFIX), rnd, sizeof(rnd));
	}
	memset(&c, 0, sizeof(c));
	memset(&err, 0, sizeof(err));
	rc = BE(r)->context_create(BE(r)->ctx, &r->call, r->id, lang, cwdbuf,
	    lang == API_LANG_JAVASCRIPT ? cid : NULL, &c, &err);
	if (rc != API_OK) {
		rq_backend_error(r, rc, &err);
		return;
	}
	rq_json(r, 201, api_context_json(&c));
}

void
h_e2b_context_delete(struct rq *r)
{
	h_context_delete(r);
	/* Deleted: its id no longer stands for the default context. */
	if (r->status == 204)
		e2b_ctx_forget(r->api, r->tail);
}

/* --- envd's files ----------------------------------------------------- */

/*
 * Make the directories of path (all of them when last, else all but its
 * last component), as envd does before a write and for MakeDir. Each
 * one that exists already is passed; the last one, when last, answers
 * API_ECONFLICT if it was there. Each is decided (and audited) as keep's
 * files/mkdir would be: the request's decision serves the first when it
 * is unspent (decided), the others are authorized again. API_OK, an
 * api_err (no reply sent), or E2B_REPLIED (a refusal sent).
 */
int
e2b_mkdirs(struct rq *r, const char *path, int last, int decided,
    struct api_error *err)
{
	char buf[PATH_MAX_API];
	size_t n = strlcpy(buf, path, sizeof(buf));
	int rc = API_OK;

	if (n >= sizeof(buf))
		return API_EBADREQ;
	while (n > 1 && buf[n - 1] == '/')
		buf[--n] = '\0';
	for (size_t i = 1; i <= n; i++) {
		if (i < n && buf[i] != '/')
			continue;
		if (i == n && !last)
			break;
		if (i < n && buf[i - 1] == '/')
			continue;
		if (!decided && rq_reauthorize(r) != 0)
			return E2B_REPLIED;
		decided = 0;
		buf[i] = '\0';
		memset(err, 0, sizeof(*err));
		rc = BE(r)->file_mkdir(BE(r)->ctx, &r->call, r->id, buf, err);
		if (i < n)
			buf[i] = '/';
		if (rc == API_ECONFLICT && i < n)
			rc = API_OK;
		if (rc != API_OK)
			return rc;
	}
	return rc;
}

/*
 * One uploaded file: written, its directories made first if missing
 * (the write that found them missing spent its decision; the write
 * again is under the last directory's, one decision per effect).
 */
static int
write_one(struct rq *r, const char *path, const struct e2b_part *p,
    struct api_error *err)
{
	int rc;

	memset(err, 0, sizeof(*err));
	rc = BE(r)->file_write(
	    BE(r)->ctx, &r->call, r->id, path, p->data, p->len, err);
	if (rc != API_ENOTFOUND)
		return rc;
	if ((rc = e2b_mkdirs(r, path, 0, 0, err)) != API_OK)
		return rc;
	memset(err, 0, sizeof(*err));
	return BE(r)->file_write(
	    BE(r)->ctx, &r->call, r->id, path, p->data, p->len, err);
}

/* A part's path (qpath, or its filename), checked; -1 when answered. */
static int
part_path(struct rq *r, const struct e2b_part *p, const char *qpath, char *path,
    size_t len)
{
	if (p->name_len != 4 || memcmp(p->name, "file", 4) != 0) {
		rq_error(r, API_EBADREQ, "Each part is named \"file\"");
		return -1;
	}
	char asked[PATH_MAX_API];

	if (qpath != NULL)
		strlcpy(asked, qpath, sizeof(asked));
	else if (p->filename == NULL || p->filename_len == 0 ||
	    p->filename_len >= sizeof(asked) ||
	    memchr(p->filename, '\0', p->filename_len) != NULL) {
		rq_error(r, API_EBADREQ,
		    "Without ?path=, each part's filename is its path");
		return -1;
	} else {
		memcpy(asked, p->filename, p->filename_len);
		asked[p->filename_len] = '\0';
	}
	if (asked[0] == '\0') {
		rq_error(r, API_EBADREQ, "A part's path is empty");
		return -1;
	}
	/* envd's relative paths are its user's home's. */
	return rq_e2b_path(r, asked, path, len) ? -1 : 0;
}

/*
 * POST /e2b/files[?path=]: envd's upload, multipart/form-data with one
 * part "file" per file; its path is ?path= for one file, else the
 * part's filename. Each file after the first is authorized again, as
 * keep's files/write would be once per file.
 */
void
h_e2b_file_write(struct rq *r)
{
	struct e2b_part parts[E2B_PARTS_MAX];
	const struct http_header *ct;
	struct api_error err;
	char qpath[PATH_MAX_API], path[PATH_MAX_API];
	const char *b;
	size_t blen, n, i;
	json_t *arr;
	int rc, have_q;

	if ((have_q = rq_query(r, "path", qpath, sizeof(qpath), 0)) < 0)
		return;
	ct = http_find_header(r->req, "content-type");
	if (ct == NULL ||
	    e2b_multipart_boundary(ct->value, ct->valuelen, &b, &blen) != 0) {
		rq_fail(r, 415, "UNSUPPORTED_MEDIA_TYPE",
		    "Content-Type must be multipart/form-data with a boundary");
		return;
	}
	if (e2b_multipart_parse(r->req->body, r->req->body_len, b, blen, parts,
	        nitems(parts), &n) != 0) {
		rq_error(r, API_EBADREQ,
		    "The body is not multipart/form-data with at most %d "
		    "parts",
		    E2B_PARTS_MAX);
		return;
	}
	if (have_q && n != 1) {
		rq_error(
		    r, API_EBADREQ, "?path= names one file: send one part");
		return;
	}
	/* Every part is checked and authorized before any is written: a
	 * request refused for its third part has not written the first. */
	for (i = 0; i < n; i++)
		if (part_path(r, &parts[i], have_q ? qpath : NULL, path,
		        sizeof(path)) != 0 ||
		    (i > 0 && rq_reauthorize(r)))
			return;
	if ((arr = json_array()) == NULL) {
		rq_error(r, API_EINTERNAL, "Out of memory");
		return;
	}
	for (i = 0; i < n; i++) {
		const struct e2b_part *p = &parts[i];
		const char *base;

		if (part_path(
		        r, p, have_q ? qpath : NULL, path, sizeof(path)) != 0)
			goto out;
		if ((rc = write_one(r, path, p, &err)) != API_OK) {
			if (rc != E2B_REPLIED)
				rq_backend_error(r, rc, &err);
			goto out;
		}
		base = strrchr(path, '/');
		base = base != NULL ? base + 1 : path;
		json_array_append_new(arr,
		    json_pack("{s:o,s:s,s:o}", "name",
		        bytes_string(base, strlen(base)), "type", "file",
		        "path", bytes_string(path, strlen(path))));
	}
	rq_json(r, 200, arr);
	return;
out:
	json_decref(arr);
}

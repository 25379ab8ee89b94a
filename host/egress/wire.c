/*
 * The egress messages: exact-length decoding into one owned allocation,
 * encoding for the senders, and the request -> reply service step.
 * Nothing in a message is trusted: every count is bounded before it is
 * multiplied, sums are done in 64 bits, and the total must match exactly.
 */
#include <stdlib.h>
#include <string.h>

#include "host/egress/egress_int.h"
#include "lib/util.h"

#define MAX_REDIRECTS 20
#define MAX_ATTEMPTS 10

struct reader {
	const uint8_t *p;
	size_t left;
};

static const void *
take(struct reader *r, size_t n)
{
	const void *p = r->p;

	if (n > r->left)
		return NULL;
	r->p += n;
	r->left -= n;
	return p;
}

/* Copy n bytes that must not contain NUL into the arena, NUL-terminated. */
static char *
take_str(struct reader *r, size_t n, char **arena)
{
	const char *s = take(r, n);
	char *d = *arena;

	if (s == NULL || memchr(s, '\0', n) != NULL)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	*arena += n + 1;
	return d;
}

static int
zero(const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != 0)
			return 0;
	return 1;
}

static int
limits_in(const struct egress_wire_limits *w, struct egress_limits *l)
{
	if (w->reserved != 0 || w->timeout_ms == 0 ||
	    w->timeout_ms > EGRESS_WIRE_MAX_TIMEOUT_MS ||
	    w->connect_timeout_ms > EGRESS_WIRE_MAX_TIMEOUT_MS ||
	    w->max_response > EGRESS_WIRE_MAX_RESPONSE ||
	    w->max_resp_headers > EGRESS_WIRE_MAX_RESPONSE ||
	    w->max_redirects > MAX_REDIRECTS)
		return EGRESS_E_MSG;
	l->max_request = w->max_request;
	l->max_response = w->max_response;
	l->max_resp_headers = w->max_resp_headers;
	l->timeout_ms = w->timeout_ms;
	l->connect_timeout_ms = w->connect_timeout_ms;
	l->max_redirects = w->max_redirects;
	l->max_concurrent = w->max_concurrent;
	return 0;
}

static void
limits_out(const struct egress_limits *l, struct egress_wire_limits *w)
{
	memset(w, 0, sizeof(*w));
	w->max_request = l->max_request;
	w->max_response = l->max_response;
	w->max_resp_headers = l->max_resp_headers;
	w->timeout_ms = l->timeout_ms;
	w->connect_timeout_ms = l->connect_timeout_ms;
	w->max_redirects = l->max_redirects;
	w->max_concurrent = l->max_concurrent;
}

static int
rules_in(struct reader *r, uint32_t n, struct egress_rule *out)
{
	for (uint32_t i = 0; i < n; i++) {
		const void *p = take(r, sizeof(struct egress_wire_rule));
		struct egress_wire_rule wr;
		const struct egress_wire_rule *w = &wr;
		const char *nul;

		if (p != NULL)
			memcpy(&wr, p, sizeof(wr));
		if (p == NULL ||
		    (nul = memchr(w->host, '\0', sizeof(w->host))) == NULL ||
		    !zero(nul, sizeof(w->host) - (size_t)(nul - w->host)) ||
		    w->reserved != 0 || w->allow_http > 1 ||
		    w->allow_private > 1)
			return EGRESS_E_MSG;
		memset(&out[i], 0, sizeof(out[i]));
		memcpy(out[i].host, w->host, sizeof(out[i].host));
		out[i].port = w->port;
		out[i].allow_http = w->allow_http;
		out[i].allow_private = w->allow_private;
		if (egress_rule_check(&out[i]) != 0)
			return EGRESS_E_MSG;
	}
	return 0;
}

static int
printable(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static int
decode_fetch(const void *msg, size_t len, struct egress_decoded *out)
{
	struct reader r = { msg, len };
	const void *hp = take(&r, sizeof(struct egress_wire_fetch));
	struct egress_wire_fetch hb;
	const struct egress_wire_fetch *h = hp ? &hb : NULL;
	struct egress_request *q = &out->req;
	struct egress_header *hs;
	struct egress_rule *rules;
	uint64_t total;
	char *arena;

	/* Messages need not be aligned: copy fixed parts out, never cast. */
	if (hp != NULL)
		memcpy(&hb, hp, sizeof(hb));
	if (h == NULL || h->version != EGRESS_WIRE_VERSION || h->nrules == 0 ||
	    h->nrules > EGRESS_WIRE_MAX_RULES || h->principal_len == 0 ||
	    h->principal_len > EGRESS_WIRE_MAX_PRINCIPAL ||
	    h->method_len == 0 || h->method_len > EGRESS_WIRE_MAX_METHOD ||
	    h->url_len == 0 || h->url_len > EGRESS_URL_MAX ||
	    h->nheaders > EGRESS_WIRE_MAX_HEADERS ||
	    h->headers_len > EGRESS_WIRE_MAX_HEADERS * (4u + 0xffff * 2) ||
	    h->body_len > EGRESS_WIRE_MAX_BODY)
		return EGRESS_E_MSG;
	total = (uint64_t)sizeof(*h) +
	    (uint64_t)h->nrules * sizeof(struct egress_wire_rule) +
	    h->principal_len + h->method_len + h->url_len + h->headers_len +
	    h->body_len;
	if (total != len)
		return EGRESS_E_MSG;
	if (limits_in(&h->limits, &q->limits) != 0)
		return EGRESS_E_MSG;
	out->mem = malloc(h->nheaders * sizeof(*hs) +
	    h->nrules * sizeof(*rules) + len + 2 * (size_t)h->nheaders + 8);
	if (out->mem == NULL)
		return EGRESS_E_NOMEM;
	hs = out->mem;
	rules = (struct egress_rule *)(hs + h->nheaders);
	arena = (char *)(rules + h->nrules);
	if (rules_in(&r, h->nrules, rules) != 0)
		return EGRESS_E_MSG;
	q->rules = rules;
	q->nrules = h->nrules;
	if ((q->principal = take_str(&r, h->principal_len, &arena)) == NULL ||
	    !printable(q->principal) ||
	    (q->method = take_str(&r, h->method_len, &arena)) == NULL ||
	    (q->url = take_str(&r, h->url_len, &arena)) == NULL)
		return EGRESS_E_MSG;
	q->url_len = h->url_len;
	{
		struct reader hr = { r.p, h->headers_len };

		if (take(&r, h->headers_len) == NULL)
			return EGRESS_E_MSG;
		for (uint32_t i = 0; i < h->nheaders; i++) {
			const void *lens = take(&hr, 4);
			uint16_t nl, vl;

			if (lens == NULL)
				return EGRESS_E_MSG;
			memcpy(&nl, lens, 2);
			memcpy(&vl, (const uint8_t *)lens + 2, 2);
			if (nl == 0 ||
			    (hs[i].name = take_str(&hr, nl, &arena)) == NULL ||
			    (hs[i].value = take_str(&hr, vl, &arena)) == NULL)
				return EGRESS_E_MSG;
		}
		if (hr.left != 0)
			return EGRESS_E_MSG;
	}
	q->headers = hs;
	q->nheaders = h->nheaders;
	q->body = take(&r, h->body_len);
	q->body_len = h->body_len;
	if (q->body == NULL || r.left != 0)
		return EGRESS_E_MSG;
	/* The body stays in msg; copy it so the result outlives msg. */
	memcpy(arena, q->body, q->body_len);
	q->body = arena;
	return 0;
}

static int
decode_webhook(const void *msg, size_t len, struct egress_decoded *out)
{
	struct reader r = { msg, len };
	const void *hp = take(&r, sizeof(struct egress_wire_webhook));
	struct egress_wire_webhook hb;
	const struct egress_wire_webhook *h = hp ? &hb : NULL;
	struct egress_webhook *w = &out->webhook;
	struct egress_rule *rules;
	uint64_t total;
	char *arena;
	uint8_t *secret;

	if (hp != NULL)
		memcpy(&hb, hp, sizeof(hb));
	if (h == NULL || h->version != EGRESS_WIRE_VERSION || h->nrules == 0 ||
	    h->nrules > EGRESS_WIRE_MAX_RULES || h->principal_len == 0 ||
	    h->principal_len > EGRESS_WIRE_MAX_PRINCIPAL || h->url_len == 0 ||
	    h->url_len > EGRESS_URL_MAX || h->delivery_id_len == 0 ||
	    h->delivery_id_len > 64 || h->body_len > EGRESS_WIRE_MAX_BODY ||
	    h->max_attempts == 0 || h->max_attempts > MAX_ATTEMPTS ||
	    h->backoff_ms > EGRESS_WIRE_MAX_TIMEOUT_MS ||
	    h->max_backoff_ms > EGRESS_WIRE_MAX_TIMEOUT_MS || h->reserved != 0)
		return EGRESS_E_MSG;
	total = (uint64_t)sizeof(*h) +
	    (uint64_t)h->nrules * sizeof(struct egress_wire_rule) +
	    h->principal_len + h->url_len + h->delivery_id_len + h->body_len;
	if (total != len || limits_in(&h->limits, &w->limits) != 0)
		return EGRESS_E_MSG;
	out->mem = malloc(
	    h->nrules * sizeof(*rules) + EGRESS_WEBHOOK_KEYBYTES + len + 8);
	if (out->mem == NULL)
		return EGRESS_E_NOMEM;
	rules = out->mem;
	secret = (uint8_t *)(rules + h->nrules);
	arena = (char *)(secret + EGRESS_WEBHOOK_KEYBYTES);
	memcpy(secret, h->secret, EGRESS_WEBHOOK_KEYBYTES);
	explicit_bzero(hb.secret, sizeof(hb.secret));
	if (rules_in(&r, h->nrules, rules) != 0)
		return EGRESS_E_MSG;
	w->rules = rules;
	w->nrules = h->nrules;
	w->secret = secret;
	if ((w->principal = take_str(&r, h->principal_len, &arena)) == NULL ||
	    !printable(w->principal) ||
	    (w->url = take_str(&r, h->url_len, &arena)) == NULL ||
	    (w->delivery_id = take_str(&r, h->delivery_id_len, &arena)) ==
	        NULL ||
	    (w->body = take_str(&r, h->body_len, &arena)) == NULL ||
	    r.left != 0)
		return EGRESS_E_MSG;
	w->body_len = h->body_len;
	w->max_attempts = h->max_attempts;
	w->backoff_ms = h->backoff_ms;
	w->max_backoff_ms = h->max_backoff_ms;
	return 0;
}

void
egress_wire_decoded_free(struct egress_decoded *d)
{
	if (d == NULL)
		return;
	if (d->mem != NULL && d->type == MSG_EGRESS_WEBHOOK)
		explicit_bzero(d->mem,
		    d->webhook.nrules * sizeof(struct egress_rule) +
		        EGRESS_WEBHOOK_KEYBYTES);
	free(d->mem);
	memset(d, 0, sizeof(*d));
}

int
egress_wire_decode(
    uint16_t type, const void *msg, size_t len, struct egress_decoded *out)
{
	memset(out, 0, sizeof(*out));
	out->type = type;
	if (msg == NULL)
		return EGRESS_E_MSG;
	switch (type) {
	case MSG_EGRESS_FETCH:
		return decode_fetch(msg, len, out);
	case MSG_EGRESS_WEBHOOK:
		return decode_webhook(msg, len, out);
	default:
		return EGRESS_E_MSG;
	}
}

struct writer {
	uint8_t *p;
};

static void
put(struct writer *w, const void *src, size_t n)
{
	if (n > 0)
		memcpy(w->p, src, n);
	w->p += n;
}

static int
rules_out(struct writer *w, const struct egress_rule *rules, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct egress_wire_rule wr;
		size_t hl = strnlen(rules[i].host, sizeof(rules[i].host));

		if (hl == sizeof(rules[i].host))
			return EGRESS_E_MSG;
		memset(&wr, 0, sizeof(wr));
		memcpy(wr.host, rules[i].host, hl);
		wr.port = rules[i].port;
		wr.allow_http = rules[i].allow_http ? 1 : 0;
		wr.allow_private = rules[i].allow_private ? 1 : 0;
		put(w, &wr, sizeof(wr));
	}
	return 0;
}

int
egress_wire_encode_fetch(
    const struct egress_request *req, void **out, size_t *len)
{
	struct egress_wire_fetch h;
	struct writer w;
	size_t pl, ml, hl = 0, i;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	if (req->principal == NULL || req->method == NULL || req->url == NULL ||
	    req->nrules > EGRESS_WIRE_MAX_RULES ||
	    req->nheaders > EGRESS_WIRE_MAX_HEADERS ||
	    req->url_len > EGRESS_URL_MAX ||
	    req->body_len > EGRESS_WIRE_MAX_BODY)
		return EGRESS_E_MSG;
	pl = strnlen(req->principal, EGRESS_WIRE_MAX_PRINCIPAL + 1);
	ml = strnlen(req->method, EGRESS_WIRE_MAX_METHOD + 1);
	for (i = 0; i < req->nheaders; i++) {
		size_t nl = strnlen(req->headers[i].name, 0x10000);
		size_t vl = strnlen(req->headers[i].value, 0x10000);

		if (nl > 0xffff || vl > 0xffff)
			return EGRESS_E_MSG;
		hl += 4 + nl + vl;
	}
	memset(&h, 0, sizeof(h));
	h.version = EGRESS_WIRE_VERSION;
	h.nrules = (uint32_t)req->nrules;
	h.principal_len = (uint32_t)pl;
	h.method_len = (uint32_t)ml;
	h.url_len = (uint32_t)req->url_len;
	h.nheaders = (uint32_t)req->nheaders;
	h.headers_len = (uint32_t)hl;
	h.body_len = (uint32_t)req->body_len;
	limits_out(&req->limits, &h.limits);
	*len = sizeof(h) + req->nrules * sizeof(struct egress_wire_rule) + pl +
	    ml + req->url_len + hl + req->body_len;
	if ((buf = malloc(*len)) == NULL)
		return EGRESS_E_NOMEM;
	w.p = buf;
	put(&w, &h, sizeof(h));
	if (rules_out(&w, req->rules, req->nrules) != 0) {
		free(buf);
		return EGRESS_E_MSG;
	}
	put(&w, req->principal, pl);
	put(&w, req->method, ml);
	put(&w, req->url, req->url_len);
	for (i = 0; i < req->nheaders; i++) {
		uint16_t nl = (uint16_t)strlen(req->headers[i].name);
		uint16_t vl = (uint16_t)strlen(req->headers[i].value);

		put(&w, &nl, 2);
		put(&w, &vl, 2);
		put(&w, req->headers[i].name, nl);
		put(&w, req->headers[i].value, vl);
	}
	put(&w, req->body, req->body_len);
	*out = buf;
	return 0;
}

int
egress_wire_encode_webhook(
    const struct egress_webhook *wh, void **out, size_t *len)
{
	struct egress_wire_webhook h;
	struct writer w;
	size_t pl, ul, il;
	uint8_t *buf;

	*out = NULL;
	*len = 0;
	if (wh->principal == NULL || wh->url == NULL ||
	    wh->delivery_id == NULL || wh->secret == NULL || wh->body == NULL ||
	    wh->nrules > EGRESS_WIRE_MAX_RULES ||
	    wh->body_len > EGRESS_WIRE_MAX_BODY)
		return EGRESS_E_MSG;
	pl = strnlen(wh->principal, EGRESS_WIRE_MAX_PRINCIPAL + 1);
	ul = strnlen(wh->url, EGRESS_URL_MAX + 1);
	il = strnlen(wh->delivery_id, 65);
	memset(&h, 0, sizeof(h));
	h.version = EGRESS_WIRE_VERSION;
	h.nrules = (uint32_t)wh->nrules;
	h.principal_len = (uint32_t)pl;
	h.url_len = (uint32_t)ul;
	h.delivery_id_len = (uint32_t)il;
	h.body_len = (uint32_t)wh->body_len;
	h.max_attempts = wh->max_attempts;
	h.backoff_ms = wh->backoff_ms;
	h.max_backoff_ms = wh->max_backoff_ms;
	memcpy(h.secret, wh->secret, EGRESS_WEBHOOK_KEYBYTES);
	limits_out(&wh->limits, &h.limits);
	*len = sizeof(h) + wh->nrules * sizeof(struct egress_wire_rule) + pl +
	    ul + il + wh->body_len;
	if ((buf = malloc(*len)) == NULL) {
		explicit_bzero(&h, sizeof(h));
		return EGRESS_E_NOMEM;
	}
	w.p = buf;
	put(&w, &h, sizeof(h));
	explicit_bzero(&h, sizeof(h));
	if (rules_out(&w, wh->rules, wh->nrules) != 0) {
		explicit_bzero(buf, *len);
		free(buf);
		return EGRESS_E_MSG;
	}
	put(&w, wh->principal, pl);
	put(&w, wh->url, ul);
	put(&w, wh->delivery_id, il);
	put(&w, wh->body, wh->body_len);
	*out = buf;
	return 0;
}

int
egress_wire_decode_reply(const void *msg, size_t len,
    const struct egress_wire_reply **hdr, const uint8_t **headers,
    const uint8_t **body)
{
	const struct egress_wire_reply *h = msg;

	/* The caller gets a pointer into msg, so msg must be aligned. */
	if (msg == NULL || len < sizeof(*h) ||
	    (uintptr_t)msg % _Alignof(struct egress_wire_reply) != 0 ||
	    h->version != EGRESS_WIRE_VERSION || h->reserved != 0 ||
	    h->reserved2 != 0 ||
	    (uint64_t)sizeof(*h) + h->headers_len + h->body_len != len ||
	    memchr(h->host, '\0', sizeof(h->host)) == NULL ||
	    memchr(h->addr, '\0', sizeof(h->addr)) == NULL ||
	    memchr(h->detail, '\0', sizeof(h->detail)) == NULL)
		return EGRESS_E_MSG;
	*hdr = h;
	*headers = (const uint8_t *)(h + 1);
	*body = *headers + h->headers_len;
	return 0;
}

static int
reply_make(const struct egress_decision *d, unsigned attempts,
    const struct egress_response *resp, void **reply, size_t *reply_len)
{
	struct egress_wire_reply h;
	size_t hl = resp ? resp->headers_len : 0,
	       bl = resp ? resp->body_len : 0;
	uint8_t *buf;

	memset(&h, 0, sizeof(h));
	h.version = EGRESS_WIRE_VERSION;
	h.error = d->error;
	h.allowed = d->allowed;
	h.rule = d->rule;
	h.addr_class = d->addr_class;
	h.status = (uint32_t)d->status;
	h.redirects = d->redirects;
	h.attempts = attempts;
	h.bytes_out = d->bytes_out;
	h.bytes_in = d->bytes_in;
	h.elapsed_ms = d->elapsed_ms;
	strlcpy(h.host, d->host, sizeof(h.host));
	h.port = d->port;
	strlcpy(h.addr, d->addr, sizeof(h.addr));
	strlcpy(h.detail, d->detail, sizeof(h.detail));
	h.headers_len = (uint32_t)hl;
	h.body_len = (uint32_t)bl;
	if ((buf = malloc(sizeof(h) + hl + bl)) == NULL)
		return EGRESS_E_NOMEM;
	memcpy(buf, &h, sizeof(h));
	if (hl > 0)
		memcpy(buf + sizeof(h), resp->headers, hl);
	if (bl > 0)
		memcpy(buf + sizeof(h) + hl, resp->body, bl);
	*reply = buf;
	*reply_len = sizeof(h) + hl + bl;
	return 0;
}

int
egress_wire_encode_reply(const struct egress_decision *d, unsigned attempts,
    const struct egress_response *resp, void **reply, size_t *reply_len)
{
	return reply_make(d, attempts, resp, reply, reply_len);
}

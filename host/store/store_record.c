/*
 * Record codecs. Values are untrusted on the way back in (a disk edit, a
 * bug in an older build, a hostile peer on the wire): every decoder checks
 * the header, every length against its bound and against what is left,
 * every string's termination, every enum's range, and that nothing
 * follows the last field.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "host/store/store_int.h"

/* ---- writer --------------------------------------------------------- */

static void
w_grow(struct store_wbuf *w, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (w->err != 0)
		return;
	if (n > SIZE_MAX / 2 - w->len) {
		w->err = STORE_E_TOOBIG;
		return;
	}
	if (w->len + n <= w->cap)
		return;
	cap = w->cap ? w->cap : 128;
	while (cap < w->len + n)
		cap *= 2;
	if ((p = realloc(w->p, cap)) == NULL) {
		w->err = STORE_E_NOMEM;
		return;
	}
	w->p = p;
	w->cap = cap;
}

void
store_w_bytes(struct store_wbuf *w, const void *p, size_t n)
{
	w_grow(w, n);
	if (w->err != 0 || n == 0)
		return;
	memcpy(w->p + w->len, p, n);
	w->len += n;
}

void
store_w_hdr(struct store_wbuf *w, uint8_t tag)
{
	store_w_hdr_flags(w, tag, 0);
}

void
store_w_hdr_flags(struct store_wbuf *w, uint8_t tag, uint8_t flags)
{
	uint8_t h[STORE_HDR_BYTES] = { tag, STORE_RECORD_VERSION, flags, 0 };

	store_w_bytes(w, h, sizeof(h));
}

void
store_w_u32(struct store_wbuf *w, uint32_t v)
{
	uint8_t b[4];

	for (int i = 0; i < 4; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	store_w_bytes(w, b, sizeof(b));
}

void
store_w_u64(struct store_wbuf *w, uint64_t v)
{
	uint8_t b[8];

	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	store_w_bytes(w, b, sizeof(b));
}

void
store_w_str(struct store_wbuf *w, const char *s, size_t max)
{
	size_t n;
	uint8_t b[2];

	if (s == NULL || (n = strnlen(s, max + 1)) > max) {
		if (w->err == 0)
			w->err = STORE_E_ARG;
		return;
	}
	n++;
	b[0] = (uint8_t)n;
	b[1] = (uint8_t)(n >> 8);
	store_w_bytes(w, b, 2);
	store_w_bytes(w, s, n);
}

void
store_w_blob(struct store_wbuf *w, const void *p, size_t n, size_t max)
{
	if (n > max || (n > 0 && p == NULL)) {
		if (w->err == 0)
			w->err = STORE_E_ARG;
		return;
	}
	store_w_u32(w, (uint32_t)n);
	store_w_bytes(w, p, n);
}

int
store_w_finish(struct store_wbuf *w, void **out, size_t *len)
{
	if (w->err != 0) {
		free(w->p);
		*out = NULL;
		*len = 0;
		return w->err;
	}
	*out = w->p;
	*len = w->len;
	return STORE_OK;
}

/* ---- reader --------------------------------------------------------- */

static const uint8_t *
r_take(struct store_rbuf *r, size_t n)
{
	const uint8_t *p = r->p;

	if (r->err != 0 || n > r->left) {
		r->err = STORE_E_CORRUPT;
		return NULL;
	}
	r->p += n;
	r->left -= n;
	return p;
}

int
store_r_hdr(struct store_rbuf *r, uint8_t tag)
{
	uint8_t flags;

	return store_r_hdr_flags(r, tag, 0, &flags);
}

int
store_r_hdr_flags(
    struct store_rbuf *r, uint8_t tag, uint8_t allowed, uint8_t *flags)
{
	const uint8_t *h = r_take(r, STORE_HDR_BYTES);

	*flags = 0;
	if (h == NULL || h[0] != tag || (h[2] & ~allowed) != 0 || h[3] != 0) {
		r->err = STORE_E_CORRUPT;
		return r->err;
	}
	if (h[1] != STORE_RECORD_VERSION) {
		r->err = STORE_E_VERSION;
		return r->err;
	}
	*flags = h[2];
	return STORE_OK;
}

uint32_t
store_r_u32(struct store_rbuf *r)
{
	const uint8_t *b = r_take(r, 4);
	uint32_t v = 0;

	if (b == NULL)
		return 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

uint64_t
store_r_u64(struct store_rbuf *r)
{
	const uint8_t *b = r_take(r, 8);
	uint64_t v = 0;

	if (b == NULL)
		return 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | b[i];
	return v;
}

void
store_r_bytes(struct store_rbuf *r, void *dst, size_t n)
{
	const uint8_t *b = r_take(r, n);

	if (b != NULL)
		memcpy(dst, b, n);
	else
		memset(dst, 0, n);
}

const char *
store_r_str(struct store_rbuf *r, size_t max)
{
	const uint8_t *b = r_take(r, 2);
	const char *s;
	size_t n;

	if (b == NULL)
		return NULL;
	n = (size_t)b[0] | (size_t)b[1] << 8;
	if (n == 0 || n > max + 1) {
		r->err = STORE_E_CORRUPT;
		return NULL;
	}
	if ((s = (const char *)r_take(r, n)) == NULL)
		return NULL;
	/* Exactly one NUL, at the end. */
	if (s[n - 1] != '\0' || memchr(s, '\0', n - 1) != NULL) {
		r->err = STORE_E_CORRUPT;
		return NULL;
	}
	return s;
}

const void *
store_r_blob(struct store_rbuf *r, size_t max, uint32_t *n)
{
	uint32_t len = store_r_u32(r);
	const void *p;

	*n = 0;
	if (r->err != 0)
		return NULL;
	if (len > max) {
		r->err = STORE_E_CORRUPT;
		return NULL;
	}
	if ((p = r_take(r, len)) == NULL)
		return NULL;
	*n = len;
	return p;
}

int
store_r_end(struct store_rbuf *r)
{
	if (r->err == 0 && r->left != 0)
		r->err = STORE_E_CORRUPT;
	return r->err;
}

/* ---- field rules ---------------------------------------------------- */

int
store_id_ok(const char *s, size_t max)
{
	size_t n = 0;

	if (s == NULL)
		return 0;
	for (; s[n] != '\0'; n++) {
		char c = s[n];

		if (n >= max)
			return 0;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '_' || c == '-'))
			return 0;
	}
	return n > 0;
}

int
store_name_ok(const char *s, size_t max)
{
	size_t n = 0;

	if (s == NULL)
		return 0;
	for (; s[n] != '\0'; n++) {
		if (n >= max)
			return 0;
		if ((unsigned char)s[n] < 0x20 || (unsigned char)s[n] == 0x7f)
			return 0;
	}
	return n > 0;
}

void
store_be64(uint8_t out[8], uint64_t v)
{
	for (int i = 7; i >= 0; i--) {
		out[i] = (uint8_t)v;
		v >>= 8;
	}
}

uint64_t
store_get_be64(const uint8_t in[8])
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = (v << 8) | in[i];
	return v;
}

#define BAD(cond)                                                              \
	do {                                                                   \
		if (r.err == 0 && (cond))                                      \
			r.err = STORE_E_CORRUPT;                               \
	} while (0)
#define DONE(out, view)                                                        \
	do {                                                                   \
		if (store_r_end(&r) != 0)                                      \
			return r.err;                                          \
		*(out) = (view);                                               \
		return STORE_OK;                                               \
	} while (0)

/* ---- sandboxes ------------------------------------------------------ */

int
store_sandbox_encode(const struct store_sandbox *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_id_ok(in->id, STORE_ID_MAX) ||
	    !store_name_ok(in->image, STORE_NAME_MAX) ||
	    !store_name_ok(in->owner, STORE_NAME_MAX) ||
	    in->status < STORE_SBX_CREATING || in->status > STORE_SBX_DELETED ||
	    in->nmeta > STORE_META_MAX)
		w.err = STORE_E_ARG;
	for (uint32_t i = 0; i < in->nmeta && w.err == 0; i++)
		if (!store_name_ok(in->meta_key[i], STORE_NAME_MAX))
			w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_SANDBOX);
	store_w_str(&w, in->id, STORE_ID_MAX);
	store_w_str(&w, in->image, STORE_NAME_MAX);
	store_w_str(&w, in->owner, STORE_NAME_MAX);
	store_w_u64(&w, (uint64_t)in->created_ms);
	store_w_u64(&w, (uint64_t)in->expires_ms);
	store_w_u32(&w, in->status);
	store_w_u32(&w, in->nmeta);
	for (uint32_t i = 0; i < in->nmeta && w.err == 0; i++) {
		store_w_str(&w, in->meta_key[i], STORE_NAME_MAX);
		store_w_str(&w, in->meta_val[i], STORE_VALUE_MAX);
	}
	return store_w_finish(&w, out, len);
}

int
store_sandbox_decode(const void *buf, size_t len, struct store_sandbox *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_sandbox s;

	memset(&s, 0, sizeof(s));
	if (store_r_hdr(&r, STORE_TAG_SANDBOX) != 0)
		return r.err;
	s.id = store_r_str(&r, STORE_ID_MAX);
	s.image = store_r_str(&r, STORE_NAME_MAX);
	s.owner = store_r_str(&r, STORE_NAME_MAX);
	s.created_ms = (int64_t)store_r_u64(&r);
	s.expires_ms = (int64_t)store_r_u64(&r);
	s.status = store_r_u32(&r);
	s.nmeta = store_r_u32(&r);
	BAD(!store_id_ok(s.id, STORE_ID_MAX) ||
	    !store_name_ok(s.image, STORE_NAME_MAX) ||
	    !store_name_ok(s.owner, STORE_NAME_MAX) ||
	    s.status < STORE_SBX_CREATING || s.status > STORE_SBX_DELETED ||
	    s.nmeta > STORE_META_MAX);
	for (uint32_t i = 0; i < s.nmeta && r.err == 0; i++) {
		s.meta_key[i] = store_r_str(&r, STORE_NAME_MAX);
		s.meta_val[i] = store_r_str(&r, STORE_VALUE_MAX);
		BAD(!store_name_ok(s.meta_key[i], STORE_NAME_MAX));
	}
	DONE(out, s);
}

/* ---- runs ----------------------------------------------------------- */

int
store_run_encode(const struct store_run *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_id_ok(in->sandbox, STORE_ID_MAX) ||
	    !store_id_ok(in->id, STORE_ID_MAX) ||
	    !store_name_ok(in->principal, STORE_NAME_MAX) ||
	    in->status < STORE_RUN_QUEUED || in->status > STORE_RUN_FAILED)
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_RUN);
	store_w_str(&w, in->sandbox, STORE_ID_MAX);
	store_w_str(&w, in->id, STORE_ID_MAX);
	store_w_str(&w, in->principal, STORE_NAME_MAX);
	store_w_str(&w, in->command, STORE_TEXT_MAX);
	store_w_u32(&w, in->status);
	store_w_u32(&w, (uint32_t)in->exit_code);
	store_w_u64(&w, (uint64_t)in->started_ms);
	store_w_u64(&w, (uint64_t)in->finished_ms);
	store_w_blob(&w, in->out, in->out_len, STORE_OUTPUT_MAX);
	store_w_blob(&w, in->err, in->err_len, STORE_OUTPUT_MAX);
	store_w_str(&w, in->reason ? in->reason : "", STORE_NAME_MAX);
	return store_w_finish(&w, out, len);
}

int
store_run_decode(const void *buf, size_t len, struct store_run *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_run x;

	memset(&x, 0, sizeof(x));
	if (store_r_hdr(&r, STORE_TAG_RUN) != 0)
		return r.err;
	x.sandbox = store_r_str(&r, STORE_ID_MAX);
	x.id = store_r_str(&r, STORE_ID_MAX);
	x.principal = store_r_str(&r, STORE_NAME_MAX);
	x.command = store_r_str(&r, STORE_TEXT_MAX);
	x.status = store_r_u32(&r);
	x.exit_code = (int32_t)store_r_u32(&r);
	x.started_ms = (int64_t)store_r_u64(&r);
	x.finished_ms = (int64_t)store_r_u64(&r);
	x.out = store_r_blob(&r, STORE_OUTPUT_MAX, &x.out_len);
	x.err = store_r_blob(&r, STORE_OUTPUT_MAX, &x.err_len);
	x.reason = store_r_str(&r, STORE_NAME_MAX);
	BAD(!store_id_ok(x.sandbox, STORE_ID_MAX) ||
	    !store_id_ok(x.id, STORE_ID_MAX) ||
	    !store_name_ok(x.principal, STORE_NAME_MAX) ||
	    x.status < STORE_RUN_QUEUED || x.status > STORE_RUN_FAILED);
	DONE(out, x);
}

/* ---- audit ---------------------------------------------------------- */

static int
audit_fields_ok(const struct store_audit *a)
{
	return a->request_id != NULL && a->principal != NULL &&
	    a->jti != NULL && store_name_ok(a->action, STORE_NAME_MAX) &&
	    a->target != NULL && a->rule != NULL && a->detail != NULL &&
	    a->decision >= STORE_DECISION_ALLOW &&
	    a->decision <= STORE_DECISION_INFO;
}

int
store_audit_encode(const struct store_audit *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };
	int extra =
	    in->client_request_id != NULL && in->client_request_id[0] != '\0';

	if (!audit_fields_ok(in))
		w.err = STORE_E_ARG;
	store_w_hdr_flags(&w, STORE_TAG_AUDIT, extra ? STORE_HDR_EXTRA : 0);
	store_w_u64(&w, in->seq);
	store_w_u64(&w, (uint64_t)in->time_ms);
	store_w_str(&w, in->request_id, STORE_NAME_MAX);
	store_w_str(&w, in->principal, STORE_NAME_MAX);
	store_w_str(&w, in->jti, STORE_NAME_MAX);
	store_w_str(&w, in->action, STORE_NAME_MAX);
	store_w_str(&w, in->target, STORE_TEXT_MAX);
	store_w_u32(&w, in->decision);
	store_w_str(&w, in->rule, STORE_TEXT_MAX);
	store_w_str(&w, in->detail, STORE_TEXT_MAX);
	if (extra) {
		if (!store_name_ok(in->client_request_id, STORE_NAME_MAX))
			w.err = STORE_E_ARG;
		store_w_str(&w, in->client_request_id, STORE_NAME_MAX);
	}
	store_w_bytes(&w, in->prev, STORE_HASH_BYTES);
	store_w_bytes(&w, in->hash, STORE_HASH_BYTES);
	return store_w_finish(&w, out, len);
}

int
store_audit_decode(const void *buf, size_t len, struct store_audit *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_audit a;
	uint8_t flags;

	memset(&a, 0, sizeof(a));
	if (store_r_hdr_flags(&r, STORE_TAG_AUDIT, STORE_HDR_EXTRA, &flags) !=
	    0)
		return r.err;
	a.seq = store_r_u64(&r);
	a.time_ms = (int64_t)store_r_u64(&r);
	a.request_id = store_r_str(&r, STORE_NAME_MAX);
	a.principal = store_r_str(&r, STORE_NAME_MAX);
	a.jti = store_r_str(&r, STORE_NAME_MAX);
	a.action = store_r_str(&r, STORE_NAME_MAX);
	a.target = store_r_str(&r, STORE_TEXT_MAX);
	a.decision = store_r_u32(&r);
	a.rule = store_r_str(&r, STORE_TEXT_MAX);
	a.detail = store_r_str(&r, STORE_TEXT_MAX);
	/* The client's request id, when the header says one was kept. */
	if (flags & STORE_HDR_EXTRA) {
		a.client_request_id = store_r_str(&r, STORE_NAME_MAX);
		BAD(!store_name_ok(a.client_request_id, STORE_NAME_MAX));
	}
	store_r_bytes(&r, a.prev, STORE_HASH_BYTES);
	store_r_bytes(&r, a.hash, STORE_HASH_BYTES);
	BAD(!audit_fields_ok(&a));
	DONE(out, a);
}

void
store_audit_hash(const void *rec, size_t len, uint8_t out[32])
{
	/* The hash covers everything before the hash field itself. */
	crypto_generichash(out, STORE_HASH_BYTES, rec,
	    len >= STORE_HASH_BYTES ? len - STORE_HASH_BYTES : 0, NULL, 0);
}

/* ---- counters, revocations, idempotency ----------------------------- */

int
store_counter_encode(const struct store_counter *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_name_ok(in->principal, STORE_NAME_MAX) ||
	    !store_name_ok(in->name, STORE_NAME_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_COUNTER);
	store_w_str(&w, in->principal, STORE_NAME_MAX);
	store_w_str(&w, in->name, STORE_NAME_MAX);
	store_w_u64(&w, (uint64_t)in->value);
	store_w_u64(&w, (uint64_t)in->updated_ms);
	return store_w_finish(&w, out, len);
}

int
store_counter_decode(const void *buf, size_t len, struct store_counter *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_counter c;

	memset(&c, 0, sizeof(c));
	if (store_r_hdr(&r, STORE_TAG_COUNTER) != 0)
		return r.err;
	c.principal = store_r_str(&r, STORE_NAME_MAX);
	c.name = store_r_str(&r, STORE_NAME_MAX);
	c.value = (int64_t)store_r_u64(&r);
	c.updated_ms = (int64_t)store_r_u64(&r);
	BAD(!store_name_ok(c.principal, STORE_NAME_MAX) ||
	    !store_name_ok(c.name, STORE_NAME_MAX));
	DONE(out, c);
}

int
store_revocation_encode(
    const struct store_revocation *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_name_ok(in->jti, STORE_NAME_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_REVOCATION);
	store_w_str(&w, in->jti, STORE_NAME_MAX);
	store_w_u64(&w, (uint64_t)in->exp_s);
	store_w_u64(&w, (uint64_t)in->revoked_ms);
	return store_w_finish(&w, out, len);
}

int
store_revocation_decode(
    const void *buf, size_t len, struct store_revocation *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_revocation v;

	memset(&v, 0, sizeof(v));
	if (store_r_hdr(&r, STORE_TAG_REVOCATION) != 0)
		return r.err;
	v.jti = store_r_str(&r, STORE_NAME_MAX);
	v.exp_s = (int64_t)store_r_u64(&r);
	v.revoked_ms = (int64_t)store_r_u64(&r);
	BAD(!store_name_ok(v.jti, STORE_NAME_MAX));
	DONE(out, v);
}

int
store_idem_encode(const struct store_idem *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_name_ok(in->principal, STORE_NAME_MAX) ||
	    !store_name_ok(in->key, STORE_NAME_MAX) || in->status < 100 ||
	    in->status > 599)
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_IDEM);
	store_w_str(&w, in->principal, STORE_NAME_MAX);
	store_w_str(&w, in->key, STORE_NAME_MAX);
	store_w_u64(&w, (uint64_t)in->created_ms);
	store_w_bytes(&w, in->req_hash, STORE_HASH_BYTES);
	store_w_u32(&w, in->status);
	store_w_blob(&w, in->body, in->body_len, STORE_BODY_MAX);
	return store_w_finish(&w, out, len);
}

int
store_idem_decode(const void *buf, size_t len, struct store_idem *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_idem k;

	memset(&k, 0, sizeof(k));
	if (store_r_hdr(&r, STORE_TAG_IDEM) != 0)
		return r.err;
	k.principal = store_r_str(&r, STORE_NAME_MAX);
	k.key = store_r_str(&r, STORE_NAME_MAX);
	k.created_ms = (int64_t)store_r_u64(&r);
	store_r_bytes(&r, k.req_hash, STORE_HASH_BYTES);
	k.status = store_r_u32(&r);
	k.body = store_r_blob(&r, STORE_BODY_MAX, &k.body_len);
	BAD(!store_name_ok(k.principal, STORE_NAME_MAX) ||
	    !store_name_ok(k.key, STORE_NAME_MAX) || k.status < 100 ||
	    k.status > 599);
	DONE(out, k);
}

/* ---- images, env, files --------------------------------------------- */

int
store_image_encode(const struct store_image *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_name_ok(in->name, STORE_NAME_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_IMAGE);
	store_w_str(&w, in->name, STORE_NAME_MAX);
	store_w_str(&w, in->version, STORE_NAME_MAX);
	store_w_bytes(&w, in->digest, STORE_HASH_BYTES);
	store_w_u64(&w, in->size);
	store_w_str(&w, in->signer, STORE_NAME_MAX);
	store_w_u64(&w, (uint64_t)in->added_ms);
	return store_w_finish(&w, out, len);
}

int
store_image_decode(const void *buf, size_t len, struct store_image *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_image im;

	memset(&im, 0, sizeof(im));
	if (store_r_hdr(&r, STORE_TAG_IMAGE) != 0)
		return r.err;
	im.name = store_r_str(&r, STORE_NAME_MAX);
	im.version = store_r_str(&r, STORE_NAME_MAX);
	store_r_bytes(&r, im.digest, STORE_HASH_BYTES);
	im.size = store_r_u64(&r);
	im.signer = store_r_str(&r, STORE_NAME_MAX);
	im.added_ms = (int64_t)store_r_u64(&r);
	BAD(!store_name_ok(im.name, STORE_NAME_MAX));
	DONE(out, im);
}

int
store_env_encode(const struct store_env *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_id_ok(in->sandbox, STORE_ID_MAX) ||
	    !store_name_ok(in->key, STORE_NAME_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_ENV);
	store_w_str(&w, in->sandbox, STORE_ID_MAX);
	store_w_str(&w, in->key, STORE_NAME_MAX);
	store_w_str(&w, in->value, STORE_VALUE_MAX);
	return store_w_finish(&w, out, len);
}

int
store_env_decode(const void *buf, size_t len, struct store_env *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_env e;

	memset(&e, 0, sizeof(e));
	if (store_r_hdr(&r, STORE_TAG_ENV) != 0)
		return r.err;
	e.sandbox = store_r_str(&r, STORE_ID_MAX);
	e.key = store_r_str(&r, STORE_NAME_MAX);
	e.value = store_r_str(&r, STORE_VALUE_MAX);
	BAD(!store_id_ok(e.sandbox, STORE_ID_MAX) ||
	    !store_name_ok(e.key, STORE_NAME_MAX));
	DONE(out, e);
}

static int
path_ok(const char *p)
{
	return store_name_ok(p, STORE_PATH_MAX) && p[0] == '/';
}

int
store_file_encode(const struct store_file *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_id_ok(in->sandbox, STORE_ID_MAX) || !path_ok(in->path) ||
	    in->mode > 07777)
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_FILE);
	store_w_str(&w, in->sandbox, STORE_ID_MAX);
	store_w_str(&w, in->path, STORE_PATH_MAX);
	store_w_u32(&w, in->mode);
	store_w_u64(&w, (uint64_t)in->mtime_ms);
	store_w_blob(&w, in->data, in->len, STORE_FILE_MAX);
	return store_w_finish(&w, out, len);
}

int
store_file_decode(const void *buf, size_t len, struct store_file *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_file f;

	memset(&f, 0, sizeof(f));
	if (store_r_hdr(&r, STORE_TAG_FILE) != 0)
		return r.err;
	f.sandbox = store_r_str(&r, STORE_ID_MAX);
	f.path = store_r_str(&r, STORE_PATH_MAX);
	f.mode = store_r_u32(&r);
	f.mtime_ms = (int64_t)store_r_u64(&r);
	f.data = store_r_blob(&r, STORE_FILE_MAX, &f.len);
	BAD(!store_id_ok(f.sandbox, STORE_ID_MAX) || !path_ok(f.path) ||
	    f.mode > 07777);
	DONE(out, f);
}

/* A fire's number as its key part: 20 decimal digits. */
static int
seq_ok(const char *s)
{
	size_t n = 0;

	if (s == NULL)
		return 0;
	for (; s[n] != '\0'; n++)
		if (n >= 20 || s[n] < '0' || s[n] > '9')
			return 0;
	return n == 20;
}

int
store_schedule_encode(const struct store_schedule *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };
	int extra = in->tokens != NULL && in->tokens[0] != '\0';

	if (!store_id_ok(in->id, STORE_ID_MAX) ||
	    !store_name_ok(in->owner, STORE_NAME_MAX) ||
	    !store_name_ok(in->spec, STORE_SPEC_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr_flags(&w, STORE_TAG_SCHEDULE, extra ? STORE_HDR_EXTRA : 0);
	store_w_str(&w, in->id, STORE_ID_MAX);
	store_w_str(&w, in->owner, STORE_NAME_MAX);
	store_w_str(&w, in->spec, STORE_SPEC_MAX);
	store_w_u64(&w, in->caps);
	store_w_u64(&w, (uint64_t)in->created_ms);
	store_w_u64(&w, (uint64_t)in->updated_ms);
	store_w_u64(&w, (uint64_t)in->last_fire_ms);
	store_w_u64(&w, in->next_seq);
	if (extra) {
		if (!store_name_ok(in->tokens, STORE_TOKENS_MAX))
			w.err = STORE_E_ARG;
		store_w_str(&w, in->tokens, STORE_TOKENS_MAX);
	}
	return store_w_finish(&w, out, len);
}

int
store_schedule_decode(const void *buf, size_t len, struct store_schedule *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_schedule s;
	uint8_t flags;

	memset(&s, 0, sizeof(s));
	if (store_r_hdr_flags(
	        &r, STORE_TAG_SCHEDULE, STORE_HDR_EXTRA, &flags) != 0)
		return r.err;
	s.id = store_r_str(&r, STORE_ID_MAX);
	s.owner = store_r_str(&r, STORE_NAME_MAX);
	s.spec = store_r_str(&r, STORE_SPEC_MAX);
	s.caps = store_r_u64(&r);
	s.created_ms = (int64_t)store_r_u64(&r);
	s.updated_ms = (int64_t)store_r_u64(&r);
	s.last_fire_ms = (int64_t)store_r_u64(&r);
	s.next_seq = store_r_u64(&r);
	/* The tokens' jtis, when the header says so (older records: no). */
	if (flags & STORE_HDR_EXTRA) {
		s.tokens = store_r_str(&r, STORE_TOKENS_MAX);
		BAD(!store_name_ok(s.tokens, STORE_TOKENS_MAX));
	}
	BAD(!store_id_ok(s.id, STORE_ID_MAX) ||
	    !store_name_ok(s.owner, STORE_NAME_MAX) ||
	    !store_name_ok(s.spec, STORE_SPEC_MAX));
	DONE(out, s);
}

static int
sched_text_ok(const char *s, size_t max)
{
	return s != NULL && (s[0] == '\0' || store_name_ok(s, max));
}

int
store_sched_run_encode(
    const struct store_sched_run *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_id_ok(in->schedule, STORE_ID_MAX) || !seq_ok(in->seq) ||
	    !store_name_ok(in->owner, STORE_NAME_MAX) ||
	    in->status < STORE_SCHED_COMPLETED ||
	    in->status > STORE_SCHED_REFUSED || in->catch_up > 1 ||
	    !sched_text_ok(in->sandbox, STORE_ID_MAX) ||
	    !sched_text_ok(in->run_id, STORE_ID_MAX) ||
	    !sched_text_ok(in->detail, STORE_TEXT_MAX))
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_SCHED_RUN);
	store_w_str(&w, in->schedule, STORE_ID_MAX);
	store_w_str(&w, in->seq, 20);
	store_w_str(&w, in->owner, STORE_NAME_MAX);
	store_w_u32(&w, in->status);
	store_w_u32(&w, (uint32_t)in->exit_code);
	store_w_u32(&w, in->catch_up);
	store_w_u64(&w, (uint64_t)in->fire_ms);
	store_w_u64(&w, (uint64_t)in->started_ms);
	store_w_u64(&w, (uint64_t)in->finished_ms);
	store_w_str(&w, in->sandbox, STORE_ID_MAX);
	store_w_str(&w, in->run_id, STORE_ID_MAX);
	store_w_str(&w, in->detail, STORE_TEXT_MAX);
	store_w_blob(&w, in->out, in->out_len, STORE_SCHED_OUT_MAX);
	store_w_blob(&w, in->err, in->err_len, STORE_SCHED_OUT_MAX);
	return store_w_finish(&w, out, len);
}

int
store_sched_run_decode(const void *buf, size_t len, struct store_sched_run *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_sched_run x;

	memset(&x, 0, sizeof(x));
	if (store_r_hdr(&r, STORE_TAG_SCHED_RUN) != 0)
		return r.err;
	x.schedule = store_r_str(&r, STORE_ID_MAX);
	x.seq = store_r_str(&r, 20);
	x.owner = store_r_str(&r, STORE_NAME_MAX);
	x.status = store_r_u32(&r);
	x.exit_code = (int32_t)store_r_u32(&r);
	x.catch_up = store_r_u32(&r);
	x.fire_ms = (int64_t)store_r_u64(&r);
	x.started_ms = (int64_t)store_r_u64(&r);
	x.finished_ms = (int64_t)store_r_u64(&r);
	x.sandbox = store_r_str(&r, STORE_ID_MAX);
	x.run_id = store_r_str(&r, STORE_ID_MAX);
	x.detail = store_r_str(&r, STORE_TEXT_MAX);
	x.out = store_r_blob(&r, STORE_SCHED_OUT_MAX, &x.out_len);
	x.err = store_r_blob(&r, STORE_SCHED_OUT_MAX, &x.err_len);
	BAD(!store_id_ok(x.schedule, STORE_ID_MAX) || !seq_ok(x.seq) ||
	    !store_name_ok(x.owner, STORE_NAME_MAX) ||
	    x.status < STORE_SCHED_COMPLETED ||
	    x.status > STORE_SCHED_REFUSED || x.catch_up > 1 ||
	    !sched_text_ok(x.sandbox, STORE_ID_MAX) ||
	    !sched_text_ok(x.run_id, STORE_ID_MAX) ||
	    !sched_text_ok(x.detail, STORE_TEXT_MAX));
	DONE(out, x);
}

/* ---- meta ----------------------------------------------------------- */

int
store_head_encode(const struct store_head *h, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	store_w_hdr(&w, STORE_TAG_HEAD);
	store_w_u64(&w, h->seq);
	store_w_bytes(&w, h->hash, STORE_HASH_BYTES);
	return store_w_finish(&w, out, len);
}

int
store_head_decode(const void *buf, size_t len, struct store_head *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_head h;

	if (store_r_hdr(&r, STORE_TAG_HEAD) != 0)
		return r.err;
	h.seq = store_r_u64(&r);
	store_r_bytes(&r, h.hash, STORE_HASH_BYTES);
	DONE(out, h);
}

size_t
store_checkpoint_signed_len(void)
{
	return STORE_HDR_BYTES + 8 + STORE_HASH_BYTES + 8 + 8 + 32;
}

int
store_checkpoint_encode(
    const struct store_checkpoint *cp, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	store_w_hdr(&w, STORE_TAG_CHECKPOINT);
	store_w_u64(&w, cp->seq);
	store_w_bytes(&w, cp->hash, STORE_HASH_BYTES);
	store_w_u64(&w, (uint64_t)cp->time_ms);
	store_w_u64(&w, cp->removed);
	store_w_bytes(&w, cp->pubkey, 32);
	store_w_bytes(&w, cp->sig, 64);
	return store_w_finish(&w, out, len);
}

int
store_checkpoint_decode(
    const void *buf, size_t len, struct store_checkpoint *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_checkpoint cp;

	if (store_r_hdr(&r, STORE_TAG_CHECKPOINT) != 0)
		return r.err;
	cp.seq = store_r_u64(&r);
	store_r_bytes(&r, cp.hash, STORE_HASH_BYTES);
	cp.time_ms = (int64_t)store_r_u64(&r);
	cp.removed = store_r_u64(&r);
	store_r_bytes(&r, cp.pubkey, 32);
	store_r_bytes(&r, cp.sig, 64);
	BAD(cp.seq == 0);
	DONE(out, cp);
}

static int
schema_check(const void *buf, size_t len)
{
	struct store_rbuf r = { buf, len, 0 };

	if (store_r_hdr(&r, STORE_TAG_SCHEMA) != 0)
		return r.err;
	(void)store_r_u32(&r);
	return store_r_end(&r);
}

/* ---- dispatch by database ------------------------------------------- */

int
store_record_check(unsigned db, const void *buf, size_t len)
{
	union {
		struct store_sandbox s;
		struct store_run r;
		struct store_audit a;
		struct store_counter c;
		struct store_revocation v;
		struct store_idem k;
		struct store_image i;
		struct store_env e;
		struct store_file f;
		struct store_schedule d;
		struct store_sched_run g;
		struct store_secret z;
		struct store_head h;
		struct store_checkpoint p;
	} u;
	const uint8_t *b = buf;

	if (buf == NULL || len < STORE_HDR_BYTES)
		return STORE_E_CORRUPT;
	switch (db) {
	case STORE_DB_META:
		if (b[0] == STORE_TAG_HEAD)
			return store_head_decode(buf, len, &u.h);
		if (b[0] == STORE_TAG_CHECKPOINT)
			return store_checkpoint_decode(buf, len, &u.p);
		return schema_check(buf, len);
	case STORE_DB_SANDBOXES:
		return store_sandbox_decode(buf, len, &u.s);
	case STORE_DB_RUNS:
		return store_run_decode(buf, len, &u.r);
	case STORE_DB_AUDIT:
		return store_audit_decode(buf, len, &u.a);
	case STORE_DB_COUNTERS:
		return store_counter_decode(buf, len, &u.c);
	case STORE_DB_REVOCATIONS:
		return store_revocation_decode(buf, len, &u.v);
	case STORE_DB_IDEMPOTENCY:
		return store_idem_decode(buf, len, &u.k);
	case STORE_DB_IMAGES:
		return store_image_decode(buf, len, &u.i);
	case STORE_DB_ENV:
		return store_env_decode(buf, len, &u.e);
	case STORE_DB_FILES:
		return store_file_decode(buf, len, &u.f);
	case STORE_DB_SCHEDULES:
		return store_schedule_decode(buf, len, &u.d);
	case STORE_DB_SCHED_RUNS:
		return store_sched_run_decode(buf, len, &u.g);
	case STORE_DB_SECRETS:
		return store_secret_decode(buf, len, &u.z);
	default:
		return STORE_E_ARG;
	}
}

static size_t
key2(const char *a, const char *b, void *key, size_t keymax)
{
	size_t la = strlen(a), lb = strlen(b);

	if (la + 1 + lb > keymax)
		return 0;
	memcpy(key, a, la);
	((uint8_t *)key)[la] = '\0';
	memcpy((uint8_t *)key + la + 1, b, lb);
	return la + 1 + lb;
}

static size_t
key1(const char *a, void *key, size_t keymax)
{
	size_t la = strlen(a);

	if (la > keymax)
		return 0;
	memcpy(key, a, la);
	return la;
}

int
store_record_key(unsigned db, const void *buf, size_t len, void *key,
    size_t keymax, size_t *klen)
{
	union {
		struct store_sandbox s;
		struct store_run r;
		struct store_audit a;
		struct store_counter c;
		struct store_revocation v;
		struct store_idem k;
		struct store_image i;
		struct store_env e;
		struct store_file f;
		struct store_schedule d;
		struct store_sched_run g;
		struct store_secret z;
	} u;
	size_t n = 0;
	int rc;

	*klen = 0;
	switch (db) {
	case STORE_DB_SANDBOXES:
		if ((rc = store_sandbox_decode(buf, len, &u.s)) != 0)
			return rc;
		n = key1(u.s.id, key, keymax);
		break;
	case STORE_DB_RUNS:
		if ((rc = store_run_decode(buf, len, &u.r)) != 0)
			return rc;
		n = key2(u.r.sandbox, u.r.id, key, keymax);
		break;
	case STORE_DB_AUDIT:
		if ((rc = store_audit_decode(buf, len, &u.a)) != 0)
			return rc;
		if (keymax < 8)
			return STORE_E_TOOBIG;
		store_be64(key, u.a.seq);
		n = 8;
		break;
	case STORE_DB_COUNTERS:
		if ((rc = store_counter_decode(buf, len, &u.c)) != 0)
			return rc;
		n = key2(u.c.principal, u.c.name, key, keymax);
		break;
	case STORE_DB_REVOCATIONS:
		if ((rc = store_revocation_decode(buf, len, &u.v)) != 0)
			return rc;
		n = key1(u.v.jti, key, keymax);
		break;
	case STORE_DB_IDEMPOTENCY:
		if ((rc = store_idem_decode(buf, len, &u.k)) != 0)
			return rc;
		n = key2(u.k.principal, u.k.key, key, keymax);
		break;
	case STORE_DB_IMAGES:
		if ((rc = store_image_decode(buf, len, &u.i)) != 0)
			return rc;
		n = key1(u.i.name, key, keymax);
		break;
	case STORE_DB_ENV:
		if ((rc = store_env_decode(buf, len, &u.e)) != 0)
			return rc;
		n = key2(u.e.sandbox, u.e.key, key, keymax);
		break;
	case STORE_DB_FILES:
		if ((rc = store_file_decode(buf, len, &u.f)) != 0)
			return rc;
		n = key2(u.f.sandbox, u.f.path, key, keymax);
		break;
	case STORE_DB_SCHEDULES:
		if ((rc = store_schedule_decode(buf, len, &u.d)) != 0)
			return rc;
		n = key1(u.d.id, key, keymax);
		break;
	case STORE_DB_SCHED_RUNS:
		if ((rc = store_sched_run_decode(buf, len, &u.g)) != 0)
			return rc;
		n = key2(u.g.schedule, u.g.seq, key, keymax);
		break;
	case STORE_DB_SECRETS:
		if ((rc = store_secret_decode(buf, len, &u.z)) != 0)
			return rc;
		n = key1(u.z.name, key, keymax);
		break;
	default:
		return STORE_E_ARG;
	}
	if (n == 0)
		return STORE_E_TOOBIG;
	*klen = n;
	return STORE_OK;
}

/* Which databases have two-part keys. */
static int
two_part(unsigned db)
{
	return db == STORE_DB_RUNS || db == STORE_DB_COUNTERS ||
	    db == STORE_DB_IDEMPOTENCY || db == STORE_DB_ENV ||
	    db == STORE_DB_FILES || db == STORE_DB_SCHED_RUNS;
}

size_t
store_key_make(
    unsigned db, const char *k1, const char *k2, uint8_t key[STORE_KEY_MAX])
{
	size_t max1 = STORE_NAME_MAX, max2 = STORE_NAME_MAX;

	if (db == STORE_DB_META || db == STORE_DB_AUDIT ||
	    db >= STORE_DB_COUNT || !two_part(db) != (k2 == NULL))
		return 0;
	if (db == STORE_DB_SANDBOXES || db == STORE_DB_RUNS ||
	    db == STORE_DB_ENV || db == STORE_DB_FILES ||
	    db == STORE_DB_SCHEDULES || db == STORE_DB_SCHED_RUNS) {
		if (!store_id_ok(k1, STORE_ID_MAX))
			return 0;
	} else if (!store_name_ok(k1, max1))
		return 0;
	if (k2 == NULL)
		return key1(k1, key, STORE_KEY_MAX);
	if (db == STORE_DB_RUNS && !store_id_ok(k2, STORE_ID_MAX))
		return 0;
	if (db == STORE_DB_SCHED_RUNS && !seq_ok(k2))
		return 0;
	if (db == STORE_DB_FILES)
		max2 = STORE_PATH_MAX;
	if (!store_name_ok(k2, max2))
		return 0;
	return key2(k1, k2, key, STORE_KEY_MAX);
}

int
store_secret_encode(const struct store_secret *in, void **out, size_t *len)
{
	struct store_wbuf w = { 0 };

	if (!store_name_ok(in->name, STORE_NAME_MAX) ||
	    !store_name_ok(in->set_by, STORE_NAME_MAX) || in->sealed_len == 0 ||
	    in->sealed_len > STORE_SEALED_MAX)
		w.err = STORE_E_ARG;
	store_w_hdr(&w, STORE_TAG_SECRET);
	store_w_str(&w, in->name, STORE_NAME_MAX);
	store_w_blob(&w, in->sealed, in->sealed_len, STORE_SEALED_MAX);
	store_w_u64(&w, (uint64_t)in->created_ms);
	store_w_u64(&w, (uint64_t)in->updated_ms);
	store_w_str(&w, in->set_by, STORE_NAME_MAX);
	return store_w_finish(&w, out, len);
}

int
store_secret_decode(const void *buf, size_t len, struct store_secret *out)
{
	struct store_rbuf r = { buf, len, 0 };
	struct store_secret s;

	memset(&s, 0, sizeof(s));
	if (store_r_hdr(&r, STORE_TAG_SECRET) != 0)
		return r.err;
	s.name = store_r_str(&r, STORE_NAME_MAX);
	s.sealed = store_r_blob(&r, STORE_SEALED_MAX, &s.sealed_len);
	s.created_ms = (int64_t)store_r_u64(&r);
	s.updated_ms = (int64_t)store_r_u64(&r);
	s.set_by = store_r_str(&r, STORE_NAME_MAX);
	BAD(!store_name_ok(s.name, STORE_NAME_MAX) ||
	    !store_name_ok(s.set_by, STORE_NAME_MAX) || s.sealed_len == 0);
	DONE(out, s);
}

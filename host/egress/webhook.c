/*
 * Webhooks: a JSON body POSTed through exactly the checks of
 * egress_fetch, signed so the receiver can tell it came from us and is
 * fresh: X-Keep-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of
 * "<t>.<body>"> keyed with the sandbox's secret. The timestamp is inside
 * the MAC so a captured delivery cannot be replayed later as new.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "host/egress/egress_int.h"
#include "lib/util.h"

#define MAX_ATTEMPTS 10

int
egress_webhook_secret(
    const uint8_t *master, const char *sandbox_id, uint8_t *out)
{
	static const char label[] = "keep webhook secret v1";
	crypto_auth_hmacsha256_state st;
	size_t n;

	if (sandbox_id == NULL || (n = strnlen(sandbox_id, 129)) == 0 ||
	    n > 128)
		return EGRESS_E_MSG;
	crypto_auth_hmacsha256_init(&st, master, EGRESS_WEBHOOK_KEYBYTES);
	/* sizeof(label) includes its NUL: the separator. */
	crypto_auth_hmacsha256_update(
	    &st, (const unsigned char *)label, sizeof(label));
	crypto_auth_hmacsha256_update(
	    &st, (const unsigned char *)sandbox_id, n);
	crypto_auth_hmacsha256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
	return 0;
}

int
egress_webhook_sign(const uint8_t *secret, uint64_t t, const void *body,
    size_t body_len, char *out, size_t outlen)
{
	crypto_auth_hmacsha256_state st;
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char ts[24], hex[crypto_auth_hmacsha256_BYTES * 2 + 1];
	int n;

	n = snprintf(ts, sizeof(ts), "%llu", (unsigned long long)t);
	if (n < 0 || (size_t)n >= sizeof(ts))
		return EGRESS_E_INTERNAL;
	crypto_auth_hmacsha256_init(&st, secret, EGRESS_WEBHOOK_KEYBYTES);
	crypto_auth_hmacsha256_update(
	    &st, (const unsigned char *)ts, (unsigned long long)n);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)".", 1);
	crypto_auth_hmacsha256_update(&st, body, body_len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
	sodium_bin2hex(hex, sizeof(hex), mac, sizeof(mac));
	n = snprintf(out, outlen, "t=%s,v1=%s", ts, hex);
	if (n < 0 || (size_t)n >= outlen)
		return EGRESS_E_INTERNAL;
	return 0;
}

static int
valid_delivery_id(const char *id)
{
	size_t i;

	if (id == NULL)
		return 0;
	for (i = 0; id[i] != '\0'; i++) {
		char c = id[i];

		if (i >= 64 ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return i > 0;
}

/* Which outcomes a later attempt might change. */
static int
retryable(int rc, long status)
{
	switch (rc) {
	case 0:
		return status == 408 || status == 429 || status >= 500;
	case EGRESS_E_TIMEOUT:
	case EGRESS_E_CONNECT:
	case EGRESS_E_TLS:
	case EGRESS_E_TRANSFER:
	case EGRESS_E_RESOLVE:
	case EGRESS_E_CONCURRENCY:
		return 1;
	default:
		return 0;
	}
}

int
egress_webhook_deliver(struct egress_ctx *ctx, const struct egress_webhook *wh,
    unsigned *attempts, struct egress_decision *d)
{
	struct egress_header hs[3];
	struct egress_request req;
	struct egress_response resp;
	char sig[128];
	uint64_t wait;
	unsigned max;
	int rc;

	*attempts = 0;
	memset(d, 0, sizeof(*d));
	d->rule = -1;
	d->addr_class = -1;
	if (wh->url == NULL || wh->secret == NULL || wh->body == NULL ||
	    !valid_delivery_id(wh->delivery_id)) {
		d->error = EGRESS_E_MSG;
		return EGRESS_E_MSG;
	}
	max = wh->max_attempts;
	if (max == 0)
		max = 1;
	if (max > MAX_ATTEMPTS)
		max = MAX_ATTEMPTS;
	wait = wh->backoff_ms;
	memset(&req, 0, sizeof(req));
	req.principal = wh->principal;
	req.method = "POST";
	req.url = wh->url;
	req.url_len = strlen(wh->url);
	req.headers = hs;
	req.nheaders = nitems(hs);
	req.body = wh->body;
	req.body_len = wh->body_len;
	req.rules = wh->rules;
	req.nrules = wh->nrules;
	req.limits = wh->limits;
	/* A webhook receiver's redirect is not followed: its answer is final. */
	req.limits.max_redirects = 0;
	hs[0].name = "Content-Type";
	hs[0].value = "application/json";
	hs[1].name = EGRESS_SIG_HEADER;
	hs[1].value = sig;
	hs[2].name = EGRESS_DELIVERY_HEADER;
	hs[2].value = wh->delivery_id;
	for (;;) {
		/* Signed afresh each time, so the timestamp is the send time. */
		if ((rc = egress_webhook_sign(wh->secret,
		         ctx->cfg.wallclock(ctx->cfg.arg), wh->body,
		         wh->body_len, sig, sizeof(sig))) != 0) {
			d->error = rc;
			return rc;
		}
		(*attempts)++;
		rc = egress_fetch(ctx, &req, &resp, d);
		if (rc == 0) {
			long st = resp.status;

			egress_response_free(&resp);
			if (st >= 200 && st < 300)
				return 0;
			if (!retryable(0, st) || *attempts >= max) {
				d->error = EGRESS_E_WEBHOOK;
				return EGRESS_E_WEBHOOK;
			}
		} else if (!retryable(rc, 0))
			return rc;
		else if (*attempts >= max) {
			d->error = rc;
			return EGRESS_E_WEBHOOK;
		}
		ctx->cfg.sleep(ctx->cfg.arg, wait);
		wait *= 2;
		if (wh->max_backoff_ms != 0 && wait > wh->max_backoff_ms)
			wait = wh->max_backoff_ms;
	}
}

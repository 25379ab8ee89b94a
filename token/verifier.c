/* The verifier: trusted keys by kid, claims policy, a verified-token cache. */
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "token/paseto.h"
#include "token/token.h"

struct cache_entry {
	uint8_t hash[32]; /* BLAKE2b-256 of the token; all zero = empty */
	struct token_claims claims;
};

struct token_verifier {
	struct token_key *keys;
	size_t nkeys;
	char *audience;
	int64_t skew, max_lifetime;
	int (*revoked)(void *, const char *);
	void *revoked_ctx;
	int64_t (*now)(void *);
	void *now_ctx;
	struct cache_entry *cache;
	size_t ncache;
	uint64_t hits, misses;
};

const char *
token_strerror(int err)
{
	switch (err) {
	case TOKEN_OK:
		return "ok";
	case TOKEN_E_FORMAT:
		return "malformed token";
	case TOKEN_E_VERSION:
		return "not a v4.public token";
	case TOKEN_E_BASE64:
		return "invalid base64url encoding";
	case TOKEN_E_SIGNATURE:
		return "signature does not verify";
	case TOKEN_E_TOO_LARGE:
		return "token too large";
	case TOKEN_E_FOOTER:
		return "invalid footer";
	case TOKEN_E_KID:
		return "unknown key id";
	case TOKEN_E_JSON:
		return "payload is not valid JSON";
	case TOKEN_E_CLAIM:
		return "missing or invalid claim";
	case TOKEN_E_EXPIRED:
		return "token expired";
	case TOKEN_E_NOT_YET:
		return "token not yet valid";
	case TOKEN_E_LIFETIME:
		return "token lifetime above the maximum";
	case TOKEN_E_AUDIENCE:
		return "wrong audience";
	case TOKEN_E_CAP:
		return "unknown capability";
	case TOKEN_E_REVOKED:
		return "token revoked";
	case TOKEN_E_WIDER:
		return "request is wider than the token held";
	case TOKEN_E_KEY:
		return "invalid key";
	case TOKEN_E_KEYFILE:
		return "key file unreadable, not a regular file, or too open";
	case TOKEN_E_NOMEM:
		return "out of memory";
	case TOKEN_E_INVAL:
		return "invalid argument";
	case TOKEN_E_REVOCATION_UNKNOWN:
		return "revocation status unknown";
	}
	return "unknown error";
}

static int64_t
default_now(void *ctx)
{
	(void)ctx;
	return (int64_t)time(NULL);
}

int
token_verifier_new(
    const struct token_verifier_config *cfg, struct token_verifier **out)
{
	struct token_verifier *v;

	*out = NULL;
	if (sodium_init() < 0)
		return TOKEN_E_NOMEM;
	if (cfg->nkeys == 0 || cfg->nkeys > 64 || cfg->skew < 0 ||
	    cfg->cache_entries > (1u << 20))
		return TOKEN_E_INVAL;
	if ((v = calloc(1, sizeof(*v))) == NULL)
		return TOKEN_E_NOMEM;
	v->keys = calloc(cfg->nkeys, sizeof(*v->keys));
	v->audience = cfg->audience ? strdup(cfg->audience) : NULL;
	v->cache = cfg->cache_entries
	    ? calloc(cfg->cache_entries, sizeof(*v->cache))
	    : NULL;
	if (v->keys == NULL || (cfg->audience && v->audience == NULL) ||
	    (cfg->cache_entries && v->cache == NULL)) {
		token_verifier_free(v);
		return TOKEN_E_NOMEM;
	}
	for (size_t i = 0; i < cfg->nkeys; i++) {
		memcpy(v->keys[i].pk, cfg->keys[i].pk, 32);
		paserk_pid(
		    v->keys[i].kid, sizeof(v->keys[i].kid), v->keys[i].pk);
	}
	v->nkeys = cfg->nkeys;
	v->ncache = cfg->cache_entries;
	v->skew = cfg->skew;
	v->max_lifetime = cfg->max_lifetime;
	v->revoked = cfg->revoked;
	v->revoked_ctx = cfg->revoked_ctx;
	v->now = cfg->now ? cfg->now : default_now;
	v->now_ctx = cfg->now_ctx;
	*out = v;
	return 0;
}

void
token_verifier_free(struct token_verifier *v)
{
	if (v == NULL)
		return;
	free(v->keys);
	free(v->audience);
	free(v->cache);
	free(v);
}

void
token_verifier_stats(
    const struct token_verifier *v, uint64_t *hits, uint64_t *misses)
{
	*hits = v->hits;
	*misses = v->misses;
}

/* The footer is {"kid":"k4.pid..."} or absent (then one key must be
 * trusted). Untrusted until the signature verifies. */
static int
pick_key(const struct token_verifier *v, const char *tok, size_t len,
    const struct token_key **key)
{
	char foot[PASETO_MAX_FOOTER + 1];
	size_t flen;
	json_t *o, *kid;
	json_error_t jerr;
	int rc;

	if ((rc = paseto_v4_footer(tok, len, foot, sizeof(foot), &flen)) != 0)
		return rc;
	if (flen == 0) {
		if (v->nkeys != 1)
			return TOKEN_E_KID;
		*key = &v->keys[0];
		return 0;
	}
	o = json_loadb(foot, flen, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL || !json_is_object(o) || json_object_size(o) > 4 ||
	    (kid = json_object_get(o, "kid")) == NULL || !json_is_string(kid)) {
		json_decref(o);
		return TOKEN_E_FOOTER;
	}
	rc = TOKEN_E_KID;
	for (size_t i = 0; i < v->nkeys; i++)
		if (strcmp(v->keys[i].kid, json_string_value(kid)) == 0) {
			*key = &v->keys[i];
			rc = 0;
			break;
		}
	json_decref(o);
	return rc;
}

int
token_verify(struct token_verifier *v, const char *tok, size_t len,
    struct token_claims *claims)
{
	const struct token_key *key;
	struct cache_entry *slot = NULL;
	uint8_t h[32], *m;
	size_t mlen;
	int64_t now = v->now(v->now_ctx);
	int rc;

	if (len > PASETO_MAX_TOKEN)
		return TOKEN_E_TOO_LARGE;
	if (v->ncache > 0) {
		crypto_generichash(
		    h, sizeof(h), (const uint8_t *)tok, len, NULL, 0);
		slot = &v->cache[(h[0] | h[1] << 8 | (size_t)h[2] << 16 |
		                     (size_t)h[3] << 24) %
		    v->ncache];
		if (sodium_memcmp(slot->hash, h, sizeof(h)) == 0) {
			if (slot->claims.exp <= now - v->skew) {
				memset(slot, 0, sizeof(*slot));
			} else {
				v->hits++;
				*claims = slot->claims;
				goto revocation;
			}
		}
		v->misses++;
	}
	if ((rc = pick_key(v, tok, len, &key)) != 0)
		return rc;
	if ((rc = paseto_v4_verify(key->pk, tok, len, NULL, 0, &m, &mlen)) != 0)
		return rc;
	rc = token_claims_parse(m, mlen, claims);
	free(m);
	if (rc != 0)
		return rc;
	if ((rc = token_claims_check(
	         claims, now, v->skew, v->max_lifetime, v->audience)) != 0)
		return rc;
	if (slot != NULL) {
		memcpy(slot->hash, h, sizeof(h));
		slot->claims = *claims;
	}
revocation:
	/* Revoking a token revokes every token derived from it. */
	if (v->revoked != NULL) {
		int r = v->revoked(v->revoked_ctx, claims->jti);

		for (size_t i = 0; i < claims->nchain && r == 0; i++)
			r = v->revoked(v->revoked_ctx, claims->chain[i]);
		/* Unknown is refused too, but as a state to retry. */
		if (r != 0)
			return r < 0 ? TOKEN_E_REVOCATION_UNKNOWN
			             : TOKEN_E_REVOKED;
	}
	return 0;
}

/*
 * keep's capability tokens: PASETO v4.public carrying the claims
 *   iss sub aud iat nbf exp jti caps [sbx]
 * with times as RFC 3339 strings (UTC "Z" or an offset) and caps an array
 * of names from the capability catalogue (lib/caps.h). The footer is JSON
 * {"kid":"k4.pid..."} naming the issuer key, so keys rotate without
 * downtime: a verifier trusts several keys and picks by kid.
 *
 * A verifier checks, in order: size, format, kid, signature, JSON
 * (strict: duplicate keys, depth and key-count limits), claims, audience,
 * times (with skew), lifetime, capabilities, revocation. Verified tokens
 * are cached by their BLAKE2b hash until exp, so the signature is checked
 * once; revocation is asked again on every hit.
 *
 * Errors are TOKEN_E_* (token/token_err.h); token_strerror() names them.
 */
#ifndef KEEP_TOKEN_TOKEN_H
#define KEEP_TOKEN_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/caps.h"
#include "token/paserk.h"
#include "token/token_err.h"

#define TOKEN_STR_MAX 128 /* each string claim, NUL included */
/* A derived token names the tokens it descends from (claim "pjti", the
 * root first), so that revoking any of them revokes it: at most this many
 * generations, each jti at most TOKEN_JTI_MAX - 1 bytes. */
#define TOKEN_CHAIN_MAX 8
#define TOKEN_JTI_MAX 64

struct token_claims {
	char iss[TOKEN_STR_MAX];
	char sub[TOKEN_STR_MAX];
	char aud[TOKEN_STR_MAX];
	char jti[TOKEN_STR_MAX];
	char sbx[TOKEN_STR_MAX]; /* "" when the token is not scoped */
	int64_t iat, nbf, exp; /* seconds since the epoch */
	cap_set_t caps;
	char chain[TOKEN_CHAIN_MAX][TOKEN_JTI_MAX]; /* ancestors' jtis */
	size_t nchain;
	/* Claim "port" (1..65535), 0 when absent: a link to that port of
	 * the sandbox sbx, whose aud is TOKEN_LINK_AUD; never a bearer
	 * token (docs/architecture.md, "Ports"). */
	uint32_t port;
};

/* The audience of a link: a verifier of bearer tokens (aud "keep")
 * refuses it, the front's link verifier accepts only it. */
#define TOKEN_LINK_AUD "keep-link"

struct token_key {
	uint8_t pk[32];
	char kid[PASERK_PID_LEN + 1]; /* filled by token_verifier_new */
};

struct token_verifier_config {
	const struct token_key *keys; /* copied */
	size_t nkeys;
	const char *audience; /* required aud; NULL accepts any */
	int64_t skew; /* seconds of clock skew tolerated */
	int64_t max_lifetime; /* exp - iat at most; 0 = no limit */
	size_t cache_entries; /* 0 = no cache */
	/* Returns 1 if jti is revoked, 0 if not, -1 when it cannot be
	 * told now (TOKEN_E_REVOCATION_UNKNOWN). NULL = nothing is
	 * revoked. */
	int (*revoked)(void *ctx, const char *jti);
	void *revoked_ctx;
	/* Seconds since the epoch. NULL = time(NULL). */
	int64_t (*now)(void *ctx);
	void *now_ctx;
};

struct token_verifier;

int token_verifier_new(
    const struct token_verifier_config *cfg, struct token_verifier **out);
void token_verifier_free(struct token_verifier *v);

/* Verify a bearer token and fill *claims. Returns 0 or TOKEN_E_*. */
int token_verify(struct token_verifier *v, const char *tok, size_t len,
    struct token_claims *claims);

/* Cache statistics, for /metrics and the benchmark. */
void token_verifier_stats(
    const struct token_verifier *v, uint64_t *hits, uint64_t *misses);

/*
 * Check claims without a signature (the CLI's inspect, the front's
 * attenuation). Parses strict JSON into *claims; now/skew/max_lifetime
 * and audience as in the verifier (audience NULL accepts any).
 */
int token_claims_parse(
    const uint8_t *json, size_t len, struct token_claims *claims);
int token_claims_check(const struct token_claims *c, int64_t now, int64_t skew,
    int64_t max_lifetime, const char *audience);

/* Encode claims as the canonical JSON payload (malloc'ed, NUL-ended). */
int token_claims_encode(const struct token_claims *c, char **json);

/* Sign claims with sk; the footer names the key's k4.pid. */
int token_mint(
    const uint8_t sk[64], const struct token_claims *c, char **token);

/*
 * Attenuation: derive claims for a narrower token from verified parent
 * claims. caps must be a subset of the parent's, exp no later (0 keeps
 * the parent's), sbx either the parent's or, when the parent is not
 * scoped, any sandbox ("" keeps the parent's). A fresh jti and iat=now;
 * the child's chain is the parent's with the parent's jti appended, so
 * the verifier's revocation check covers every ancestor. Returns
 * TOKEN_E_WIDER if anything would widen, TOKEN_E_INVAL if the chain would
 * be longer than TOKEN_CHAIN_MAX or the parent's jti does not fit in it.
 */
int token_attenuate(const struct token_claims *parent, cap_set_t caps,
    int64_t exp, const char *sbx, int64_t now, struct token_claims *child);

/* RFC 3339 <-> seconds. Format writes "YYYY-MM-DDTHH:MM:SSZ". */
int token_time_parse(const char *s, size_t len, int64_t *t);
void token_time_format(char out[21], int64_t t);

/* A fresh random jti (22 base64url characters). */
void token_new_jti(char out[TOKEN_STR_MAX]);

#endif

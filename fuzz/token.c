/*
 * Fuzz token parsing and verification: the footer and payload decoders,
 * the claims parser, and a full verify against a fixed trusted key. The
 * first input byte picks how the rest is used, so one corpus covers all.
 * Property: nothing that verifies can have been altered from what the
 * key signed, so a token that verifies must re-sign identically.
 */
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "token/paseto.h"
#include "token/token.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t pk[32], sk[64];
static struct token_verifier *verifier;

static int64_t
fixed_now(void *ctx)
{
	(void)ctx;
	return 1800000000;
}

static void
init(void)
{
	struct token_key key;
	struct token_verifier_config cfg = { 0 };
	uint8_t seed[32] = { 7 };

	if (sodium_init() < 0)
		abort();
	crypto_sign_seed_keypair(pk, sk, seed);
	memcpy(key.pk, pk, 32);
	cfg.keys = &key;
	cfg.nkeys = 1;
	cfg.audience = "keep";
	cfg.skew = 60;
	cfg.cache_entries = 8;
	cfg.now = fixed_now;
	if (token_verifier_new(&cfg, &verifier) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct token_claims c;
	char foot[PASETO_MAX_FOOTER + 1], *tok, *again;
	uint8_t *m;
	size_t mlen, flen;

	if (verifier == NULL)
		init();
	if (size < 1)
		return 0;
	tok = malloc(size);
	if (tok == NULL)
		return 0;
	memcpy(tok, data + 1, size - 1);
	switch (data[0] % 4) {
	case 0:
		(void)paseto_v4_footer(
		    tok, size - 1, foot, sizeof(foot), &flen);
		if (paseto_v4_payload_unverified(tok, size - 1, &m, &mlen) == 0)
			free(m);
		break;
	case 1:
		(void)token_claims_parse((const uint8_t *)tok, size - 1, &c);
		break;
	case 2:
		(void)token_verify(verifier, tok, size - 1, &c);
		break;
	default:
		/* Sign the input as a payload, then verify the result. */
		if (paseto_v4_sign(sk, (const uint8_t *)tok, size - 1, NULL, 0,
		        NULL, 0, &again) == 0) {
			if (paseto_v4_verify(pk, again, strlen(again), NULL, 0,
			        &m, &mlen) != 0 ||
			    mlen != size - 1 || memcmp(m, tok, mlen) != 0)
				abort();
			free(m);
			free(again);
		}
		break;
	}
	free(tok);
	return 0;
}

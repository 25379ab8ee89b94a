/*
 * bench/token: signings per second, and verifications per second with
 * and without the verified-token cache, on the same token. The raw
 * Ed25519 verify of libsodium is printed beside them as the floor.
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "token/paseto.h"
#include "token/token.h"

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
report(const char *what, long n, double secs)
{
	printf(
	    "%-34s %10.0f /s  %8.2f us each\n", what, n / secs, secs * 1e6 / n);
}

int
main(void)
{
	struct token_claims c, out;
	struct token_key key;
	struct token_verifier_config cfg = { 0 };
	struct token_verifier *cached, *uncached;
	uint8_t sk[64], sig[64], msg[256];
	char *tok;
	const long n = 20000;
	double t;

	if (sodium_init() < 0)
		return 1;
	crypto_sign_keypair(key.pk, sk);
	memset(&c, 0, sizeof(c));
	strlcpy(c.sub, "agent-b", sizeof(c.sub));
	strlcpy(c.aud, "keep", sizeof(c.aud));
	c.iat = time(NULL);
	c.exp = c.iat + 3600;
	c.caps = CAP_BIT(CAP_EXEC) | CAP_BIT(CAP_ARTIFACT_READ);
	token_new_jti(c.jti);
	cfg.keys = &key;
	cfg.nkeys = 1;
	cfg.audience = "keep";
	cfg.skew = 60;
	if (token_verifier_new(&cfg, &uncached) != 0)
		return 1;
	cfg.cache_entries = 4096;
	if (token_verifier_new(&cfg, &cached) != 0)
		return 1;

	t = now_s();
	for (long i = 0; i < n; i++) {
		if (token_mint(sk, &c, &tok) != 0)
			return 1;
		if (i < n - 1)
			free(tok);
	}
	report("token_mint (sign)", n, now_s() - t);

	t = now_s();
	for (long i = 0; i < n; i++)
		if (token_verify(uncached, tok, strlen(tok), &out) != 0)
			return 1;
	report("token_verify, no cache", n, now_s() - t);

	t = now_s();
	for (long i = 0; i < n * 50; i++)
		if (token_verify(cached, tok, strlen(tok), &out) != 0)
			return 1;
	report("token_verify, cached", n * 50, now_s() - t);

	memset(msg, 1, sizeof(msg));
	crypto_sign_detached(sig, NULL, msg, sizeof(msg), sk);
	t = now_s();
	for (long i = 0; i < n; i++)
		if (crypto_sign_verify_detached(sig, msg, sizeof(msg), key.pk))
			return 1;
	report("baseline: bare Ed25519 verify", n, now_s() - t);
	free(tok);
	token_verifier_free(cached);
	token_verifier_free(uncached);
	return 0;
}

/* Tokens: the official PASETO v4 and PASERK k4 vectors, claims, the
 * verifier (kid selection, cache, revocation), attenuation, bad input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <sodium.h>

#include "token/paseto.h"
#include "token/token.h"

static json_t *
load_tests(const char *path)
{
	json_error_t e;
	json_t *root = json_load_file(path, 0, &e);

	if (root == NULL)
		fail_msg("%s: %s", path, e.text);
	return root;
}

static void
hex(const char *s, uint8_t *out, size_t n)
{
	size_t got;

	assert_int_equal(
	    sodium_hex2bin(out, n, s, strlen(s), NULL, &got, NULL), 0);
	assert_int_equal(got, n);
}

static const char *
str(json_t *t, const char *k)
{
	json_t *v = json_object_get(t, k);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

static void
test_paseto_vectors(void **state)
{
	json_t *root = load_tests("tests/vectors/paseto-v4.json");
	json_t *t;
	size_t i;
	int public_ok = 0, refused = 0;

	(void)state;
	json_array_foreach(json_object_get(root, "tests"), i, t)
	{
		const char *name = str(t, "name"), *tok = str(t, "token");
		const char *pkhex = str(t, "public-key"), *f = str(t, "footer");
		const char *ia = str(t, "implicit-assertion");
		int fail_expected =
		    json_is_true(json_object_get(t, "expect-fail"));
		uint8_t pk[32], sk[64], *m;
		size_t mlen;
		char *signed_tok;
		int rc;

		if (pkhex == NULL) { /* v4.local: no public key; use zeros */
			memset(pk, 0, sizeof(pk));
		} else {
			hex(pkhex, pk, 32);
		}
		rc = paseto_v4_verify(pk, tok, strlen(tok), (const uint8_t *)ia,
		    strlen(ia), &m, &mlen);
		if (!fail_expected && strncmp(tok, "v4.public.", 10) == 0) {
			const char *payload = str(t, "payload");
			assert_int_equal(rc, 0);
			assert_int_equal(mlen, strlen(payload));
			assert_memory_equal(m, payload, mlen);
			free(m);
			/* Ed25519 is deterministic: signing gives the token. */
			hex(str(t, "secret-key"), sk, 64);
			assert_int_equal(
			    paseto_v4_sign(sk, (const uint8_t *)payload,
			        strlen(payload), (const uint8_t *)f, strlen(f),
			        (const uint8_t *)ia, strlen(ia), &signed_tok),
			    0);
			assert_string_equal(signed_tok, tok);
			free(signed_tok);
			public_ok++;
		} else {
			if (rc == 0)
				fail_msg(
				    "%s verified but must be refused", name);
			refused++;
		}
	}
	assert_int_equal(public_ok, 3);
	assert_int_equal(refused, 14);
	json_decref(root);
}

static void
test_paserk_vectors(void **state)
{
	static const char *const files[] = {
		"tests/vectors/paserk/k4.public.json",
		"tests/vectors/paserk/k4.secret.json",
		"tests/vectors/paserk/k4.pid.json"
	};

	(void)state;
	for (size_t f = 0; f < 3; f++) {
		json_t *root = load_tests(files[f]), *t;
		size_t i;

		json_array_foreach(json_object_get(root, "tests"), i, t)
		{
			const char *key = str(t, "key"),
			           *want = str(t, "paserk");
			int fail_expected =
			    json_is_true(json_object_get(t, "expect-fail"));
			size_t keylen = strlen(key) / 2;
			uint8_t k[64], back[64];
			char out[128];

			if (fail_expected) {
				/* Our encoders take fixed-size keys, so build
				 * the PASERK text such a key would give and
				 * check that the decoder refuses it. */
				uint8_t raw[128];
				char text[256];
				const char *pfx =
				    f == 1 ? "k4.secret." : "k4.public.";
				assert_true(keylen <= sizeof(raw));
				hex(key, raw, keylen);
				strlcpy(text, pfx, sizeof(text));
				b64url_encode(
				    text + 10, sizeof(text) - 10, raw, keylen);
				if (f == 1)
					assert_int_not_equal(
					    paserk_secret_decode(
					        k, text, strlen(text)),
					    0);
				else
					assert_int_not_equal(
					    paserk_public_decode(
					        k, text, strlen(text)),
					    0);
				continue;
			}
			hex(key, k, keylen);
			if (f == 0) {
				paserk_public_encode(out, sizeof(out), k);
				assert_string_equal(out, want);
				assert_int_equal(paserk_public_decode(
				                     back, want, strlen(want)),
				    0);
				assert_memory_equal(back, k, 32);
			} else if (f == 1) {
				paserk_secret_encode(out, sizeof(out), k);
				assert_string_equal(out, want);
				assert_int_equal(paserk_secret_decode(
				                     back, want, strlen(want)),
				    0);
				assert_memory_equal(back, k, 64);
			} else {
				paserk_pid(out, sizeof(out), k);
				assert_string_equal(out, want);
			}
		}
		json_decref(root);
	}
}

static void
test_paserk_refusals(void **state)
{
	uint8_t pk[32], sk[64], pk2[32];
	char s[128];

	(void)state;
	crypto_sign_keypair(pk, sk);
	paserk_public_encode(s, sizeof(s), pk);
	assert_int_equal(paserk_public_decode(pk2, s, strlen(s)), 0);
	/* Wrong version, wrong type, short, long, padded, bad alphabet. */
	s[1] = '3';
	assert_int_equal(
	    paserk_public_decode(pk2, s, strlen(s)), TOKEN_E_VERSION);
	s[1] = '4';
	assert_int_equal(
	    paserk_public_decode(pk2, s, strlen(s) - 1), TOKEN_E_KEY);
	assert_int_not_equal(paserk_secret_decode(sk, s, strlen(s)), 0);
	strcat(s, "=");
	assert_int_not_equal(paserk_public_decode(pk2, s, strlen(s)), 0);
	s[strlen(s) - 1] = '\0';
	s[20] = '+';
	assert_int_equal(
	    paserk_public_decode(pk2, s, strlen(s)), TOKEN_E_BASE64);
	/* A secret key whose public half is not the seed's. */
	crypto_sign_keypair(pk, sk);
	sk[40] ^= 1;
	paserk_secret_encode(s, sizeof(s), sk);
	assert_int_equal(paserk_secret_decode(sk, s, strlen(s)), TOKEN_E_KEY);
}

static void
test_base64_strict(void **state)
{
	uint8_t out[8];
	size_t n;

	(void)state;
	assert_int_equal(b64url_decode(out, sizeof(out), &n, "AAE", 3), 0);
	assert_int_equal(n, 2);
	/* Non-canonical: the unused low bits of the last character set. */
	assert_int_equal(b64url_decode(out, sizeof(out), &n, "AAF", 3), -1);
	assert_int_equal(b64url_decode(out, sizeof(out), &n, "AAE=", 4), -1);
	assert_int_equal(b64url_decode(out, sizeof(out), &n, "A", 1), -1);
	assert_int_equal(b64url_decode(out, sizeof(out), &n, "AA/E", 4), -1);
}

/* A verifier over two keys with a settable clock and a revocation list. */
static int64_t fake_now = 1800000000;
static const char *revoked_jti;
static int revocation_unknown; /* the revocation set cannot answer */

static int64_t
clock_fn(void *ctx)
{
	(void)ctx;
	return fake_now;
}

static int
revoked_fn(void *ctx, const char *jti)
{
	(void)ctx;
	if (revocation_unknown)
		return -1;
	return revoked_jti != NULL && strcmp(jti, revoked_jti) == 0;
}

struct fixture {
	uint8_t sk[2][64];
	struct token_verifier *v;
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct token_key keys[2];
	struct token_verifier_config cfg = { 0 };

	for (int i = 0; i < 2; i++) {
		crypto_sign_keypair(keys[i].pk, fx->sk[i]);
	}
	cfg.keys = keys;
	cfg.nkeys = 2;
	cfg.audience = "keep";
	cfg.skew = 30;
	cfg.max_lifetime = 86400;
	cfg.cache_entries = 64;
	cfg.revoked = revoked_fn;
	cfg.now = clock_fn;
	assert_int_equal(token_verifier_new(&cfg, &fx->v), 0);
	fake_now = 1800000000;
	revoked_jti = NULL;
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	token_verifier_free(fx->v);
	free(fx);
	return 0;
}

static void
claims_for(struct token_claims *c, const char *sub)
{
	memset(c, 0, sizeof(*c));
	strlcpy(c->sub, sub, sizeof(c->sub));
	strlcpy(c->aud, "keep", sizeof(c->aud));
	strlcpy(c->iss, "keep", sizeof(c->iss));
	c->iat = fake_now;
	c->exp = fake_now + 3600;
	c->caps = CAP_BIT(CAP_ARTIFACT_READ) | CAP_BIT(CAP_EXEC);
	token_new_jti(c->jti);
}

static int
verify_str(struct fixture *fx, const char *tok, struct token_claims *out)
{
	return token_verify(fx->v, tok, strlen(tok), out);
}

static void
test_verifier_claims(void **state)
{
	struct fixture *fx = *state;
	struct token_claims c, got;
	char *tok;
	uint64_t hits, misses;

	claims_for(&c, "agent-b");
	strlcpy(c.sbx, "sbx-1", sizeof(c.sbx));
	/* Either trusted key verifies, chosen by kid. */
	for (int k = 0; k < 2; k++) {
		assert_int_equal(token_mint(fx->sk[k], &c, &tok), 0);
		assert_int_equal(verify_str(fx, tok, &got), 0);
		assert_string_equal(got.sub, "agent-b");
		assert_string_equal(got.sbx, "sbx-1");
		assert_int_equal(got.caps, c.caps);
		assert_int_equal(got.exp, c.exp);
		/* Second time from the cache, same answer. */
		assert_int_equal(verify_str(fx, tok, &got), 0);
		assert_string_equal(got.jti, c.jti);
		free(tok);
	}
	token_verifier_stats(fx->v, &hits, &misses);
	assert_int_equal(hits, 2);
	assert_int_equal(misses, 2);

	/* Revocation applies to cached tokens too. */
	assert_int_equal(token_mint(fx->sk[0], &c, &tok), 0);
	assert_int_equal(verify_str(fx, tok, &got), 0);
	revoked_jti = c.jti;
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_REVOKED);
	revoked_jti = NULL;
	/* A set that cannot answer refuses, as a state to retry. */
	revocation_unknown = 1;
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_REVOCATION_UNKNOWN);
	revocation_unknown = 0;
	assert_int_equal(verify_str(fx, tok, &got), 0);
	/* Expiry, with skew, also for a cached token. */
	fake_now = c.exp + 29;
	assert_int_equal(verify_str(fx, tok, &got), 0);
	fake_now = c.exp + 31;
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_EXPIRED);
	free(tok);
}

static void
test_verifier_refusals(void **state)
{
	struct fixture *fx = *state;
	struct token_claims c, got;
	uint8_t pk[32], stranger[64];
	char *tok, *json, buf[1024];

	claims_for(&c, "agent-a");
	/* Unknown key. */
	crypto_sign_keypair(pk, stranger);
	assert_int_equal(token_mint(stranger, &c, &tok), 0);
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_KID);
	free(tok);
	/* Not yet valid, lifetime too long, wrong audience. */
	claims_for(&c, "agent-a");
	c.nbf = fake_now + 600;
	assert_int_equal(token_mint(fx->sk[0], &c, &tok), 0);
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_NOT_YET);
	free(tok);
	claims_for(&c, "agent-a");
	c.exp = fake_now + 2 * 86400;
	assert_int_equal(token_mint(fx->sk[0], &c, &tok), 0);
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_LIFETIME);
	free(tok);
	claims_for(&c, "agent-a");
	strlcpy(c.aud, "other", sizeof(c.aud));
	assert_int_equal(token_mint(fx->sk[0], &c, &tok), 0);
	assert_int_equal(verify_str(fx, tok, &got), TOKEN_E_AUDIENCE);
	/* Every single-character change is refused. */
	claims_for(&c, "agent-a");
	free(tok);
	assert_int_equal(token_mint(fx->sk[0], &c, &tok), 0);
	for (size_t i = 0; i < strlen(tok); i++) {
		char saved = tok[i];
		tok[i] = tok[i] == 'A' ? 'B' : 'A';
		assert_int_not_equal(verify_str(fx, tok, &got), 0);
		tok[i] = saved;
	}
	/* Truncation at every length. */
	for (size_t n = 0; n < strlen(tok); n++)
		assert_int_not_equal(token_verify(fx->v, tok, n, &got), 0);
	free(tok);
	/* Payloads signed by a trusted key but not valid claims. */
	static const char *const bad[] = {
		"{\"sub\":\"a\",\"sub\":\"b\",\"aud\":\"keep\",\"jti\":\"j\","
		"\"exp\":\"2027-01-15T08:00:00Z\",\"caps\":[]}",
		"{\"sub\":\"a\",\"aud\":\"keep\",\"jti\":\"j\","
		"\"exp\":\"2027-01-15T08:00:00Z\",\"caps\":[\"root:all\"]}",
		"{\"sub\":\"a\",\"aud\":\"keep\",\"jti\":\"j\",\"caps\":[]}",
		"{\"sub\":\"a\",\"aud\":\"keep\",\"jti\":\"j\","
		"\"exp\":1800003600,\"caps\":[]}",
		"[1,2,3]",
		"{\"sub\":\"a\",\"aud\":\"keep\",\"jti\":\"j\","
		"\"exp\":\"2027-01-15T08:00:00Z\",\"caps\":[],"
		"\"x\":[[[[[1]]]]]}",
		"{\"sub\":",
	};
	static const int want[] = { TOKEN_E_JSON, TOKEN_E_CAP, TOKEN_E_CLAIM,
		TOKEN_E_CLAIM, TOKEN_E_JSON, TOKEN_E_JSON, TOKEN_E_JSON };
	char pid[PASERK_PID_LEN + 1], foot[128];
	paserk_pid(pid, sizeof(pid), fx->sk[0] + 32);
	snprintf(foot, sizeof(foot), "{\"kid\":\"%s\"}", pid);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(
		    paseto_v4_sign(fx->sk[0], (const uint8_t *)bad[i],
		        strlen(bad[i]), (const uint8_t *)foot, strlen(foot),
		        NULL, 0, &tok),
		    0);
		assert_int_equal(verify_str(fx, tok, &got), want[i]);
		free(tok);
	}
	/* Oversized. */
	memset(buf, 'A', sizeof(buf));
	assert_int_equal(token_verify(fx->v, buf, PASETO_MAX_TOKEN + 1, &got),
	    TOKEN_E_TOO_LARGE);
	(void)json;
}

static void
test_attenuation(void **state)
{
	struct token_claims parent, child;

	(void)state;
	claims_for(&parent, "agent-b");
	assert_int_equal(token_attenuate(&parent, CAP_BIT(CAP_EXEC), 0, "sbx-9",
	                     fake_now, &child),
	    0);
	assert_int_equal(child.caps, CAP_BIT(CAP_EXEC));
	assert_string_equal(child.sbx, "sbx-9");
	assert_int_equal(child.exp, parent.exp);
	assert_string_not_equal(child.jti, parent.jti);
	/* Never wider: more caps, later expiry, another sandbox. */
	assert_int_equal(token_attenuate(&parent, CAP_BIT(CAP_ADMIN), 0, NULL,
	                     fake_now, &child),
	    TOKEN_E_WIDER);
	assert_int_equal(token_attenuate(&parent, parent.caps, parent.exp + 1,
	                     NULL, fake_now, &child),
	    TOKEN_E_WIDER);
	strlcpy(parent.sbx, "sbx-1", sizeof(parent.sbx));
	assert_int_equal(
	    token_attenuate(&parent, parent.caps, 0, "sbx-2", fake_now, &child),
	    TOKEN_E_WIDER);
}

/* Revoking a token revokes every token derived from it, at any depth,
 * also when the derived token is in the verifier's cache. */
static void
test_revocation_cascades(void **state)
{
	struct fixture *fx = *state;
	struct token_claims root, child, grandchild, got;
	char *tok_child, *tok_grand;
	int i;

	claims_for(&root, "agent-b");
	assert_int_equal(token_attenuate(&root, CAP_BIT(CAP_EXEC), 0, "sbx-1",
	                     fake_now, &child),
	    0);
	assert_int_equal(child.nchain, 1);
	assert_string_equal(child.chain[0], root.jti);
	assert_int_equal(token_attenuate(&child, CAP_BIT(CAP_EXEC), 0, NULL,
	                     fake_now, &grandchild),
	    0);
	assert_int_equal(grandchild.nchain, 2);
	assert_int_equal(token_mint(fx->sk[0], &child, &tok_child), 0);
	assert_int_equal(token_mint(fx->sk[0], &grandchild, &tok_grand), 0);
	/* The chain survives the wire; both verify (and are cached). */
	assert_int_equal(verify_str(fx, tok_grand, &got), 0);
	assert_int_equal(got.nchain, 2);
	assert_string_equal(got.chain[0], root.jti);
	assert_string_equal(got.chain[1], child.jti);
	assert_int_equal(verify_str(fx, tok_child, &got), 0);
	/* The root revoked: both descendants are refused. */
	revoked_jti = root.jti;
	assert_int_equal(verify_str(fx, tok_child, &got), TOKEN_E_REVOKED);
	assert_int_equal(verify_str(fx, tok_grand, &got), TOKEN_E_REVOKED);
	/* The middle one revoked: its child too, not its parent. */
	revoked_jti = child.jti;
	assert_int_equal(verify_str(fx, tok_grand, &got), TOKEN_E_REVOKED);
	revoked_jti = grandchild.jti;
	assert_int_equal(verify_str(fx, tok_child, &got), 0);
	revoked_jti = NULL;
	free(tok_child);
	free(tok_grand);
	/* The chain is bounded. */
	for (i = 0; i < TOKEN_CHAIN_MAX; i++) {
		assert_int_equal(token_attenuate(&root, root.caps, 0, NULL,
		                     fake_now, &child),
		    0);
		root = child;
	}
	assert_int_equal(
	    token_attenuate(&root, root.caps, 0, NULL, fake_now, &child),
	    TOKEN_E_INVAL);
}

static void
test_times(void **state)
{
	int64_t t;
	char out[21];

	(void)state;
	assert_int_equal(
	    token_time_parse("2022-01-01T00:00:00+00:00", 25, &t), 0);
	assert_int_equal(t, 1640995200);
	assert_int_equal(
	    token_time_parse("2022-01-01T01:00:00+01:00", 25, &t), 0);
	assert_int_equal(t, 1640995200);
	assert_int_equal(
	    token_time_parse("2022-01-01T00:00:00.123Z", 24, &t), 0);
	token_time_format(out, 1640995200);
	assert_string_equal(out, "2022-01-01T00:00:00Z");
	assert_int_not_equal(
	    token_time_parse("2022-13-01T00:00:00Z", 20, &t), 0);
	assert_int_not_equal(
	    token_time_parse("2022-02-30T00:00:00Z", 20, &t), 0);
	assert_int_not_equal(
	    token_time_parse("2022-01-01 00:00:00Z", 20, &t), 0);
	assert_int_not_equal(
	    token_time_parse("2022-01-01T00:00:00", 19, &t), 0);
}

/* A link's claim "port": 1..65535, only with sbx; encoded and parsed back. */
static void
test_link_port_claim(void **state)
{
	static const char *const bad[] = {
		"{\"sub\":\"a\",\"aud\":\"keep-link\",\"jti\":\"j\","
		"\"exp\":\"2030-01-01T00:00:00Z\",\"caps\":[],\"port\":8000}",
		"{\"sub\":\"a\",\"aud\":\"keep-link\",\"jti\":\"j\","
		"\"exp\":\"2030-01-01T00:00:00Z\",\"caps\":[],\"sbx\":\"s\","
		"\"port\":0}",
		"{\"sub\":\"a\",\"aud\":\"keep-link\",\"jti\":\"j\","
		"\"exp\":\"2030-01-01T00:00:00Z\",\"caps\":[],\"sbx\":\"s\","
		"\"port\":65536}",
		"{\"sub\":\"a\",\"aud\":\"keep-link\",\"jti\":\"j\","
		"\"exp\":\"2030-01-01T00:00:00Z\",\"caps\":[],\"sbx\":\"s\","
		"\"port\":\"8000\"}",
	};
	struct token_claims c, back;
	char *json;

	(void)state;
	memset(&c, 0, sizeof(c));
	strcpy(c.sub, "alice");
	strcpy(c.aud, TOKEN_LINK_AUD);
	strcpy(c.jti, "j1");
	strcpy(c.sbx, "sbx-1");
	c.exp = 1900000000;
	c.caps = CAP_BIT(CAP_SANDBOX_READ);
	c.port = 8000;
	assert_int_equal(token_claims_encode(&c, &json), 0);
	assert_non_null(strstr(json, "\"port\":8000"));
	assert_int_equal(
	    token_claims_parse((const uint8_t *)json, strlen(json), &back), 0);
	assert_int_equal(back.port, 8000);
	assert_string_equal(back.sbx, "sbx-1");
	free(json);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(token_claims_parse((const uint8_t *)bad[i],
		                     strlen(bad[i]), &back),
		    TOKEN_E_CLAIM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_paseto_vectors),
		cmocka_unit_test(test_paserk_vectors),
		cmocka_unit_test(test_paserk_refusals),
		cmocka_unit_test(test_base64_strict),
		cmocka_unit_test_setup_teardown(
		    test_verifier_claims, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_verifier_refusals, setup, teardown),
		cmocka_unit_test(test_attenuation),
		cmocka_unit_test_setup_teardown(
		    test_revocation_cascades, setup, teardown),
		cmocka_unit_test(test_times),
		cmocka_unit_test(test_link_port_claim),
	};
	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for secrets injected at egress (host/egress/inject.c,
 * host/egress/appca.c, the policy's binding in policy/hooks.c): the
 * grant target, placeholders, the request head's check and rewrite
 * (each refusal), the body length, the streaming scanner, the
 * appliance CA's leaves, and the policy language's `inject` clause.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "host/egress/appca.h"
#include "host/egress/inject.h"
#include "host/grant.h"
#include "host/msg.h"
#include "lib/caps.h"
#include "policy/policy.h"
#include "policy/policy_hooks.h"

#define PH "keep-placeholder-gh-0123456789abcdef0123456789abcdef"
#define VAL "s3cr3t-value"

static const struct egress_inject inj = { "api.example.test", 443,
	"Authorization", PH, (const uint8_t *)VAL, sizeof(VAL) - 1 };

/* Run egress_inject_head on s; returns the code, *out the rewrite. */
static int
head(const struct egress_inject *in, const char *s, char **out,
    unsigned *replaced)
{
	uint8_t *o = NULL;
	size_t ol = 0;
	const char *why = NULL;
	int rc;

	rc = egress_inject_head(
	    in, (const uint8_t *)s, strlen(s), &o, &ol, replaced, &why);
	assert_non_null(why);
	if (rc == EGRESS_INJECT_OK) {
		assert_non_null(o);
		*out = strndup((char *)o, ol);
		free(o);
	} else {
		assert_null(o);
		assert_true(why[0] != '\0');
		*out = NULL;
	}
	return rc;
}

static void
test_target(void **state)
{
	char buf[EGRESS_INJECT_TARGET_MAX];

	(void)state;
	assert_int_equal(egress_grant_target_inject("api.github.com", 443, 0, 1,
	                     "github-token", "Authorization", buf, sizeof(buf)),
	    0);
	assert_string_equal(buf,
	    "api.github.com:443 private inject github-token as authorization");
	assert_int_equal(egress_grant_target_inject("a.test", 443, 0, 0, "x",
	                     "Bad Header", buf, sizeof(buf)),
	    EGRESS_INJECT_ARG);
	assert_int_equal(egress_grant_target_inject("a.test", 443, 0, 0, "",
	                     "Authorization", buf, sizeof(buf)),
	    EGRESS_INJECT_ARG);
	assert_int_equal(egress_grant_target_inject("a.test", 443, 0, 0, "x",
	                     "Authorization", buf, 10),
	    EGRESS_INJECT_ARG);
}

static void
test_placeholder(void **state)
{
	uint8_t r[16] = { 0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01,
		0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef };
	char out[EGRESS_PLACEHOLDER_MAX];

	(void)state;
	assert_int_equal(egress_placeholder_make("gh", r, out, sizeof(out)), 0);
	assert_string_equal(out, PH);
	assert_int_equal(egress_placeholder_make("", r, out, sizeof(out)), -1);
	assert_int_equal(egress_placeholder_make("gh", r, out, 20), -1);
}

static void
test_head_ok(void **state)
{
	unsigned n;
	char *o;

	(void)state;
	assert_int_equal(
	    head(&inj,
	        "GET /repos?x=1 HTTP/1.1\r\nHost: api.example.test\r\n"
	        "authorization: Bearer " PH "\r\n"
	        "Connection: keep-alive\r\nKeep-Alive: 5\r\n"
	        "Accept: */*\r\n\r\n",
	        &o, &n),
	    EGRESS_INJECT_OK);
	assert_int_equal(n, 1);
	assert_string_equal(o,
	    "GET /repos?x=1 HTTP/1.1\r\nHost: api.example.test\r\n"
	    "authorization: Bearer " VAL "\r\nAccept: */*\r\n"
	    "Connection: close\r\n\r\n");
	free(o);
	/* Twice in the header, Host with its port, HTTP/1.0, OPTIONS *. */
	assert_int_equal(
	    head(&inj,
	        "OPTIONS * HTTP/1.0\r\nHost: API.example.test:443\r\n"
	        "Authorization: " PH " " PH "\r\n\r\n",
	        &o, &n),
	    EGRESS_INJECT_OK);
	assert_int_equal(n, 2);
	assert_non_null(strstr(o, "Authorization: " VAL " " VAL "\r\n"));
	free(o);
	/* No placeholder at all: relayed as is. */
	assert_int_equal(
	    head(&inj, "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\n", &o,
	        &n),
	    EGRESS_INJECT_OK);
	assert_int_equal(n, 0);
	free(o);
}

static void
test_head_refused(void **state)
{
	static const struct {
		const char *head;
		int rc;
	} bad[] = {
		/* the placeholder elsewhere */
		{ "GET /?t=" PH " HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nX-T: " PH
		  "\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nConnection: " PH
		  "\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		/* another secret's, or another run's, placeholder */
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: "
		  "keep-placeholder-other-"
		  "00000000000000000000000000000000\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nAuthorization: "
		  "keep-placeholder-gh-"
		  "ffffffffffffffffffffffffffffffff\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		{ "GET / HTTP/1.1\r\nHost: "
		  "api.example.test\r\nAuthorization: " PH
		  "keep-placeholder-\r\n\r\n",
		    EGRESS_INJECT_PLACEHOLDER },
		/* Host */
		{ "GET / HTTP/1.1\r\nAuthorization: " PH "\r\n\r\n",
		    EGRESS_INJECT_HOST },
		{ "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		    EGRESS_INJECT_HOST },
		{ "GET / HTTP/1.1\r\nHost: api.example.test:444\r\n\r\n",
		    EGRESS_INJECT_HOST },
		{ "GET / HTTP/1.1\r\nHost: api.example.test.evil\r\n\r\n",
		    EGRESS_INJECT_HOST },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nHost: "
		  "api.example.test\r\n\r\n",
		    EGRESS_INJECT_HOST },
		/* not HTTP/1.1 as we parse it */
		{ "GET http://evil.test/ HTTP/1.1\r\nHost: "
		  "api.example.test\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET / HTTP/2\r\nHost: api.example.test\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET  / HTTP/1.1\r\nHost: api.example.test\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\n folded\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET / HTTP/1.1\r\nHost : api.example.test\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\nX: a\nb\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
		{ "GET / HTTP/1.1\r\nHost: api.example.test\r\n\r\nextra",
		    EGRESS_INJECT_MALFORMED },
		{ "\r\n\r\n", EGRESS_INJECT_MALFORMED },
		/* malformed after a substitution (found by the fuzzer) */
		{ "GET / HTTP/1.1\r\nHost: "
		  "api.example.test\r\nAuthorization: " PH
		  "\r\nConnect\xcc: x\r\n\r\n",
		    EGRESS_INJECT_MALFORMED },
	};
	unsigned n;
	size_t i;
	char *o;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(head(&inj, bad[i].head, &o, &n), bad[i].rc);
	}
}

static void
test_head_limits(void **state)
{
	struct egress_inject crlf = inj;
	char *big, *o;
	unsigned n;
	size_t off, i;

	(void)state;
	/* A value that would split the header is never written. */
	crlf.value = (const uint8_t *)"a\r\nX-Evil: 1";
	crlf.value_len = 13;
	assert_int_equal(head(&crlf,
	                     "GET / HTTP/1.1\r\nHost: api.example.test\r\n"
	                     "Authorization: " PH "\r\n\r\n",
	                     &o, &n),
	    EGRESS_INJECT_VALUE);
	/* Over 100 headers, and over the size. */
	big = malloc(EGRESS_INJECT_HEAD_MAX + 64);
	assert_non_null(big);
	off = (size_t)sprintf(
	    big, "GET / HTTP/1.1\r\nHost: api.example.test\r\n");
	for (i = 0; i < 100; i++)
		off += (size_t)sprintf(big + off, "X-%zu: y\r\n", i);
	strcpy(big + off, "\r\n");
	assert_int_equal(head(&inj, big, &o, &n), EGRESS_INJECT_TOO_LARGE);
	memset(big, 'a', EGRESS_INJECT_HEAD_MAX + 10);
	memcpy(big + EGRESS_INJECT_HEAD_MAX + 6, "\r\n\r\n", 5);
	assert_int_equal(head(&inj, big, &o, &n), EGRESS_INJECT_TOO_LARGE);
	free(big);
}

static void
test_content_length(void **state)
{
	uint64_t cl = 0;
	const char *h;

	(void)state;
	h = "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    1);
	assert_int_equal(cl, 12);
	h = "POST / HTTP/1.1\r\nContent-Length: 12\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    0);
	h = "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    0);
	h = "POST / HTTP/1.1\r\nContent-Length: 1x\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    0);
	h = "POST / HTTP/1.1\r\nContent-Length: "
	    "99999999999999999999999\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    0);
	h = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	assert_int_equal(
	    egress_inject_content_length((const uint8_t *)h, strlen(h), &cl),
	    0);
}

static void
test_scan(void **state)
{
	static const char s[] = "xx keep-placeholder-abc";
	struct egress_marker_scan a = { 0, 0 };
	size_t i;

	(void)state;
	/* Split at every byte. */
	for (i = 0; i < 3 + EGRESS_INJECT_MARKER_LEN; i++) {
		memset(&a, 0, sizeof(a));
		assert_int_equal(
		    egress_marker_scan(&a, (const uint8_t *)s, i), 0);
		assert_int_equal(egress_marker_scan(
		                     &a, (const uint8_t *)s + i, strlen(s) - i),
		    1);
	}
	memset(&a, 0, sizeof(a));
	assert_int_equal(
	    egress_marker_scan(
	        &a, (const uint8_t *)"kkeep-placeholdekeep-placeholder-", 33),
	    1);
	memset(&a, 0, sizeof(a));
	assert_int_equal(
	    egress_marker_scan(&a, (const uint8_t *)"keep-placeholder", 16), 0);
	assert_int_equal(egress_marker_scan(&a, (const uint8_t *)"_", 1), 0);
	assert_int_equal(egress_marker_scan(&a, (const uint8_t *)"-", 1), 0);
}

static void
test_appca(void **state)
{
	char dir[] = "/tmp/keep-appca-XXXXXX", kp[64], cp[64];
	char *cert = NULL, *key = NULL, *ca = NULL, *cak = NULL;
	size_t cl, kl;
	FILE *f;
	struct stat st;
	X509 *leaf, *root;
	X509_STORE *store;
	X509_STORE_CTX *vctx;
	BIO *b;
	long n;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(kp, sizeof(kp), "%s/ca.key", dir);
	snprintf(cp, sizeof(cp), "%s/ca.pem", dir);
	assert_int_equal(egress_appca_ensure(kp, cp), 0);
	assert_int_equal(stat(kp, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(cp, &st), 0);
	/* Made once: a second call keeps the files. */
	assert_int_equal(egress_appca_ensure(kp, cp), 0);
	f = fopen(cp, "r");
	assert_non_null(f);
	ca = calloc(1, 8192);
	n = (long)fread(ca, 1, 8191, f);
	fclose(f);
	f = fopen(kp, "r");
	assert_non_null(f);
	cak = calloc(1, 8192);
	kl = fread(cak, 1, 8191, f);
	fclose(f);
	assert_int_equal(egress_appca_check(ca, (size_t)n, cak, kl), 0);
	{
		/* A name longer than a CN may be: in the SAN only. */
		char longname[200];
		char *lc = NULL, *lk = NULL;
		size_t lcl, lkl;

		memset(longname, 'a', 150);
		strcpy(longname + 150, ".example.test");
		assert_int_equal(egress_appca_leaf(ca, (size_t)n, cak, kl,
		                     longname, &lc, &lcl, &lk, &lkl),
		    0);
		free(lc);
		free(lk);
	}
	assert_int_equal(egress_appca_leaf(ca, (size_t)n, cak, kl,
	                     "api.example.test", &cert, &cl, &key, &kl),
	    0);
	/* The leaf verifies to the CA for its name, and no other. */
	b = BIO_new_mem_buf(cert, (int)cl);
	leaf = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	b = BIO_new_mem_buf(ca, (int)n);
	root = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	assert_non_null(leaf);
	assert_non_null(root);
	store = X509_STORE_new();
	X509_STORE_add_cert(store, root);
	vctx = X509_STORE_CTX_new();
	X509_STORE_CTX_init(vctx, store, leaf, NULL);
	assert_int_equal(X509_verify_cert(vctx), 1);
	assert_int_equal(
	    X509_check_host(leaf, "api.example.test", 0, 0, NULL), 1);
	assert_int_not_equal(X509_check_host(leaf, "evil.test", 0, 0, NULL), 1);
	X509_STORE_CTX_free(vctx);
	X509_STORE_free(store);
	X509_free(leaf);
	X509_free(root);
	free(cert);
	free(key);
	free(ca);
	free(cak);
	/* One file without the other: refused, not overwritten. */
	unlink(cp);
	assert_int_equal(egress_appca_ensure(kp, cp), -1);
	assert_int_equal(stat(cp, &st), -1);
	unlink(kp);
	rmdir(dir);
}

/* The policy: the clause compiles, binds the grant's target and the
 * secret's egress flag; errors where it cannot apply. */
static void
test_policy(void **state)
{
	static const char text[] =
	    "agent \"dev\" {\n"
	    "\tallow exec\n"
	    "\tsecret \"gh\"\n"
	    "\tegress \"api.example.test\":443 private inject \"gh\" as "
	    "\"Authorization\", \"other.test\":443\n"
	    "}\n"
	    "agent \"nosecret\" {\n"
	    "\tallow exec\n"
	    "\tegress \"api.example.test\":443 inject \"gh\" as "
	    "\"Authorization\"\n"
	    "}\n";
	const struct policy_hooks *h = &policy_lang_hooks;
	struct msg_policy_decide q;
	struct msg_policy_decision r;
	char err[256], t[EGRESS_INJECT_TARGET_MAX];
	uint8_t hash[GRANT_HASH_BYTES];
	void *c = NULL;

	(void)state;
	assert_int_equal(
	    h->compile(text, sizeof(text) - 1, &c, err, sizeof(err)), 0);
	memset(&q, 0, sizeof(q));
	q.cap = CAP_EGRESS;
	q.link = 5;
	q.token_caps = CAP_BIT(CAP_EGRESS) | CAP_BIT(CAP_SECRET_READ);
	q.flags = DECIDE_CONNECT;
	strcpy(q.principal, "dev");
	strcpy(q.target, "api.example.test:443");
	q.target_len = (uint32_t)strlen(q.target);
	memset(&r, 0, sizeof(r));
	h->decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	assert_string_equal(r.inject_secret, "gh");
	assert_string_equal(r.inject_header, "Authorization");
	egress_grant_target_inject(
	    "api.example.test", 443, 0, 1, "gh", "Authorization", t, sizeof(t));
	grant_target_hash(t, strlen(t), hash);
	assert_memory_equal(hash, r.grant.target, sizeof(hash));
	/* A fetch's decision (no DECIDE_CONNECT): a plain destination's. */
	q.flags = 0;
	memset(&r, 0, sizeof(r));
	h->decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	assert_string_equal(r.inject_secret, "");
	q.flags = DECIDE_CONNECT;
	/* Another destination: nothing injected. */
	strcpy(q.target, "other.test:443");
	q.target_len = (uint32_t)strlen(q.target);
	memset(&r, 0, sizeof(r));
	h->decide(c, &q, &r);
	assert_string_equal(r.inject_secret, "");
	/* A principal without the secret in its list: no injection. */
	strcpy(q.principal, "nosecret");
	strcpy(q.target, "api.example.test:443");
	q.target_len = (uint32_t)strlen(q.target);
	memset(&r, 0, sizeof(r));
	h->decide(c, &q, &r);
	assert_string_equal(r.inject_secret, "");
	/* secret:read of an injected secret: the egress flag. */
	q.cap = CAP_SECRET_READ;
	q.link = 3;
	strcpy(q.principal, "dev");
	strcpy(q.target, "gh");
	q.target_len = 2;
	memset(&r, 0, sizeof(r));
	h->decide(c, &q, &r);
	assert_int_equal(r.grant.decision, GRANT_ALLOW);
	assert_true(r.grant.flags & GRANT_F_SECRET_EGRESS);
	h->free(c);
}

static void
test_policy_errors(void **state)
{
	static const char *const bad[] = {
		"agent \"a\" { egress \"x.test\":443 http inject \"gh\" as "
		"\"Authorization\" }\n",
		"agent \"a\" { egress \"x.test\":* inject \"gh\" as "
		"\"Authorization\" }\n",
		"agent \"a\" { egress \"x.test\":443 inject \"g h\" as "
		"\"Authorization\" }\n",
		"agent \"a\" { egress \"x.test\":443 inject \"gh\" as \"Bad "
		"Header\" }\n",
		"agent \"a\" { egress \"x.test\":443 inject \"gh\" "
		"\"Authorization\" }\n",
	};
	const struct policy_hooks *h = &policy_lang_hooks;
	char err[256];
	void *c;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = NULL;
		assert_int_not_equal(
		    h->compile(bad[i], strlen(bad[i]), &c, err, sizeof(err)),
		    0);
		assert_null(c);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_target),
		cmocka_unit_test(test_placeholder),
		cmocka_unit_test(test_head_ok),
		cmocka_unit_test(test_head_refused),
		cmocka_unit_test(test_head_limits),
		cmocka_unit_test(test_content_length),
		cmocka_unit_test(test_scan),
		cmocka_unit_test(test_appca),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_policy_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

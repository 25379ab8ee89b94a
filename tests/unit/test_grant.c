/* Unit tests for host/grant.c: a grant verifies only for its link, key,
 * request and lifetime, and any change to any byte is caught. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "host/grant.h"
#include "host/proc.h"
#include "lib/caps.h"

#define NOW 1700000000000ULL
#define REQ 42

static uint8_t key_vmm[GRANT_KEY_BYTES], key_store[GRANT_KEY_BYTES];

static int
setup(void **state)
{
	(void)state;
	if (sodium_init() < 0)
		return -1;
	randombytes_buf(key_vmm, sizeof(key_vmm));
	randombytes_buf(key_store, sizeof(key_store));
	return 0;
}

static void
make(struct grant *g, uint32_t link, const uint8_t *key)
{
	memset(g, 0, sizeof(*g));
	g->link = link;
	g->decision = GRANT_ALLOW;
	g->cap = CAP_EXEC;
	strlcpy(g->principal, "agent-b", sizeof(g->principal));
	grant_target_hash("sbx_1", 5, g->target);
	g->reqid = REQ;
	g->expires = NOW + 30000;
	g->mem_max = 128 << 20;
	assert_int_equal(grant_mint(g, key), GRANT_OK);
}

static void
test_good(void **state)
{
	struct grant g, out;

	(void)state;
	make(&g, PROC_VMM, key_vmm);
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_VMM, key_vmm, NOW, REQ, &out),
	    GRANT_OK);
	assert_string_equal(out.principal, "agent-b");
	assert_int_equal(out.mem_max, 128 << 20);
	assert_int_equal(grant_check(&out, CAP_EXEC, "sbx_1", 5), GRANT_OK);
	assert_int_equal(
	    grant_check(&out, CAP_EXEC, "sbx_2", 5), GRANT_ERR_TARGET);
	assert_int_equal(
	    grant_check(&out, CAP_EGRESS, "sbx_1", 5), GRANT_ERR_TARGET);
}

static void
test_tampered(void **state)
{
	struct grant g, out;
	uint8_t buf[sizeof(g)];
	size_t i;
	int bit;

	(void)state;
	make(&g, PROC_VMM, key_vmm);
	/* Every bit of every byte, MAC included. */
	for (i = 0; i < sizeof(g); i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(buf, &g, sizeof(g));
			buf[i] ^= (uint8_t)(1u << bit);
			assert_int_equal(grant_verify(buf, sizeof(buf),
			                     PROC_VMM, key_vmm, NOW, REQ, &out),
			    GRANT_ERR_MAC);
		}
	}
}

static void
test_truncated(void **state)
{
	uint8_t buf[sizeof(struct grant) + 8];
	struct grant g, out;
	size_t n;

	(void)state;
	make(&g, PROC_VMM, key_vmm);
	memset(buf, 0, sizeof(buf));
	memcpy(buf, &g, sizeof(g));
	for (n = 0; n < sizeof(buf); n++)
		if (n != sizeof(g))
			assert_int_equal(grant_verify(buf, n, PROC_VMM, key_vmm,
			                     NOW, REQ, &out),
			    GRANT_ERR_SIZE);
	assert_int_equal(
	    grant_verify(NULL, sizeof(g), PROC_VMM, key_vmm, NOW, REQ, &out),
	    GRANT_ERR_ARG);
}

static void
test_wrong_link_and_key(void **state)
{
	struct grant g, out;

	(void)state;
	/* Minted for the vmm, replayed to the store: the store's key
	 * does not verify it. */
	make(&g, PROC_VMM, key_vmm);
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_STORE, key_store, NOW, REQ, &out),
	    GRANT_ERR_MAC);
	/* Even with the right key, the link field is checked. */
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_STORE, key_vmm, NOW, REQ, &out),
	    GRANT_ERR_LINK);
	/* Minted with the wrong key for its link. */
	make(&g, PROC_VMM, key_store);
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_VMM, key_vmm, NOW, REQ, &out),
	    GRANT_ERR_MAC);
}

static void
test_expired_and_reqid(void **state)
{
	struct grant g, out;

	(void)state;
	make(&g, PROC_VMM, key_vmm);
	assert_int_equal(grant_verify(&g, sizeof(g), PROC_VMM, key_vmm,
	                     NOW + 29999, REQ, &out),
	    GRANT_OK);
	assert_int_equal(grant_verify(&g, sizeof(g), PROC_VMM, key_vmm,
	                     NOW + 30000, REQ, &out),
	    GRANT_ERR_EXPIRED);
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_VMM, key_vmm, NOW, REQ + 1, &out),
	    GRANT_ERR_REQID);
}

static void
test_deny_and_fields(void **state)
{
	struct grant g, out;

	(void)state;
	memset(&g, 0, sizeof(g));
	g.link = PROC_VMM;
	g.decision = GRANT_DENY;
	g.cap = CAP_EXEC;
	strlcpy(g.principal, "agent-a", sizeof(g.principal));
	g.reqid = REQ;
	g.expires = NOW + 1;
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_OK);
	assert_int_equal(
	    grant_verify(&g, sizeof(g), PROC_VMM, key_vmm, NOW, REQ, &out),
	    GRANT_ERR_DENIED);
	assert_int_equal(grant_check(&out, CAP_EXEC, "", 0), GRANT_ERR_DENIED);

	g.decision = 7;
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_ERR_FIELD);
	g.decision = GRANT_ALLOW;
	g.cap = CAP_COUNT;
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_ERR_FIELD);
	g.cap = CAP_EXEC;
	memset(g.principal, 'x', sizeof(g.principal));
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_ERR_FIELD);
	g.principal[0] = '\0';
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_ERR_FIELD);
	strlcpy(g.principal, "p", sizeof(g.principal));
	g.procs_max = GRANT_PROCS_MAX + 1;
	assert_int_equal(grant_mint(&g, key_vmm), GRANT_ERR_FIELD);
	assert_int_equal(grant_mint(NULL, key_vmm), GRANT_ERR_ARG);
	assert_string_equal(
	    grant_strerror(GRANT_ERR_LINK), "grant minted for another link");
}

/* Two mints of the same decision differ (fresh nonce). */
static void
test_nonce(void **state)
{
	struct grant a, b;

	(void)state;
	make(&a, PROC_VMM, key_vmm);
	make(&b, PROC_VMM, key_vmm);
	assert_memory_not_equal(a.nonce, b.nonce, sizeof(a.nonce));
	assert_memory_not_equal(a.mac, b.mac, sizeof(a.mac));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_good),
		cmocka_unit_test(test_tampered),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_wrong_link_and_key),
		cmocka_unit_test(test_expired_and_reqid),
		cmocka_unit_test(test_deny_and_fields),
		cmocka_unit_test(test_nonce),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}

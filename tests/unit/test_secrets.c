/* Unit tests for secret references and redaction (lib/secret_ref.h,
 * lib/redact.h; docs/secrets.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lib/redact.h"
#include "lib/secret_ref.h"

static void
test_names(void **state)
{
	(void)state;
	assert_true(secret_name_ok("github-token", 12));
	assert_true(secret_name_ok("A_1", 3));
	assert_false(secret_name_ok("", 0));
	assert_false(secret_name_ok("a b", 3));
	assert_false(secret_name_ok("a.b", 3));
	assert_false(secret_name_ok("a/b", 3));
	assert_true(secret_name_ok(
	    "123456789012345678901234567890123456789012345678901234567890123",
	    63));
	assert_false(secret_name_ok(
	    "1234567890123456789012345678901234567890123456789012345678901234",
	    64));
}

static void
test_refs(void **state)
{
	const char *s = "Bearer ${{ secrets.github-token }} and ${{secrets.b}}";
	struct secret_ref ref;
	size_t pos = 0;

	(void)state;
	assert_int_equal(secret_ref_next(s, strlen(s), &pos, &ref), 1);
	assert_int_equal(ref.start, 7);
	assert_int_equal(ref.name_len, 12);
	assert_memory_equal(ref.name, "github-token", 12);
	assert_int_equal(secret_ref_next(s, strlen(s), &pos, &ref), 1);
	assert_memory_equal(ref.name, "b", 1);
	assert_int_equal(ref.end, strlen(s));
	assert_int_equal(secret_ref_next(s, strlen(s), &pos, &ref), 0);

	/* A "${{" that does not begin a reference is an error. */
	static const char *const bad[] = { "${{ secret.x }}", "${{ secrets. }}",
		"${{ secrets.x }", "${{ secrets.x", "${{", "${{ secrets.a b }}",
		"x ${{ env.X }}" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		pos = 0;
		assert_int_equal(
		    secret_ref_next(bad[i], strlen(bad[i]), &pos, &ref), -1);
	}
	pos = 0;
	assert_int_equal(secret_ref_next("${ {x}} $HOME", 13, &pos, &ref), 0);
}

static const char *
lookup(void *arg, const char *name, size_t name_len, size_t *value_len)
{
	(void)arg;
	if (name_len == 3 && memcmp(name, "tok", 3) == 0) {
		*value_len = 6;
		return "s3cr3t";
	}
	return NULL;
}

static void
test_expand(void **state)
{
	const char *s = "a=${{ secrets.tok }}/${{secrets.tok}}.";
	char out[64];
	size_t n;

	(void)state;
	assert_int_equal(
	    secret_ref_expand(s, strlen(s), lookup, NULL, out, sizeof(out), &n),
	    0);
	assert_string_equal(out, "a=s3cr3t/s3cr3t.");
	assert_int_equal(n, strlen(out));
	/* Unknown name, no room. */
	s = "${{ secrets.other }}";
	assert_int_equal(
	    secret_ref_expand(s, strlen(s), lookup, NULL, out, sizeof(out), &n),
	    -1);
	s = "x=${{ secrets.tok }}";
	assert_int_equal(
	    secret_ref_expand(s, strlen(s), lookup, NULL, out, 8, &n), -1);
	assert_int_equal(
	    secret_ref_expand(s, strlen(s), lookup, NULL, out, 9, &n), 0);
	assert_string_equal(out, "x=s3cr3t");
}

static size_t
redact_all(const struct redact_value *v, size_t nv, const char *in, char *out)
{
	size_t n;

	redact_step(
	    v, nv, (const uint8_t *)in, strlen(in), 1, (uint8_t *)out, &n);
	out[n] = '\0';
	return n;
}

static void
test_redact(void **state)
{
	struct redact_value v[2] = { { (const uint8_t *)"hunter22", 8 },
		{ (const uint8_t *)"hunter2234", 10 } };
	char out[128];
	uint8_t buf[128];
	size_t used, n;

	(void)state;
	redact_all(v, 1, "pw=hunter22\n", out);
	assert_string_equal(out, "pw=***\n");
	redact_all(v, 1, "hunter22hunter22 hunter2", out);
	assert_string_equal(out, "****** hunter2");
	/* The longer value wins where both match. */
	redact_all(v, 2, "x hunter2234 hunter22", out);
	assert_string_equal(out, "x *** ***");

	/* A stream: the tail that may begin a value waits for more. */
	used = redact_step(v, 1, (const uint8_t *)"say hunt", 8, 0, buf, &n);
	assert_int_equal(used, 4);
	assert_memory_equal(buf, "say ", 4);
	used = redact_step(v, 1, (const uint8_t *)"hunter22!", 9, 0, buf, &n);
	assert_int_equal(used, 9);
	assert_memory_equal(buf, "***!", n);
	/* At the end, a tail is plain text. */
	used = redact_step(v, 1, (const uint8_t *)"hunt", 4, 1, buf, &n);
	assert_int_equal(used, 4);
	assert_memory_equal(buf, "hunt", 4);
	/* A shorter match waits while a longer value may still complete. */
	used = redact_step(v, 2, (const uint8_t *)"hunter223", 9, 0, buf, &n);
	assert_int_equal(used, 0);
	used = redact_step(v, 2, (const uint8_t *)"hunter22x", 9, 0, buf, &n);
	assert_int_equal(used, 9);
	assert_memory_equal(buf, "***x", n);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_refs),
		cmocka_unit_test(test_expand),
		cmocka_unit_test(test_redact),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for E2B's wire formats (host/api/e2b_wire.c): multipart
 * form-data as undici's FormData sends it and what is refused, Connect's
 * envelopes, Connect-Timeout-Ms, Connect's codes, template names.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "host/api/e2b_wire.h"

static void
test_wire_multipart(void **state)
{
	struct e2b_part p[4];
	const char *b;
	size_t bl, n;
	static const char good[] =
	    "--B\r\nContent-Disposition: form-data; name=\"file\"; "
	    "filename=\"/a b\"\r\n\r\nx\r\ny\r\n--B\r\ncontent-disposition: "
	    "form-data;name=file\r\n\r\n\r\n--B--\r\n";

	(void)state;
	assert_int_equal(e2b_multipart_boundary(
	                     "multipart/form-data; boundary=B", 31, &b, &bl),
	    0);
	assert_int_equal(bl, 1);
	{
		static const char q[] = "Multipart/Form-Data;boundary=\"a b\"";

		assert_int_equal(
		    e2b_multipart_boundary(q, sizeof(q) - 1, &b, &bl), 0);
	}
	assert_int_equal(bl, 3);
	static const char *const bad_ct[] = { "multipart/form-data",
		"multipart/form-data; boundary=", "multipart/mixed; boundary=B",
		"multipart/form-data; charset=x; boundary=B",
		"multipart/form-data; boundary=B; x=y",
		"multipart/form-data; boundary=\"a \"",
		"multipart/form-data; boundary=\"a",
		"multipart/form-data; boundary="
		"01234567890123456789012345678901234567890123456789012345678901"
		"234567890" };
	for (size_t i = 0; i < sizeof(bad_ct) / sizeof(bad_ct[0]); i++)
		assert_int_equal(e2b_multipart_boundary(
		                     bad_ct[i], strlen(bad_ct[i]), &b, &bl),
		    -1);

	assert_int_equal(
	    e2b_multipart_parse(good, sizeof(good) - 1, "B", 1, p, 4, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].filename_len, 4);
	assert_memory_equal(p[0].filename, "/a b", 4);
	assert_int_equal(p[0].len, 4);
	assert_memory_equal(p[0].data, "x\r\ny", 4);
	assert_null(p[1].filename);
	assert_int_equal(p[1].len, 0);
	/* The same without the final CRLF; but a max of 1 part is short. */
	assert_int_equal(
	    e2b_multipart_parse(good, sizeof(good) - 3, "B", 1, p, 4, &n), 0);
	assert_int_equal(
	    e2b_multipart_parse(good, sizeof(good) - 1, "B", 1, p, 1, &n), -1);
	static const char *const bad[] = {
		"",
		"--B--",
		"x--B\r\nContent-Disposition: form-data; "
		"name=a\r\n\r\nx\r\n--B--",
		"--B\r\nContent-Disposition: form-data; name=a\r\n\r\nx",
		"--B\r\nContent-Disposition: form-data; name=a\r\n\r\nx\r\n--B",
		"--B\r\nContent-Disposition: form-data; "
		"name=a\r\n\r\nx\r\n--B--"
		"junk",
		"--B\r\nX-Other: 1\r\nContent-Disposition: form-data; "
		"name=a\r\n\r\nx\r\n--B--",
		"--B\r\nContent-Disposition: attachment; "
		"name=a\r\n\r\nx\r\n--B--",
		"--B\r\nContent-Disposition: form-data\r\n\r\nx\r\n--B--",
		"--B\r\nContent-Disposition: form-data; name=a; name=b\r\n\r\nx"
		"\r\n--B--",
		"--B\r\nContent-Disposition: form-data; name=\"a\\\"\"\r\n\r\nx"
		"\r\n--B--",
		"--B\r\nContent-Disposition: form-data; filename*=x; "
		"name=a\r\n\r\nx\r\n--B--",
		"--B\r\nContent-Disposition: form-data; name=a\nx: y\r\n\r\nx"
		"\r\n--B--",
		"--B\r\nContent-Disposition: form-data; "
		"name=a\r\nContent-Type: "
		"a\r\nContent-Type: b\r\n\r\nx\r\n--B--",
		"--B \r\nContent-Disposition: form-data; "
		"name=a\r\n\r\nx\r\n--B--",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (e2b_multipart_parse(
		        bad[i], strlen(bad[i]), "B", 1, p, 4, &n) != -1)
			fail_msg("accepted: %s", bad[i]);
}

static void
test_wire_misc(void **state)
{
	const char *m;
	size_t ml;
	uint64_t ms;
	struct http_buf b;

	(void)state;
	http_buf_init(&b);
	e2b_envelope_put(&b, 0, "{}", 2);
	assert_int_equal(b.len, 7);
	assert_int_equal(e2b_envelope_one(b.data, b.len, &m, &ml), 0);
	assert_int_equal(ml, 2);
	assert_memory_equal(m, "{}", 2);
	assert_int_equal(e2b_envelope_one(b.data, b.len - 1, &m, &ml), -1);
	http_buf_add(&b, "x", 1);
	assert_int_equal(e2b_envelope_one(b.data, b.len, &m, &ml), -1);
	b.data[0] = 1; /* compressed */
	assert_int_equal(e2b_envelope_one(b.data, b.len - 1, &m, &ml), -1);
	b.data[0] = 2; /* an end in a request */
	assert_int_equal(e2b_envelope_one(b.data, b.len - 1, &m, &ml), -1);
	assert_int_equal(e2b_envelope_one("\0\0\0", 3, &m, &ml), -1);
	http_buf_free(&b);

	assert_int_equal(e2b_timeout_ms("60000", 5, &ms), 0);
	assert_int_equal(ms, 60000);
	assert_int_equal(e2b_timeout_ms("9999999999", 10, &ms), 0);
	assert_int_equal(e2b_timeout_ms("", 0, &ms), -1);
	assert_int_equal(e2b_timeout_ms("12345678901", 11, &ms), -1);
	assert_int_equal(e2b_timeout_ms("-1", 2, &ms), -1);

	assert_string_equal(
	    e2b_template_image("code-interpreter-v1"), "machine");
	assert_string_equal(e2b_template_image("base"), "machine");
	assert_string_equal(e2b_template_image("mine"), "mine");
	assert_string_equal(e2b_connect_code(404), "not_found");
	assert_string_equal(e2b_connect_code(429), "resource_exhausted");
	assert_string_equal(e2b_connect_code(418), "unknown");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wire_multipart),
		cmocka_unit_test(test_wire_misc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

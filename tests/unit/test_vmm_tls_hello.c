/*
 * Unit tests for the ClientHello reader (host/vmm/tls_hello.c): real
 * ClientHellos from Python's ssl and OpenSSL's s_client, whole and in
 * pieces, and ones made here as a hostile guest would: no SNI, two
 * SNIs, bad names, lengths that lie, records too large, not TLS at all.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "host/vmm/tls_hello.h"
#include "tests/unit/tls_hello_vectors.h"

static enum tls_hello_result
parse(const void *p, size_t len, char *name, size_t *need)
{
	return tls_hello_parse(p, len, name, need);
}

static void
test_captured(void **state)
{
	char name[TLS_SNI_MAX + 1];
	size_t need;

	(void)state;
	assert_int_equal(
	    parse(hello_python_sni, sizeof(hello_python_sni), name, &need),
	    TLS_HELLO_SNI);
	assert_string_equal(name, "allowed.test"); /* lower-cased */
	assert_int_equal(
	    parse(hello_openssl_sni, sizeof(hello_openssl_sni), name, &need),
	    TLS_HELLO_SNI);
	assert_string_equal(name, "allowed.test");
	assert_int_equal(parse(hello_openssl_tls12, sizeof(hello_openssl_tls12),
	                     name, &need),
	    TLS_HELLO_SNI);
	assert_string_equal(name, "allowed.test");
	assert_int_equal(parse(hello_python_no_sni, sizeof(hello_python_no_sni),
	                     name, &need),
	    TLS_HELLO_NO_SNI);
	assert_string_equal(name, "");
	assert_int_equal(parse(hello_openssl_no_sni,
	                     sizeof(hello_openssl_no_sni), name, &need),
	    TLS_HELLO_NO_SNI);
}

/* Every prefix asks for the whole record, and never decides early. */
static void
test_split(void **state)
{
	char name[TLS_SNI_MAX + 1];
	size_t need, i, whole = sizeof(hello_python_sni);

	(void)state;
	for (i = 0; i < whole; i++) {
		assert_int_equal(
		    parse(hello_python_sni, i, name, &need), TLS_HELLO_MORE);
		assert_int_equal(need, i < 5 ? 5 : whole);
	}
	assert_int_equal(
	    parse(hello_python_sni, whole, name, &need), TLS_HELLO_SNI);
}

/* What follows the first record (early data, a second record) is not
 * looked at. */
static void
test_trailing_bytes(void **state)
{
	uint8_t buf[sizeof(hello_openssl_sni) + 16];
	char name[TLS_SNI_MAX + 1];
	size_t need;

	(void)state;
	memcpy(buf, hello_openssl_sni, sizeof(hello_openssl_sni));
	memset(buf + sizeof(hello_openssl_sni), 0x17, 16);
	assert_int_equal(parse(buf, sizeof(buf), name, &need), TLS_HELLO_SNI);
	assert_string_equal(name, "allowed.test");
}

static void
test_not_tls(void **state)
{
	char name[TLS_SNI_MAX + 1];
	size_t need;

	(void)state;
	assert_int_equal(
	    parse("GET / HTTP/1.1\r\n", 16, name, &need), TLS_HELLO_NOT_TLS);
	assert_int_equal(parse("G", 1, name, &need), TLS_HELLO_NOT_TLS);
	assert_int_equal(parse("\x16\x02", 2, name, &need), TLS_HELLO_NOT_TLS);
	/* SSLv2's hello is not TLS either. */
	assert_int_equal(
	    parse("\x80\x2e\x01\x03\x01", 5, name, &need), TLS_HELLO_NOT_TLS);
	/* Nothing yet: wait. */
	assert_int_equal(parse("", 0, name, &need), TLS_HELLO_MORE);
	assert_int_equal(need, 5);
}

/* A ClientHello built here: the record, the handshake header, a fixed
 * body and the extensions given (ext, elen). Its length. */
static size_t
hello(uint8_t *out, const void *ext, size_t elen)
{
	static const uint8_t body[] = {
		0x03, 0x03, /* legacy_version */
		1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
		19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31,
		32, /* random */
		0, /* session id */
		0x00, 0x02, 0x13, 0x01, /* one cipher suite */
		0x01, 0x00 /* null compression */
	};
	size_t n = 9, hl, rl;

	memcpy(out + n, body, sizeof(body));
	n += sizeof(body);
	if (ext != NULL) {
		out[n++] = (uint8_t)(elen >> 8);
		out[n++] = (uint8_t)elen;
		memcpy(out + n, ext, elen);
		n += elen;
	}
	hl = n - 9;
	rl = n - 5;
	out[0] = 0x16;
	out[1] = 0x03;
	out[2] = 0x01;
	out[3] = (uint8_t)(rl >> 8);
	out[4] = (uint8_t)rl;
	out[5] = 0x01;
	out[6] = (uint8_t)(hl >> 16);
	out[7] = (uint8_t)(hl >> 8);
	out[8] = (uint8_t)hl;
	return n;
}

/* server_name with host_name h (n bytes). */
#define SNI_EXT(h, n)                                                          \
	0x00, 0x00, 0x00, (uint8_t)((n) + 5), 0x00, (uint8_t)((n) + 3), 0x00,  \
	    0x00, (uint8_t)(n), h

static void
test_built(void **state)
{
	static const uint8_t other_then_sni[] = {
		0x00, 0x0b, 0x00, 0x02, 0x01, 0x00, /* ec_point_formats */
		0x00, 0x00, 0x00, 0x0b, 0x00, 0x09, 0x00, 0x00, 0x06, 'a', '.',
		'T', 'e', 's', 't', /* server_name a.Test */
		0x00, 0x2b, 0x00, 0x03, 0x02, 0x03, 0x04 /* versions */
	};
	static const uint8_t no_ext[] = { 0 };
	static const uint8_t two_sni[] = { 0x00, 0x00, 0x00, 0x08, 0x00, 0x06,
		0x00, 0x00, 0x03, 'a', '.', 'b', 0x00, 0x00, 0x00, 0x08, 0x00,
		0x06, 0x00, 0x00, 0x03, 'c', '.', 'd' };
	static const uint8_t two_names[] = { 0x00, 0x00, 0x00, 0x0e, 0x00, 0x0c,
		0x00, 0x00, 0x03, 'a', '.', 'b', 0x00, 0x00, 0x03, 'c', '.',
		'd' };
	static const uint8_t bad_char[] = { 0x00, 0x00, 0x00, 0x08, 0x00, 0x06,
		0x00, 0x00, 0x03, 'a', '/', 'b' };
	static const uint8_t empty_label[] = { 0x00, 0x00, 0x00, 0x08, 0x00,
		0x06, 0x00, 0x00, 0x03, 'a', '.', '.' };
	static const uint8_t trailing_dot[] = { 0x00, 0x00, 0x00, 0x09, 0x00,
		0x07, 0x00, 0x00, 0x04, 'a', '.', 'b', '.' };
	static const uint8_t not_host[] = { 0x00, 0x00, 0x00, 0x08, 0x00, 0x06,
		0x01, 0x00, 0x03, 'a', '.', 'b' };
	static const uint8_t ext_overrun[] = { 0x00, 0x0b, 0x00, 0x09, 0x01,
		0x00 };
	uint8_t buf[512];
	char name[TLS_SNI_MAX + 1];
	size_t need, n;

	(void)state;
	n = hello(buf, other_then_sni, sizeof(other_then_sni));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_SNI);
	assert_string_equal(name, "a.test");
	/* No extensions at all, and an empty extension block. */
	n = hello(buf, NULL, 0);
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_NO_SNI);
	n = hello(buf, no_ext, 0);
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_NO_SNI);
	n = hello(buf, two_sni, sizeof(two_sni));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	assert_string_equal(name, "");
	n = hello(buf, two_names, sizeof(two_names));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	n = hello(buf, bad_char, sizeof(bad_char));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	n = hello(buf, empty_label, sizeof(empty_label));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	n = hello(buf, not_host, sizeof(not_host));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	n = hello(buf, ext_overrun, sizeof(ext_overrun));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	/* A good server_name, then an extension that lies: no name. */
	{
		uint8_t two[sizeof(other_then_sni) + sizeof(ext_overrun)];

		memcpy(two, other_then_sni, sizeof(other_then_sni));
		memcpy(two + sizeof(other_then_sni), ext_overrun,
		    sizeof(ext_overrun));
		n = hello(buf, two, sizeof(two));
		assert_int_equal(
		    parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
		assert_string_equal(name, "");
	}
	n = hello(buf, trailing_dot, sizeof(trailing_dot));
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_SNI);
	assert_string_equal(name, "a.b");
}

/* Lengths that lie: every one is caught, none read past the buffer. */
static void
test_lengths(void **state)
{
	uint8_t buf[sizeof(hello_openssl_sni)];
	char name[TLS_SNI_MAX + 1];
	size_t need, n = sizeof(buf);

	(void)state;
	/* A record larger than TLS allows, and an empty one. */
	memcpy(buf, hello_openssl_sni, n);
	buf[3] = 0x40;
	buf[4] = 0x01;
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	buf[3] = buf[4] = 0;
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	/* The largest record is waited for, no more. */
	buf[3] = 0x40;
	buf[4] = 0x00;
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MORE);
	assert_int_equal(need, TLS_HELLO_MAX);
	/* A handshake message longer than its record (split across
	 * records): refused. */
	memcpy(buf, hello_openssl_sni, n);
	buf[7] = (uint8_t)(buf[7] + 1);
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	/* Not a ClientHello (a ServerHello's type). */
	memcpy(buf, hello_openssl_sni, n);
	buf[5] = 2;
	assert_int_equal(parse(buf, n, name, &need), TLS_HELLO_MALFORMED);
	/* The record cut short of the message: the extensions' length
	 * then passes the end. */
	memcpy(buf, hello_openssl_sni, n);
	buf[4] = (uint8_t)(buf[4] - 10);
	assert_int_equal(parse(buf, n - 10, name, &need), TLS_HELLO_MALFORMED);
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(tls_hello_result_name(TLS_HELLO_SNI), "sni");
	assert_string_equal(
	    tls_hello_result_name(TLS_HELLO_NOT_TLS), "not-tls");
	assert_string_equal(
	    tls_hello_result_name((enum tls_hello_result)99), "?");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_captured),
		cmocka_unit_test(test_split),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_built),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* image/pyc.c: SipHash-1-3 as CPython's importlib computes a source's
 * hash, and timestamp-based .pyc files made unchecked hash-based ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/pyc.h"

/* CPython 3.11's magic number, as importlib reads it for the key. */
static const uint8_t magic[4] = { 0xa7, 0x0d, 0x0d, 0x0a };
#define KEY 168627623ULL

/* What CPython 3.11 answers: _imp.source_hash(KEY, s).hex(), the
 * hash's bytes little-endian. */
static void
test_siphash_matches_cpython(void **state)
{
	static const struct {
		const char *s;
		size_t n;
		const char *hex;
	} v[] = {
		{ "", 0, "738d9cd5d5e87f73" },
		{ "a", 1, "fa30db0730dcbf07" },
		{ "abcdefg", 7, "9b58a82378e1d95f" },
		{ "abcdefgh", 8, "a705b39c25edd8a5" },
		{ "abcdefghi", 9, "e428a4f8cd79259b" },
		{ "print(1)\n", 9, "da812d7f407a3059" },
	};
	uint8_t seq[64];
	char hex[17];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		uint64_t h =
		    pyc_siphash13(KEY, 0, (const uint8_t *)v[i].s, v[i].n);

		for (int b = 0; b < 8; b++, h >>= 8)
			snprintf(hex + 2 * b, 3, "%02x", (unsigned)(h & 0xff));
		assert_string_equal(hex, v[i].hex);
	}
	for (int i = 0; i < 64; i++)
		seq[i] = (uint8_t)i;
	assert_int_equal(pyc_siphash13(KEY, 0, seq, 64), 0x013ac5e2586dc821ULL);
}

static size_t
fake_pyc(uint8_t *p, uint32_t flags, uint32_t mtime, uint32_t size)
{
	memcpy(p, magic, 4);
	for (int i = 0; i < 4; i++) {
		p[4 + i] = (uint8_t)(flags >> (8 * i));
		p[8 + i] = (uint8_t)(mtime >> (8 * i));
		p[12 + i] = (uint8_t)(size >> (8 * i));
	}
	memcpy(p + 16,
	    "\xe3"
	    "code",
	    5);
	return 21;
}

static void
test_make_unchecked(void **state)
{
	const uint8_t *src = (const uint8_t *)"print(1)\n";
	static const uint8_t hash[8] = { 0xda, 0x81, 0x2d, 0x7f, 0x40, 0x7a,
		0x30, 0x59 };
	uint8_t pyc[32], *out;
	size_t len, outlen;

	(void)state;
	len = fake_pyc(pyc, 0, 1675617227, 9);
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 9, 1675617227, &out, &outlen), 1);
	assert_int_equal(outlen, len);
	assert_memory_equal(out, magic, 4);
	assert_memory_equal(out + 4, "\x01\0\0\0", 4);
	assert_memory_equal(out + 8, hash, 8);
	assert_memory_equal(out + 16,
	    "\xe3"
	    "code",
	    5);
	free(out);

	/* A time past 2038 is stored as its low 32 bits, as CPython does. */
	assert_int_equal(pyc_make_unchecked(pyc, len, src, 9,
	                     1675617227 + (1LL << 32), &out, &outlen),
	    1);
	free(out);

	/* Kept as they are: stale (time, size), hash-based, not a .pyc,
	 * too short. */
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 9, 1675617228, &out, &outlen), 0);
	assert_null(out);
	assert_int_equal(outlen, 0);
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 8, 1675617227, &out, &outlen), 0);
	fake_pyc(pyc, 1, 1675617227, 9);
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 9, 1675617227, &out, &outlen), 0);
	fake_pyc(pyc, 3, 1675617227, 9);
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 9, 1675617227, &out, &outlen), 0);
	fake_pyc(pyc, 0, 1675617227, 9);
	pyc[3] = 'x';
	assert_int_equal(
	    pyc_make_unchecked(pyc, len, src, 9, 1675617227, &out, &outlen), 0);
	fake_pyc(pyc, 0, 1675617227, 9);
	assert_int_equal(pyc_make_unchecked(pyc, PYC_HEADER_LEN - 1, src, 9,
	                     1675617227, &out, &outlen),
	    0);
	/* A header alone (no code) is still a .pyc's shape. */
	assert_int_equal(pyc_make_unchecked(pyc, PYC_HEADER_LEN, src, 9,
	                     1675617227, &out, &outlen),
	    1);
	assert_int_equal(outlen, PYC_HEADER_LEN);
	free(out);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_siphash_matches_cpython),
		cmocka_unit_test(test_make_unchecked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

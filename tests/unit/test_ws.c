/* Unit tests for the WebSocket reader and framing (host/http/ws.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/http/ws.h"

/* A client frame of data, masked with 01 02 03 04. */
static size_t
frame(uint8_t *out, int fin, int op, const char *data, size_t n)
{
	static const uint8_t k[4] = { 1, 2, 3, 4 };
	size_t h = 0, i;

	out[h++] = (uint8_t)((fin ? 0x80 : 0) | op);
	if (n < 126)
		out[h++] = (uint8_t)(0x80 | n);
	else {
		out[h++] = 0x80 | 126;
		out[h++] = (uint8_t)(n >> 8);
		out[h++] = (uint8_t)n;
	}
	memcpy(out + h, k, 4);
	h += 4;
	for (i = 0; i < n; i++)
		out[h + i] = (uint8_t)data[i] ^ k[i & 3];
	return h + n;
}

static void
test_accept(void **state)
{
	char out[29];

	(void)state;
	/* RFC 6455, section 1.3. */
	assert_true(ws_key_ok("dGhlIHNhbXBsZSBub25jZQ==", 24));
	ws_accept("dGhlIHNhbXBsZSBub25jZQ==", 24, out);
	assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	assert_false(ws_key_ok("dGhlIHNhbXBsZSBub25j", 20));
	assert_false(ws_key_ok("!!!!!!!!!!!!!!!!!!!!!!==", 24));
}

static void
test_messages(void **state)
{
	struct ws_reader r;
	struct ws_msg m;
	uint8_t b[512];
	size_t n, used;
	uint16_t code;

	(void)state;
	ws_reader_init(&r, 1024);
	n = frame(b, 1, WS_OP_TEXT, "echo hi", 7);
	/* Whole only once every byte is there. */
	assert_int_equal(ws_read(&r, b, n - 1, &used, &m, &code), WS_MORE);
	assert_int_equal(used, 0);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MSG);
	assert_int_equal(used, n);
	assert_int_equal(m.opcode, WS_OP_TEXT);
	assert_memory_equal(m.data, "echo hi", 7);
	/* Fragments with a ping between them. */
	n = frame(b, 0, WS_OP_BINARY, "ab", 2);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MORE);
	assert_int_equal(used, n);
	n = frame(b, 1, WS_OP_PING, "p", 1);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MSG);
	assert_int_equal(m.opcode, WS_OP_PING);
	n = frame(b, 1, WS_OP_CONT, "cd", 2);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MSG);
	assert_int_equal(m.opcode, WS_OP_BINARY);
	assert_memory_equal(m.data, "abcd", 4);
	/* A 16-bit length. */
	memset(b + 100, 'x', 300);
	n = frame(b, 1, WS_OP_BINARY, (const char *)b + 100, 300);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MSG);
	assert_int_equal(m.len, 300);
	/* Close with a code and a reason. */
	n = frame(b, 1, WS_OP_CLOSE, "\x03\xe8ok", 4);
	assert_int_equal(ws_read(&r, b, n, &used, &m, &code), WS_MSG);
	assert_int_equal(m.close_code, 1000);
	ws_reader_free(&r);
}

static void
test_refusals(void **state)
{
	struct ws_reader r;
	struct ws_msg m;
	uint8_t b[512];
	size_t n, used;
	uint16_t code;

	(void)state;
	ws_reader_init(&r, 256);
#define REFUSED(want)                                                          \
	do {                                                                   \
		assert_int_equal(                                              \
		    ws_read(&r, b, n, &used, &m, &code), WS_ERROR);            \
		assert_int_equal(code, (want));                                \
		ws_reader_free(&r);                                            \
		ws_reader_init(&r, 256);                                       \
	} while (0)
	n = frame(b, 1, WS_OP_TEXT, "hi", 2);
	b[1] &= 0x7f; /* unmasked */
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 1, WS_OP_TEXT, "hi", 2);
	b[0] |= 0x40; /* RSV1 */
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 1, 0x3, "hi", 2);
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 0, WS_OP_PING, "hi", 2);
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 1, WS_OP_CONT, "hi", 2);
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 1, WS_OP_TEXT, "\xc0\xaf", 2);
	REFUSED(WS_CLOSE_BAD_DATA);
	n = frame(b, 1, WS_OP_CLOSE, "\x03", 1);
	REFUSED(WS_CLOSE_PROTOCOL);
	n = frame(b, 1, WS_OP_CLOSE, "\x03\xed", 2); /* 1005 */
	REFUSED(WS_CLOSE_PROTOCOL);
	memset(b + 100, 'x', 300);
	n = frame(b, 1, WS_OP_BINARY, (const char *)b + 100, 300);
	REFUSED(WS_CLOSE_TOO_BIG);
	/* A length of 5 in the 16-bit form is not the shortest. */
	b[0] = 0x82;
	b[1] = 0x80 | 126;
	b[2] = 0;
	b[3] = 5;
	n = 4 + 4 + 5;
	REFUSED(WS_CLOSE_PROTOCOL);
	ws_reader_free(&r);
}

static void
test_heads(void **state)
{
	uint8_t h[10];

	(void)state;
	assert_int_equal(ws_frame_head(h, WS_OP_BINARY, 5), 2);
	assert_int_equal(h[0], 0x82);
	assert_int_equal(h[1], 5);
	assert_int_equal(ws_frame_head(h, WS_OP_BINARY, 300), 4);
	assert_int_equal(h[1], 126);
	assert_int_equal(ws_frame_head(h, WS_OP_CLOSE, 70000), 10);
	assert_int_equal(h[0], 0x88);
	assert_true(ws_utf8_ok((const uint8_t *)"h\xc3\xa9", 3));
	assert_false(ws_utf8_ok((const uint8_t *)"\xed\xa0\x80", 3));
	assert_false(ws_utf8_ok((const uint8_t *)"\xf4\x90\x80\x80", 4));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_accept),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_heads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

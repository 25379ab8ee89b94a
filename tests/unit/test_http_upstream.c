/* Unit tests for host/http/http_upstream.c: how the front frames a guest
 * server's response (docs/architecture.md, "Ports"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/http/http_upstream.h"

static int
head(const char *s, int head_request, struct http_upstream_head *h)
{
	return http_upstream_head(s, strlen(s), 8192, head_request, h);
}

static void
test_length(void **state)
{
	struct http_upstream_head h;
	const char *s = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
	                "Content-Length: 64\r\n\r\nbody";

	(void)state;
	assert_int_equal(head(s, 0, &h), HTTP_OK);
	assert_int_equal(h.status, 200);
	assert_int_equal(h.version_minor, 1);
	assert_int_equal(h.framing, HTTP_FRAME_LENGTH);
	assert_int_equal(h.content_length, 64);
	assert_true(h.reusable);
	assert_int_equal(h.head_len, strlen(s) - 4);
	/* Every prefix of the head is more to come. */
	for (size_t i = 0; i < h.head_len; i++)
		assert_int_equal(
		    http_upstream_head(s, i, 8192, 0, &h), HTTP_MORE);
	/* A list of one value is the value; the same twice is fine. */
	assert_int_equal(head("HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n"
	                      "content-length: 5\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.content_length, 5);
}

static void
test_chunked_and_close(void **state)
{
	struct http_upstream_head h;

	(void)state;
	assert_int_equal(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, "
	                      "Chunked\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_CHUNKED);
	assert_true(h.reusable);
	/* A coding but chunked last: to the close. */
	assert_int_equal(head("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, "
	                      "gzip\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_CLOSE);
	assert_false(h.reusable);
	/* No length at all: to the close. */
	assert_int_equal(head("HTTP/1.1 200 OK\r\n\r\n", 0, &h), HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_CLOSE);
	assert_false(h.reusable);
	/* Both: chunked wins, and the connection is not kept. */
	assert_int_equal(head("HTTP/1.1 200 OK\r\nContent-Length: 3\r\n"
	                      "Transfer-Encoding: chunked\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_CHUNKED);
	assert_false(h.reusable);
	/* The server's close, HTTP/1.0 (bare LF lines too). */
	assert_int_equal(head("HTTP/1.1 200 OK\r\nConnection: keep-alive, "
	                      "CLOSE\r\nContent-Length: 0\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_LENGTH);
	assert_false(h.reusable);
	assert_int_equal(
	    head("HTTP/1.0 200 OK\nContent-Length: 2\n\nok", 0, &h), HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_LENGTH);
	assert_false(h.reusable);
	assert_int_equal(h.head_len, 35);
}

static void
test_no_body(void **state)
{
	struct http_upstream_head h;

	(void)state;
	assert_int_equal(
	    head("HTTP/1.1 204 No Content\r\n\r\n", 0, &h), HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_NONE);
	assert_true(h.reusable);
	assert_int_equal(head("HTTP/1.1 304 Not Modified\r\nContent-Length: "
	                      "10\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_NONE);
	/* A HEAD's answer has no body whatever it says. */
	assert_int_equal(
	    head("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", 1, &h),
	    HTTP_OK);
	assert_int_equal(h.framing, HTTP_FRAME_NONE);
	assert_true(h.reusable);
	assert_int_equal(head("HTTP/1.1 101 Switching Protocols\r\nUpgrade: "
	                      "websocket\r\n\r\n",
	                     0, &h),
	    HTTP_OK);
	assert_int_equal(h.status, 101);
	assert_int_equal(h.framing, HTTP_FRAME_NONE);
	assert_int_equal(
	    head("HTTP/1.1 103 Early Hints\r\n\r\n", 0, &h), HTTP_OK);
	assert_int_equal(h.status, 103);
}

static void
test_refusals(void **state)
{
	static const char *const bad[] = {
		"HTTP/2 200 OK\r\n\r\n",
		"HTTP/1.1 20 OK\r\n\r\n",
		"HTTP/1.1 099 OK\r\n\r\n",
		"HTTP/1.1 2000 OK\r\n\r\n",
		"HTTP/1.1  200 OK\r\n\r\n",
		"http/1.1 200 OK\r\n\r\n",
		"\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: "
		"6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: "
		"99999999999999999999\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, "
		"chunked\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length : 5\r\n\r\n",
		"HTTP/1.1 200 OK\r\nNo colon\r\n\r\n",
		"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
		"HTTP/1.1 200 OK\r\n: empty name\r\n\r\n",
	};
	struct http_upstream_head h;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (head(bad[i], 0, &h) != HTTP_ERROR)
			fail_msg("accepted: %s", bad[i]);
	}
	/* A NUL inside a field. */
	assert_int_equal(
	    http_upstream_head(
	        "HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n", 27, 8192, 0, &h),
	    HTTP_ERROR);
	/* Too long a head: an error once max_head bytes have come. */
	{
		char big[300];

		memset(big, 'a', sizeof(big));
		memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
		assert_int_equal(
		    http_upstream_head(big, 100, 256, 0, &h), HTTP_MORE);
		assert_int_equal(
		    http_upstream_head(big, sizeof(big), 256, 0, &h),
		    HTTP_ERROR);
	}
}

/* Scan s as a chunked body n bytes at a time: where it ends, or -1. */
static long
scan_end(const char *s, size_t len, size_t step)
{
	struct http_chunk_scan cs;
	size_t off = 0, used;

	http_chunk_scan_init(&cs);
	while (off < len) {
		size_t n = len - off < step ? len - off : step;
		int rc = http_chunk_scan(&cs, s + off, n, &used);

		off += used;
		if (rc == HTTP_OK)
			return (long)off;
		if (rc == HTTP_ERROR)
			return -1;
	}
	return -2; /* more to come */
}

static void
test_chunk_scan(void **state)
{
	const char *body = "5\r\nhello\r\nA;name=\"v\"\r\n0123456789\r\n"
	                   "0\r\nTrailer: x\r\n\r\n";
	const char *next = "HTTP/1.1 200 OK\r\n";
	char both[256];
	size_t bl = strlen(body);

	(void)state;
	snprintf(both, sizeof(both), "%s%s", body, next);
	for (size_t step = 1; step <= strlen(both); step++)
		assert_int_equal(scan_end(both, strlen(both), step), (long)bl);
	assert_int_equal(scan_end("0\r\n\r\n", 5, 1), 5);
	assert_int_equal(scan_end("0\n\n", 3, 3), 3);
	assert_int_equal(scan_end("5\r\nhel", 6, 6), -2);
	assert_int_equal(scan_end("g\r\n", 3, 3), -1);
	assert_int_equal(scan_end("5\r\nhelloX\r\n", 11, 11), -1);
	assert_int_equal(scan_end("5\rX", 3, 3), -1);
	assert_int_equal(scan_end("11111111111111111\r\n", 19, 19), -1);
	assert_int_equal(scan_end("ffffffffffffffff\r\n", 18, 18), -2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_length),
		cmocka_unit_test(test_chunked_and_close),
		cmocka_unit_test(test_no_body),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_chunk_scan),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

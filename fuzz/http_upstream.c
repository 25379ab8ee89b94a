/*
 * Fuzz the framing of a guest server's response (host/http/http_upstream.h):
 * the first byte says whether the request was a HEAD, the rest is what the
 * guest sent. Properties: never crash or over-read; a parsed head lies
 * inside the input and within the limit; parsing is prefix-stable (a prefix
 * of an accepted head is never a success); a reusable response has a
 * framing that ends; the chunk scanner, fed the body whole or a byte at a
 * time, agrees on where the body ends and never claims more than it got.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/http/http_upstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEAD 2048

/* Where a chunked body in b[0..n) ends: HTTP_OK and *end, or not. */
static int
scan(const char *b, size_t n, size_t step, size_t *end)
{
	struct http_chunk_scan s;
	size_t off = 0, used;
	int rc = HTTP_MORE;

	http_chunk_scan_init(&s);
	while (off < n) {
		size_t len = n - off < step ? n - off : step;

		rc = http_chunk_scan(&s, b + off, len, &used);
		if (used > len)
			abort();
		off += used;
		if (rc != HTTP_MORE)
			break;
		if (used != len)
			abort();
	}
	*end = off;
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_upstream_head h, h2;
	char *buf;
	size_t n, e1, e2;
	int head_req, rc;

	if (size < 1 || size > 65536)
		return 0;
	head_req = data[0] & 1;
	n = size - 1;
	/* An exact-size copy so ASan catches any over-read. */
	if ((buf = malloc(n ? n : 1)) == NULL)
		return 0;
	memcpy(buf, data + 1, n);
	rc = http_upstream_head(buf, n, MAX_HEAD, head_req, &h);
	if (rc == HTTP_MORE && n >= MAX_HEAD)
		abort();
	if (rc == HTTP_OK) {
		if (h.head_len == 0 || h.head_len > n ||
		    h.head_len > MAX_HEAD || h.status < 100 || h.status > 999 ||
		    h.version_minor > 1)
			abort();
		if (h.reusable && h.framing == HTTP_FRAME_CLOSE)
			abort();
		if (http_upstream_head(buf, h.head_len - 1, MAX_HEAD, head_req,
		        &h2) == HTTP_OK)
			abort();
	}
	/* The whole input as a chunked body, two ways. */
	{
		int r1 = scan(buf, n, n ? n : 1, &e1);
		int r2 = scan(buf, n, 1, &e2);

		if (r1 != r2 || (r1 == HTTP_OK && e1 != e2) || e1 > n)
			abort();
	}
	free(buf);
	return 0;
}

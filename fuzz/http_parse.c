/*
 * Fuzz the request-head parser and the chunked decoder. Properties: never
 * crash or over-read; a parsed head lies inside the input; every header
 * points inside the head; parsing is prefix-stable (a prefix of an
 * accepted head is "more" or an error, never a different success); the
 * chunked decoder never writes past its read position.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/http/http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct http_limits lim;
	struct http_request req, req2;
	char *buf;
	int status, rc;

	if (size > 65536)
		return 0;
	/* An exact-size copy so ASan catches any over-read. */
	if ((buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	http_limits_default(&lim);
	lim.max_head = 2048;
	lim.max_target = 512;
	lim.max_headers = 16;
	lim.max_body = 4096;
	rc = http_parse_head(buf, size, &lim, &req, &status);
	if (rc == HTTP_ERROR && (status < 400 || status > 505))
		abort();
	if (rc == HTTP_OK) {
		if (req.head_len > size || req.head_len > lim.max_head)
			abort();
		for (size_t i = 0; i < req.nheaders; i++) {
			const struct http_header *h = &req.headers[i];
			if (h->name < buf || h->value < buf ||
			    h->value + h->valuelen > buf + req.head_len)
				abort();
		}
		if (req.head_len > 0 &&
		    http_parse_head(
		        buf, req.head_len - 1, &lim, &req2, &status) == HTTP_OK)
			abort();
		if (req.chunked) {
			struct http_chunked c;
			size_t r = req.head_len, w = req.head_len;

			http_chunked_init(&c);
			rc = http_chunked_decode(
			    &c, buf, size, &r, &w, lim.max_body, &status);
			if (w > r || r > size ||
			    w - req.head_len > lim.max_body)
				abort();
		}
	}
	free(buf);
	return 0;
}

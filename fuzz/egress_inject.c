/*
 * Fuzz the request-head check and rewrite of secrets injected at egress
 * (host/egress/inject.c) and the placeholder scanner. Properties:
 * nothing crashes or leaks; a head that passes was exactly the input's
 * head; its rewrite holds the value once per replacement, holds no
 * marker, ends in "Connection: close" and a blank line; the scanner
 * finds the marker whether the bytes come at once or one by one, and
 * exactly when memmem does.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/egress/inject.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t
count(const uint8_t *h, size_t hl, const char *n)
{
	size_t c = 0, nl = strlen(n);
	const uint8_t *p = h;

	while ((p = memmem(p, hl - (size_t)(p - h), n, nl)) != NULL) {
		c++;
		p += nl;
	}
	return c;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char ph[] =
	    "keep-placeholder-tok-0123456789abcdef0123456789abcdef";
	static const uint8_t value[] = "VALUE-zz9-secret";
	struct egress_inject in = { "api.example.test", 443, "Authorization",
		ph, value, sizeof(value) - 1 };
	struct egress_marker_scan a = { 0, 0 }, b = { 0, 0 };
	uint8_t *out = NULL;
	size_t outlen = 0, end, i;
	unsigned replaced = 0;
	const char *why;
	int rc;

	end = egress_inject_head_end(data, size);
	if (end > size)
		abort();
	if (end > 0) {
		rc = egress_inject_head(
		    &in, data, end, &out, &outlen, &replaced, &why);
		if (rc == EGRESS_INJECT_OK) {
			if (out == NULL || outlen < 21 ||
			    memcmp(out + outlen - 21,
			        "Connection: close\r\n\r\n", 21) != 0 ||
			    memmem(out, outlen, EGRESS_INJECT_MARKER,
			        EGRESS_INJECT_MARKER_LEN) != NULL ||
			    count(out, outlen, "VALUE-zz9-secret") < replaced ||
			    replaced != count(data, end, ph))
				abort();
			free(out);
		} else if (out != NULL || why == NULL || why[0] == '\0')
			abort();
	}
	(void)egress_marker_scan(&a, data, size);
	for (i = 0; i < size; i++)
		(void)egress_marker_scan(&b, data + i, 1);
	if (a.found != b.found ||
	    a.found !=
	        (memmem(data, size, EGRESS_INJECT_MARKER,
	             EGRESS_INJECT_MARKER_LEN) != NULL))
		abort();
	return 0;
}

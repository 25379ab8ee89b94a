/*
 * Fuzz where a port's link travels (host/api/api_link.c): the input is a
 * query string and a Cookie header value, split at the first NUL. What
 * is found must be a whole keep_link value of PASETO's characters inside
 * the input; what is written on without it must hold no keep_link
 * parameter or cookie, and be no longer than what came in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_value(const char *in, size_t inlen, const char *v, size_t vl)
{
	if (v < in || v + vl > in + inlen || !api_link_value_ok(v, vl))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in, *q, *ck, *v;
	size_t qlen, cklen, vl, pos = 0, n = 0;
	const char *nul;
	struct http_buf b;
	int rc;

	static const uint8_t empty[1];

	if (size > 16384)
		return 0;
	if (data == NULL)
		data = empty; /* no arithmetic on a null pointer */
	in = (const char *)data;
	nul = memchr(in, '\0', size);
	q = in;
	qlen = nul != NULL ? (size_t)(nul - in) : size;
	ck = nul != NULL ? nul + 1 : in + size;
	cklen = (size_t)(in + size - ck);

	rc = api_link_query(q, qlen, &v, &vl);
	if (rc == 1)
		check_value(q, qlen, v, vl);
	else if (rc != 0 && rc != -1)
		abort();
	http_buf_init(&b);
	api_link_query_strip(q, qlen, &b);
	if (!b.oom) {
		if (b.len > qlen)
			abort();
		if (api_link_query(b.data, b.len, &v, &vl) != 0)
			abort();
	}
	http_buf_free(&b);

	while ((rc = api_link_cookie(ck, cklen, &pos, &v, &vl)) == 1) {
		check_value(ck, cklen, v, vl);
		if (pos > cklen || ++n > cklen + 1)
			abort();
	}
	if (rc != 0 && rc != -1)
		abort();
	http_buf_init(&b);
	api_link_cookie_strip(ck, cklen, &b);
	if (!b.oom) {
		pos = 0;
		if (b.len > cklen + cklen / 2 + 2)
			abort();
		if (api_link_cookie(b.data, b.len, &pos, &v, &vl) == 1)
			abort();
	}
	http_buf_free(&b);
	return 0;
}

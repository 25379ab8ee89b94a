/*
 * Fuzz E2B's non-JSON wire formats (host/api/e2b_wire.h). The first
 * byte picks the parser: 0 multipart/form-data (then the boundary's
 * length, the boundary, the body), 1 a multipart Content-Type, 2 one
 * Connect envelope, 3 a Connect-Timeout-Ms value, 4 a node cell's
 * output (its first byte the mark's length). Every input is copied
 * to a buffer of its exact size, so an over-read faults under ASan.
 * Checks: never a crash; every part, boundary and message lies inside
 * its input, in order, parts never overlapping; what the envelope
 * writer wraps, the reader unwraps whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/e2b_wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
inside(const char *p, size_t n, const char *buf, size_t len)
{
	return p >= buf && n <= len && (size_t)(p - buf) <= len - n;
}

static void
multipart(const char *in, size_t len)
{
	struct e2b_part parts[E2B_PARTS_MAX];
	const char *b, *body, *prev_end;
	size_t blen, n;

	if (len < 1)
		return;
	blen = (unsigned char)in[0];
	if (len - 1 < blen)
		return;
	b = in + 1;
	body = b + blen;
	if (e2b_multipart_parse(
	        body, len - 1 - blen, b, blen, parts, E2B_PARTS_MAX, &n) != 0)
		return;
	if (n == 0 || n > E2B_PARTS_MAX)
		abort();
	prev_end = body;
	for (size_t i = 0; i < n; i++) {
		const struct e2b_part *p = &parts[i];

		if (p->name == NULL ||
		    !inside(p->name, p->name_len, body, len - 1 - blen) ||
		    !inside(p->data, p->len, body, len - 1 - blen) ||
		    p->data < prev_end)
			abort();
		if (p->filename != NULL &&
		    !inside(p->filename, p->filename_len, body, len - 1 - blen))
			abort();
		/* No escapes in a quoted value, and never a line end. */
		if (memchr(p->name, '\r', p->name_len) != NULL ||
		    memchr(p->name, '\n', p->name_len) != NULL)
			abort();
		prev_end = p->data + p->len;
	}
}

static void
ctype(const char *in, size_t len)
{
	const char *b;
	size_t blen;

	if (e2b_multipart_boundary(in, len, &b, &blen) != 0)
		return;
	if (blen == 0 || blen > 70 || !inside(b, blen, in, len))
		abort();
}

static void
envelope(const char *in, size_t len)
{
	struct http_buf w;
	const char *m, *m2;
	size_t ml, ml2;

	if (e2b_envelope_one(in, len, &m, &ml) == 0 &&
	    (m != in + 5 || ml != len - 5))
		abort();
	http_buf_init(&w);
	e2b_envelope_put(&w, 0, in, len);
	if (w.oom)
		abort();
	if (e2b_envelope_one(w.data, w.len, &m2, &ml2) != 0 || ml2 != len ||
	    memcmp(m2, in, len) != 0)
		abort();
	http_buf_free(&w);
}

static void
timeout(const char *in, size_t len)
{
	uint64_t ms;

	if (e2b_timeout_ms(in, len, &ms) == 0 &&
	    (len > 10 || ms > 9999999999ULL))
		abort();
}

static void
cell_split(const char *in, size_t len)
{
	size_t mlen, user, tail;
	const char *mark, *out;

	if (len < 1)
		return;
	mlen = (unsigned char)in[0] % 40;
	if (len - 1 < mlen)
		return;
	mark = in + 1;
	out = mark + mlen;
	if (e2b_cell_split(out, len - 1 - mlen, mark, mlen, &user, &tail) != 0)
		return;
	/* The user's bytes, "\n", the mark, the tail: all inside. */
	if (user + 1 + mlen != tail || tail > len - 1 - mlen ||
	    out[user] != '\n' || memcmp(out + user + 1, mark, mlen) != 0)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;

	if (size < 1 || size > 262144)
		return 0;
	if ((buf = malloc(size - 1 ? size - 1 : 1)) == NULL)
		return 0;
	memcpy(buf, data + 1, size - 1);
	switch (data[0] % 5) {
	case 0:
		multipart(buf, size - 1);
		break;
	case 1:
		ctype(buf, size - 1);
		break;
	case 2:
		envelope(buf, size - 1);
		break;
	case 3:
		timeout(buf, size - 1);
		break;
	default:
		cell_split(buf, size - 1);
		break;
	}
	free(buf);
	return 0;
}

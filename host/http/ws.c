#include <stdlib.h>
#include <string.h>

#include <sha1.h>
#include <sodium.h>

#include "host/http/ws.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void
ws_reader_init(struct ws_reader *r, size_t max)
{
	memset(r, 0, sizeof(*r));
	r->max = max;
}

void
ws_reader_free(struct ws_reader *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

int
ws_utf8_ok(const uint8_t *s, size_t len)
{
	size_t i = 0, n, k;
	uint32_t c, min;

	while (i < len) {
		c = s[i];
		if (c < 0x80) {
			i++;
			continue;
		}
		if ((c & 0xe0) == 0xc0) {
			n = 1;
			c &= 0x1f;
			min = 0x80;
		} else if ((c & 0xf0) == 0xe0) {
			n = 2;
			c &= 0x0f;
			min = 0x800;
		} else if ((c & 0xf8) == 0xf0) {
			n = 3;
			c &= 0x07;
			min = 0x10000;
		} else
			return 0;
		if (len - i - 1 < n)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			c = c << 6 | (s[i + k] & 0x3f);
		}
		if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

static int
close_code_ok(unsigned c)
{
	return (c >= 1000 && c <= 1003) || (c >= 1007 && c <= 1011) ||
	    (c >= 3000 && c <= 4999);
}

static int
fail(uint16_t *code, uint16_t c)
{
	*code = c;
	return WS_ERROR;
}

int
ws_read(struct ws_reader *r, uint8_t *in, size_t len, size_t *consumed,
    struct ws_msg *m, uint16_t *code)
{
	size_t head = 2, i;
	uint64_t plen;
	uint8_t *mask, *p;
	int fin, op;

	*consumed = 0;
	*code = 0;
	if (len < 2)
		return WS_MORE;
	fin = (in[0] & 0x80) != 0;
	op = in[0] & 0x0f;
	if ((in[0] & 0x70) != 0)
		return fail(code, WS_CLOSE_PROTOCOL);
	if (op != WS_OP_CONT && op != WS_OP_TEXT && op != WS_OP_BINARY &&
	    op != WS_OP_CLOSE && op != WS_OP_PING && op != WS_OP_PONG)
		return fail(code, WS_CLOSE_PROTOCOL);
	if ((in[1] & 0x80) == 0) /* a client's frames are masked */
		return fail(code, WS_CLOSE_PROTOCOL);
	plen = in[1] & 0x7f;
	if (op >= WS_OP_CLOSE && (!fin || plen > 125))
		return fail(code, WS_CLOSE_PROTOCOL);
	if (plen == 126) {
		if (len < 4)
			return WS_MORE;
		plen = (uint64_t)in[2] << 8 | in[3];
		if (plen < 126)
			return fail(code, WS_CLOSE_PROTOCOL);
		head = 4;
	} else if (plen == 127) {
		if (len < 10)
			return WS_MORE;
		for (plen = 0, i = 2; i < 10; i++)
			plen = plen << 8 | in[i];
		if (plen < 65536 || (plen >> 63) != 0)
			return fail(code, WS_CLOSE_PROTOCOL);
		head = 10;
	}
	if (plen > r->max)
		return fail(code, WS_CLOSE_TOO_BIG);
	if (len < head + 4 || len - head - 4 < plen)
		return WS_MORE;
	mask = in + head;
	p = in + head + 4;
	for (i = 0; i < plen; i++)
		p[i] ^= mask[i & 3];
	*consumed = head + 4 + (size_t)plen;

	memset(m, 0, sizeof(*m));
	if (op >= WS_OP_CLOSE) {
		m->opcode = op;
		m->data = p;
		m->len = (size_t)plen;
		if (op == WS_OP_CLOSE && plen > 0) {
			if (plen == 1)
				return fail(code, WS_CLOSE_PROTOCOL);
			m->close_code = (uint16_t)(p[0] << 8 | p[1]);
			if (!close_code_ok(m->close_code))
				return fail(code, WS_CLOSE_PROTOCOL);
			if (!ws_utf8_ok(p + 2, (size_t)plen - 2))
				return fail(code, WS_CLOSE_BAD_DATA);
		}
		return WS_MSG;
	}
	if ((op == WS_OP_CONT) != (r->opcode != 0))
		return fail(code, WS_CLOSE_PROTOCOL);
	if (op == WS_OP_CONT && r->len + plen > r->max)
		return fail(code, WS_CLOSE_TOO_BIG);
	if (fin && op != WS_OP_CONT) {
		/* A whole message in one frame: no copy. */
		if (op == WS_OP_TEXT && !ws_utf8_ok(p, (size_t)plen))
			return fail(code, WS_CLOSE_BAD_DATA);
		m->opcode = op;
		m->data = p;
		m->len = (size_t)plen;
		return WS_MSG;
	}
	if (op != WS_OP_CONT) {
		r->opcode = op;
		r->len = 0;
	}
	if (r->len + plen > r->cap) {
		size_t cap = r->len + (size_t)plen;
		uint8_t *nb;

		if (cap < 256)
			cap = 256;
		if ((nb = realloc(r->buf, cap)) == NULL)
			return fail(code, WS_CLOSE_TOO_BIG);
		r->buf = nb;
		r->cap = cap;
	}
	if (plen > 0)
		memcpy(r->buf + r->len, p, (size_t)plen);
	r->len += (size_t)plen;
	if (!fin)
		return WS_MORE;
	m->opcode = r->opcode;
	m->data = r->buf;
	m->len = r->len;
	r->opcode = 0;
	if (m->opcode == WS_OP_TEXT && !ws_utf8_ok(m->data, m->len))
		return fail(code, WS_CLOSE_BAD_DATA);
	return WS_MSG;
}

size_t
ws_frame_head(uint8_t out[10], enum ws_opcode op, uint64_t len)
{
	size_t i;

	out[0] = (uint8_t)(0x80 | op);
	if (len < 126) {
		out[1] = (uint8_t)len;
		return 2;
	}
	if (len < 65536) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		return 4;
	}
	out[1] = 127;
	for (i = 0; i < 8; i++)
		out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
	return 10;
}

int
ws_key_ok(const char *key, size_t len)
{
	unsigned char raw[18];
	size_t n;

	return len == 24 &&
	    sodium_base642bin(raw, sizeof(raw), key, len, NULL, &n, NULL,
	        sodium_base64_VARIANT_ORIGINAL) == 0 &&
	    n == 16;
}

void
ws_accept(const char *key, size_t len, char out[29])
{
	SHA1_CTX ctx;
	uint8_t d[SHA1_DIGEST_LENGTH];

	SHA1Init(&ctx);
	SHA1Update(&ctx, (const uint8_t *)key, len);
	SHA1Update(&ctx, (const uint8_t *)ws_guid, sizeof(ws_guid) - 1);
	SHA1Final(d, &ctx);
	sodium_bin2base64(
	    out, 29, d, sizeof(d), sodium_base64_VARIANT_ORIGINAL);
}

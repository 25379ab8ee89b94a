/*
 * Fuzz the WebSocket reader (host/http/ws.h) as the front drives it: the
 * input is a client's byte stream, read in pieces cut where its first
 * byte says. Checks: never a crash or an over-read; a message never
 * longer than the reader's maximum; a text message and a close reason
 * always UTF-8; a control frame never longer than 125 bytes; consumed
 * never past the input; reading the stream in pieces gives the messages
 * reading it whole gives.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/http/ws.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX 4096

/* Every message of in[0, len) (a copy), fed cut pieces at a time; a
 * digest of what came out. */
static uint64_t
run(const uint8_t *in, size_t len, size_t cut, int *err)
{
	struct ws_reader r;
	struct ws_msg m;
	uint8_t *buf = malloc(len + 1);
	size_t have = 0, fed = 0, used;
	uint64_t h = 1469598103934665603ull;
	uint16_t code;
	int rc;

	if (buf == NULL)
		abort();
	ws_reader_init(&r, MAX);
	*err = 0;
	while (fed < len || have > 0) {
		size_t step = cut == 0 ? len - fed : cut;

		if (step > len - fed)
			step = len - fed;
		memcpy(buf + have, in + fed, step);
		have += step;
		fed += step;
		rc = ws_read(&r, buf, have, &used, &m, &code);
		if (used > have)
			abort();
		if (rc == WS_ERROR) {
			if (code < 1000 || code > 1011)
				abort();
			*err = code;
			break;
		}
		if (rc == WS_MSG) {
			if (m.len > MAX)
				abort();
			if (m.opcode >= WS_OP_CLOSE && m.len > 125)
				abort();
			if (m.opcode == WS_OP_TEXT &&
			    !ws_utf8_ok(m.data, m.len))
				abort();
			if (m.opcode == WS_OP_CLOSE && m.len >= 2 &&
			    !ws_utf8_ok(m.data + 2, m.len - 2))
				abort();
			h = (h ^ m.opcode) * 1099511628211ull;
			for (size_t i = 0; i < m.len; i++)
				h = (h ^ m.data[i]) * 1099511628211ull;
		}
		memmove(buf, buf + used, have - used);
		have -= used;
		if (rc == WS_MSG)
			continue;
		if (used == 0 && fed == len)
			break;
	}
	ws_reader_free(&r);
	free(buf);
	return h;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t whole, pieces;
	int e1, e2;
	uint8_t head[10];

	if (size < 1)
		return 0;
	whole = run(data + 1, size - 1, 0, &e1);
	pieces = run(data + 1, size - 1, data[0] % 16, &e2);
	if (whole != pieces || e1 != e2)
		abort();
	/* The server's heads: lengths in their shortest form. */
	if (ws_frame_head(head, WS_OP_BINARY, size) !=
	    (size < 126            ? 2u
	            : size < 65536 ? 4u
	                           : 10u))
		abort();
	return 0;
}

/*
 * WebSocket (RFC 6455), the server's side, for the terminal route
 * (docs/terminal.md): a strict reader of the client's frames and the
 * framing of the server's. Pure: no I/O, no allocation but the message
 * buffer the reader owns; fuzzed by fuzz/ws_frame.c.
 *
 * The reader refuses (with the close code to send): a reserved bit set
 * (no extension is negotiated), an unknown opcode, a frame the client
 * did not mask, a length not in its shortest form or with the top bit
 * set, a control frame that is fragmented or longer than 125 bytes, a
 * continuation with no message begun or a new message inside one, a
 * frame or message longer than the reader's maximum (1009), a text
 * message or close reason that is not UTF-8 (1007), and a close payload
 * of one byte or with a code no endpoint may send.
 */
#ifndef KEEP_HTTP_WS_H
#define KEEP_HTTP_WS_H

#include <stddef.h>
#include <stdint.h>

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa
};

enum ws_result { WS_MORE = 0, WS_MSG = 1, WS_ERROR = -1 };

#define WS_CLOSE_NORMAL 1000
#define WS_CLOSE_GOING_AWAY 1001
#define WS_CLOSE_PROTOCOL 1002
#define WS_CLOSE_BAD_DATA 1007
#define WS_CLOSE_POLICY 1008
#define WS_CLOSE_TOO_BIG 1009

struct ws_reader {
	size_t max; /* bytes of one message (and so of one frame) */
	int opcode; /* of the fragmented message begun, 0: none */
	uint8_t *buf; /* its bytes so far (malloc) */
	size_t len, cap;
};

/* A whole message, or one control frame. data points into the reader's
 * buffer or into the input; valid until the next call. */
struct ws_msg {
	enum ws_opcode opcode;
	const uint8_t *data;
	size_t len;
	uint16_t close_code; /* WS_OP_CLOSE: 0 when the payload was empty */
};

void ws_reader_init(struct ws_reader *, size_t max);
void ws_reader_free(struct ws_reader *);

/*
 * Read from in[0, len) (unmasked in place). WS_MSG: *m is a message and
 * *consumed the bytes it took; WS_MORE: a frame is not whole yet (or a
 * fragment was taken, *consumed says how much); WS_ERROR: *code is the
 * close code to send, and the connection is to be closed.
 */
int ws_read(struct ws_reader *, uint8_t *in, size_t len, size_t *consumed,
    struct ws_msg *m, uint16_t *code);

/* The head of an unmasked, final server frame of len bytes: its length
 * (2, 4 or 10) in out. */
size_t ws_frame_head(uint8_t out[10], enum ws_opcode op, uint64_t len);

/* 1 when key is a valid Sec-WebSocket-Key (16 bytes in base64). */
int ws_key_ok(const char *key, size_t len);
/* Sec-WebSocket-Accept for key: 28 characters and a NUL. */
void ws_accept(const char *key, size_t len, char out[29]);

/* 1 when s[0, len) is well-formed UTF-8. */
int ws_utf8_ok(const uint8_t *s, size_t len);

#endif

/*
 * The wire formats of E2B's SDK that are not JSON (docs/e2b.md): the
 * multipart/form-data of envd's file uploads, the envelopes of Connect
 * RPC's streams, the Connect-Timeout-Ms header, Connect's error codes
 * and E2B's template names. Pure code: no I/O, no globals, no
 * allocation; every input is untrusted (fuzz/e2b_wire.c).
 *
 * Errors: functions return 0 or -1 (malformed); none reads past the
 * length it is given.
 */
#ifndef KEEP_E2B_WIRE_H
#define KEEP_E2B_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "host/http/http.h"

/*
 * The boundary of a "multipart/form-data; boundary=..." Content-Type
 * (the parameter token or quoted, 1 to 70 characters of RFC 2046's
 * bchars, no trailing space). *b points into ctype.
 */
int e2b_multipart_boundary(
    const char *ctype, size_t len, const char **b, size_t *blen);

/* One part of a form: its name and filename parameters (quoted strings
 * without escapes) and its bytes, all pointing into the body. */
struct e2b_part {
	const char *name;
	size_t name_len;
	const char *filename; /* NULL: none */
	size_t filename_len;
	const char *data;
	size_t len;
};

#define E2B_PARTS_MAX 64

/*
 * Split body into its parts, strictly: no preamble, each part's head
 * lines are only Content-Disposition (form-data, once) and Content-Type,
 * each at most 1 KiB; a closing delimiter, then nothing but an optional
 * CRLF. *n parts are filled, at most max (more is an error).
 */
int e2b_multipart_parse(const char *body, size_t len, const char *b,
    size_t blen, struct e2b_part *parts, size_t max, size_t *n);

/* Connect's envelope flags. */
#define E2B_ENV_COMPRESSED 0x01u
#define E2B_ENV_END 0x02u

/*
 * The one message of a server-streaming request: body is exactly one
 * envelope with flags 0 (five bytes: the flags and a big-endian length,
 * then that many bytes). *msg points into body.
 */
int e2b_envelope_one(
    const char *body, size_t len, const char **msg, size_t *msglen);

/* Append an envelope of flags around data. */
void e2b_envelope_put(
    struct http_buf *, unsigned flags, const void *data, size_t len);

/* Connect-Timeout-Ms: 1 to 10 ASCII digits (the protocol's bound). */
int e2b_timeout_ms(const char *v, size_t len, uint64_t *ms);

/* The Connect code ("not_found") for an HTTP status keep answers with
 * ("unknown" for one it does not name). */
const char *e2b_connect_code(int status);

/*
 * A node cell's stdout (api_e2b.c): the cell's own output, then "\n",
 * mark and the wrapper's JSON. The last mark that starts a line ends the
 * cell's output at *user_len (the "\n" before it left out); the JSON is
 * out[*tail .. len). -1 when no mark starts a line (node ended before
 * its wrapper wrote). out is the guest's: any bytes.
 */
int e2b_cell_split(const char *out, size_t len, const char *mark,
    size_t mark_len, size_t *user_len, size_t *tail);

/*
 * The keep image that serves E2B template name t: E2B's code
 * interpreter templates are the python image, "base" the shell image;
 * any other name is an image's own name and is returned as it is.
 */
const char *e2b_template_image(const char *t);

#endif

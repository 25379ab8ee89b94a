/*
 * The framing of a response from a guest's server (a sandbox's port,
 * docs/architecture.md "Ports"): where its head ends, how its body is
 * delimited, whether the connection may carry another request. The front
 * passes the response's bytes on as they are; it reads only this much of
 * them, so that one connection to the guest can carry the requests of
 * many (keep-alive) and the client's connection can carry the next one.
 *
 * Every byte is the guest's, so hostile: the head is bounded, lines end
 * in CRLF or LF, a Content-Length is digits alone (several must agree), a
 * Transfer-Encoding whose last coding is chunked is chunked and any other
 * is delimited by the close (RFC 9112 6.3), a chunk's size is at most 16
 * hex digits, its extensions and the trailer are bounded and skipped. What
 * cannot be framed with certainty is HTTP_ERROR; what can but is odd (both
 * Content-Length and Transfer-Encoding) is framed as RFC 9112 says and
 * the connection is not reused.
 *
 * Pure code: no globals, no I/O. Returns HTTP_OK, HTTP_MORE or HTTP_ERROR
 * (host/http/http.h).
 */
#ifndef KEEP_HTTP_UPSTREAM_H
#define KEEP_HTTP_UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

#include "host/http/http.h"

/* A chunk line's (size and extensions) and the trailer's bytes. */
#define HTTP_UPSTREAM_LINE_MAX 4096
#define HTTP_UPSTREAM_TRAILER_MAX 65536

enum http_framing {
	HTTP_FRAME_NONE, /* no body: 1xx, 204, 304, or a HEAD's answer */
	HTTP_FRAME_LENGTH, /* content_length bytes */
	HTTP_FRAME_CHUNKED, /* chunks to the last and its trailer */
	HTTP_FRAME_CLOSE /* to the connection's end */
};

struct http_upstream_head {
	int status; /* 100..999 */
	int version_minor; /* 0 or 1 (HTTP/1.x) */
	enum http_framing framing;
	uint64_t content_length; /* HTTP_FRAME_LENGTH */
	int reusable; /* the server lets the connection carry another */
	size_t head_len; /* status line + fields + the empty line */
};

/*
 * Parse a response head from buf[0..len), at most max_head bytes.
 * head_request: the request was a HEAD (no body follows whatever the
 * fields say). HTTP_MORE: not complete yet (and within max_head);
 * HTTP_OK: *h is filled; HTTP_ERROR: it cannot be framed.
 */
int http_upstream_head(const char *buf, size_t len, size_t max_head,
    int head_request, struct http_upstream_head *h);

/* Scanning a chunked body as it passes, without changing it. */
struct http_chunk_scan {
	int state;
	uint64_t remaining; /* data bytes left of the current chunk */
	unsigned ndigits;
	size_t line; /* bytes of the current size or trailer line */
	size_t trailer; /* bytes of the trailer */
};
void http_chunk_scan_init(struct http_chunk_scan *);
/*
 * Scan buf[0..len): *used is how many bytes belong to the body. HTTP_OK:
 * the body ended at buf[*used]; HTTP_MORE: all len bytes were the body's
 * and more is to come; HTTP_ERROR: not a chunked body.
 */
int http_chunk_scan(
    struct http_chunk_scan *, const char *buf, size_t len, size_t *used);

#endif

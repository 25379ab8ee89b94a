/*
 * A strict HTTP/1.1 server side (RFC 9110, RFC 9112): an incremental
 * request-head parser, a strict chunked-body decoder, a response writer and
 * a growable output buffer. Pure code: no globals, no I/O. The event loop
 * that drives it is host/http/front.h.
 *
 * Strictness is the point: anything this parser cannot frame with certainty
 * (obs-fold, bare CR or LF, whitespace before a colon, duplicate or
 * conflicting Content-Length / Transfer-Encoding, a transfer coding other
 * than "chunked", chunk extensions or trailers, a missing or duplicate Host)
 * is refused with a status, and the caller closes the connection.
 *
 * Errors: the parse functions return HTTP_OK, HTTP_MORE (need more bytes) or
 * HTTP_ERROR; on HTTP_ERROR *status holds the status code to answer with
 * (400, 411, 413, 414, 417, 431, 501, 505).
 *
 * Caveats: the request structure points into the caller's buffer; it is
 * valid only while that buffer is neither moved nor reused.
 */
#ifndef KEEP_HTTP_H
#define KEEP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#define HTTP_OK 0
#define HTTP_MORE 1
#define HTTP_ERROR (-1)

/* Hard ceiling on header fields; struct http_limits sets the real limit. */
#define HTTP_MAX_HEADERS 64

enum http_method {
	HTTP_GET,
	HTTP_HEAD,
	HTTP_POST,
	HTTP_PUT,
	HTTP_PATCH,
	HTTP_DELETE,
	HTTP_OPTIONS,
	HTTP_OTHER /* a valid token we do not route: 405 or 501 */
};

struct http_limits {
	size_t max_head; /* request line + header fields, bytes */
	size_t max_target; /* request-target bytes (414 above it) */
	size_t max_headers; /* header fields (431 above it) */
	uint64_t max_body; /* decoded body bytes (413 above it) */
};

/* Defaults: 8 KiB head, 4 KiB target, 64 fields, 1 MiB body. */
void http_limits_default(struct http_limits *);

struct http_header {
	const char *name; /* not NUL-terminated */
	size_t namelen;
	const char *value; /* OWS trimmed, not NUL-terminated */
	size_t valuelen;
};

struct http_request {
	enum http_method method;
	const char *method_str;
	size_t method_len;
	const char *target; /* origin-form, or "*" for OPTIONS */
	size_t target_len;
	const char *path; /* target up to '?' */
	size_t path_len;
	const char *query; /* after '?', or NULL */
	size_t query_len;
	int version_minor; /* 0 or 1 */
	struct http_header headers[HTTP_MAX_HEADERS];
	size_t nheaders;
	size_t head_len; /* bytes of the head, final CRLF included */
	int chunked; /* Transfer-Encoding: chunked */
	uint64_t content_length; /* when !chunked */
	int keep_alive; /* the client lets the connection persist */
	int expect_continue; /* Expect: 100-continue */
	const char *body; /* set by the caller once the body is in */
	size_t body_len;
	/* Set by the caller: the client's address as text ("" when not
	 * known), the IPv4 address or the IPv6 /64 its limits count by. */
	char peer[48];
};

/*
 * Parse a request head from buf[0..len). HTTP_MORE when the head is not
 * complete yet (and still within the limits); HTTP_OK fills *req.
 * Empty lines before the request line are skipped as RFC 9112 2.2 allows.
 */
int http_parse_head(const char *buf, size_t len, const struct http_limits *,
    struct http_request *req, int *status);

/*
 * The request's bytes have been moved or copied from `from` to `to`
 * (same offsets): point req into the new place. Cheaper than parsing the
 * head again.
 */
void http_request_move(
    struct http_request *req, const char *from, const char *to);

/* Find a header by case-insensitive name; NULL if absent. */
const struct http_header *http_find_header(
    const struct http_request *, const char *name);

/*
 * Strict chunked decoder, incremental and in place: it consumes raw bytes
 * from buf[*rpos..len) and writes decoded bytes at buf[*wpos..], which never
 * overtakes *rpos. Chunk extensions and trailer fields are refused (400).
 * HTTP_OK when the last chunk and the final CRLF have been consumed.
 */
struct http_chunked {
	int state;
	uint64_t remaining;
	uint64_t total; /* decoded so far, against max_body */
	unsigned ndigits;
};
void http_chunked_init(struct http_chunked *);
int http_chunked_decode(struct http_chunked *, char *buf, size_t len,
    size_t *rpos, size_t *wpos, uint64_t max_body, int *status);

/* A growable byte buffer; on allocation failure it sets oom and drops. */
struct http_buf {
	char *data;
	size_t len;
	size_t cap;
	int oom;
};
void http_buf_init(struct http_buf *);
void http_buf_free(struct http_buf *);
void http_buf_reset(struct http_buf *);
void http_buf_add(struct http_buf *, const void *, size_t);
void http_buf_puts(struct http_buf *, const char *);
/* v in decimal. */
void http_buf_putu(struct http_buf *, uint64_t v);
void http_buf_printf(struct http_buf *, const char *, ...)
    __attribute__((format(printf, 2, 3)));
/* Remove the first n bytes. */
void http_buf_consume(struct http_buf *, size_t n);

/* Reason phrase for a status ("Not Found"); "Unknown" otherwise. */
const char *http_reason(int status);

/*
 * Start a response: status line, then Content-Length (unless no_length, for
 * an event stream that ends with the connection), Content-Type if ctype,
 * and "Connection: close" if close. Add more fields with
 * http_response_header(), then end with http_response_body().
 */
void http_response_begin(struct http_buf *, int status, const char *ctype,
    size_t body_len, int close);
void http_response_header(
    struct http_buf *, const char *name, const char *value);
void http_response_body(
    struct http_buf *, const void *body, size_t len, int head_only);

/* Case-insensitive compare of a counted string with a C string. */
int http_token_eq(const char *s, size_t len, const char *lit);

#endif

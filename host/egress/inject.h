/*
 * Secrets injected at egress (docs/egress.md, "Secrets injected at
 * egress"): the pure parts, with no TLS and no I/O, so that the
 * policy, the vmm and the tests can use them: the grant's target for a
 * destination with an injection, the request head's check and rewrite,
 * and the placeholder scanner for everything else a guest sends.
 *
 * A guest holds a placeholder, never the value:
 *
 *	keep-placeholder-<secret name>-<32 hex digits, random per run>
 *
 * Every placeholder begins with EGRESS_INJECT_MARKER; the scanner looks
 * for that prefix, so a placeholder of any secret, of any run, is found.
 */
#ifndef KEEP_HOST_EGRESS_INJECT_H
#define KEEP_HOST_EGRESS_INJECT_H

#include <stddef.h>
#include <stdint.h>

#include "host/egress/egress.h"

#define EGRESS_INJECT_MARKER "keep-placeholder-"
#define EGRESS_INJECT_MARKER_LEN (sizeof(EGRESS_INJECT_MARKER) - 1)
/* The marker, a name of up to 63 bytes, '-', 32 hex digits, NUL. */
#define EGRESS_PLACEHOLDER_MAX (EGRESS_INJECT_MARKER_LEN + 63 + 1 + 32 + 1)
#define EGRESS_INJECT_NAME_MAX 64 /* a secret's or header's name + NUL */
#define EGRESS_INJECT_HEAD_MAX 16384 /* a request's line and headers */
#define EGRESS_INJECT_HEADERS_MAX 100

enum egress_inject_err {
	EGRESS_INJECT_OK = 0,
	EGRESS_INJECT_MALFORMED = 2300, /* not an HTTP/1.x request head */
	EGRESS_INJECT_TOO_LARGE, /* head or header count over the bound */
	EGRESS_INJECT_PLACEHOLDER, /* a placeholder where none may be */
	EGRESS_INJECT_HOST, /* Host is not the connection's name */
	EGRESS_INJECT_VALUE, /* the value cannot be a header value */
	EGRESS_INJECT_ARG /* bad argument from the caller */
};

const char *egress_inject_strerror(int err);

/*
 * The grant's target for a connect whose destination injects a secret:
 * egress_grant_target()'s string followed by " inject SECRET as HEADER"
 * (the header lower-cased), so the policy's choice of secret and header
 * is under the grant's MAC. Returns 0 or EGRESS_INJECT_ARG.
 */
#define EGRESS_INJECT_TARGET_MAX (EGRESS_HOST_MAX + 24 + 2 * 64 + 16)
int egress_grant_target_inject(const char *host, uint16_t port, int allow_http,
    int allow_private, const char *secret, const char *header, char *buf,
    size_t buflen);

/* A placeholder for secret `name` from 16 random bytes into
 * out[EGRESS_PLACEHOLDER_MAX]. Returns 0, or -1 for a bad name. */
int egress_placeholder_make(
    const char *name, const uint8_t random[16], char *out, size_t outlen);

/*
 * Where the request head ends in buf[0, len): its length, the final
 * CRLF CRLF included, or 0 when it has not ended yet.
 */
size_t egress_inject_head_end(const uint8_t *buf, size_t len);

/* What one connection may substitute. */
struct egress_inject {
	const char *name; /* the connection's host name (Host must be it) */
	uint16_t port;
	const char *header; /* the header the placeholder may be in */
	const char *placeholder; /* this run's placeholder for the secret */
	const uint8_t *value; /* NULL or len 0: nothing to substitute */
	size_t value_len;
};

/*
 * Check and rewrite one request head (head[0, len), ending with CRLF
 * CRLF, at most EGRESS_INJECT_HEAD_MAX bytes): an HTTP/1.0 or 1.1
 * request line with an origin-form target (or "*"), header lines as
 * RFC 9112 has them (token names, no folding, CRLF only), exactly one
 * Host, equal to in->name (with ":port" optional). Every occurrence of
 * in->placeholder in in->header's values becomes the value; any other
 * occurrence of the marker anywhere (the request line, another header,
 * a placeholder of another secret or run) refuses the request. The
 * guest's Connection, Keep-Alive and Proxy-Connection are dropped and
 * "Connection: close" added: one request a connection, so what follows
 * the head is body to relay and scan, never another head to rewrite.
 *
 * On EGRESS_INJECT_OK, *out (malloc, *outlen bytes) is the head to
 * send: it holds the value, so the caller zeroes it before it frees it;
 * *replaced counts substitutions. Otherwise *out is NULL and *why is a
 * static phrase for the audit log.
 */
int egress_inject_head(const struct egress_inject *in, const uint8_t *head,
    size_t len, uint8_t **out, size_t *outlen, unsigned *replaced,
    const char **why);

/*
 * A body the relay holds whole before it sends the head (so that a
 * placeholder in it refuses the request before any of it reaches the
 * server): the length a checked head declares in its one Content-Length
 * when it has no Transfer-Encoding. Returns 1 and sets *len, else 0
 * (none, chunked, or duplicated: relayed as it streams, and cut where
 * a placeholder shows).
 */
#define EGRESS_INJECT_BODY_HOLD (64u << 10)
int egress_inject_content_length(const uint8_t *head, size_t len, uint64_t *cl);

/* The method of a checked head, for the audit log ("" if none). */
void egress_inject_method(
    const uint8_t *head, size_t len, char *out, size_t outlen);

/*
 * A streaming scan for the marker across calls (a placeholder may be
 * split between two reads). Start zeroed. Returns 1 once the marker has
 * been seen (and on every call after), else 0.
 */
struct egress_marker_scan {
	size_t matched; /* bytes of the marker matched at the end so far */
	int found;
};
int egress_marker_scan(
    struct egress_marker_scan *s, const uint8_t *buf, size_t len);

#endif

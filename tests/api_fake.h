/*
 * An in-memory backend for the API: every op of struct api_backend, with
 * deterministic behaviour, for unit tests, fuzzing and the test server
 * (build/libkeeptest.a; never linked into keepd). Not for production:
 * tokens are opaque strings registered by the test, and "runs" are
 * simulated:
 *
 *   execute: stdout is "<language>: <code>\n"; code "loop" times out
 *            (exit 124, reason "timeout"), code starting with "fail"
 *            exits 1 with the rest on stderr.
 *   contexts: made, listed, restarted and deleted; a cell answers the
 *            driver's lines for stdout "<language>: <code>\n" (code
 *            "raise": an error line) and the context's cell count.
 *   commands: echo, cat FILE..., sha256sum FILE..., pwd (the cwd),
 *            true, false; any other name is refused as outside the exec
 *            allowlist (403). A cwd that is no directory made by
 *            files/mkdir is 404, as the vmm answers it.
 *   locks:   ids "lock-N", held until their ttl (default 60 s); taken
 *            again or released with Keep-Lock naming them.
 *   revoke:  every registered token with the jti is refused (401) from
 *            then on; add_token's tokens have jti "jti-<slot>".
 */
#ifndef KEEP_API_FAKE_H
#define KEEP_API_FAKE_H

#include "host/api/api.h"

struct api_fake;

/* now_s: the fake's clock for tokens and timestamps (NULL: real time). */
struct api_fake *api_fake_new(int64_t (*now_s)(void *), void *arg);
void api_fake_free(struct api_fake *);

/* Fill an ops table whose ctx is the fake. */
void api_fake_backend(struct api_fake *, struct api_backend *out);

/* Register a bearer token. sbx may be NULL. Returns 0 or -1 (full). */
int api_fake_add_token(struct api_fake *, const char *token, const char *sub,
    cap_set_t caps, const char *sbx, int64_t exp);

/* After `n` allowed decisions for sub, further ones get 429 (Retry-After
 * retry_s). n = 0 removes the limit. */
void api_fake_set_rate(
    struct api_fake *, const char *sub, unsigned n, unsigned retry_s);

/*
 * Deferred runs: execute with code starting "defer" answers API_PENDING
 * when the API can defer it (else at once); api_fake_flush() then resumes
 * every run waiting, in order, as a run finishing in the VMM would: a
 * run streams its output, a cell its first line in two pieces (when its
 * client reads lines as they come), then ends with "raw" raw output.
 * Returns how many it resumed. Flush before freeing the api.
 */
unsigned api_fake_flush(struct api_fake *);

/* How many deferred runs wait for api_fake_flush(). */
unsigned api_fake_pending(const struct api_fake *);
/* What terminal_input brought (a terminal's or a command's stdin
 * stream): the bytes so far, and whether their end came. A command
 * started with a stdin stream waits for api_fake_flush(), and ends
 * writing these bytes to its stdout, as cat. */
const void *api_fake_input(const struct api_fake *, size_t *len, int *eof);

/* The policy denies cap to sub (403, as the policy process would). */
void api_fake_deny(struct api_fake *, const char *sub, enum cap_id cap);

#endif

/*
 * Redaction of secret values in a run's output (docs/secrets.md): every
 * occurrence of a value becomes "***". Pure, no allocation.
 *
 * Output comes in pieces (a stream read as it grows), so a value may
 * straddle two pieces. redact_step() decides only what it can decide
 * for good: it stops before a tail that is the beginning of some value
 * (at most the longest value's length less one byte) and the caller
 * presents that tail again with what follows; with final set, the tail
 * is plain text. Where two values match at one place the longer wins,
 * and a shorter match waits while a longer one may still complete, so
 * redacting a stream piece by piece gives exactly what redacting it
 * whole gives. Values shorter than SECRET_VALUE_MIN are refused when set,
 * so the output is never longer than the input.
 */
#ifndef KEEP_REDACT_H
#define KEEP_REDACT_H

#include <stddef.h>
#include <stdint.h>

#define REDACT_MARK "***"

struct redact_value {
	const uint8_t *v;
	size_t len; /* >= 3 */
};

/*
 * Redact in[0, len) into out (room for len bytes). Returns how many
 * input bytes were decided (the rest is a tail to present again), and
 * sets *outlen.
 */
size_t redact_step(const struct redact_value *vals, size_t nvals,
    const uint8_t *in, size_t len, int final, uint8_t *out, size_t *outlen);

#endif

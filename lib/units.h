/*
 * Sizes and durations as people write them in policy, config and flags:
 * "128M", "64K", "1G", "4096"; "30s", "500ms", "2m", "1h", "24h".
 * Strict: digits then one optional suffix, nothing else, no overflow.
 */
#ifndef KEEP_UNITS_H
#define KEEP_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* Bytes. Suffixes K, M, G, T (powers of 1024), optionally followed by
 * "iB" or "B". Returns 0, or -1 if the text is not a size or overflows. */
int units_parse_size(const char *s, size_t len, uint64_t *bytes);

/* Milliseconds. Suffixes ms, s, m (or min), h, d; a bare number is
 * seconds. Returns 0, or -1. */
int units_parse_duration(const char *s, size_t len, uint64_t *ms);

/* Canonical text for a size or duration, the inverse of the parsers:
 * the largest unit that divides exactly. Returns snprintf's result. */
int units_format_size(char *buf, size_t len, uint64_t bytes);
int units_format_duration(char *buf, size_t len, uint64_t ms);

#endif

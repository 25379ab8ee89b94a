/*
 * Time zones for schedules, without the C library's TZ machinery (which
 * opens files and keeps global state: neither is allowed in a confined,
 * testable process).
 *
 * A zone is the POSIX TZ rule that closes every version 2+ TZif file in
 * /usr/share/zoneinfo ("CET-1CEST,M3.5.0,M10.5.0/3"): a standard offset
 * and, optionally, a daylight offset with the rules that start and end
 * it each year. The rule describes the zone from its last transition on,
 * which is all a schedule needs: its fires are in the future.
 *
 * Pure: no I/O, no globals. Functions return 0 or -1.
 */
#ifndef KEEP_TZ_H
#define KEEP_TZ_H

#include <stddef.h>
#include <stdint.h>

#define TZ_RULE_MAX 64 /* longest POSIX TZ string accepted, NUL excluded */

/* When daylight time starts or ends, in local time of the offset in
 * force before the change. */
struct tz_change {
	char kind; /* 'J': day 1-365 (no Feb 29); 'D': day 0-365; 'M' */
	uint16_t day; /* J, D: the day; M: weekday 0-6 */
	uint8_t month, week; /* M: month 1-12, week 1-5 (5: the last) */
	int32_t secs; /* time of day, -167h to 167h */
};

struct tz {
	int32_t std_off; /* seconds east of UTC */
	int32_t dst_off;
	int has_dst;
	struct tz_change start, end;
};

/* UTC itself. */
void tz_utc(struct tz *out);

/* A POSIX TZ rule, len bytes (no NUL needed), such as "EST5EDT,M3.2.0,
 * M11.1.0" or "<+0330>-3:30". A daylight zone must give its rules. */
int tz_parse_rule(const char *s, size_t len, struct tz *out);

/* The rule of a TZif file's bytes (RFC 8536, version 2 or later): the
 * headers and block sizes are checked against len before the footer is
 * read. -1 for a version 1 file or an empty footer. */
int tz_from_tzif(const uint8_t *data, size_t len, struct tz *out);

/* Is a zone name safe to look up under a zoneinfo directory? Letters,
 * digits, '_', '-', '+' and '/' between non-empty components that do
 * not start with '.'; at most 64 bytes. */
int tz_name_valid(const char *name);

/* A zone by name, read from the zoneinfo directory dir (an open
 * descriptor of /usr/share/zoneinfo, say): "UTC", "Europe/Berlin". The
 * one function here that does I/O (lib/tz_load.c). -1 with errno
 * EINVAL for a bad name or file, or open's errno. */
int tz_load(int dir, const char *name, struct tz *out);

/* The offset east of UTC in force at t (seconds since the epoch). */
int32_t tz_offset(const struct tz *tz, int64_t t);

/* Civil dates (proleptic Gregorian) and days since 1970-01-01. */
int64_t tz_days_from_civil(int64_t y, unsigned m, unsigned d);
void tz_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d);

#endif

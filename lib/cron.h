/*
 * Schedules as people write them: five-field cron expressions
 * ("*\/15 9-17 * * mon-fri"), the @-names (@hourly, @daily, @midnight,
 * @weekly, @monthly, @yearly, @annually), and the next times they fire
 * in a time zone (lib/tz.h).
 *
 * Strict: exactly five fields; numbers in range; ranges low to high;
 * steps from 1 to the field's width; names (jan-dec, sun-sat, any case)
 * only in the month and weekday fields and never as a step; 7 is Sunday
 * as 0 is. As in Vixie cron, when both the day of the month and the day
 * of the week are restricted (neither starts with '*'), a day matches if
 * either does.
 *
 * Pure: no I/O, no globals, no allocation. Functions return 0 or -1.
 */
#ifndef KEEP_CRON_H
#define KEEP_CRON_H

#include <stddef.h>
#include <stdint.h>

#include "lib/tz.h"

#define CRON_TEXT_MAX 256 /* longest expression accepted, NUL excluded */

struct cron {
	uint64_t minute; /* bit n: minute n (0-59) */
	uint32_t hour; /* 0-23 */
	uint32_t mday; /* 1-31 */
	uint16_t month; /* 1-12 */
	uint8_t wday; /* 0-6, Sunday 0 */
	uint8_t any_day; /* 1: day of month or week starts with '*' */
};

/* Parse len bytes of text (no NUL needed). On error, err names the field
 * and what is wrong with it ("field 2 (hour): 24 is out of range 0-23"). */
int cron_parse(
    const char *text, size_t len, struct cron *out, char *err, size_t errlen);

/* The first minute after `after` (seconds since the epoch, UTC) whose
 * local time in tz matches, in *next. A local time that a change to
 * daylight saving time skips never fires; one that the change back
 * repeats fires once, at its first occurrence. -1 if nothing matches in
 * the next 8 years ("0 0 30 2 *"). */
int cron_next(
    const struct cron *c, const struct tz *tz, int64_t after, int64_t *next);

#endif

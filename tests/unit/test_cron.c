/* Unit tests for lib/cron.c and lib/tz.c: the grammar, the day rule,
 * daylight-saving changes, POSIX TZ rules and TZif footers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "lib/cron.h"
#include "lib/tz.h"

static int
parse(const char *s, struct cron *c, char *err)
{
	return cron_parse(s, strlen(s), c, err, 160);
}

/* Seconds since the epoch of a UTC civil time. */
static int64_t
utc(int y, unsigned mo, unsigned d, unsigned h, unsigned mi)
{
	return tz_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60;
}

static int64_t
next_of(const char *expr, const struct tz *tz, int64_t after)
{
	struct cron c;
	char err[160];
	int64_t t;

	assert_int_equal(parse(expr, &c, err), 0);
	if (cron_next(&c, tz, after, &t) == -1)
		return -1;
	return t;
}

static struct tz
rule(const char *s)
{
	struct tz tz;

	assert_int_equal(tz_parse_rule(s, strlen(s), &tz), 0);
	return tz;
}

static void
test_grammar(void **state)
{
	struct cron c;
	char err[160];

	(void)state;
	assert_int_equal(parse("*/15 9-17 * * mon-fri", &c, err), 0);
	assert_true(c.minute == (1ULL | 1ULL << 15 | 1ULL << 30 | 1ULL << 45));
	assert_int_equal(c.hour, 0x3fe00);
	assert_int_equal(c.wday, 0x3e);
	assert_int_equal(parse("0 0 1 JAN,jul *", &c, err), 0);
	assert_int_equal(c.month, 1u << 1 | 1u << 7);
	assert_int_equal(parse("5/20 * * * 7", &c, err), 0);
	assert_true(c.minute == (1ULL << 5 | 1ULL << 25 | 1ULL << 45));
	assert_int_equal(c.wday, 1); /* 7 is Sunday */
	assert_int_equal(parse("0 0 * * 5-7", &c, err), 0);
	assert_int_equal(c.wday, 1u | 1u << 5 | 1u << 6);
	assert_int_equal(parse("0  0\t* * *", &c, err), 0);
	assert_int_equal(parse("@hourly", &c, err), 0);
	assert_true(c.minute == 1 && c.hour == 0xffffff);
	assert_int_equal(parse("@weekly", &c, err), 0);
	assert_int_equal(c.wday, 1);
}

static void
test_errors(void **state)
{
	static const struct {
		const char *expr, *err;
	} bad[] = {
		{ "0 24 * * *", "field 2 (hour): 24 is out of range 0-23" },
		{ "* * * *", "field 5 (day of week): missing" },
		{ "* * * * * *",
		    "more than five fields (or a trailing blank)" },
		{ "* * * * * ", "more than five fields (or a trailing blank)" },
		{ " * * * * *", "field 1 (minute): a number is expected" },
		{ "*/0 * * * *",
		    "field 1 (minute): step 0 is out of range 1-60" },
		{ "5-1 * * * *", "field 1 (minute): range 5-1 runs backwards" },
		{ "0 0 0 * *",
		    "field 3 (day of month): 0 is out of range 1-31" },
		{ "0 0 * 13 *", "field 4 (month): 13 is out of range 1-12" },
		{ "mon * * * *",
		    "field 1 (minute): names are not allowed here" },
		{ "0 0 * * fri-",
		    "field 5 (day of week): a number is "
		    "expected" },
		{ "0 0 * * 1;2",
		    "field 5 (day of week): unexpected "
		    "character 0x3b" },
		{ "0 0 * * */mon",
		    "field 5 (day of week): a step must be a "
		    "number" },
		{ "0 0 * foo *", "field 4 (month): unknown name" },
		{ "1,,2 * * * *", "field 1 (minute): a number is expected" },
		{ "0001 * * * *",
		    "field 1 (minute): a number has too many "
		    "digits" },
		{ "@reboot",
		    "unknown name (@yearly, @annually, @monthly, "
		    "@weekly, @daily, @midnight, @hourly)" },
		{ "", "empty, too long or not text" },
	};
	struct cron c;
	char err[160];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i].expr, &c, err), -1);
		assert_string_equal(err, bad[i].err);
	}
	assert_int_equal(cron_parse("* * *\0* *", 9, &c, err, sizeof(err)), -1);
}

/* Vixie cron's rule: restricted day of month and day of week match
 * either; a field starting with '*' makes both required. */
static void
test_day_rule(void **state)
{
	struct tz tz;

	(void)state;
	tz_utc(&tz);
	/* 2026-11-24 is a Tuesday. "1st of the month or a Friday". */
	assert_int_equal(next_of("0 12 1 * fri", &tz, utc(2026, 11, 24, 0, 0)),
	    utc(2026, 11, 27, 12, 0));
	/* "*" in day of week: only the 1st. */
	assert_int_equal(next_of("0 12 1 * *", &tz, utc(2026, 11, 24, 0, 0)),
	    utc(2026, 12, 1, 12, 0));
	/* "*\/2" counts as '*': both must hold (odd days that are Fridays). */
	assert_int_equal(next_of("0 12 */2 * 5", &tz, utc(2026, 11, 24, 0, 0)),
	    utc(2026, 11, 27, 12, 0));
	assert_int_equal(next_of("0 12 */2 * 6", &tz, utc(2026, 11, 24, 0, 0)),
	    utc(2026, 12, 5, 12, 0));
	assert_int_equal(next_of("0 0 30 2 *", &tz, 0), -1);
	assert_int_equal(next_of("0 0 29 2 *", &tz, utc(2026, 1, 1, 0, 0)),
	    utc(2028, 2, 29, 0, 0));
	/* Strictly after, to the minute. */
	assert_int_equal(next_of("* * * * *", &tz, utc(2026, 1, 1, 0, 0)),
	    utc(2026, 1, 1, 0, 1));
	assert_int_equal(next_of("* * * * *", &tz, utc(2026, 1, 1, 0, 0) + 59),
	    utc(2026, 1, 1, 0, 1));
}

static void
test_daylight_saving(void **state)
{
	struct tz berlin = rule("CET-1CEST,M3.5.0,M10.5.0/3");
	struct tz ny = rule("EST5EDT,M3.2.0,M11.1.0");
	struct tz dublin = rule("IST-1GMT0,M10.5.0,M3.5.0/1");

	(void)state;
	/* 2026-03-29 02:30 does not exist in Berlin: skipped. */
	assert_int_equal(next_of("30 2 * * *", &berlin, utc(2026, 3, 28, 2, 0)),
	    utc(2026, 3, 30, 0, 30));
	/* 2026-10-25 02:30 happens twice in Berlin: once, the first time
	 * (CEST, 00:30 UTC), and the next fire is a day later. */
	assert_int_equal(
	    next_of("30 2 * * *", &berlin, utc(2026, 10, 24, 12, 0)),
	    utc(2026, 10, 25, 0, 30));
	assert_int_equal(
	    next_of("30 2 * * *", &berlin, utc(2026, 10, 25, 0, 30)),
	    utc(2026, 10, 26, 1, 30));
	assert_int_equal(tz_offset(&ny, utc(2026, 7, 1, 0, 0)), -4 * 3600);
	assert_int_equal(tz_offset(&ny, utc(2026, 12, 1, 0, 0)), -5 * 3600);
	/* New York changes at 02:00 local: 07:00 UTC on 2026-03-08. */
	assert_int_equal(tz_offset(&ny, utc(2026, 3, 8, 6, 59)), -5 * 3600);
	assert_int_equal(tz_offset(&ny, utc(2026, 3, 8, 7, 0)), -4 * 3600);
	/* Dublin: "standard" is summer (IST), winter is the negative
	 * daylight time (GMT). */
	assert_int_equal(tz_offset(&dublin, utc(2026, 7, 1, 0, 0)), 3600);
	assert_int_equal(tz_offset(&dublin, utc(2026, 1, 1, 0, 0)), 0);
}

static void
test_rules(void **state)
{
	static const char *const bad[] = { "", "U", "UTC", "UTC+25",
		"CET-1CEST", "CET-1CEST,M3.5.0", "CET-1CEST,M13.1.0,M10.5.0",
		"CET-1CEST,M3.6.0,M10.5.0", "CET-1CEST,J0,J365",
		"CET-1CEST,M3.5.0,M10.5.0/168", "<+03", "<+0330>-3:60",
		"CET-1 CEST,M3.5.0,M10.5.0" };
	struct tz tz;
	size_t i;

	(void)state;
	tz = rule("<+0330>-3:30");
	assert_int_equal(tz.std_off, 3 * 3600 + 1800);
	assert_false(tz.has_dst);
	tz = rule("<-03>3<-02>,M3.5.0/-2,M10.5.0/-1");
	assert_int_equal(tz.dst_off, -2 * 3600);
	assert_int_equal(tz.start.secs, -2 * 3600);
	tz = rule("EST5EDT,0/0,J365/25"); /* daylight all year */
	assert_int_equal(tz_offset(&tz, utc(2026, 6, 1, 0, 0)), -4 * 3600);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(
		    tz_parse_rule(bad[i], strlen(bad[i]), &tz), -1);
	assert_true(tz_name_valid("Europe/Berlin"));
	assert_true(tz_name_valid("Etc/GMT+5"));
	assert_false(tz_name_valid("../etc/passwd"));
	assert_false(tz_name_valid("/etc/passwd"));
	assert_false(tz_name_valid("Europe//Berlin"));
	assert_false(tz_name_valid("Europe/.hidden"));
	assert_false(tz_name_valid("Europe/"));
}

/* A version 2 TZif file with one type and the given footer. */
static size_t
tzif(uint8_t *buf, const char *footer)
{
	size_t n = 0, i;

	for (i = 0; i < 2; i++) {
		memset(buf + n, 0, 44);
		memcpy(buf + n, "TZif2", 5);
		buf[n + 39] = 1; /* typecnt */
		buf[n + 43] = 4; /* charcnt */
		n += 44;
		memset(buf + n, 0, 6 + 4);
		memcpy(buf + n + 6, "CET", 4);
		n += 6 + 4;
	}
	n += (size_t)sprintf((char *)buf + n, "\n%s\n", footer);
	return n;
}

static void
test_tzif(void **state)
{
	uint8_t buf[256];
	struct tz tz;
	size_t n;

	(void)state;
	n = tzif(buf, "CET-1CEST,M3.5.0,M10.5.0/3");
	assert_int_equal(tz_from_tzif(buf, n, &tz), 0);
	assert_int_equal(tz.std_off, 3600);
	assert_int_equal(tz_from_tzif(buf, n - 1, &tz), -1); /* no newline */
	buf[4] = '\0'; /* version 1: no footer */
	assert_int_equal(tz_from_tzif(buf, n, &tz), -1);
	n = tzif(buf, "");
	assert_int_equal(tz_from_tzif(buf, n, &tz), -1);
	n = tzif(buf, "UTC0");
	buf[32] = 0xff; /* timecnt far past the end */
	assert_int_equal(tz_from_tzif(buf, n, &tz), -1);
	assert_int_equal(tz_from_tzif(buf, 10, &tz), -1);
}

static void
test_civil(void **state)
{
	int64_t d, y;
	unsigned m, day;

	(void)state;
	assert_int_equal(tz_days_from_civil(1970, 1, 1), 0);
	assert_int_equal(tz_days_from_civil(2000, 3, 1), 11017);
	for (d = -800000; d < 800000; d += 997) {
		tz_civil_from_days(d, &y, &m, &day);
		assert_int_equal(tz_days_from_civil(y, m, day), d);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_grammar),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_day_rule),
		cmocka_unit_test(test_daylight_saving),
		cmocka_unit_test(test_rules),
		cmocka_unit_test(test_tzif),
		cmocka_unit_test(test_civil),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

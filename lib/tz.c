/*
 * POSIX TZ rules, the footers of TZif files, and civil dates
 * (lib/tz.h). The grammar (POSIX.1-2017, 8.3, with RFC 8536's extension
 * of rule times to -167h..167h):
 *
 *   rule   = std offset [ dst [ offset ] "," change "," change ]
 *   name   = 3*ALPHA | "<" 3*( ALPHA | DIGIT | "+" | "-" ) ">"
 *   offset = [ "+" | "-" ] hh [ ":" mm [ ":" ss ] ]   (west of UTC)
 *   change = ( "J" 1-365 | 0-365 | "M" 1-12 "." 1-5 "." 0-6 ) [ "/" time ]
 */
#include <string.h>

#include "lib/tz.h"

#define DAY 86400

struct cursor {
	const char *p, *end;
};

static int
peek(const struct cursor *c)
{
	return c->p < c->end ? (unsigned char)*c->p : -1;
}

static int
is_alpha(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
}

static int
is_digit(int ch)
{
	return ch >= '0' && ch <= '9';
}

/* A decimal number of at most `max`, at most 3 digits. */
static int
number(struct cursor *c, unsigned max, unsigned *out)
{
	unsigned v = 0, n = 0;

	while (is_digit(peek(c)) && n < 3) {
		v = v * 10 + (unsigned)(*c->p++ - '0');
		n++;
	}
	if (n == 0 || is_digit(peek(c)) || v > max)
		return -1;
	*out = v;
	return 0;
}

static int
zone_name(struct cursor *c)
{
	size_t n = 0;

	if (peek(c) == '<') {
		c->p++;
		while (is_alpha(peek(c)) || is_digit(peek(c)) ||
		    peek(c) == '+' || peek(c) == '-') {
			c->p++;
			n++;
		}
		if (peek(c) != '>')
			return -1;
		c->p++;
	} else
		while (is_alpha(peek(c))) {
			c->p++;
			n++;
		}
	return n >= 3 ? 0 : -1;
}

/* [+-]hh[:mm[:ss]] with hh at most max_hours; seconds, signed. */
static int
clock_time(struct cursor *c, unsigned max_hours, int32_t *out)
{
	unsigned h, m = 0, s = 0;
	int neg = 0;

	if (peek(c) == '+' || peek(c) == '-')
		neg = *c->p++ == '-';
	if (number(c, max_hours, &h) == -1)
		return -1;
	if (peek(c) == ':') {
		c->p++;
		if (number(c, 59, &m) == -1)
			return -1;
		if (peek(c) == ':') {
			c->p++;
			if (number(c, 59, &s) == -1)
				return -1;
		}
	}
	*out = (int32_t)(h * 3600 + m * 60 + s) * (neg ? -1 : 1);
	return 0;
}

static int
change(struct cursor *c, struct tz_change *out)
{
	unsigned v;

	memset(out, 0, sizeof(*out));
	if (peek(c) == 'J') {
		c->p++;
		if (number(c, 365, &v) == -1 || v < 1)
			return -1;
		out->kind = 'J';
		out->day = (uint16_t)v;
	} else if (peek(c) == 'M') {
		c->p++;
		if (number(c, 12, &v) == -1 || v < 1)
			return -1;
		out->month = (uint8_t)v;
		if (peek(c) != '.')
			return -1;
		c->p++;
		if (number(c, 5, &v) == -1 || v < 1)
			return -1;
		out->week = (uint8_t)v;
		if (peek(c) != '.')
			return -1;
		c->p++;
		if (number(c, 6, &v) == -1)
			return -1;
		out->kind = 'M';
		out->day = (uint16_t)v;
	} else {
		if (number(c, 365, &v) == -1)
			return -1;
		out->kind = 'D';
		out->day = (uint16_t)v;
	}
	out->secs = 2 * 3600;
	if (peek(c) == '/') {
		c->p++;
		return clock_time(c, 167, &out->secs);
	}
	return 0;
}

void
tz_utc(struct tz *out)
{
	memset(out, 0, sizeof(*out));
}

int
tz_parse_rule(const char *s, size_t len, struct tz *out)
{
	struct cursor c = { s, s + len };
	int32_t west;

	if (len == 0 || len > TZ_RULE_MAX)
		return -1;
	memset(out, 0, sizeof(*out));
	if (zone_name(&c) == -1 || clock_time(&c, 24, &west) == -1)
		return -1;
	out->std_off = -west;
	if (peek(&c) == -1)
		return 0;
	if (zone_name(&c) == -1)
		return -1;
	out->has_dst = 1;
	out->dst_off = out->std_off + 3600;
	if (peek(&c) != ',') {
		if (clock_time(&c, 24, &west) == -1)
			return -1;
		out->dst_off = -west;
	}
	if (peek(&c) != ',')
		return -1; /* daylight time without its rules */
	c.p++;
	if (change(&c, &out->start) == -1 || peek(&c) != ',')
		return -1;
	c.p++;
	if (change(&c, &out->end) == -1 || peek(&c) != -1)
		return -1;
	return 0;
}

static uint32_t
be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

#define TZIF_HEADER 44

/* Bytes of the data block after a header, whose counts are checked to
 * be small enough that the sum cannot overflow. */
static int
tzif_block(const uint8_t *h, unsigned time_size, uint64_t *len)
{
	uint64_t isut = be32(h + 20), isstd = be32(h + 24), leap = be32(h + 28),
	         times = be32(h + 32), types = be32(h + 36),
	         chars = be32(h + 40);

	if (memcmp(h, "TZif", 4) != 0 || isut > (1u << 20) ||
	    isstd > (1u << 20) || leap > (1u << 20) || times > (1u << 20) ||
	    types > 256 || chars > (1u << 20))
		return -1;
	*len = times * (time_size + 1) + types * 6 + chars +
	    leap * (time_size + 4) + isstd + isut;
	return 0;
}

int
tz_from_tzif(const uint8_t *data, size_t len, struct tz *out)
{
	uint64_t v1, v2, at;
	const uint8_t *rule, *nl;

	if (len < TZIF_HEADER || data[4] < '2' ||
	    tzif_block(data, 4, &v1) == -1)
		return -1;
	at = TZIF_HEADER + v1;
	if (at > len || len - at < TZIF_HEADER ||
	    tzif_block(data + at, 8, &v2) == -1)
		return -1;
	at += TZIF_HEADER + v2;
	if (at >= len || len - at < 2 || data[at] != '\n')
		return -1;
	rule = data + at + 1;
	if ((nl = memchr(rule, '\n', len - at - 1)) == NULL ||
	    nl + 1 != data + len)
		return -1;
	return tz_parse_rule((const char *)rule, (size_t)(nl - rule), out);
}

int
tz_name_valid(const char *name)
{
	size_t i, n = strlen(name);
	int start = 1;

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++) {
		char ch = name[i];

		if (ch == '/') {
			if (start)
				return 0;
			start = 1;
			continue;
		}
		if (start && ch == '.')
			return 0;
		if (!is_alpha(ch) && !is_digit(ch) && ch != '_' && ch != '-' &&
		    ch != '+')
			return 0;
		start = 0;
	}
	return !start;
}

int64_t
tz_days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

void
tz_civil_from_days(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t z = days + 719468, era, doe, yoe, doy, mp;

	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	*m = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	*y = yoe + era * 400 + (*m <= 2);
}

static int
leap_year(int64_t y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static unsigned
month_days(int64_t y, unsigned m)
{
	static const unsigned len[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31,
		30, 31 };

	return len[m - 1] + (m == 2 && leap_year(y));
}

/* The change's moment in year y, in seconds of local time since the
 * epoch (of the offset in force before it). */
static int64_t
change_local(const struct tz_change *ch, int64_t y)
{
	int64_t day;
	unsigned first, mday;

	switch (ch->kind) {
	case 'J':
		day = tz_days_from_civil(y, 1, 1) + ch->day - 1 +
		    (leap_year(y) && ch->day >= 60);
		break;
	case 'D':
		day = tz_days_from_civil(y, 1, 1) + ch->day;
		break;
	default:
		day = tz_days_from_civil(y, ch->month, 1);
		/* 1970-01-01 was a Thursday (4). */
		first = (unsigned)(((day % 7) + 7 + 4) % 7);
		mday = 1 + (ch->day + 7 - first) % 7 + 7u * (ch->week - 1u);
		while (mday > month_days(y, ch->month))
			mday -= 7;
		day += mday - 1;
		break;
	}
	return day * DAY + ch->secs;
}

int32_t
tz_offset(const struct tz *tz, int64_t t)
{
	int64_t y, start, end;
	unsigned m, d;

	if (!tz->has_dst)
		return tz->std_off;
	tz_civil_from_days(
	    (t + tz->std_off - (((t + tz->std_off) % DAY) + DAY) % DAY) / DAY,
	    &y, &m, &d);
	start = change_local(&tz->start, y) - tz->std_off;
	end = change_local(&tz->end, y) - tz->dst_off;
	if (start < end)
		return (t >= start && t < end) ? tz->dst_off : tz->std_off;
	return (t >= end && t < start) ? tz->std_off : tz->dst_off;
}

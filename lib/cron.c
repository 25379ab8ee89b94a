/*
 * Five-field cron expressions (lib/cron.h). The grammar of one field:
 *
 *   field   = element *( "," element )
 *   element = ( "*" | value [ "-" value ] ) [ "/" step ]
 *   value   = number | name        (names: month and weekday fields)
 *
 * "a/n" means "a-max/n", as in Vixie cron.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lib/cron.h"
#include "lib/util.h"

#define DAY 86400
#define SEARCH_DAYS (8 * 366)
#define TIME_MAX ((int64_t)1 << 40) /* about 34,000 years */

struct field {
	const char *name;
	unsigned min, max;
	const char *const *names; /* indexed from min, or NULL */
};

static const char *const month_names[] = { "jan", "feb", "mar", "apr", "may",
	"jun", "jul", "aug", "sep", "oct", "nov", "dec", NULL };
static const char *const day_names[] = { "sun", "mon", "tue", "wed", "thu",
	"fri", "sat", NULL };

static const struct field fields[5] = {
	{ "minute", 0, 59, NULL },
	{ "hour", 0, 23, NULL },
	{ "day of month", 1, 31, NULL },
	{ "month", 1, 12, month_names },
	{ "day of week", 0, 7, day_names },
};

static const struct {
	const char *name, *expr;
} nicknames[] = {
	{ "@yearly", "0 0 1 1 *" },
	{ "@annually", "0 0 1 1 *" },
	{ "@monthly", "0 0 1 * *" },
	{ "@weekly", "0 0 * * 0" },
	{ "@daily", "0 0 * * *" },
	{ "@midnight", "0 0 * * *" },
	{ "@hourly", "0 * * * *" },
};

struct text {
	const char *p, *end;
	char *err;
	size_t errlen;
	unsigned field; /* 0-4 */
};

static int __attribute__((format(printf, 2, 3)))
fail(struct text *t, const char *fmt, ...)
{
	char what[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (t->errlen > 0)
		snprintf(t->err, t->errlen, "field %u (%s): %s", t->field + 1,
		    fields[t->field].name, what);
	return -1;
}

static int
lower(int ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch;
}

static int
value(struct text *t, const struct field *f, unsigned *out)
{
	unsigned v = 0, n = 0, i;

	if (t->p < t->end && lower(*t->p) >= 'a' && lower(*t->p) <= 'z') {
		if (f->names == NULL || t->end - t->p < 3)
			return fail(t, "names are not allowed here");
		for (i = 0; f->names[i] != NULL; i++)
			if (lower(t->p[0]) == f->names[i][0] &&
			    lower(t->p[1]) == f->names[i][1] &&
			    lower(t->p[2]) == f->names[i][2]) {
				t->p += 3;
				*out = f->min + i;
				return 0;
			}
		return fail(t, "unknown name");
	}
	while (t->p < t->end && *t->p >= '0' && *t->p <= '9' && n < 3) {
		v = v * 10 + (unsigned)(*t->p++ - '0');
		n++;
	}
	if (n == 0)
		return fail(t, "a number is expected");
	if (t->p < t->end && *t->p >= '0' && *t->p <= '9')
		return fail(t, "a number has too many digits");
	if (v < f->min || v > f->max)
		return fail(t, "%u is out of range %u-%u", v, f->min, f->max);
	*out = v;
	return 0;
}

static int
step(struct text *t, const struct field *f, unsigned *out)
{
	unsigned v = 0, n = 0, width = f->max - f->min + 1;

	while (t->p < t->end && *t->p >= '0' && *t->p <= '9' && n < 3) {
		v = v * 10 + (unsigned)(*t->p++ - '0');
		n++;
	}
	if (n == 0)
		return fail(t, "a step must be a number");
	if ((t->p < t->end && *t->p >= '0' && *t->p <= '9') || v == 0 ||
	    v > width)
		return fail(t, "step %u is out of range 1-%u", v, width);
	*out = v;
	return 0;
}

/* One field up to its end (a blank or the end of the text) into bits. */
static int
field(struct text *t, uint64_t *bits, int *star)
{
	const struct field *f = &fields[t->field];
	unsigned lo, hi, by, v;

	*bits = 0;
	*star = t->p < t->end && *t->p == '*';
	for (;;) {
		by = 1;
		if (t->p < t->end && *t->p == '*') {
			t->p++;
			lo = f->min;
			hi = f->max;
		} else {
			if (value(t, f, &lo) == -1)
				return -1;
			hi = lo;
			if (t->p < t->end && *t->p == '-') {
				t->p++;
				if (value(t, f, &hi) == -1)
					return -1;
				if (hi < lo)
					return fail(t,
					    "range %u-%u runs backwards", lo,
					    hi);
			} else if (t->p < t->end && *t->p == '/')
				hi = f->max;
		}
		if (t->p < t->end && *t->p == '/') {
			t->p++;
			if (step(t, f, &by) == -1)
				return -1;
		}
		for (v = lo; v <= hi; v += by)
			*bits |= (uint64_t)1 << v;
		if (t->p == t->end || *t->p == ' ' || *t->p == '\t')
			return 0;
		if (*t->p != ',')
			return fail(t, "unexpected character 0x%02x",
			    (unsigned char)*t->p);
		t->p++;
	}
}

static int
parse_fields(
    const char *s, size_t len, struct cron *out, char *err, size_t errlen)
{
	struct text t = { s, s + len, err, errlen, 0 };
	uint64_t bits[5];
	int star[5];

	for (t.field = 0; t.field < 5; t.field++) {
		if (t.field > 0) {
			if (t.p == t.end || (*t.p != ' ' && *t.p != '\t'))
				return fail(&t, "missing");
			while (t.p < t.end && (*t.p == ' ' || *t.p == '\t'))
				t.p++;
		}
		if (t.p == t.end)
			return fail(&t, "missing");
		if (field(&t, &bits[t.field], &star[t.field]) == -1)
			return -1;
	}
	if (t.p != t.end) {
		if (errlen > 0)
			snprintf(err, errlen,
			    "more than five fields (or a trailing blank)");
		return -1;
	}
	if (bits[4] & (1u << 7))
		bits[4] = (bits[4] | 1u) & 0x7f; /* 7 is Sunday */
	out->minute = bits[0];
	out->hour = (uint32_t)bits[1];
	out->mday = (uint32_t)bits[2];
	out->month = (uint16_t)bits[3];
	out->wday = (uint8_t)bits[4];
	out->any_day = star[2] || star[4];
	return 0;
}

int
cron_parse(
    const char *text, size_t len, struct cron *out, char *err, size_t errlen)
{
	size_t i;

	if (errlen > 0)
		err[0] = '\0';
	memset(out, 0, sizeof(*out));
	if (len == 0 || len > CRON_TEXT_MAX || memchr(text, '\0', len)) {
		if (errlen > 0)
			snprintf(err, errlen, "empty, too long or not text");
		return -1;
	}
	if (text[0] == '@') {
		for (i = 0; i < nitems(nicknames); i++)
			if (strlen(nicknames[i].name) == len &&
			    strncmp(text, nicknames[i].name, len) == 0)
				return parse_fields(nicknames[i].expr,
				    strlen(nicknames[i].expr), out, err,
				    errlen);
		if (errlen > 0)
			snprintf(err, errlen,
			    "unknown name (@yearly, @annually, @monthly, "
			    "@weekly, @daily, @midnight, @hourly)");
		return -1;
	}
	return parse_fields(text, len, out, err, errlen);
}

static int64_t
floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static int
day_matches(const struct cron *c, int64_t day)
{
	int64_t y;
	unsigned m, d, wd;
	int in_month, in_week;

	tz_civil_from_days(day, &y, &m, &d);
	if (!(c->month & (1u << m)))
		return 0;
	wd = (unsigned)(((day % 7) + 7 + 4) % 7); /* 1970-01-01: Thursday */
	in_month = (c->mday >> d) & 1;
	in_week = (c->wday >> wd) & 1;
	return c->any_day ? in_month && in_week : in_month || in_week;
}

#define NEVER INT64_MIN

/* The first moment local time `local` occurs, or NEVER. */
static int64_t
local_to_utc(const struct tz *tz, int64_t local)
{
	int64_t a = local - tz->std_off, b;

	if (!tz->has_dst)
		return a;
	b = local - tz->dst_off;
	if (b > a) {
		int64_t swap = a;

		a = b;
		b = swap;
	}
	/* b is the earlier reading; take it if it holds. */
	if (tz_offset(tz, b) == (int32_t)(local - b))
		return b;
	if (tz_offset(tz, a) == (int32_t)(local - a))
		return a;
	return NEVER;
}

int
cron_next(
    const struct cron *c, const struct tz *tz, int64_t after, int64_t *next)
{
	int64_t day, last, u;
	unsigned h, m;

	if (after < -TIME_MAX || after > TIME_MAX || c->minute == 0 ||
	    c->hour == 0 || c->month == 0 || (c->mday == 0 && c->wday == 0))
		return -1;
	/* A day before the local date of `after`, in case the offset
	 * changes within it. */
	day = floor_div(after + tz_offset(tz, after), DAY) - 1;
	for (last = day + SEARCH_DAYS; day <= last; day++) {
		if (!day_matches(c, day))
			continue;
		for (h = 0; h < 24; h++) {
			if (!(c->hour & (1u << h)))
				continue;
			for (m = 0; m < 60; m++) {
				if (!(c->minute & ((uint64_t)1 << m)))
					continue;
				u = local_to_utc(
				    tz, day * DAY + h * 3600 + m * 60);
				if (u != NEVER && u > after) {
					*next = u;
					return 0;
				}
			}
		}
	}
	return -1;
}

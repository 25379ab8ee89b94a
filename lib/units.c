#include <stdio.h>
#include <string.h>

#include "lib/units.h"
#include "lib/util.h"

static int
parse_digits(const char *s, size_t len, size_t *used, uint64_t *val)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < len && s[i] >= '0' && s[i] <= '9') {
		unsigned d = (unsigned)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
		i++;
	}
	if (i == 0 || i > 19)
		return -1;
	*used = i;
	*val = v;
	return 0;
}

static int
mul_checked(uint64_t a, uint64_t b, uint64_t *out)
{
	if (b != 0 && a > UINT64_MAX / b)
		return -1;
	*out = a * b;
	return 0;
}

struct unit {
	const char *suffix;
	uint64_t factor;
};

static int
parse_with(const char *s, size_t len, const struct unit *units, size_t n,
    uint64_t bare, uint64_t *out)
{
	uint64_t v;
	size_t used;

	if (s == NULL || parse_digits(s, len, &used, &v) == -1)
		return -1;
	if (used == len)
		return mul_checked(v, bare, out);
	for (size_t i = 0; i < n; i++) {
		size_t sl = strlen(units[i].suffix);
		if (len - used == sl &&
		    memcmp(s + used, units[i].suffix, sl) == 0)
			return mul_checked(v, units[i].factor, out);
	}
	return -1;
}

static const struct unit size_units[] = {
	{ "B", 1 },
	{ "K", 1ULL << 10 },
	{ "KB", 1ULL << 10 },
	{ "KiB", 1ULL << 10 },
	{ "M", 1ULL << 20 },
	{ "MB", 1ULL << 20 },
	{ "MiB", 1ULL << 20 },
	{ "G", 1ULL << 30 },
	{ "GB", 1ULL << 30 },
	{ "GiB", 1ULL << 30 },
	{ "T", 1ULL << 40 },
	{ "TB", 1ULL << 40 },
	{ "TiB", 1ULL << 40 },
};

static const struct unit duration_units[] = {
	{ "ms", 1 },
	{ "s", 1000 },
	{ "m", 60 * 1000 },
	{ "min", 60 * 1000 },
	{ "h", 3600 * 1000 },
	{ "d", 24 * 3600 * 1000 },
};

int
units_parse_size(const char *s, size_t len, uint64_t *bytes)
{
	return parse_with(s, len, size_units, nitems(size_units), 1, bytes);
}

int
units_parse_duration(const char *s, size_t len, uint64_t *ms)
{
	return parse_with(
	    s, len, duration_units, nitems(duration_units), 1000, ms);
}

int
units_format_size(char *buf, size_t len, uint64_t bytes)
{
	static const char *const sfx[] = { "T", "G", "M", "K" };
	static const unsigned shift[] = { 40, 30, 20, 10 };

	for (size_t i = 0; i < nitems(sfx); i++) {
		uint64_t f = 1ULL << shift[i];
		if (bytes != 0 && bytes % f == 0)
			return snprintf(buf, len, "%llu%s",
			    (unsigned long long)(bytes / f), sfx[i]);
	}
	return snprintf(buf, len, "%llu", (unsigned long long)bytes);
}

int
units_format_duration(char *buf, size_t len, uint64_t ms)
{
	static const char *const sfx[] = { "d", "h", "m", "s" };
	static const uint64_t f[] = { 86400000, 3600000, 60000, 1000 };

	for (size_t i = 0; i < nitems(sfx); i++)
		if (ms != 0 && ms % f[i] == 0)
			return snprintf(buf, len, "%llu%s",
			    (unsigned long long)(ms / f[i]), sfx[i]);
	return snprintf(buf, len, "%llums", (unsigned long long)ms);
}

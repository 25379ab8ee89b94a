/*
 * Schedule definitions: the strict parser shared by the API and the
 * store's read-back (host/sched/sched_spec.h, docs/schedules.md).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/sched/sched_spec.h"

#define MAX_TIMEOUT_MS (24ULL * 3600 * 1000)

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int
fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int
id_ok(const char *s, size_t max)
{
	size_t n;

	for (n = 0; s[n] != '\0'; n++) {
		char c = s[n];

		if (n >= max ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '_' || c == '-' ||
		        c == '.'))
			return 0;
	}
	return n > 0;
}

/* Printable text without control characters, 1..max bytes. */
static int
text_ok(const char *s, size_t len, size_t max)
{
	if (len == 0 || len > max || strlen(s) != len)
		return 0;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return 1;
}

/* Only the names in allowed[] may appear in obj. */
static int
fields_only(const json_t *obj, const char *const *allowed, const char *where,
    char *err, size_t errlen)
{
	const char *key;
	json_t *v;

	json_object_foreach((json_t *)obj, key, v)
	{
		size_t i;

		(void)v;
		for (i = 0; allowed[i] != NULL; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed[i] == NULL)
			return fail(err, errlen, "%s: unknown field \"%.64s\"",
			    where, key);
	}
	return 0;
}

static int
get_string(const json_t *obj, const char *key, int required, const char **out,
    char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, key);

	*out = NULL;
	if (v == NULL) {
		if (required)
			return fail(err, errlen, "%s is required", key);
		return 0;
	}
	if (!json_is_string(v))
		return fail(err, errlen, "%s must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int
get_timeout(const json_t *obj, const char *where, char *err, size_t errlen)
{
	json_t *v = json_object_get(obj, "timeout");

	if (v == NULL)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > MAX_TIMEOUT_MS)
		return fail(err, errlen,
		    "%s.timeout must be milliseconds from 0 to %llu", where,
		    (unsigned long long)MAX_TIMEOUT_MS);
	return 0;
}

/* The run's variables: names as a shell's, values as text, both
 * without NUL; "${{ secrets.NAME }}" in a value is resolved at each
 * fire, under the policy then (docs/secrets.md). */
static int
parse_env(const json_t *obj, const char *where, char *err, size_t errlen)
{
	const json_t *env = json_object_get(obj, "env"), *v;
	const char *k;

	if (env == NULL)
		return 0;
	if (!json_is_object(env) || json_object_size(env) > SCHED_ENV_MAX)
		return fail(err, errlen,
		    "%s.env must be an object of at most %d variables", where,
		    SCHED_ENV_MAX);
	json_object_foreach((json_t *)env, k, v)
	{
		size_t i, n = strlen(k);

		for (i = 0; i < n && i < 128; i++)
			if (!(k[i] == '_' || (k[i] >= 'A' && k[i] <= 'Z') ||
			        (k[i] >= 'a' && k[i] <= 'z') ||
			        (i > 0 && k[i] >= '0' && k[i] <= '9')))
				break;
		if (n == 0 || i != n)
			return fail(err, errlen,
			    "%s.env: a name is letters, digits and _, not "
			    "starting with a digit, at most 128",
			    where);
		if (!json_is_string(v) || json_string_length(v) > 4096 ||
		    strlen(json_string_value(v)) != json_string_length(v))
			return fail(err, errlen,
			    "%s.env.%s must be a string of at most 4096 bytes "
			    "without NUL",
			    where, k);
	}
	return 0;
}

static int
parse_execute(const json_t *ex, char *err, size_t errlen)
{
	static const char *const fields[] = { "code", "language", "timeout",
		"env", NULL };
	const char *code, *lang;

	if (!json_is_object(ex))
		return fail(err, errlen, "execute must be an object");
	if (fields_only(ex, fields, "execute", err, errlen) ||
	    get_string(ex, "code", 1, &code, err, errlen) ||
	    get_string(ex, "language", 1, &lang, err, errlen))
		return -1;
	if (json_string_length(json_object_get(ex, "code")) > SCHED_CODE_MAX ||
	    strlen(code) != json_string_length(json_object_get(ex, "code")))
		return fail(err, errlen,
		    "execute.code must be at most %d bytes without NUL",
		    SCHED_CODE_MAX);
	if (strcmp(lang, "python") != 0 && strcmp(lang, "javascript") != 0)
		return fail(err, errlen,
		    "execute.language must be \"python\" or \"javascript\"");
	if (parse_env(ex, "execute", err, errlen) != 0)
		return -1;
	return get_timeout(ex, "execute", err, errlen);
}

static int
parse_command(const json_t *c, char *err, size_t errlen)
{
	static const char *const fields[] = { "cmd", "args", "timeout", "env",
		NULL };
	const char *cmd;
	json_t *args, *a;
	size_t i;

	if (!json_is_object(c))
		return fail(err, errlen, "command must be an object");
	if (fields_only(c, fields, "command", err, errlen) ||
	    get_string(c, "cmd", 1, &cmd, err, errlen))
		return -1;
	/* An executable's name, never a shell string. */
	if (!text_ok(cmd, json_string_length(json_object_get(c, "cmd")), 127) ||
	    strchr(cmd, ' ') != NULL)
		return fail(err, errlen,
		    "command.cmd must be an executable's name (1-127 bytes, no "
		    "blanks)");
	if ((args = json_object_get(c, "args")) != NULL) {
		if (!json_is_array(args) ||
		    json_array_size(args) > SCHED_ARGS_MAX)
			return fail(err, errlen,
			    "command.args must be an array of at most %d "
			    "strings",
			    SCHED_ARGS_MAX);
		json_array_foreach(args, i, a)
		{
			if (!json_is_string(a) ||
			    json_string_length(a) > 4096 ||
			    strlen(json_string_value(a)) !=
			        json_string_length(a))
				return fail(err, errlen,
				    "command.args[%zu] must be a string of at "
				    "most 4096 bytes without NUL",
				    i);
		}
	}
	if (parse_env(c, "command", err, errlen) != 0)
		return -1;
	return get_timeout(c, "command", err, errlen);
}

static int
zone_lookup(const char *name, sched_zone_fn zone, void *zone_arg,
    struct tz *out, char *err, size_t errlen)
{
	size_t len = strlen(name);

	if (len == 0 || len > SCHED_ZONE_MAX)
		return fail(
		    err, errlen, "timezone must be 1-%d bytes", SCHED_ZONE_MAX);
	if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
		tz_utc(out);
		return 0;
	}
	/* A POSIX rule has an offset (a digit) or a quoted name; a zone
	 * name has neither ("Etc/GMT+1" aside, which the table knows). */
	if (tz_name_valid(name) && zone != NULL &&
	    zone(zone_arg, name, out) == 0)
		return 0;
	if (tz_parse_rule(name, len, out) == 0)
		return 0;
	return fail(err, errlen,
	    "timezone \"%.64s\" is neither a known zone name nor a POSIX TZ "
	    "rule",
	    name);
}

int
sched_time_parse(const char *s, int64_t *out)
{
	static const char shape[] = "dddd-dd-ddTdd:dd:ddZ";
	unsigned v[6];
	int64_t days, y;
	unsigned m, d;

	if (strlen(s) != sizeof(shape) - 1)
		return -1;
	for (size_t i = 0; i < sizeof(shape) - 1; i++)
		if (shape[i] == 'd' ? s[i] < '0' || s[i] > '9'
		                    : s[i] != shape[i])
			return -1;
	if (sscanf(s, "%4u-%2u-%2uT%2u:%2u:%2uZ", &v[0], &v[1], &v[2], &v[3],
	        &v[4], &v[5]) != 6 ||
	    v[0] < 1970 || v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 ||
	    v[3] > 23 || v[4] > 59 || v[5] > 59)
		return -1;
	/* 2026-02-31 is not a date: it must come back the same. */
	days = tz_days_from_civil(v[0], v[1], v[2]);
	tz_civil_from_days(days, &y, &m, &d);
	if (y != (int64_t)v[0] || m != v[1] || d != v[2])
		return -1;
	*out = days * 86400 + (int64_t)v[3] * 3600 + v[4] * 60 + v[5];
	return 0;
}

void
sched_time_format(int64_t t, char out[24])
{
	int64_t days = t >= 0 ? t / 86400 : -((-t + 86399) / 86400);
	int64_t rem = t - days * 86400, y;
	unsigned m, d;

	tz_civil_from_days(days, &y, &m, &d);
	snprintf(out, 24, "%04lld-%02u-%02uT%02u:%02u:%02uZ", (long long)y, m,
	    d, (unsigned)(rem / 3600), (unsigned)(rem % 3600 / 60),
	    (unsigned)(rem % 60));
}

int
sched_spec_parse(const json_t *obj, sched_zone_fn zone, void *zone_arg,
    struct sched_spec *out, char *err, size_t errlen)
{
	static const char *const fields[] = { "name", "cron", "at", "timezone",
		"sandbox_id", "image", "execute", "command", "enabled",
		"missed", NULL };
	const char *name, *cron, *at, *zname, *sbx, *image, *missed;
	json_t *en, *doc;
	struct sched_spec s;

	memset(&s, 0, sizeof(s));
	memset(out, 0, sizeof(*out));
	if (!json_is_object(obj))
		return fail(err, errlen, "a schedule is a JSON object");
	if (fields_only(obj, fields, "schedule", err, errlen) ||
	    get_string(obj, "name", 0, &name, err, errlen) ||
	    get_string(obj, "cron", 0, &cron, err, errlen) ||
	    get_string(obj, "at", 0, &at, err, errlen) ||
	    get_string(obj, "timezone", 0, &zname, err, errlen) ||
	    get_string(obj, "sandbox_id", 0, &sbx, err, errlen) ||
	    get_string(obj, "image", 0, &image, err, errlen) ||
	    get_string(obj, "missed", 0, &missed, err, errlen))
		return -1;
	if (name != NULL &&
	    !text_ok(name, json_string_length(json_object_get(obj, "name")),
	        SCHED_NAME_MAX))
		return fail(err, errlen,
		    "name must be 1-%d bytes of printable text",
		    SCHED_NAME_MAX);
	if ((cron == NULL) == (at == NULL))
		return fail(err, errlen, "give exactly one of cron and at");
	if (cron != NULL) {
		char cerr[128];

		if (cron_parse(cron,
		        json_string_length(json_object_get(obj, "cron")),
		        &s.cron, cerr, sizeof(cerr)) != 0)
			return fail(err, errlen, "cron: %s", cerr);
		s.has_cron = 1;
	} else if (sched_time_parse(at, &s.at) != 0)
		return fail(err, errlen,
		    "at must be a time as YYYY-MM-DDTHH:MM:SSZ (UTC)");
	if (zname == NULL)
		zname = "UTC";
	if (zone_lookup(zname, zone, zone_arg, &s.tz, err, errlen) != 0)
		return -1;
	if ((sbx == NULL) == (image == NULL))
		return fail(
		    err, errlen, "give exactly one of sandbox_id and image");
	if (sbx != NULL && !id_ok(sbx, 64))
		return fail(err, errlen, "sandbox_id is not a sandbox id");
	if (image != NULL && !id_ok(image, 127))
		return fail(err, errlen, "image is not an image name");
	if ((json_object_get(obj, "execute") == NULL) ==
	    (json_object_get(obj, "command") == NULL))
		return fail(
		    err, errlen, "give exactly one of execute and command");
	if (json_object_get(obj, "execute") != NULL &&
	    parse_execute(json_object_get(obj, "execute"), err, errlen) != 0)
		return -1;
	if (json_object_get(obj, "command") != NULL &&
	    parse_command(json_object_get(obj, "command"), err, errlen) != 0)
		return -1;
	s.enabled = 1;
	if ((en = json_object_get(obj, "enabled")) != NULL) {
		if (!json_is_boolean(en))
			return fail(
			    err, errlen, "enabled must be true or false");
		s.enabled = json_is_true(en);
	}
	if (missed == NULL || strcmp(missed, "skip") == 0)
		s.missed = SCHED_MISSED_SKIP;
	else if (strcmp(missed, "once") == 0)
		s.missed = SCHED_MISSED_ONCE;
	else
		return fail(err, errlen, "missed must be \"skip\" or \"once\"");
	/* The canonical form: defaults written out. */
	if ((doc = json_deep_copy(obj)) == NULL ||
	    json_object_set_new(doc, "timezone", json_string(zname)) != 0 ||
	    json_object_set_new(doc, "enabled", json_boolean(s.enabled)) != 0 ||
	    json_object_set_new(doc, "missed",
	        json_string(s.missed == SCHED_MISSED_ONCE ? "once" : "skip")) !=
	        0) {
		json_decref(doc);
		return fail(err, errlen, "out of memory");
	}
	s.doc = doc;
	{
		char *text = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
		size_t n = text != NULL ? strlen(text) : 0;

		free(text);
		if (text == NULL || n > SCHED_SPEC_TEXT_MAX) {
			json_decref(doc);
			return fail(err, errlen,
			    "a schedule is at most %d bytes as JSON",
			    SCHED_SPEC_TEXT_MAX);
		}
	}
	*out = s;
	return 0;
}

int
sched_spec_parse_text(const char *text, size_t len, sched_zone_fn zone,
    void *zone_arg, struct sched_spec *out, char *err, size_t errlen)
{
	json_error_t je;
	json_t *obj;
	int rc;

	memset(out, 0, sizeof(*out));
	if (len > SCHED_SPEC_TEXT_MAX)
		return fail(err, errlen, "schedule text too long");
	if ((obj = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je)) == NULL)
		return fail(err, errlen, "not JSON: %s", je.text);
	rc = sched_spec_parse(obj, zone, zone_arg, out, err, errlen);
	json_decref(obj);
	return rc;
}

int
sched_spec_patch(const struct sched_spec *cur, const json_t *patch,
    sched_zone_fn zone, void *zone_arg, struct sched_spec *out, char *err,
    size_t errlen)
{
	static const char *const pairs[][2] = { { "cron", "at" },
		{ "sandbox_id", "image" }, { "execute", "command" } };
	const char *key;
	json_t *v, *doc;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(patch))
		return fail(err, errlen, "a patch is a JSON object");
	if ((doc = json_deep_copy(cur->doc)) == NULL)
		return fail(err, errlen, "out of memory");
	json_object_foreach((json_t *)patch, key, v)
	{
		for (size_t i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++)
			for (int j = 0; j < 2; j++)
				if (strcmp(key, pairs[i][j]) == 0)
					json_object_del(doc, pairs[i][!j]);
		if (json_is_null(v))
			json_object_del(doc, key);
		else
			json_object_set(doc, key, v);
	}
	rc = sched_spec_parse(doc, zone, zone_arg, out, err, errlen);
	json_decref(doc);
	return rc;
}

void
sched_spec_free(struct sched_spec *s)
{
	if (s->doc != NULL)
		json_decref(s->doc);
	s->doc = NULL;
}

char *
sched_spec_text(const struct sched_spec *s)
{
	return json_dumps(s->doc, JSON_COMPACT | JSON_SORT_KEYS);
}

int
sched_spec_next(const struct sched_spec *s, int64_t after, int64_t *next)
{
	if (s->has_cron)
		return cron_next(&s->cron, &s->tz, after, next);
	if (s->at > after) {
		*next = s->at;
		return 0;
	}
	return -1;
}

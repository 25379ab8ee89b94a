/*
 * A schedule's definition, as the API receives it and the store keeps it
 * (docs/schedules.md): when it fires (a five-field cron expression in a
 * time zone, or one time `at`), what it runs (an execute or a command),
 * where (a named sandbox, or a fresh one from an image, deleted after),
 * whether it is enabled and what happens to fires missed while keepd was
 * down.
 *
 * The parser is strict (unknown fields, wrong types, out-of-range values
 * are errors, each named) and is the one used both for API bodies and
 * for records read back from the store, which are untrusted too. The
 * validated definition is kept as a canonical JSON object (defaults
 * filled in) so that what GET shows is what fires.
 *
 * Pure but for jansson's allocation: no I/O, no globals.
 */
#ifndef KEEP_SCHED_SPEC_H
#define KEEP_SCHED_SPEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "lib/cron.h"
#include "lib/tz.h"

#define SCHED_SPEC_TEXT_MAX 32768 /* the compact JSON form */
#define SCHED_CODE_MAX 16384 /* execute.code, bytes */
#define SCHED_ARGS_MAX 32 /* command.args */
#define SCHED_ENV_MAX 64 /* execute.env, command.env: variables */
#define SCHED_NAME_MAX 64
#define SCHED_ZONE_MAX 64

enum sched_missed { SCHED_MISSED_SKIP = 0, SCHED_MISSED_ONCE = 1 };

struct sched_spec {
	json_t *doc; /* the validated definition, owned */
	int has_cron; /* else: one fire at `at` */
	struct cron cron;
	int64_t at; /* unix seconds */
	struct tz tz;
	int enabled;
	enum sched_missed missed;
};

/*
 * Looks a zone name up (an IANA name such as "Europe/Berlin"): 0 and
 * *out, or -1 when unknown. May be NULL: then only "UTC" and POSIX TZ
 * rules are accepted.
 */
typedef int (*sched_zone_fn)(void *arg, const char *name, struct tz *out);

/*
 * Validate obj and fill *out (out->doc is a new object; obj is not
 * kept). 0, or -1 with a message for the client in err.
 */
int sched_spec_parse(const json_t *obj, sched_zone_fn zone, void *zone_arg,
    struct sched_spec *out, char *err, size_t errlen);
/* The same from JSON text (a store record), len bytes. */
int sched_spec_parse_text(const char *text, size_t len, sched_zone_fn zone,
    void *zone_arg, struct sched_spec *out, char *err, size_t errlen);
/*
 * PATCH: cur with patch's members applied (a member set to null is
 * removed; setting "cron" drops "at" and the reverse, "image" drops
 * "sandbox_id" and the reverse, "execute" drops "command" and the
 * reverse), validated as a whole into *out.
 */
int sched_spec_patch(const struct sched_spec *cur, const json_t *patch,
    sched_zone_fn zone, void *zone_arg, struct sched_spec *out, char *err,
    size_t errlen);
void sched_spec_free(struct sched_spec *);

/* The compact JSON text of the definition (malloc), NULL when out of
 * memory. */
char *sched_spec_text(const struct sched_spec *);

/* The first occurrence strictly after `after` (unix seconds): 0 and
 * *next, or -1 when there is none (a past `at`, a cron that never
 * matches). */
int sched_spec_next(const struct sched_spec *, int64_t after, int64_t *next);

/* "YYYY-MM-DDTHH:MM:SSZ" <-> unix seconds. */
int sched_time_parse(const char *s, int64_t *out);
void sched_time_format(int64_t t, char out[24]);

#endif

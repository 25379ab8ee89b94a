/* Unit tests for host/sched/sched_spec.c (schedule definitions) and the
 * store's schedule records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/sched/sched_spec.h"
#include "host/store/store.h"
#include "host/store/store_int.h"

#define SBX "\"sandbox_id\":\"sbx-1\""
#define CMD "\"command\":{\"cmd\":\"echo\",\"args\":[\"hi\"]}"

static int
parse(const char *text, struct sched_spec *s, char *err)
{
	return sched_spec_parse_text(
	    text, strlen(text), NULL, NULL, s, err, 256);
}

static int64_t
at(const char *iso)
{
	int64_t t = 0;

	assert_int_equal(sched_time_parse(iso, &t), 0);
	return t;
}

static void
test_defaults(void **state)
{
	struct sched_spec s;
	char err[256], *text;
	int64_t n;

	(void)state;
	assert_int_equal(
	    parse("{\"cron\":\"*/15 * * * *\"," SBX "," CMD "}", &s, err), 0);
	assert_true(s.has_cron);
	assert_true(s.enabled);
	assert_int_equal(s.missed, SCHED_MISSED_SKIP);
	text = sched_spec_text(&s);
	assert_non_null(strstr(text, "\"timezone\":\"UTC\""));
	assert_non_null(strstr(text, "\"missed\":\"skip\""));
	assert_int_equal(
	    sched_spec_next(&s, at("2026-01-01T12:00:30Z"), &n), 0);
	assert_int_equal(n, at("2026-01-01T12:15:00Z"));
	free(text);
	sched_spec_free(&s);
}

static void
test_refused(void **state)
{
	static const struct {
		const char *text, *needle;
	} bad[] = {
		{ "[]", "object" },
		{ "{" SBX "," CMD "}", "cron and at" },
		{ "{\"cron\":\"@daily\",\"at\":\"2026-01-01T00:00:00Z\"," SBX
		  "," CMD "}",
		    "cron and at" },
		{ "{\"cron\":\"* * * *\"," SBX "," CMD "}", "cron:" },
		{ "{\"cron\":\"@reboot\"," SBX "," CMD "}", "cron:" },
		{ "{\"at\":\"2026-02-30T00:00:00Z\"," SBX "," CMD "}", "at" },
		{ "{\"at\":\"2026-01-01 00:00:00Z\"," SBX "," CMD "}", "at" },
		{ "{\"at\":\"+026-01-01T00:00:00Z\"," SBX "," CMD "}", "at" },
		{ "{\"cron\":\"@daily\"," CMD "}", "sandbox_id and image" },
		{ "{\"cron\":\"@daily\"," SBX ",\"image\":\"python\"," CMD "}",
		    "sandbox_id and image" },
		{ "{\"cron\":\"@daily\",\"sandbox_id\":\"../x\"," CMD "}",
		    "sandbox_id" },
		{ "{\"cron\":\"@daily\"," SBX "}", "execute and command" },
		{ "{\"cron\":\"@daily\"," SBX
		  ",\"command\":{\"cmd\":\"sh -c x\"}}",
		    "command.cmd" },
		{ "{\"cron\":\"@daily\"," SBX
		  ",\"execute\":{\"code\":\"1\",\"language\":\"ruby\"}}",
		    "language" },
		{ "{\"cron\":\"@daily\"," SBX
		  ",\"execute\":{\"code\":\"1\",\"language\":\"python\","
		  "\"timeout\":-1}}",
		    "timeout" },
		{ "{\"cron\":\"@daily\"," SBX "," CMD ",\"missed\":\"all\"}",
		    "missed" },
		{ "{\"cron\":\"@daily\"," SBX "," CMD ",\"enabled\":1}",
		    "enabled" },
		{ "{\"cron\":\"@daily\"," SBX "," CMD
		  ",\"timezone\":\"Mars/Olympus\"}",
		    "timezone" },
		{ "{\"cron\":\"@daily\"," SBX "," CMD ",\"colour\":1}",
		    "unknown field" },
		{ "{\"cron\":\"@daily\"," SBX "," CMD ",\"name\":\"a\\nb\"}",
		    "name" },
		{ "{\"cron\":\"@daily\"," SBX ",\"command\":{\"cmd\":\"echo\","
		  "\"args\":[1]}}",
		    "args[0]" },
	};
	struct sched_spec s;
	char err[256];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (parse(bad[i].text, &s, err) != -1)
			fail_msg("accepted: %s", bad[i].text);
		if (strstr(err, bad[i].needle) == NULL)
			fail_msg("%s: %s", bad[i].text, err);
	}
}

static void
test_zone_and_at(void **state)
{
	struct sched_spec s;
	char err[256];
	int64_t n;

	(void)state;
	/* 9:00 in Berlin is 8:00 UTC in winter, 7:00 in summer. */
	assert_int_equal(
	    parse("{\"cron\":\"0 9 * * *\",\"timezone\":"
	          "\"CET-1CEST,M3.5.0,M10.5.0/3\"," SBX "," CMD "}",
	        &s, err),
	    0);
	assert_int_equal(
	    sched_spec_next(&s, at("2026-01-10T00:00:00Z"), &n), 0);
	assert_int_equal(n, at("2026-01-10T08:00:00Z"));
	assert_int_equal(
	    sched_spec_next(&s, at("2026-07-10T00:00:00Z"), &n), 0);
	assert_int_equal(n, at("2026-07-10T07:00:00Z"));
	sched_spec_free(&s);

	assert_int_equal(
	    parse("{\"at\":\"2026-03-01T10:30:00Z\"," SBX "," CMD "}", &s, err),
	    0);
	assert_int_equal(
	    sched_spec_next(&s, at("2026-03-01T10:29:59Z"), &n), 0);
	assert_int_equal(n, at("2026-03-01T10:30:00Z"));
	assert_int_equal(
	    sched_spec_next(&s, at("2026-03-01T10:30:00Z"), &n), -1);
	sched_spec_free(&s);
}

static void
test_patch(void **state)
{
	struct sched_spec s, p;
	json_t *patch;
	char err[256], *text;

	(void)state;
	assert_int_equal(
	    parse("{\"cron\":\"@hourly\",\"name\":\"n\"," SBX "," CMD "}", &s,
	        err),
	    0);
	patch = json_loads("{\"at\":\"2027-01-01T00:00:00Z\",\"enabled\":false,"
	                   "\"name\":null,\"image\":\"python\",\"execute\":{"
	                   "\"code\":\"print(1)\",\"language\":\"python\"}}",
	    0, NULL);
	assert_non_null(patch);
	assert_int_equal(
	    sched_spec_patch(&s, patch, NULL, NULL, &p, err, sizeof(err)), 0);
	assert_false(p.has_cron);
	assert_false(p.enabled);
	text = sched_spec_text(&p);
	assert_null(strstr(text, "cron"));
	assert_null(strstr(text, "sandbox_id"));
	assert_null(strstr(text, "command"));
	assert_null(strstr(text, "\"name\""));
	free(text);
	sched_spec_free(&p);
	json_decref(patch);
	/* A patch that breaks the whole is refused, the old one stands. */
	patch = json_loads("{\"missed\":\"never\"}", 0, NULL);
	assert_int_equal(
	    sched_spec_patch(&s, patch, NULL, NULL, &p, err, sizeof(err)), -1);
	json_decref(patch);
	assert_true(s.has_cron);
	sched_spec_free(&s);
}

static void
test_time_format(void **state)
{
	char buf[24];

	(void)state;
	sched_time_format(at("2026-12-31T23:59:59Z"), buf);
	assert_string_equal(buf, "2026-12-31T23:59:59Z");
	sched_time_format(0, buf);
	assert_string_equal(buf, "1970-01-01T00:00:00Z");
}

static void
test_store_records(void **state)
{
	struct store_schedule s = { "sch-1", "alice", "{\"a\":1}", 7, 1000,
		2000, 3000, 4, NULL },
	                      d;
	struct store_sched_run r = { "sch-1", "00000000000000000004", "alice",
		STORE_SCHED_COMPLETED, 0, 1, 3000, 3000, 3100, "sbx-1",
		"fire-1", "", "out", 3, "", 0 },
	                       e;
	uint8_t key[STORE_KEY_MAX];
	void *rec;
	size_t len, klen;

	(void)state;
	assert_int_equal(store_schedule_encode(&s, &rec, &len), STORE_OK);
	assert_int_equal(
	    store_record_check(STORE_DB_SCHEDULES, rec, len), STORE_OK);
	assert_int_equal(store_schedule_decode(rec, len, &d), STORE_OK);
	assert_string_equal(d.spec, "{\"a\":1}");
	assert_int_equal(d.last_fire_ms, 3000);
	assert_null(d.tokens);
	free(rec);
	/* The writing token's jtis: a last field, there only when given,
	 * and a record without it decodes as before. */
	s.tokens = "jti-child jti-parent";
	assert_int_equal(store_schedule_encode(&s, &rec, &len), STORE_OK);
	assert_int_equal(
	    store_record_check(STORE_DB_SCHEDULES, rec, len), STORE_OK);
	assert_int_equal(store_schedule_decode(rec, len, &d), STORE_OK);
	assert_string_equal(d.tokens, "jti-child jti-parent");
	free(rec);
	s.tokens = "bad\001jti";
	assert_int_equal(store_schedule_encode(&s, &rec, &len), STORE_E_ARG);
	s.tokens = NULL;
	assert_int_equal(store_sched_run_encode(&r, &rec, &len), STORE_OK);
	assert_int_equal(store_record_key(STORE_DB_SCHED_RUNS, rec, len, key,
	                     sizeof(key), &klen),
	    STORE_OK);
	assert_int_equal(klen, 6 + 20);
	assert_int_equal(store_sched_run_decode(rec, len, &e), STORE_OK);
	assert_int_equal(e.catch_up, 1);
	assert_memory_equal(e.out, "out", 3);
	free(rec);
	/* A fire's number is 20 digits, or the key would not sort. */
	r.seq = "4";
	assert_int_equal(store_sched_run_encode(&r, &rec, &len), STORE_E_ARG);
	r.seq = "00000000000000000004";
	r.status = 9;
	assert_int_equal(store_sched_run_encode(&r, &rec, &len), STORE_E_ARG);
	assert_int_equal(
	    store_key_make(STORE_DB_SCHED_RUNS, "sch-1", "x", key), 0);
}

/* A schedule's fires are listed in fire order under it, and go with it. */
static void
test_store_cascade(void **state)
{
	char dir[] = "/tmp/test_sched.XXXXXX", path[64];
	struct store_config cfg = { 0 };
	struct store_schedule s = { "sch-1", "alice", "{}", 0, 1, 1, 0, 0,
		NULL };
	struct store_sched_run r = { "sch-1", NULL, "alice",
		STORE_SCHED_REFUSED, -1, 0, 0, 0, 0, "", "", "budget", NULL, 0,
		NULL, 0 };
	struct store_page *pg = calloc(1, sizeof(*pg));
	struct store *st;
	char seq[21];
	void *rec;
	size_t len;

	(void)state;
	assert_non_null(pg);
	assert_non_null(mkdtemp(dir));
	cfg.nosync = 1;
	assert_int_equal(store_open(dir, &cfg, &st), STORE_OK);
	assert_int_equal(store_schedule_encode(&s, &rec, &len), STORE_OK);
	assert_int_equal(
	    store_put(st, STORE_DB_SCHEDULES, rec, len, 0), STORE_OK);
	free(rec);
	/* 10 after 9: the keys sort as numbers. */
	for (int i = 12; i >= 8; i--) {
		snprintf(seq, sizeof(seq), "%020d", i);
		r.seq = seq;
		assert_int_equal(
		    store_sched_run_encode(&r, &rec, &len), STORE_OK);
		assert_int_equal(
		    store_put(st, STORE_DB_SCHED_RUNS, rec, len, 0), STORE_OK);
		free(rec);
	}
	assert_int_equal(
	    store_list(st, STORE_DB_SCHED_RUNS, "sch-1", NULL, 10, pg),
	    STORE_OK);
	assert_int_equal(pg->n, 5);
	for (size_t i = 0; i < pg->n; i++) {
		struct store_sched_run x;

		assert_int_equal(
		    store_sched_run_decode(pg->rec[i], pg->len[i], &x),
		    STORE_OK);
		assert_int_equal(strtoull(x.seq, NULL, 10), 8 + i);
	}
	store_page_free(pg);
	assert_int_equal(
	    store_delete(st, STORE_DB_SCHEDULES, "sch-1", NULL), STORE_OK);
	assert_int_equal(
	    store_list(st, STORE_DB_SCHED_RUNS, "sch-1", NULL, 10, pg),
	    STORE_OK);
	assert_int_equal(pg->n, 0);
	store_page_free(pg);
	free(pg);
	store_close(st);
	snprintf(path, sizeof(path), "%s/data.mdb", dir);
	unlink(path);
	snprintf(path, sizeof(path), "%s/lock.mdb", dir);
	unlink(path);
	rmdir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_zone_and_at),
		cmocka_unit_test(test_patch),
		cmocka_unit_test(test_time_format),
		cmocka_unit_test(test_store_records),
		cmocka_unit_test(test_store_cascade),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for lib/: units, the capability catalogue, the clock and
 * whole reads and writes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/units.h"

static int
size_of(const char *s, uint64_t *v)
{
	return units_parse_size(s, strlen(s), v);
}

static int
duration_of(const char *s, uint64_t *v)
{
	return units_parse_duration(s, strlen(s), v);
}

static void
test_sizes(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(size_of("128M", &v), 0);
	assert_int_equal(v, 128ULL << 20);
	assert_int_equal(size_of("4096", &v), 0);
	assert_int_equal(v, 4096);
	assert_int_equal(size_of("1GiB", &v), 0);
	assert_int_equal(v, 1ULL << 30);
	assert_int_equal(size_of("64KB", &v), 0);
	assert_int_equal(v, 64ULL << 10);
	assert_int_equal(size_of("", &v), -1);
	assert_int_equal(size_of("M", &v), -1);
	assert_int_equal(size_of("12Q", &v), -1);
	assert_int_equal(size_of("-1", &v), -1);
	assert_int_equal(size_of("1 M", &v), -1);
	assert_int_equal(size_of("99999999999T", &v), -1);
	assert_int_equal(size_of("18446744073709551616", &v), -1);
}

static void
test_durations(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(duration_of("30s", &v), 0);
	assert_int_equal(v, 30000);
	assert_int_equal(duration_of("500ms", &v), 0);
	assert_int_equal(v, 500);
	assert_int_equal(duration_of("1min", &v), 0);
	assert_int_equal(v, 60000);
	assert_int_equal(duration_of("2h", &v), 0);
	assert_int_equal(v, 7200000);
	assert_int_equal(duration_of("7", &v), 0);
	assert_int_equal(v, 7000);
	assert_int_equal(duration_of("3x", &v), -1);
	assert_int_equal(duration_of("s", &v), -1);
}

static void
test_format_round_trip(void **state)
{
	char buf[32];
	uint64_t v;

	(void)state;
	units_format_size(buf, sizeof(buf), 128ULL << 20);
	assert_string_equal(buf, "128M");
	units_format_size(buf, sizeof(buf), 1000);
	assert_string_equal(buf, "1000");
	units_format_duration(buf, sizeof(buf), 90000);
	assert_string_equal(buf, "90s");
	units_format_duration(buf, sizeof(buf), 1500);
	assert_string_equal(buf, "1500ms");
	assert_int_equal(duration_of(buf, &v), 0);
	assert_int_equal(v, 1500);
}

static void
test_caps(void **state)
{
	(void)state;
	for (int i = 0; i < CAP_COUNT; i++) {
		const char *n = cap_name(i);
		assert_non_null(n);
		assert_int_equal(cap_lookup(n, strlen(n)), i);
	}
	assert_int_equal(cap_lookup("artifact:read", 13), CAP_ARTIFACT_READ);
	assert_int_equal(cap_lookup("artifact:rea", 12), -1);
	assert_int_equal(cap_lookup("artifact:readx", 14), -1);
	assert_null(cap_name(CAP_COUNT));
	assert_false(cap_is_write(CAP_ARTIFACT_READ));
	assert_true(cap_is_write(CAP_AGENT_RUN_WRITE));
}

static void
test_log_escape(void **state)
{
	char out[64];

	(void)state;
	log_escape(out, sizeof(out), "a\nb\x01", 4);
	assert_string_equal(out, "a\\nb\\001");
	/* Truncated, never overflowing, always terminated. */
	log_escape(out, 9, "\x01\x02\x03\x04\x05", 5);
	assert_true(strlen(out) < 9);
}

/* The monotonic clock moves forward in milliseconds. */
static void
test_mono_ms(void **state)
{
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	uint64_t a, b;

	(void)state;
	a = mono_ms();
	assert_true(a > 0);
	while (nanosleep(&ts, &ts) == -1)
		;
	b = mono_ms();
	/* At least the 20 ms slept; no upper bound (a loaded machine). */
	assert_true(b >= a + 20);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_mono_ms),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_log_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for lib/: units, the capability catalogue, the clock and
 * whole reads and writes. */
#include <sys/wait.h>

#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/errf.h"
#include "lib/fdio.h"
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

/* Whole writes and reads: through a pipe in pieces, to end of file, and
 * to a reader that has gone. */
static void
test_fdio(void **state)
{
	enum { LEN = 256 * 1024 }; /* larger than a pipe's buffer */
	char *out = malloc(LEN), *in = malloc(LEN + 16),
	     path[] = "/tmp/keep-test-fdio-XXXXXX";
	int p[2], fd, st;
	pid_t pid;

	(void)state;
	assert_non_null(out);
	assert_non_null(in);
	for (size_t i = 0; i < LEN; i++)
		out[i] = (char)(i * 7);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		/* In three writes, each longer than the pipe holds. */
		_exit(write_all(p[1], out, LEN / 4) == 0 &&
		            write_all(p[1], out + LEN / 4, LEN / 2) == 0 &&
		            write_all(p[1], out + 3 * (LEN / 4), LEN / 4) == 0
		        ? 0
		        : 1);
	}
	close(p[1]);
	/* More asked than will come: all of it, then end of file. */
	assert_int_equal(read_all(p[0], in, LEN + 16), LEN);
	assert_memory_equal(in, out, LEN);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(p[0]);
	/* A file: written whole, read back. */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(write_all(fd, out, LEN), 0);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(read_all(fd, in, 100), 100);
	assert_int_equal(read_all(fd, in + 100, LEN), LEN - 100);
	assert_memory_equal(in, out, LEN);
	close(fd);
	/* Nobody reads: -1 and EPIPE, not a hang. */
	signal(SIGPIPE, SIG_IGN);
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	errno = 0;
	assert_int_equal(write_all(p[1], out, 16), -1);
	assert_int_equal(errno, EPIPE);
	close(p[1]);
	/* A bad descriptor reads nothing, with errno set. */
	errno = 0;
	assert_int_equal(read_all(-1, in, 16), 0);
	assert_int_equal(errno, EBADF);
	free(out);
	free(in);
}

static void
test_errf(void **state)
{
	char err[8];

	(void)state;
	memset(err, 'x', sizeof(err));
	assert_int_equal(errf(err, sizeof(err), "bad %s %d", "field", 42), -1);
	assert_string_equal(err, "bad fie"); /* cut, and terminated */
	assert_int_equal(errf(NULL, 0, "nowhere %d", 1), -1);
	err[0] = 'y';
	assert_int_equal(errf(err, 0, "no room"), -1);
	assert_int_equal(err[0], 'y');
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_mono_ms),
		cmocka_unit_test(test_fdio),
		cmocka_unit_test(test_errf),
		cmocka_unit_test(test_durations),
		cmocka_unit_test(test_format_round_trip),
		cmocka_unit_test(test_caps),
		cmocka_unit_test(test_log_escape),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

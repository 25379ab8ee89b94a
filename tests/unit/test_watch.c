/* Unit tests for host/watch_wire.c: a watch's events are coalesced and
 * bounded in the vmm, and the front checks the vmm's message whole. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/vmm_msg.h"

static void
test_coalesce(void **state)
{
	struct watch_batch *b = calloc(1, sizeof(*b));

	(void)state;
	assert_non_null(b);
	watch_batch_add(b, WATCH_CREATED, 0, "/a", 5000);
	assert_int_equal(b->flush_at, 5000 + WATCH_FLUSH_MS);
	/* A new file's writes are its creation. */
	watch_batch_add(b, WATCH_MODIFIED, 0, "/a", 5001);
	assert_int_equal(b->npend, 1);
	assert_int_equal(b->pend[0].kind, WATCH_CREATED);
	/* The last word on a path wins otherwise. */
	watch_batch_add(b, WATCH_DELETED, 0, "/a", 5002);
	assert_int_equal(b->npend, 1);
	assert_int_equal(b->pend[0].kind, WATCH_DELETED);
	watch_batch_add(b, WATCH_CREATED, 1, "/d", 5003);
	assert_int_equal(b->npend, 2);
	assert_int_equal(b->pend[1].is_dir, 1);
	assert_int_equal(b->flush_at, 5000 + WATCH_FLUSH_MS);
	assert_int_equal(b->dropped, 0);
	free(b);
}

static void
test_bounds(void **state)
{
	struct watch_batch *b = calloc(1, sizeof(*b));
	char path[32];

	(void)state;
	assert_non_null(b);
	/* WATCH_RATE new paths a second; the rest are counted. */
	for (int i = 0; i < WATCH_RATE + 50; i++) {
		snprintf(path, sizeof(path), "/f%d", i);
		watch_batch_add(b, WATCH_CREATED, 0, path, 7000 + i % 900);
	}
	assert_int_equal(b->npend, WATCH_RATE);
	assert_int_equal(b->dropped, 50);
	/* The next second has room again, up to what may wait at once. */
	for (int i = 0; i < WATCH_RATE; i++) {
		snprintf(path, sizeof(path), "/g%d", i);
		watch_batch_add(b, WATCH_CREATED, 0, path, 8000);
	}
	assert_int_equal(b->npend, WATCH_PENDING_MAX);
	assert_int_equal(b->dropped, 50 + 2 * WATCH_RATE - WATCH_PENDING_MAX);
	free(b);
}

static void
test_check(void **state)
{
	uint8_t m[64];
	struct msg_vmm_watch_events h = { 1, 2, WATCH_GOING, 0 }, out;
	const char *path;
	uint8_t kind;
	int is_dir;
	size_t n, len = sizeof(h);

	(void)state;
	memcpy(m, &h, sizeof(h));
	m[len++] = WATCH_CREATED;
	m[len++] = 0;
	m[len++] = 4;
	m[len++] = 0;
	memcpy(m + len, "/a/b", 4);
	len += 4;
	assert_int_equal(watch_events_check(m, len, &out), 0);
	assert_int_equal(out.dropped, 2);
	assert_int_equal(
	    watch_events_entry(m, sizeof(h), &kind, &is_dir, &path, &n), len);
	assert_int_equal(kind, WATCH_CREATED);
	assert_memory_equal(path, "/a/b", 4);
	/* Short, long, a relative path, a NUL, an unknown kind or end. */
	assert_int_equal(watch_events_check(m, len - 1, &out), -1);
	assert_int_equal(watch_events_check(m, len + 1, &out), -1);
	m[sizeof(h) + 4] = 'a';
	assert_int_equal(watch_events_check(m, len, &out), -1);
	m[sizeof(h) + 4] = '/';
	m[sizeof(h) + 6] = '\0';
	assert_int_equal(watch_events_check(m, len, &out), -1);
	m[sizeof(h) + 6] = 'b';
	m[sizeof(h)] = 7;
	assert_int_equal(watch_events_check(m, len, &out), -1);
	m[sizeof(h)] = WATCH_DELETED;
	h.end = 9;
	memcpy(m, &h, sizeof(h));
	assert_int_equal(watch_events_check(m, len, &out), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_coalesce),
		cmocka_unit_test(test_bounds),
		cmocka_unit_test(test_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

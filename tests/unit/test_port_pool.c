/* Unit tests for host/http/port_pool.c: connections to ports kept
 * between requests (docs/architecture.md, "Ports"). Socketpairs stand
 * for the connections: the far end is the guest's server. */
#include <sys/socket.h>

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/http/port_pool.h"

/* A connection (*near, kept) and its server's end (returned). */
static int
conn(int *near)
{
	int sp[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
	*near = sp[0];
	return sp[1];
}

static int
is_open(int fd)
{
	return fcntl(fd, F_GETFD) != -1;
}

static void
test_take_by_key(void **state)
{
	struct port_pool *p = port_pool_new(4);
	int a, b, sa, sb;

	(void)state;
	assert_non_null(p);
	sa = conn(&a);
	sb = conn(&b);
	port_pool_put(p, a, "8000 sbx-a alice", 1);
	port_pool_put(p, b, "8000 sbx-a alice", 2);
	assert_int_equal(port_pool_count(p), 2);
	/* Another principal, sandbox or port finds none. */
	assert_int_equal(port_pool_take(p, "8000 sbx-a bob"), -1);
	assert_int_equal(port_pool_take(p, "8001 sbx-a alice"), -1);
	assert_int_equal(port_pool_take(p, "8000 sbx-b alice"), -1);
	/* The newest first, then the other, then none. */
	assert_int_equal(port_pool_take(p, "8000 sbx-a alice"), b);
	assert_int_equal(port_pool_take(p, "8000 sbx-a alice"), a);
	assert_int_equal(port_pool_take(p, "8000 sbx-a alice"), -1);
	assert_int_equal(port_pool_count(p), 0);
	close(a);
	close(b);
	close(sa);
	close(sb);
	port_pool_free(p);
}

static void
test_closed_or_stray(void **state)
{
	struct port_pool *p = port_pool_new(4);
	int a, b, c, sa, sb, sc;

	(void)state;
	sa = conn(&a);
	sb = conn(&b);
	sc = conn(&c);
	port_pool_put(p, a, "k", 1);
	port_pool_put(p, b, "k", 2);
	port_pool_put(p, c, "k", 3);
	/* The server closed the newest, and wrote a byte on the next one
	 * (an answer to nothing): both are dropped, the oldest taken. */
	close(sc);
	assert_int_equal(write(sb, "x", 1), 1);
	assert_int_equal(port_pool_take(p, "k"), a);
	assert_false(is_open(b));
	assert_false(is_open(c));
	assert_int_equal(port_pool_count(p), 0);
	close(a);
	close(sa);
	close(sb);
	port_pool_free(p);
}

static void
test_bounds(void **state)
{
	struct port_pool *p = port_pool_new(2);
	int a, b, c, sa, sb, sc;
	char key[400];

	(void)state;
	sa = conn(&a);
	sb = conn(&b);
	sc = conn(&c);
	port_pool_put(p, a, "k", 10);
	port_pool_put(p, b, "k", 20);
	/* Full: the oldest goes to make room. */
	port_pool_put(p, c, "k", 30);
	assert_int_equal(port_pool_count(p), 2);
	assert_false(is_open(a));
	/* Idle too long: closed. */
	port_pool_expire(p, 45, 20);
	assert_int_equal(port_pool_count(p), 1);
	assert_false(is_open(b));
	assert_true(is_open(c));
	/* A key too long is not kept: its descriptor is closed. */
	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	sa = (close(sa), conn(&a));
	port_pool_put(p, a, key, 50);
	assert_false(is_open(a));
	assert_int_equal(port_pool_count(p), 1);
	/* Freeing closes what is kept. */
	port_pool_free(p);
	assert_false(is_open(c));
	close(sa);
	close(sb);
	close(sc);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_take_by_key),
		cmocka_unit_test(test_closed_or_stray),
		cmocka_unit_test(test_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

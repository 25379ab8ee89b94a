/*
 * Unit tests for egress's table of runs' direct links (host/egress_runs.c):
 * a decision is kept only for the run the vmm named, of the policy
 * generation in force, for no longer than the policy said and never
 * near its grant's expiry; a load drops every one; a vm process's
 * datagram is parsed or refused as a hostile one may write it.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/egress_runs.h"
#include "host/vmm/vmm.h"

#define NOW 1000000u /* CLOCK_MONOTONIC, ms */
#define REAL 1800000000000ull /* CLOCK_REALTIME, ms */
#define RUN 0x1234abcdull

static struct egress_runs runs;

/* One end of a fresh pair for the table (it owns and closes it); the
 * other end is closed at once. */
static int
link_fd(void)
{
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	close(sv[1]);
	return sv[0];
}

static int
fcntl_closed(int fd)
{
	return fcntl(fd, F_GETFD) == -1 && errno == EBADF;
}

static struct msg_egress_run
run_msg(uint64_t id, const char *principal, const char *sandbox)
{
	struct msg_egress_run m;

	memset(&m, 0, sizeof(m));
	m.run = id;
	strcpy(m.principal, principal);
	strcpy(m.sandbox, sandbox);
	strcpy(m.request_id, "req-1");
	return m;
}

/* What the vmm sends with a fresh decision the run may reuse. */
static struct msg_egress_name
name_msg(const char *name, uint16_t port, uint32_t reuse_ms, uint32_t gen)
{
	struct msg_egress_name q;

	memset(&q, 0, sizeof(q));
	q.op = VMM_NET_CONNECT;
	q.port = port;
	strcpy(q.name, name);
	strcpy(q.principal, "alice");
	strcpy(q.sandbox, "sbx-1");
	strcpy(q.request_id, "req-1");
	q.grant.expires = REAL + 30000;
	q.reuse_ms = reuse_ms;
	q.generation = gen;
	q.run = RUN;
	return q;
}

static int
setup(void **state)
{
	struct msg_egress_run m = run_msg(RUN, "alice", "sbx-1");

	(void)state;
	egress_runs_init(&runs);
	egress_runs_changed(&runs, 7);
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), 0);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	egress_runs_drop_all(&runs);
	return 0;
}

static const struct msg_egress_name *
find(const char *name, uint16_t port, uint64_t now, uint64_t real)
{
	return egress_runs_find(
	    &runs, 0, VMM_NET_CONNECT, name, port, now, real);
}

static void
test_kept_and_found(void **state)
{
	struct msg_egress_name q = name_msg("reuse.test", 443, 10000, 7);
	const struct msg_egress_name *k;

	(void)state;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(k = find("reuse.test", 443, NOW + 1, REAL + 1));
	assert_memory_equal(k, &q, sizeof(q));
	/* Another port, name or op is no match. */
	assert_null(find("reuse.test", 80, NOW + 1, REAL + 1));
	assert_null(find("other.test", 443, NOW + 1, REAL + 1));
	assert_null(egress_runs_find(
	    &runs, 0, VMM_NET_UDP, "reuse.test", 443, NOW + 1, REAL + 1));
	/* A slot past the table or free is nothing. */
	assert_null(egress_runs_find(&runs, EGRESS_RUNS_MAX, VMM_NET_CONNECT,
	    "reuse.test", 443, NOW, REAL));
	assert_null(egress_runs_find(
	    &runs, 1, VMM_NET_CONNECT, "reuse.test", 443, NOW, REAL));
}

static void
test_reuse_window(void **state)
{
	struct msg_egress_name q = name_msg("reuse.test", 443, 10000, 7);

	(void)state;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(find("reuse.test", 443, NOW + 9999, REAL));
	assert_null(find("reuse.test", 443, NOW + 10000, REAL));
	/* Spent: forgotten, even were the clock to go back. */
	assert_null(find("reuse.test", 443, NOW, REAL));
}

static void
test_grant_margin(void **state)
{
	/* The grant expires in 30 s: kept for at most 25 of them, however
	 * long the policy said. */
	struct msg_egress_name q = name_msg("reuse.test", 443, 60000, 7);

	(void)state;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(find("reuse.test", 443, NOW + 24999, REAL));
	assert_null(find("reuse.test", 443, NOW + 25000, REAL));
	/* Near its expiry by the wall clock: not used either. */
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find(
	    "reuse.test", 443, NOW + 1, REAL + 30000 - EGRESS_RUN_MARGIN_MS));
	/* One that expires within the margin is never kept. */
	q.grant.expires = REAL + EGRESS_RUN_MARGIN_MS;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("reuse.test", 443, NOW, REAL));
}

static void
test_not_kept(void **state)
{
	struct msg_egress_name q;

	(void)state;
	/* No reuse, no run, another run, a query. */
	q = name_msg("a.test", 443, 0, 7);
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("a.test", 443, NOW, REAL));
	q = name_msg("a.test", 443, 10000, 7);
	q.run = 0;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("a.test", 443, NOW, REAL));
	q.run = RUN + 1;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("a.test", 443, NOW, REAL));
	q = name_msg("a.test", 0, 10000, 7);
	q.op = VMM_NET_RESOLVE;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(egress_runs_find(
	    &runs, 0, VMM_NET_RESOLVE, "a.test", 0, NOW, REAL));
	/* The run's id with another principal or sandbox than the link
	 * was made for. */
	q = name_msg("a.test", 443, 10000, 7);
	strcpy(q.principal, "mallory");
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("a.test", 443, NOW, REAL));
	q = name_msg("a.test", 443, 10000, 7);
	strcpy(q.sandbox, "sbx-2");
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("a.test", 443, NOW, REAL));
}

static void
test_generations(void **state)
{
	struct msg_egress_name q = name_msg("reuse.test", 443, 10000, 7);
	struct msg_egress_name old = name_msg("old.test", 443, 10000, 6);

	(void)state;
	/* A decision of an older policy, sent before its load came. */
	egress_runs_keep(&runs, &old, NOW, REAL);
	assert_null(find("old.test", 443, NOW, REAL));
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(find("reuse.test", 443, NOW, REAL));
	/* A load drops it; the generation before is no longer kept. */
	egress_runs_changed(&runs, 8);
	assert_null(find("reuse.test", 443, NOW, REAL));
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("reuse.test", 443, NOW, REAL));
	q.generation = 8;
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(find("reuse.test", 443, NOW, REAL));
}

static void
test_unknown_generation(void **state)
{
	struct msg_egress_run m = run_msg(RUN, "alice", "sbx-1");
	struct msg_egress_name q = name_msg("reuse.test", 443, 10000, 0);

	(void)state;
	/* A restarted egress, told no generation yet: keeps nothing. */
	egress_runs_drop_all(&runs);
	egress_runs_init(&runs);
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), 0);
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_null(find("reuse.test", 443, NOW, REAL));
}

static void
test_slots(void **state)
{
	struct msg_egress_name q;
	char name[32];
	int i;

	(void)state;
	/* The same destination again takes its own slot; a ninth evicts
	 * the oldest. */
	for (i = 0; i < EGRESS_RUN_REUSE_MAX; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		q = name_msg(name, 443, 10000, 7);
		egress_runs_keep(&runs, &q, NOW, REAL);
		egress_runs_keep(&runs, &q, NOW, REAL);
	}
	for (i = 0; i < EGRESS_RUN_REUSE_MAX; i++) {
		snprintf(name, sizeof(name), "n%d.test", i);
		assert_non_null(find(name, 443, NOW, REAL));
	}
	q = name_msg("late.test", 443, 10000, 7);
	egress_runs_keep(&runs, &q, NOW, REAL);
	assert_non_null(find("late.test", 443, NOW, REAL));
	assert_null(find("n0.test", 443, NOW, REAL));
	assert_non_null(find("n1.test", 443, NOW, REAL));
}

static void
test_links(void **state)
{
	struct msg_egress_run m;
	int i, fd;

	(void)state;
	/* An id taken, 0, or a field not terminated: refused, fd closed. */
	m = run_msg(RUN, "bob", "sbx-2");
	fd = link_fd();
	assert_int_equal(egress_runs_add(&runs, &m, fd), -1);
	assert_int_equal(fcntl_closed(fd), 1);
	m = run_msg(0, "bob", "sbx-2");
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), -1);
	m = run_msg(RUN + 1, "bob", "sbx-2");
	memset(m.sandbox, 'x', sizeof(m.sandbox));
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), -1);
	/* The table holds EGRESS_RUNS_MAX. */
	for (i = 1; i < EGRESS_RUNS_MAX; i++) {
		m = run_msg(RUN + (uint64_t)i, "bob", "sbx-2");
		assert_int_equal(egress_runs_add(&runs, &m, link_fd()), 0);
	}
	m = run_msg(RUN + EGRESS_RUNS_MAX, "bob", "sbx-2");
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), -1);
	/* A dropped slot is free again, and knows nothing of before. */
	egress_runs_drop(&runs, 0);
	assert_int_equal(runs.run[0].fd, -1);
	assert_int_equal(egress_runs_add(&runs, &m, link_fd()), 0);
	assert_null(find("reuse.test", 443, NOW, REAL));
}

/* A datagram of n bytes: header then request, as a vm process sends. */
static size_t
datagram(uint8_t *out, uint32_t type, uint32_t len, uint32_t op, uint16_t port,
    const char *name)
{
	struct msg_hdr h;
	struct msg_egress_direct q;

	memset(&h, 0, sizeof(h));
	h.type = type;
	h.reqid = 42;
	h.len = len;
	memset(&q, 0, sizeof(q));
	q.op = op;
	q.port = port;
	strcpy(q.name, name);
	memcpy(out, &h, sizeof(h));
	memcpy(out + sizeof(h), &q, sizeof(q));
	return sizeof(h) + sizeof(q);
}

static void
test_direct_parse(void **state)
{
	uint8_t b[sizeof(struct msg_hdr) + sizeof(struct msg_egress_direct)];
	struct msg_egress_direct q;
	struct msg_hdr h;
	size_t n;

	(void)state;
	n = datagram(b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_CONNECT, 443,
	    "reuse.test");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), 0);
	assert_int_equal(h.reqid, 42);
	assert_string_equal(q.name, "reuse.test");
	assert_int_equal(q.port, 443);
	/* Short, long, another type, a wrong length, flags, pad. */
	assert_int_equal(egress_direct_parse(b, n - 1, &h, &q), -1);
	assert_int_equal(egress_direct_parse(b, sizeof(h), &h, &q), -1);
	n = datagram(b, MSG_EGRESS_RUN, sizeof(q), VMM_NET_CONNECT, 443, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(
	    b, MSG_EGRESS_DIRECT, sizeof(q) - 1, VMM_NET_CONNECT, 443, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(
	    b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_CONNECT, 443, "a");
	b[4] = 1; /* flags */
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	/* A query, no op, an op past the last, port 0, no name, a name
	 * without its NUL. */
	n = datagram(
	    b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_RESOLVE, 443, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(b, MSG_EGRESS_DIRECT, sizeof(q), 0, 443, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(
	    b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_UDP_ADDR + 1, 443, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_CONNECT, 0, "a");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_CONNECT, 443, "");
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
	n = datagram(
	    b, MSG_EGRESS_DIRECT, sizeof(q), VMM_NET_CONNECT, 443, "a");
	memset(b + sizeof(h) + offsetof(struct msg_egress_direct, name), 'x',
	    sizeof(q.name));
	assert_int_equal(egress_direct_parse(b, n, &h, &q), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_kept_and_found, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_reuse_window, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_grant_margin, setup, teardown),
		cmocka_unit_test_setup_teardown(test_not_kept, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_generations, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_unknown_generation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(test_links, setup, teardown),
		cmocka_unit_test(test_direct_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* Unit tests for host/msg.c: exact-length decoding, senders, fd rules,
 * and the send/receive/dispatch path over a real SOCK_SEQPACKET pair. */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/egress/egress.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/store/store_wire.h"
#include "host/vmm_msg.h"

#define T_FIXED 0x0200
#define T_VAR 0x0201
#define T_FD 0x0202
#define FIXED_SIZE 40
#define VAR_BOUND 100

static int calls;

static int
h_count(struct proc_ctx *ctx, const struct msg *m)
{
	calls++;
	if (m->fd >= 0)
		close(m->fd);
	return 0;
}

#define T_BATCH 0x0210
#define T_BATCH_REPLY 0x0211
#define T_ECHO 0x0212

/* Replies with its own payload, as a server does. */
static int
h_echo(struct proc_ctx *ctx, const struct msg *m)
{
	calls++;
	return msg_reply(ctx, m, T_ECHO, m->data, m->hdr.len, -1) == MSG_OK
	    ? 0
	    : -1;
}

static int
h_batch(struct proc_ctx *ctx, const struct msg *m)
{
	static struct msg_replies r;

	return msg_batch_serve(ctx, m, T_BATCH_REPLY, &r);
}

static const struct msg_handler table[] = {
	{ T_FIXED, PROC_BIT(PROC_FRONT) | PROC_BIT(PROC_VMM), FIXED_SIZE, 0,
	    h_count },
	{ T_VAR, PROC_BIT(PROC_PARENT), VAR_BOUND, MSG_H_VARIABLE, h_count },
	{ T_FD, PROC_BIT(PROC_PARENT), 8, MSG_H_FD, h_count },
	{ T_BATCH, PROC_BIT(PROC_FRONT), MSG_MAX_PAYLOAD, MSG_H_VARIABLE,
	    h_batch },
	{ T_ECHO, PROC_BIT(PROC_FRONT), 16, MSG_H_VARIABLE, h_echo },
};

/* A datagram: header claiming hdr_len, followed by body_len bytes. */
static size_t
build(uint8_t *buf, uint32_t type, uint32_t hdr_len, size_t body_len)
{
	struct msg_hdr h;

	memset(&h, 0, sizeof(h));
	h.type = type;
	h.reqid = 7;
	h.len = hdr_len;
	memcpy(buf, &h, sizeof(h));
	memset(buf + sizeof(h), 0xa5, body_len);
	return sizeof(h) + body_len;
}

static int
decode(const uint8_t *buf, size_t len, enum proc_id from, int has_fd)
{
	struct msg m;
	const struct msg_handler *h;

	return msg_decode(table, nitems(table), from, buf, len, has_fd, &m, &h);
}

static void
test_ok(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	const struct msg_handler *h;
	struct msg m;
	size_t len;

	(void)state;
	len = build(buf, T_FIXED, FIXED_SIZE, FIXED_SIZE);
	assert_int_equal(
	    msg_decode(table, nitems(table), PROC_FRONT, buf, len, 0, &m, &h),
	    MSG_OK);
	assert_ptr_equal(h, &table[0]);
	assert_int_equal(m.hdr.len, FIXED_SIZE);
	assert_int_equal(m.hdr.reqid, 7);
	assert_ptr_equal(m.data, buf + sizeof(struct msg_hdr));
	assert_int_equal(m.from, PROC_FRONT);
	assert_int_equal(m.fd, MSG_NO_FD);
}

static void
test_short(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	size_t n;

	(void)state;
	build(buf, T_FIXED, FIXED_SIZE, FIXED_SIZE);
	for (n = 0; n < sizeof(struct msg_hdr); n++)
		assert_int_equal(decode(buf, n, PROC_FRONT, 0), MSG_ERR_SHORT);
}

static void
test_every_wrong_length(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	size_t len;
	uint32_t n;

	(void)state;
	/* Consistent header, wrong payload size for an exact type. */
	for (n = 0; n <= FIXED_SIZE * 3; n++) {
		len = build(buf, T_FIXED, n, n);
		assert_int_equal(decode(buf, len, PROC_FRONT, 0),
		    n == FIXED_SIZE ? MSG_OK : MSG_ERR_SIZE);
	}
	/* Header length disagreeing with the datagram, both ways. */
	for (n = 0; n <= FIXED_SIZE * 2; n++) {
		if (n == FIXED_SIZE)
			continue;
		len = build(buf, T_FIXED, FIXED_SIZE, n);
		assert_int_equal(
		    decode(buf, len, PROC_FRONT, 0), MSG_ERR_LENGTH);
		len = build(buf, T_FIXED, n, FIXED_SIZE);
		assert_int_equal(
		    decode(buf, len, PROC_FRONT, 0), MSG_ERR_LENGTH);
	}
	/* Variable size: anything up to the bound, nothing above. */
	for (n = 0; n <= VAR_BOUND + 10; n++) {
		len = build(buf, T_VAR, n, n);
		assert_int_equal(decode(buf, len, PROC_PARENT, 0),
		    n <= VAR_BOUND ? MSG_OK : MSG_ERR_SIZE);
	}
	/* Above the protocol maximum, whatever the datagram says. */
	len = build(buf, T_VAR, MSG_MAX_PAYLOAD + 1, 0);
	assert_int_equal(decode(buf, len, PROC_PARENT, 0), MSG_ERR_TOOBIG);
	len = build(buf, T_VAR, 0xffffffffu, 0);
	assert_int_equal(decode(buf, len, PROC_PARENT, 0), MSG_ERR_TOOBIG);
}

static void
test_reserved(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	struct msg_hdr h;
	size_t len;
	uint32_t bit;

	(void)state;
	len = build(buf, T_FIXED, FIXED_SIZE, FIXED_SIZE);
	memcpy(&h, buf, sizeof(h));
	h.pad = 1;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(decode(buf, len, PROC_FRONT, 0), MSG_ERR_RESERVED);
	for (bit = 0; bit < 32; bit++) {
		h.pad = 0;
		h.flags = 1u << bit;
		memcpy(buf, &h, sizeof(h));
		assert_int_equal(decode(buf, len, PROC_FRONT, 0),
		    (h.flags & ~MSG_F_ALL) ? MSG_ERR_RESERVED : MSG_OK);
	}
}

static void
test_unknown_type(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	static const uint32_t types[] = { 0, 1, 0x0100, 0x01ff, 0x0203, 0x0300,
		0x0600, 0xffff, 0xffffffffu };
	size_t i, len;

	(void)state;
	for (i = 0; i < nitems(types); i++) {
		len = build(buf, types[i], FIXED_SIZE, FIXED_SIZE);
		assert_int_equal(decode(buf, len, PROC_FRONT, 0), MSG_ERR_TYPE);
	}
}

static void
test_wrong_sender(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	size_t len;
	int p;

	(void)state;
	len = build(buf, T_FIXED, FIXED_SIZE, FIXED_SIZE);
	for (p = 0; p < PROC_COUNT; p++)
		assert_int_equal(decode(buf, len, (enum proc_id)p, 0),
		    (p == PROC_FRONT || p == PROC_VMM) ? MSG_OK
		                                       : MSG_ERR_SENDER);
	assert_int_equal(
	    decode(buf, len, (enum proc_id)PROC_COUNT, 0), MSG_ERR_SENDER);
	assert_int_equal(
	    decode(buf, len, (enum proc_id) - 1, 0), MSG_ERR_SENDER);
	len = build(buf, T_VAR, 1, 1);
	for (p = 1; p < PROC_COUNT; p++)
		assert_int_equal(
		    decode(buf, len, (enum proc_id)p, 0), MSG_ERR_SENDER);
}

static void
test_fd_rules(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	size_t len;

	(void)state;
	len = build(buf, T_FD, 8, 8);
	assert_int_equal(decode(buf, len, PROC_PARENT, 1), MSG_OK);
	assert_int_equal(decode(buf, len, PROC_PARENT, 0), MSG_ERR_FD);
	len = build(buf, T_FIXED, FIXED_SIZE, FIXED_SIZE);
	assert_int_equal(decode(buf, len, PROC_FRONT, 1), MSG_ERR_FD);
}

static void
test_roundtrip_dispatch(void **state)
{
	static uint8_t buf[MSG_BUFSZ], big[MSG_BUFSZ + 64];
	struct proc_ctx ctx;
	uint8_t payload[FIXED_SIZE];
	int sv[2], pv[2], p;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pv), 0);
	memset(&ctx, 0, sizeof(ctx));
	for (p = 0; p < PROC_COUNT; p++)
		ctx.fd[p] = -1;
	ctx.fd[PROC_FRONT] = sv[1];
	ctx.fd[PROC_PARENT] = pv[1];
	ctx.handlers = table;
	ctx.nhandlers = nitems(table);
	memset(payload, 1, sizeof(payload));
	calls = 0;

	/* Good message: dispatched. */
	assert_int_equal(
	    msg_send(sv[0], T_FIXED, 0, 1, payload, sizeof(payload), -1),
	    MSG_OK);
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(calls, 1);
	assert_int_equal(ctx.nrecv, 1);

	/* Short payload, unknown type, wrong sender, stray fd: dropped and
	 * counted, the handler never runs, the receiver carries on. */
	msg_send(sv[0], T_FIXED, 0, 2, payload, sizeof(payload) - 1, -1);
	msg_send(sv[0], 0x7777, 0, 3, payload, sizeof(payload), -1);
	msg_send(sv[0], T_VAR, 0, 4, payload, 4, -1);
	msg_send(sv[0], T_FIXED, 0, 5, payload, sizeof(payload), sv[0]);
	for (p = 0; p < 4; p++)
		assert_int_equal(
		    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(calls, 1);
	assert_int_equal(ctx.ndropped, 4);

	/* A datagram larger than the receive buffer: truncated, dropped. */
	memset(big, 0, sizeof(big));
	assert_int_equal(
	    send(sv[0], big, sizeof(big), 0), (ssize_t)sizeof(big));
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(ctx.ndropped, 5);

	/* A descriptor travels with SCM_RIGHTS. */
	assert_int_equal(
	    msg_send(pv[0], T_FD, 0, 6, payload, 8, sv[0]), MSG_OK);
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_PARENT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(calls, 2);

	/* Over the maximum: refused at the sender. */
	assert_int_equal(
	    msg_send(sv[0], T_VAR, 0, 7, big, MSG_MAX_PAYLOAD + 1, -1),
	    MSG_ERR_TOOBIG);

	/* Peer gone: EOF. */
	close(sv[0]);
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_ERR_EOF);
	close(sv[1]);
	close(pv[0]);
	close(pv[1]);
}

/*
 * A batch: each inner message served as if alone (its sender's rights,
 * exact sizes), a bad one skipped without hurting the others, a batch
 * inside a batch refused; the replies come back in one message, in
 * order, each with its own request id. A malformed batch serves nothing.
 */
static void
test_batch(void **state)
{
	static uint8_t buf[MSG_BUFSZ], b[MSG_MAX_PAYLOAD];
	struct proc_ctx ctx;
	struct msg_batch_hdr bh;
	struct msg_hdr h;
	const uint8_t *inner;
	size_t len = 0, off = 0, ilen, n;
	uint32_t count = 0;
	int sv[2], p, fd;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	memset(&ctx, 0, sizeof(ctx));
	for (p = 0; p < PROC_COUNT; p++)
		ctx.fd[p] = -1;
	ctx.fd[PROC_FRONT] = sv[1];
	ctx.handlers = table;
	ctx.nhandlers = nitems(table);
	calls = 0;

	assert_int_equal(
	    msg_batch_add(b, sizeof(b), &len, &count, T_ECHO, 0, 11, "one", 3),
	    MSG_OK);
	/* too long for T_ECHO's bound: skipped */
	assert_int_equal(msg_batch_add(b, sizeof(b), &len, &count, T_ECHO, 0,
	                     12, "0123456789abcdefX", 17),
	    MSG_OK);
	assert_int_equal(msg_batch_add(b, sizeof(b), &len, &count, T_BATCH, 0,
	                     13, "nested", 6),
	    MSG_OK);
	assert_int_equal(msg_batch_add(b, sizeof(b), &len, &count, T_ECHO, 0,
	                     14, "three", 5),
	    MSG_OK);
	memset(&bh, 0, sizeof(bh));
	bh.count = count;
	memcpy(b, &bh, sizeof(bh));
	assert_int_equal(msg_send(sv[0], T_BATCH, 0, 99, b, len, -1), MSG_OK);
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(calls, 2);
	assert_int_equal(ctx.ndropped, 2);
	assert_null(ctx.replies);

	assert_int_equal(msg_recv(sv[0], buf, sizeof(buf), &n, &fd), MSG_OK);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.type, T_BATCH_REPLY);
	assert_int_equal(h.reqid, 99);
	assert_true(h.flags & MSG_F_REPLY);
	assert_int_equal(
	    msg_batch_next(buf + sizeof(h), h.len, &off, &inner, &ilen), 1);
	memcpy(&h, inner, sizeof(h));
	assert_int_equal(h.reqid, 11);
	assert_memory_equal(inner + sizeof(h), "one", 3);
	assert_int_equal(msg_batch_next(buf + sizeof(struct msg_hdr),
	                     n - sizeof(struct msg_hdr), &off, &inner, &ilen),
	    1);
	memcpy(&h, inner, sizeof(h));
	assert_int_equal(h.reqid, 14);
	assert_int_equal(h.type, T_ECHO);
	assert_int_equal(msg_batch_next(buf + sizeof(struct msg_hdr),
	                     n - sizeof(struct msg_hdr), &off, &inner, &ilen),
	    0);

	/* An inner length running past the end: nothing is served. */
	len -= 2;
	assert_int_equal(msg_send(sv[0], T_BATCH, 0, 100, b, len, -1), MSG_OK);
	calls = 0;
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(calls, 0);
	/* An empty batch, and a count of zero, are malformed too. */
	off = 0;
	assert_int_equal(msg_batch_next(b, sizeof(bh), &off, &inner, &ilen), 0);
	bh.count = 0;
	memcpy(b, &bh, sizeof(bh));
	off = 0;
	assert_int_equal(msg_batch_next(b, len, &off, &inner, &ilen), -1);
	close(sv[0]);
	close(sv[1]);
}

/* A non-blocking link: nothing to read is not an error, and a full queue
 * makes the sender fail instead of wait. */
static void
test_nonblocking(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	struct proc_ctx ctx;
	uint8_t payload[FIXED_SIZE] = { 0 };
	int sv[2], p, i, rc = MSG_OK;

	(void)state;
	assert_int_equal(
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK, 0, sv), 0);
	memset(&ctx, 0, sizeof(ctx));
	for (p = 0; p < PROC_COUNT; p++)
		ctx.fd[p] = -1;
	ctx.fd[PROC_FRONT] = sv[1];
	ctx.handlers = table;
	ctx.nhandlers = nitems(table);
	assert_int_equal(
	    msg_dispatch(&ctx, PROC_FRONT, buf, sizeof(buf)), MSG_OK);
	assert_int_equal(ctx.nrecv + ctx.ndropped, 0);
	for (i = 0; i < 100000 && rc == MSG_OK; i++)
		rc = msg_send(
		    sv[0], T_FIXED, 0, 1, payload, sizeof(payload), -1);
	assert_int_equal(rc, MSG_ERR_AGAIN);
	close(sv[0]);
	close(sv[1]);
}

/* Every message type has its name: one from each area and header, and
 * the table (generated from the headers) has one row per type. */
static void
test_type_names_complete(void **state)
{
	static const struct {
		uint32_t type;
		const char *name;
	} some[] = {
		{ MSG_CTL_MINT_KEY, "MSG_CTL_MINT_KEY" },
		{ MSG_POLICY_DECISIONS, "MSG_POLICY_DECISIONS" },
		{ MSG_VMM_SANDBOX_CREATE, "MSG_VMM_SANDBOX_CREATE" },
		{ MSG_VMM_RUN_DONE, "MSG_VMM_RUN_DONE" },
		{ MSG_VMM_BATCH_REPLY, "MSG_VMM_BATCH_REPLY" },
		{ MSG_STORE_PUT, "MSG_STORE_PUT" },
		{ MSG_STORE_REPLY, "MSG_STORE_REPLY" },
		{ MSG_EGRESS_FETCH, "MSG_EGRESS_FETCH" },
		{ MSG_EGRESS_WEBHOOK_REPLY, "MSG_EGRESS_WEBHOOK_REPLY" },
		{ MSG_EGRESS_SECRET_REPLY, "MSG_EGRESS_SECRET_REPLY" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(some) / sizeof(some[0]); i++)
		assert_string_equal(msg_type_name(some[i].type), some[i].name);
	/* 13 control, 13 policy, 28 vmm, 9 store, 7 egress types. */
	assert_true(msg_type_nnames >= 70);
	for (size_t i = 0; i < msg_type_nnames; i++) {
		assert_true(msg_type_names[i].type >= 0x0100 &&
		    msg_type_names[i].type < 0x0700);
		assert_string_equal(msg_type_name(msg_type_names[i].type),
		    msg_type_names[i].name);
		for (size_t j = i + 1; j < msg_type_nnames; j++) {
			assert_int_not_equal(
			    msg_type_names[i].type, msg_type_names[j].type);
			assert_string_not_equal(
			    msg_type_names[i].name, msg_type_names[j].name);
		}
	}
}

static void
test_names(void **state)
{
	(void)state;
	assert_string_equal(msg_type_name(MSG_CTL_PING), "MSG_CTL_PING");
	assert_string_equal(msg_type_name(0x9999), "unknown");
	assert_string_equal(
	    msg_strerror(MSG_ERR_SENDER), "sender may not send this type");
	assert_string_equal(proc_name(PROC_FRONT), "front");
	assert_non_null(proc_by_name("vmm"));
	assert_null(proc_by_name("nope"));
	assert_true(proc_linked(PROC_FRONT, PROC_POLICY));
	assert_true(proc_linked(PROC_POLICY, PROC_FRONT));
	/* The policy tells egress of its loads (MSG_POLICY_CHANGED). */
	assert_true(proc_linked(PROC_POLICY, PROC_EGRESS));
	assert_false(proc_linked(PROC_FRONT, PROC_FRONT));
	assert_false(proc_linked(PROC_EGRESS, PROC_COUNT));
}

/* Every process table is well-formed: the common handlers first, the
 * peers symmetric, each child with a main and a filter. */
static void
test_proc_table(void **state)
{
	int a, b;

	(void)state;
	for (a = 0; a < PROC_COUNT; a++) {
		assert_int_equal(proc_table[a].id, a);
		if (a != PROC_PARENT) {
			assert_non_null(proc_table[a].main);
			assert_non_null(proc_table[a].filter);
		}
		for (b = 1; b < PROC_COUNT; b++)
			if (a != PROC_PARENT && a != b)
				assert_int_equal(
				    !!(proc_table[a].peers & PROC_BIT(b)),
				    !!(proc_table[b].peers & PROC_BIT(a)));
	}
}

/* The configuration a child receives: a node name that is not
 * [a-z0-9]{0,16}, or not terminated in its field, is refused (the id of
 * every sandbox is made from it). */
static void
test_config_node(void **state)
{
	static const char *const good[] = { "", "a", "eu1",
		"0123456789abcdef" };
	static const char *const bad[] = { "A", "a-b", "a/b", "a b",
		"0123456789abcdefg" };
	struct msg_config c;
	struct proc_ctx ctx;
	struct msg m;
	size_t i;

	(void)state;
	memset(&ctx, 0, sizeof(ctx));
	memset(&m, 0, sizeof(m));
	m.hdr.len = sizeof(c);
	m.data = (const uint8_t *)&c;
	m.fd = MSG_NO_FD;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		memset(&c, 0, sizeof(c));
		strcpy(c.node, good[i]);
		assert_int_equal(msg_h_config(&ctx, &m), 0);
		assert_string_equal(ctx.config->node, good[i]);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&c, 0, sizeof(c));
		strcpy(c.node, bad[i]);
		if (msg_h_config(&ctx, &m) != -1)
			fail_msg("node \"%s\" accepted", bad[i]);
	}
	memset(&c, 0, sizeof(c));
	memset(c.node, 'a', sizeof(c.node));
	assert_int_equal(msg_h_config(&ctx, &m), -1);
	assert_string_equal(ctx.config->node, "0123456789abcdef");
	free(ctx.config);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ok),
		cmocka_unit_test(test_config_node),
		cmocka_unit_test(test_short),
		cmocka_unit_test(test_every_wrong_length),
		cmocka_unit_test(test_reserved),
		cmocka_unit_test(test_unknown_type),
		cmocka_unit_test(test_wrong_sender),
		cmocka_unit_test(test_fd_rules),
		cmocka_unit_test(test_roundtrip_dispatch),
		cmocka_unit_test(test_nonblocking),
		cmocka_unit_test(test_batch),
		cmocka_unit_test(test_type_names_complete),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_proc_table),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Unit tests for the store's messages and service step: grants minted
 * with a test key are verified (cap, target, principal, request id, MAC,
 * expiry), senders are checked, every truncation and extension of a
 * request is refused as malformed with a reply, and each request kind
 * round-trips through encoder, service and reply decoder.
 */
#include <sys/socket.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lib/caps.h"
#include "lib/util.h"

#define REQ 77

static const uint8_t key[GRANT_KEY_BYTES] = { 1, 2, 3, 4 };

struct fx {
	char dir[64];
	struct store *st;
	struct store_service svc;
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strlcpy(f->dir, "/tmp/test_store_wire.XXXXXX", sizeof(f->dir));
	if (mkdtemp(f->dir) == NULL || store_open(f->dir, NULL, &f->st) != 0)
		return -1;
	f->svc.st = f->st;
	memcpy(f->svc.grant_key, key, sizeof(key));
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	char p[128];

	store_close(f->st);
	snprintf(p, sizeof(p), "%s/data.mdb", f->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

static void
mint(struct grant *g, uint32_t cap, const char *principal, const char *target,
    uint64_t reqid)
{
	memset(g, 0, sizeof(*g));
	g->link = PROC_STORE;
	g->decision = GRANT_ALLOW;
	g->cap = cap;
	strlcpy(g->principal, principal, sizeof(g->principal));
	grant_target_hash(target, strlen(target), g->target);
	g->reqid = reqid;
	g->expires = grant_now_ms() + 60000;
	assert_int_equal(grant_mint(g, key), GRANT_OK);
}

static void
sandbox_rec(const char *id, void **rec, size_t *len)
{
	struct store_sandbox s;

	memset(&s, 0, sizeof(s));
	s.id = id;
	s.image = "js";
	s.owner = "agent-b";
	s.created_ms = 1;
	s.expires_ms = 2;
	s.status = STORE_SBX_RUNNING;
	assert_int_equal(store_sandbox_encode(&s, rec, len), 0);
}

/* Run one request; return the reply's status (reply checked). */
static int
call(struct fx *f, uint16_t type, uint32_t from, uint64_t reqid,
    const void *msg, size_t len, struct store_wire_reply *h, void **reply,
    size_t *rlen)
{
	char next[STORE_CURSOR_MAX];
	uint16_t rtype;
	void *r;
	size_t rl;

	(void)store_service_handle(
	    &f->svc, type, from, reqid, msg, len, &rtype, &r, &rl);
	assert_non_null(r);
	assert_int_equal(rtype, MSG_STORE_REPLY);
	assert_int_equal(store_wire_reply_decode(r, rl, h, next), STORE_OK);
	if (reply != NULL) {
		*reply = r;
		*rlen = rl;
	} else
		free(r);
	return (int)h->status;
}

static int
put_sandbox(struct fx *f, const struct grant *g, uint64_t reqid, const char *id)
{
	struct store_wire_reply h;
	void *rec, *msg;
	size_t len, mlen;
	int st;

	sandbox_rec(id, &rec, &len);
	assert_int_equal(store_wire_put_encode(
	                     STORE_DB_SANDBOXES, 0, g, rec, len, &msg, &mlen),
	    0);
	st = call(
	    f, MSG_STORE_PUT, PROC_FRONT, reqid, msg, mlen, &h, NULL, NULL);
	free(rec);
	free(msg);
	return st;
}

static void
test_put_get_with_grant(void **state)
{
	struct fx *f = *state;
	struct store_wire_reply h;
	struct grant g;
	struct store_sandbox s;
	const void *rec;
	size_t rl, reclen;
	void *msg, *reply;

	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_1", REQ);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_OK);
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_GET, STORE_DB_SANDBOXES, "sbx_1",
	        NULL, 0, NULL, &msg, &rl),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, rl, &h, &reply, &rl),
	    STORE_OK);
	free(msg);
	assert_int_equal(h.count, 1);
	assert_int_equal(
	    store_wire_reply_record(reply, rl, 0, &rec, &reclen), 0);
	assert_int_equal(store_sandbox_decode(rec, reclen, &s), 0);
	assert_string_equal(s.owner, "agent-b");
	assert_int_not_equal(
	    store_wire_reply_record(reply, rl, 1, &rec, &reclen), 0);
	free(reply);
}

static void
test_grant_refusals(void **state)
{
	struct fx *f = *state;
	struct grant g;

	/* Another capability. */
	mint(&g, CAP_SANDBOX_READ, "agent-b", "sbx_1", REQ);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	/* Another target. */
	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_2", REQ);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	/* Another principal than the record's owner. */
	mint(&g, CAP_SANDBOX_WRITE, "agent-a", "sbx_1", REQ);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	/* Minted for another request. */
	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_1", REQ);
	assert_int_equal(put_sandbox(f, &g, REQ + 1, "sbx_1"), STORE_E_GRANT);
	/* Tampered. */
	g.cap = CAP_ADMIN;
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	/* A deny. */
	memset(&g, 0, sizeof(g));
	g.link = PROC_STORE;
	g.decision = GRANT_DENY;
	g.cap = CAP_SANDBOX_WRITE;
	strlcpy(g.principal, "agent-b", sizeof(g.principal));
	grant_target_hash("sbx_1", 5, g.target);
	g.reqid = REQ;
	g.expires = grant_now_ms() + 60000;
	assert_int_equal(grant_mint(&g, key), GRANT_OK);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	/* Minted for the vmm's link. */
	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_1", REQ);
	g.link = PROC_VMM;
	assert_int_equal(grant_mint(&g, key), GRANT_OK);
	assert_int_equal(put_sandbox(f, &g, REQ, "sbx_1"), STORE_E_GRANT);
	assert_int_equal(f->svc.nrefused, 7);
	{
		void *rec;
		size_t len;

		assert_int_equal(store_get(f->st, STORE_DB_SANDBOXES, "sbx_1",
		                     NULL, &rec, &len),
		    STORE_E_NOTFOUND);
	}
}

static void
test_senders(void **state)
{
	struct fx *f = *state;
	struct store_wire_reply h;
	void *msg;
	size_t len;

	assert_int_equal(store_wire_counter_encode(
	                     STORE_COUNTER_ADD, "p", "budget", 5, &msg, &len),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_COUNTER, PROC_FRONT, 1, msg, len, &h, NULL, NULL),
	    STORE_E_SENDER);
	assert_int_equal(call(f, MSG_STORE_COUNTER, PROC_POLICY, 1, msg, len,
	                     &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 5);
	assert_int_equal(call(f, MSG_STORE_COUNTER, PROC_POLICY, 1, msg, len,
	                     &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 10);
	free(msg);
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_GET, STORE_DB_SANDBOXES, "x", NULL,
	        0, NULL, &msg, &len),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_EGRESS, 1, msg, len, &h, NULL, NULL),
	    STORE_E_SENDER);
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, len, &h, NULL, NULL),
	    STORE_E_NOTFOUND);
	free(msg);
}

static void
test_malformed(void **state)
{
	struct fx *f = *state;
	struct store_wire_reply h;
	struct grant g;
	uint8_t *big;
	void *rec, *msg;
	size_t len, mlen;
	uint16_t rt;
	void *r;
	size_t rl;

	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_1", REQ);
	sandbox_rec("sbx_1", &rec, &len);
	assert_int_equal(store_wire_put_encode(
	                     STORE_DB_SANDBOXES, 0, &g, rec, len, &msg, &mlen),
	    0);
	for (size_t i = 0; i < mlen; i++) {
		uint8_t *c = malloc(i ? i : 1);

		memcpy(c, msg, i);
		assert_int_equal(call(f, MSG_STORE_PUT, PROC_FRONT, REQ, c, i,
		                     &h, NULL, NULL),
		    STORE_E_MSG);
		free(c);
	}
	big = malloc(mlen + 1);
	memcpy(big, msg, mlen);
	big[mlen] = 0;
	assert_int_equal(call(f, MSG_STORE_PUT, PROC_FRONT, REQ, big, mlen + 1,
	                     &h, NULL, NULL),
	    STORE_E_MSG);
	/* Into the audit database by PUT: refused. */
	((struct store_wire_put *)(void *)big)->db = STORE_DB_AUDIT;
	assert_int_equal(
	    call(f, MSG_STORE_PUT, PROC_FRONT, REQ, big, mlen, &h, NULL, NULL),
	    STORE_E_MSG);
	free(big);
	free(msg);
	free(rec);
	/* A GET with a grant, a key with a NUL, a LIST without limit. */
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_GET, STORE_DB_SANDBOXES, "abc",
	        NULL, 0, NULL, &msg, &mlen),
	    0);
	big = msg;
	big[mlen - 2] = '\0';
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, mlen, &h, NULL, NULL),
	    STORE_E_MSG);
	big[mlen - 2] = 'b';
	((struct store_wire_key *)msg)->grant.version = 1;
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, mlen, &h, NULL, NULL),
	    STORE_E_MSG);
	((struct store_wire_key *)msg)->grant.version = 0;
	assert_int_equal(
	    call(f, MSG_STORE_LIST, PROC_FRONT, 1, msg, mlen, &h, NULL, NULL),
	    STORE_E_MSG);
	free(msg);
	/* Unknown type: no reply at all. */
	assert_int_equal(store_service_handle(&f->svc, 0x04ff, PROC_FRONT, 1,
	                     NULL, 0, &rt, &r, &rl),
	    STORE_E_MSG);
	assert_null(r);
	/* Empty payloads of every type. */
	{
		static const uint16_t types[] = { MSG_STORE_PUT, MSG_STORE_GET,
			MSG_STORE_LIST, MSG_STORE_DELETE, MSG_STORE_AUDIT,
			MSG_STORE_COUNTER, MSG_STORE_REVOKED };

		for (size_t i = 0; i < nitems(types); i++) {
			assert_int_equal(
			    store_service_handle(&f->svc, types[i], PROC_POLICY,
			        1, NULL, 0, &rt, &r, &rl) == STORE_OK,
			    0);
			free(r);
		}
	}
}

static void
test_list_audit_delete_revoke(void **state)
{
	struct fx *f = *state;
	struct store_wire_reply h;
	char id[16], next[STORE_CURSOR_MAX];
	struct store_audit e[3];
	struct grant g;
	void *msg, *reply;
	size_t len, rl;
	unsigned total = 0;

	for (int i = 0; i < 7; i++) {
		snprintf(id, sizeof(id), "sbx_%d", i);
		mint(&g, CAP_SANDBOX_WRITE, "agent-b", id, REQ + i);
		assert_int_equal(put_sandbox(f, &g, REQ + i, id), STORE_OK);
	}
	next[0] = '\0';
	do {
		assert_int_equal(
		    store_wire_key_encode(MSG_STORE_LIST, STORE_DB_SANDBOXES,
		        NULL, next[0] ? next : NULL, 3, NULL, &msg, &len),
		    0);
		assert_int_equal(call(f, MSG_STORE_LIST, PROC_FRONT, 1, msg,
		                     len, &h, &reply, &rl),
		    STORE_OK);
		assert_int_equal(
		    store_wire_reply_decode(reply, rl, &h, next), 0);
		total += h.count;
		free(msg);
		free(reply);
	} while (next[0] != '\0');
	assert_int_equal(total, 7);

	memset(e, 0, sizeof(e));
	for (int i = 0; i < 3; i++) {
		e[i].time_ms = i;
		e[i].request_id = "r";
		e[i].principal = "agent-b";
		e[i].jti = "";
		e[i].action = "sandbox:write";
		e[i].target = "sbx_1";
		e[i].decision = STORE_DECISION_DENY;
		e[i].rule = "";
		e[i].detail = "";
	}
	assert_int_equal(store_wire_audit_encode(e, 3, &msg, &len), 0);
	assert_int_equal(
	    call(f, MSG_STORE_AUDIT, PROC_EGRESS, 1, msg, len, &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 1);
	assert_int_equal(
	    call(f, MSG_STORE_AUDIT, PROC_VMM, 1, msg, len, &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 4);
	free(msg);
	{
		struct store_verify v;

		assert_int_equal(store_audit_verify(f->st, NULL, &v), 0);
		assert_int_equal(v.entries, 6);
	}

	/* DELETE needs its grant. */
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_DELETE, STORE_DB_SANDBOXES, "sbx_3",
	        NULL, 0, &g, &msg, &len),
	    0);
	assert_int_equal(call(f, MSG_STORE_DELETE, PROC_FRONT, REQ, msg, len,
	                     &h, NULL, NULL),
	    STORE_E_GRANT);
	free(msg);
	mint(&g, CAP_SANDBOX_WRITE, "agent-b", "sbx_3", REQ);
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_DELETE, STORE_DB_SANDBOXES, "sbx_3",
	        NULL, 0, &g, &msg, &len),
	    0);
	assert_int_equal(call(f, MSG_STORE_DELETE, PROC_FRONT, REQ, msg, len,
	                     &h, NULL, NULL),
	    STORE_OK);
	free(msg);

	/* Revocation: put with an admin grant, then ask. */
	{
		struct store_revocation rv = { "jti-9", INT32_MAX, 1 };
		void *rec;
		size_t rlen;

		assert_int_equal(store_revocation_encode(&rv, &rec, &rlen), 0);
		mint(&g, CAP_ADMIN, "root", "jti-9", REQ);
		assert_int_equal(store_wire_put_encode(STORE_DB_REVOCATIONS, 0,
		                     &g, rec, rlen, &msg, &len),
		    0);
		free(rec);
		assert_int_equal(call(f, MSG_STORE_PUT, PROC_FRONT, REQ, msg,
		                     len, &h, NULL, NULL),
		    STORE_OK);
		free(msg);
	}
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_REVOKED, STORE_DB_REVOCATIONS,
	        "jti-9", NULL, 0, NULL, &msg, &len),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_REVOKED, PROC_FRONT, 1, msg, len, &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 1);
	free(msg);
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_REVOKED, STORE_DB_REVOCATIONS,
	        "jti-other", NULL, 0, NULL, &msg, &len),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_REVOKED, PROC_FRONT, 1, msg, len, &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.value, 0);
	free(msg);
}

static int64_t fake_now;

static int64_t
fake_clock(void *arg)
{
	(void)arg;
	return fake_now;
}

/* Idempotency through the wire: the first response within 24 h, none
 * after; only the front writes these, without a grant (they are its
 * memory of its own replies). */
static void
test_idempotency(void **state)
{
	struct fx *f = *state;
	const int64_t day = 24ll * 3600 * 1000;
	struct store_idem k = { "agent-b", "key-1", 0, { 5 }, 201, "{}", 2 };
	struct store_wire_reply h;
	struct grant g;
	void *rec, *msg;
	size_t len, mlen;

	fake_now = 1700000000000;
	k.created_ms = fake_now;
	f->svc.now_ms = fake_clock;
	assert_int_equal(store_idem_encode(&k, &rec, &len), 0);
	memset(&g, 0, sizeof(g));
	assert_int_equal(store_wire_put_encode(STORE_DB_IDEMPOTENCY, 0, &g, rec,
	                     len, &msg, &mlen),
	    0);
	assert_int_equal(
	    call(f, MSG_STORE_PUT, PROC_VMM, REQ, msg, mlen, &h, NULL, NULL),
	    STORE_E_SENDER);
	assert_int_equal(
	    call(f, MSG_STORE_PUT, PROC_FRONT, REQ, msg, mlen, &h, NULL, NULL),
	    STORE_OK);
	/* The same key again while live: EXISTS. */
	assert_int_equal(
	    call(f, MSG_STORE_PUT, PROC_FRONT, REQ, msg, mlen, &h, NULL, NULL),
	    STORE_E_EXISTS);
	free(msg);
	free(rec);
	assert_int_equal(
	    store_wire_key_encode(MSG_STORE_GET, STORE_DB_IDEMPOTENCY,
	        "agent-b", "key-1", 0, NULL, &msg, &mlen),
	    0);
	fake_now += day - 1;
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, mlen, &h, NULL, NULL),
	    STORE_OK);
	assert_int_equal(h.count, 1);
	fake_now += 1;
	assert_int_equal(
	    call(f, MSG_STORE_GET, PROC_FRONT, 1, msg, mlen, &h, NULL, NULL),
	    STORE_E_NOTFOUND);
	free(msg);
}

/* Through the real message layer on a SOCK_SEQPACKET pair. */
static void
test_over_socketpair(void **state)
{
	static uint8_t buf[MSG_BUFSZ];
	struct fx *f = *state;
	struct store_wire_reply h;
	char next[STORE_CURSOR_MAX];
	struct msg_hdr mh;
	int sv[2], fd;
	size_t len, rlen, mlen;
	uint16_t rtype;
	void *msg, *reply;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(store_wire_counter_encode(
	                     STORE_COUNTER_ADD, "p", "runs", 3, &msg, &mlen),
	    0);
	assert_int_equal(
	    msg_send(sv[0], MSG_STORE_COUNTER, 0, 42, msg, mlen, -1), MSG_OK);
	free(msg);
	assert_int_equal(msg_recv(sv[1], buf, sizeof(buf), &len, &fd), MSG_OK);
	memcpy(&mh, buf, sizeof(mh));
	assert_int_equal(len, sizeof(mh) + mh.len);
	assert_int_equal(
	    store_service_handle(&f->svc, (uint16_t)mh.type, PROC_POLICY,
	        mh.reqid, buf + sizeof(mh), mh.len, &rtype, &reply, &rlen),
	    STORE_OK);
	assert_int_equal(
	    msg_send(sv[1], rtype, MSG_F_REPLY, mh.reqid, reply, rlen, -1),
	    MSG_OK);
	free(reply);
	assert_int_equal(msg_recv(sv[0], buf, sizeof(buf), &len, &fd), MSG_OK);
	memcpy(&mh, buf, sizeof(mh));
	assert_int_equal(mh.reqid, 42);
	assert_int_equal(mh.type, MSG_STORE_REPLY);
	assert_int_equal(
	    store_wire_reply_decode(buf + sizeof(mh), mh.len, &h, next), 0);
	assert_int_equal(h.status, STORE_OK);
	assert_int_equal(h.value, 3);
	close(sv[0]);
	close(sv[1]);
}

static void
test_reply_decoder(void **state)
{
	struct store_wire_reply h;
	char next[STORE_CURSOR_MAX];
	uint8_t buf[64];

	(void)state;
	memset(buf, 0, sizeof(buf));
	h.version = STORE_WIRE_VERSION;
	h.status = 0;
	h.count = 1;
	h.next_len = 0;
	h.value = 0;
	memcpy(buf, &h, sizeof(h));
	/* A record length that runs past the end. */
	buf[sizeof(h)] = 200;
	assert_int_equal(
	    store_wire_reply_decode(buf, sizeof(h) + 8, &h, next), STORE_E_MSG);
	buf[sizeof(h)] = 4;
	assert_int_equal(
	    store_wire_reply_decode(buf, sizeof(h) + 8, &h, next), STORE_OK);
	assert_int_equal(
	    store_wire_reply_decode(buf, sizeof(h) + 9, &h, next), STORE_E_MSG);
	/* An unknown status. */
	((struct store_wire_reply *)(void *)buf)->status = 12;
	assert_int_equal(
	    store_wire_reply_decode(buf, sizeof(h) + 8, &h, next), STORE_E_MSG);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_put_get_with_grant),
		T(test_grant_refusals),
		T(test_senders),
		T(test_malformed),
		T(test_list_audit_delete_revoke),
		T(test_idempotency),
		T(test_over_socketpair),
		cmocka_unit_test(test_reply_decoder),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

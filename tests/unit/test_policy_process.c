/* The policy language inside the real policy process loop: a forked child
 * runs policy_main with policy_hooks = &policy_lang_hooks (as phase 2
 * wires it); the test plays parent and front, loads policy text through
 * a memfd, asks for decisions and verifies the grants it gets back. */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_policy.h"
#include "lib/caps.h"
#include "lib/memfd.h"
#include "policy/policy.h"
#include "policy/policy_hooks.h"
#include "host/store/store_wire.h"

struct fixture {
	pid_t pid;
	int parent;
	int front;
	int store;
	uint8_t key[GRANT_KEY_BYTES];
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct proc_ctx ctx;
	int pv[2], fv[2], sv[2], p;

	if (fx == NULL || sodium_init() < 0)
		return -1;
	randombytes_buf(fx->key, sizeof(fx->key));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pv) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fv) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == -1)
		return -1;
	if ((fx->pid = fork()) == 0) {
		close(pv[0]);
		close(fv[0]);
		close(sv[0]);
		policy_hooks = &policy_lang_hooks;
		memset(&ctx, 0, sizeof(ctx));
		for (p = 0; p < PROC_COUNT; p++)
			ctx.fd[p] = -1;
		ctx.self = PROC_POLICY;
		ctx.fd[PROC_PARENT] = pv[1];
		ctx.fd[PROC_FRONT] = fv[1];
		ctx.fd[PROC_STORE] = sv[1];
		_exit(policy_main(&ctx));
	}
	close(pv[1]);
	close(fv[1]);
	close(sv[1]);
	fx->parent = pv[0];
	fx->front = fv[0];
	fx->store = sv[0];
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	int st;

	msg_send(fx->parent, MSG_CTL_SHUTDOWN, 0, 999, NULL, 0, -1);
	close(fx->parent);
	close(fx->front);
	close(fx->store);
	waitpid(fx->pid, &st, 0);
	free(fx);
	return 0;
}

static void
expect(int fd, uint32_t type, void *payload, size_t size, uint64_t reqid)
{
	static uint8_t buf[MSG_BUFSZ];
	struct msg_hdr h;
	size_t len;
	int rfd;

	assert_int_equal(msg_recv(fd, buf, sizeof(buf), &len, &rfd), MSG_OK);
	assert_int_equal(rfd, MSG_NO_FD);
	assert_int_equal(len, sizeof(h) + size);
	memcpy(&h, buf, sizeof(h));
	assert_int_equal(h.type, type);
	assert_int_equal(h.reqid, reqid);
	memcpy(payload, buf + sizeof(h), size);
}

static uint32_t
load(struct fixture *fx, const char *text, uint64_t gen)
{
	struct msg_policy_load l;
	struct msg_policy_loaded r;
	int mfd;

	mfd = memfd_make_sealed("policy", text, strlen(text));
	assert_true(mfd >= 0);
	memset(&l, 0, sizeof(l));
	l.size = strlen(text);
	l.generation = gen;
	assert_int_equal(msg_send(fx->parent, MSG_POLICY_LOAD, 0, 100 + gen, &l,
	                     sizeof(l), mfd),
	    MSG_OK);
	close(mfd);
	expect(fx->parent, MSG_POLICY_LOADED, &r, sizeof(r), 100 + gen);
	return r.status;
}

static void
decide(struct fixture *fx, const char *who, int cap, const char *target,
    uint32_t token_caps, uint64_t reqid, struct msg_policy_decision *d)
{
	struct msg_policy_decide q;

	memset(&q, 0, sizeof(q));
	q.cap = cap;
	q.link = PROC_VMM;
	q.token_caps = token_caps;
	q.target_len = strlen(target);
	memcpy(q.target, target, q.target_len);
	strlcpy(q.principal, who, sizeof(q.principal));
	assert_int_equal(
	    msg_send(fx->front, MSG_POLICY_DECIDE, 0, reqid, &q, sizeof(q), -1),
	    MSG_OK);
	expect(fx->front, MSG_POLICY_DECISION, d, sizeof(*d), reqid);
}

static void
test_decisions_through_the_process(void **state)
{
	static const char text[] = "role runner {\n"
	                           "\tallow sandbox:read\n"
	                           "\texec \"node\", \"pnpm\"\n"
	                           "\tmemory 128M\n"
	                           "\ttimeout 30s\n"
	                           "\toutput 1M\n"
	                           "\trate write 2/min\n"
	                           "}\n"
	                           "agent \"agent-b\" : runner\n";
	struct fixture *fx = *state;
	struct msg_grant_key k;
	struct msg_policy_decision d;
	struct grant g;

	memset(&k, 0, sizeof(k));
	k.link = PROC_VMM;
	memcpy(k.key, fx->key, sizeof(k.key));
	assert_int_equal(
	    msg_send(fx->parent, MSG_CTL_GRANT_KEY, 0, 0, &k, sizeof(k), -1),
	    MSG_OK);
	assert_int_equal(load(fx, text, 1), 0);

	/* allowed: an authentic grant with the policy's limits and rule */
	decide(fx, "agent-b", CAP_EXEC, "node", CAP_ALL, 1, &d);
	assert_int_equal(grant_verify(&d.grant, sizeof(d.grant), PROC_VMM,
	                     fx->key, grant_now_ms(), 1, &g),
	    GRANT_OK);
	assert_int_equal(grant_check(&g, CAP_EXEC, "node", 4), GRANT_OK);
	assert_int_equal(g.mem_max, 128u << 20);
	assert_int_equal(g.timeout_ms, 30000);
	assert_int_equal(g.output_max, 1u << 20);
	assert_int_equal(d.rule, 2);
	assert_int_equal(d.line, 3);

	/* second write of the 2/min bucket, then rate limited */
	decide(fx, "agent-b", CAP_EXEC, "pnpm", CAP_ALL, 2, &d);
	assert_int_equal(d.grant.decision, GRANT_ALLOW);
	decide(fx, "agent-b", CAP_EXEC, "node", CAP_ALL, 3, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	assert_true(d.retry_after_ms > 0 && d.retry_after_ms <= 30000);

	/* off the exec list; outside the token's caps; unknown agent */
	decide(fx, "agent-b", CAP_EXEC, "sh", CAP_ALL, 4, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	decide(fx, "agent-b", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 5, &d);
	assert_int_equal(d.grant.decision, GRANT_ALLOW);
	decide(
	    fx, "agent-b", CAP_SANDBOX_READ, "sbx_1", CAP_BIT(CAP_EXEC), 6, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	decide(fx, "agent-x", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 7, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	assert_int_equal(d.rule, 0);

	/* a policy with errors is refused and the old one kept */
	assert_int_not_equal(load(fx, "agent \"a\" { allow nonsense }", 2), 0);
	decide(fx, "agent-b", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 8, &d);
	assert_int_equal(d.grant.decision, GRANT_ALLOW);

	/* a reload replaces it, quotas start afresh */
	assert_int_equal(load(fx, "agent \"agent-c\" { allow admin }\n", 3), 0);
	decide(fx, "agent-b", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 9, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	decide(fx, "agent-c", CAP_ADMIN, "", CAP_ALL, 10, &d);
	assert_int_equal(d.grant.decision, GRANT_ALLOW);
}

/* DECIDE_LINK through the process: only a rule that says "link" names
 * the port, and the decision carries its bound (link_ms); without the
 * flag no bound is told. */
static void
test_link_decisions(void **state)
{
	static const char text[] = "agent \"a\" {\n"
	                           "\tallow sandbox:read\n"
	                           "\texpose 8000 link 2h, 8001\n"
	                           "}\n";
	struct fixture *fx = *state;
	struct msg_grant_key k;
	struct msg_policy_decide q;
	struct msg_policy_decision d;
	uint64_t reqid = 20;
	static const struct {
		const char *port;
		uint32_t flags;
		int allow;
		uint64_t link_ms;
	} cases[] = {
		{ "8000", DECIDE_PORT | DECIDE_LINK, 1, 7200000 },
		{ "8000", DECIDE_PORT, 1, 0 },
		{ "8001", DECIDE_PORT | DECIDE_LINK, 0, 0 },
		{ "8001", DECIDE_PORT, 1, 0 },
		/* a link without a port is malformed */
		{ "", DECIDE_LINK, 0, 0 },
	};

	memset(&k, 0, sizeof(k));
	k.link = PROC_VMM;
	memcpy(k.key, fx->key, sizeof(k.key));
	assert_int_equal(
	    msg_send(fx->parent, MSG_CTL_GRANT_KEY, 0, 0, &k, sizeof(k), -1),
	    MSG_OK);
	assert_int_equal(load(fx, text, 1), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memset(&q, 0, sizeof(q));
		q.cap = CAP_SANDBOX_READ;
		q.link = PROC_VMM;
		q.token_caps = CAP_ALL;
		q.flags = cases[i].flags | DECIDE_DRY_RUN;
		q.target_len = strlen(cases[i].port);
		memcpy(q.target, cases[i].port, q.target_len);
		strlcpy(q.principal, "a", sizeof(q.principal));
		assert_int_equal(msg_send(fx->front, MSG_POLICY_DECIDE, 0,
		                     reqid, &q, sizeof(q), -1),
		    MSG_OK);
		expect(fx->front, MSG_POLICY_DECISION, &d, sizeof(d), reqid);
		reqid++;
		assert_int_equal(
		    d.grant.decision == GRANT_ALLOW, cases[i].allow);
		assert_int_equal(d.link_ms, cases[i].link_ms);
	}
}

/*
 * After a start, what an agent has spent is read back from the store.
 * Until the store answers, the agent gets no decision (its budget would
 * look whole); then the budget is what the store says.
 */
static void
test_budget_waits_for_the_store(void **state)
{
	static const char text[] = "agent \"dave\" {\n"
	                           "\tallow sandbox:read\n"
	                           "\tbudget 4\n"
	                           "}\n"
	                           "agent \"erin\" { allow sandbox:read }\n";
	static uint8_t buf[MSG_BUFSZ];
	struct fixture *fx = *state;
	struct msg_grant_key k;
	struct msg_policy_decision d;
	struct store_wire_reply rep;
	struct msg_hdr h;
	size_t len;
	int fd, i;

	memset(&k, 0, sizeof(k));
	k.link = PROC_VMM;
	memcpy(k.key, fx->key, sizeof(k.key));
	assert_int_equal(
	    msg_send(fx->parent, MSG_CTL_GRANT_KEY, 0, 0, &k, sizeof(k), -1),
	    MSG_OK);
	assert_int_equal(load(fx, text, 1), 0);

	/* The read of dave's budget (the policy load's audit may come
	 * first). */
	for (i = 0; i < 4; i++) {
		assert_int_equal(
		    msg_recv(fx->store, buf, sizeof(buf), &len, &fd), MSG_OK);
		memcpy(&h, buf, sizeof(h));
		if (h.type == MSG_STORE_COUNTER)
			break;
	}
	assert_int_equal(h.type, MSG_STORE_COUNTER);

	decide(fx, "dave", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 1, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	assert_int_equal(d.reason, POLICY_R_RESTORING);
	/* an agent without a budget is not held up */
	decide(fx, "erin", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 2, &d);
	assert_int_equal(d.grant.decision, GRANT_ALLOW);

	/* The store: dave has spent 3 of 4. */
	memset(&rep, 0, sizeof(rep));
	rep.version = STORE_WIRE_VERSION;
	rep.status = STORE_OK;
	rep.value = 3;
	assert_int_equal(msg_send(fx->store, MSG_STORE_REPLY, MSG_F_REPLY,
	                     h.reqid, &rep, sizeof(rep), -1),
	    MSG_OK);
	/* The process may see the next request before the reply (it
	 * serves its links in turn): ask until it has read it. */
	for (i = 0; i < 1000; i++) {
		decide(fx, "dave", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 3, &d);
		if (d.reason != POLICY_R_RESTORING)
			break;
		usleep(1000);
	}
	assert_int_equal(d.grant.decision, GRANT_ALLOW);
	decide(fx, "dave", CAP_SANDBOX_READ, "sbx_1", CAP_ALL, 4, &d);
	assert_int_equal(d.grant.decision, GRANT_DENY);
	assert_int_equal(d.reason, POLICY_R_BUDGET);
}

/* A batch: each entry decided as if alone, its grant bound to its own
 * request id; a malformed entry is refused, the others are not hurt. */
static void
test_decide_batch(void **state)
{
	static struct {
		struct msg_batch_hdr h;
		struct msg_policy_decide_entry e[3];
	} q;
	static struct {
		struct msg_batch_hdr h;
		struct msg_policy_decision_entry e[3];
	} r;
	struct fixture *fx = *state;
	struct msg_grant_key k;
	struct grant g;
	int i;

	memset(&k, 0, sizeof(k));
	k.link = PROC_VMM;
	memcpy(k.key, fx->key, sizeof(k.key));
	assert_int_equal(
	    msg_send(fx->parent, MSG_CTL_GRANT_KEY, 0, 0, &k, sizeof(k), -1),
	    MSG_OK);
	assert_int_equal(
	    load(fx, "agent \"a\" { allow sandbox:read }\n", 1), 0);
	memset(&q, 0, sizeof(q));
	q.h.count = 3;
	for (i = 0; i < 3; i++) {
		q.e[i].reqid = 700 + (uint64_t)i;
		q.e[i].q.cap = CAP_SANDBOX_READ;
		q.e[i].q.link = PROC_VMM;
		q.e[i].q.token_caps = CAP_ALL;
		q.e[i].q.target_len = 5;
		memcpy(q.e[i].q.target, "sbx_1", 5);
		strlcpy(q.e[i].q.principal, "a", sizeof(q.e[i].q.principal));
	}
	q.e[1].q.cap = CAP_COUNT; /* malformed */
	q.e[2].q.cap = CAP_SANDBOX_WRITE; /* not allowed */
	assert_int_equal(msg_send(fx->front, MSG_POLICY_DECIDE_BATCH, 0, 9, &q,
	                     sizeof(q), -1),
	    MSG_OK);
	expect(fx->front, MSG_POLICY_DECISIONS, &r, sizeof(r), 9);
	assert_int_equal(r.h.count, 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(r.e[i].reqid, 700 + (uint64_t)i);
	assert_int_equal(r.e[0].d.grant.decision, GRANT_ALLOW);
	assert_int_equal(grant_verify(&r.e[0].d.grant, sizeof(g), PROC_VMM,
	                     fx->key, grant_now_ms(), 700, &g),
	    GRANT_OK);
	/* bound to its own request: not usable for another's */
	assert_int_not_equal(grant_verify(&r.e[0].d.grant, sizeof(g), PROC_VMM,
	                         fx->key, grant_now_ms(), 701, &g),
	    GRANT_OK);
	assert_int_equal(r.e[1].d.grant.decision, GRANT_DENY);
	assert_int_equal(r.e[1].d.reason, POLICY_R_REQUEST);
	assert_int_equal(r.e[2].d.grant.decision, GRANT_DENY);

	/* A count that does not match the length: dropped, no answer; the
	 * process still answers what follows. */
	q.h.count = 2;
	assert_int_equal(msg_send(fx->front, MSG_POLICY_DECIDE_BATCH, 0, 10, &q,
	                     sizeof(q), -1),
	    MSG_OK);
	q.h.count = 1;
	assert_int_equal(msg_send(fx->front, MSG_POLICY_DECIDE_BATCH, 0, 11, &q,
	                     sizeof(q.h) + sizeof(q.e[0]), -1),
	    MSG_OK);
	expect(fx->front, MSG_POLICY_DECISIONS, &r,
	    sizeof(r.h) + sizeof(r.e[0]), 11);
	assert_int_equal(r.e[0].d.grant.decision, GRANT_ALLOW);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_link_decisions, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_decisions_through_the_process, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_budget_waits_for_the_store, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_decide_batch, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}

/* The framework end to end, in one test process: a forked child runs the
 * policy process's real main loop (no privilege drop, no seccomp) on
 * socketpairs; the test plays parent and front. */
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
#include "lib/caps.h"
#include "lib/memfd.h"

struct fixture {
	pid_t pid;
	int parent; /* our end of the policy's parent link */
	int front; /* our end of the policy's front link */
	uint8_t key[GRANT_KEY_BYTES];
};

static int
setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct proc_ctx ctx;
	int pv[2], fv[2], p;

	if (fx == NULL || sodium_init() < 0)
		return -1;
	randombytes_buf(fx->key, sizeof(fx->key));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pv) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fv) == -1)
		return -1;
	if ((fx->pid = fork()) == 0) {
		close(pv[0]);
		close(fv[0]);
		memset(&ctx, 0, sizeof(ctx));
		for (p = 0; p < PROC_COUNT; p++)
			ctx.fd[p] = -1;
		ctx.self = PROC_POLICY;
		ctx.fd[PROC_PARENT] = pv[1];
		ctx.fd[PROC_FRONT] = fv[1];
		_exit(policy_main(&ctx));
	}
	close(pv[1]);
	close(fv[1]);
	fx->parent = pv[0];
	fx->front = fv[0];
	*state = fx;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *fx = *state;
	int st;

	close(fx->parent);
	close(fx->front);
	waitpid(fx->pid, &st, 0);
	free(fx);
	return 0;
}

/* Receive one message and check its type and size. */
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
	assert_int_equal(h.flags, MSG_F_REPLY);
	assert_int_equal(h.reqid, reqid);
	memcpy(payload, buf + sizeof(h), size);
}

static void
test_policy_process(void **state)
{
	static const char text[] = "role reader { allow artifact:read }\n";
	struct fixture *fx = *state;
	struct msg_grant_key k;
	struct msg_policy_load load;
	struct msg_policy_loaded loaded;
	struct msg_policy_decide q;
	struct msg_policy_decision d;
	struct msg_ping ping;
	struct proc_ctx vmm;
	struct grant g;
	struct msg m;
	uint8_t want[32];
	int mfd;

	/* The parent hands over the vmm link's key and the policy. */
	memset(&k, 0, sizeof(k));
	k.link = PROC_VMM;
	memcpy(k.key, fx->key, sizeof(k.key));
	assert_int_equal(
	    msg_send(fx->parent, MSG_CTL_GRANT_KEY, 0, 0, &k, sizeof(k), -1),
	    MSG_OK);
	mfd = memfd_make_sealed("t", text, sizeof(text) - 1);
	assert_true(mfd >= 0);
	memset(&load, 0, sizeof(load));
	load.size = sizeof(text) - 1;
	load.generation = 1;
	assert_int_equal(msg_send(fx->parent, MSG_POLICY_LOAD, 0, 9, &load,
	                     sizeof(load), mfd),
	    MSG_OK);
	close(mfd);
	expect(fx->parent, MSG_POLICY_LOADED, &loaded, sizeof(loaded), 9);
	assert_int_equal(loaded.status, 0);
	assert_int_equal(loaded.generation, 1);
	crypto_generichash(want, sizeof(want), (const uint8_t *)text,
	    sizeof(text) - 1, NULL, 0);
	assert_memory_equal(loaded.hash, want, sizeof(want));

	/* A size that does not match the memfd is refused, old policy kept. */
	mfd = memfd_make_sealed("t", "x", 1);
	load.size = 2;
	load.generation = 2;
	msg_send(fx->parent, MSG_POLICY_LOAD, 0, 10, &load, sizeof(load), mfd);
	close(mfd);
	expect(fx->parent, MSG_POLICY_LOADED, &loaded, sizeof(loaded), 10);
	assert_int_not_equal(loaded.status, 0);
	/* So is an unsealed memfd of the right size. */
	mfd = memfd_create("t", MFD_CLOEXEC);
	assert_int_equal(write(mfd, "x", 1), 1);
	load.size = 1;
	load.generation = 3;
	msg_send(fx->parent, MSG_POLICY_LOAD, 0, 11, &load, sizeof(load), mfd);
	close(mfd);
	expect(fx->parent, MSG_POLICY_LOADED, &loaded, sizeof(loaded), 11);
	assert_int_not_equal(loaded.status, 0);

	/* The front asks; the built-in hooks deny, and the grant says so,
	 * MACed for the vmm's link and this request. */
	memset(&q, 0, sizeof(q));
	q.cap = CAP_ARTIFACT_READ;
	q.link = PROC_VMM;
	q.token_caps = CAP_ALL;
	q.target_len = 5;
	memcpy(q.target, "sbx_1", 5);
	strlcpy(q.principal, "agent-a", sizeof(q.principal));
	assert_int_equal(
	    msg_send(fx->front, MSG_POLICY_DECIDE, 0, 77, &q, sizeof(q), -1),
	    MSG_OK);
	expect(fx->front, MSG_POLICY_DECISION, &d, sizeof(d), 77);
	assert_int_equal(grant_verify(&d.grant, sizeof(d.grant), PROC_VMM,
	                     fx->key, grant_now_ms(), 77, &g),
	    GRANT_ERR_DENIED);
	assert_string_equal(g.principal, "agent-a");
	assert_int_equal(g.cap, CAP_ARTIFACT_READ);

	/* The same through the receiver's helper, as the vmm would. */
	memset(&vmm, 0, sizeof(vmm));
	vmm.self = PROC_VMM;
	memset(&m, 0, sizeof(m));
	m.hdr.reqid = 77;
	assert_int_equal(
	    proc_grant_verify(&vmm, &m, &d.grant, sizeof(d.grant), &g),
	    GRANT_ERR_ARG);
	memcpy(vmm.grant_key[PROC_VMM], fx->key, sizeof(fx->key));
	vmm.grant_keys_held = PROC_BIT(PROC_VMM);
	assert_int_equal(
	    proc_grant_verify(&vmm, &m, &d.grant, sizeof(d.grant), &g),
	    GRANT_ERR_DENIED);
	m.hdr.reqid = 78;
	assert_int_equal(
	    proc_grant_verify(&vmm, &m, &d.grant, sizeof(d.grant), &g),
	    GRANT_ERR_REQID);
	vmm.self = PROC_STORE;
	memcpy(vmm.grant_key[PROC_STORE], fx->key, sizeof(fx->key));
	vmm.grant_keys_held = PROC_BIT(PROC_STORE);
	m.hdr.reqid = 77;
	assert_int_equal(
	    proc_grant_verify(&vmm, &m, &d.grant, sizeof(d.grant), &g),
	    GRANT_ERR_LINK);

	/* Malformed: the front may not load a policy, a short decide, a
	 * link without a key. All dropped; the process carries on. */
	msg_send(fx->front, MSG_POLICY_LOAD, 0, 1, &load, sizeof(load), -1);
	msg_send(fx->front, MSG_POLICY_DECIDE, 0, 2, &q, sizeof(q) - 1, -1);
	q.link = PROC_STORE;
	msg_send(fx->front, MSG_POLICY_DECIDE, 0, 3, &q, sizeof(q), -1);
	q.link = PROC_VMM;
	q.target_len = sizeof(q.target) + 1;
	msg_send(fx->front, MSG_POLICY_DECIDE, 0, 4, &q, sizeof(q), -1);

	memset(&ping, 0, sizeof(ping));
	ping.seq = 5;
	/* On the front link, so it is ordered after the bad messages. */
	msg_send(fx->front, MSG_CTL_PING, 0, 5, &ping, sizeof(ping), -1);
	expect(fx->front, MSG_CTL_PONG, &ping, sizeof(ping), 5);
	assert_int_equal(ping.seq, 5);
	assert_int_equal(ping.pid, (uint64_t)fx->pid);
	/* grant key, 3 loads, decide, ping; 2 refused loads + 4 bad. */
	assert_int_equal(ping.ndropped, 6);

	/* Shutdown: the loop ends and the process exits 0. */
	msg_send(fx->parent, MSG_CTL_SHUTDOWN, 0, 6, NULL, 0, -1);
}

/* proc_loop_every: a tick that stops the loop on its third run. */
static unsigned ticks;

static void
tick_thrice(void *arg)
{
	struct proc_ctx *ctx = arg;

	if (++ticks == 3)
		ctx->quit = 1;
}

static void
loop_ctx(struct proc_ctx *ctx, int parent_fd)
{
	memset(ctx, 0, sizeof(*ctx));
	for (int p = 0; p < PROC_COUNT; p++)
		ctx->fd[p] = -1;
	ctx->self = PROC_STORE;
	ctx->fd[PROC_PARENT] = parent_fd;
}

static void
test_loop_every(void **state)
{
	struct proc_ctx ctx;
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	/* Nothing to read: the timer alone runs, each time it is due. */
	loop_ctx(&ctx, sv[1]);
	ticks = 0;
	assert_int_equal(proc_loop_every(&ctx, 1, tick_thrice, &ctx), 0);
	assert_int_equal(ticks, 3);
	/* Links are served between ticks: the parent leaving ends the loop
	 * long before a tick is due. */
	ctx.quit = 0;
	ticks = 0;
	close(sv[0]);
	assert_int_equal(proc_loop_every(&ctx, 600000, tick_thrice, &ctx), 0);
	assert_int_equal(ticks, 0);
	if (ctx.fd[PROC_PARENT] != -1)
		close(ctx.fd[PROC_PARENT]);
}

/* Stopped with pings from the front still queued: the loop leaves at
 * the parent's shutdown, and proc_drain answers every one of them. */
static void
test_drain_on_shutdown(void **state)
{
	static const struct msg_handler common[] = { MSG_HANDLERS_COMMON };
	struct proc_ctx ctx;
	struct msg_ping ping;
	struct msg_hdr h;
	uint8_t reply[256];
	int pv[2], fv[2], pongs = 0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pv), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, fv), 0);
	loop_ctx(&ctx, pv[1]);
	ctx.fd[PROC_FRONT] = fv[1];
	ctx.handlers = common;
	ctx.nhandlers = nitems(common);
	memset(&ping, 0, sizeof(ping));
	for (int i = 0; i < 3; i++) {
		ping.seq = (uint64_t)i;
		assert_int_equal(msg_send(fv[0], MSG_CTL_PING, 0, (uint64_t)i,
		                     &ping, sizeof(ping), -1),
		    MSG_OK);
	}
	assert_int_equal(
	    msg_send(pv[0], MSG_CTL_SHUTDOWN, 0, 9, NULL, 0, -1), MSG_OK);
	assert_int_equal(proc_loop_every(&ctx, 600000, tick_thrice, &ctx), 0);
	proc_drain(&ctx);
	while (recv(fv[0], reply, sizeof(reply), MSG_DONTWAIT) >=
	    (ssize_t)sizeof(h)) {
		memcpy(&h, reply, sizeof(h));
		pongs += h.type == MSG_CTL_PONG;
	}
	assert_int_equal(pongs, 3);
	close(pv[0]);
	close(pv[1]);
	close(fv[0]);
	close(fv[1]);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_policy_process, setup, teardown),
		cmocka_unit_test(test_loop_every),
		cmocka_unit_test(test_drain_on_shutdown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

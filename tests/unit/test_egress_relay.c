/*
 * Unit test of the vmm's egress relay (host/vmm_egress.c) over real
 * socketpairs: whatever the vm process writes, the decision is asked for
 * the run's principal and token caps on the URL's exact "host:port", and
 * the request that goes to egress carries the run's principal and the
 * one rule the grant binds, never what the vm process claimed.
 */
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "host/egress/egress.h"
#include "host/grant.h"
#include "host/msg.h"
#include "host/proc.h"
#include "host/proc_egress.h"
#include "host/vmm_egress.h"
#include "host/vmm/vmm.h"
#include "host/vmm_msg.h"
#include "lib/caps.h"
#include "lib/memfd.h"

struct fx {
	struct proc_ctx ctx;
	int policy, egress; /* the test's ends */
	struct vmm_egress_run r;
	int vm; /* the vm process's end */
	uint8_t buf[MSG_BUFSZ];
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct msg_vmm_run_caps caps;
	int p[2], e[2];

	assert_non_null(f);
	for (int i = 0; i < PROC_COUNT; i++)
		f->ctx.fd[i] = -1;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, e), 0);
	f->ctx.self = PROC_VMM;
	f->ctx.fd[PROC_POLICY] = p[0];
	f->policy = p[1];
	f->ctx.fd[PROC_EGRESS] = e[0];
	f->egress = e[1];
	memset(&caps, 0, sizeof(caps));
	caps.token_caps = CAP_BIT(CAP_EGRESS) | CAP_BIT(CAP_EXEC);
	strlcpy(caps.request_id, "req-1", sizeof(caps.request_id));
	assert_int_equal(
	    vmm_egress_prepare(&f->r, "alice", "sbx-1", &caps, &f->vm), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	vmm_egress_close(&f->r);
	if (f->vm >= 0)
		close(f->vm);
	close(f->policy);
	close(f->egress);
	close(f->ctx.fd[PROC_POLICY]);
	close(f->ctx.fd[PROC_EGRESS]);
	free(f);
	return 0;
}

/* What a vm process would send: its own idea of principal and rule. */
static void
vm_sends(struct fx *f, const char *url)
{
	struct egress_request req;
	struct egress_rule rule;
	struct msg_egress_rep q;
	void *wire;
	size_t len;

	memset(&rule, 0, sizeof(rule));
	strlcpy(rule.host, "*.test", sizeof(rule.host));
	rule.allow_http = rule.allow_private = 1;
	memset(&req, 0, sizeof(req));
	req.principal = "mallory";
	req.method = "GET";
	req.url = url;
	req.url_len = strlen(url);
	req.rules = &rule;
	req.nrules = 1;
	egress_limits_default(&req.limits);
	assert_int_equal(egress_wire_encode_fetch(&req, &wire, &len), 0);
	assert_int_equal(ftruncate(f->r.shm, (off_t)len), 0);
	assert_int_equal(pwrite(f->r.shm, wire, len, 0), (ssize_t)len);
	free(wire);
	q.len = len;
	assert_int_equal(
	    msg_send(f->vm, MSG_VMM_FETCH, 0, 1, &q, sizeof(q), -1), MSG_OK);
}

static void
test_relay(void **state)
{
	struct fx *f = *state;
	struct msg_policy_decide dq;
	struct msg_policy_decision dd;
	struct msg_egress_req eq;
	struct msg_egress_rep rep;
	struct egress_decoded dec;
	struct egress_decision d;
	struct msg_hdr h;
	struct msg m;
	void *in, *wire;
	size_t n, wlen;
	int fd;

	vm_sends(f, "https://a.test:8443/x");
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	/* The decision asked: the run's principal and caps, exact target. */
	assert_int_equal(msg_recv(f->policy, f->buf, MSG_BUFSZ, &n, &fd), 0);
	assert_int_equal(n, sizeof(h) + sizeof(dq));
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&dq, f->buf + sizeof(h), sizeof(dq));
	assert_int_equal(h.type, MSG_POLICY_DECIDE);
	assert_int_equal(dq.cap, CAP_EGRESS);
	assert_int_equal(dq.link, PROC_EGRESS);
	assert_int_equal(
	    dq.token_caps, CAP_BIT(CAP_EGRESS) | CAP_BIT(CAP_EXEC));
	assert_string_equal(dq.principal, "alice");
	assert_int_equal(dq.target_len, strlen("a.test:8443"));
	assert_memory_equal(dq.target, "a.test:8443", dq.target_len);

	/* The policy allows, with private bound into the target. */
	memset(&dd, 0, sizeof(dd));
	dd.grant.decision = GRANT_ALLOW;
	dd.grant.cap = CAP_EGRESS;
	grant_target_hash("a.test:8443 private", 19, dd.grant.target);
	memset(&m, 0, sizeof(m));
	m.hdr.type = MSG_POLICY_DECISION;
	m.hdr.reqid = h.reqid;
	m.data = (const uint8_t *)&dd;
	m.fd = MSG_NO_FD;
	assert_ptr_equal(
	    vmm_egress_find(&(struct vmm_egress_run *){ &f->r }, 1, h.reqid),
	    &f->r);
	assert_int_equal(vmm_egress_decision(&f->ctx, &f->r, &m), 0);

	/* What egress gets: the grant, alice, the one granted rule. */
	assert_int_equal(msg_recv(f->egress, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&eq, f->buf + sizeof(h), sizeof(eq));
	assert_int_equal(h.type, MSG_EGRESS_FETCH);
	assert_int_equal(h.reqid, m.hdr.reqid);
	assert_memory_equal(&eq.grant, &dd.grant, sizeof(dd.grant));
	assert_string_equal(eq.sandbox, "sbx-1");
	assert_string_equal(eq.request_id, "req-1");
	assert_true(fd >= 0);
	in = memfd_read(fd, eq.len, EGRESS_REPLY_MAX);
	close(fd);
	assert_non_null(in);
	assert_int_equal(
	    egress_wire_decode(MSG_EGRESS_FETCH, in, eq.len, &dec), 0);
	assert_string_equal(dec.req.principal, "alice");
	assert_int_equal(dec.req.nrules, 1);
	assert_string_equal(dec.req.rules[0].host, "a.test");
	assert_int_equal(dec.req.rules[0].port, 8443);
	assert_int_equal(dec.req.rules[0].allow_http, 0);
	assert_int_equal(dec.req.rules[0].allow_private, 1);
	egress_wire_decoded_free(&dec);
	free(in);

	/* Egress answers; the vm process gets it. */
	memset(&d, 0, sizeof(d));
	d.allowed = 1;
	d.status = 200;
	d.rule = 0;
	assert_int_equal(
	    egress_wire_encode_reply(&d, 1, NULL, &wire, &wlen), 0);
	rep.len = wlen;
	m.hdr.type = MSG_EGRESS_FETCH_REPLY;
	m.data = (const uint8_t *)&rep;
	m.fd = memfd_make_sealed("t", wire, wlen);
	free(wire);
	assert_int_equal(vmm_egress_reply(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	assert_int_equal(h.type, MSG_VMM_FETCH_REPLY);
	assert_true(fd >= 0);
	close(fd);
	assert_null(vmm_egress_find(
	    &(struct vmm_egress_run *){ &f->r }, 1, m.hdr.reqid));
}

/* A malformed URL is answered by the vmm itself; nothing is asked. */
static void
test_relay_bad_url(void **state)
{
	struct fx *f = *state;
	struct msg_hdr h;
	size_t n;
	int fd;

	vm_sends(f, "https://a.test:8443/x");
	/* Corrupt the shared buffer after the message: the vmm copies it
	 * once and only that copy matters, so this is a decode failure. */
	assert_int_equal(pwrite(f->r.shm, "\xff\xff\xff\xff", 4, 0), 4);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	assert_int_equal(h.type, MSG_VMM_FETCH_REPLY);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(f->r.stage, 0);
}

/* A vm process that sends a descriptor or a wrong size loses its relay. */
static void
test_relay_misbehaving_vm(void **state)
{
	struct fx *f = *state;
	struct msg_egress_rep q = { 8 };

	assert_int_equal(
	    msg_send(f->vm, MSG_VMM_FETCH, 0, 1, &q, sizeof(q), 0), MSG_OK);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), -1);
	assert_int_equal(f->r.fd, -1);
}

/* The policy's question for a name request: returns the reqid. */
static uint64_t
expect_decide(struct fx *f, const char *target)
{
	struct msg_policy_decide dq;
	struct msg_hdr h;
	size_t n;
	int fd;

	assert_int_equal(msg_recv(f->policy, f->buf, MSG_BUFSZ, &n, &fd), 0);
	assert_int_equal(n, sizeof(h) + sizeof(dq));
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&dq, f->buf + sizeof(h), sizeof(dq));
	assert_int_equal(h.type, MSG_POLICY_DECIDE);
	assert_int_equal(dq.cap, CAP_EGRESS);
	assert_int_equal(dq.link, PROC_EGRESS);
	assert_string_equal(dq.principal, "alice");
	assert_int_equal(dq.target_len, strlen(target));
	assert_memory_equal(dq.target, target, dq.target_len);
	return h.reqid;
}

static void
vm_asks(struct fx *f, uint32_t op, const char *name, uint16_t port)
{
	struct msg_vmm_net q;

	memset(&q, 0, sizeof(q));
	q.op = op;
	q.port = port;
	strlcpy(q.name, name, sizeof(q.name));
	assert_int_equal(
	    msg_send(f->vm, MSG_VMM_NET, 0, 1, &q, sizeof(q), -1), MSG_OK);
}

/* A guest's name query and connect: the policy is asked "name:*" and
 * "name:port" (the name canonical, lower case) for the run's principal;
 * egress gets the grant with the run's principal, sandbox and request,
 * and the private flag the grant binds; its socket reaches the vm. */
static void
test_relay_names(void **state)
{
	struct fx *f = *state;
	struct msg_policy_decision dd;
	struct msg_egress_name eq;
	struct msg_egress_name_reply er;
	struct msg_vmm_net_reply vr;
	struct msg_hdr h;
	struct msg m;
	uint64_t reqid;
	size_t n;
	int fd, sv[2];

	vm_asks(f, VMM_NET_RESOLVE, "Allowed.TEST.", 0);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	reqid = expect_decide(f, "allowed.test:*");
	memset(&dd, 0, sizeof(dd));
	dd.grant.decision = GRANT_DENY;
	dd.grant.cap = CAP_EGRESS;
	dd.reason = 7;
	memset(&m, 0, sizeof(m));
	m.hdr.type = MSG_POLICY_DECISION;
	m.hdr.reqid = reqid;
	m.data = (const uint8_t *)&dd;
	m.fd = MSG_NO_FD;
	assert_int_equal(vmm_egress_decision(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->egress, f->buf, MSG_BUFSZ, &n, &fd), 0);
	assert_int_equal(n, sizeof(h) + sizeof(eq));
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&eq, f->buf + sizeof(h), sizeof(eq));
	assert_int_equal(h.type, MSG_EGRESS_NAME);
	assert_int_equal(h.reqid, reqid);
	assert_int_equal(fd, MSG_NO_FD);
	assert_int_equal(eq.op, VMM_NET_RESOLVE);
	assert_int_equal(eq.port, 0);
	assert_int_equal(eq.policy_reason, 7);
	assert_string_equal(eq.name, "allowed.test");
	assert_string_equal(eq.principal, "alice");
	assert_string_equal(eq.sandbox, "sbx-1");
	assert_string_equal(eq.request_id, "req-1");
	/* Egress refuses; the vm hears it, with no socket. */
	er.error = 13;
	er.refused = 1;
	m.hdr.type = MSG_EGRESS_NAME_REPLY;
	m.data = (const uint8_t *)&er;
	assert_int_equal(vmm_egress_name_reply(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&vr, f->buf + sizeof(h), sizeof(vr));
	assert_int_equal(h.type, MSG_VMM_NET_REPLY);
	assert_int_equal(vr.error, 13);
	assert_int_equal(vr.refused, 1);
	assert_int_equal(fd, MSG_NO_FD);
	assert_int_equal(f->r.stage, 0);

	/* A connect, allowed with private bound: the socket goes through. */
	vm_asks(f, VMM_NET_CONNECT, "allowed.test", 8080);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	reqid = expect_decide(f, "allowed.test:8080");
	memset(&dd, 0, sizeof(dd));
	dd.grant.decision = GRANT_ALLOW;
	dd.grant.cap = CAP_EGRESS;
	grant_target_hash("allowed.test:8080 private", 25, dd.grant.target);
	m.hdr.type = MSG_POLICY_DECISION;
	m.hdr.reqid = reqid;
	m.data = (const uint8_t *)&dd;
	m.fd = MSG_NO_FD;
	assert_int_equal(vmm_egress_decision(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->egress, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&eq, f->buf + sizeof(h), sizeof(eq));
	assert_int_equal(eq.op, VMM_NET_CONNECT);
	assert_int_equal(eq.port, 8080);
	assert_int_equal(eq.allow_private, 1);
	assert_int_equal(eq.allow_http, 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	er.error = 0;
	er.refused = 0;
	m.hdr.type = MSG_EGRESS_NAME_SOCKET;
	m.data = (const uint8_t *)&er;
	m.fd = sv[0];
	assert_int_equal(vmm_egress_name_reply(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&vr, f->buf + sizeof(h), sizeof(vr));
	assert_int_equal(h.type, MSG_VMM_NET_REPLY);
	assert_int_equal(vr.error, 0);
	assert_true(fd >= 0);
	assert_int_equal(write(sv[1], "x", 1), 1);
	close(fd);
	close(sv[1]);

	/* A connect reply with no socket, or an errno out of range, is an
	 * EACCES to the vm, never passed on as it came. */
	vm_asks(f, VMM_NET_CONNECT, "allowed.test", 8080);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	reqid = expect_decide(f, "allowed.test:8080");
	m.hdr.type = MSG_POLICY_DECISION;
	m.hdr.reqid = reqid;
	m.data = (const uint8_t *)&dd;
	m.fd = MSG_NO_FD;
	assert_int_equal(vmm_egress_decision(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->egress, f->buf, MSG_BUFSZ, &n, &fd), 0);
	er.error = 0;
	m.hdr.type = MSG_EGRESS_NAME_REPLY;
	m.data = (const uint8_t *)&er;
	assert_int_equal(vmm_egress_name_reply(&f->ctx, &f->r, &m), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&vr, f->buf + sizeof(h), sizeof(vr));
	assert_int_equal(vr.error, 13);
	assert_int_equal(fd, MSG_NO_FD);
}

/* A name that is no host name is refused by the vmm, nothing asked; a
 * malformed request (a bad op, no NUL) costs the vm its relay. */
static void
test_relay_names_bad(void **state)
{
	struct fx *f = *state;
	struct msg_vmm_net_reply vr;
	struct msg_hdr h;
	size_t n;
	int fd;

	vm_asks(f, VMM_NET_RESOLVE, "a..test", 0);
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&h, f->buf, sizeof(h));
	memcpy(&vr, f->buf + sizeof(h), sizeof(vr));
	assert_int_equal(h.type, MSG_VMM_NET_REPLY);
	assert_int_equal(vr.error, 13);
	assert_int_equal(f->r.stage, 0);
	vm_asks(f, VMM_NET_RESOLVE, "10.0.0.5", 0); /* no literal */
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), 0);
	assert_int_equal(msg_recv(f->vm, f->buf, MSG_BUFSZ, &n, &fd), 0);
	memcpy(&vr, f->buf + sizeof(h), sizeof(vr));
	assert_int_equal(vr.error, 13);
	vm_asks(f, VMM_NET_RESOLVE, "a.test", 53); /* a query has no port */
	assert_int_equal(vmm_egress_event(&f->ctx, &f->r), -1);
	assert_int_equal(f->r.fd, -1);
}

/* The vm process's side: a reply to another request (one given up on)
 * is dropped; the one with this request's id is taken. */
static void
test_child_drops_stale(void **state)
{
	struct fx *f = *state;
	struct vmm_config cfg;
	struct msg_vmm_net_reply rep = { 0, 0 };
	struct msg_hdr h;
	pid_t pid;
	size_t n;
	int fd = -1, refused = -1, st;

	memset(&cfg, 0, sizeof(cfg));
	vmm_egress_child(&f->r, f->vm, &cfg);
	assert_non_null(cfg.egress_net);
	if ((pid = fork()) == 0) {
		uint8_t b[512];
		int rfd;

		/* The vmm's part: one request in, a stale reply, then its
		 * own with an error the caller must see. */
		if (msg_recv(f->r.fd, b, sizeof(b), &n, &rfd) != MSG_OK)
			_exit(1);
		memcpy(&h, b, sizeof(h));
		rep.error = 0;
		if (msg_send(f->r.fd, MSG_VMM_NET_REPLY, MSG_F_REPLY,
		        h.reqid + 1, &rep, sizeof(rep), -1) != MSG_OK)
			_exit(1);
		rep.error = 111;
		rep.refused = 1;
		_exit(msg_send(f->r.fd, MSG_VMM_NET_REPLY, MSG_F_REPLY, h.reqid,
		          &rep, sizeof(rep), -1) == MSG_OK
		        ? 0
		        : 1);
	}
	assert_true(pid > 0);
	assert_int_equal(
	    cfg.egress_net(NULL, VMM_NET_CONNECT, "a.test", 80, &fd, &refused),
	    -111);
	assert_int_equal(refused, 1);
	assert_int_equal(fd, -1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	vmm_egress_child_done(&(struct vmm_result){ 0 });
	f->vm = -1; /* closed by vmm_egress_child_done */
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_relay, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_relay_bad_url, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_relay_misbehaving_vm, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_relay_names, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_relay_names_bad, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_child_drops_stale, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

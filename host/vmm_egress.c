/*
 * The vmm's egress relay (host/vmm_egress.h): the vm process's end and
 * the vmm's end of a run's socketpair.
 */
#include <sys/mman.h>
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "host/egress/inject.h"
#include "host/proc_egress.h"
#include "host/store/store_wire.h"
#include "host/vmm/vmm.h"
#include "host/vmm_egress.h"
#include "host/vmm_msg.h"
#include "lib/caps.h"
#include "lib/clock.h"
#include "lib/log.h"
#include "lib/memfd.h"

/* Request ids of the vmm's own egress requests: their own range, so a
 * decision can never be mistaken for one the front asked for. */
static uint64_t next_reqid = 1ull << 62;

int
vmm_egress_prepare(struct vmm_egress_run *r, const char *principal,
    const char *sandbox, const struct msg_vmm_run_caps *caps, int *child_fd)
{
	int sv[2];

	memset(r, 0, sizeof(*r));
	r->fd = r->shm = -1;
	r->direct_vm = -1;
	*child_fd = -1;
	if ((r->shm = memfd_create("keep-fetch", MFD_CLOEXEC)) == -1)
		return -1;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1) {
		close(r->shm);
		r->shm = -1;
		return -1;
	}
	r->fd = sv[0];
	*child_fd = sv[1];
	strlcpy(r->principal, principal, sizeof(r->principal));
	strlcpy(r->sandbox, sandbox, sizeof(r->sandbox));
	if (caps != NULL) {
		r->token_caps = caps->token_caps;
		strlcpy(r->request_id, caps->request_id, sizeof(r->request_id));
	}
	return 0;
}

void
vmm_egress_direct(struct proc_ctx *ctx, struct vmm_egress_run *r)
{
	struct msg_egress_run q;
	uint64_t id;
	int sv[2];

	if (r->fd < 0 || r->direct_vm >= 0 || ctx->fd[PROC_EGRESS] < 0 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return;
	/* Random, so no id of a run gone (or of a vmm before a restart)
	 * can name this one at egress. */
	do
		randombytes_buf(&id, sizeof(id));
	while (id == 0);
	memset(&q, 0, sizeof(q));
	q.run = id;
	strlcpy(q.principal, r->principal, sizeof(q.principal));
	strlcpy(q.sandbox, r->sandbox, sizeof(q.sandbox));
	strlcpy(q.request_id, r->request_id, sizeof(q.request_id));
	if (msg_send(ctx->fd[PROC_EGRESS], MSG_EGRESS_RUN, 0, 0, &q, sizeof(q),
	        sv[0]) != MSG_OK) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	close(sv[0]);
	r->direct_vm = sv[1];
	r->run_id = id;
}

void
vmm_egress_direct_handed(struct vmm_egress_run *r)
{
	if (r->direct_vm >= 0)
		close(r->direct_vm);
	r->direct_vm = -1;
}

/* The vm side is gone: its link closed, but who the run is (principal,
 * sandbox, request id) is kept for the audit entries of its end
 * (vmm_egress_audit_bytes), until vmm_egress_close. */
static void
link_close(struct vmm_egress_run *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->shm >= 0)
		close(r->shm);
	free(r->req);
	r->req = NULL;
	vmm_egress_reuse_drop(r);
	vmm_egress_direct_handed(r);
	r->fd = r->shm = -1;
	r->stage = 0;
	r->reqid = 0;
	r->op = 0;
}

void
vmm_egress_close(struct vmm_egress_run *r)
{
	if (r->fd >= 0)
		close(r->fd);
	if (r->shm >= 0)
		close(r->shm);
	free(r->req);
	vmm_egress_reuse_drop(r);
	vmm_egress_direct_handed(r);
	memset(r, 0, sizeof(*r));
	r->fd = r->shm = -1;
	r->direct_vm = -1;
}

/* ---- decisions reused (vmm_egress.h, struct vmm_egress_reuse) --------- */

void
vmm_egress_reuse_drop(struct vmm_egress_run *r)
{
	if (r->reuse != NULL)
		sodium_memzero(r->reuse,
		    VMM_EGRESS_REUSE_MAX * sizeof(struct vmm_egress_reuse));
	free(r->reuse);
	r->reuse = NULL;
	r->reuse_next = 0;
}

/* The decision r may reuse for op on host:port, or NULL. */
static const struct msg_policy_decision *
reuse_find(
    struct vmm_egress_run *r, uint32_t op, const char *host, uint16_t port)
{
	struct vmm_egress_reuse *e;
	uint64_t now;
	unsigned i;

	if (r->reuse == NULL)
		return NULL;
	now = mono_ms();
	for (i = 0; i < VMM_EGRESS_REUSE_MAX; i++) {
		e = &r->reuse[i];
		if (e->until_ms == 0 || e->op != op || e->port != port ||
		    strcmp(e->host, host) != 0)
			continue;
		if (now >= e->until_ms ||
		    grant_now_ms() + VMM_EGRESS_REUSE_MARGIN_MS >=
		        e->d.grant.expires) {
			e->until_ms = 0; /* spent: the policy is asked */
			return NULL;
		}
		return &e->d;
	}
	return NULL;
}

/* Keep d, the policy's decision on r's request in flight, when the
 * policy said it may be reused (an allowed connect: reuse_ms). */
static void
reuse_keep(struct vmm_egress_run *r, const struct msg_policy_decision *d)
{
	struct vmm_egress_reuse *e;
	uint64_t left, real = grant_now_ms(), ms = d->reuse_ms;
	unsigned i;

	if (ms == 0 || r->op == VMM_NET_RESOLVE ||
	    d->grant.decision != GRANT_ALLOW ||
	    d->grant.expires <= real + VMM_EGRESS_REUSE_MARGIN_MS)
		return;
	left = d->grant.expires - real - VMM_EGRESS_REUSE_MARGIN_MS;
	if (ms > left)
		ms = left;
	if (r->reuse == NULL &&
	    (r->reuse = calloc(VMM_EGRESS_REUSE_MAX, sizeof(*r->reuse))) ==
	        NULL)
		return; /* asked each time, as before */
	/* The same destination's older entry first, else the next slot. */
	for (i = 0; i < VMM_EGRESS_REUSE_MAX; i++)
		if (r->reuse[i].until_ms != 0 && r->reuse[i].op == r->op &&
		    r->reuse[i].port == r->port &&
		    strcmp(r->reuse[i].host, r->host) == 0)
			break;
	if (i == VMM_EGRESS_REUSE_MAX) {
		i = r->reuse_next;
		r->reuse_next = (r->reuse_next + 1) % VMM_EGRESS_REUSE_MAX;
	}
	e = &r->reuse[i];
	e->op = r->op;
	e->port = r->port;
	strlcpy(e->host, r->host, sizeof(e->host));
	e->d = *d;
	e->until_ms = mono_ms() + ms;
}

/* ---- the vm process's side -------------------------------------------- */

/* The vm process's descriptors (one run per process). */
static struct {
	int set;
	int sock, shm;
	int direct; /* the run's direct link to egress, or -1 */
	uint64_t net_spin_us; /* NET_SPIN_US, or 0 with one CPU */
} child;

static int
put_all(int fd, const void *p, size_t len)
{
	const uint8_t *b = p;
	off_t off = 0;
	ssize_t n;

	while ((size_t)off < len) {
		n = pwrite(fd, b + off, len - (size_t)off, off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += n;
	}
	return 0;
}

/* This request's id, unique across the run's processes (a fork has a
 * pid of its own): the vmm echoes it, and a reply to a request given up
 * on (a wait a signal cut short, or a process that died waiting) is
 * known for what it is and dropped. */
static uint64_t
request_id(void)
{
	static uint32_t seq;

	return ((uint64_t)(uint32_t)getpid() << 32) | ++seq;
}

/*
 * How long the vm process looks for a name's answer before it sleeps
 * for it (net_locked), in microseconds. A connect whose decision the
 * run reuses is answered in 100-150 us on a quiet box (traced), much
 * of it the wakes of the processes on its way (the vmm's, egress's,
 * the vmm's again, each 15-40 us on a virtual machine whose idle vCPU
 * must be woken by an IPI); while this process looks, its CPU is not idle, so
 * those wakes find the process woken a place on the CPU that is
 * running (a hand-off, not an IPI), and the answer finds this process
 * awake. Past the bound (a policy decision, a slow server) it sleeps
 * as before: at most this much CPU a request.
 */
#define NET_SPIN_US 250

/* Whether the link has a message within spin_us: looked at without
 * sleeping, yielding the CPU between looks to whatever else is ready
 * on it (on a busy box, likely the process the answer comes from). */
static int
reply_soon(int fd, uint64_t spin_us)
{
	struct pollfd pfd;
	uint64_t until;

	if (spin_us == 0)
		return 0;
	until = mono_us() + spin_us;
	do {
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		switch (poll(&pfd, 1, 0)) {
		case 0:
			break;
		case 1:
			return 1;
		default:
			return 0; /* the sleeping poll tells */
		}
		sched_yield();
	} while (mono_us() < until);
	return 0;
}

/* The reply to request id into buf: MSG_OK (with *n and *rfd), or -1
 * (errno EINTR when a signal cut the wait short). The first spin_us
 * microseconds of the wait are spent looking (reply_soon), not asleep. */
static int
reply_wait(int fd, uint64_t id, uint8_t *buf, size_t cap, size_t *n, int *rfd,
    uint64_t spin_us)
{
	struct pollfd pfd;
	struct msg_hdr h;

	for (;;) {
		*rfd = MSG_NO_FD;
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (!reply_soon(fd, spin_us) && poll(&pfd, 1, -1) != 1)
			return -1;
		spin_us = 0; /* one spin a wait */
		if (msg_recv(fd, buf, cap, n, rfd) != MSG_OK) {
			errno = EIO;
			return -1;
		}
		memcpy(&h, buf, *n < sizeof(h) ? *n : sizeof(h));
		if (*n >= sizeof(h) && h.reqid == id)
			return MSG_OK;
		if (*rfd != MSG_NO_FD)
			close(*rfd);
	}
}

static int
fetch_locked(
    void *arg, const void *req, size_t len, void **reply, size_t *reply_len)
{
	struct msg_egress_rep q, r;
	struct msg_hdr h;
	uint8_t *buf;
	uint64_t id;
	size_t n;
	int rfd = MSG_NO_FD, rc = -1;

	(void)arg;
	*reply = NULL;
	*reply_len = 0;
	if (ftruncate(child.shm, 0) == -1 ||
	    ftruncate(child.shm, (off_t)len) == -1 ||
	    put_all(child.shm, req, len) != 0)
		return -1;
	q.len = len;
	id = request_id();
	if (msg_send(child.sock, MSG_VMM_FETCH, 0, id, &q, sizeof(q), -1) !=
	    MSG_OK)
		return -1;
	if ((buf = malloc(MSG_BUFSZ)) == NULL)
		return -1;
	/* The vmm answers this one request. The run's time limit (SIGALRM,
	 * no SA_RESTART) interrupts the wait: the call fails and the vCPU
	 * loop then stops the guest as timed out. */
	if (reply_wait(child.sock, id, buf, MSG_BUFSZ, &n, &rfd, 0) != MSG_OK ||
	    n != sizeof(h) + sizeof(r))
		goto out;
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	if (h.type != MSG_VMM_FETCH_REPLY || h.len != sizeof(r) ||
	    rfd == MSG_NO_FD || r.len > EGRESS_REPLY_MAX ||
	    (*reply = memfd_read(rfd, r.len, EGRESS_REPLY_MAX)) == NULL)
		goto out;
	*reply_len = r.len;
	rc = 0;
out:
	if (rfd != MSG_NO_FD)
		close(rfd);
	free(buf);
	return rc;
}

/* A name's query or connection (vmm_config.egress_net): 0 (and *fd for
 * a connect) or -errno; *refused 1 when the policy or egress refused. */
static int
net_locked(
    void *arg, int op, const char *name, uint16_t port, int *fd, int *refused)
{
	struct msg_vmm_net q;
	struct msg_vmm_net_reply r;
	struct msg_hdr h;
	uint8_t buf[sizeof(h) + sizeof(r) + 16];
	uint64_t id;
	size_t n;
	int rfd = MSG_NO_FD;

	(void)arg;
	*fd = -1;
	*refused = 0;
	memset(&q, 0, sizeof(q));
	q.op = (uint32_t)op;
	q.port = port;
	if (strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		return -EINVAL;
	id = request_id();
	if (msg_send(child.sock, MSG_VMM_NET, 0, id, &q, sizeof(q), -1) !=
	    MSG_OK)
		return -EACCES;
	/*
	 * Only the run's time limit cuts the wait short (the reply, when it
	 * comes, is then dropped). Any other signal, a guest's own or a
	 * kick between the run's processes, waits for the answer, which
	 * egress's connect timeout bounds: a connect answered EINTR here
	 * would leave a socket that never connects, which CPython, polling
	 * it as Linux's interrupted connect asks, takes for connected.
	 */
	while (reply_wait(child.sock, id, buf, sizeof(buf), &n, &rfd,
	           child.net_spin_us) != MSG_OK)
		if (errno != EINTR || vmm_run_timed_out())
			return errno == EINTR ? -EINTR : -EACCES;
	if (n != sizeof(h) + sizeof(r)) {
		if (rfd != MSG_NO_FD)
			close(rfd);
		return -EACCES;
	}
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	if (h.type != MSG_VMM_NET_REPLY || h.len != sizeof(r) || r.error < 0 ||
	    (r.error == 0 && op != VMM_NET_RESOLVE && rfd == MSG_NO_FD)) {
		if (rfd != MSG_NO_FD)
			close(rfd);
		return -EACCES;
	}
	*refused = r.refused != 0;
	if (r.error != 0 || op == VMM_NET_RESOLVE) {
		if (rfd != MSG_NO_FD)
			close(rfd);
		return -r.error;
	}
	*fd = rfd;
	return 0;
}

/* The direct link is given up on: every connect asks the vmm. */
static void
direct_close(void)
{
	if (child.direct >= 0)
		close(child.direct);
	child.direct = -1;
}

/*
 * A connect asked on the run's direct link (host/proc_egress.h,
 * MSG_EGRESS_DIRECT): 0 (and *fd) or -errno as net_locked answers, or 1
 * when egress keeps no decision for it (or the link failed: it is then
 * closed), and the vmm is to be asked.
 */
static int
direct_locked(int op, const char *name, uint16_t port, int *fd, int *refused)
{
	struct msg_egress_direct q;
	struct msg_egress_direct_reply r;
	struct msg_hdr h;
	uint8_t buf[sizeof(h) + sizeof(r) + 16];
	uint64_t id;
	size_t n;
	int rfd = MSG_NO_FD;

	memset(&q, 0, sizeof(q));
	q.op = (uint32_t)op;
	q.port = port;
	if (strlcpy(q.name, name, sizeof(q.name)) >= sizeof(q.name))
		return 1;
	id = request_id();
	if (msg_send(child.direct, MSG_EGRESS_DIRECT, 0, id, &q, sizeof(q),
	        -1) != MSG_OK) {
		direct_close();
		return 1;
	}
	/* As net_locked's wait: only the run's time limit cuts it short. */
	while (reply_wait(child.direct, id, buf, sizeof(buf), &n, &rfd,
	           child.net_spin_us) != MSG_OK) {
		if (errno != EINTR) {
			direct_close();
			return 1;
		}
		if (vmm_run_timed_out()) {
			/* Its answer would come on the link later. */
			direct_close();
			return -EINTR;
		}
	}
	memcpy(&h, buf, sizeof(h));
	memcpy(&r, buf + sizeof(h), sizeof(r));
	if (n != sizeof(h) + sizeof(r) || h.type != MSG_EGRESS_DIRECT_REPLY ||
	    h.len != sizeof(r) || r.error < 0 || r.error > 4095 || r.miss > 1 ||
	    (r.miss && rfd != MSG_NO_FD) ||
	    (!r.miss && r.error == 0 && rfd == MSG_NO_FD) ||
	    (r.error != 0 && rfd != MSG_NO_FD)) {
		if (rfd != MSG_NO_FD)
			close(rfd);
		direct_close();
		return 1;
	}
	if (r.miss)
		return 1;
	*refused = r.refused != 0;
	if (r.error != 0)
		return -r.error;
	*fd = rfd;
	return 0;
}

/*
 * The run's processes (a guest's fork is the vm process's) share the
 * socketpair and the request buffer, and the vmm serves one request at
 * a time: a request and its reply are one process's alone while it
 * holds a POSIX lock on the buffer. Such a lock is the process's (not
 * inherited, unlike flock's), and goes when it dies. A wait the run's
 * time limit cuts short fails the call.
 */
static int
relay_lock(int type)
{
	struct flock l;

	memset(&l, 0, sizeof(l));
	l.l_type = (short)type;
	l.l_whence = SEEK_SET;
	return fcntl(child.shm, F_SETLKW, &l);
}

static int
child_fetch(
    void *arg, const void *req, size_t len, void **reply, size_t *reply_len)
{
	int rc;

	*reply = NULL;
	*reply_len = 0;
	if (relay_lock(F_WRLCK) == -1)
		return -1;
	rc = fetch_locked(arg, req, len, reply, reply_len);
	relay_lock(F_UNLCK);
	return rc;
}

static int
child_net(
    void *arg, int op, const char *name, uint16_t port, int *fd, int *refused)
{
	int rc;

	*fd = -1;
	*refused = 0;
	/* The lock's wait as the answer's (net_locked). */
	while (relay_lock(F_WRLCK) == -1)
		if (errno != EINTR || vmm_run_timed_out())
			return errno == EINTR ? -EINTR : -EACCES;
	rc = net_locked(arg, op, name, port, fd, refused);
	relay_lock(F_UNLCK);
	return rc;
}

/* A connect asked on the direct link first (vmm_config.egress_direct),
 * under the relay's lock: 1 when the vmm is to be asked. */
static int
child_direct(
    void *arg, int op, const char *name, uint16_t port, int *fd, int *refused)
{
	int rc;

	(void)arg;
	*fd = -1;
	*refused = 0;
	if (child.direct < 0 || op == VMM_NET_RESOLVE)
		return 1;
	while (relay_lock(F_WRLCK) == -1)
		if (errno != EINTR || vmm_run_timed_out())
			return errno == EINTR ? -EINTR : -EACCES;
	rc = direct_locked(op, name, port, fd, refused);
	relay_lock(F_UNLCK);
	return rc;
}

/* A connection the vm process shut itself, told to the vmm for the
 * audit log (vmm_config.egress_report). Nothing is answered: the call
 * that was refused does not wait for the log. */
static void
child_report(
    void *arg, int why, const char *name, uint16_t port, const char *sni)
{
	struct msg_vmm_net_report q;

	(void)arg;
	memset(&q, 0, sizeof(q));
	q.why = (uint32_t)why;
	q.port = port;
	strlcpy(q.name, name, sizeof(q.name));
	strlcpy(q.sni, sni, sizeof(q.sni));
	if (msg_send(child.sock, MSG_VMM_NET_REPORT, 0, request_id(), &q,
	        sizeof(q), -1) != MSG_OK)
		log_warnx("%s: not sent", __func__);
}

void
vmm_egress_child(
    const struct vmm_egress_run *r, int child_fd, struct vmm_config *cfg)
{
	if (child_fd < 0 || r->shm < 0)
		return;
	child.set = 1;
	child.sock = child_fd;
	child.shm = r->shm;
	child.direct = r->direct_vm;
	/* With one CPU a look only holds up the processes it waits for. */
	child.net_spin_us = vm_cpus() > 1 ? NET_SPIN_US : 0;
	cfg->fetch = child_fetch;
	cfg->egress_net = child_net;
	cfg->egress_direct = child_direct;
	cfg->egress_report = child_report;
	cfg->fetch_arg = NULL;
}

void
vmm_egress_child_done(struct vmm_result *res)
{
	__atomic_store_n(&res->done, 1, __ATOMIC_RELEASE);
	if (child.set) {
		close(child.sock);
		direct_close();
		child.set = 0;
	}
}

/* ---- the vmm's side ------------------------------------------------- */

/* Audit entries the vmm writes itself get request ids of their own
 * range (the store's replies to them are dropped). */
static uint64_t audit_seq = 3ull << 61;

/* One audit entry for run r: what the vm process saw and did on its
 * own (no grant is involved: a refusal of bytes the policy's grant had
 * let through, or a count). */
static void
audit_entry(struct proc_ctx *ctx, const struct vmm_egress_run *r,
    const char *action, const char *target, int allow, const char *rule,
    const char *detail)
{
	struct store_audit e;
	char rid[48];
	void *msg = NULL;
	size_t len;

	log_info("%s: %s in %s: %s %s: %s", action, r->principal, r->sandbox,
	    allow ? "allow" : "deny", target, detail);
	memset(&e, 0, sizeof(e));
	e.time_ms = (int64_t)grant_now_ms();
	if (r->request_id[0] != '\0')
		strlcpy(rid, r->request_id, sizeof(rid));
	else
		snprintf(rid, sizeof(rid), "vmm-%llu",
		    (unsigned long long)(audit_seq + 1));
	e.request_id = rid;
	e.principal = r->principal;
	e.jti = "";
	e.action = action;
	e.target = target;
	e.decision = allow ? STORE_DECISION_ALLOW : STORE_DECISION_DENY;
	e.rule = rule;
	e.detail = detail;
	if (ctx->fd[PROC_STORE] < 0 ||
	    store_wire_audit_encode(&e, 1, &msg, &len) != STORE_OK ||
	    msg_send(ctx->fd[PROC_STORE], MSG_STORE_AUDIT, 0, ++audit_seq, msg,
	        len, -1) != MSG_OK)
		log_warnx(
		    "audit: not sent; lost: %s %s %s", action, target, detail);
	free(msg);
}

/* Only what a host name or TLS's server name may hold (the vm process
 * checked; this is its word only). */
static int
name_ok(const char *s, size_t cap, int empty_ok)
{
	size_t i;

	if (memchr(s, '\0', cap) == NULL)
		return 0;
	for (i = 0; s[i] != '\0'; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
		        s[i] == '_' || s[i] == '.'))
			return 0;
	return i > 0 || empty_ok;
}

/* MSG_VMM_NET_REPORT: audited as the vm process tells it. 0, or -1 when
 * it misbehaved. */
static int
report_event(struct proc_ctx *ctx, struct vmm_egress_run *r, const uint8_t *p)
{
	struct msg_vmm_net_report q;
	char target[VMM_NET_NAME_MAX + 16], detail[2 * VMM_NET_NAME_MAX + 64];
	const char *action = "egress.tls";

	memcpy(&q, p, sizeof(q));
	if (q.why < VMM_NET_TLS_NAME || q.why > VMM_NET_BUDGET || q.pad != 0 ||
	    q.port == 0 || !name_ok(q.name, sizeof(q.name), 1) ||
	    !name_ok(q.sni, sizeof(q.sni), 1)) {
		log_warnx("%s: malformed report from a vm process", __func__);
		return -1;
	}
	snprintf(target, sizeof(target), "TCP %s:%u", q.name, (unsigned)q.port);
	switch (q.why) {
	case VMM_NET_TLS_NAME:
		snprintf(detail, sizeof(detail),
		    "TLS server name \"%s\" is not the name resolved, \"%s\"",
		    q.sni, q.name);
		break;
	case VMM_NET_TLS_NO_NAME:
		snprintf(detail, sizeof(detail),
		    "TLS ClientHello without a server name (SNI)");
		break;
	case VMM_NET_TLS_MALFORMED:
		snprintf(detail, sizeof(detail),
		    "TLS handshake record without a well-formed ClientHello");
		break;
	case VMM_NET_NOT_TLS:
		snprintf(detail, sizeof(detail), "not TLS on port 443");
		break;
	case VMM_NET_BUDGET:
		action = "egress.budget";
		snprintf(detail, sizeof(detail),
		    "the principal's egress budget is spent");
		break;
	default:
		action = "egress.bytes";
		snprintf(detail, sizeof(detail),
		    "the run's egress bytes limit is reached");
		break;
	}
	audit_entry(ctx, r, action, target, 0, "", detail);
	return 0;
}

void
vmm_egress_drain(struct proc_ctx *ctx, struct vmm_egress_run *r)
{
	struct pollfd p;
	struct msg_hdr h;
	int i;

	/* A bounded number: each is one report the guest's refusals
	 * made, one per connection. */
	for (i = 0; i < 64 && r->fd >= 0 && r->stage == 0; i++) {
		p.fd = r->fd;
		p.events = POLLIN;
		p.revents = 0;
		if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN) ||
		    recv(r->fd, &h, sizeof(h), MSG_PEEK | MSG_DONTWAIT) !=
		        (ssize_t)sizeof(h) ||
		    h.type != MSG_VMM_NET_REPORT)
			return;
		if (vmm_egress_event(ctx, r) != 0)
			return;
	}
}

void
vmm_egress_audit_bytes(struct proc_ctx *ctx, const struct vmm_egress_run *r,
    const struct vmm_egress_bytes *bytes)
{
	char detail[96];

	if (r->principal[0] == '\0' || (bytes->out == 0 && bytes->in == 0))
		return;
	snprintf(detail, sizeof(detail), "out %llu in %llu",
	    (unsigned long long)bytes->out, (unsigned long long)bytes->in);
	audit_entry(ctx, r, "egress.bytes", r->sandbox, 1, "", detail);
}

/* Answer the vm with a refusal or failure made here. */
static void
answer(struct vmm_egress_run *r, int err, const char *detail)
{
	struct egress_decision d;
	struct msg_egress_rep q;
	void *wire = NULL;
	size_t len = 0;
	int mfd = -1;

	memset(&d, 0, sizeof(d));
	d.rule = -1;
	d.addr_class = -1;
	d.error = err;
	strlcpy(d.host, r->host, sizeof(d.host));
	d.port = r->port;
	strlcpy(d.detail, detail, sizeof(d.detail));
	if (egress_wire_encode_reply(&d, 0, NULL, &wire, &len) != 0 ||
	    (mfd = memfd_make_sealed("keep-fetch-reply", wire, len)) == -1)
		log_warnx("%s: cannot answer the vm", __func__);
	else {
		q.len = len;
		if (msg_send(r->fd, MSG_VMM_FETCH_REPLY, MSG_F_REPLY,
		        r->vm_reqid, &q, sizeof(q), mfd) != MSG_OK)
			log_warn("%s: send", __func__);
	}
	if (mfd != -1)
		close(mfd);
	free(wire);
	free(r->req);
	r->req = NULL;
	r->stage = 0;
	r->reqid = 0;
}

/* Answer the vm's name request with err (positive errno) now. */
static void
net_answer(struct vmm_egress_run *r, int err, int refused, int fd)
{
	struct msg_vmm_net_reply q;

	q.error = err;
	q.refused = refused != 0;
	if (msg_send(r->fd, MSG_VMM_NET_REPLY, MSG_F_REPLY, r->vm_reqid, &q,
	        sizeof(q), fd) != MSG_OK)
		log_warn("%s: to the vm process", __func__);
	r->stage = 0;
	r->reqid = 0;
	r->op = 0;
}

/* The operations on an address rather than a name, and on UDP. */
static int
net_byaddr(uint32_t op)
{
	return op == VMM_NET_CONNECT_ADDR || op == VMM_NET_UDP_ADDR;
}

static int
net_udp(uint32_t op)
{
	return op == VMM_NET_UDP || op == VMM_NET_UDP_ADDR;
}

/* Whether name, asked for a connect to an address, is that address's
 * canonical text as the URL parser read it: "10.1.2.3", or "[fd00::1]"
 * for IPv6 (brackets, as a target writes it). */
static int
addr_canonical(const struct egress_url *u, const char *name)
{
	char b[EGRESS_HOST_MAX + 3];

	if (u->kind == EGRESS_HOST_IPV4)
		return strcmp(u->host, name) == 0;
	if (u->kind != EGRESS_HOST_IPV6)
		return 0;
	snprintf(b, sizeof(b), "[%s]", u->host);
	return strcmp(b, name) == 0;
}

static int net_decision(struct proc_ctx *ctx, struct vmm_egress_run *r,
    const struct msg_policy_decision *dp, uint64_t reqid, int fresh);

/* MSG_VMM_NET from the vm: the name checked as a URL's host, then the
 * policy asked for it. 0, or -1 when the vm process misbehaved. */
static int
net_event(struct proc_ctx *ctx, struct vmm_egress_run *r, const uint8_t *p)
{
	const struct msg_policy_decision *reused;
	struct msg_policy_decide q;
	struct msg_vmm_net n;
	struct egress_url u;
	char url[VMM_NET_NAME_MAX + 32];
	int t;

	memcpy(&n, p, sizeof(n));
	if (n.op < VMM_NET_RESOLVE || n.op > VMM_NET_UDP_ADDR ||
	    (n.op == VMM_NET_RESOLVE) != (n.port == 0) || n.pad != 0 ||
	    memchr(n.name, '\0', sizeof(n.name)) == NULL) {
		log_warnx("%s: malformed request from a vm process", __func__);
		return -1;
	}
	r->op = n.op;
	/* The guest's name, as any URL's host: canonical, lower case. */
	t = snprintf(url, sizeof(url), "https://%s:%u/", n.name,
	    (unsigned)(n.port != 0 ? n.port : 443));
	/* A name asked as one, an address as one: an address literal
	 * asked as a name ("10.0.0.5") is refused, and an address is asked
	 * in its canonical text only ("10.1.2.3", "[fd00::1]"), which is
	 * what the policy's address rules and the grant are matched on. */
	if (t <= 0 || (size_t)t >= sizeof(url) ||
	    egress_url_parse(url, (size_t)t, &u) != 0 ||
	    (net_byaddr(n.op) ? !addr_canonical(&u, n.name)
	                      : u.kind != EGRESS_HOST_NAME)) {
		net_answer(r, EACCES, 1, -1);
		return 0;
	}
	if (net_byaddr(n.op))
		strlcpy(r->host, n.name, sizeof(r->host));
	else
		strlcpy(r->host, u.host, sizeof(r->host));
	r->port = n.port;
	memset(&q, 0, sizeof(q));
	q.cap = CAP_EGRESS;
	q.link = PROC_EGRESS;
	q.token_caps = r->token_caps;
	strlcpy(q.principal, r->principal, sizeof(q.principal));
	/* A query: any port of a rule for the name ("name:*"). A connect
	 * may be one that injects a secret. */
	if (n.op == VMM_NET_RESOLVE)
		t = snprintf(q.target, sizeof(q.target), "%s:*", r->host);
	else {
		t = snprintf(q.target, sizeof(q.target), "%s:%u%s", r->host,
		    (unsigned)n.port, net_udp(n.op) ? "/udp" : "");
		/* Only a TCP connect by name may be one that injects. */
		if (n.op == VMM_NET_CONNECT)
			q.flags |= DECIDE_CONNECT;
		q.flags |= DECIDE_REUSE;
	}
	q.target_len = (uint32_t)t;
	if (t <= 0 || (size_t)t >= sizeof(q.target)) {
		net_answer(r, EACCES, 0, -1);
		return 0;
	}
	/* A decision the policy let this run reuse: to egress as it is,
	 * under the request id its grant was minted for (one request of
	 * the run's is in flight at a time, and the id is the run's). */
	if (n.op != VMM_NET_RESOLVE &&
	    (reused = reuse_find(r, n.op, r->host, n.port)) != NULL) {
		r->reqid = reused->grant.reqid;
		r->stage = 1;
		/* A failure is answered to the vm in there. */
		(void)net_decision(ctx, r, reused, r->reqid, 0);
		return 0;
	}
	if (ctx->fd[PROC_POLICY] < 0) {
		net_answer(r, EACCES, 0, -1);
		return 0;
	}
	r->reqid = ++next_reqid;
	if (msg_send(ctx->fd[PROC_POLICY], MSG_POLICY_DECIDE, 0, r->reqid, &q,
	        sizeof(q), -1) != MSG_OK) {
		net_answer(r, EACCES, 0, -1);
		return 0;
	}
	r->stage = 1;
	return 0;
}

/*
 * A connect the policy allows to a destination that injects a secret
 * (docs/egress.md, "Secrets injected at egress"): the flags as the
 * plain connect's, read from the grant, whose target also names the
 * secret and header; the run's value and placeholder, when it was
 * given the secret, for egress's relay. The message is zeroed once
 * sent: the value stays only in the run's secrets. A connect to any
 * other destination, by a run that holds placeholders, goes the same
 * way with no secret named: egress relays it scanning for them.
 */
static int
net_inject(struct proc_ctx *ctx, struct vmm_egress_run *r, uint64_t reqid,
    const struct msg_policy_decision *d, const struct msg_egress_name *name)
{
	struct msg_egress_inject *q;
	const uint8_t *value = NULL;
	const char *placeholder = NULL;
	char t[EGRESS_INJECT_TARGET_MAX];
	uint8_t hash[GRANT_HASH_BYTES];
	size_t len = 0;
	int h, p, rc = -1;

	if ((q = calloc(1, sizeof(*q))) == NULL) {
		net_answer(r, EACCES, 0, -1);
		return -1;
	}
	q->name = *name;
	/* No injection here, but the run holds placeholders: a relay
	 * that scans what the guest sends in clear (the plain grant). */
	if (d->inject_secret[0] == '\0')
		goto send;
	q->name.allow_http = q->name.allow_private = 0;
	for (h = 0; h < 2; h++)
		for (p = 0; p < 2; p++) {
			if (egress_grant_target_inject(r->host, r->port, h, p,
			        d->inject_secret, d->inject_header, t,
			        sizeof(t)) != 0)
				continue;
			grant_target_hash(t, strlen(t), hash);
			if (memcmp(hash, d->grant.target, sizeof(hash)) == 0) {
				q->name.allow_http = (uint8_t)h;
				q->name.allow_private = (uint8_t)p;
			}
		}
	strlcpy(q->secret, d->inject_secret, sizeof(q->secret));
	strlcpy(q->header, d->inject_header, sizeof(q->header));
	if (r->secret_for_egress != NULL &&
	    r->secret_for_egress(r->secret_arg, d->inject_secret, &value, &len,
	        &placeholder) == 0 &&
	    len > 0 && len <= sizeof(q->value)) {
		memcpy(q->value, value, len);
		q->value_len = (uint32_t)len;
		strlcpy(q->placeholder, placeholder, sizeof(q->placeholder));
	}
send:
	if (ctx->fd[PROC_EGRESS] < 0 ||
	    msg_send(ctx->fd[PROC_EGRESS], MSG_EGRESS_INJECT, 0, reqid, q,
	        sizeof(*q), -1) != MSG_OK)
		net_answer(r, EACCES, 0, -1);
	else {
		r->stage = 2;
		rc = 0;
	}
	sodium_memzero(q, sizeof(*q));
	free(q);
	return rc;
}

/* The policy's decision d on a name request, its grant minted for
 * request id reqid: on to egress, allow or deny alike (it audits
 * both). A fresh one (not reused here) the run may reuse goes with what
 * egress needs to keep it for the run's direct link. */
static int
net_decision(struct proc_ctx *ctx, struct vmm_egress_run *r,
    const struct msg_policy_decision *dp, uint64_t reqid, int fresh)
{
	struct msg_policy_decision d = *dp;
	struct msg_egress_name q;

	memset(&q, 0, sizeof(q));
	q.grant = d.grant;
	q.policy_reason = d.reason;
	q.op = r->op;
	q.port = r->port;
	strlcpy(q.principal, r->principal, sizeof(q.principal));
	strlcpy(q.name, r->host, sizeof(q.name));
	strlcpy(q.sandbox, r->sandbox, sizeof(q.sandbox));
	strlcpy(q.request_id, r->request_id, sizeof(q.request_id));
	if (r->op != VMM_NET_RESOLVE)
		egress_grant_flags_proto(&d.grant, r->host, r->port,
		    net_udp(r->op), &q.allow_http, &q.allow_private);
	if (fresh && r->run_id != 0 && r->op != VMM_NET_RESOLVE &&
	    d.grant.decision == GRANT_ALLOW) {
		q.run = r->run_id;
		q.reuse_ms = d.reuse_ms;
		q.generation = d.generation;
	}
	if (r->op == VMM_NET_CONNECT && d.grant.decision == GRANT_ALLOW &&
	    memchr(d.inject_secret, '\0', sizeof(d.inject_secret)) != NULL &&
	    memchr(d.inject_header, '\0', sizeof(d.inject_header)) != NULL &&
	    (d.inject_secret[0] != '\0' ||
	        (r->secret_for_egress != NULL &&
	            r->secret_for_egress(
	                r->secret_arg, NULL, NULL, NULL, NULL) == 0)))
		return net_inject(ctx, r, reqid, &d, &q);
	if (ctx->fd[PROC_EGRESS] < 0 ||
	    msg_send(ctx->fd[PROC_EGRESS], MSG_EGRESS_NAME, 0, reqid, &q,
	        sizeof(q), -1) != MSG_OK) {
		net_answer(r, EACCES, 0, -1);
		return -1;
	}
	r->stage = 2;
	return 0;
}

int
vmm_egress_name_reply(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m)
{
	struct msg_egress_name_reply q;
	int fd = m->fd;

	(void)ctx;
	memcpy(&q, m->data, sizeof(q));
	if (r->stage != 2 || r->op == 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* Checked here, not only in the vm process: nothing but a socket
	 * for a connect that succeeded goes to it. */
	if (q.error < 0 || q.error > 4095 ||
	    (q.error == 0 && r->op != VMM_NET_RESOLVE && fd < 0)) {
		q.error = EACCES;
		q.refused = 0;
	}
	if (q.error != 0 || r->op == VMM_NET_RESOLVE) {
		if (fd >= 0)
			close(fd);
		fd = -1;
	}
	net_answer(r, q.error, (int)q.refused, fd);
	if (fd >= 0)
		close(fd);
	return 0;
}

int
vmm_egress_event(struct proc_ctx *ctx, struct vmm_egress_run *r)
{
	struct msg_policy_decide q;
	struct msg_egress_rep hdr;
	struct egress_decoded dec;
	struct egress_url u;
	struct msg_hdr h;
	struct stat st;
	uint8_t *buf;
	size_t n;
	int fd = MSG_NO_FD, rc = -1, t;

	if ((buf = malloc(MSG_BUFSZ)) == NULL)
		return 0;
	if (msg_recv(r->fd, buf, MSG_BUFSZ, &n, &fd) != MSG_OK)
		goto gone; /* the vm process exited */
	memcpy(&h, buf, n < sizeof(h) ? n : sizeof(h));
	if (n == sizeof(h) + sizeof(struct msg_vmm_net_report) &&
	    h.type == MSG_VMM_NET_REPORT && h.flags == 0 && h.pad == 0 &&
	    h.len == sizeof(struct msg_vmm_net_report) && fd == MSG_NO_FD) {
		if ((rc = report_event(ctx, r, buf + sizeof(h))) != 0)
			goto gone;
		goto out;
	}
	r->vm_reqid = h.reqid; /* echoed in the reply */
	if (n == sizeof(h) + sizeof(struct msg_vmm_net) &&
	    h.type == MSG_VMM_NET && h.flags == 0 && h.pad == 0 &&
	    h.len == sizeof(struct msg_vmm_net) && fd == MSG_NO_FD &&
	    r->stage == 0) {
		if ((rc = net_event(ctx, r, buf + sizeof(h))) != 0)
			goto gone;
		goto out;
	}
	if (n != sizeof(h) + sizeof(hdr) || h.type != MSG_VMM_FETCH ||
	    h.flags != 0 || h.pad != 0 || h.len != sizeof(hdr) ||
	    fd != MSG_NO_FD || r->stage != 0) {
		log_warnx("%s: malformed request from a vm process", __func__);
		goto gone;
	}
	memcpy(&hdr, buf + sizeof(h), sizeof(hdr));
	free(r->req);
	r->req = NULL;
	/* One copy out of the shared buffer; only the copy is looked at.
	 * The buffer is the vmm's own memfd, which the vm process writes:
	 * it has no seals, and it is read, never mapped. */
	if (hdr.len > EGRESS_MSG_MAX || fstat(r->shm, &st) == -1 ||
	    (uint64_t)st.st_size != hdr.len ||
	    (r->req = malloc(hdr.len + 1)) == NULL ||
	    memfd_pread_all(r->shm, r->req, hdr.len, 0) == -1) {
		log_warnx("%s: unreadable request from a vm process", __func__);
		goto gone;
	}
	r->len = hdr.len;
	r->host[0] = '\0';
	r->port = 0;
	r->op = 0;
	memset(&dec, 0, sizeof(dec));
	if (egress_wire_decode(MSG_EGRESS_FETCH, r->req, r->len, &dec) != 0 ||
	    egress_url_parse(dec.req.url, dec.req.url_len, &u) != 0) {
		egress_wire_decoded_free(&dec);
		answer(r, EGRESS_E_MSG, "malformed request");
		rc = 0;
		goto out;
	}
	egress_wire_decoded_free(&dec);
	strlcpy(r->host, u.host, sizeof(r->host));
	r->port = u.port;
	/* The decision, on exactly the destination the URL names. */
	memset(&q, 0, sizeof(q));
	q.cap = CAP_EGRESS;
	q.link = PROC_EGRESS;
	q.token_caps = r->token_caps;
	strlcpy(q.principal, r->principal, sizeof(q.principal));
	t = snprintf(
	    q.target, sizeof(q.target), "%s:%u", u.host, (unsigned)u.port);
	q.target_len = (uint32_t)t;
	if (t <= 0 || (size_t)t >= sizeof(q.target) ||
	    ctx->fd[PROC_POLICY] < 0) {
		answer(r, EGRESS_E_INTERNAL, "the policy service is down");
		rc = 0;
		goto out;
	}
	r->reqid = ++next_reqid;
	if (msg_send(ctx->fd[PROC_POLICY], MSG_POLICY_DECIDE, 0, r->reqid, &q,
	        sizeof(q), -1) != MSG_OK) {
		answer(r, EGRESS_E_INTERNAL, "the policy service is down");
		rc = 0;
		goto out;
	}
	r->stage = 1;
	rc = 0;
	goto out;
gone:
	link_close(r);
out:
	if (fd != MSG_NO_FD)
		close(fd);
	free(buf);
	return rc;
}

struct vmm_egress_run *
vmm_egress_find(struct vmm_egress_run *const *runs, size_t n, uint64_t reqid)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (runs[i] != NULL && runs[i]->fd >= 0 &&
		    runs[i]->stage != 0 && runs[i]->reqid == reqid)
			return runs[i];
	return NULL;
}

int
vmm_egress_decision(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m)
{
	struct msg_policy_decision d;
	struct msg_egress_req q;
	struct egress_decoded dec;
	struct egress_rule rule;
	void *wire = NULL;
	size_t wlen = 0;
	int mfd = -1, rc = -1;

	if (r->stage != 1)
		return -1;
	memcpy(&d, m->data, sizeof(d));
	if (r->op != 0) {
		reuse_keep(r, &d);
		return net_decision(ctx, r, &d, m->hdr.reqid, 1);
	}
	memset(&dec, 0, sizeof(dec));
	if (egress_wire_decode(MSG_EGRESS_FETCH, r->req, r->len, &dec) != 0) {
		answer(r, EGRESS_E_MSG, "malformed request");
		goto out;
	}
	/* The granted destination as the only rule, the run's principal,
	 * and limits the egress process will cap again. */
	memset(&rule, 0, sizeof(rule));
	strlcpy(rule.host, r->host, sizeof(rule.host));
	rule.port = r->port;
	egress_grant_flags(
	    &d.grant, r->host, r->port, &rule.allow_http, &rule.allow_private);
	dec.req.principal = r->principal;
	dec.req.rules = &rule;
	dec.req.nrules = 1;
	memset(&q, 0, sizeof(q));
	q.grant = d.grant;
	q.policy_reason = d.reason;
	strlcpy(q.sandbox, r->sandbox, sizeof(q.sandbox));
	strlcpy(q.request_id, r->request_id, sizeof(q.request_id));
	if (egress_wire_encode_fetch(&dec.req, &wire, &wlen) != 0 ||
	    (mfd = memfd_make_sealed("keep-egress", wire, wlen)) == -1) {
		answer(r, EGRESS_E_INTERNAL, "the vmm could not relay");
		goto out;
	}
	q.len = wlen;
	if (ctx->fd[PROC_EGRESS] < 0 ||
	    msg_send(ctx->fd[PROC_EGRESS], MSG_EGRESS_FETCH, 0, m->hdr.reqid,
	        &q, sizeof(q), mfd) != MSG_OK) {
		answer(r, EGRESS_E_INTERNAL, "the egress service is down");
		goto out;
	}
	free(r->req);
	r->req = NULL;
	r->stage = 2;
	rc = 0;
out:
	if (mfd != -1)
		close(mfd);
	free(wire);
	egress_wire_decoded_free(&dec);
	return rc;
}

int
vmm_egress_reply(
    struct proc_ctx *ctx, struct vmm_egress_run *r, const struct msg *m)
{
	struct msg_egress_rep q;

	(void)ctx;
	memcpy(&q, m->data, sizeof(q));
	if (r->stage != 2 || r->op != 0) {
		close(m->fd);
		return -1;
	}
	/* The reply is passed on as it is: the vm process checks it. */
	if (msg_send(r->fd, MSG_VMM_FETCH_REPLY, MSG_F_REPLY, r->vm_reqid, &q,
	        sizeof(q), m->fd) != MSG_OK)
		log_warn("%s: to the vm process", __func__);
	close(m->fd);
	r->stage = 0;
	r->reqid = 0;
	return 0;
}

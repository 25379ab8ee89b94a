/*
 * Ports into a sandbox (docs/architecture.md, "Ports"): a connected TCP
 * socket to 127.0.0.1:port in the sandbox's network namespace, handed to
 * the front, which moves the bytes of one API request over it.
 *
 * Only a process in that namespace can make the socket, and joining a
 * namespace is one-way for a process (a user namespace cannot be left),
 * so the vmm forks a connector for the sandbox at its first port
 * request: `keepd: port ID` joins the sandbox's user and network
 * namespaces, as a vm process does, drops what that lends it, confines
 * itself (seccomp_port_connector: make an AF_INET/AF_INET6 stream
 * socket, connect it, pass it back; no file, no fork, no other socket),
 * and then answers each request on its socketpair: a port in, the
 * connected socket (or the connect's errno) out. A fork per request
 * cost about a millisecond of the vmm's CPU (docs/egress.md, "Measured
 * (make bench-net)").
 *
 * The request carries only the port: the address is the connector's
 * own, the sandbox's loopback, so no request makes it connect anywhere
 * else. It ends with its sandbox (deleted, expired, paused: see
 * vmm_port_stop) and with the vmm (EOF on its socket, and
 * PR_SET_PDEATHSIG); one that died is made again by the next request.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "host/seccomp_filters.h"
#include "host/vm_confine.h"
#include "host/vmmproc/vmm_int.h"

/* How long a connect on the sandbox's loopback may take: a listener
 * whose backlog is full makes it wait for a SYN retry. */
#define PORT_CONNECT_MS 2000

/* The connector's socket in its own process. */
#define PORT_CONNECTOR_FD 3

/* In the connector: a connected socket to port on the namespace's
 * loopback, or -1 with *e the errno. */
static int
connector_connect(uint32_t port, int32_t *e)
{
	struct timeval tv = { PORT_CONNECT_MS / 1000,
		(PORT_CONNECT_MS % 1000) * 1000 };
	struct sockaddr_in sin;
	int s;

	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		*e = errno;
		return -1;
	}
	(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		*e = errno;
		close(s);
		return -1;
	}
	*e = 0;
	return s;
}

/* The connector's loop: a port in (a uint32_t), an errno and the socket
 * out. Anything else on its socket, or EOF (the vmm closed it or
 * ended), ends it. */
static void __attribute__((noreturn)) connector_loop(int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh;
	struct iovec iov;
	uint32_t port;
	int32_t e;
	int s;

	for (;;) {
		if (recv(fd, &port, sizeof(port), 0) != (ssize_t)sizeof(port) ||
		    port == 0 || port > 65535)
			_exit(0);
		s = connector_connect(port, &e);
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = &e;
		iov.iov_len = sizeof(e);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		if (s >= 0) {
			memset(&u, 0, sizeof(u));
			mh.msg_control = u.buf;
			mh.msg_controllen = sizeof(u.buf);
			u.h.cmsg_level = SOL_SOCKET;
			u.h.cmsg_type = SCM_RIGHTS;
			u.h.cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(&u.h), &s, sizeof(s));
		}
		if (sendmsg(fd, &mh, MSG_NOSIGNAL) != (ssize_t)sizeof(e))
			_exit(0);
		if (s >= 0)
			close(s);
	}
}

/* In the fresh child: into the sandbox's namespaces, shed the vmm's
 * descriptors and capabilities, confine, serve. Never returns. */
static void __attribute__((noreturn))
connector_main(int fd, int userfd, int netfd, const char *id)
{
	char err[160];

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setproctitle("port %s", id);
	log_stderr_only();
	if (vm_confine_port_join(userfd, netfd, err, sizeof(err)) == -1) {
		log_warnx("port %s: %s", id, err);
		_exit(1);
	}
	/* Nothing of the vmm's: its links, /dev/kvm, other sandboxes'
	 * workspaces, namespaces and connectors. */
	if (dup2(fd, PORT_CONNECTOR_FD) == -1) {
		log_warn("port %s: dup2", id);
		_exit(1);
	}
	closefrom(PORT_CONNECTOR_FD + 1);
	if (seccomp_filter_install_flags(
	        &seccomp_port_connector, SCF_NO_SOCKETS | SCF_VM_NET) == -1) {
		log_warn("port %s: seccomp", id);
		_exit(1);
	}
	connector_loop(PORT_CONNECTOR_FD);
}

/* s's connector, started: 0, or -1 with errno set. */
static int
port_start(struct sandbox *s)
{
	int sp[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	if (pid == 0)
		connector_main(sp[1], s->netns_user, s->netns_net, s->id);
	close(sp[1]);
	s->has_port = 1;
	s->port_pid = pid;
	s->port_fd = sp[0];
	return 0;
}

void
vmm_port_stop(struct sandbox *s)
{
	if (!s->has_port)
		return;
	close(s->port_fd);
	kill(s->port_pid, SIGKILL);
	waitpid(s->port_pid, NULL, 0);
	s->has_port = 0;
	s->port_pid = 0;
	s->port_fd = -1;
}

void
vmm_port_close_all(struct vmm_state *vs)
{
	size_t i;

	for (i = 0; i < VMM_SANDBOXES_MAX; i++)
		if (vs->sbx[i].used && vs->sbx[i].has_port)
			close(vs->sbx[i].port_fd);
}

/* One request to s's connector: the connected socket, or -1 with *e the
 * connect's errno; EPIPE: the connector was not there to ask. */
static int
port_ask(struct sandbox *s, uint32_t port, int32_t *e)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct pollfd p = { .fd = s->port_fd, .events = POLLIN };
	struct msghdr mh;
	struct iovec iov;
	int fd = -1;
	ssize_t n;

	if (send(s->port_fd, &port, sizeof(port), MSG_NOSIGNAL) !=
	    (ssize_t)sizeof(port)) {
		*e = EPIPE;
		return -1;
	}
	/* The connector is the vmm's own and bounded by its connect
	 * timeout; past it (or at its end) it is stopped, and the next
	 * request makes another. */
	if (poll(&p, 1, PORT_CONNECT_MS + 1000) != 1) {
		*e = ETIMEDOUT;
		vmm_port_stop(s);
		return -1;
	}
	memset(&mh, 0, sizeof(mh));
	memset(&u, 0, sizeof(u));
	iov.iov_base = e;
	iov.iov_len = sizeof(*e);
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = u.buf;
	mh.msg_controllen = sizeof(u.buf);
	n = recvmsg(s->port_fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n == (ssize_t)sizeof(*e) && *e == 0 &&
	    mh.msg_controllen >= CMSG_LEN(sizeof(int)) &&
	    u.h.cmsg_level == SOL_SOCKET && u.h.cmsg_type == SCM_RIGHTS &&
	    u.h.cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(&u.h), sizeof(fd));
	else if (n != (ssize_t)sizeof(*e) || *e == 0) {
		/* It died in the request (EOF), or answered nonsense. */
		*e = EIO;
		vmm_port_stop(s);
	}
	return fd;
}

/* The connected socket, or -1 with *e the connect's errno. */
static int
port_connect(struct sandbox *s, uint32_t port, int32_t *e)
{
	int fd;

	if (!s->has_port && port_start(s) == -1) {
		*e = errno;
		return -1;
	}
	if ((fd = port_ask(s, port, e)) == -1 && *e == EPIPE) {
		/* It had died since its last request: once more, anew. */
		log_warnx("sandbox %s: its port connector had ended", s->id);
		vmm_port_stop(s);
		if (port_start(s) == -1) {
			*e = errno;
			return -1;
		}
		if ((fd = port_ask(s, port, e)) == -1 && *e == EPIPE) {
			*e = EIO;
			vmm_port_stop(s);
		}
	}
	return fd;
}

int
vmm_h_port(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_port q;
	struct msg_vmm_port_reply r;
	struct sandbox *s;
	struct grant g;
	int fd = -1;

	memcpy(&q, m->data, sizeof(q));
	if (memchr(q.id, '\0', sizeof(q.id)) == NULL || q.port == 0 ||
	    q.port > 65535)
		return -1;
	memset(&r, 0, sizeof(r));
	if (vmm_check_grant(ctx, m, &q.grant, CAP_SANDBOX_READ, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else if (!s->has_netns) {
		/* No run made its namespace yet: nothing can listen. */
		r.status = PORT_E_REFUSED;
		r.err = ECONNREFUSED;
	} else if ((fd = port_connect(s, (uint32_t)q.port, &r.err)) == -1)
		r.status =
		    r.err == ECONNREFUSED ? PORT_E_REFUSED : PORT_E_UNREACHABLE;
	msg_reply(ctx, m, MSG_VMM_PORT_REPLY, &r, sizeof(r), fd);
	if (fd >= 0)
		close(fd);
	return 0;
}

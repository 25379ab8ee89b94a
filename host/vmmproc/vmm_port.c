/*
 * Ports into a sandbox (docs/architecture.md, "Ports"): a connected TCP
 * socket to 127.0.0.1:port in the sandbox's network namespace, handed to
 * the front, which moves the bytes of one API request over it.
 *
 * Only a process in that namespace can make the socket, and joining a
 * namespace is one-way for a process (a user namespace cannot be left),
 * so the vmm forks a child for each: it joins the sandbox's user and
 * network namespaces, as a vm process does (vm_confine_net_join), makes
 * and connects the socket, sends it back and exits. The child runs under
 * the vmm's own filter, which already holds setns, AF_INET sockets and
 * connect for its vm processes: nothing is added to it.
 */
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

#include "host/vmmproc/vmm_int.h"

/* How long a connect on the sandbox's loopback may take: a listener
 * whose backlog is full makes it wait for a SYN retry. */
#define PORT_CONNECT_MS 2000

/* In the child: the socket or -errno. Never returns to the loop. */
static void __attribute__((noreturn))
port_child(int back, int userfd, int netfd, uint16_t port)
{
	struct sockaddr_in sin;
	struct timeval tv = { PORT_CONNECT_MS / 1000,
		(PORT_CONNECT_MS % 1000) * 1000 };
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr mh;
	struct iovec iov;
	int32_t e = 0;
	int s = -1;

	if ((userfd >= 0 && setns(userfd, CLONE_NEWUSER) == -1) ||
	    setns(netfd, CLONE_NEWNET) == -1)
		e = errno;
	else if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		e = errno;
	else {
		(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
			e = errno;
			close(s);
			s = -1;
		}
	}
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
	(void)sendmsg(back, &mh, MSG_NOSIGNAL);
	_exit(0);
}

/* The connected socket, or -1 with *e the connect's errno. */
static int
port_connect(int userfd, int netfd, uint16_t port, int32_t *e)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct pollfd p;
	struct msghdr mh;
	struct iovec iov;
	pid_t pid;
	int sp[2], fd = -1;
	ssize_t n;

	*e = EIO;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) == -1) {
		*e = errno;
		return -1;
	}
	if ((pid = fork()) == -1) {
		*e = errno;
		close(sp[0]);
		close(sp[1]);
		return -1;
	}
	if (pid == 0) {
		close(sp[0]);
		port_child(sp[1], userfd, netfd, port);
	}
	close(sp[1]);
	p.fd = sp[0];
	p.events = POLLIN;
	/* The child is the vmm's own and bounded by its connect timeout;
	 * the margin covers its fork and setns. */
	if (poll(&p, 1, PORT_CONNECT_MS + 1000) == 1) {
		memset(&mh, 0, sizeof(mh));
		memset(&u, 0, sizeof(u));
		iov.iov_base = e;
		iov.iov_len = sizeof(*e);
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		n = recvmsg(sp[0], &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n == (ssize_t)sizeof(*e) && *e == 0 &&
		    mh.msg_controllen >= CMSG_LEN(sizeof(int)) &&
		    u.h.cmsg_level == SOL_SOCKET &&
		    u.h.cmsg_type == SCM_RIGHTS &&
		    u.h.cmsg_len == CMSG_LEN(sizeof(int)))
			memcpy(&fd, CMSG_DATA(&u.h), sizeof(fd));
		else if (n != (ssize_t)sizeof(*e))
			*e = EIO;
	} else {
		*e = ETIMEDOUT;
		kill(pid, SIGKILL);
	}
	close(sp[0]);
	waitpid(pid, NULL, 0);
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
	} else if ((fd = port_connect(s->netns_user, s->netns_net,
	                (uint16_t)q.port, &r.err)) == -1)
		r.status =
		    r.err == ECONNREFUSED ? PORT_E_REFUSED : PORT_E_UNREACHABLE;
	msg_reply(ctx, m, MSG_VMM_PORT_REPLY, &r, sizeof(r), fd);
	if (fd >= 0)
		close(fd);
	return 0;
}

/*
 * Sockets (docs/vmm.md, "Sockets"): every guest socket is a host socket
 * of the vm process behind a guest descriptor (VFD_HOST, f->sock its
 * SOCK_ type), read, written, polled and passed across fork and execve
 * as a pipe's end is (fs.c). What keeps them inside the sandbox:
 *
 *  - AF_INET and AF_INET6 exist only where the run has a network
 *    namespace of its own with nothing but `lo` (cfg->net, made by
 *    host/vm_confine.c before the filter goes on); elsewhere socket()
 *    answers EACCES. Even there a connect or sendto to an address that
 *    is not loopback is refused here, before any host call (EACCES, and
 *    the run's result says "egress"): nothing outside is reachable
 *    twice over.
 *  - AF_UNIX names are guest paths, resolved as every other path is
 *    beneath the workspace; abstract names live in the run's network
 *    namespace (private), and without one they are refused.
 *  - SCM_RIGHTS carries only the run's own host-backed descriptors
 *    (pipes, sockets, eventfds, epolls, workspace files): what arrives
 *    is installed as guest descriptors, never handed over raw.
 *
 * A call that would block waits in the VMM, not in the host: a thread
 * with others parks (sys_thread.c), the only thread sleeps in ppoll with
 * the wake signals let in (vm_signal_wait_fds), so a signal the guest
 * acts on is never slept through and one it blocks ends nothing, and
 * SO_RCVTIMEO and SO_SNDTIMEO bound the wait as Linux's do.
 */
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "host/vmm/dns.h"
#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"
#include "host/vmm/workspace.h"

#define G_SOCK_NONBLOCK 04000
#define G_SOCK_CLOEXEC 02000000
#define SOCK_PARKED                                                            \
	1 /* sock_wait: the thread is parked, the call will
			 be issued again */
#define RET_PARKED                                                             \
	INT64_MIN /* do_send, do_recv: the same, to the
				handler (which answers 0, not used) */
#define IOV_MAX_G 1024 /* Linux's UIO_MAXIOV */
#define CTL_MAX 4096 /* control bytes looked at or made per message */
#define OPT_MAX 64 /* the largest option value passed through */
#define G_SO_RCVTIMEO_NEW 66
#define G_SO_SNDTIMEO_NEW 67

/* Flags a guest's send or receive may carry; the rest are dropped. */
#define MSG_PASS                                                               \
	(MSG_OOB | MSG_PEEK | MSG_DONTROUTE | MSG_DONTWAIT | MSG_EOR |         \
	    MSG_WAITALL | MSG_NOSIGNAL | MSG_MORE | MSG_TRUNC |                \
	    MSG_CMSG_CLOEXEC)

/* The kernel's struct msghdr on x86-64, as the guest lays it out. */
struct gmsghdr {
	uint64_t name;
	uint32_t namelen, pad0;
	uint64_t iov, iovlen;
	uint64_t control, controllen;
	uint32_t flags, pad1;
};

/* Descriptor fd if it is a socket; else NULL with *err set. */
static struct vfd *
sock_get(struct vm *vm, uint64_t fd, int64_t *err)
{
	struct vfd *f = vm_fd(vm, fd);

	if (f == NULL)
		*err = -EBADF;
	else if (f->kind != VFD_HOST || f->sock == 0)
		*err = -ENOTSOCK;
	else
		return f;
	return NULL;
}

static int
sock_family(const struct vfd *f)
{
	int v = AF_UNIX;
	socklen_t l = sizeof(v);

	if (getsockopt(f->hostfd, SOL_SOCKET, SO_DOMAIN, &v, &l) == -1)
		return AF_UNIX;
	return v;
}

/*
 * Before an operation that may block on f: 0 to go on (ready, or the
 * caller asked not to wait), SOCK_PARKED when the running thread was
 * parked until it is ready, -EINTR for a signal the guest acts on (one
 * that came before the call too) or the run's end, -EAGAIN when the
 * socket's timeout (optname: SO_RCVTIMEO
 * or SO_SNDTIMEO) ran out first, as Linux answers. With park 0 a thread
 * with others is not parked (part of the call is done, and a parked call
 * is issued again whole): -EAGAIN instead.
 */
static int
sock_wait_park(struct vm *vm, struct vfd *f, short events, int dontwait,
    int optname, int park)
{
	struct pollfd p = { .fd = f->hostfd, .events = events };
	struct timeval tv = { 0, 0 };
	socklen_t tl = sizeof(tv);
	int64_t ms = -1;
	int fl, rc;

	if (dontwait || (fl = fcntl(f->hostfd, F_GETFL)) == -1 ||
	    (fl & O_NONBLOCK) || poll(&p, 1, 0) != 0)
		return 0;
	/* (a timeout past 2^33 seconds, which the guest may set, is none:
	 * its nanoseconds would not fit) */
	if (getsockopt(f->hostfd, SOL_SOCKET, optname, &tv, &tl) == 0 &&
	    (tv.tv_sec > 0 || tv.tv_usec > 0) && tv.tv_sec < (1LL << 33))
		ms = (int64_t)tv.tv_sec * 1000 + (tv.tv_usec + 999) / 1000;
	if (vm->threads != NULL && !park && !vm_thread_alone(vm))
		return -EAGAIN;
	if (vm->threads != NULL && park &&
	    vm_thread_park(vm, &p, 1,
	        ms >= 0 ? vm_now_us() + (uint64_t)ms * 1000 : 0, -EAGAIN))
		return SOCK_PARKED;
	rc = vm_signal_wait_fds(vm, &p, 1, ms >= 0 ? ms * 1000000 : -1);
	return rc > 0 ? 0 : rc == 0 ? -EAGAIN : rc;
}

static int
sock_wait(struct vm *vm, struct vfd *f, short events, int dontwait, int optname)
{
	return sock_wait_park(vm, f, events, dontwait, optname, 1);
}

/* ---- addresses ---------------------------------------------------------- */

/* Whether an internet address is this host's own loopback (or the
 * unspecified address, which Linux connects to loopback). */
static int
addr_local(const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	const uint8_t *b;

	if (ss->ss_family == AF_INET) {
		b = (const uint8_t *)&in->sin_addr;
		return b[0] == 127 || in->sin_addr.s_addr == INADDR_ANY;
	}
	if (ss->ss_family == AF_INET6) {
		if (IN6_IS_ADDR_LOOPBACK(&in6->sin6_addr) ||
		    IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr))
			return 1;
		b = in6->sin6_addr.s6_addr;
		return IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr) &&
		    (b[12] == 127 || (b[12] | b[13] | b[14] | b[15]) == 0);
	}
	return 0;
}

/* A destination outside the sandbox: refused, and the run says so,
 * naming its address and port. */
static int64_t
egress_refused(struct vm *vm, const struct sockaddr_storage *ss)
{
	char host[INET6_ADDRSTRLEN], what[INET6_ADDRSTRLEN + 8];
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;

	what[0] = '\0';
	if (ss->ss_family == AF_INET &&
	    inet_ntop(AF_INET, &in->sin_addr, host, sizeof(host)) != NULL)
		snprintf(
		    what, sizeof(what), "%s:%u", host, ntohs(in->sin_port));
	else if (ss->ss_family == AF_INET6 &&
	    inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)) != NULL)
		snprintf(
		    what, sizeof(what), "[%s]:%u", host, ntohs(in6->sin6_port));
	vm_proc_egress_refused(vm, what);
	return -EACCES;
}

/* ---- names and connections out of the sandbox (docs/egress.md) ------ */

/*
 * The vmm's word on a name or connection (vmm_config.egress_net): a
 * policy decision and the egress process's work, tens or hundreds of
 * microseconds. The guest's call waits for it with its stub asleep, not
 * spinning (vm_trap_blocking): on a small box a spinning stub holds a
 * core that the vmm, the policy and egress want for the answer. A
 * connect egress answers on the run's direct link is asked first, with
 * the stub left to spin as for any call: the answer takes egress alone
 * about 60 to 90 us here, within the stub's longest spin, and waking a
 * stub that slept cost 10 to 20 us of it (bench/net.sh's connect row,
 * docs/egress.md).
 */
static int
relay_net(struct vm *vm, int op, const char *name, uint16_t port, int *fd,
    int *refused)
{
	int rc;

	if (op != VMM_NET_RESOLVE && vm->cfg->egress_direct != NULL &&
	    (rc = vm->cfg->egress_direct(
	         vm->cfg->fetch_arg, op, name, port, fd, refused)) != 1)
		return rc;
	vm_trap_blocking(vm);
	return vm->cfg->egress_net(
	    vm->cfg->fetch_arg, op, name, port, fd, refused);
}

/* The IPv4 address of an internet socket address (v4-mapped in v6
 * too), host byte order, and its port; 0 when it has none. */
static uint32_t
addr_v4(const struct sockaddr_storage *ss, uint16_t *port)
{
	const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	uint32_t a;

	*port = 0;
	if (ss->ss_family == AF_INET) {
		*port = ntohs(in->sin_port);
		return ntohl(in->sin_addr.s_addr);
	}
	if (ss->ss_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&in6->sin6_addr)) {
		*port = ntohs(in6->sin6_port);
		memcpy(&a, in6->sin6_addr.s6_addr + 12, 4);
		return ntohl(a);
	}
	return 0;
}

/* Whether ss is in keep's own range for names (198.18.0.0/15): only a
 * name the resolver gave reaches out from there. */
static int
addr_keeps(const struct sockaddr_storage *ss)
{
	uint16_t port;

	return dns_synthetic(addr_v4(ss, &port));
}

static uint16_t
sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void opts_copy(const struct vfd *from, int to);
static int64_t iov_in(
    struct vm *vm, uint64_t addr, uint64_t n, struct iovec *iov);
static int64_t sock_take_egress(
    struct vfd *f, int fd, const struct sockaddr_storage *ss);

/* Whether ss is the guest resolver's address, and the run has one. */
static int
dns_dest(struct vm *vm, const struct sockaddr_storage *ss)
{
	uint16_t port;

	return vm->cfg->dns_table != NULL &&
	    addr_v4(ss, &port) == DNS_SERVER_ADDR && port == DNS_SERVER_PORT;
}

/* Whether datagram socket f, sending with no address, is connected to
 * the guest resolver. */
static int
dns_peer(struct vm *vm, struct vfd *f)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (vm->cfg->dns_table == NULL || f->sock != SOCK_DGRAM)
		return 0;
	memset(&ss, 0, sizeof(ss));
	if (getpeername(f->hostfd, (struct sockaddr *)&ss, &sl) == -1)
		return 0;
	return dns_dest(vm, &ss);
}

/* localhost is /etc/hosts' (the images carry it): never asked. */
static int
dns_local(const char *name)
{
	size_t n = strlen(name);

	return strcmp(name, "localhost") == 0 ||
	    (n > 10 && strcmp(name + n - 10, ".localhost") == 0);
}

/* The answer's rcode to query q, and its A record into addr (network
 * order) when there is one. */
static int
dns_decide(struct vm *vm, const struct dns_query *q, uint8_t addr[4], int *has)
{
	uint32_t a;
	int fd = -1, refused = 0, rc;

	*has = 0;
	if (q->qclass != DNS_CLASS_IN)
		return DNS_RCODE_NOTIMP;
	if (q->qtype != DNS_TYPE_A && q->qtype != DNS_TYPE_AAAA)
		return DNS_RCODE_OK; /* no records of other types */
	if (dns_local(q->name))
		return DNS_RCODE_NXDOMAIN;
	if ((a = dns_table_find(vm->cfg->dns_table, q->name)) == 0) {
		/* The policy's word, through the vmm (audited in egress):
		 * any port of a rule for the name. */
		if (vm->cfg->egress_net == NULL)
			return DNS_RCODE_NXDOMAIN;
		rc = relay_net(vm, VMM_NET_RESOLVE, q->name, 0, &fd, &refused);
		if (fd >= 0)
			close(fd);
		if (rc != 0 && refused)
			vm_proc_egress_refused(vm, q->name);
		if (rc != 0)
			return rc == -EINTR ? -1 : DNS_RCODE_NXDOMAIN;
		if ((a = dns_table_add(vm->cfg->dns_table, q->name)) == 0)
			return DNS_RCODE_SERVFAIL; /* the table is full */
	}
	/* AAAA: a name with no IPv6 address, so programs use IPv4. */
	if (q->qtype == DNS_TYPE_A) {
		a = htonl(a);
		memcpy(addr, &a, 4);
		*has = 1;
	}
	return DNS_RCODE_OK;
}

/*
 * The answer to the query (len bytes, at most DNS_UDP_MAX) into answer
 * (DNS_UDP_MAX bytes), *alen its length (0: none, the query is dropped).
 * 0, or -1 when a signal cut the policy's wait short.
 */
static int
dns_answer(struct vm *vm, const uint8_t *query, size_t len, uint8_t *answer,
    size_t *alen)
{
	struct dns_query q;
	uint8_t addr[4];
	int rc, has = 0;

	*alen = 0;
	rc = dns_query_parse(query, len, &q);
	switch (rc) {
	case DNS_PARSE_DROP:
		return 0;
	case DNS_PARSE_FORMERR:
	case DNS_PARSE_NOTIMP:
		q.question_end = 0;
		*alen = dns_answer_make(query, &q,
		    rc == DNS_PARSE_NOTIMP ? DNS_RCODE_NOTIMP
		                           : DNS_RCODE_FORMERR,
		    NULL, answer, DNS_UDP_MAX);
		return 0;
	case DNS_PARSE_BADNAME:
		*alen = dns_answer_make(
		    query, &q, DNS_RCODE_NXDOMAIN, NULL, answer, DNS_UDP_MAX);
		return 0;
	default:
		if ((rc = dns_decide(vm, &q, addr, &has)) < 0)
			return -1;
		*alen = dns_answer_make(
		    query, &q, rc, has ? addr : NULL, answer, DNS_UDP_MAX);
		return 0;
	}
}

/*
 * A datagram the guest sends to the resolver (iov, n): answered here,
 * from the resolver's own socket to f's address, before the call
 * returns, so the guest's recv, poll and epoll find a real reply from
 * 127.0.0.53:53. It is not sent itself. The bytes "sent", or -errno.
 */
static int64_t
dns_serve(struct vm *vm, struct vfd *f, const struct iovec *iov, size_t n)
{
	uint8_t query[DNS_UDP_MAX], answer[DNS_UDP_MAX];
	struct sockaddr_storage me;
	struct sockaddr_in to;
	socklen_t sl = sizeof(me);
	size_t total = 0, len = 0, i, alen = 0;
	uint16_t port;
	uint32_t a;

	for (i = 0; i < n; i++) {
		size_t take = iov[i].iov_len;

		if (take > sizeof(query) - len)
			take = sizeof(query) - len;
		if (take > 0)
			memcpy(query + len, iov[i].iov_base, take);
		len += take;
		total += iov[i].iov_len;
	}
	/* An unbound socket gets its port as a send would give it. */
	memset(&me, 0, sizeof(me));
	if (getsockname(f->hostfd, (struct sockaddr *)&me, &sl) == -1)
		return -errno;
	if (sa_port(&me) == 0) {
		struct sockaddr_storage any;

		memset(&any, 0, sizeof(any));
		any.ss_family = me.ss_family;
		sl = sizeof(me);
		if (bind(f->hostfd, (struct sockaddr *)&any,
		        me.ss_family == AF_INET
		            ? sizeof(struct sockaddr_in)
		            : sizeof(struct sockaddr_in6)) == -1 ||
		    getsockname(f->hostfd, (struct sockaddr *)&me, &sl) == -1)
			return -errno;
	}
	a = addr_v4(&me, &port);
	port = sa_port(&me);
	if (total > sizeof(query))
		return (int64_t)total; /* no query is that long: dropped */
	if (dns_answer(vm, query, len, answer, &alen) != 0)
		return -EINTR;
	if (alen == 0)
		return (int64_t)total;
	memset(&to, 0, sizeof(to));
	to.sin_family = AF_INET;
	to.sin_port = htons(port);
	/* A socket bound to the unspecified address hears on loopback. */
	to.sin_addr.s_addr = htonl(a != 0 ? a : INADDR_LOOPBACK);
	(void)sendto(vm->cfg->dns_fd, answer, alen, MSG_DONTWAIT | MSG_NOSIGNAL,
	    (struct sockaddr *)&to, sizeof(to));
	return (int64_t)total;
}

/* ---- DNS over TCP ---------------------------------------------------
 *
 * A guest TCP connect to 127.0.0.53:53 is made to a listener of the
 * VMM's own on 127.0.0.53, an ephemeral port, in the run's namespace,
 * which it accepts at once and closes: the guest holds an ordinary
 * loopback TCP socket, and the VMM the other end. Each query the guest
 * writes (a 2-byte length, then the message, as RFC 1035 frames them;
 * across writes too) is answered as a datagram's is, framed the same,
 * on the VMM's end, before the write returns; nothing reads the bytes
 * the guest wrote. The VMM's ends live in a small table per process,
 * found by the guest socket's inode (its dups and a fork's copies share
 * it), and go once the guest has closed its end.
 */
#define DNS_TCP_MAX 8 /* connections to the resolver a process holds */

static struct dns_tcp {
	ino_t ino; /* the guest socket's; 0: free */
	int srv; /* the VMM's end */
	uint16_t len; /* bytes of a frame not yet whole in buf */
	uint8_t buf[2 + DNS_UDP_MAX];
} dns_tcp[DNS_TCP_MAX];

static void
dns_tcp_free(struct dns_tcp *e)
{
	close(e->srv);
	memset(e, 0, sizeof(*e));
}

/* f's entry, or NULL (f was passed in from elsewhere, or its entry was
 * let go after a malformed frame). */
static struct dns_tcp *
dns_tcp_find(const struct vfd *f)
{
	struct stat st;
	size_t i;

	if (fstat(f->hostfd, &st) == -1)
		return NULL;
	for (i = 0; i < DNS_TCP_MAX; i++)
		if (dns_tcp[i].ino != 0 && dns_tcp[i].ino == st.st_ino)
			return &dns_tcp[i];
	return NULL;
}

/* A free entry, after letting go of those whose guest end is closed. */
static struct dns_tcp *
dns_tcp_slot(void)
{
	struct dns_tcp *free_one = NULL;
	struct pollfd p;
	size_t i;

	for (i = 0; i < DNS_TCP_MAX; i++) {
		if (dns_tcp[i].ino != 0) {
			p.fd = dns_tcp[i].srv;
			p.events = POLLRDHUP;
			p.revents = 0;
			if (poll(&p, 1, 0) == 1 &&
			    (p.revents & (POLLRDHUP | POLLHUP | POLLERR)))
				dns_tcp_free(&dns_tcp[i]);
		}
		if (dns_tcp[i].ino == 0 && free_one == NULL)
			free_one = &dns_tcp[i];
	}
	return free_one;
}

/* connect(f, 127.0.0.53:53) on a TCP socket: 0, -EINPROGRESS for a
 * non-blocking one (done already, as a loopback connect is), or -errno
 * (ECONNREFUSED when the table is full, as with no server). */
static int64_t
dns_tcp_connect(struct vm *vm, struct vfd *f)
{
	struct sockaddr_storage to, me, peer;
	struct sockaddr_in lo;
	struct dns_tcp *e;
	struct pollfd p;
	struct stat st;
	socklen_t sl;
	int l = -1, srv = -1, fl, rc;

	(void)vm;
	sl = sizeof(peer);
	if (getpeername(f->hostfd, (struct sockaddr *)&peer, &sl) == 0)
		return -EISCONN;
	if ((e = dns_tcp_slot()) == NULL)
		return -ECONNREFUSED;
	memset(&lo, 0, sizeof(lo));
	lo.sin_family = AF_INET;
	lo.sin_addr.s_addr = htonl(DNS_SERVER_ADDR);
	sl = sizeof(lo);
	if ((l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    bind(l, (struct sockaddr *)&lo, sizeof(lo)) == -1 ||
	    listen(l, 1) == -1 ||
	    getsockname(l, (struct sockaddr *)&lo, &sl) == -1) {
		rc = -errno;
		goto out;
	}
	/* The guest's socket, in its own family (an IPv6 one to the
	 * mapped address). */
	memset(&to, 0, sizeof(to));
	if (sock_family(f) == AF_INET6) {
		struct sockaddr_in6 *t6 = (struct sockaddr_in6 *)&to;

		t6->sin6_family = AF_INET6;
		t6->sin6_port = lo.sin_port;
		t6->sin6_addr.s6_addr[10] = t6->sin6_addr.s6_addr[11] = 0xff;
		memcpy(&t6->sin6_addr.s6_addr[12], &lo.sin_addr, 4);
		sl = sizeof(*t6);
	} else {
		memcpy(&to, &lo, sizeof(lo));
		sl = sizeof(lo);
	}
	if (connect(f->hostfd, (struct sockaddr *)&to, sl) == -1 &&
	    errno != EINPROGRESS) {
		rc = -errno;
		goto out;
	}
	/* Loopback's handshake is done by now; a second at most, should
	 * the host be slow. The connection accepted must be the guest's
	 * (another run's process could reach the port meanwhile). */
	p.fd = l;
	p.events = POLLIN;
	p.revents = 0;
	sl = sizeof(me);
	if (poll(&p, 1, 1000) != 1 ||
	    (srv = accept4(l, (struct sockaddr *)&peer,
	         &(socklen_t){ sizeof(peer) }, SOCK_CLOEXEC)) == -1 ||
	    getsockname(f->hostfd, (struct sockaddr *)&me, &sl) == -1 ||
	    sa_port(&me) != sa_port(&peer) || fstat(f->hostfd, &st) == -1) {
		rc = -ECONNREFUSED;
		goto out;
	}
	e->ino = st.st_ino;
	e->srv = srv;
	e->len = 0;
	srv = -1;
	f->dns_tcp = 1;
	fl = fcntl(f->hostfd, F_GETFL);
	rc = (fl != -1 && (fl & O_NONBLOCK)) ? -EINPROGRESS : 0;
out:
	if (l != -1)
		close(l);
	if (srv != -1)
		close(srv);
	return rc;
}

/*
 * What the guest writes on f, a TCP connection to the resolver (iov, n):
 * each whole frame answered on the VMM's end. The bytes "sent", or
 * -errno; -ENOENT when f has no entry (its bytes go as any socket's).
 * A frame of length 0 or over DNS_UDP_MAX ends the connection, as a
 * server would close it: the guest reads the end of the stream.
 */
static int64_t
dns_tcp_serve(struct vm *vm, struct vfd *f, const struct iovec *iov, size_t n)
{
	uint8_t answer[2 + DNS_UDP_MAX];
	struct dns_tcp *e;
	size_t i, off, take = 0, flen, want, alen, total = 0;

	if ((e = dns_tcp_find(f)) == NULL)
		return -ENOENT;
	for (i = 0; i < n; i++) {
		const uint8_t *b = iov[i].iov_base;

		for (off = 0; off < iov[i].iov_len; off += take) {
			flen = e->len >= 2
			    ? (size_t)((e->buf[0] << 8) | e->buf[1])
			    : 0;
			want = e->len < 2 ? 2 : 2 + flen;
			take = iov[i].iov_len - off;
			if (take > want - e->len)
				take = want - e->len;
			memcpy(e->buf + e->len, b + off, take);
			e->len += (uint16_t)take;
			if (e->len == 2) {
				flen = (size_t)((e->buf[0] << 8) | e->buf[1]);
				if (flen == 0 || flen > DNS_UDP_MAX) {
					dns_tcp_free(e);
					return (
					    int64_t)(total + iov[i].iov_len);
				}
				continue;
			}
			if (e->len < 2 + flen)
				continue;
			/* A whole query. A signal during the policy's answer
			 * loses it, as a dropped datagram would be. */
			e->len = 0;
			if (dns_answer(
			        vm, e->buf + 2, flen, answer + 2, &alen) != 0)
				return (int64_t)(total + off + take);
			if (alen == 0)
				continue;
			answer[0] = (uint8_t)(alen >> 8);
			answer[1] = (uint8_t)alen;
			(void)send(e->srv, answer, alen + 2,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		}
		total += iov[i].iov_len;
	}
	return (int64_t)total;
}

int64_t
vm_sock_dns_write(struct vm *vm, struct vfd *f, uint64_t addr, uint64_t len)
{
	struct iovec iov;

	if (!f->dns_tcp && !dns_peer(vm, f))
		return -ENOENT;
	if ((int64_t)len < 0)
		return -EINVAL;
	iov.iov_len = len;
	iov.iov_base = NULL;
	if (len != 0 && (iov.iov_base = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	if (f->dns_tcp)
		return dns_tcp_serve(vm, f, &iov, 1);
	return dns_serve(vm, f, &iov, 1);
}

int64_t
vm_sock_dns_writev(struct vm *vm, struct vfd *f, uint64_t addr, uint64_t n)
{
	struct iovec *iov;
	int64_t rc;

	if (!f->dns_tcp || dns_tcp_find(f) == NULL)
		return -ENOENT;
	if (n > IOV_MAX_G)
		return -EINVAL; /* writev's answer */
	if ((iov = calloc(n ? n : 1, sizeof(*iov))) == NULL)
		return -ENOMEM;
	if ((rc = iov_in(vm, addr, n, iov)) == 0)
		rc = dns_tcp_serve(vm, f, iov, (size_t)n);
	free(iov);
	return rc;
}

/*
 * A TCP connect to an address the resolver gave, or a UDP socket's
 * first datagram or connect there: the egress process connects to that
 * one name (with its checks; for UDP the name's rule must say `udp`)
 * and the socket it hands back takes the place of f's host socket. 0
 * or -errno; -ENOENT when ss is no address of keep's (the caller goes
 * on as before).
 */
static int64_t
connect_by_name(struct vm *vm, struct vfd *f, const struct sockaddr_storage *ss)
{
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	const char *name;
	uint16_t port;
	uint32_t a;
	int fd = -1, refused = 0, rc;
	char namecopy[DNS_NAME_MAX + 1];

	if (vm->cfg->dns_table == NULL ||
	    !dns_synthetic(a = addr_v4(ss, &port)) ||
	    (name = dns_table_name(vm->cfg->dns_table, a)) == NULL)
		return -ENOENT;
	/* TCP and UDP by name; port 0 is no port. */
	if ((f->sock != SOCK_STREAM && f->sock != SOCK_DGRAM) || port == 0)
		return -ENOENT;
	if (f->sock == SOCK_STREAM &&
	    getpeername(f->hostfd, (struct sockaddr *)&peer, &pl) == 0)
		return -EISCONN;
	if (vm->cfg->egress_net == NULL)
		return -ENOENT;
	strlcpy(namecopy, name, sizeof(namecopy));
	rc =
	    relay_net(vm, f->sock == SOCK_DGRAM ? VMM_NET_UDP : VMM_NET_CONNECT,
	        namecopy, port, &fd, &refused);
	if (rc != 0) {
		if (refused) {
			char what[VMM_EGRESS_WHAT];

			snprintf(what, sizeof(what), "%s:%u%s", namecopy, port,
			    f->sock == SOCK_DGRAM ? "/udp" : "");
			vm_proc_egress_refused(vm, what);
		}
		return rc;
	}
	return sock_take_egress(f, fd, ss);
}

/*
 * A TCP connect (or a UDP socket's first datagram or connect) to an
 * address outside the sandbox that keep gave no name (loopback and
 * 198.18/15 are not asked about): the vmm asks the policy for an address
 * rule ("10.1.0.0/16":5432; for UDP one that says `udp`) and egress
 * connects to exactly that address after its class checks. 0 or -errno;
 * -ENOENT when there is nobody to ask (the caller refuses, as before).
 */
static int64_t
connect_by_addr(struct vm *vm, struct vfd *f, const struct sockaddr_storage *ss)
{
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_storage peer;
	socklen_t pl = sizeof(peer);
	char host[INET6_ADDRSTRLEN], text[INET6_ADDRSTRLEN + 2];
	uint16_t port;
	uint32_t a;
	int fd = -1, refused = 0, rc;

	if ((f->sock != SOCK_STREAM && f->sock != SOCK_DGRAM) ||
	    vm->cfg->egress_net == NULL)
		return -ENOENT;
	/* IPv4, or IPv4 in an IPv6 socket's mapped form: asked as IPv4. */
	if ((a = addr_v4(ss, &port)) != 0 || ss->ss_family == AF_INET) {
		struct in_addr in = { htonl(a) };

		if (inet_ntop(AF_INET, &in, text, sizeof(text)) == NULL)
			return -ENOENT;
	} else {
		port = ntohs(in6->sin6_port);
		if (inet_ntop(AF_INET6, &in6->sin6_addr, host, sizeof(host)) ==
		    NULL)
			return -ENOENT;
		snprintf(text, sizeof(text), "[%s]", host);
	}
	if (port == 0)
		return -ENOENT;
	if (f->sock == SOCK_STREAM &&
	    getpeername(f->hostfd, (struct sockaddr *)&peer, &pl) == 0)
		return -EISCONN;
	rc = relay_net(vm,
	    f->sock == SOCK_DGRAM ? VMM_NET_UDP_ADDR : VMM_NET_CONNECT_ADDR,
	    text, port, &fd, &refused);
	if (rc != 0) {
		if (refused) {
			char what[VMM_EGRESS_WHAT];

			snprintf(what, sizeof(what), "%s:%u%s", text, port,
			    f->sock == SOCK_DGRAM ? "/udp" : "");
			vm_proc_egress_refused(vm, what);
		}
		return rc;
	}
	return sock_take_egress(f, fd, ss);
}

/* Whether ss is the peer a UDP socket egress made was made for, as the
 * guest named it. */
static int
egress_same_peer(const struct vfd *f, const struct sockaddr_storage *ss)
{
	const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)ss;
	struct sockaddr_in b;
	struct sockaddr_in6 b6;

	if (f->egress_peerlen == 0 || ss->ss_family == AF_UNSPEC)
		return 0;
	if (ss->ss_family == AF_INET &&
	    f->egress_peerlen == sizeof(struct sockaddr_in)) {
		memcpy(&b, f->egress_peer, sizeof(b));
		return a->sin_port == b.sin_port &&
		    a->sin_addr.s_addr == b.sin_addr.s_addr;
	}
	if (ss->ss_family == AF_INET6 &&
	    f->egress_peerlen == sizeof(struct sockaddr_in6)) {
		memcpy(&b6, f->egress_peer, sizeof(b6));
		return a6->sin6_port == b6.sin6_port &&
		    memcmp(&a6->sin6_addr, &b6.sin6_addr, 16) == 0;
	}
	return 0;
}

/*
 * A socket egress made, asked to go somewhere (connect, or a send with
 * an address): it lives outside the sandbox's network namespace, so
 * nothing may re-aim it, not even at "loopback", which there is the
 * host's. A connected TCP socket is EISCONN, as Linux says; a UDP one
 * may name its own peer (0: send as connected) and nothing else.
 */
static int64_t
egress_reaim(struct vm *vm, struct vfd *f, const struct sockaddr_storage *ss)
{
	if (f->sock == SOCK_STREAM)
		return -EISCONN;
	if (egress_same_peer(f, ss))
		return 0;
	if ((ss->ss_family == AF_INET || ss->ss_family == AF_INET6) &&
	    !addr_local(ss))
		return egress_refused(vm, ss);
	return -EACCES;
}

/*
 * A datagram to an address outside the sandbox: the socket is made
 * egress's, connected to the one destination a `udp` rule allows (by
 * name or address), and the datagram then goes on it as on a connected
 * socket. 0 (send with no address), -ENOENT (not such a datagram: the
 * caller goes on as before) or -errno.
 */
static int64_t
udp_out(struct vm *vm, struct vfd *f, const struct sockaddr_storage *ss)
{
	int64_t rc;

	if (f->egress)
		return egress_reaim(vm, f, ss);
	if (f->sock != SOCK_DGRAM ||
	    (ss->ss_family != AF_INET && ss->ss_family != AF_INET6) ||
	    addr_local(ss))
		return -ENOENT;
	if ((rc = connect_by_name(vm, f, ss)) == -ENOENT && !addr_keeps(ss))
		rc = connect_by_addr(vm, f, ss);
	return rc;
}

/*
 * The connected socket fd (from egress) in place of the guest's host
 * socket (each guest descriptor has a host one of its own, fs.c):
 * O_NONBLOCK and the options the guest set on it are carried over
 * (those that take a value; one the other family lacks is let go). It
 * is marked egress's; a UDP one remembers ss, its peer as the guest
 * named it, which its datagrams then come from.
 */
static int64_t
sock_take_egress(struct vfd *f, int fd, const struct sockaddr_storage *ss)
{
	int fl, rc;

	fl = fcntl(f->hostfd, F_GETFL);
	opts_copy(f, fd);
	if (fcntl(fd, F_SETFL, fl != -1 ? fl & O_NONBLOCK : 0) == -1) {
		rc = -errno;
		close(fd);
		return rc;
	}
	close(f->hostfd);
	f->hostfd = fd;
	f->egress = 1;
	f->egress_peerlen = 0;
	/* Its bytes are served by sock_egress.c from now on: all counted,
	 * and a TCP connection's to a name keep resolved (egress_addr, the
	 * key of the run's table of names) judged first (TLS's server name).
	 * By address there is no name to hold a ClientHello to. */
	f->egress_addr = 0;
	if (addr_keeps(ss))
		f->egress_addr = addr_v4(ss, &f->egress_port);
	else
		(void)addr_v4(ss, &f->egress_port);
	if (ss->ss_family == AF_INET6 && f->egress_port == 0)
		f->egress_port =
		    ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	f->egress_first = f->sock == SOCK_STREAM && f->egress_addr != 0;
	if (f->sock == SOCK_DGRAM) {
		f->egress_peerlen = ss->ss_family == AF_INET
		    ? sizeof(struct sockaddr_in)
		    : sizeof(struct sockaddr_in6);
		memcpy(f->egress_peer, ss, f->egress_peerlen);
		return 0; /* a UDP connect is done at once, even so */
	}
	/* Done at once, as a loopback connect is: a non-blocking caller
	 * hears EINPROGRESS and then finds it writable, SO_ERROR 0. */
	return (fl != -1 && (fl & O_NONBLOCK)) ? -EINPROGRESS : 0;
}

/*
 * A guest socket address in: copied into *ss (*sl its length) after the
 * checks Linux makes for f's family. An AF_UNIX path is left in *path
 * (normalized guest path, "" for an unnamed or abstract address) for
 * unix_at to resolve.
 */
static int64_t
addr_in(struct vm *vm, struct vfd *f, uint64_t addr, uint64_t len,
    struct sockaddr_storage *ss, socklen_t *sl, char *path, size_t pathlen)
{
	int fam = sock_family(f);
	const void *g;
	char raw[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	size_t n;

	path[0] = '\0';
	if ((int32_t)len < 0 || len > sizeof(*ss))
		return -EINVAL;
	if (len < sizeof(sa_family_t))
		return -EINVAL;
	if ((g = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, g, len);
	*sl = (socklen_t)len;
	if (ss->ss_family == AF_UNSPEC)
		return 0; /* a datagram socket's disconnect */
	if (ss->ss_family != fam)
		return fam == AF_UNIX ? -EINVAL : -EAFNOSUPPORT;
	switch (fam) {
	case AF_INET:
		return len < sizeof(struct sockaddr_in) ? -EINVAL : 0;
	case AF_INET6:
		return len < sizeof(struct sockaddr_in6) ? -EINVAL : 0;
	case AF_UNIX:
		break;
	default:
		return -EAFNOSUPPORT;
	}
	n = len - offsetof(struct sockaddr_un, sun_path);
	if (n == 0) /* unnamed: autobind, an abstract name */
		return vm->cfg->net ? 0 : -EACCES;
	memcpy(raw, ((struct sockaddr_un *)ss)->sun_path, n);
	raw[n] = '\0';
	if (raw[0] == '\0')
		return vm->cfg->net ? 0 : -EACCES; /* abstract */
	return ws_normalize(vm->cwd, raw, path, pathlen);
}

/*
 * The host side of an AF_UNIX path: the host's cwd is moved to the
 * directory that holds it, beneath the workspace (there is no bindat or
 * connectat), and *ss names it there. *back is the cwd to return to
 * (unix_done). for_bind: the name must not exist yet; otherwise it must
 * be a socket, not a symlink, which a host connect would follow out of
 * the workspace.
 */
static int64_t
unix_at(struct vm *vm, const char *path, int for_bind,
    struct sockaddr_storage *ss, socklen_t *sl, int *back)
{
	struct sockaddr_un *un = (struct sockaddr_un *)ss;
	char name[VM_PATH_MAX];
	struct stat st;
	int dfd;

	*back = -1;
	if (vm_synth_path(path) || vm_path_in_image(vm, path))
		return for_bind ? -EADDRINUSE : -ECONNREFUSED;
	if ((dfd = vm_ws_parent(vm, path, name, sizeof(name))) < 0)
		return dfd;
	if (strlen(name) >= sizeof(un->sun_path)) {
		close(dfd);
		return -ENAMETOOLONG;
	}
	if (!for_bind) {
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
			close(dfd);
			return -errno;
		}
		if (!S_ISSOCK(st.st_mode)) {
			close(dfd);
			return -ECONNREFUSED;
		}
	}
	if ((*back = vm_cwd_enter(dfd)) < 0) {
		int64_t rc = *back;

		*back = -1;
		close(dfd);
		return rc;
	}
	close(dfd);
	memset(ss, 0, sizeof(*ss));
	un->sun_family = AF_UNIX;
	memcpy(un->sun_path, name, strlen(name) + 1);
	*sl = (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
	    strlen(name) + 1);
	return 0;
}

static void
unix_done(int back)
{
	vm_cwd_leave(back);
}

/* A host address out to the guest's (addr, *lenp), Linux's way: as much
 * as fits, and the whole length in *lenp. */
static int64_t
addr_out(
    struct vm *vm, uint64_t addr, uint64_t lenp, const void *sa, socklen_t sl)
{
	int32_t len;
	void *g;

	if (lenp == 0)
		return 0;
	if ((g = vm_gptr(vm, lenp, sizeof(len))) == NULL)
		return -EFAULT;
	memcpy(&len, g, sizeof(len));
	if (len < 0)
		return -EINVAL;
	if (len > 0 && sl > 0 &&
	    vm_put(vm, addr, sa, (size_t)len < sl ? (size_t)len : sl) != 0)
		return -EFAULT;
	len = (int32_t)sl;
	memcpy(g, &len, sizeof(len));
	return 0;
}

/* ---- socket, bind, listen, accept, connect ----------------------------- */

int64_t
sys_socket(struct vm *vm, const uint64_t a[6])
{
	uint64_t type = a[1] & ~(uint64_t)(G_SOCK_NONBLOCK | G_SOCK_CLOEXEC);
	int hfd, gfd;

	if (a[0] != AF_UNIX && a[0] != AF_INET && a[0] != AF_INET6)
		return -EAFNOSUPPORT;
	if (a[1] & ~(uint64_t)(0xf | G_SOCK_NONBLOCK | G_SOCK_CLOEXEC))
		return -EINVAL;
	if (type == SOCK_RAW || type == SOCK_PACKET)
		return a[0] == AF_UNIX ? -ESOCKTNOSUPPORT : -EPERM;
	if (type != SOCK_STREAM && type != SOCK_DGRAM &&
	    !(type == SOCK_SEQPACKET && a[0] == AF_UNIX))
		return -ESOCKTNOSUPPORT;
	if (a[0] == AF_UNIX ? a[2] != 0
	                    : a[2] != 0 &&
	            a[2] != (type == SOCK_STREAM ? IPPROTO_TCP : IPPROTO_UDP))
		return -EPROTONOSUPPORT;
	if (a[0] != AF_UNIX && !vm->cfg->net)
		return -EACCES; /* no network of its own: none at all */
	if ((gfd = vm_fd_alloc(vm, 0)) < 0)
		return gfd;
	if ((hfd = socket((int)a[0],
	         (int)type | SOCK_CLOEXEC |
	             ((a[1] & G_SOCK_NONBLOCK) ? SOCK_NONBLOCK : 0),
	         (int)a[2])) == -1)
		return -errno;
	if ((gfd = vm_fd_add_host(vm, hfd, (a[1] & G_SOCK_CLOEXEC) != 0)) < 0) {
		close(hfd);
		return gfd;
	}
	vm->fds[gfd].sock = (int)type;
	return gfd;
}

int64_t
sys_socketpair(struct vm *vm, const uint64_t a[6])
{
	uint64_t type = a[1] & ~(uint64_t)(G_SOCK_NONBLOCK | G_SOCK_CLOEXEC);
	int hp[2], g[2], i;
	void *out;

	/* Linux's answers: the internet families have no pairs. */
	if (a[0] == AF_INET || a[0] == AF_INET6)
		return -EOPNOTSUPP;
	if (a[0] != AF_UNIX)
		return -EAFNOSUPPORT;
	if (a[1] & ~(uint64_t)(0xf | G_SOCK_NONBLOCK | G_SOCK_CLOEXEC))
		return -EINVAL;
	if (type != SOCK_STREAM && type != SOCK_DGRAM && type != SOCK_SEQPACKET)
		return -ESOCKTNOSUPPORT;
	if (a[2] != 0 && a[2] != PF_UNIX)
		return -EPROTONOSUPPORT;
	if ((out = vm_gptr(vm, a[3], sizeof(g))) == NULL)
		return -EFAULT;
	if ((i = vm_fd_alloc_pair(vm, g)) != 0)
		return i;
	if (socketpair(AF_UNIX,
	        (int)type | SOCK_CLOEXEC |
	            ((a[1] & G_SOCK_NONBLOCK) ? SOCK_NONBLOCK : 0),
	        0, hp) == -1)
		return -errno;
	for (i = 0; i < 2; i++) {
		struct vfd *f = &vm->fds[g[i]];

		memset(f, 0, sizeof(*f));
		f->kind = VFD_HOST;
		f->hostfd = hp[i];
		f->pipe = 1;
		f->sock = (int)type;
		f->flags = O_RDWR | ((a[1] & G_SOCK_NONBLOCK) ? O_NONBLOCK : 0);
		f->cloexec = (a[1] & G_SOCK_CLOEXEC) != 0;
	}
	memcpy(out, g, sizeof(g));
	return 0;
}

int64_t
sys_bind(struct vm *vm, const uint64_t a[6])
{
	struct sockaddr_storage ss;
	char path[VM_PATH_MAX];
	socklen_t sl;
	struct vfd *f;
	int64_t rc;
	int back = -1;

	if ((f = sock_get(vm, a[0], &rc)) == NULL)
		return rc;
	if (f->egress)
		return -EINVAL; /* bound already, outside the sandbox */
	if ((rc = addr_in(vm, f, a[1], a[2], &ss, &sl, path, sizeof(path))) !=
	    0)
		return rc;
	if (ss.ss_family == AF_UNSPEC)
		return sock_family(f) == AF_UNIX ? -EINVAL : -EAFNOSUPPORT;
	if (path[0] != '\0' &&
	    (rc = unix_at(vm, path, 1, &ss, &sl, &back)) != 0)
		return rc;
	rc = bind(f->hostfd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
	unix_done(back);
	if (rc == 0 && path[0] != '\0') {
		/* getsockname answers with the name as the guest gave it,
		 * as Linux does, not the host's relative one. */
		const struct sockaddr_un *g = vm_gptr(vm, a[1], a[2]);

		free(f->path);
		f->path = g != NULL
		    ? strndup(g->sun_path,
		          a[2] - offsetof(struct sockaddr_un, sun_path))
		    : NULL;
	}
	return rc;
}

int64_t
sys_listen(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f;
	int64_t err;
	int backlog = (int)a[1];

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if (f->egress)
		return -EINVAL; /* connected, and outside the sandbox */
	return listen(f->hostfd, backlog < 0 ? 0 : backlog) == 0 ? 0 : -errno;
}

static int64_t
do_accept(struct vm *vm, const uint64_t a[6], uint64_t flags)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	struct vfd *f;
	int64_t rc;
	int hfd, gfd, type = 0;
	socklen_t tl = sizeof(type);

	if ((f = sock_get(vm, a[0], &rc)) == NULL)
		return rc;
	if (flags & ~(uint64_t)(G_SOCK_NONBLOCK | G_SOCK_CLOEXEC))
		return -EINVAL;
	if ((gfd = vm_fd_alloc(vm, 0)) < 0)
		return gfd;
	for (;;) {
		if ((rc = sock_wait(vm, f, POLLIN, 0, SO_RCVTIMEO)) != 0)
			return rc == SOCK_PARKED ? 0 : rc;
		hfd = accept4(f->hostfd, (struct sockaddr *)&ss, &sl,
		    SOCK_CLOEXEC |
		        ((flags & G_SOCK_NONBLOCK) ? SOCK_NONBLOCK : 0));
		if (hfd >= 0)
			break;
		if (errno != EAGAIN ||
		    (fcntl(f->hostfd, F_GETFL) & O_NONBLOCK) != 0)
			return -errno;
		sl = sizeof(ss); /* another process took it: wait again */
	}
	if ((gfd = vm_fd_add_host(vm, hfd, (flags & G_SOCK_CLOEXEC) != 0)) <
	    0) {
		close(hfd);
		return gfd;
	}
	if (getsockopt(hfd, SOL_SOCKET, SO_TYPE, &type, &tl) == -1)
		type = SOCK_STREAM;
	vm->fds[gfd].sock = type;
	if (a[1] != 0 && (rc = addr_out(vm, a[1], a[2], &ss, sl)) != 0) {
		/* Linux has the connection by now; the guest's bad
		 * pointer loses it. */
		sys_close(vm, (uint64_t[6]){ (uint64_t)gfd, 0, 0, 0, 0, 0 });
		return rc;
	}
	return gfd;
}

int64_t
sys_accept(struct vm *vm, const uint64_t a[6])
{
	return do_accept(vm, a, 0);
}

int64_t
sys_accept4(struct vm *vm, const uint64_t a[6])
{
	return do_accept(vm, a, a[3]);
}

int64_t
sys_connect(struct vm *vm, const uint64_t a[6])
{
	struct sockaddr_storage ss;
	char path[VM_PATH_MAX];
	socklen_t sl;
	struct vfd *f;
	int64_t rc;
	int back = -1;

	if ((f = sock_get(vm, a[0], &rc)) == NULL)
		return rc;
	if ((rc = addr_in(vm, f, a[1], a[2], &ss, &sl, path, sizeof(path))) !=
	    0)
		return rc;
	if (f->egress)
		return egress_reaim(vm, f, &ss);
	if ((ss.ss_family == AF_INET || ss.ss_family == AF_INET6) &&
	    !addr_local(&ss)) {
		if ((rc = connect_by_name(vm, f, &ss)) != -ENOENT)
			return rc;
		if (!addr_keeps(&ss) &&
		    (rc = connect_by_addr(vm, f, &ss)) != -ENOENT)
			return rc;
		return egress_refused(vm, &ss);
	}
	if (f->sock == SOCK_STREAM && dns_dest(vm, &ss))
		return dns_tcp_connect(vm, f);
	if (path[0] != '\0' &&
	    (rc = unix_at(vm, path, 0, &ss, &sl, &back)) != 0)
		return rc;
	/* Loopback connects complete or fail at once; a blocking AF_UNIX
	 * connect waits in the host only while the listener's backlog is
	 * full. */
	rc = connect(f->hostfd, (struct sockaddr *)&ss, sl) == 0 ? 0 : -errno;
	unix_done(back);
	return rc;
}

/* ---- send and receive ------------------------------------------------- */

/* The guest's iovecs as host ones over guest memory: 0 or -errno. */
static int64_t
iov_in(struct vm *vm, uint64_t addr, uint64_t n, struct iovec *iov)
{
	const uint64_t *g;
	uint64_t i, total = 0;

	if (n > IOV_MAX_G)
		return -EMSGSIZE;
	if (n == 0)
		return 0;
	if ((g = vm_gptr(vm, addr, n * 16)) == NULL)
		return -EFAULT;
	for (i = 0; i < n; i++) {
		uint64_t base, len;

		memcpy(&base, &g[2 * i], 8);
		memcpy(&len, &g[2 * i + 1], 8);
		if ((int64_t)len < 0 || len > SSIZE_MAX - total)
			return -EINVAL;
		total += len;
		iov[i].iov_len = len;
		iov[i].iov_base = NULL;
		if (len != 0 &&
		    (iov[i].iov_base = vm_gptr(vm, base, len)) == NULL)
			return -EFAULT;
	}
	return 0;
}

/*
 * Whether guest descriptor f may travel in SCM_RIGHTS: one of the run's
 * own host-backed ones, a pipe, socket, eventfd or epoll, or a
 * workspace file (multiprocessing's reduction.send_handle passes open
 * files to its children). A file's writes are counted against the
 * quota by whichever process of the sandbox makes them, through the
 * host descriptor, as a forked child's are. Not a workspace directory
 * (its receiver would have no guest path to walk from), not what is
 * not the host's (the image's files, /proc, the output sink), and not
 * a socket egress made: it stays in its process tree, since one
 * unmarked elsewhere could be re-aimed, and its bytes are counted by
 * the descriptors that know.
 */
static int
passable(const struct vfd *f)
{
	struct stat st;

	if (f->kind != VFD_HOST || f->egress)
		return 0;
	return f->pipe || (fstat(f->hostfd, &st) == 0 && S_ISREG(st.st_mode));
}

/*
 * The guest's control messages for a send, made the host's: SCM_RIGHTS
 * only, each descriptor passable. 0 with *hl the bytes made in host
 * (CTL_MAX), or -errno.
 */
static int64_t
control_in(
    struct vm *vm, uint64_t addr, uint64_t len, uint8_t *host, size_t *hl)
{
	const uint8_t *g;
	size_t off = 0;

	*hl = 0;
	if (len == 0)
		return 0;
	if (len > CTL_MAX)
		return -ENOBUFS;
	if ((g = vm_gptr(vm, addr, len)) == NULL)
		return -EFAULT;
	memcpy(host, g, len);
	while (off + sizeof(struct cmsghdr) <= len) {
		struct cmsghdr c;
		size_t i, nfd;
		int *fds;

		memcpy(&c, host + off, sizeof(c));
		if (c.cmsg_len < sizeof(c) || c.cmsg_len > len - off)
			return -EINVAL;
		if (c.cmsg_level != SOL_SOCKET || c.cmsg_type != SCM_RIGHTS)
			return -EINVAL;
		nfd = (c.cmsg_len - CMSG_LEN(0)) / sizeof(int);
		fds = (int *)(void *)(host + off + CMSG_LEN(0));
		for (i = 0; i < nfd; i++) {
			int gfd;
			struct vfd *f;

			memcpy(&gfd, &fds[i], sizeof(gfd));
			if (gfd < 0 || (f = vm_fd(vm, (uint64_t)gfd)) == NULL)
				return -EBADF;
			if (!passable(f))
				return -EOPNOTSUPP;
			memcpy(&fds[i], &f->hostfd, sizeof(int));
		}
		off += CMSG_ALIGN(c.cmsg_len);
	}
	*hl = len;
	return 0;
}

/* What a received anonymous descriptor is, for the calls that take only
 * their own kind: a timerfd answers timerfd_gettime; an inotify
 * instance, asked to watch the empty path, looks it up (ENOENT) where
 * any other descriptor is EINVAL first, and no watch is made. */
static uint8_t
anon_kind(int hfd)
{
	struct itimerspec t;

	if (timerfd_gettime(hfd, &t) == 0)
		return VM_ANON_TIMERFD;
	if (inotify_add_watch(hfd, "", IN_ACCESS) == -1 && errno == ENOENT)
		return VM_ANON_INOTIFY;
	return VM_ANON_NONE;
}

/* A received descriptor, a guest one now; its number or -errno (the
 * host one closed). A regular file is a workspace file a process of the
 * sandbox passed (passable): a file descriptor with no guest path, open
 * as it was opened; a directory never travels from here, and is not
 * taken from anyone else either. */
static int
fd_install(struct vm *vm, int hfd, int cloexec)
{
	struct stat st;
	int gfd, type = 0;
	socklen_t tl = sizeof(type);

	if (fstat(hfd, &st) == -1 || S_ISDIR(st.st_mode) ||
	    (gfd = vm_fd_add_host(vm, hfd, cloexec)) < 0) {
		close(hfd);
		return -EBADF;
	}
	if (S_ISSOCK(st.st_mode) &&
	    getsockopt(hfd, SOL_SOCKET, SO_TYPE, &type, &tl) == 0)
		vm->fds[gfd].sock = type;
	if (S_ISREG(st.st_mode))
		vm_fd_is_file(vm, gfd);
	if ((st.st_mode & S_IFMT) == 0)
		vm->fds[gfd].anon = anon_kind(hfd);
	return gfd;
}

/*
 * The host's control messages of a receive into the guest's buffer:
 * SCM_RIGHTS' descriptors become guest descriptors; those with no room
 * (a descriptor limit) are closed and *flags gets MSG_CTRUNC. The
 * bytes written, or -EFAULT.
 */
static int64_t
control_out(struct vm *vm, uint8_t *host, size_t hl, uint64_t addr, int cloexec,
    int *flags)
{
	size_t off = 0;

	while (off + sizeof(struct cmsghdr) <= hl) {
		struct cmsghdr c;
		size_t i, nfd;
		int *fds;

		memcpy(&c, host + off, sizeof(c));
		if (c.cmsg_len < sizeof(c) || c.cmsg_len > hl - off)
			break;
		if (c.cmsg_level == SOL_SOCKET && c.cmsg_type == SCM_RIGHTS) {
			nfd = (c.cmsg_len - CMSG_LEN(0)) / sizeof(int);
			fds = (int *)(void *)(host + off + CMSG_LEN(0));
			for (i = 0; i < nfd; i++) {
				int hfd, gfd;

				memcpy(&hfd, &fds[i], sizeof(hfd));
				if ((gfd = fd_install(vm, hfd, cloexec)) < 0) {
					*flags |= MSG_CTRUNC;
					gfd = -1;
				}
				memcpy(&fds[i], &gfd, sizeof(gfd));
			}
		}
		off += CMSG_ALIGN(c.cmsg_len);
	}
	if (hl > 0 && vm_put(vm, addr, host, hl) != 0)
		return -EFAULT;
	return (int64_t)hl;
}

/* Close what a receive brought when the guest cannot take it. */
static void
control_drop(uint8_t *host, size_t hl)
{
	size_t off = 0;

	while (off + sizeof(struct cmsghdr) <= hl) {
		struct cmsghdr c;
		size_t i, nfd;

		memcpy(&c, host + off, sizeof(c));
		if (c.cmsg_len < sizeof(c) || c.cmsg_len > hl - off)
			break;
		if (c.cmsg_level == SOL_SOCKET && c.cmsg_type == SCM_RIGHTS) {
			nfd = (c.cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < nfd; i++) {
				int hfd;

				memcpy(&hfd,
				    host + off + CMSG_LEN(0) + i * sizeof(int),
				    sizeof(hfd));
				close(hfd);
			}
		}
		off += CMSG_ALIGN(c.cmsg_len);
	}
}

/*
 * One send: iov (n of them) to f, to the address at (addr, alen) if
 * any, with the host control bytes ctl. A blocking stream send goes on
 * until all is sent, as Linux's does, unless a wait is interrupted
 * after some was.
 */
static int64_t
send_host(struct vm *vm, struct vfd *f, struct iovec *iov, size_t n,
    uint64_t addr, uint64_t alen, uint8_t *ctl, size_t cl, int gflags)
{
	struct sockaddr_storage ss;
	char path[VM_PATH_MAX];
	struct msghdr m;
	socklen_t sl = 0;
	int64_t rc, done = 0;
	int back = -1, flags, dontwait;
	ssize_t w;

	path[0] = '\0';
	flags = (gflags & MSG_PASS & ~MSG_CMSG_CLOEXEC) | MSG_NOSIGNAL |
	    MSG_DONTWAIT;
	dontwait = (gflags & MSG_DONTWAIT) != 0;
	memset(&m, 0, sizeof(m));
	if (addr != 0) {
		if ((rc = addr_in(
		         vm, f, addr, alen, &ss, &sl, path, sizeof(path))) != 0)
			return rc;
		if ((rc = udp_out(vm, f, &ss)) != -ENOENT) {
			if (rc != 0)
				return rc;
			addr = 0; /* on the socket egress connected there */
		} else {
			if ((ss.ss_family == AF_INET ||
			        ss.ss_family == AF_INET6) &&
			    !addr_local(&ss))
				return egress_refused(vm, &ss);
			if (f->sock == SOCK_DGRAM && dns_dest(vm, &ss))
				return dns_serve(vm, f, iov, n);
			m.msg_name = &ss;
			m.msg_namelen = sl;
		}
	} else if (f->dns_tcp) {
		if ((rc = dns_tcp_serve(vm, f, iov, n)) != -ENOENT)
			return rc;
	} else if (dns_peer(vm, f))
		return dns_serve(vm, f, iov, n);
	m.msg_iov = iov;
	m.msg_iovlen = n;
	m.msg_control = cl ? ctl : NULL;
	m.msg_controllen = cl;
	for (;;) {
		if ((rc = sock_wait_park(vm, f, POLLOUT, dontwait, SO_SNDTIMEO,
		         done == 0)) != 0) {
			if (done > 0)
				break;
			return rc == SOCK_PARKED ? RET_PARKED : rc;
		}
		if (addr != 0 && path[0] != '\0' &&
		    (rc = unix_at(vm, path, 0, &ss, &sl, &back)) != 0)
			return done > 0 ? done : rc;
		m.msg_namelen = addr != 0 ? sl : 0;
		w = sendmsg(f->hostfd, &m, flags);
		rc = w >= 0 ? 0 : -errno;
		unix_done(back);
		back = -1;
		if (w >= 0) {
			done += w;
			/* The control bytes went with the first part. */
			m.msg_control = NULL;
			m.msg_controllen = 0;
			if (f->sock != SOCK_STREAM || dontwait ||
			    (fcntl(f->hostfd, F_GETFL) & O_NONBLOCK))
				break;
			while (m.msg_iovlen > 0 && (size_t)w >= iov->iov_len) {
				w -= (ssize_t)iov->iov_len;
				iov++;
				m.msg_iovlen--;
			}
			if (m.msg_iovlen == 0)
				break;
			iov->iov_base = (uint8_t *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
			m.msg_iov = iov;
			continue;
		}
		if (rc == -EPIPE && !(gflags & MSG_NOSIGNAL))
			vm_signal_raise(vm, SIGPIPE);
		if (rc != -EAGAIN || dontwait ||
		    (fcntl(f->hostfd, F_GETFL) & O_NONBLOCK))
			return done > 0 ? done : rc;
	}
	return done;
}

/* A send on a connection through egress is judged and counted around
 * the host's (sock_egress.c). */
static int64_t
do_send(struct vm *vm, struct vfd *f, struct iovec *iov, size_t n,
    uint64_t addr, uint64_t alen, uint8_t *ctl, size_t cl, int gflags)
{
	uint64_t reserved;
	int64_t rc;

	if (!f->egress)
		return send_host(vm, f, iov, n, addr, alen, ctl, cl, gflags);
	if ((rc = vm_egress_out_begin(vm, f, iov, n, &reserved)) != 0)
		return rc;
	rc = send_host(vm, f, iov, n, addr, alen, ctl, cl, gflags);
	vm_egress_out_end(vm, f, reserved, rc == RET_PARKED ? 0 : rc);
	return rc;
}

/* iov (n) cut to at most max bytes in all. */
static void
iov_cap(struct iovec *iov, size_t n, uint64_t max)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (iov[i].iov_len > max)
			iov[i].iov_len = max;
		max -= iov[i].iov_len;
	}
}

static uint64_t
iov_total(const struct iovec *iov, size_t n)
{
	uint64_t t = 0;
	size_t i;

	for (i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

/* recvmsg on f's host socket (MSG_DONTWAIT in flags); on a connection
 * through egress, cut to what its limit leaves and counted. As
 * recvmsg: -1 with errno set. */
static ssize_t
sock_recvmsg(struct vm *vm, struct vfd *f, struct msghdr *m, int flags)
{
	uint64_t allowed;
	int64_t rc;
	ssize_t r;

	if (!f->egress)
		return recvmsg(f->hostfd, m, flags);
	if ((rc = vm_egress_in_begin(
	         vm, f, iov_total(m->msg_iov, m->msg_iovlen), &allowed)) != 0) {
		errno = (int)-rc;
		return -1;
	}
	iov_cap(m->msg_iov, m->msg_iovlen, allowed);
	r = recvmsg(f->hostfd, m, flags);
	rc = r == -1 ? -errno : r;
	vm_egress_in_end(vm, f, allowed, (flags & MSG_PEEK) ? 0 : rc);
	if (rc < 0)
		errno = (int)-rc;
	return r;
}

/*
 * MSG_WAITALL on a stream: after got bytes into iov, the rest, waiting
 * between as the first did; less at the end of the stream, an error, a
 * signal or a parked wait (a short count, as Linux gives for a signal).
 * The bytes added.
 */
static ssize_t
recv_rest(struct vm *vm, struct vfd *f, struct iovec *iov, size_t n, size_t got,
    int dontwait)
{
	struct iovec *v = iov;
	size_t left = n;
	ssize_t more = 0, r;

	if (dontwait || (fcntl(f->hostfd, F_GETFL) & O_NONBLOCK))
		return 0;
	for (;;) {
		while (left > 0 && got >= v->iov_len) {
			got -= v->iov_len;
			v++;
			left--;
		}
		if (left == 0)
			return more;
		v->iov_base = (uint8_t *)v->iov_base + got;
		v->iov_len -= got;
		if (sock_wait_park(vm, f, POLLIN, 0, SO_RCVTIMEO, 0) != 0)
			return more;
		r = sock_recvmsg(vm, f,
		    &(struct msghdr){ .msg_iov = v, .msg_iovlen = left },
		    MSG_DONTWAIT);
		if (r == 0 || (r < 0 && errno != EAGAIN))
			return more;
		got = r > 0 ? (size_t)r : 0;
		more += r > 0 ? r : 0;
	}
}

/*
 * One receive into iov; the sender's address to (addr, alenp) when
 * addr is set; control bytes (up to clen) into the guest's cbuf, *clen
 * then what was written; *mflags the message's flags.
 */
static int64_t
do_recv(struct vm *vm, struct vfd *f, struct iovec *iov, size_t n,
    uint64_t addr, uint64_t alenp, uint64_t cbuf, uint64_t *clen, int gflags,
    int *mflags)
{
	struct sockaddr_storage ss;
	uint8_t ctl[CTL_MAX];
	struct msghdr m;
	int64_t rc;
	ssize_t r;
	int flags, dontwait;

	if (*clen > CTL_MAX)
		*clen = CTL_MAX;
	/* Never waits in the host (a thread of the same process may be
	 * the sender): MSG_WAITALL is this loop's, below. */
	flags = (gflags & MSG_PASS & ~MSG_WAITALL) | MSG_CMSG_CLOEXEC |
	    MSG_DONTWAIT;
	dontwait = (gflags & MSG_DONTWAIT) != 0;
	for (;;) {
		if ((rc = sock_wait(vm, f, POLLIN, dontwait, SO_RCVTIMEO)) != 0)
			return rc == SOCK_PARKED ? RET_PARKED : rc;
		memset(&m, 0, sizeof(m));
		memset(&ss, 0, sizeof(ss));
		m.msg_name = &ss;
		m.msg_namelen = sizeof(ss);
		m.msg_iov = iov;
		m.msg_iovlen = n;
		m.msg_control = *clen ? ctl : NULL;
		m.msg_controllen = *clen;
		if ((r = sock_recvmsg(vm, f, &m, flags)) >= 0)
			break;
		if (errno != EAGAIN || dontwait ||
		    (fcntl(f->hostfd, F_GETFL) & O_NONBLOCK))
			return -errno;
	}
	*mflags = m.msg_flags & ~MSG_CMSG_CLOEXEC;
	if (f->egress_peerlen != 0) {
		/* From the peer as the guest named it (198.18.x.y for a
		 * name), which resolvers and NTP clients check. */
		memcpy(&ss, f->egress_peer, f->egress_peerlen);
		m.msg_namelen = f->egress_peerlen;
	}
	if ((gflags & MSG_WAITALL) && f->sock == SOCK_STREAM && r > 0)
		r += recv_rest(vm, f, iov, n, (size_t)r, dontwait);
	if (addr != 0 &&
	    (rc = addr_out(vm, addr, alenp, &ss, m.msg_namelen)) != 0) {
		control_drop(ctl, m.msg_controllen);
		return rc;
	}
	if (m.msg_controllen > 0) {
		if ((rc = control_out(vm, ctl, m.msg_controllen, cbuf,
		         (gflags & MSG_CMSG_CLOEXEC) != 0, mflags)) < 0)
			return rc;
		*clen = (uint64_t)rc;
	} else
		*clen = 0;
	return r;
}

int64_t
sys_sendto(struct vm *vm, const uint64_t a[6])
{
	struct iovec iov;
	struct vfd *f;
	int64_t err;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if ((int64_t)a[2] < 0)
		return -EINVAL;
	iov.iov_len = a[2];
	iov.iov_base = NULL;
	if (a[2] != 0 && (iov.iov_base = vm_gptr(vm, a[1], a[2])) == NULL)
		return -EFAULT;
	err = do_send(vm, f, &iov, 1, a[4], a[5], NULL, 0, (int)a[3]);
	return err == RET_PARKED ? 0 : err;
}

int64_t
sys_recvfrom(struct vm *vm, const uint64_t a[6])
{
	struct iovec iov;
	struct vfd *f;
	uint64_t clen = 0;
	int64_t err;
	int mflags;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if ((int64_t)a[2] < 0)
		return -EINVAL;
	iov.iov_len = a[2];
	iov.iov_base = NULL;
	if (a[2] != 0 && (iov.iov_base = vm_gptr(vm, a[1], a[2])) == NULL)
		return -EFAULT;
	err = do_recv(vm, f, &iov, 1, a[4], a[5], 0, &clen,
	    (int)a[3] & ~MSG_CMSG_CLOEXEC, &mflags);
	return err == RET_PARKED ? 0 : err;
}

/* sendmsg; RET_PARKED when its thread was parked. */
static int64_t
msg_send(struct vm *vm, const uint64_t a[6])
{
	struct iovec *iov = NULL;
	uint8_t ctl[CTL_MAX];
	struct gmsghdr h;
	const void *g;
	struct vfd *f;
	size_t cl;
	int64_t rc;

	if ((f = sock_get(vm, a[0], &rc)) == NULL)
		return rc;
	if ((g = vm_gptr(vm, a[1], sizeof(h))) == NULL)
		return -EFAULT;
	memcpy(&h, g, sizeof(h));
	if (h.iovlen > IOV_MAX_G)
		return -EMSGSIZE;
	if ((iov = calloc(h.iovlen ? h.iovlen : 1, sizeof(*iov))) == NULL)
		return -ENOMEM;
	if ((rc = iov_in(vm, h.iov, h.iovlen, iov)) == 0 &&
	    (rc = control_in(vm, h.control, h.controllen, ctl, &cl)) == 0)
		rc = do_send(vm, f, iov, h.iovlen, h.name, h.namelen, ctl, cl,
		    (int)a[2]);
	free(iov);
	return rc;
}

/* recvmsg; RET_PARKED when its thread was parked. */
static int64_t
msg_recv(struct vm *vm, const uint64_t a[6])
{
	struct iovec *iov = NULL;
	struct gmsghdr h;
	uint64_t clen;
	uint8_t *g;
	struct vfd *f;
	int64_t rc;
	int mflags = 0;
	int32_t nl;

	if ((f = sock_get(vm, a[0], &rc)) == NULL)
		return rc;
	if ((g = vm_gptr(vm, a[1], sizeof(h))) == NULL)
		return -EFAULT;
	memcpy(&h, g, sizeof(h));
	if (h.iovlen > IOV_MAX_G)
		return -EMSGSIZE;
	if ((iov = calloc(h.iovlen ? h.iovlen : 1, sizeof(*iov))) == NULL)
		return -ENOMEM;
	if ((rc = iov_in(vm, h.iov, h.iovlen, iov)) != 0) {
		free(iov);
		return rc;
	}
	clen = h.control != 0 ? h.controllen : 0;
	/* The name's length travels inside the header: addr_out reads
	 * and writes it there. */
	nl = (int32_t)h.namelen;
	memcpy(g + offsetof(struct gmsghdr, namelen), &nl, sizeof(nl));
	rc = do_recv(vm, f, iov, h.iovlen, h.name,
	    h.name != 0 ? a[1] + offsetof(struct gmsghdr, namelen) : 0,
	    h.control, &clen, (int)a[2], &mflags);
	free(iov);
	if (rc < 0)
		return rc;
	/* The header again: the guest's memory may have moved under a
	 * parked call, and the name's length was written in place. */
	if ((g = vm_gptr(vm, a[1], sizeof(h))) == NULL)
		return -EFAULT;
	if (h.name == 0) {
		nl = 0;
		memcpy(g + offsetof(struct gmsghdr, namelen), &nl, sizeof(nl));
	}
	memcpy(g + offsetof(struct gmsghdr, controllen), &clen, sizeof(clen));
	memcpy(g + offsetof(struct gmsghdr, flags), &mflags, sizeof(mflags));
	return rc;
}

int64_t
sys_sendmsg(struct vm *vm, const uint64_t a[6])
{
	int64_t rc = msg_send(vm, a);

	return rc == RET_PARKED ? 0 : rc;
}

int64_t
sys_recvmsg(struct vm *vm, const uint64_t a[6])
{
	int64_t rc = msg_recv(vm, a);

	return rc == RET_PARKED ? 0 : rc;
}

/*
 * sendmmsg and recvmmsg: sendmsg and recvmsg over each header of the
 * vector (struct mmsghdr: a msghdr, then its msg_len), each answered in
 * its msg_len. Only the first may wait; the rest go as far as they can
 * at once (a short count, which callers take as Linux's own). A wait
 * parked before the first issues the whole call again. recvmmsg's
 * timeout is not applied (the socket's own SO_RCVTIMEO is).
 */
#define MMSG_SIZE 64 /* struct mmsghdr on x86-64 */
#define G_MSG_WAITFORONE 0x10000

static int64_t
mmsg(struct vm *vm, const uint64_t a[6], int recv)
{
	uint64_t i, n = (uint32_t)a[2], one[6];
	int64_t rc = 0;
	uint32_t len;

	if (n > IOV_MAX_G)
		n = IOV_MAX_G;
	for (i = 0; i < n; i++) {
		one[0] = a[0];
		one[1] = a[1] + i * MMSG_SIZE;
		one[2] = (uint32_t)a[3] & ~(uint32_t)G_MSG_WAITFORONE;
		if (i > 0)
			one[2] |= MSG_DONTWAIT;
		one[3] = one[4] = one[5] = 0;
		if (a[1] + i * MMSG_SIZE < a[1] ||
		    vm_gptr(vm, one[1], MMSG_SIZE) == NULL) {
			rc = -EFAULT;
			break;
		}
		if ((rc = recv ? msg_recv(vm, one) : msg_send(vm, one)) ==
		    RET_PARKED)
			return 0;
		if (rc < 0)
			break;
		len = (uint32_t)rc;
		if (vm_put(vm, one[1] + sizeof(struct gmsghdr), &len,
		        sizeof(len)) != 0) {
			rc = -EFAULT;
			break;
		}
	}
	/* Linux's answer: how many went, or the first one's error. */
	return i > 0 ? (int64_t)i : rc;
}

int64_t
sys_sendmmsg(struct vm *vm, const uint64_t a[6])
{
	return mmsg(vm, a, 0);
}

int64_t
sys_recvmmsg(struct vm *vm, const uint64_t a[6])
{
	return mmsg(vm, a, 1);
}

int64_t
sys_shutdown(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f;
	int64_t err;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if (a[1] > SHUT_RDWR)
		return -EINVAL;
	return shutdown(f->hostfd, (int)a[1]) == 0 ? 0 : -errno;
}

/* ---- names and options ----------------------------------------------- */

static int64_t
sock_name(struct vm *vm, const uint64_t a[6], int peer)
{
	struct sockaddr_storage ss;
	struct sockaddr_un un;
	socklen_t sl = sizeof(ss);
	struct vfd *f;
	int64_t err;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if (peer && f->egress_peerlen != 0)
		return addr_out(
		    vm, a[1], a[2], f->egress_peer, f->egress_peerlen);
	if ((peer ? getpeername(f->hostfd, (struct sockaddr *)&ss, &sl)
	          : getsockname(f->hostfd, (struct sockaddr *)&ss, &sl)) == -1)
		return -errno;
	/* The resolver's end says port 53, whatever the VMM bound. */
	if (peer && f->dns_tcp && ss.ss_family == AF_INET)
		((struct sockaddr_in *)&ss)->sin_port = htons(DNS_SERVER_PORT);
	else if (peer && f->dns_tcp && ss.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&ss)->sin6_port =
		    htons(DNS_SERVER_PORT);
	if (!peer && ss.ss_family == AF_UNIX && f->path != NULL &&
	    strlen(f->path) < sizeof(un.sun_path)) {
		memset(&un, 0, sizeof(un));
		un.sun_family = AF_UNIX;
		memcpy(un.sun_path, f->path, strlen(f->path) + 1);
		return addr_out(vm, a[1], a[2], &un,
		    (socklen_t)(offsetof(struct sockaddr_un, sun_path) +
		        strlen(f->path) + 1));
	}
	if (sl > sizeof(ss))
		sl = sizeof(ss);
	return addr_out(vm, a[1], a[2], &ss, sl);
}

int64_t
sys_getsockname(struct vm *vm, const uint64_t a[6])
{
	return sock_name(vm, a, 0);
}

int64_t
sys_getpeername(struct vm *vm, const uint64_t a[6])
{
	return sock_name(vm, a, 1);
}

/*
 * The options programs set and ask for, passed to the host as they are:
 * each changes only this socket, in the run's own namespace. The rest
 * answer ENOPROTOOPT (SO_PEERCRED, for one, would tell host pids).
 * get: the option may be read only.
 */
static const struct {
	int level, name, get;
} sock_opts[] = {
	{ SOL_SOCKET, SO_TYPE, 1 },
	{ SOL_SOCKET, SO_DOMAIN, 1 },
	{ SOL_SOCKET, SO_PROTOCOL, 1 },
	{ SOL_SOCKET, SO_ERROR, 1 },
	{ SOL_SOCKET, SO_ACCEPTCONN, 1 },
	{ SOL_SOCKET, SO_REUSEADDR, 0 },
	{ SOL_SOCKET, SO_REUSEPORT, 0 },
	{ SOL_SOCKET, SO_KEEPALIVE, 0 },
	{ SOL_SOCKET, SO_BROADCAST, 0 },
	{ SOL_SOCKET, SO_LINGER, 0 },
	{ SOL_SOCKET, SO_OOBINLINE, 0 },
	{ SOL_SOCKET, SO_RCVBUF, 0 },
	{ SOL_SOCKET, SO_SNDBUF, 0 },
	{ SOL_SOCKET, SO_RCVLOWAT, 0 },
	{ SOL_SOCKET, SO_RCVTIMEO, 0 },
	{ SOL_SOCKET, SO_SNDTIMEO, 0 },
	{ SOL_SOCKET, G_SO_RCVTIMEO_NEW, 0 },
	{ SOL_SOCKET, G_SO_SNDTIMEO_NEW, 0 },
	{ SOL_SOCKET, SO_PASSCRED, 1 },
	{ IPPROTO_TCP, TCP_NODELAY, 0 },
	{ IPPROTO_TCP, TCP_MAXSEG, 0 },
	{ IPPROTO_TCP, TCP_CORK, 0 },
	{ IPPROTO_TCP, TCP_KEEPIDLE, 0 },
	{ IPPROTO_TCP, TCP_KEEPINTVL, 0 },
	{ IPPROTO_TCP, TCP_KEEPCNT, 0 },
	{ IPPROTO_TCP, TCP_QUICKACK, 0 },
	{ IPPROTO_TCP, TCP_USER_TIMEOUT, 0 },
	{ IPPROTO_TCP, TCP_INFO, 1 },
	{ IPPROTO_IP, IP_TOS, 0 },
	{ IPPROTO_IP, IP_TTL, 0 },
	/* glibc's resolver sets it on its UDP socket and gives up without
	 * it; the error queue it fills is never read (no MSG_ERRQUEUE). */
	{ IPPROTO_IP, IP_RECVERR, 0 },
	{ IPPROTO_IPV6, IPV6_RECVERR, 0 },
	{ IPPROTO_IPV6, IPV6_V6ONLY, 0 },
	{ IPPROTO_IPV6, IPV6_TCLASS, 0 },
	{ IPPROTO_IPV6, IPV6_UNICAST_HOPS, 0 },
};

/* struct vfd's opts_set has a bit for each. */
_Static_assert(sizeof(sock_opts) / sizeof(sock_opts[0]) <= 64,
    "sock_opts has more options than opts_set has bits");

/* sock_opts' index of an option, or -1. */
static int
opt_index(uint64_t level, uint64_t name)
{
	size_t i;

	for (i = 0; i < sizeof(sock_opts) / sizeof(sock_opts[0]); i++)
		if ((uint64_t)sock_opts[i].level == level &&
		    (uint64_t)sock_opts[i].name == name)
			return (int)i;
	return -1;
}

/* 1: settable; 0: readable only; -1: neither. */
static int
opt_known(uint64_t level, uint64_t name)
{
	int i = opt_index(level, name);

	return i < 0 ? -1 : !sock_opts[i].get;
}

/*
 * The options the guest set on from onto to (a connection made for it
 * elsewhere); one the other family lacks fails and is let go. Only
 * those it set: writing back a default locks it (SO_SNDBUF set, even to
 * what it was, ends the kernel's tuning of the buffer, and a stream to
 * a server through egress ran at 32 KiB a round trip, bench/net.sh).
 */
static void
opts_copy(const struct vfd *from, int to)
{
	uint8_t v[OPT_MAX];
	socklen_t l;
	size_t i;
	int n;

	for (i = 0; i < sizeof(sock_opts) / sizeof(sock_opts[0]); i++) {
		if (!(from->opts_set & (UINT64_C(1) << i)))
			continue;
		l = sizeof(v);
		if (getsockopt(from->hostfd, sock_opts[i].level,
		        sock_opts[i].name, v, &l) != 0 ||
		    l > sizeof(v))
			continue;
		/* The kernel keeps twice what was asked of a buffer and
		 * reads that back: ask for half, as the guest did. */
		if (sock_opts[i].level == SOL_SOCKET &&
		    (sock_opts[i].name == SO_SNDBUF ||
		        sock_opts[i].name == SO_RCVBUF) &&
		    l == sizeof(n)) {
			memcpy(&n, v, sizeof(n));
			n /= 2;
			memcpy(v, &n, sizeof(n));
		}
		(void)setsockopt(
		    to, sock_opts[i].level, sock_opts[i].name, v, l);
	}
}

int64_t
sys_setsockopt(struct vm *vm, const uint64_t a[6])
{
	uint8_t v[OPT_MAX];
	const void *g = NULL;
	struct vfd *f;
	int64_t err;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if ((int32_t)a[4] < 0)
		return -EINVAL;
	if (opt_known(a[1], a[2]) != 1)
		return -ENOPROTOOPT;
	if (a[4] > OPT_MAX)
		return -EINVAL;
	if (a[4] != 0 && (g = vm_gptr(vm, a[3], a[4])) == NULL)
		return -EFAULT;
	if (g != NULL)
		memcpy(v, g, a[4]);
	if (setsockopt(f->hostfd, (int)a[1], (int)a[2], g ? v : NULL,
	        (socklen_t)a[4]) == -1)
		return -errno;
	f->opts_set |= UINT64_C(1) << opt_index(a[1], a[2]);
	return 0;
}

int64_t
sys_getsockopt(struct vm *vm, const uint64_t a[6])
{
	uint8_t v[256];
	struct vfd *f;
	socklen_t hl;
	int32_t len;
	int64_t err;
	void *g;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if (opt_known(a[1], a[2]) < 0)
		return -ENOPROTOOPT;
	if ((g = vm_gptr(vm, a[4], sizeof(len))) == NULL)
		return -EFAULT;
	memcpy(&len, g, sizeof(len));
	if (len < 0)
		return -EINVAL;
	hl = (socklen_t)len < sizeof(v) ? (socklen_t)len : sizeof(v);
	memset(v, 0, sizeof(v));
	if (getsockopt(f->hostfd, (int)a[1], (int)a[2], v, &hl) == -1)
		return -errno;
	if (hl > sizeof(v))
		hl = sizeof(v);
	if (hl > 0 && vm_put(vm, a[3], v, hl) != 0)
		return -EFAULT;
	len = (int32_t)hl;
	memcpy(g, &len, sizeof(len));
	return 0;
}

/*
 * A guest's connections through egress, once made (docs/egress.md,
 * "Names and connections"): the connected socket the egress process
 * opened is the guest's (sys_socket.c, connect_by_name), and every
 * send and receive on it is served here first, wherever it comes from
 * (send, sendto, sendmsg, sendmmsg, write, writev, sendfile; recv*,
 * read, readv).
 *
 *  - Its first bytes are judged before they go: a TLS handshake record
 *    (on any port) must be a ClientHello whose server_name is the name
 *    keep resolved and egress connected; on port 443 the bytes must be
 *    one. Bytes are held (and the guest told they were sent) until the
 *    record is whole (tls_hello.h: at most 16 KiB and its header), then
 *    sent together, or refused: EACCES, the connection shut, the run's
 *    result names "name:port", the vmm audits why.
 *  - Bytes out and in are counted for the run's whole process tree
 *    (proc.c's shared counters), and the run's limit (cfg->egress_max,
 *    the policy's `egress bytes`) is taken before each host call: a
 *    send that would pass it fails whole, a receive is cut to what is
 *    left and fails once nothing is: ECONNRESET, the connection shut.
 */
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <strings.h>
#include <unistd.h>

#include "host/vmm/dns.h"
#include "host/vmm/tls_hello.h"
#include "host/vmm/vm_int.h"

#define LOAD(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define CAS(p, old, new)                                                       \
	__atomic_compare_exchange_n(                                           \
	    p, old, new, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)
#define ADD(p, v) __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST)
#define SUB(p, v) __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST)

#define TLS_PORT 443
#define TLS_HANDSHAKE_RECORD 22 /* the first byte of any ClientHello */
#define FLUSH_WAIT_MS 1000 /* per wait for room to send the held bytes */
#define FLUSH_WAITS 30

/* The name keep resolved for f's address, "" when the table lost it. */
static const char *
conn_name(struct vm *vm, const struct vfd *f)
{
	const char *n = NULL;

	if (vm->cfg->dns_table != NULL)
		n = dns_table_name(vm->cfg->dns_table, f->egress_addr);
	return n != NULL ? n : "";
}

static void
hello_free(struct vfd *f)
{
	free(f->hello);
	f->hello = NULL;
	f->hello_len = 0;
}

/* The VMM shuts f itself: the run's result names it, the vmm audits
 * why, and every later call on it answers err. -err. */
static int64_t
conn_refuse(struct vm *vm, struct vfd *f, int why, const char *sni, int err)
{
	char what[VMM_EGRESS_WHAT];
	const char *name = conn_name(vm, f);

	snprintf(what, sizeof(what), "%s:%u", name, (unsigned)f->egress_port);
	vm_proc_egress_refused(vm, what);
	if (vm->cfg->egress_report != NULL)
		vm->cfg->egress_report(
		    vm->cfg->fetch_arg, why, name, f->egress_port, sni);
	(void)shutdown(f->hostfd, SHUT_RDWR);
	f->egress_shut = err;
	f->egress_first = 0;
	hello_free(f);
	return -err;
}

static uint64_t
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* n bytes' share of the period, rounded up (taking) or down. */
static uint64_t
budget_ns(uint64_t n, uint64_t bytes, uint64_t period, int up)
{
	unsigned __int128 v = (unsigned __int128)n * period;

	return (uint64_t)((v + (up ? bytes - 1 : 0)) / bytes);
}

uint64_t
vmm_egress_budget_take(struct vmm_egress_budget *b, uint64_t want, int partial)
{
	uint64_t bytes, period, now, tat, base, room, n;

	if (b == NULL || want == 0)
		return want;
	bytes = LOAD(&b->bytes);
	period = LOAD(&b->period_ns);
	if (bytes == 0 || period == 0)
		return want;
	now = mono_ns();
	tat = LOAD(&b->tat_ns);
	do {
		base = tat > now ? tat : now;
		if (base - now >= period)
			return 0;
		/* What the bucket holds now, in bytes. */
		room = (uint64_t)((unsigned __int128)(period - (base - now)) *
		    bytes / period);
		n = room >= want ? want : partial ? room : 0;
		if (n == 0)
			return 0;
	} while (!CAS(&b->tat_ns, &tat, base + budget_ns(n, bytes, period, 1)));
	return n;
}

void
vmm_egress_budget_give(struct vmm_egress_budget *b, uint64_t n)
{
	uint64_t bytes, period, tat, back;

	if (b == NULL || n == 0 || (bytes = LOAD(&b->bytes)) == 0 ||
	    (period = LOAD(&b->period_ns)) == 0)
		return;
	back = budget_ns(n, bytes, period, 0);
	tat = LOAD(&b->tat_ns);
	while (!CAS(&b->tat_ns, &tat, tat > back ? tat - back : 0))
		;
}

/* Take want bytes of the run's allowance and its principal's budget
 * (with partial, as many as both have left): how many were taken, 0
 * when none are left, *why then VMM_NET_BYTES or VMM_NET_BUDGET. */
static uint64_t
allowance_take(struct vm *vm, uint64_t want, int partial, int *why)
{
	struct vmm_egress_bytes *c = vm_egress_counters(vm);
	uint64_t max = vm->cfg->egress_max, used, n = want, m;

	*why = VMM_NET_BYTES;
	if (want == 0)
		return 0;
	if (max != 0) {
		used = LOAD(&c->used);
		do {
			if (used >= max)
				return 0;
			n = max - used >= want ? want
			    : partial          ? max - used
			                       : 0;
			if (n == 0)
				return 0;
		} while (!CAS(&c->used, &used, used + n));
	}
	m = vmm_egress_budget_take(vm->cfg->egress_budget, n, partial);
	if (m < n && max != 0)
		SUB(&c->used, n - m);
	if (m == 0)
		*why = VMM_NET_BUDGET;
	return m;
}

static void
allowance_give(struct vm *vm, uint64_t n)
{
	if (vm->cfg->egress_max != 0 && n > 0)
		SUB(&vm_egress_counters(vm)->used, n);
	vmm_egress_budget_give(vm->cfg->egress_budget, n);
}

static int64_t
limit_refuse(struct vm *vm, struct vfd *f, int why)
{
	return conn_refuse(vm, f, why, "", ECONNRESET);
}

/* Send the held bytes, all of them (a connection's first: its buffer
 * is empty, so there is room at once but for a pathological peer).
 * 0 or -errno. */
static int64_t
held_send(struct vm *vm, struct vfd *f)
{
	struct pollfd p = { .fd = f->hostfd, .events = POLLOUT };
	uint32_t off = 0;
	int waits = 0, why;
	ssize_t w;

	if (f->hello_len == 0)
		return 0;
	if (allowance_take(vm, f->hello_len, 0, &why) != f->hello_len)
		return limit_refuse(vm, f, why);
	while (off < f->hello_len) {
		w = send(f->hostfd, f->hello + off, f->hello_len - off,
		    MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			off += (uint32_t)w;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && errno == EAGAIN && ++waits <= FLUSH_WAITS &&
		    poll(&p, 1, FLUSH_WAIT_MS) >= 0)
			continue;
		allowance_give(vm, f->hello_len - off);
		ADD(&vm_egress_counters(vm)->out, off);
		hello_free(f);
		return w == -1 ? -errno : -EIO;
	}
	ADD(&vm_egress_counters(vm)->out, off);
	hello_free(f);
	return 0;
}

/*
 * The connection's first bytes: iov (n) joins what is held, up to one
 * TLS record; judged once the record is whole (or the bytes are no
 * TLS). The bytes taken from iov, or -errno.
 */
static int64_t
first_bytes(struct vm *vm, struct vfd *f, const struct iovec *iov, size_t n)
{
	char sni[TLS_SNI_MAX + 1];
	const char *name;
	enum tls_hello_result r;
	size_t need, taken = 0, i, take;
	int64_t rc;

	if (f->hello == NULL && (f->hello = malloc(TLS_HELLO_MAX)) == NULL)
		return -ENOMEM;
	for (i = 0; i < n && f->hello_len < TLS_HELLO_MAX; i++) {
		take = iov[i].iov_len;
		if (take > TLS_HELLO_MAX - f->hello_len)
			take = TLS_HELLO_MAX - f->hello_len;
		if (take > 0)
			memcpy(f->hello + f->hello_len, iov[i].iov_base, take);
		f->hello_len += (uint32_t)take;
		taken += take;
	}
	if (taken == 0)
		return 0; /* an empty send: nothing to judge yet */
	r = tls_hello_parse(f->hello, f->hello_len, sni, &need);
	name = conn_name(vm, f);
	switch (r) {
	case TLS_HELLO_MORE:
		return (int64_t)taken; /* held: the rest is to come */
	case TLS_HELLO_SNI:
		if (name[0] == '\0' || strcasecmp(sni, name) != 0)
			return conn_refuse(
			    vm, f, VMM_NET_TLS_NAME, sni, EACCES);
		break;
	case TLS_HELLO_NO_SNI:
		return conn_refuse(vm, f, VMM_NET_TLS_NO_NAME, "", EACCES);
	case TLS_HELLO_MALFORMED:
		return conn_refuse(vm, f, VMM_NET_TLS_MALFORMED, "", EACCES);
	case TLS_HELLO_NOT_TLS:
		if (f->egress_port == TLS_PORT)
			return conn_refuse(vm, f, VMM_NET_NOT_TLS, "", EACCES);
		break;
	}
	f->egress_first = 0;
	if ((rc = held_send(vm, f)) != 0)
		return rc;
	return (int64_t)taken;
}

int64_t
vm_egress_out_begin(struct vm *vm, struct vfd *f, const struct iovec *iov,
    size_t n, uint64_t *reserved)
{
	uint64_t total = 0;
	size_t i;
	int why;

	*reserved = 0;
	if (f->egress_shut)
		return -f->egress_shut;
	if (f->egress_first) {
		uint8_t b = 0;

		for (i = 0; i < n && iov[i].iov_len == 0; i++)
			;
		if (i < n)
			memcpy(&b, iov[i].iov_base, 1);
		/* Off 443, a first byte that starts no handshake record is
		 * no TLS (tls_hello_parse judges so on that byte): nothing
		 * to hold, and the bytes go as any later ones do. */
		if (i == n || f->hello_len != 0 || f->egress_port == TLS_PORT ||
		    b == TLS_HANDSHAKE_RECORD)
			return first_bytes(vm, f, iov, n);
		f->egress_first = 0;
	}
	for (i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (total > 0 && (*reserved = allowance_take(vm, total, 0, &why)) == 0)
		return limit_refuse(vm, f, why);
	return 0;
}

void
vm_egress_out_end(struct vm *vm, struct vfd *f, uint64_t reserved, int64_t sent)
{
	uint64_t s = sent > 0 ? (uint64_t)sent : 0;

	(void)f;
	if (s > reserved && vm->cfg->egress_max != 0)
		s = reserved; /* cannot be: a send moves no more than asked */
	if (s > 0)
		ADD(&vm_egress_counters(vm)->out, s);
	allowance_give(vm, reserved > s ? reserved - s : 0);
}

int64_t
vm_egress_in_begin(
    struct vm *vm, struct vfd *f, uint64_t want, uint64_t *allowed)
{
	int why;

	*allowed = 0;
	if (f->egress_shut)
		return -f->egress_shut;
	if (want == 0)
		return 0;
	if ((*allowed = allowance_take(vm, want, 1, &why)) == 0)
		return limit_refuse(vm, f, why);
	return 0;
}

void
vm_egress_in_end(struct vm *vm, struct vfd *f, uint64_t allowed, int64_t got)
{
	uint64_t g = got > 0 ? (uint64_t)got : 0;

	(void)f;
	if (g > allowed && vm->cfg->egress_max != 0)
		g = allowed;
	if (g > 0)
		ADD(&vm_egress_counters(vm)->in, g);
	allowance_give(vm, allowed > g ? allowed - g : 0);
}

int64_t
vm_egress_read(struct vm *vm, struct vfd *f, void *g, uint64_t len)
{
	uint64_t allowed;
	int64_t rc;
	ssize_t n;

	if ((rc = vm_egress_in_begin(vm, f, len, &allowed)) != 0)
		return rc;
	if (len > 0 && allowed < len)
		len = allowed;
	n = read(f->hostfd, g, len);
	rc = n == -1 ? -errno : n;
	vm_egress_in_end(vm, f, allowed, rc);
	return rc;
}

int64_t
vm_egress_write(struct vm *vm, struct vfd *f, const void *g, uint64_t len)
{
	struct iovec iov = { .iov_base = (void *)(uintptr_t)g, .iov_len = len };
	uint64_t reserved;
	int64_t rc;
	ssize_t n;

	if ((rc = vm_egress_out_begin(vm, f, &iov, 1, &reserved)) != 0)
		return rc;
	n = send(f->hostfd, g, len, MSG_NOSIGNAL);
	rc = n == -1 ? -errno : n;
	vm_egress_out_end(vm, f, reserved, rc);
	/* No reader: EPIPE and SIGPIPE, as a write to any socket. */
	if (rc == -EPIPE)
		vm_signal_raise(vm, SIGPIPE);
	return rc;
}

int64_t
vm_egress_writev(struct vm *vm, struct vfd *f, const uint64_t *v, uint64_t cnt)
{
	struct iovec *iov;
	uint64_t i, base, len, reserved;
	int64_t rc;
	ssize_t n;

	if ((iov = calloc(cnt ? cnt : 1, sizeof(*iov))) == NULL)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		memcpy(&base, &v[2 * i], 8);
		memcpy(&len, &v[2 * i + 1], 8);
		if ((int64_t)len < 0) {
			free(iov);
			return -EINVAL;
		}
		iov[i].iov_len = len;
		if (len != 0 &&
		    (iov[i].iov_base = vm_gptr(vm, base, len)) == NULL) {
			free(iov);
			return -EFAULT;
		}
	}
	if ((rc = vm_egress_out_begin(vm, f, iov, cnt, &reserved)) == 0) {
		n = sendmsg(f->hostfd,
		    &(struct msghdr){ .msg_iov = iov, .msg_iovlen = cnt },
		    MSG_NOSIGNAL);
		rc = n == -1 ? -errno : n;
		vm_egress_out_end(vm, f, reserved, rc);
		if (rc == -EPIPE)
			vm_signal_raise(vm, SIGPIPE);
	}
	free(iov);
	return rc;
}

/*
 * Socket pairs (docs/vmm.md, "Processes"): socketpair(AF_UNIX) is a host
 * socketpair behind two guest descriptors, read, written, polled and
 * passed across fork and execve as a pipe's ends are (fs.c). It reaches
 * nothing outside the run: a pair is connected only to itself, and no
 * call here names an address, so the rule that a guest reaches the
 * network only through KEEP_SYS_FETCH stands (socket, connect, bind and
 * the rest stay refused). libuv makes its child processes' standard
 * streams so (node's child_process), and Python's socket.socketpair.
 *
 * Descriptors are never passed through a pair (no sendmsg or recvmsg):
 * SCM_RIGHTS would carry a host descriptor between vm processes.
 */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#define G_SOCK_NONBLOCK 04000
#define G_SOCK_CLOEXEC 02000000

/* Descriptor fd if it is a socketpair's end; else NULL with *err set. */
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

/*
 * An unnamed AF_UNIX address, as Linux gives for either end of a pair:
 * the family alone. *addrlen (in and out) bounds what is written.
 */
static int64_t
put_unnamed(struct vm *vm, uint64_t addr, uint64_t lenp)
{
	uint16_t fam = AF_UNIX;
	int32_t len;
	void *g;

	if ((g = vm_gptr(vm, lenp, sizeof(len))) == NULL)
		return -EFAULT;
	memcpy(&len, g, sizeof(len));
	if (len < 0)
		return -EINVAL;
	if (len > 0 &&
	    vm_put(vm, addr, &fam,
	        (size_t)len < sizeof(fam) ? (size_t)len : sizeof(fam)) != 0)
		return -EFAULT;
	len = (int32_t)sizeof(fam);
	memcpy(g, &len, sizeof(len));
	return 0;
}

int64_t
sys_getsockname(struct vm *vm, const uint64_t a[6])
{
	int64_t err;

	if (sock_get(vm, a[0], &err) == NULL)
		return err;
	return put_unnamed(vm, a[1], a[2]);
}

/* A pair's peer is as unnamed as its own end. */
int64_t
sys_getpeername(struct vm *vm, const uint64_t a[6])
{
	return sys_getsockname(vm, a);
}

/* What a program asks of a pair to learn what it is (libuv's
 * uv_guess_handle); the rest is ENOPROTOOPT. */
int64_t
sys_getsockopt(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f;
	int32_t v, len;
	int64_t err;
	void *g;

	if ((f = sock_get(vm, a[0], &err)) == NULL)
		return err;
	if (a[1] != SOL_SOCKET)
		return -ENOPROTOOPT;
	switch (a[2]) {
	case SO_TYPE:
		v = f->sock;
		break;
	case SO_DOMAIN:
		v = AF_UNIX;
		break;
	case SO_PROTOCOL:
	case SO_ERROR:
	case SO_ACCEPTCONN:
		v = 0;
		break;
	default:
		return -ENOPROTOOPT;
	}
	if ((g = vm_gptr(vm, a[4], sizeof(len))) == NULL)
		return -EFAULT;
	memcpy(&len, g, sizeof(len));
	if (len < 0)
		return -EINVAL;
	if ((size_t)len > sizeof(v))
		len = (int32_t)sizeof(v);
	if (vm_put(vm, a[3], &v, (size_t)len) != 0)
		return -EFAULT;
	memcpy(g, &len, sizeof(len));
	return 0;
}

/* send and recv without an address or flags: a write and a read. */
int64_t
sys_sendto(struct vm *vm, const uint64_t a[6])
{
	uint64_t w[6] = { a[0], a[1], a[2], 0, 0, 0 };
	int64_t err;

	if (sock_get(vm, a[0], &err) == NULL)
		return err;
	if (a[3] != 0 || a[4] != 0)
		return a[4] != 0 ? -EISCONN : -EOPNOTSUPP;
	return sys_write(vm, w);
}

int64_t
sys_recvfrom(struct vm *vm, const uint64_t a[6])
{
	uint64_t r[6] = { a[0], a[1], a[2], 0, 0, 0 };
	int64_t err;

	if (sock_get(vm, a[0], &err) == NULL)
		return err;
	if (a[3] != 0)
		return -EOPNOTSUPP;
	if (a[4] != 0 && put_unnamed(vm, a[4], a[5]) != 0)
		return -EFAULT;
	return sys_read(vm, r);
}

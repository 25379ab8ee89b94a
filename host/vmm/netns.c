/*
 * A guest's network (docs/vmm.md, "Sockets"): a network namespace of the
 * process's own with nothing but `lo`, where its sockets live. Here, not
 * in host/vm_confine.c, because keep run (linked without keepd's
 * libraries) makes one too.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/dns.h"
#include "host/vmm/vmm.h"

/* text into one of this process's /proc files: 0 or -1 (errno). */
static int
proc_write(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd, saved;
	ssize_t w;

	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	w = write(fd, text, len);
	saved = errno;
	close(fd);
	errno = saved;
	return w == (ssize_t)len ? 0 : -1;
}

/* The namespace's loopback up: 0 or -1 (errno). */
static int
lo_up(void)
{
	struct ifreq ifr;
	int s, rc = -1, saved;

	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	strlcpy(ifr.ifr_name, "lo", sizeof(ifr.ifr_name));
	if (ioctl(s, SIOCGIFFLAGS, &ifr) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	saved = errno;
	close(s);
	errno = saved;
	return rc;
}

/* Every capability gone: those a new user namespace gave its creator
 * are needed only to bring lo up. */
static int
caps_none(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	memset(d, 0, sizeof(d));
	return (int)syscall(SYS_capset, &h, d);
}

int
vmm_netns_enter(int resolver, char *err, size_t errlen)
{
	char map[64];
	uid_t uid;
	gid_t gid;
	int fd, userns = 0;

	/*
	 * A user namespace needs its maps written through /proc, which a
	 * chrooted vmm (keepd started as root) cannot reach; and Linux
	 * refuses a user namespace to a chrooted process anyway.
	 */
	if ((fd = open("/proc/self/uid_map", O_PATH | O_CLOEXEC)) == -1) {
		snprintf(err, errlen,
		    "no /proc here (a chroot): no network "
		    "namespace of its own");
		return 0;
	}
	close(fd);
	uid = geteuid();
	gid = getegid();
	if (uid != 0 || unshare(CLONE_NEWNET) == -1) {
		if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == -1) {
			snprintf(err, errlen, "unshare: %s", strerror(errno));
			return 0;
		}
		/* Mapped to itself, so that the trap platform's stub can
		 * still have a user namespace of its own beneath this one
		 * (Linux wants its creator mapped), and files keep their
		 * owner. */
		userns = 1;
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid,
		    (unsigned)uid);
		if (proc_write("/proc/self/uid_map", map) == -1 ||
		    proc_write("/proc/self/setgroups", "deny") == -1) {
			snprintf(err, errlen, "uid_map: %s", strerror(errno));
			return -1;
		}
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid,
		    (unsigned)gid);
		if (proc_write("/proc/self/gid_map", map) == -1) {
			snprintf(err, errlen, "gid_map: %s", strerror(errno));
			return -1;
		}
	}
	if (lo_up() == -1) {
		snprintf(err, errlen, "lo: %s", strerror(errno));
		return -1;
	}
	/* No resolver is no name resolved, as before: not a failure. */
	if (resolver)
		(void)vmm_dns_open();
	if (userns && caps_none() == -1) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	return 1;
}

/* ---- the guest's resolver ------------------------------------------------ */

/* What vmm_dns_open made for this process's run, until vmm_dns_take. */
static struct {
	int fd;
	struct dns_table *table;
} resolver = { -1, NULL };

int
vmm_dns_open(void)
{
	struct sockaddr_in sin;
	struct dns_table *t;
	int s, one = 1, zero = 0, saved;

	if (resolver.table != NULL)
		return 0;
	if ((s = socket(
	         AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0)) == -1)
		return -1;
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(DNS_SERVER_PORT);
	sin.sin_addr.s_addr = htonl(DNS_SERVER_ADDR);
	/* Nothing is ever read from it (the VMM answers a query when the
	 * guest sends it, host/vmm/sys_socket.c): a small buffer bounds
	 * what a stray datagram holds. */
	if (setsockopt(s, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)) == -1 ||
	    setsockopt(s, SOL_SOCKET, SO_RCVBUF, &zero, sizeof(zero)) == -1 ||
	    bind(s, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		goto fail;
	t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (t == MAP_FAILED)
		goto fail;
	resolver.fd = s;
	resolver.table = t;
	return 0;
fail:
	saved = errno;
	close(s);
	errno = saved;
	return -1;
}

void
vmm_dns_take(struct vmm_config *cfg)
{
	cfg->dns_table = resolver.table;
	cfg->dns_fd = resolver.fd;
	resolver.table = NULL;
	resolver.fd = -1;
}

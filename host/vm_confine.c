/* The confinement of a `keepd: vm` process (host/vm_confine.h). */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/capability.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <sys/prctl.h>
#include <grp.h>

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "host/proc.h"
#include "host/seccomp_filters.h"
#include "host/vm_confine.h"
#include "host/vmm/vmm.h"
#include "lib/landlock.h"
#include "lib/log.h"

int
vm_confine_net(char *err, size_t errlen)
{
	return vmm_netns_enter(1, err, errlen);
}

int
vm_confine_net_join(int userfd, int netfd, int ws_fd, char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	/* The user namespace first: it owns the network namespace, and
	 * its owner (this process's user) has every capability in it. */
	if (userfd >= 0 && setns(userfd, CLONE_NEWUSER) == -1) {
		snprintf(err, errlen, "setns user: %s", strerror(errno));
		return -1;
	}
	if (setns(netfd, CLONE_NEWNET) == -1) {
		snprintf(err, errlen, "setns net: %s", strerror(errno));
		return -1;
	}
	/*
	 * The root at its workspace while the user namespace lends
	 * CAP_SYS_CHROOT: a path the host itself resolves for the guest
	 * (an AF_UNIX name at connect, whose last component the guest may
	 * swap for a symlink after the VMM looked) then stays in it, never
	 * another sandbox's workspace under the state directory.
	 */
	if (userfd >= 0 && ws_fd >= 0 &&
	    (fchdir(ws_fd) == -1 || chroot(".") == -1 || chdir("/") == -1)) {
		snprintf(err, errlen, "chroot: %s", strerror(errno));
		return -1;
	}
	/* The guest's resolver, bound to port 53 while the user namespace
	 * lends CAP_NET_BIND_SERVICE; without one, names do not resolve. */
	(void)vmm_dns_open();
	memset(d, 0, sizeof(d));
	if (userfd >= 0 && syscall(SYS_capset, &h, d) == -1) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	return 1;
}

int
vm_confine_port_join(int userfd, int netfd, char *err, size_t errlen)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (userfd >= 0 && setns(userfd, CLONE_NEWUSER) == -1) {
		snprintf(err, errlen, "setns user: %s", strerror(errno));
		return -1;
	}
	if (setns(netfd, CLONE_NEWNET) == -1) {
		snprintf(err, errlen, "setns net: %s", strerror(errno));
		return -1;
	}
	/* It only connects: nothing the user namespace lends is needed. */
	memset(d, 0, sizeof(d));
	if (userfd >= 0 && syscall(SYS_capset, &h, d) == -1) {
		snprintf(err, errlen, "capset: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- the namespace maker --------------------------------------------- */

/*
 * A child of the maker: the namespaces, made at once; then, when the
 * maker says go (a byte on go), their descriptors sent to the vmm on
 * fd; exits. Made ahead of the request it answers, so a sandbox's first
 * run does not wait for them (copy_net_ns and the maps: about 0.5 ms).
 */
static void __attribute__((noreturn)) maker_one(int fd, int go)
{
	char err[160], b = 'n';
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct iovec iov = { &b, 1 };
	struct msghdr m;
	int ns[2];

	/* Its user changed from root, the process is not dumpable, and its
	 * /proc files are root's: its own maps could not be written. This
	 * child lives for the few calls that make them. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) == -1 ||
	    vmm_netns_enter(0, err, sizeof(err)) != 1) {
		log_warnx("netns: %s", err);
		_exit(1);
	}
	if ((ns[0] = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (ns[1] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1) {
		log_warn("netns: /proc/self/ns");
		_exit(1);
	}
	/* The maker gone (its end of go closed): nothing to answer. */
	if (recv(go, &b, 1, 0) != 1)
		_exit(1);
	b = 'n';
	memset(&m, 0, sizeof(m));
	memset(&u, 0, sizeof(u));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	u.h.cmsg_level = SOL_SOCKET;
	u.h.cmsg_type = SCM_RIGHTS;
	u.h.cmsg_len = CMSG_LEN(2 * sizeof(int));
	memcpy(CMSG_DATA(&u.h), ns, sizeof(ns));
	_exit(sendmsg(fd, &m, 0) == 1 ? 0 : 1);
}

/* The next child, ready before it is asked for; -1 when fork fails
 * (the request then makes one). */
static pid_t
maker_ahead(int fd, int go[2])
{
	pid_t pid = fork();

	if (pid == 0) {
		close(go[0]);
		maker_one(fd, go[1]);
	}
	return pid;
}

/* The maker's loop: one request byte in, one child's answer out (its
 * two descriptors, or 'x' alone). Ends with the vmm (EOF). */
static void __attribute__((noreturn)) maker_loop(int fd, int go[2])
{
	int st;
	char b;
	pid_t pid = maker_ahead(fd, go);

	for (;;) {
		if (recv(fd, &b, 1, 0) != 1)
			_exit(0);
		if (pid == -1)
			pid = maker_ahead(fd, go);
		b = 'g';
		if (pid == -1 || send(go[0], &b, 1, MSG_NOSIGNAL) != 1 ||
		    waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
		    WEXITSTATUS(st) != 0) {
			b = 'x';
			(void)send(fd, &b, 1, MSG_NOSIGNAL);
		}
		pid = maker_ahead(fd, go);
	}
}

int
vm_netns_maker_start(const char *user)
{
	struct passwd *pw = NULL;
	int sv[2], go[2];
	pid_t pid;

	if (geteuid() == 0 && (user == NULL || (pw = getpwnam(user)) == NULL))
		return -1; /* a root vmm's vm processes would be root */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	if ((pid = fork()) == -1) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid > 0) {
		close(sv[1]);
		return sv[0];
	}
	/* Nothing of the vmm's: its links, /dev/kvm. go: the maker's word
	 * to the child it made ahead (maker_loop). */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (dup2(sv[1], 3) == -1 ||
	    socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, go) == -1 ||
	    (go[0] = fcntl(go[0], F_DUPFD_CLOEXEC, 16)) == -1 ||
	    (go[1] = fcntl(go[1], F_DUPFD_CLOEXEC, 16)) == -1 ||
	    dup2(go[0], 4) == -1 || dup2(go[1], 5) == -1)
		_exit(1);
	closefrom(6);
	go[0] = 4;
	go[1] = 5;
	setproctitle("netns");
	if (pw != NULL &&
	    (setgroups(1, &pw->pw_gid) == -1 ||
	        setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
	        setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1)) {
		log_warn("netns: user %s", user);
		_exit(1);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    seccomp_filter_install(&seccomp_netns) == -1) {
		log_warn("netns: NO_NEW_PRIVS, seccomp");
		_exit(1);
	}
	maker_loop(3, go);
}

int
vm_netns_make(int maker, int *userfd, int *netfd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(2 * sizeof(int))];
	} u;
	struct pollfd p = { .fd = maker, .events = POLLIN };
	char b = 'n';
	struct iovec iov = { &b, 1 };
	struct msghdr m;
	int ns[2];

	*userfd = *netfd = -1;
	if (maker < 0 || send(maker, &b, 1, MSG_NOSIGNAL) != 1 ||
	    poll(&p, 1, VM_NETNS_WAIT_MS) != 1)
		return -1;
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	if (recvmsg(maker, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT) != 1)
		return -1;
	if (m.msg_controllen < CMSG_LEN(2 * sizeof(int)) ||
	    u.h.cmsg_level != SOL_SOCKET || u.h.cmsg_type != SCM_RIGHTS ||
	    u.h.cmsg_len != CMSG_LEN(2 * sizeof(int)))
		return -1;
	memcpy(ns, CMSG_DATA(&u.h), sizeof(ns));
	*userfd = ns[0];
	*netfd = ns[1];
	return 0;
}

int
vm_confine(int ws_fd, int net, char *err, size_t errlen)
{
	int abi;

	log_stderr_only();
	if ((abi = landlock_confine_dir_flags(ws_fd,
	         LANDLOCK_SOCKETS |
	             (net ? LANDLOCK_TCP | LANDLOCK_ABSTRACT : 0))) == -1) {
		snprintf(err, errlen, "landlock: %s", strerror(errno));
		return -1;
	}
	if (seccomp_filter_install_flags(
	        &seccomp_vm, SCF_NO_SOCKETS | (net ? SCF_VM_NET : 0)) == -1) {
		snprintf(err, errlen, "seccomp: %s", strerror(errno));
		return -1;
	}
	return abi;
}

int
vm_confine_holder(char *err, size_t errlen)
{
	int wd, abi, saved;

	log_stderr_only();
	if ((wd = open("workspaces", O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1) {
		snprintf(err, errlen, "workspaces: %s", strerror(errno));
		return -1;
	}
	/* Its clones' own layers narrow this one: sockets and TCP are
	 * theirs to decide (vm_confine), with or without a network. */
	abi = landlock_confine_dir_flags(
	    wd, LANDLOCK_SOCKETS | LANDLOCK_TCP | LANDLOCK_ABSTRACT);
	saved = errno;
	close(wd);
	if (abi == -1) {
		snprintf(err, errlen, "landlock: %s", strerror(saved));
		return -1;
	}
	return abi;
}

/* ---- the -J test mode ---------------------------------------------- */

static long
open2(int dirfd, const char *path, int flags, unsigned long long resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)(flags | O_CLOEXEC);
	how.mode = flags & O_CREAT ? 0600 : 0;
	how.resolve = resolve;
	return syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

/* In the probe's child: 0 allowed, 1 denied (errno printed). */
static int
probe_run(int ws_fd, const char *probe)
{
	char err[160];
	long rc;

	if (strncmp(probe, "holder:", 7) == 0 ||
	    strncmp(probe, "clone:", 6) == 0) {
		const char *p = probe + (probe[0] == 'h' ? 7 : 6);

		if (vm_confine_holder(err, sizeof(err)) == -1 ||
		    (probe[0] == 'c' &&
		        vm_confine(ws_fd, 0, err, sizeof(err)) == -1)) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
		if (strncmp(p, "open:", 5) == 0)
			rc = open2(AT_FDCWD, p + 5, O_RDONLY, 0);
		else if (strncmp(p, "create:", 7) == 0)
			rc = open2(
			    ws_fd, p + 7, O_RDWR | O_CREAT, RESOLVE_BENEATH);
		else if (strncmp(p, "llkill:", 7) == 0)
			rc = kill((pid_t)strtol(p + 7, NULL, 10), 0);
		else
			return 3;
	} else if (strncmp(probe, "llkill:", 7) == 0) {
		log_stderr_only();
		if (landlock_confine_dir(ws_fd) == -1)
			return 2;
		rc = kill((pid_t)strtol(probe + 7, NULL, 10), 0);
	} else {
		int net = 0;

		if (strncmp(probe, "net:", 4) == 0) {
			if ((net = vm_confine_net(err, sizeof(err))) == -1) {
				fprintf(stderr, "%s\n", err);
				return 2;
			}
			printf("%s: network namespace: %s\n", probe,
			    net ? "its own" : err);
			probe += 4;
		}
		if (vm_confine(ws_fd, net, err, sizeof(err)) == -1) {
			fprintf(stderr, "%s\n", err);
			return 2;
		}
		if (strncmp(probe, "open:", 5) == 0)
			rc = open2(AT_FDCWD, probe + 5, O_RDONLY, 0);
		else if (strncmp(probe, "create:", 7) == 0)
			rc = open2(ws_fd, probe + 7, O_RDWR | O_CREAT,
			    RESOLVE_BENEATH);
		else if (strncmp(probe, "kill:", 5) == 0)
			rc = kill((pid_t)strtol(probe + 5, NULL, 10), 0);
		else if (strcmp(probe, "socket") == 0)
			rc = socket(AF_UNIX, SOCK_DGRAM, 0);
		else if (strcmp(probe, "inet") == 0)
			rc = socket(AF_INET, SOCK_STREAM, 0);
		else if (strcmp(probe, "inet6") == 0)
			rc = socket(AF_INET6, SOCK_DGRAM, 0);
		else if (strcmp(probe, "netlink") == 0)
			rc = socket(AF_NETLINK, SOCK_RAW, 0);
		else if (strcmp(probe, "packet") == 0)
			rc = socket(AF_PACKET, SOCK_RAW, 0);
		else if (strcmp(probe, "unshare") == 0)
			rc = unshare(CLONE_NEWNET);
		else
			return 3;
	}
	if (rc == -1) {
		printf("%s: denied (%s)\n", probe, strerror(errno));
		return 1;
	}
	printf("%s: allowed\n", probe);
	return 0;
}

int
vm_confine_selftest(
    const char *state, const char *user, int nprobes, char **probes)
{
	int ws_fd, i, status;
	pid_t pid;

	if (nprobes < 1) {
		fprintf(stderr, "keepd: -J STATE WORKSPACE PROBE...\n");
		return 2;
	}
	log_init(1, 0, "keepd");
	if (proc_privdrop(state, user) == -1 ||
	    seccomp_filter_install(&seccomp_vmm) == -1)
		return 1;
	if ((ws_fd = open(probes[0], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1) {
		fprintf(stderr, "keepd: %s: %s\n", probes[0], strerror(errno));
		return 1;
	}
	printf("landlock abi %d\n", landlock_abi());
	fflush(stdout);
	for (i = 1; i < nprobes; i++) {
		if ((pid = fork()) == -1)
			return 1;
		if (pid == 0) {
			int rc = probe_run(ws_fd, probes[i]);

			fflush(stdout);
			_exit(rc);
		}
		if (waitpid(pid, &status, 0) == -1)
			return 1;
		if (WIFSIGNALED(status))
			printf("%s: killed by signal %d\n", probes[i],
			    WTERMSIG(status));
		else if (WEXITSTATUS(status) > 1)
			printf(
			    "%s: error %d\n", probes[i], WEXITSTATUS(status));
		fflush(stdout);
	}
	return 0;
}

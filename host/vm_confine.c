/* The confinement of a `keepd: vm` process (host/vm_confine.h). */
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <sched.h>

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
	return vmm_netns_enter(err, errlen);
}

int
vm_confine(int ws_fd, int net, char *err, size_t errlen)
{
	int abi;

	log_stderr_only();
	if ((abi = landlock_confine_dir_flags(
	         ws_fd, LANDLOCK_SOCKETS | (net ? LANDLOCK_TCP : 0))) == -1) {
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
	abi = landlock_confine_dir(wd);
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

/*
 * Calls a process makes about itself that keep once refused with ENOSYS
 * (host/vmm/sys_proc.c, sys_mem.c): mlock and its kin, personality,
 * sched_setaffinity read back through sched_getaffinity, in a forked
 * child too. Each prints a line that Linux gives the same, so the
 * output natively and in keep can be compared byte for byte. With an
 * argument, `keep`: what only an unprivileged process sees (its
 * capabilities, which a test run as root would not) and keep's
 * membarrier commands.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lines.h"

static void
affinity(const char *who)
{
	cpu_set_t s;
	int i, n = 0;

	CPU_ZERO(&s);
	if (sched_getaffinity(0, sizeof(s), &s) != 0) {
		printf("%s: getaffinity: %s\n", who, strerror(errno));
		return;
	}
	printf("%s: cpus", who);
	for (i = 0; i < CPU_SETSIZE && n < 4; i++)
		if (CPU_ISSET(i, &s)) {
			printf(" %d", i);
			n++;
		}
	printf("\n");
}

static int
common(void)
{
	char *p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cpu_set_t s;
	int st;

	say("mlock", mlock(p + 100, 8192));
	say("munlock", munlock(p + 100, 8192));
	say("mlock of nothing", mlock(p, 0));
	munmap(p + (512 << 10), 4096);
	say("mlock across a hole", mlock(p, 1 << 20));
	say("mlock2 with ONFAULT", syscall(SYS_mlock2, p, 4096, 1));
	say("mlock2 with a bad flag", syscall(SYS_mlock2, p, 4096, 2));
	say("mlockall(0)", mlockall(0));
	say("mlockall(MCL_ONFAULT)", mlockall(MCL_ONFAULT));
	say("mlockall(MCL_FUTURE)", mlockall(MCL_FUTURE));
	say("munlockall", munlockall());

	say("personality query", personality(0xffffffff));
	say("personality ADDR_NO_RANDOMIZE", personality(ADDR_NO_RANDOMIZE));
	say("personality query", personality(0xffffffff));
	fflush(stdout);
	if (fork() == 0) {
		say("child's personality", personality(0xffffffff));
		_exit(0);
	}
	wait(&st);
	say("personality back", personality(PER_LINUX));

	CPU_ZERO(&s);
	say("setaffinity to nothing", sched_setaffinity(0, sizeof(s), &s));
	CPU_SET(0, &s);
	say("setaffinity to cpu 0", sched_setaffinity(0, sizeof(s), &s));
	affinity("after");
	fflush(stdout);
	if (fork() == 0) {
		affinity("child");
		_exit(0);
	}
	wait(&st);
	return 0;
}

struct cap_header {
	uint32_t version;
	int pid;
};

static int
guest_only(void)
{
	struct cap_header h = { 0x12345678, 0 };
	uint32_t d[6];

	memset(d, 0xff, sizeof(d));
	say("capget probe", syscall(SYS_capget, &h, NULL));
	printf("preferred version %#x\n", h.version);
	say("capget v3", syscall(SYS_capget, &h, d));
	printf("caps %x %x %x %x %x %x\n", d[0], d[1], d[2], d[3], d[4], d[5]);
	h.pid = 4242;
	say("capget of no process", syscall(SYS_capget, &h, d));
	h.pid = 0;
	memset(d, 0, sizeof(d));
	say("capset of nothing", syscall(SYS_capset, &h, d));
	d[0] = 1;
	say("capset of CAP_CHOWN", syscall(SYS_capset, &h, d));
	say("membarrier query", syscall(SYS_membarrier, 0, 0));
	say("membarrier register private expedited",
	    syscall(SYS_membarrier, 16, 0));
	say("membarrier private expedited", syscall(SYS_membarrier, 8, 0));
	say("membarrier global", syscall(SYS_membarrier, 1, 0));
	say("membarrier with a flag", syscall(SYS_membarrier, 8, 1));
	return 0;
}

int
main(int argc, char **argv)
{
	(void)argv;
	setvbuf(stdout, NULL, _IOLBF, 0);
	return argc > 1 ? guest_only() : common();
}

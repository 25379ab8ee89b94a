/*
 * The vDSO's clocks against the VMM's system calls (docs/vmm.md "Time").
 * musl reads clock_gettime through the vDSO named in AT_SYSINFO_EHDR;
 * syscall(SYS_clock_gettime) always exits to the VMM. Each syscall
 * reading must lie between the vDSO readings taken just before and just
 * after it (with SLACK_NS for the vDSO's base, taken a little after the
 * TSC it pairs with), and the vDSO's clocks must never run backwards.
 * The same holds in a forked child, whose VM is new. A write to the
 * vDSO's data page must fault: the guest cannot set its own clocks.
 * Prints one line per check; "vdso: ok" when all passed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 2000
#define SLACK_NS 1000000LL /* 1 ms */
#define GUEST_VVAR 0x30000UL /* host/vmm/abi.h */

static int64_t
ns(const struct timespec *ts)
{
	return (int64_t)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

static int
check_clock(const char *name, clockid_t id)
{
	struct timespec a, b, c;
	int64_t last = 0;
	int i;

	for (i = 0; i < ROUNDS; i++) {
		clock_gettime(id, &a);
		syscall(SYS_clock_gettime, id, &b);
		clock_gettime(id, &c);
		if (ns(&a) < last || ns(&c) < ns(&a)) {
			printf("%s: the vDSO ran backwards at round %d\n", name,
			    i);
			return 1;
		}
		if (ns(&a) > ns(&b) + SLACK_NS || ns(&b) > ns(&c) + SLACK_NS) {
			printf("%s: vdso %lld, syscall %lld, vdso %lld\n", name,
			    (long long)ns(&a), (long long)ns(&b),
			    (long long)ns(&c));
			return 1;
		}
		last = ns(&c);
	}
	printf("%s: agrees over %d rounds\n", name, ROUNDS);
	return 0;
}

static int
check_others(void)
{
	struct timespec b;
	struct timeval tv;
	time_t t;

	syscall(SYS_clock_gettime, CLOCK_REALTIME, &b);
	gettimeofday(&tv, NULL);
	t = time(NULL);
	if ((int64_t)tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL <
	        ns(&b) - SLACK_NS ||
	    t < b.tv_sec) {
		printf("gettimeofday or time behind the system call\n");
		return 1;
	}
	/* CPU time is not the vDSO's: it must still answer. */
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b) != 0) {
		printf("CLOCK_PROCESS_CPUTIME_ID failed\n");
		return 1;
	}
	printf("gettimeofday, time, cputime: ok\n");
	return 0;
}

static sigjmp_buf fault;

static void
on_segv(int sig)
{
	siglongjmp(fault, 1);
}

static int
check_readonly(void)
{
	volatile uint64_t *page = (volatile uint64_t *)GUEST_VVAR;

	signal(SIGSEGV, on_segv);
	if (sigsetjmp(fault, 1) == 0) {
		page[1] = 0;
		printf("the data page is writable\n");
		return 1;
	}
	printf("the data page is read-only\n");
	return 0;
}

static int
checks(void)
{
	return check_clock("CLOCK_MONOTONIC", CLOCK_MONOTONIC) |
	    check_clock("CLOCK_REALTIME", CLOCK_REALTIME) | check_others();
}

int
main(void)
{
	int bad, st;
	pid_t pid;

	if (getauxval(AT_SYSINFO_EHDR) == 0) {
		printf("no AT_SYSINFO_EHDR\n");
		return 1;
	}
	bad = checks();
	fflush(stdout);
	if ((pid = fork()) == 0) {
		st = checks();
		fflush(stdout);
		_exit(st);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) != 0)
		bad = 1;
	bad |= check_readonly();
	printf(bad ? "vdso: FAILED\n" : "vdso: ok\n");
	return bad;
}

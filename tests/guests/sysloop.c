/*
 * Makes N cheap system calls (argv[1]): bench/boot and bench/trap time
 * the round trip. With "clock" after N: N reads of CLOCK_MONOTONIC
 * through the vDSO instead (answered in the guest), after 50 ms of reads
 * (the trap platform's vmm measures the TSC's rate in its first few),
 * and prints the nanoseconds a read took. With "getpid": N getpid calls,
 * which keep answers without the VMM (docs/vmm.md "Calls answered in
 * the guest": kvm-pvm's ring, the trap stub's SIGSYS handler).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long long
mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int
main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 0;
	long long t0, t1;

	if (argc > 2 && strcmp(argv[2], "clock") == 0) {
		for (t0 = mono_ns(); mono_ns() - t0 < 50000000;)
			;
		t0 = mono_ns();
		for (long i = 0; i < n; i++)
			(void)mono_ns();
		t1 = mono_ns();
		printf("clock %.1f\n", n > 0 ? (double)(t1 - t0) / n : 0.0);
		return 0;
	}
	if (argc > 2 && strcmp(argv[2], "getpid") == 0) {
		for (long i = 0; i < n; i++)
			syscall(SYS_getpid);
		return 0;
	}
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	return 0;
}

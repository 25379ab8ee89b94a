/*
 * The floors the trap platform's calls are measured against (bench/trap.sh,
 * docs/vmm.md "The trap platform"), each a median of rounds, in ns per
 * round trip, one per line as "name ns":
 *
 *   native    getppid(2)
 *   sigsys    getppid trapped by seccomp (SECCOMP_RET_TRAP) to a SIGSYS
 *             handler in the same process, which answers it
 *   spin      a hand-off to another process and back over shared memory,
 *             both sides spinning
 *   futex     the same with FUTEX_WAIT and FUTEX_WAKE
 *
 * A baseline, not keep code: it uses the kernel directly.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define ROUNDS 15
#define ITERS 20000

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int
cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t
median(uint64_t *v)
{
	qsort(v, ROUNDS, sizeof(*v), cmp);
	return v[ROUNDS / 2];
}

static void
on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RAX] = 1;
}

static uint64_t
bench_calls(void)
{
	uint64_t r[ROUNDS], t;
	int i, k;

	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < ITERS; i++)
			syscall(SYS_getppid);
		r[k] = (now_ns() - t) / ITERS;
	}
	return median(r);
}

/* In a child: its own filter, which traps getppid. */
static uint64_t
bench_sigsys(void)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { 4, f };
	struct sigaction sa;
	uint64_t *out, v;
	pid_t pid;

	out = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (out == MAP_FAILED)
		return 0;
	if ((pid = fork()) == 0) {
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_sigsys;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGSYS, &sa, NULL);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
		    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) !=
		        0)
			_exit(1);
		*out = bench_calls();
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	v = *out;
	munmap(out, 4096);
	return v;
}

static long
futex(uint32_t *w, int op, uint32_t v)
{
	return syscall(SYS_futex, w, op, v, NULL, NULL, 0);
}

/* Ping-pong on one word: the parent writes 1, the child answers 2. */
static uint64_t
bench_handoff(int sleep)
{
	uint32_t *w;
	uint64_t r[ROUNDS], t;
	pid_t pid;
	int i, k;

	w = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	    -1, 0);
	if (w == MAP_FAILED)
		return 0;
	*w = 0;
	if ((pid = fork()) == 0) {
		for (;;) {
			while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != 1) {
				if (__atomic_load_n(w, __ATOMIC_ACQUIRE) == 3)
					_exit(0);
				if (sleep)
					futex(w, FUTEX_WAIT, 0);
			}
			__atomic_store_n(w, 2, __ATOMIC_RELEASE);
			if (sleep)
				futex(w, FUTEX_WAKE, 1);
			while (__atomic_load_n(w, __ATOMIC_ACQUIRE) == 2)
				if (sleep)
					futex(w, FUTEX_WAIT, 2);
		}
	}
	for (k = 0; k < ROUNDS; k++) {
		t = now_ns();
		for (i = 0; i < ITERS / 4; i++) {
			__atomic_store_n(w, 1, __ATOMIC_RELEASE);
			if (sleep)
				futex(w, FUTEX_WAKE, 1);
			while (__atomic_load_n(w, __ATOMIC_ACQUIRE) != 2)
				if (sleep)
					futex(w, FUTEX_WAIT, 1);
			__atomic_store_n(w, 0, __ATOMIC_RELEASE);
			if (sleep)
				futex(w, FUTEX_WAKE, 1);
		}
		r[k] = (now_ns() - t) / (ITERS / 4);
	}
	__atomic_store_n(w, 3, __ATOMIC_RELEASE);
	futex(w, FUTEX_WAKE, 1);
	waitpid(pid, NULL, 0);
	munmap(w, 4096);
	return median(r);
}

int
main(void)
{
	printf("native %llu\n", (unsigned long long)bench_calls());
	printf("sigsys %llu\n", (unsigned long long)bench_sigsys());
	printf("spin %llu\n", (unsigned long long)bench_handoff(0));
	printf("futex %llu\n", (unsigned long long)bench_handoff(1));
	return 0;
}

/*
 * Reservations (docs/vmm.md, "Reservations"): a PROT_NONE anonymous
 * mapping takes address space, not memory; mprotect charges what it
 * makes accessible, a MAP_FIXED PROT_NONE gives it back, and a page the
 * guest does not hold cannot be reached. The first argument is the
 * memory limit in MiB; the test runs it with an address space far
 * larger (the image's reserve) and compares the lines with the expected
 * ones. Natively, without a limit, the "past the limit" lines differ.
 *
 * Usage: reserve LIMIT-MiB            the checks
 *        reserve LIMIT-MiB touch      touch a reserved page (a fault)
 *        reserve LIMIT-MiB unmapped   touch a page after its munmap
 *        reserve LIMIT-MiB heap       touch the page past the break
 *        reserve LIMIT-MiB caught     the same touch, with a SIGSEGV
 *                                     handler that jumps out
 *        reserve LIMIT-MiB limits     MemTotal, RLIMIT_DATA and RLIMIT_AS
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1UL << 20)

static sigjmp_buf out;

static void
on_segv(int sig)
{
	(void)sig;
	siglongjmp(out, 1);
}

static const char *
err(int rc)
{
	return rc == 0 ? "ok" : errno == ENOMEM ? "ENOMEM" : strerror(errno);
}

int
main(int argc, char **argv)
{
	size_t limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	const char *mode = argc > 2 ? argv[2] : "";
	size_t big = 8 * limit * MIB;
	volatile char *p;
	char *r, *q;
	int fd[2], st;
	pid_t pid;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(mode, "limits") == 0) {
		struct rlimit d, as;
		char line[128] = "";
		FILE *f = fopen("/proc/meminfo", "r");

		if (f == NULL || fgets(line, sizeof(line), f) == NULL ||
		    getrlimit(RLIMIT_DATA, &d) != 0 ||
		    getrlimit(RLIMIT_AS, &as) != 0)
			return 1;
		printf("%sRLIMIT_DATA %llu MiB\nRLIMIT_AS %llu MiB\n", line,
		    (unsigned long long)(d.rlim_cur / MIB),
		    (unsigned long long)(as.rlim_cur / MIB));
		return 0;
	}
	/* Eight times the limit, reserved: nothing is charged. */
	r = mmap(NULL, big, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	printf("reserve 8x the limit: %s\n", r == MAP_FAILED ? "failed" : "ok");
	if (r == MAP_FAILED)
		return 1;
	if (strcmp(mode, "touch") == 0) {
		p = r + big / 2;
		*p = 1;
		printf("touched a reserved page\n");
		return 0;
	}
	if (strcmp(mode, "caught") == 0) {
		signal(SIGSEGV, on_segv);
		if (sigsetjmp(out, 1) == 0) {
			p = r + big / 2;
			*p = 1;
			printf("touched a reserved page\n");
		} else
			printf("SIGSEGV caught\n");
		return 0;
	}
	if (strcmp(mode, "heap") == 0) {
		uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);

		p = (volatile char *)((cur + 4095) & ~4095UL) + 4096;
		*p = 1;
		printf("touched past the break\n");
		return 0;
	}
	if (strcmp(mode, "unmapped") == 0) {
		q = mmap(NULL, MIB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		memset(q, 1, MIB);
		munmap(q, MIB);
		p = q;
		*p = 1;
		printf("touched an unmapped page\n");
		return 0;
	}

	/* Half the limit made accessible: charged, and usable. */
	printf("mprotect half the limit: %s\n",
	    err(mprotect(r, limit / 2 * MIB, PROT_READ | PROT_WRITE)));
	memset(r, 7, limit / 2 * MIB);
	/* Another whole limit: past it. */
	printf("mprotect the limit more: %s\n",
	    err(mprotect(
	        r + limit / 2 * MIB, limit * MIB, PROT_READ | PROT_WRITE)));
	/* PROT_NONE keeps the contents (and the charge, as Linux keeps
	 * the commit), so they read back when accessible again. */
	mprotect(r, MIB, PROT_NONE);
	mprotect(r, MIB, PROT_READ);
	printf("contents across PROT_NONE: %d\n", r[MIB - 1]);
	/* A read into a reserved page: EFAULT, from the host too. */
	if (pipe(fd) != 0 || write(fd[1], "x", 1) != 1)
		return 1;
	printf("read into a reserved page: %s\n",
	    read(fd[0], r + big / 2, 1) == -1 && errno == EFAULT ? "EFAULT"
	                                                         : "read");
	/* MAP_FIXED PROT_NONE over the accessible half gives it back
	 * (V8's way of decommitting): the whole limit less a little fits
	 * again, and reads as zeroes. */
	q = mmap(r, limit / 2 * MIB, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	printf("decommit: %s\n", q == r ? "ok" : "failed");
	printf("mprotect 3/4 of the limit: %s\n",
	    err(mprotect(r, limit * 3 / 4 * MIB, PROT_READ | PROT_WRITE)));
	printf("reads zeroes: %s\n", r[0] == 0 && r[MIB] == 0 ? "yes" : "no");
	/* The charge is the tree's: a fork is charged what its parent
	 * holds (a quarter), and its child cannot then take 5/8 more. */
	mmap(r + limit / 4 * MIB, limit / 2 * MIB, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
	if ((pid = fork()) == 0)
		_exit(mprotect(r + limit * MIB, limit * 5 / 8 * MIB,
		          PROT_READ | PROT_WRITE) == 0
		        ? 0
		        : 3);
	if (pid > 0 && waitpid(pid, &st, 0) == pid)
		printf("fork, child mprotects past the tree's limit: %s\n",
		    WIFEXITED(st) && WEXITSTATUS(st) == 3 ? "ENOMEM" : "ok");
	else
		printf("fork: %s\n", strerror(errno));
	/* Lengths that wrap when rounded to pages (the calls themselves:
	 * musl's wrappers round and check on their own). */
	printf("mprotect of 2^64-1 bytes: %s\n",
	    err((int)syscall(SYS_mprotect, r, ~0UL, PROT_READ | PROT_WRITE)));
	printf("mremap to 2^64-1 bytes: %s\n",
	    err((int)syscall(SYS_mremap, r, 4096, ~0UL, MREMAP_MAYMOVE)));
	/* munmap gives it all back. */
	munmap(r, big);
	r = mmap(NULL, limit * 3 / 4 * MIB, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("after munmap, map 3/4 of the limit: %s\n",
	    r == MAP_FAILED ? "failed" : "ok");
	return 0;
}

/*
 * KVM's memory slots cover only what the guest has held (docs/vmm.md,
 * "Guest memory"): a touch of memory far from it is still a fault the
 * program sees as it would natively, and memory grown far past where
 * the slots began is all usable, in a forked child too. Run with a
 * memory limit of 1 GiB and an address space of 2 GiB (the python
 * image's); natively the output is the same.
 *
 * Usage: memslots read|write|exec   touch the middle of a 512 MiB
 *                                   reservation: a fault that stops it
 *        memslots caught-read|caught-write|caught-exec
 *                                   the same with a SIGSEGV handler
 *                                   that jumps out
 *        memslots fixed             a handler that makes the page
 *                                   accessible and returns: the store
 *                                   is made again, and lands
 *        memslots grow MiB          the brk heap and the mmap area each
 *                                   grown by MiB (touched every 64 KiB),
 *                                   then a forked child reads it all
 *                                   and maps 64 MiB more
 */
#define _GNU_SOURCE
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1UL << 20)
#define STRIDE (64UL << 10)

static sigjmp_buf out;
static char *fix_page;

static void
on_segv(int sig)
{
	(void)sig;
	siglongjmp(out, 1);
}

static void
on_segv_fix(int sig)
{
	(void)sig;
	if (mprotect(fix_page, 4096, PROT_READ | PROT_WRITE) != 0)
		_exit(3);
}

static int
touch(const char *how, volatile char *p)
{
	if (strcmp(how, "read") == 0)
		return *p;
	if (strcmp(how, "write") == 0) {
		*p = 1;
		return 0;
	}
	((void (*)(void))(uintptr_t)p)();
	return 0;
}

/* Every STRIDE of [p, p+len) written with its offset's pattern; or, with
 * check set, compared: 0 when all match. */
static int
pattern(char *p, size_t len, size_t seed, int check)
{
	size_t off;

	for (off = 0; off < len; off += STRIDE) {
		char want = (char)((off / STRIDE + seed) % 251);

		if (!check)
			p[off] = want;
		else if (p[off] != want)
			return -1;
	}
	return 0;
}

static int
grow(size_t mib)
{
	size_t sizes[] = { 64 << 10, 1 * MIB, 3 * MIB, 8 * MIB, 16 * MIB };
	char *heap, *maps[4096], *more;
	size_t lens[4096], n = 0, total = 0, i;
	int st;
	pid_t pid;

	/* The heap, a MiB at a time, as glibc's malloc grows it (musl's
	 * sbrk takes only 0: the call itself). */
	heap = (char *)syscall(SYS_brk, 0);
	for (i = 1; i <= mib; i++)
		if ((char *)syscall(SYS_brk, heap + i * MIB) !=
		    heap + i * MIB) {
			printf("brk past %zu MiB: failed\n", i - 1);
			return 1;
		}
	pattern(heap, mib * MIB, 1, 0);
	/* The mmap area, in mappings of several sizes. */
	while (total < mib * MIB && n < 4096) {
		lens[n] = sizes[n % 5];
		maps[n] = mmap(NULL, lens[n], PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (maps[n] == MAP_FAILED) {
			printf("mmap past %zu MiB: failed\n", total / MIB);
			return 1;
		}
		pattern(maps[n], lens[n], n, 0);
		total += lens[n++];
	}
	printf("grew the heap and the mmap area by %zu MiB each\n", mib);
	if ((pid = fork()) == 0) {
		if (pattern(heap, mib * MIB, 1, 1) != 0)
			_exit(2);
		for (i = 0; i < n; i++)
			if (pattern(maps[i], lens[i], i, 1) != 0)
				_exit(3);
		more = mmap(NULL, 64 * MIB, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (more == MAP_FAILED)
			_exit(4);
		pattern(more, 64 * MIB, 7, 0);
		_exit(pattern(more, 64 * MIB, 7, 1) != 0 ? 5 : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		printf("fork: failed\n");
		return 1;
	}
	printf("child reads it all and maps 64 MiB more: %s\n",
	    WIFEXITED(st) && WEXITSTATUS(st) == 0 ? "ok" : "failed");
	for (i = 0; i < n; i++)
		if (pattern(maps[i], lens[i], i, 1) != 0)
			break;
	printf("parent's memory after: %s\n",
	    i == n && pattern(heap, mib * MIB, 1, 1) == 0 ? "ok" : "changed");
	return 0;
}

int
main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	size_t big = 512 * MIB;
	char *r;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (strcmp(mode, "grow") == 0)
		return grow(argc > 2 ? strtoul(argv[2], NULL, 10) : 150);
	/* Reserved: address space the program does not hold. */
	r = mmap(NULL, big, PROT_NONE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		printf("reserve: failed\n");
		return 1;
	}
	if (strcmp(mode, "fixed") == 0) {
		volatile char *p = r + big / 2;

		fix_page = r + big / 2;
		signal(SIGSEGV, on_segv_fix);
		*p = 5;
		printf("the store after the handler: %d\n", *p);
		return 0;
	}
	if (strncmp(mode, "caught-", 7) == 0) {
		signal(SIGSEGV, on_segv);
		if (sigsetjmp(out, 1) == 0) {
			touch(mode + 7, r + big / 2);
			printf("touched a reserved page\n");
		} else
			printf("SIGSEGV caught\n");
		return 0;
	}
	touch(mode, r + big / 2);
	printf("touched a reserved page\n");
	return 0;
}

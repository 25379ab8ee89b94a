/*
 * The run's memory limit across a process tree (docs/vmm.md, "Memory
 * across a process tree"), with the limit given as the first argument in
 * MiB: a fork is charged what its parent holds, a vfork child only what
 * it maps, siblings share the limit, and what an ended process held
 * comes back. Run natively it shows what Linux does without a memory
 * cgroup; the test compares keep's output with the expected lines.
 * Usage: memtree [limit-MiB [fail]]; with "fail", it exits 1 when its
 * first fork is refused.
 */
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIB (1UL << 20)

extern char **environ;

static void *
hold(size_t mib)
{
	void *p = mmap(NULL, mib * MIB, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 1, mib * MIB);
	return p;
}

/* A process holds its memory both ways, half from brk, half from mmap:
 * each is under half the guest's memory, and together they pass half
 * of the limit. */
/* The brk call itself: musl's sbrk moves nothing. */
static int
heap_by(intptr_t delta)
{
	uintptr_t cur = (uintptr_t)syscall(SYS_brk, 0);

	if ((uintptr_t)syscall(SYS_brk, cur + delta) != cur + delta)
		return -1;
	if (delta > 0)
		memset((void *)cur, 1, (size_t)delta);
	return 0;
}

static void *
hold_both(size_t mib)
{
	void *map;

	if (heap_by((intptr_t)(mib / 2 * MIB)) != 0)
		return NULL;
	if ((map = hold(mib - mib / 2)) == NULL) {
		heap_by(-(intptr_t)(mib / 2 * MIB));
		return NULL;
	}
	return map;
}

static void
release_both(void *map, size_t mib)
{
	munmap(map, (mib - mib / 2) * MIB);
	heap_by(-(intptr_t)(mib / 2 * MIB));
}

/* fork a child that maps mib and reports on fd whether it could, then
 * waits for a byte on gate before it exits: 'y', 'n', or 'f' when the
 * fork itself failed. */
static char
child_holding(size_t mib, const int rep[2], const int gate[2], pid_t *pid)
{
	char c;

	if ((*pid = fork()) == -1)
		return errno == ENOMEM ? 'f' : '?';
	if (*pid == 0) {
		close(gate[1]);
		c = hold_both(mib) != NULL ? 'y' : 'n';
		(void)write(rep[1], &c, 1);
		(void)read(gate[0], &c, 1);
		_exit(0);
	}
	return read(rep[0], &c, 1) == 1 ? c : '?';
}

int
main(int argc, char **argv)
{
	size_t limit = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
	int rep[2], gate[2], i, st;
	pid_t pid[3], p;
	char *args[] = { argv[0], "small", NULL };
	void *big;

	if (argc > 1 && strcmp(argv[1], "small") == 0)
		return hold(1) != NULL ? 0 : 3;
	setvbuf(stdout, NULL, _IONBF, 0);

	/* A process holding 60% of the limit cannot fork: its child could
	 * come to hold as much again. */
	if ((big = hold_both(limit * 6 / 10)) == NULL)
		return 1;
	p = fork();
	if (p == 0)
		_exit(0);
	printf("fork while holding 60%%: %s\n",
	    p == -1 && errno == ENOMEM ? "ENOMEM" : "forked");
	if (p > 0)
		waitpid(p, &st, 0);
	else if (argc > 2 && strcmp(argv[2], "fail") == 0)
		return 1; /* as a program that gives up on ENOMEM */

	/* posix_spawn (a vfork) still can: the child is charged only for
	 * the program it execs. */
	i = posix_spawn(&p, "/proc/self/exe", NULL, NULL, args, environ);
	printf("posix_spawn while holding 60%%: %s\n",
	    i == 0 && waitpid(p, &st, 0) == p && WIFEXITED(st) &&
	            WEXITSTATUS(st) == 0
	        ? "ran"
	        : "failed");
	release_both(big, limit * 6 / 10);

	/* Three children each try to hold 40% at once: the third cannot. */
	if (pipe(rep) != 0 || pipe(gate) != 0)
		return 1;
	for (i = 0; i < 3; i++)
		printf("child %d holding 40%%: %c\n", i + 1,
		    child_holding(limit * 4 / 10, rep, gate, &pid[i]));
	close(gate[1]);
	close(gate[0]);
	for (i = 0; i < 3; i++)
		if (pid[i] > 0)
			waitpid(pid[i], &st, 0);

	/* What they held came back. */
	if (pipe(gate) != 0)
		return 1;
	printf("after they ended, a child holding 40%%: %c\n",
	    child_holding(limit * 4 / 10, rep, gate, &pid[0]));
	close(gate[1]);
	if (pid[0] > 0)
		waitpid(pid[0], &st, 0);
	return 0;
}

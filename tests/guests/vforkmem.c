/*
 * A vfork child and its parent's memory (docs/vmm.md, "Fork"): what the
 * child writes before it exits, whether it may map memory there, and
 * that the parent's own memory, and a mapping it makes afterwards, are
 * as they were. One line each; tests/integration/vmm_procs.sh compares
 * them per platform (natively: shared, mmap ok).
 */
#include <sys/mman.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define HELD (4 << 20)

static volatile int written;

int
main(void)
{
	unsigned char *held, *fresh;
	volatile int mapped = -1;
	size_t i;
	pid_t pid;
	int st, intact = 1, zero = 1;

	held = mmap(NULL, HELD, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (held == MAP_FAILED)
		return 1;
	for (i = 0; i < HELD; i++)
		held[i] = (unsigned char)(i * 7);
	pid = vfork();
	if (pid == 0) {
		void *p;

		written = 42;
		p = mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		mapped = p == MAP_FAILED ? errno : 0;
		_exit(0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return 1;
	printf(
	    "the child's write: %s\n", written == 42 ? "shared" : "a copy's");
	printf("the child's mmap: %s\n",
	    mapped == 0        ? "ok"
	        : mapped == -1 ? "a copy's"
	                       : strerror(mapped));
	for (i = 0; i < HELD; i++)
		intact &= held[i] == (unsigned char)(i * 7);
	printf("the parent's memory: %s\n", intact ? "intact" : "changed");
	fresh = mmap(NULL, HELD, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (fresh == MAP_FAILED)
		return 1;
	for (i = 0; i < HELD; i++)
		zero &= fresh[i] == 0;
	printf("a new mapping: %s\n", zero ? "zeroes" : "not zeroes");
	return 0;
}

/*
 * Private mappings of an image file (docs/vmm.md "Image pages"): what
 * the guest reads through them is the file, up to the end of its last
 * page and zeroes after; its writes stay its own (the file reads the
 * same afterwards, here and in the next run); MAP_FIXED anonymous
 * memory over the mapping, and memory mapped again after munmap, read
 * as zeroes; a forked child sees the same. "mapimage touch FILE" maps
 * the whole file and reads one byte, for the memory it is charged.
 * The program's own read-only segments are the image's pages too (a
 * program from an image): it writes over its constant data, which
 * reads as written in this run and as built in the next.
 * Prints "mapimage: ok" when every check passed.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define PG 4096

static int bad;

/* Four pages of constant data (a 1, then zeroes), whole pages of them
 * in a read-only segment. */
static const unsigned char rodata[4 * PG] = { 1 };

static void
check(int ok, const char *what)
{
	printf("%s: %s\n", what, ok ? "ok" : "FAILED");
	bad |= !ok;
}

static int
all_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

static void
checks(int fd, const unsigned char *want, size_t len, const char *who)
{
	size_t span = (len + 3 * PG) & ~(size_t)(PG - 1);
	unsigned char *p, *q, b;
	char what[64];

	p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		check(0, "mmap");
		return;
	}
	snprintf(what, sizeof(what), "%s: the mapping reads the file", who);
	check(memcmp(p, want, len) == 0, what);
	/* Linux: zeroes to the end of the last page (SIGBUS past it;
	 * keep reads zeroes there too). */
	snprintf(what, sizeof(what), "%s: past its end, zeroes", who);
	check(all_zero(p + len, ((len + PG - 1) & ~(size_t)(PG - 1)) - len),
	    what);
	p[100] ^= 0xff;
	p[len - 1] ^= 0xff;
	snprintf(what, sizeof(what), "%s: writes stay in the guest", who);
	check(pread(fd, &b, 1, 100) == 1 && b == want[100] &&
	        pread(fd, &b, 1, (off_t)len - 1) == 1 && b == want[len - 1] &&
	        p[100] == (unsigned char)(want[100] ^ 0xff),
	    what);
	q = mmap(p + PG, PG, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	snprintf(what, sizeof(what), "%s: MAP_FIXED anonymous over it", who);
	check(q == p + PG && all_zero(q, PG) &&
	        memcmp(p + 2 * PG, want + 2 * PG, PG) == 0,
	    what);
	q = mmap(p + PG, PG, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 3 * PG);
	snprintf(what, sizeof(what), "%s: MAP_FIXED file over it", who);
	check(q == p + PG && memcmp(q, want + 3 * PG, PG) == 0, what);
	munmap(p, span);
	q = mmap(NULL, span, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	snprintf(what, sizeof(what), "%s: anonymous memory after munmap", who);
	check(q != MAP_FAILED && all_zero(q, span), what);
	munmap(q, span);
}

int
main(int argc, char **argv)
{
	unsigned char *want;
	struct stat st;
	size_t len, done;
	ssize_t n;
	pid_t pid;
	int fd, status;

	if (argc < 2 || (fd = open(argv[argc - 1], O_RDONLY)) < 0 ||
	    fstat(fd, &st) != 0 || st.st_size < 5 * PG) {
		printf("usage: mapimage [touch] FILE (5 pages or more)\n");
		return 2;
	}
	len = (size_t)st.st_size;
	if (argc == 3 && strcmp(argv[1], "touch") == 0) {
		volatile unsigned char *p =
		    mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED)
			return 1;
		printf("byte %u\n", p[len / 2]);
		return 0;
	}
	if ((want = malloc(len)) == NULL)
		return 1;
	for (done = 0; done < len; done += (size_t)n)
		if ((n = pread(fd, want + done, len - done, (off_t)done)) <= 0)
			return 1;
	{
		volatile unsigned char *r = (volatile unsigned char *)rodata;
		unsigned char was = r[2 * PG];

		r[2 * PG] = 0x33;
		check(was == 0 && r[2 * PG] == 0x33,
		    "own constant data: built as 0, written over");
	}
	checks(fd, want, len, "process");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		checks(fd, want, len, "child");
		fflush(stdout);
		_exit(bad);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	        WEXITSTATUS(status) == 0,
	    "child");
	printf(bad ? "mapimage: FAILED\n" : "mapimage: ok\n");
	return bad;
}

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
 * reads as written in this run and as built in the next; or, where the
 * write faults (natively, and on keep's trap platform, which maps
 * read-only image pages read-only), says so (the fault's si_code
 * SEGV_ACCERR) and goes on. A read-only
 * mapping made before a fork reads the file in the child, and in the
 * parent after the child unmapped its own.
 * "mapimage rowrite FILE" writes to a read-only mapping of the file (a
 * SIGSEGV natively); "mapimage protect FILE" makes a read-only mapping
 * of the file and of its own constant data writable with mprotect,
 * writes them and reads back; "mapimage many FILE" maps the file 3000
 * times read-only and reads every mapping in a forked child.
 * Prints "mapimage: ok" when every check passed.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
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

static sigjmp_buf faulted;
static volatile sig_atomic_t fault_code;

static void
on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	fault_code = si->si_code;
	siglongjmp(faulted, 1);
}

/* Write over a page of the program's own constant data: 1 written, 0
 * the write faulted (SIGSEGV). */
static int
write_rodata(volatile unsigned char *r)
{
	struct sigaction sa, old;
	int wrote = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, &old);
	if (sigsetjmp(faulted, 1) == 0) {
		r[0] = 0x33;
		wrote = 1;
	}
	sigaction(SIGSEGV, &old, NULL);
	return wrote;
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

/* mprotect to writable, then write and read back: a read-only mapping
 * of the file, and the program's own constant data. */
static int
protect(int fd, size_t len)
{
	unsigned char *p, b, first;
	volatile unsigned char *r = (volatile unsigned char *)rodata;
	uintptr_t page = ((uintptr_t)rodata + PG - 1) & ~(uintptr_t)(PG - 1);

	p = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		check(0, "mmap");
		return 1;
	}
	first = p[PG];
	check(mprotect(p + PG, 2 * PG, PROT_READ | PROT_WRITE) == 0,
	    "mprotect the mapping writable");
	p[PG] ^= 0xff;
	p[2 * PG + 7] = 0x5a;
	check(p[PG] == (unsigned char)(first ^ 0xff) && p[2 * PG + 7] == 0x5a,
	    "the mapping reads what was written");
	check(pread(fd, &b, 1, PG) == 1 && b == first, "the file is unchanged");
	check(pread(fd, &b, 1, 3 * PG) == 1 && b == p[3 * PG] &&
	        pread(fd, &b, 1, 0) == 1 && b == p[0],
	    "the pages around it read the file");
	check(mprotect((void *)page, PG, PROT_READ | PROT_WRITE) == 0,
	    "mprotect own constant data writable");
	r[page - (uintptr_t)rodata] = 0x44;
	check(r[page - (uintptr_t)rodata] == 0x44 && r[0] == 1,
	    "own constant data reads what was written");
	munmap(p, len);
	printf(bad ? "mapimage: FAILED\n" : "mapimage: ok\n");
	return bad;
}

/* MANY read-only mappings of the file's first two pages, read in a
 * forked child: each is one to map again in the child's process. */
#define MANY 3000
static int
many(int fd)
{
	static unsigned char *maps[MANY];
	unsigned char want[2 * PG];
	int i, status, ok = 1;
	pid_t pid;

	if (pread(fd, want, sizeof(want), 0) != (ssize_t)sizeof(want))
		return 1;
	for (i = 0; i < MANY; i++)
		if ((maps[i] = mmap(NULL, sizeof(want), PROT_READ, MAP_PRIVATE,
		         fd, 0)) == MAP_FAILED)
			return 1;
	if ((pid = fork()) == 0) {
		for (i = 0; i < MANY; i++)
			ok &= memcmp(maps[i], want, sizeof(want)) == 0;
		_exit(!ok);
	}
	for (i = 0; i < MANY; i++)
		ok &= memcmp(maps[i], want, sizeof(want)) == 0;
	check(ok && pid > 0 && waitpid(pid, &status, 0) == pid &&
	        WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "3000 read-only mappings, read in a forked child");
	printf(bad ? "mapimage: FAILED\n" : "mapimage: ok\n");
	return bad;
}

int
main(int argc, char **argv)
{
	unsigned char *want, *ro, *q;
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
	if (argc == 3 && strcmp(argv[1], "rowrite") == 0) {
		volatile unsigned char *p =
		    mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);

		if (p == MAP_FAILED)
			return 1;
		printf("read %u, writing\n", p[PG]);
		fflush(stdout);
		p[PG] ^= 0xff;
		printf("wrote %u\n", p[PG]);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "protect") == 0)
		return protect(fd, len);
	if (argc == 3 && strcmp(argv[1], "many") == 0)
		return many(fd);
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

		if (write_rodata(r + 2 * PG))
			check(was == 0 && r[2 * PG] == 0x33,
			    "own constant data: built as 0, written over");
		else
			check(was == 0 && r[2 * PG] == 0 &&
			        fault_code == SEGV_ACCERR,
			    "own constant data: built as 0, a write faulted");
	}
	checks(fd, want, len, "process");
	ro = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	check(ro != MAP_FAILED && memcmp(ro, want, len) == 0,
	    "read-only mapping before fork");
	fflush(stdout);
	if ((pid = fork()) == 0) {
		check(ro != MAP_FAILED && memcmp(ro, want, len) == 0,
		    "child: the parent's read-only mapping reads the file");
		if (ro != MAP_FAILED) {
			q = mmap(ro, PG, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
			check(q == ro && all_zero(q, PG) &&
			        memcmp(ro + PG, want + PG, PG) == 0,
			    "child: anonymous memory over part of it");
			munmap(ro, len);
		}
		checks(fd, want, len, "child");
		fflush(stdout);
		_exit(bad);
	}
	check(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
	        WEXITSTATUS(status) == 0,
	    "child");
	check(ro != MAP_FAILED && memcmp(ro, want, len) == 0,
	    "parent: its read-only mapping reads the file after the child's "
	    "munmap");
	printf(bad ? "mapimage: FAILED\n" : "mapimage: ok\n");
	return bad;
}

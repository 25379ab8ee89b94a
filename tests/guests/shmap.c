/*
 * Shared mappings between processes (docs/vmm.md, "Shared mappings"):
 * an anonymous MAP_SHARED across fork, a file mapped shared and the
 * same file's read and write, two processes mapping one file each on
 * their own, a POSIX semaphore in /dev/shm that a process waits on and
 * another posts, shm_open, and memory given back after munmap reading
 * as zeroes while the file keeps its bytes. The output is the same
 * natively (tests/integration/vmm_procs.sh compares).
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PAGE 4096

static int failed;

static void
check(int cond, const char *what)
{
	printf("%s: %s\n", what, cond ? "ok" : "WRONG");
	if (!cond)
		failed = 1;
}

static int
child_status(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

static void
nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void
anonymous(void)
{
	volatile uint32_t *p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t pid;

	if (p == MAP_FAILED) {
		check(0, "anonymous shared mapping");
		return;
	}
	p[0] = 1;
	if ((pid = fork()) == 0) {
		p[1] = p[0] + 41; /* the parent's write is seen here */
		p[PAGE / 4] = 7;
		_exit(0);
	}
	check(child_status(pid) == 0 && p[1] == 42 && p[PAGE / 4] == 7,
	    "anonymous MAP_SHARED: a child's writes reach the parent");
	munmap((void *)p, 2 * PAGE);
}

static void
file_and_calls(const char *path)
{
	char buf[16] = { 0 };
	uint8_t *p, *q;
	pid_t pid;
	int fd;

	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 2 * PAGE) != 0) {
		check(0, "a file to map");
		return;
	}
	p = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		check(0, "a file mapped shared");
		return;
	}
	memcpy(p + 100, "mapped", 6);
	check(msync(p, 2 * PAGE, MS_SYNC) == 0, "msync MS_SYNC");
	check(msync(p, PAGE, MS_ASYNC | MS_SYNC) == -1 && errno == EINVAL,
	    "msync with MS_ASYNC and MS_SYNC: EINVAL");
	check(pread(fd, buf, 6, 100) == 6 && memcmp(buf, "mapped", 6) == 0,
	    "a write to the mapping is the file's (pread)");
	check(pwrite(fd, "written", 7, PAGE + 8) == 7 &&
	        memcmp(p + PAGE + 8, "written", 7) == 0,
	    "a pwrite to the file is the mapping's");
	if ((pid = fork()) == 0) {
		/* Its own mapping of the file, not the inherited one. */
		q = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (q == MAP_FAILED || memcmp(q + 100, "mapped", 6) != 0)
			_exit(1);
		memcpy(q + 200, "other", 5);
		memcpy(p + 300, "inherited", 9);
		_exit(0);
	}
	check(child_status(pid) == 0 && memcmp(p + 200, "other", 5) == 0 &&
	        memcmp(p + 300, "inherited", 9) == 0,
	    "another process's mappings of the file are the same pages");
	/* Given back: a private mapping put over it reads zeroes, and the
	 * file keeps what was written. */
	q = mmap(p, PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	check(q == p && q[100] == 0 && p[PAGE + 8] == 'w',
	    "a private mapping over it reads zeroes; the rest stays mapped");
	q[100] = 'x';
	memset(buf, 0, sizeof(buf));
	check(pread(fd, buf, 6, 100) == 6 && memcmp(buf, "mapped", 6) == 0,
	    "the file keeps its bytes");
	check(pwrite(fd, "again", 5, PAGE + 16) == 5 &&
	        memcmp(p + PAGE + 16, "again", 5) == 0,
	    "the rest is still the file's");
	munmap(p, 2 * PAGE);
	q = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	{
		int i, zero = q != MAP_FAILED;

		for (i = 0; zero && i < 64 * PAGE; i++)
			zero = q[i] == 0;
		check(zero, "memory mapped after munmap reads as zeroes");
	}
	memset(buf, 0, sizeof(buf));
	check(pread(fd, buf, 5, PAGE + 16) == 5 && memcmp(buf, "again", 5) == 0,
	    "the file keeps its bytes after munmap");
	if (q != MAP_FAILED)
		munmap(q, 64 * PAGE);
	close(fd);
	unlink(path);
}

static void
semaphore(void)
{
	struct timespec t0, t1;
	sem_t *s;
	pid_t pid;
	long ms;

	sem_unlink("/keep-shmap");
	s = sem_open("/keep-shmap", O_CREAT | O_EXCL, 0600, 0);
	if (s == SEM_FAILED) {
		printf("sem_open: %s\n", strerror(errno));
		failed = 1;
		return;
	}
	/* glibc names it sem.NAME, musl NAME. */
	check(access("/dev/shm/sem.keep-shmap", F_OK) == 0 ||
	        access("/dev/shm/keep-shmap", F_OK) == 0,
	    "sem_open makes its file in /dev/shm");
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if ((pid = fork()) == 0) {
		nap_ms(100);
		sem_post(s);
		_exit(0);
	}
	/* Blocks in the futex until the child posts. */
	check(sem_wait(s) == 0, "sem_wait returns once another process posts");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 +
	    (t1.tv_nsec - t0.tv_nsec) / 1000000;
	check(ms >= 90, "sem_wait waited for the post");
	check(child_status(pid) == 0, "the poster exits 0");
	if ((pid = fork()) == 0) {
		int i;

		for (i = 0; i < 1000; i++)
			sem_post(s);
		_exit(0);
	}
	{
		int i, got = 0;

		for (i = 0; i < 1000; i++)
			got += sem_wait(s) == 0;
		check(got == 1000 && child_status(pid) == 0,
		    "a thousand posts, a thousand waits");
	}
	sem_close(s);
	sem_unlink("/keep-shmap");
	check(access("/dev/shm/sem.keep-shmap", F_OK) != 0 &&
	        access("/dev/shm/keep-shmap", F_OK) != 0,
	    "sem_unlink removes it");
}

static void
posix_shm(void)
{
	uint32_t *p;
	pid_t pid;
	int fd;

	fd = shm_open("/keep-shm", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, PAGE) != 0) {
		printf("shm_open: %s\n", strerror(errno));
		failed = 1;
		return;
	}
	if ((pid = fork()) == 0) {
		int cfd = shm_open("/keep-shm", O_RDWR, 0);
		uint32_t *c = cfd < 0 ? MAP_FAILED
		                      : mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
		                            MAP_SHARED, cfd, 0);

		if (c == MAP_FAILED)
			_exit(1);
		c[3] = 0xfeed;
		_exit(0);
	}
	p = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	check(child_status(pid) == 0 && p != MAP_FAILED && p[3] == 0xfeed,
	    "shm_open: two processes, one object");
	close(fd);
	shm_unlink("/keep-shm");
}

/*
 * `shmap truncated`: a file shortened under its shared mapping, whose
 * pages past the end are then handed to calls. Linux answers EFAULT (or
 * a short count); keep may answer zeroes for them. Either way the calls
 * answer and the process goes on ("survived"), and the guest's own touch
 * of such a page is SIGBUS as in Linux.
 */
static void
truncated(void)
{
	uint8_t *p;
	int fd, nul, pfd[2];
	char buf[64];
	ssize_t n;

	fd = open("/tmp/keep-shmap-trunc", O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 4 * PAGE) != 0 ||
	    (p = mmap(NULL, 4 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
	         0)) == MAP_FAILED) {
		printf("setup: %s\n", strerror(errno));
		return;
	}
	memset(p, 'a', 4 * PAGE);
	if (ftruncate(fd, 0) != 0) {
		printf("ftruncate: %s\n", strerror(errno));
		return;
	}
	nul = open("/dev/null", O_WRONLY);
	n = write(nul, p + PAGE, 100);
	printf("write from past the end: %s\n",
	    n == 100 || (n == -1 && errno == EFAULT) ? "answered" : "WRONG");
	if (pipe(pfd) == 0) {
		n = write(pfd[1], "0123456789", 10);
		n = read(pfd[0], p + 2 * PAGE, 10);
		printf("read into past the end: %s\n",
		    n == 10 || (n == -1 && errno == EFAULT) ? "answered"
		                                            : "WRONG");
	}
	/* One the VMM itself copies into (not a host call's buffer). */
	n = uname((struct utsname *)(p + 3 * PAGE));
	printf("uname into past the end: %s\n",
	    n == 0 || (n == -1 && errno == EFAULT) ? "answered" : "WRONG");
	n = pread(fd, buf, sizeof(buf), 0);
	printf("the file is empty: %s\n", n == 0 ? "yes" : "no");
	unlink("/tmp/keep-shmap-trunc");
	printf("survived\n");
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc > 1 && strcmp(argv[1], "truncated") == 0) {
		truncated();
		return 0;
	}
	anonymous();
	file_and_calls("/tmp/keep-shmap-file");
	semaphore();
	posix_shm();
	return failed;
}

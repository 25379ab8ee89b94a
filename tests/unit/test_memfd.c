/* Unit tests for lib/memfd.c: what a receiver of a memfd accepts, and
 * a view a child reads but cannot write. */
#include <sys/mman.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/memfd.h"

static void
test_sealed_round_trip(void **state)
{
	char *p;
	int fd;

	(void)state;
	fd = memfd_make_sealed("t", "hello", 5);
	assert_true(fd >= 0);
	assert_int_equal(memfd_check(fd, 5, 5), 0);
	p = memfd_read(fd, 5, 64);
	assert_non_null(p);
	assert_string_equal(p, "hello");
	free(p);
	/* Sealed: it can neither be written nor shrunk. */
	assert_int_equal(write(fd, "x", 1), -1);
	assert_int_equal(ftruncate(fd, 1), -1);
	close(fd);
	fd = memfd_make_sealed("t", NULL, 0);
	assert_true(fd >= 0);
	assert_int_equal(memfd_check(fd, 0, 0), 0);
	close(fd);
}

/* Two strings out of one memfd, as a run's stdout and stderr come. */
static void
test_read_at(void **state)
{
	char *p;
	int fd;

	(void)state;
	fd = memfd_make_sealed("t", "outerr", 6);
	assert_true(fd >= 0);
	p = memfd_read_at(fd, 0, 3);
	assert_non_null(p);
	assert_string_equal(p, "out");
	free(p);
	p = memfd_read_at(fd, 3, 3);
	assert_non_null(p);
	assert_string_equal(p, "err");
	free(p);
	p = memfd_read_at(fd, 6, 0);
	assert_non_null(p);
	assert_string_equal(p, "");
	free(p);
	/* Past the end, and ranges that do not fit in a file offset. */
	errno = 0;
	assert_null(memfd_read_at(fd, 4, 3));
	assert_int_equal(errno, EIO);
	assert_null(memfd_read_at(fd, 1, UINT64_MAX));
	assert_null(memfd_read_at(fd, UINT64_MAX - 1, 1));
	close(fd);
}

/* A memfd shorter than the length it comes with: refused before it is
 * mapped (a mapping of the missing part would raise SIGBUS). */
static void
test_short(void **state)
{
	int fd;

	(void)state;
	fd = memfd_make_sealed("t", "abc", 3);
	assert_true(fd >= 0);
	assert_int_equal(memfd_check(fd, 4096, 1 << 20), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_null(memfd_read(fd, 4, 1 << 20));
	assert_int_equal(errno, EMSGSIZE);
	/* Longer than the length is refused as well, and over the max. */
	assert_int_equal(memfd_check(fd, 2, 1 << 20), -1);
	assert_int_equal(memfd_check(fd, 3, 2), -1);
	assert_int_equal(errno, EMSGSIZE);
	close(fd);
}

/* Unsealed: the sender could shrink it after the check. */
static void
test_unsealed(void **state)
{
	int fd;

	(void)state;
	fd = memfd_new("t");
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "abc", 3), 3);
	assert_int_equal(memfd_check(fd, 3, 3), -1);
	assert_int_equal(errno, EPERM);
	/* Only some seals: still refused. */
	assert_int_equal(fcntl(fd, F_ADD_SEALS, F_SEAL_GROW), 0);
	assert_int_equal(memfd_check(fd, 3, 3), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(memfd_seal(fd), 0);
	assert_int_equal(memfd_check(fd, 3, 3), 0);
	close(fd);
	/* A memfd made without sealing allowed carries F_SEAL_SEAL only. */
	fd = memfd_create("t", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(memfd_check(fd, 0, 0), -1);
	assert_int_equal(errno, EPERM);
	close(fd);
}

/* Not a memfd at all: a pipe, a regular file. */
static void
test_not_memfd(void **state)
{
	char path[] = "/tmp/keep-memfd-XXXXXX";
	int p[2], fd;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_int_equal(memfd_check(p[0], 0, 0), -1);
	assert_int_equal(errno, EINVAL);
	close(p[0]);
	close(p[1]);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(memfd_check(fd, 0, 0), -1);
	assert_int_equal(errno, EINVAL);
	close(fd);
	assert_int_equal(memfd_check(-1, 0, 0), -1);
	assert_int_equal(errno, EBADF);
}

/*
 * memfd_owned_view: a child forked after it reads what the parent
 * writes later, cannot make its view writable, and has no writable view
 * of the parent's (nor the descriptor, closed before the fork).
 */
static void
test_owned_view(void **state)
{
	void *rw;
	const void *ro;
	volatile const uint8_t *r;
	uint8_t *w;
	int go[2], st;
	pid_t pid;
	char c;

	(void)state;
	assert_int_equal(memfd_owned_view("t", 8192, &rw, &ro), 0);
	w = rw;
	r = ro;
	w[5000] = 1;
	assert_int_equal(r[5000], 1);
	assert_int_equal(pipe(go), 0);
	if ((pid = fork()) == 0) {
		/* Each check its own exit code, for the parent to name. */
		if (read(go[0], &c, 1) != 1 || r[5000] != 1 || r[7000] != 2)
			_exit(1);
		if (mprotect((void *)ro, 8192, PROT_READ | PROT_WRITE) == 0 ||
		    errno != EACCES)
			_exit(2);
		/* The writable view is not there (msync: ENOMEM). */
		if (msync(rw, 8192, MS_ASYNC) == 0 || errno != ENOMEM)
			_exit(3);
		_exit(0);
	}
	assert_true(pid > 0);
	w[7000] = 2; /* after the fork: seen live */
	assert_int_equal(write(go[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	close(go[0]);
	close(go[1]);
	munmap(rw, 8192);
	munmap((void *)ro, 8192);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sealed_round_trip),
		cmocka_unit_test(test_read_at),
		cmocka_unit_test(test_short),
		cmocka_unit_test(test_unsealed),
		cmocka_unit_test(test_not_memfd),
		cmocka_unit_test(test_owned_view),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

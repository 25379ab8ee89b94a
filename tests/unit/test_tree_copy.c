/*
 * Unit tests for lib/tree_copy.c: a workspace's copy for a sandbox's
 * fork keeps files, directories, links, modes and holes; never follows a
 * link; leaves FIFOs out; stops at its bounds.
 */
#include <sys/stat.h>

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

#include "lib/tree.h"
#include "lib/tree_copy.h"

struct fixture {
	char root[64];
	int src, dst;
};

static const struct tree_copy_limits roomy = { 64 << 20, 1000, 16 };

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	int fd;

	if (f == NULL)
		return -1;
	strlcpy(f->root, "/tmp/keep-tree-copy-XXXXXX", sizeof(f->root));
	if (mkdtemp(f->root) == NULL ||
	    (fd = open(f->root, O_RDONLY | O_DIRECTORY)) == -1 ||
	    mkdirat(fd, "src", 0700) == -1 || mkdirat(fd, "dst", 0700) == -1 ||
	    (f->src = openat(fd, "src", O_RDONLY | O_DIRECTORY)) == -1 ||
	    (f->dst = openat(fd, "dst", O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	close(fd);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	close(f->src);
	close(f->dst);
	tree_remove(AT_FDCWD, f->root);
	free(f);
	return 0;
}

static void
put(int dir, const char *name, const char *text, mode_t mode)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL, mode);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void
expect_text(int dir, const char *name, const char *text)
{
	char buf[256];
	ssize_t n;
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	assert_string_equal(buf, text);
}

static void
test_files_dirs_links(void **state)
{
	struct fixture *f = *state;
	struct stat st;
	char target[64];
	ssize_t n;
	int sub;

	put(f->src, "a.txt", "alpha\n", 0640);
	put(f->src, "run.sh", "echo hi\n", 04755); /* set-uid is dropped */
	assert_int_equal(mkdirat(f->src, "d", 0750), 0);
	sub = openat(f->src, "d", O_RDONLY | O_DIRECTORY);
	assert_true(sub >= 0);
	put(sub, "b.txt", "beta\n", 0600);
	assert_int_equal(symlinkat("/etc/passwd", sub, "out"), 0);
	assert_int_equal(linkat(sub, "b.txt", f->src, "hard", 0), 0);
	assert_int_equal(mkfifoat(f->src, "fifo", 0600), 0);
	close(sub);

	assert_int_equal(tree_copy(f->src, f->dst, &roomy), 0);
	expect_text(f->dst, "a.txt", "alpha\n");
	expect_text(f->dst, "d/b.txt", "beta\n");
	expect_text(f->dst, "hard", "beta\n");
	assert_int_equal(fstatat(f->dst, "a.txt", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(fstatat(f->dst, "run.sh", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(fstatat(f->dst, "d", &st, 0), 0);
	assert_int_equal(st.st_mode & 07777, 0750);
	/* The link is a link, to where it pointed: never followed. */
	assert_int_equal(fstatat(f->dst, "d/out", &st, AT_SYMLINK_NOFOLLOW), 0);
	assert_true(S_ISLNK(st.st_mode));
	n = readlinkat(f->dst, "d/out", target, sizeof(target) - 1);
	assert_true(n > 0);
	target[n] = '\0';
	assert_string_equal(target, "/etc/passwd");
	/* A hard link is a file of its own in the copy. */
	assert_int_equal(fstatat(f->dst, "hard", &st, 0), 0);
	assert_int_equal(st.st_nlink, 1);
	/* A FIFO is left out. */
	assert_int_equal(fstatat(f->dst, "fifo", &st, AT_SYMLINK_NOFOLLOW), -1);
	assert_int_equal(errno, ENOENT);
}

/* A 1 GiB file with 4 KiB of data costs 4 KiB in the copy too. */
static void
test_holes_stay_holes(void **state)
{
	struct fixture *f = *state;
	const struct tree_copy_limits tight = { 1 << 20, 1000, 16 };
	struct stat st;
	char page[4096];
	int fd;

	fd = openat(f->src, "sparse", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	memset(page, 'z', sizeof(page));
	assert_int_equal(
	    pwrite(fd, page, sizeof(page), 512 << 20), (ssize_t)sizeof(page));
	assert_int_equal(ftruncate(fd, 1 << 30), 0);
	close(fd);

	assert_int_equal(tree_copy(f->src, f->dst, &tight), 0);
	assert_int_equal(fstatat(f->dst, "sparse", &st, 0), 0);
	assert_int_equal(st.st_size, 1 << 30);
	assert_true((uint64_t)st.st_blocks * 512 <= 64 * 1024);
	fd = openat(f->dst, "sparse", O_RDONLY);
	assert_true(fd >= 0);
	memset(page, 0, sizeof(page));
	assert_int_equal(
	    pread(fd, page, sizeof(page), 512 << 20), (ssize_t)sizeof(page));
	assert_int_equal(page[0], 'z');
	assert_int_equal(page[4095], 'z');
	assert_int_equal(pread(fd, page, 1, 0), 1);
	assert_int_equal(page[0], 0);
	close(fd);
}

static void
test_bounds(void **state)
{
	struct fixture *f = *state;
	const struct tree_copy_limits small = { 8192, 1000, 16 };
	const struct tree_copy_limits few = { 0, 2, 16 };
	const struct tree_copy_limits shallow = { 0, 1000, 2 };
	char big[64 * 1024];
	int fd, d1, d2;

	memset(big, 'b', sizeof(big));
	fd = openat(f->src, "big", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	assert_int_equal(fsync(fd), 0);
	close(fd);
	assert_int_equal(tree_copy(f->src, f->dst, &small), -1);
	assert_int_equal(errno, EDQUOT);

	assert_int_equal(tree_remove(f->src, "big"), 0);
	assert_int_equal(mkdirat(f->src, "1", 0700), 0);
	d1 = openat(f->src, "1", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mkdirat(d1, "2", 0700), 0);
	d2 = openat(d1, "2", O_RDONLY | O_DIRECTORY);
	assert_int_equal(mkdirat(d2, "3", 0700), 0);
	close(d1);
	close(d2);
	assert_int_equal(tree_remove(f->dst, "big"), 0);
	assert_int_equal(tree_copy(f->src, f->dst, &few), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(tree_remove(f->dst, "1"), 0);
	assert_int_equal(tree_copy(f->src, f->dst, &shallow), -1);
	assert_int_equal(errno, E2BIG);
	assert_int_equal(tree_remove(f->dst, "1"), 0);
	assert_int_equal(tree_copy(f->src, f->dst, &roomy), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
		    test_files_dirs_links, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_holes_stay_holes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bounds, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

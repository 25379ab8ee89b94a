/* Unit tests for lib/tree.c: rm -r of any depth, symlinks not followed. */
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

struct fixture {
	char root[64];
	int fd;
};

static int
setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return -1;
	strlcpy(f->root, "/tmp/keep-tree-XXXXXX", sizeof(f->root));
	if (mkdtemp(f->root) == NULL ||
	    (f->fd = open(f->root, O_RDONLY | O_DIRECTORY)) == -1)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture *f = *state;

	tree_remove(AT_FDCWD, f->root);
	close(f->fd);
	free(f);
	return 0;
}

static void
touch(int dir, const char *name)
{
	int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

/* A chain of `depth` directories below dir/name, two files and a
 * subdirectory sibling at each level. */
static void
deep_tree(int dir, const char *name, int depth)
{
	int fd = dup(dir), next, i;

	assert_true(fd >= 0);
	for (i = 0; i < depth; i++) {
		const char *n = i == 0 ? name : "d";

		assert_int_equal(mkdirat(fd, n, 0700), 0);
		next = openat(fd, n, O_RDONLY | O_DIRECTORY);
		assert_true(next >= 0);
		close(fd);
		fd = next;
		touch(fd, "a");
		touch(fd, "b");
		assert_int_equal(mkdirat(fd, "empty", 0700), 0);
	}
	close(fd);
}

static void
test_deep(void **state)
{
	struct fixture *f = *state;
	struct stat sb;

	/* Deeper than the old limit of 32, and than 1,024 descriptors. */
	deep_tree(f->fd, "ws", 200);
	assert_int_equal(tree_remove(f->fd, "ws"), 0);
	assert_int_equal(fstatat(f->fd, "ws", &sb, 0), -1);
	assert_int_equal(errno, ENOENT);
	deep_tree(f->fd, "ws", 3000);
	assert_int_equal(tree_remove(f->fd, "ws"), 0);
	assert_int_equal(fstatat(f->fd, "ws", &sb, 0), -1);
}

static void
test_symlinks_not_followed(void **state)
{
	struct fixture *f = *state;
	struct stat sb;
	int ws;

	assert_int_equal(mkdirat(f->fd, "outside", 0700), 0);
	touch(f->fd, "outside/keep");
	deep_tree(f->fd, "ws", 3);
	ws = openat(f->fd, "ws", O_RDONLY | O_DIRECTORY);
	assert_true(ws >= 0);
	assert_int_equal(symlinkat("../outside", ws, "link"), 0);
	close(ws);
	assert_int_equal(tree_remove(f->fd, "ws"), 0);
	assert_int_equal(fstatat(f->fd, "outside/keep", &sb, 0), 0);
	assert_int_equal(fstatat(f->fd, "ws", &sb, 0), -1);
}

static void
test_files_and_absent(void **state)
{
	struct fixture *f = *state;
	struct stat sb;

	touch(f->fd, "file");
	assert_int_equal(tree_remove(f->fd, "file"), 0);
	assert_int_equal(fstatat(f->fd, "file", &sb, 0), -1);
	assert_int_equal(tree_remove(f->fd, "nothing"), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_deep, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_symlinks_not_followed, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_files_and_absent, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

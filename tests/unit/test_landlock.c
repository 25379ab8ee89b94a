/* Unit tests for lib/landlock.c: a confined child reaches the files
 * beneath its directory and nothing else; it cannot signal its parent
 * (ABI 6). Each confinement happens in a forked child, since it cannot
 * be undone. Where the kernel has no Landlock, the tests check that
 * landlock_confine_dir says so (0) and leave it at that. */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lib/landlock.h"

struct env {
	char root[64]; /* holds in/ and out/ */
	char in[96], out[96];
};

static int
setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	char path[160];
	int fd;

	assert_non_null(e);
	strlcpy(e->root, "/tmp/keep-landlock-XXXXXX", sizeof(e->root));
	assert_non_null(mkdtemp(e->root));
	snprintf(e->in, sizeof(e->in), "%s/in", e->root);
	snprintf(e->out, sizeof(e->out), "%s/out", e->root);
	assert_int_equal(mkdir(e->in, 0700), 0);
	assert_int_equal(mkdir(e->out, 0700), 0);
	snprintf(path, sizeof(path), "%s/secret", e->out);
	assert_true((fd = open(path, O_WRONLY | O_CREAT, 0600)) >= 0);
	close(fd);
	*state = e;
	return 0;
}

static int
teardown(void **state)
{
	struct env *e = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", e->root);
	assert_int_equal(system(cmd), 0);
	free(e);
	return 0;
}

/* Run fn in a child confined to e->in; its exit status (0: as expected). */
static int
confined(struct env *e, int (*fn)(struct env *, int abi))
{
	int status, dfd, abi;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    (dfd = open(e->in, O_RDONLY | O_DIRECTORY)) == -1)
			_exit(100);
		if ((abi = landlock_confine_dir(dfd)) == -1)
			_exit(101);
		_exit(fn(e, abi));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int
files_inside_only(struct env *e, int abi)
{
	char path[160];
	int fd;

	if (abi != landlock_abi())
		return 1;
	if (abi == 0)
		return 0; /* no Landlock here: nothing more to check */
	snprintf(path, sizeof(path), "%s/mine", e->in);
	if ((fd = open(path, O_RDWR | O_CREAT, 0600)) == -1)
		return 2;
	close(fd);
	snprintf(path, sizeof(path), "%s/sub", e->in);
	if (mkdir(path, 0700) == -1)
		return 3;
	snprintf(path, sizeof(path), "%s/secret", e->out);
	if (open(path, O_RDONLY) != -1 || errno != EACCES)
		return 4;
	snprintf(path, sizeof(path), "%s/new", e->out);
	if (open(path, O_WRONLY | O_CREAT, 0600) != -1 || errno != EACCES)
		return 5;
	if (open("/etc/passwd", O_RDONLY) != -1)
		return 6;
	snprintf(path, sizeof(path), "%s/../out/secret", e->in);
	if (open(path, O_RDONLY) != -1)
		return 7;
	return 0;
}

static void
test_files(void **state)
{
	assert_int_equal(confined(*state, files_inside_only), 0);
}

static int
no_signal_out(struct env *e, int abi)
{
	(void)e;
	if (abi < 6)
		return 0; /* signals are scoped from ABI 6 only */
	if (kill(getppid(), 0) != -1 || errno != EPERM)
		return 1;
	/* Its own process is in its domain. */
	return kill(getpid(), 0) == 0 ? 0 : 2;
}

static void
test_signals(void **state)
{
	assert_int_equal(confined(*state, no_signal_out), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

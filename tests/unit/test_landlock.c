/* Unit tests for lib/landlock.c: a confined child reaches the files
 * beneath its directory and nothing else; it cannot signal its parent
 * (ABI 6); socket nodes and TCP only with the flags that allow them. Each confinement happens in a forked child, since it cannot
 * be undone. Where the kernel has no Landlock, the tests check that
 * landlock_confine_dir says so (0) and leave it at that. */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>

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

static unsigned confine_flags; /* LANDLOCK_* for the next confined() */

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
		if ((abi = landlock_confine_dir_flags(dfd, confine_flags)) ==
		    -1)
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

/* Bind an AF_UNIX socket at in/s and a TCP socket on loopback: 0 for
 * each that worked, bit 1 and 2 for those refused (EACCES). */
static int
binds(struct env *e)
{
	struct sockaddr_un un;
	struct sockaddr_in in;
	int fd, rc = 0;

	memset(&un, 0, sizeof(un));
	un.sun_family = AF_UNIX;
	snprintf(un.sun_path, sizeof(un.sun_path), "%s/s", e->in);
	if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return 8;
	if (bind(fd, (struct sockaddr *)&un, sizeof(un)) == -1)
		rc |= errno == EACCES ? 1 : 8;
	close(fd);
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return 8;
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) == -1)
		rc |= errno == EACCES ? 2 : 8;
	close(fd);
	return rc;
}

static int
sockets_refused(struct env *e, int abi)
{
	/* Socket nodes from ABI 1, TCP from ABI 4. */
	return binds(e) == (abi == 0 ? 0 : abi < 4 ? 1 : 3) ? 0 : 1;
}

static int
sockets_allowed(struct env *e, int abi)
{
	(void)abi;
	return binds(e);
}

static void
test_sockets(void **state)
{
	confine_flags = 0;
	assert_int_equal(confined(*state, sockets_refused), 0);
	confine_flags = LANDLOCK_SOCKETS | LANDLOCK_TCP;
	assert_int_equal(confined(*state, sockets_allowed), 0);
	confine_flags = 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_files, setup, teardown),
		cmocka_unit_test_setup_teardown(test_signals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sockets, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

/*
 * Symlinks that would lead out of the workspace, or nowhere: the guest
 * may create any symlink, and following one resolves as in a chroot at
 * the workspace: an absolute target starts at the workspace, ".." stops
 * at it. So "/etc/passwd" is the workspace's own (the test puts a decoy
 * there), never the host's. Each link is tried with every call that
 * follows a path; each line names the call and Linux's errno name for
 * its answer, or "ok", or what a read gave. The test compares the lines
 * and checks the host outside the workspace is untouched. Links made by
 * the host side (before the run) are tried too: "host-abs" (to
 * /etc/passwd) and "host-up" (to ../..).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static const char *
answer(int rc)
{
	if (rc >= 0)
		return "ok";
	switch (errno) {
	case EXDEV:
		return "EXDEV";
	case ELOOP:
		return "ELOOP";
	case ENOENT:
		return "ENOENT";
	case EACCES:
		return "EACCES";
	case EPERM:
		return "EPERM";
	case ENOTDIR:
		return "ENOTDIR";
	case EEXIST:
		return "EEXIST";
	case EISDIR:
		return "EISDIR";
	default:
		return strerror(errno);
	}
}

static void
say(const char *link, const char *call, int rc)
{
	printf("%s %s: %s\n", link, call, answer(rc));
}

/* What reading path gives: its first line, or the errno. */
static void
read_through(const char *link)
{
	char buf[128];
	ssize_t n;
	int fd = open(link, O_RDONLY);

	if (fd < 0) {
		say(link, "read", -1);
		return;
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0) {
		say(link, "read", -1);
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	printf("%s read: \"%s\"\n", link, buf);
}

/* Every way a path can be followed, through link (and below it). */
static void
attack(const char *link, const char *below)
{
	char sub[256];
	struct stat st;
	struct timeval tv[2] = { { 1, 0 }, { 1, 0 } };
	DIR *d;
	int fd, rc;

	snprintf(sub, sizeof(sub), "%s/%s", link, below);
	read_through(link);
	read_through(sub);
	fd = open(link, O_WRONLY | O_APPEND);
	say(link, "open for writing", fd);
	if (fd >= 0)
		close(fd);
	fd = open(sub, O_WRONLY | O_CREAT, 0644);
	say(link, "create below", fd);
	if (fd >= 0)
		close(fd);
	say(link, "stat", stat(link, &st));
	say(link, "stat below", stat(sub, &st));
	say(link, "chmod", chmod(link, 0640));
	say(link, "utimes", utimes(link, tv));
	say(link, "mkdir below", mkdir(sub, 0755));
	rc = linkat(AT_FDCWD, link, AT_FDCWD, "hard", AT_SYMLINK_FOLLOW);
	say(link, "link follow", rc);
	if (rc == 0)
		unlink("hard");
	d = opendir(link);
	say(link, "opendir", d != NULL ? 0 : -1);
	if (d != NULL)
		closedir(d);
	say(link, "chdir", chdir(link));
	if (chdir("/") != 0)
		printf("chdir back failed\n");
	/* lstat and readlink see the link itself: that is allowed. */
	say(link, "lstat", lstat(link, &st));
}

int
main(void)
{
	char buf[256];
	ssize_t n;

	say("abs", "symlink", symlink("/etc/passwd", "abs"));
	say("up", "symlink", symlink("../..", "up"));
	say("deep", "symlink", symlink("up/up/etc/passwd", "deep"));
	say("loop", "symlink", symlink("loop", "loop"));
	say("ping", "symlink", symlink("pong", "ping"));
	say("pong", "symlink", symlink("ping", "pong"));
	say("viaproc", "symlink",
	    symlink("/proc/self/root/etc/passwd", "viaproc"));
	n = readlink("abs", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("abs readlink: %s\n", buf);
	attack("abs", "x");
	attack("up", "etc/passwd");
	attack("deep", "x");
	attack("loop", "x");
	attack("ping", "x");
	attack("viaproc", "x");
	attack("host-abs", "x");
	attack("host-up", "etc/passwd");
	return 0;
}

/*
 * The file calls beyond open/read/write, with Linux's answers: modes,
 * links, times, statfs, umask, owners, truncation, statx, xattrs,
 * sendfile, copy_file_range, close_range, and the descriptor limit.
 * Runs in a fresh workspace; prints one line per check ("name: result")
 * for tests/integration/vmm_files.sh to compare.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

static const char *
ename(int e)
{
	static char buf[16];

	switch (e) {
	case 0:
		return "ok";
	case EPERM:
		return "EPERM";
	case ENOENT:
		return "ENOENT";
	case EBADF:
		return "EBADF";
	case EACCES:
		return "EACCES";
	case EEXIST:
		return "EEXIST";
	case EXDEV:
		return "EXDEV";
	case ENOTDIR:
		return "ENOTDIR";
	case EISDIR:
		return "EISDIR";
	case EINVAL:
		return "EINVAL";
	case EMFILE:
		return "EMFILE";
	case EROFS:
		return "EROFS";
	case ENOTSUP:
		return "ENOTSUP";
	case ENODATA:
		return "ENODATA";
	case EBUSY:
		return "EBUSY";
	case EDQUOT:
		return "EDQUOT";
	default:
		snprintf(buf, sizeof(buf), "errno %d", e);
		return buf;
	}
}

/* rc < 0: the errno; else "ok". */
static void
show(const char *name, long rc)
{
	printf("%s: %s\n", name, ename(rc < 0 ? errno : 0));
}

static void
put_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, text, strlen(text)) < 0)
		perror(path);
	close(fd);
}

int
main(void)
{
	struct stat st;
	struct statfs sf;
	struct rlimit rl;
	char buf[256];
	ssize_t n;
	int fd, fd2, i, opened;

	/* umask applies to what is created */
	printf("umask old: %03o\n", (unsigned)umask(027));
	put_file("masked", "x");
	stat("masked", &st);
	printf("umask applied: %03o\n", (unsigned)(st.st_mode & 0777));
	umask(022);

	/* chmod family */
	put_file("f", "hello\n");
	show("chmod", chmod("f", 0600));
	stat("f", &st);
	printf("mode after chmod: %03o\n", (unsigned)(st.st_mode & 0777));
	fd = open("f", O_RDONLY);
	show("fchmod", fchmod(fd, 0640));
	close(fd);
	show("fchmodat", fchmodat(AT_FDCWD, "f", 0644, 0));
	stat("f", &st);
	printf("mode after fchmodat: %03o\n", (unsigned)(st.st_mode & 0777));
	show("chmod missing", chmod("nope", 0600));
	show("chmod /dev/null", chmod("/dev/null", 0600));

	/* owners: the guest's own ids */
	printf("uid %d gid %d file uid %d\n", (int)getuid(), (int)getgid(),
	    (int)st.st_uid);
	show("chown self", chown("f", getuid(), getgid()));
	show("chown -1", chown("f", (uid_t)-1, (gid_t)-1));
	show("chown root", chown("f", 0, 0));
	show("lchown missing", lchown("nope", getuid(), getgid()));
	{
		gid_t g[4];
		int k = getgroups(4, g);

		printf("getgroups: %d first %d\n", k, k > 0 ? (int)g[0] : -1);
	}
	show("setgroups", setgroups(0, NULL));
	show("setuid self", setuid(1000));
	show("setgid self", setgid(1000));
	show("setuid root", setuid(0));
	show("setresuid -1", setresuid(-1, 1000, -1));

	/* symlinks and hard links */
	show("symlink", symlink("f", "lnk"));
	show("symlink exists", symlink("f", "lnk"));
	n = readlink("lnk", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("readlink: %s\n", buf);
	show("readlink of a file", readlink("f", buf, sizeof(buf)));
	show("readlink missing", readlink("nope", buf, sizeof(buf)));
	show("stat through link", stat("lnk", &st));
	show("link", link("f", "hard"));
	stat("f", &st);
	printf("nlink: %d\n", (int)st.st_nlink);
	show("linkat follow",
	    linkat(AT_FDCWD, "lnk", AT_FDCWD, "hard2", AT_SYMLINK_FOLLOW));
	show("symlink out", symlink("/etc/passwd", "out"));
	show("open link out", open("out", O_RDONLY));

	/* mkdir and friends at the root */
	show("mkdir /", mkdir("/", 0755));
	show("mkdir /tmp", mkdir("/tmp", 0755));
	show("rmdir /", rmdir("/"));
	show("mkdir /proc", mkdir("/proc", 0755));

	/* times: what touch does */
	{
		struct timespec ts[2] = { { 1000000000, 0 },
			{ 1234567890, 0 } };

		show("utimensat", utimensat(AT_FDCWD, "f", ts, 0));
		stat("f", &st);
		printf("mtime: %ld\n", (long)st.st_mtime);
		show("utimensat now", utimensat(AT_FDCWD, "f", NULL, 0));
		stat("f", &st);
		printf("mtime moved: %s\n",
		    st.st_mtime > 1234567890 ? "yes" : "no");
		show("utimensat missing", utimensat(AT_FDCWD, "nope", NULL, 0));
		fd = open("touched", O_WRONLY | O_CREAT, 0644);
		show("futimens", futimens(fd, ts));
		close(fd);
	}

	/* creat and truncate */
	fd = creat("c", 0644);
	show("creat", fd);
	if (write(fd, "0123456789", 10) != 10)
		perror("write");
	close(fd);
	show("truncate", truncate("c", 4));
	stat("c", &st);
	printf("size after truncate: %ld\n", (long)st.st_size);
	show("truncate dir", truncate("/tmp", 0));
	show("truncate missing", truncate("nope", 0));

	/* statfs: the workspace's own figures */
	show("statfs", statfs("/", &sf));
	printf("statfs bsize %ld blocks>0 %d free<=blocks %d\n",
	    (long)sf.f_bsize, sf.f_blocks > 0, sf.f_bfree <= sf.f_blocks);
	fd = open("f", O_RDONLY);
	show("fstatfs", fstatfs(fd, &sf));
	close(fd);
	show("statfs missing", statfs("nope", &sf));

	/* statx (musl 1.2.3 has no wrapper: the raw call) */
	{
		struct {
			unsigned mask, blksize;
			unsigned long long attributes;
			unsigned nlink, uid, gid;
			unsigned short mode, pad;
			unsigned long long ino, size, blocks, amask;
			char rest[256 - 64];
		} sx;

		show("statx", syscall(SYS_statx, AT_FDCWD, "c", 0, 0x7ff, &sx));
		printf("statx size %llu mode %o\n", sx.size,
		    (unsigned)(sx.mode & 0777));
	}

	/* xattrs: a filesystem without them */
	show("getxattr", getxattr("f", "user.x", buf, sizeof(buf)));
	printf("listxattr: %ld\n", (long)listxattr("f", buf, sizeof(buf)));
	show("setxattr", setxattr("f", "user.x", "v", 1, 0));
	show("getxattr missing", getxattr("nope", "user.x", buf, 1));

	/* sendfile and copy_file_range */
	fd = open("f", O_RDONLY);
	fd2 = open("copy", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	printf("sendfile: %ld\n", (long)sendfile(fd2, fd, NULL, 100));
	close(fd2);
	fd2 = open("copy2", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	{
		loff_t off = 1;

		printf("copy_file_range: %ld\n",
		    (long)copy_file_range(fd, &off, fd2, NULL, 100, 0));
		printf("off after: %ld\n", (long)off);
	}
	close(fd2);
	close(fd);
	fd = open("copy2", O_RDONLY);
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("copied: %s", buf);
	close(fd);

	/* O_PATH, modes through /proc/self/fd, no following for lchmod */
	fd = open("lnk", O_PATH | O_NOFOLLOW);
	printf("O_PATH of a symlink: %s\n",
	    fd >= 0 && fstat(fd, &st) == 0 && S_ISLNK(st.st_mode) ? "the link"
	                                                          : "no");
	close(fd);
	show("lchmod of a symlink",
	    fchmodat(AT_FDCWD, "lnk", 0600, AT_SYMLINK_NOFOLLOW));
	show("lchmod of a file",
	    fchmodat(AT_FDCWD, "f", 0640, AT_SYMLINK_NOFOLLOW));
	stat("f", &st);
	printf("mode after lchmod: %o\n", (unsigned)(st.st_mode & 0777));
	chmod("f", 0644);
	/* descriptor flags: dup3's O_CLOEXEC, ioctl FIONBIO and FIOCLEX */
	fd = open("f", O_RDONLY);
	fd2 = open("f", O_RDONLY);
	show("dup3 cloexec", dup3(fd, fd2, O_CLOEXEC));
	printf("cloexec after dup3: %d\n", fcntl(fd2, F_GETFD) & FD_CLOEXEC);
	i = 1;
	show("FIONBIO", ioctl(fd, FIONBIO, &i));
	printf("nonblock after FIONBIO: %d\n",
	    (fcntl(fd, F_GETFL) & O_NONBLOCK) != 0);
	show("FIOCLEX", ioctl(fd, FIOCLEX));
	printf("cloexec after FIOCLEX: %d\n", fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	close(fd2);
	/* F_SETFL O_NONBLOCK on a pipe: an empty one answers EAGAIN */
	{
		int p[2];
		char c;

		show("pipe", pipe(p));
		fcntl(p[0], F_SETFL, O_NONBLOCK);
		printf("empty nonblocking pipe: %s\n",
		    read(p[0], &c, 1) < 0 && errno == EAGAIN ? "EAGAIN" : "no");
		close(p[0]);
		close(p[1]);
	}
	/* a trailing slash means a directory */
	show("open file/", open("f/", O_RDONLY));
	show("create name/", open("newname/", O_WRONLY | O_CREAT, 0644));
	show("open dir/", (fd = open("/tmp/", O_RDONLY)) >= 0 ? 0 : -1);
	close(fd);
	printf("newname created: %s\n",
	    access("newname", F_OK) == 0 ? "yes" : "no");
	/* statfs counts what the workspace holds, quota or not */
	statfs("/", &sf);
	printf("statfs used>0: %d\n", sf.f_bfree < sf.f_blocks);

	/* close_range */
	fd = open("f", O_RDONLY);
	fd2 = dup(fd);
	show("close_range", syscall(SYS_close_range, fd, fd2, 0));
	show("closed", fcntl(fd2, F_GETFD));

	/* descriptors: 1024 by default */
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("RLIMIT_NOFILE: %lu\n", (unsigned long)rl.rlim_cur);
	for (opened = 0, i = 0; i < 2000; i++) {
		if (open("f", O_RDONLY) < 0)
			break;
		opened++;
	}
	printf("opened until %s: %d\n", ename(errno), opened + 3);
	return 0;
}

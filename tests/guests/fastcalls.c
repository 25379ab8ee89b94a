/*
 * The calls the guest answers itself (docs/vmm.md "Calls answered in the
 * guest"): every case of stat, lstat, newfstatat, fstat, access,
 * faccessat, open and openat (of paths that do not exist), lseek, ioctl,
 * rt_sigaction, getcwd, read and getdents64 at their end, fcntl F_GETFD,
 * getpid, gettid and the ids it answers, and the cases around them it
 * leaves to the VMM, each printed as its raw result (the whole struct
 * stat in hex). tests/integration/vmm_fastcalls.sh runs it twice, once
 * with the answers in the guest and once with every call exiting
 * (--trace), and the two outputs must be the same byte for byte; also
 * in a forked child, after a vfork child, and while a second thread
 * exists.
 *
 * usage: fastcalls [ROUNDS]   (repeats the stats ROUNDS times, default 1)
 *        fastcalls poke     (writes to the VMM's answers: must fault)
 *        fastcalls alarms [ROUNDS]
 *                           (stats and getcwd under a 200 us interval
 *                            timer whose handler stats too: every
 *                            answer right, the handler run; ROUNDS
 *                            rounds at least, default 200000)
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

/* The kernel's struct sigaction. */
struct ksa {
	uint64_t handler, flags, restorer, mask;
};

static void closed_pages(void);

static void
show(const char *what, long rc, const void *buf, size_t len)
{
	const unsigned char *b = buf;
	const struct stat *st = buf;
	size_t i;

	printf("%s: %ld", what, rc);
	if (rc < 0)
		printf(" (%s)", strerror((int)-rc));
	/* A workspace file's stat is the host's (times, inode numbers):
	 * only what both runs' fresh copies share. */
	if (rc >= 0 && buf != NULL && len == sizeof(*st) &&
	    st->st_dev != 0x6b) {
		printf(" workspace mode 0%o uid %u size %lld\n",
		    (unsigned)st->st_mode, (unsigned)st->st_uid,
		    S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size);
		return;
	}
	if (rc >= 0 && buf != NULL) {
		printf(" ");
		for (i = 0; i < len; i++)
			printf("%02x", b[i]);
	}
	printf("\n");
}

/* A getdents64 answer by its entries' names and types. */
static void
show_names(const char *what, long n, const char *dents)
{
	const unsigned char *buf = (const unsigned char *)dents;
	long at = 0;

	printf("%s: %ld", what, n);
	while (n > 0 && at + 19 < n) {
		unsigned short reclen;

		memcpy(&reclen, buf + at + 16, 2);
		if (reclen < 20 || at + reclen > n)
			break;
		printf(" %s/%u", (const char *)buf + at + 19, buf[at + 18]);
		at += reclen;
	}
	printf("\n");
}

static long
raw(long nr, long a, long b, long c, long d)
{
	long r = syscall(nr, a, b, c, d);

	return r == -1 ? -errno : r;
}

static const char *const paths[] = { "/d/a.txt", "/d", "/", "/d/", "/nope/",
	"/d/a.txt/x/", "/lib/x86_64-linux-gnu/glibc-hwcaps/x86-64-v2",
	"//d//./sub/../a.txt", "/d/a.txt/", "/nope", "/d/nope", "/x.zip/in",
	"/x.zip/in/deeper", "/d/sub", "/d/sub/b.txt", "/../d/./a.txt", "/proc",
	"/proc/self/status", "/dev/null", "/dev", "/ws.txt", "/wsdir",
	"/wsdir/", "/tmp", "", "a.txt", "sub/b.txt", "." };

/* open and openat with the flags ld.so and CPython use, and a few
 * more; a descriptor opened is closed at once (its number is printed:
 * the same in both runs). access and faccessat of the same. */
static void
opens(const char *who, const char *path)
{
	static const long flags[] = { O_RDONLY | O_CLOEXEC,
		O_RDONLY | O_DIRECTORY | O_CLOEXEC, O_WRONLY | O_CREAT, O_RDWR,
		O_PATH, O_WRONLY | O_CREAT | O_EXCL | O_TRUNC };
	char what[160];
	size_t i;
	long fd;

	for (i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		snprintf(
		    what, sizeof(what), "%s open 0%lo %s", who, flags[i], path);
		fd = raw(SYS_open, (long)path, flags[i], 0644, 0);
		show(what, fd, NULL, 0);
		if (fd >= 0)
			close((int)fd);
		snprintf(what, sizeof(what), "%s openat(99) 0%lo %s", who,
		    flags[i], path);
		fd = raw(SYS_openat, 99, (long)path, flags[i], 0644);
		show(what, fd, NULL, 0);
		if (fd >= 0)
			close((int)fd);
	}
	snprintf(what, sizeof(what), "%s access %s", who, path);
	show(what, raw(SYS_access, (long)path, F_OK, 0, 0), NULL, 0);
	snprintf(what, sizeof(what), "%s faccessat %s", who, path);
	show(what, raw(SYS_faccessat, 99, (long)path, R_OK, 0), NULL, 0);
	snprintf(what, sizeof(what), "%s faccessat2 %s", who, path);
	show(what, raw(SYS_faccessat2, AT_FDCWD, (long)path, W_OK, 0), NULL, 0);
}

static void
stats(const char *who, int with_opens)
{
	struct stat st;
	char what[128];
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		memset(&st, 0xa5, sizeof(st));
		snprintf(what, sizeof(what), "%s stat %s", who, paths[i]);
		show(what, raw(SYS_stat, (long)paths[i], (long)&st, 0, 0), &st,
		    sizeof(st));
		memset(&st, 0xa5, sizeof(st));
		snprintf(what, sizeof(what), "%s lstat %s", who, paths[i]);
		show(what, raw(SYS_lstat, (long)paths[i], (long)&st, 0, 0), &st,
		    sizeof(st));
		memset(&st, 0xa5, sizeof(st));
		snprintf(
		    what, sizeof(what), "%s fstatat(99) %s", who, paths[i]);
		show(what,
		    raw(SYS_newfstatat, 99, (long)paths[i], (long)&st, 0), &st,
		    sizeof(st));
		memset(&st, 0xa5, sizeof(st));
		snprintf(what, sizeof(what), "%s fstatat(CWD, EMPTY) %s", who,
		    paths[i]);
		show(what,
		    raw(SYS_newfstatat, AT_FDCWD, (long)paths[i], (long)&st,
		        AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW),
		    &st, sizeof(st));
		if (with_opens)
			opens(who, paths[i]);
	}
	/* Bad pointers: EFAULT from the VMM, whoever looked first. */
	show("stat bad path", raw(SYS_stat, 16, (long)&st, 0, 0), NULL, 0);
	show("stat bad buffer", raw(SYS_stat, (long)"/d/a.txt", 16, 0, 0), NULL,
	    0);
	show("stat missing, bad buffer", raw(SYS_stat, (long)"/nope", 16, 0, 0),
	    NULL, 0);
	show("stat kernel buffer",
	    raw(SYS_stat, (long)"/d/a.txt", 0x3a000, 0, 0), NULL, 0);
	show("open bad path", raw(SYS_open, 16, O_RDONLY, 0, 0), NULL, 0);
	show("access bad path", raw(SYS_access, 16, F_OK, 0, 0), NULL, 0);
	closed_pages();
}

/* Pointers into pages the program does not hold (a PROT_NONE
 * reservation, pages it unmapped) are EFAULT, as natively, whether the
 * guest or the VMM answers; and an answer into, or a path from, a page
 * it maps lands there. */
static void
closed_pages(void)
{
	char *resv =
	    mmap(NULL, 8192, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *held = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct stat *st;

	if (resv == MAP_FAILED || held == MAP_FAILED) {
		printf("closed pages: mmap failed\n");
		return;
	}
	show("stat into a reservation",
	    raw(SYS_stat, (long)"/d/a.txt", (long)resv, 0, 0), NULL, 0);
	show("getcwd into a reservation", raw(SYS_getcwd, (long)resv, 64, 0, 0),
	    NULL, 0);
	show("stat of a path in a reservation",
	    raw(SYS_stat, (long)resv, (long)held, 0, 0), NULL, 0);
	/* A path that runs from a held page into a freed one. */
	munmap(held + 2 * 4096, 4096);
	memset(held + 4096, 'a', 4096);
	show("stat of a path running into a freed page",
	    raw(SYS_stat, (long)(held + 4096 + 4000), (long)held, 0, 0), NULL,
	    0);
	st = (struct stat *)(held + 4096 + 4096 - sizeof(*st) / 2);
	show("stat into a held and a freed page",
	    raw(SYS_stat, (long)"/d/a.txt", (long)st, 0, 0), NULL, 0);
	strcpy(held, "/d/a.txt");
	st = (struct stat *)(held + 64);
	show("stat from and into a held page",
	    raw(SYS_stat, (long)held, (long)st, 0, 0), st, sizeof(*st));
	munmap(resv, 8192);
	munmap(held, 2 * 4096);
	show("stat into an unmapped page",
	    raw(SYS_stat, (long)"/d/a.txt", (long)held, 0, 0), NULL, 0);
}

static void
fds(const char *who)
{
	int fd[6], i;
	struct stat st;
	char what[96], buf[8];

	fd[0] = 0;
	fd[1] = 1;
	fd[2] = open("/d/a.txt", O_RDONLY);
	fd[3] = open("/d", O_RDONLY | O_DIRECTORY);
	fd[4] = open("/dev/null", O_RDONLY);
	fd[5] = open("/d/sub/b.txt", O_RDONLY);
	close(fd[5]); /* now free */
	for (i = 0; i < 6; i++) {
		memset(&st, 0xa5, sizeof(st));
		snprintf(what, sizeof(what), "%s fstat fd%d", who, i);
		show(what, raw(SYS_fstat, fd[i], (long)&st, 0, 0), &st,
		    sizeof(st));
		memset(&st, 0xa5, sizeof(st));
		snprintf(what, sizeof(what), "%s fstatat EMPTY fd%d", who, i);
		show(what,
		    raw(SYS_newfstatat, fd[i], (long)"", (long)&st,
		        AT_EMPTY_PATH),
		    &st, sizeof(st));
		snprintf(what, sizeof(what), "%s TCGETS fd%d", who, i);
		show(
		    what, raw(SYS_ioctl, fd[i], 0x5401, (long)buf, 0), NULL, 0);
		snprintf(what, sizeof(what), "%s TCGETS+high fd%d", who, i);
		show(what, raw(SYS_ioctl, fd[i], 0x100005401L, (long)buf, 0),
		    NULL, 0);
		snprintf(what, sizeof(what), "%s tell fd%d", who, i);
		show(what, raw(SYS_lseek, fd[i], 0, SEEK_CUR, 0), NULL, 0);
	}
	show("fstat fd 500", raw(SYS_fstat, 500, (long)&st, 0, 0), NULL, 0);
	show("fstat fd -1", raw(SYS_fstat, -1, (long)&st, 0, 0), NULL, 0);
	show("fstat fd 2^32+2",
	    raw(SYS_fstat, (long)((1ULL << 32) + fd[2]), (long)&st, 0, 0), &st,
	    sizeof(st));
	show("fstat bad buffer", raw(SYS_fstat, fd[2], 16, 0, 0), NULL, 0);
	show("TCGETS fd 500", raw(SYS_ioctl, 500, 0x5401, (long)buf, 0), NULL,
	    0);
	show("read 3", read(fd[2], buf, 3), NULL, 0);
	show("tell after read", raw(SYS_lseek, fd[2], 0, SEEK_CUR, 0), NULL, 0);
	show("seek +2", raw(SYS_lseek, fd[2], 2, SEEK_CUR, 0), NULL, 0);
	show("tell after seek", raw(SYS_lseek, fd[2], 0, SEEK_CUR, 0), NULL, 0);
	show("seek end", raw(SYS_lseek, fd[2], 0, SEEK_END, 0), NULL, 0);
	show("tell at end", raw(SYS_lseek, fd[2], 0, SEEK_CUR, 0), NULL, 0);
	show("tell fd 500", raw(SYS_lseek, 500, 0, SEEK_CUR, 0), NULL, 0);
	show("dup2 to 100", dup2(fd[2], 100), NULL, 0);
	show("tell fd 100", raw(SYS_lseek, 100, 0, SEEK_CUR, 0), NULL, 0);
	show("fstat fd 100", raw(SYS_fstat, 100, (long)&st, 0, 0), &st,
	    sizeof(st));
	show("dup2 to 200", dup2(fd[2], 200), NULL, 0);
	show("fstat fd 200", raw(SYS_fstat, 200, (long)&st, 0, 0), &st,
	    sizeof(st));
	close(100);
	close(200);
	show("fstat closed 100", raw(SYS_fstat, 100, (long)&st, 0, 0), NULL, 0);
	{
		/* Every descriptor in use: EMFILE before ENOENT. */
		int many[1100], k, n = 0;

		while (n < 1100 && (many[n] = open("/d/a.txt", O_RDONLY)) >= 0)
			n++;
		show("opened until", n, NULL, 0);
		show("open missing, table full",
		    raw(SYS_open, (long)"/nope", O_RDONLY, 0, 0), NULL, 0);
		for (k = 0; k < n; k++)
			close(many[k]);
	}
	for (i = 2; i < 5; i++)
		close(fd[i]);
}

/* Reads at an image file's end and of a directory read to its end,
 * F_GETFD, seeks of stdin and the output, and the ids: answered in the
 * guest, and the cases around them the VMM answers. */
static void
ends(const char *who)
{
	static char dents[1 << 16];
	char buf[64], what[96];
	int f = open("/d/a.txt", O_RDONLY);
	int c = open("/d/sub/b.txt", O_RDONLY | O_CLOEXEC);
	int dir = open("/d", O_RDONLY | O_DIRECTORY);
	int gone = open("/d/a.txt", O_RDONLY);
	int i, k;
	long n;

	close(gone);
	{
		/* Read, closed and opened again with no exit between: the
		 * new descriptor reads from its start. */
		int a1 = open("/d/a.txt", O_RDONLY), a2;

		show("read 5", raw(SYS_read, a1, (long)buf, 5, 0), buf, 5);
		close(a1);
		a2 = open("/d/sub/b.txt", O_RDONLY);
		n = raw(SYS_read, a2, (long)buf, 8, 0);
		show("reopened, reads from its start", n, buf,
		    n > 0 ? (size_t)n : 0);
		show("tell", raw(SYS_lseek, a2, 0, SEEK_CUR, 0), NULL, 0);
		close(a2);
	}
	snprintf(what, sizeof(what), "%s read whole", who);
	show(what, raw(SYS_read, f, (long)buf, sizeof(buf), 0), buf, 12);
	for (k = 0; k < 2; k++) {
		snprintf(what, sizeof(what), "%s read at end %d", who, k);
		show(
		    what, raw(SYS_read, f, (long)buf, sizeof(buf), 0), NULL, 0);
	}
	show("read 0 at end", raw(SYS_read, f, (long)buf, 0, 0), NULL, 0);
	show("read 0 at end, NULL", raw(SYS_read, f, 0, 0, 0), NULL, 0);
	show("read at end, bad buffer", raw(SYS_read, f, 16, 8, 0), NULL, 0);
	show("read at end, kernel buffer", raw(SYS_read, f, 0x3a000, 8, 0),
	    NULL, 0);
	show("read at end, 2^40 bytes",
	    raw(SYS_read, f, (long)dents, 1L << 40, 0), NULL, 0);
	show("read at end, fd 2^32+f",
	    raw(SYS_read, (long)((1ULL << 32) + f), (long)buf, 8, 0), NULL, 0);
	show("seek past end", raw(SYS_lseek, f, 100, SEEK_END, 0), NULL, 0);
	show("read past end", raw(SYS_read, f, (long)buf, 8, 0), NULL, 0);
	show("seek to 5", raw(SYS_lseek, f, 5, SEEK_SET, 0), NULL, 0);
	show("read from 5", raw(SYS_read, f, (long)buf, 3, 0), buf, 3);
	show("pread 4 at 2", raw(SYS_pread64, f, (long)buf, 4, 2), buf, 4);
	show("pread at 12", raw(SYS_pread64, f, (long)buf, 4, 12), NULL, 0);
	show("pread past end", raw(SYS_pread64, f, (long)buf, 4, 99), NULL, 0);
	show("pread at -1", raw(SYS_pread64, f, (long)buf, 4, -1), NULL, 0);
	show("pread at -1, fd 500", raw(SYS_pread64, 500, (long)buf, 4, -1),
	    NULL, 0);
	show("pread bad buffer", raw(SYS_pread64, f, 16, 4, 0), NULL, 0);
	show("pread 0 bytes, NULL", raw(SYS_pread64, f, 0, 0, 0), NULL, 0);
	show("pread a directory", raw(SYS_pread64, dir, (long)buf, 4, 0), NULL,
	    0);
	show("tell after preads", raw(SYS_lseek, f, 0, SEEK_CUR, 0), NULL, 0);
	{
		static const char *const links[] = { "/d/a.txt", "/d", "/",
			"/nope", "/d/a.txt/", "/d/", "/proc/self/exe",
			"/ws.txt", "a.txt" };
		size_t k2;

		for (k2 = 0; k2 < sizeof(links) / sizeof(links[0]); k2++) {
			snprintf(what, sizeof(what), "%s readlink %s", who,
			    links[k2]);
			n = raw(SYS_readlink, (long)links[k2], (long)buf,
			    sizeof(buf), 0);
			show(what, n > 0 ? 1 : n, NULL, 0);
		}
		show("readlink len 0",
		    raw(SYS_readlink, (long)"/d/a.txt", (long)buf, 0, 0), NULL,
		    0);
		show("readlink len -1",
		    raw(SYS_readlink, (long)"/d/a.txt", (long)buf, -1, 0), NULL,
		    0);
		show("readlink bad path",
		    raw(SYS_readlink, 16, (long)buf, 8, 0), NULL, 0);
	}
	show("read closed fd", raw(SYS_read, gone, (long)buf, 8, 0), NULL, 0);
	show("read fd 500", raw(SYS_read, 500, (long)buf, 8, 0), NULL, 0);
	show("read a directory", raw(SYS_read, dir, (long)buf, 8, 0), NULL, 0);
	for (k = 0; k < 4; k++) {
		snprintf(what, sizeof(what), "%s getdents %d", who, k);
		n = raw(SYS_getdents64, dir, (long)dents, sizeof(dents), 0);
		show(what, n, dents, n > 0 ? (size_t)n : 0);
	}
	show("getdents at end, bad buffer",
	    raw(SYS_getdents64, dir, 16, sizeof(dents), 0), NULL, 0);
	show("getdents at end, 0 bytes",
	    raw(SYS_getdents64, dir, (long)dents, 0, 0), NULL, 0);
	show("getdents at end, 2^40 bytes",
	    raw(SYS_getdents64, dir, (long)dents, 1L << 40, 0), NULL, 0);
	show("rewind the directory", raw(SYS_lseek, dir, 0, SEEK_SET, 0), NULL,
	    0);
	n = raw(SYS_getdents64, dir, (long)dents, 40, 0);
	show(
	    "getdents after rewind, 40 bytes", n, dents, n > 0 ? (size_t)n : 0);
	n = raw(SYS_getdents64, dir, (long)dents, sizeof(dents), 0);
	show("getdents the rest", n, dents, n > 0 ? (size_t)n : 0);
	show("getdents at end again",
	    raw(SYS_getdents64, dir, (long)dents, sizeof(dents), 0), NULL, 0);
	show("getdents of a file", raw(SYS_getdents64, f, (long)dents, 64, 0),
	    NULL, 0);
	{
		/* Listings in small steps: the root (with dev and proc), a
		 * subdirectory, and a buffer too small for one entry. */
		static const char *const dirs[] = { "/", "/d/sub", "/d" };
		int ws = access("/ws.txt", F_OK) == 0;
		size_t k2;

		for (k2 = 0; k2 < sizeof(dirs) / sizeof(dirs[0]); k2++) {
			int dd = open(dirs[k2],
			    O_RDONLY | O_DIRECTORY | O_NONBLOCK | O_CLOEXEC);

			snprintf(what, sizeof(what), "%s open dir %s", who,
			    dirs[k2]);
			show(what, dd >= 0 ? 0 : dd, NULL, 0);
			show("F_GETFD", raw(SYS_fcntl, dd, F_GETFD, 0, 0), NULL,
			    0);
			show("F_GETFL", raw(SYS_fcntl, dd, F_GETFL, 0, 0), NULL,
			    0);
			show("too small",
			    raw(SYS_getdents64, dd, (long)dents, 20, 0), NULL,
			    0);
			for (k = 0; k < 40; k++) {
				n = raw(SYS_getdents64, dd, (long)dents, 56, 0);
				snprintf(what, sizeof(what), "%s %s step %d",
				    who, dirs[k2], k);
				/* With a workspace "/" is the host's directory:
				 * its inode numbers and offsets are the copy's
				 * own, so only names and types are shown. */
				if (k2 == 0 && ws)
					show_names(what, n, dents);
				else
					show(what, n, dents,
					    n > 0 ? (size_t)n : 0);
				if (n <= 0)
					break;
			}
			if (k2 != 0 || !ws)
				show("tell", raw(SYS_lseek, dd, 0, SEEK_CUR, 0),
				    NULL, 0);
			close(dd);
		}
	}
	show("getdents closed fd",
	    raw(SYS_getdents64, gone, (long)dents, 64, 0), NULL, 0);
	{
		int fds_[] = { 0, 1, 2, f, c, dir, gone, 500 };

		for (i = 0; i < 8; i++) {
			snprintf(what, sizeof(what), "%s F_GETFD fd%d", who, i);
			show(what, raw(SYS_fcntl, fds_[i], F_GETFD, 0, 0), NULL,
			    0);
			snprintf(what, sizeof(what), "%s F_GETFL fd%d", who, i);
			show(what, raw(SYS_fcntl, fds_[i], F_GETFL, 0, 0), NULL,
			    0);
		}
	}
	show("F_GETFD fd 2^32+c",
	    raw(SYS_fcntl, (long)((1ULL << 32) + c), F_GETFD, 0, 0), NULL, 0);
	show("F_GETFD, high cmd bits",
	    raw(SYS_fcntl, c, (1L << 32) | F_GETFD, 0, 0), NULL, 0);
	show("F_SETFD", raw(SYS_fcntl, f, F_SETFD, FD_CLOEXEC, 0), NULL, 0);
	show(
	    "F_GETFD after F_SETFD", raw(SYS_fcntl, f, F_GETFD, 0, 0), NULL, 0);
	for (i = 0; i < 3; i++) {
		snprintf(what, sizeof(what), "%s seek fd%d", who, i);
		show(what, raw(SYS_lseek, i, 0, SEEK_CUR, 0), NULL, 0);
		snprintf(what, sizeof(what), "%s seek fd%d to 5", who, i);
		show(what, raw(SYS_lseek, i, 5, SEEK_SET, 0), NULL, 0);
		snprintf(what, sizeof(what), "%s seek fd%d whence 9", who, i);
		show(what, raw(SYS_lseek, i, 0, 9, 0), NULL, 0);
	}
	show("seek closed fd", raw(SYS_lseek, gone, 0, SEEK_CUR, 0), NULL, 0);
	show("seek file, whence 9", raw(SYS_lseek, f, 0, 9, 0), NULL, 0);
	snprintf(what, sizeof(what), "%s getpid", who);
	show(what, raw(SYS_getpid, 0, 0, 0, 0), NULL, 0);
	snprintf(what, sizeof(what), "%s gettid", who);
	show(what, raw(SYS_gettid, 0, 0, 0, 0), NULL, 0);
	show("getuid", raw(SYS_getuid, 0, 0, 0, 0), NULL, 0);
	show("geteuid", raw(SYS_geteuid, 0, 0, 0, 0), NULL, 0);
	show("getgid", raw(SYS_getgid, 0, 0, 0, 0), NULL, 0);
	show("getegid", raw(SYS_getegid, 0, 0, 0, 0), NULL, 0);
	/* Closed in the guest: free at once to every call, the VMM's
	 * included, and the lowest number again for the next open. */
	snprintf(what, sizeof(what), "%s close image file", who);
	show(what, raw(SYS_close, f, 0, 0, 0), NULL, 0);
	show(
	    "fstat after close", raw(SYS_fstat, f, (long)dents, 0, 0), NULL, 0);
	show("read after close", raw(SYS_read, f, (long)buf, 8, 0), NULL, 0);
	show("F_GETFD after close", raw(SYS_fcntl, f, F_GETFD, 0, 0), NULL, 0);
	show("TCGETS after close", raw(SYS_ioctl, f, 0x5401, (long)buf, 0),
	    NULL, 0);
	show("tell after close", raw(SYS_lseek, f, 0, SEEK_CUR, 0), NULL, 0);
	show(
	    "pread after close", raw(SYS_pread64, f, (long)buf, 8, 0), NULL, 0);
	show("close again", raw(SYS_close, f, 0, 0, 0), NULL, 0);
	show("open takes its number",
	    (n = raw(SYS_open, (long)"/d/sub/b.txt", O_RDONLY, 0, 0)) == f ? 0
	                                                                   : n,
	    NULL, 0);
	show("close it", raw(SYS_close, n, 0, 0, 0), NULL, 0);
	snprintf(what, sizeof(what), "%s close directory", who);
	show(what, raw(SYS_close, dir, 0, 0, 0), NULL, 0);
	show("getdents after close",
	    raw(SYS_getdents64, dir, (long)dents, sizeof(dents), 0), NULL, 0);
	show("close fd 2^32+c",
	    raw(SYS_close, (long)((1ULL << 32) + c), 0, 0, 0), NULL, 0);
	show("fstat c after close", raw(SYS_fstat, c, (long)dents, 0, 0), NULL,
	    0);
	show("close fd 500", raw(SYS_close, 500, 0, 0, 0), NULL, 0);
	{
		/* /dev/null and a dup of stdin close in the VMM. */
		int null = open("/dev/null", O_RDONLY), in = dup(0);

		show("close /dev/null", raw(SYS_close, null, 0, 0, 0), NULL, 0);
		show("close a dup of stdin", raw(SYS_close, in, 0, 0, 0), NULL,
		    0);
	}
}

/* The program writes the page of descriptors it changed itself (struct
 * fast_changes: 16 bytes each, op first, the offset at 8, and after the
 * 128 of them a word that says one changed): an image
 * file's close closes it and its move moves it, as close(2) and lseek(2)
 * would; a close of stdout, an open over stdout and an open of a file
 * the image does not have are dropped. */
static int
change_page(void)
{
	volatile uint8_t *page = (volatile uint8_t *)0x35000;
	int f = open("/d/a.txt", O_RDONLY), g = open("/d/a.txt", O_RDONLY);
	struct stat st;
	long a, b, c, w;

	page[16 * 1] = 1; /* closed */
	page[16 * f] = 1;
	page[16 * 1] = 2; /* opened, over stdout */
	page[16 * 20 + 4] = 0xff; /* opened, file 0xffffffff */
	page[16 * 20 + 5] = 0xff;
	page[16 * 20 + 6] = 0xff;
	page[16 * 20 + 7] = 0xff;
	page[16 * 20] = 2;
	page[16 * g + 8] = 7; /* moved to 7 */
	page[16 * g] = 3;
	page[16 * 127] = 0xee;
	page[16 * 128] = 1; /* changed */
	w = raw(SYS_getppid, 0, 0, 0, 0); /* an exit: the VMM reads it */
	a = raw(SYS_fstat, f, (long)&st, 0, 0);
	b = raw(SYS_lseek, g, 0, SEEK_CUR, 0);
	c = raw(SYS_fstat, 20, (long)&st, 0, 0);
	printf("changepage: image fd %ld, other fd at %ld, fd 20 %ld, stdout "
	       "kept\n",
	    w >= 0 ? a : w, b, c);
	fflush(stdout);
	return a == -EBADF && b == 7 && c == -EBADF ? 0 : 1;
}

static volatile int got;

static void
on_usr1(int sig)
{
	got = sig;
}

static void
sigs(const char *who)
{
	struct ksa sa, old;
	char what[64];
	int s;

	for (s = 0; s <= 65; s++) {
		memset(&old, 0xa5, sizeof(old));
		snprintf(what, sizeof(what), "%s sigaction %d", who, s);
		show(what, raw(SYS_rt_sigaction, s, 0, (long)&old, 8), &old,
		    sizeof(old));
	}
	show("sigaction sigsetsize 4",
	    raw(SYS_rt_sigaction, 1, 0, (long)&old, 4), NULL, 0);
	show("sigaction no old", raw(SYS_rt_sigaction, 1, 0, 0, 8), NULL, 0);
	show("sigaction bad old", raw(SYS_rt_sigaction, 1, 0, 16, 8), NULL, 0);
	memset(&sa, 0, sizeof(sa));
	signal(SIGUSR1, on_usr1);
	memset(&old, 0xa5, sizeof(old));
	show("sigaction usr1 set",
	    raw(SYS_rt_sigaction, SIGUSR1, 0, (long)&old, 8), &old.flags,
	    sizeof(old.flags) + sizeof(old.mask));
	{
		struct sigaction a;

		memset(&a, 0, sizeof(a));
		a.sa_handler = on_usr1;
		a.sa_flags = SA_RESETHAND;
		sigaddset(&a.sa_mask, SIGUSR2);
		sigaction(SIGUSR2, &a, NULL);
	}
	memset(&old, 0xa5, sizeof(old));
	show("sigaction usr2 resethand",
	    raw(SYS_rt_sigaction, SIGUSR2, 0, (long)&old, 8), &old.flags,
	    sizeof(old.flags) + sizeof(old.mask));
	raise(SIGUSR2);
	printf("handler ran: %d\n", got);
	memset(&old, 0xa5, sizeof(old));
	show("sigaction usr2 after",
	    raw(SYS_rt_sigaction, SIGUSR2, 0, (long)&old, 8), &old,
	    sizeof(old));
}

static void
cwd(const char *who)
{
	char buf[600], what[64];
	size_t sizes[] = { 0, 1, 2, 3, 4, 5, 600 };
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		memset(buf, 0xa5, sizeof(buf));
		snprintf(what, sizeof(what), "%s getcwd %zu", who, sizes[i]);
		show(what, raw(SYS_getcwd, (long)buf, (long)sizes[i], 0, 0),
		    buf, 8);
	}
	show("getcwd bad buffer", raw(SYS_getcwd, 16, 600, 0, 0), NULL, 0);
}

static volatile long alarms, alarm_bad;
static volatile int held = -1;

static void
on_alarm(int sig)
{
	struct stat st;

	int fd;

	(void)sig;
	alarms++;
	if (syscall(SYS_stat, "/d/sub/b.txt", &st) != 0 || st.st_size != 5000)
		alarm_bad++;
	/* An open here, while the program may be inside its own: each
	 * gets a descriptor of its own (the program closes this one). */
	if (held < 0 && (fd = open("/d/sub/b.txt", O_RDONLY)) >= 0)
		held = fd;
	else if (held < 0)
		alarm_bad++;
}

/* A signal may come while the guest answers a call (a kick lands in
 * that code as in the program's own): the answers stay right. */
static int
under_alarms(long rounds)
{
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	struct stat st;
	char buf[64];
	long i, bad = 0;
	int fd, h;

	signal(SIGALRM, on_alarm);
	setitimer(ITIMER_REAL, &it, NULL);
	for (i = 0; i < rounds || alarms < 10; i++) {
		memset(&st, 0, sizeof(st));
		if (syscall(SYS_stat, "/d/a.txt", &st) != 0 ||
		    st.st_size != 12 ||
		    syscall(SYS_getcwd, buf, sizeof(buf)) != 2 ||
		    strcmp(buf, "/") != 0)
			bad++;
		if ((fd = open("/d/a.txt", O_RDONLY | O_CLOEXEC)) < 0 ||
		    fd == held || syscall(SYS_fstat, fd, &st) != 0 ||
		    st.st_size != 12)
			bad++;
		if ((h = held) >= 0) {
			if (h == fd || syscall(SYS_fstat, h, &st) != 0 ||
			    st.st_size != 5000)
				bad++;
			close(h);
			held = -1;
		}
		if (fd >= 0 && close(fd) != 0)
			bad++;
		if (i > 2000000)
			break;
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	printf("alarms: %s, %ld calls, %ld handled\n",
	    bad == 0 && alarm_bad == 0 && alarms > 0 ? "ok" : "FAILED", i,
	    (long)alarms);
	return bad != 0 || alarm_bad != 0;
}

/* A vfork child runs in its parent's memory (the trap platform shares
 * it, as Linux does): what it opens, and the calls after, leave its
 * parent's descriptors as they were. */
static void
vforked(void)
{
	struct utsname u;
	struct stat st;
	pid_t pid;
	int w, fd;

	fflush(stdout);
	if ((pid = vfork()) == 0) {
		fd = (int)raw(SYS_open, (long)"/d/a.txt", O_RDONLY, 0, 0);
		(void)raw(SYS_uname, (long)&u, 0, 0, 0);
		(void)raw(SYS_open, (long)"/d/sub/b.txt", O_RDONLY, 0, 0);
		(void)raw(SYS_uname, (long)&u, 0, 0, 0);
		_exit(fd >= 0 ? 0 : 1);
	}
	waitpid(pid, &w, 0);
	printf("vfork child status %d\n", w);
	for (fd = 3; fd < 8; fd++) {
		char what[32];

		snprintf(what, sizeof(what), "after vfork fstat %d", fd);
		show(
		    what, raw(SYS_fstat, fd, (long)&st, 0, 0), &st, sizeof(st));
	}
	show("after vfork open",
	    raw(SYS_open, (long)"/d/a.txt", O_RDONLY, 0, 0), NULL, 0);
}

static void *
thread_stats(void *arg)
{
	stats(arg, 1);
	ends(arg);
	return NULL;
}

int
main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1, i, st;
	pthread_t t;
	pid_t pid;

	if (argc > 1 && strcmp(argv[1], "alarms") == 0)
		return under_alarms(argc > 2 ? atol(argv[2]) : 200000);
	if (argc > 1 && strcmp(argv[1], "changepage") == 0)
		return change_page();
	if (argc > 1 && strcmp(argv[1], "poke") == 0) {
		*(volatile char *)0x3a000 = 1; /* GUEST_FASTDATA */
		printf("poke: wrote the VMM's answers\n");
		return 1;
	}
	setvbuf(stdout, NULL, _IOFBF, 1 << 16);
	for (i = 0; i < rounds; i++)
		stats("main", i == 0);
	fds("main");
	ends("main");
	sigs("main");
	cwd("main");
	show("chdir /d", chdir("/d") == 0 ? 0 : -errno, NULL, 0);
	cwd("in /d");
	stats("in /d", 1);
	show("chdir /", chdir("/") == 0 ? 0 : -errno, NULL, 0);
	fflush(stdout);
	if ((pid = fork()) == 0) {
		stats("child", 1);
		fds("child");
		ends("child");
		fflush(stdout);
		_exit(0);
	}
	waitpid(pid, &st, 0);
	printf("child status %d\n", st);
	vforked();
	/* While another thread exists, everything exits. */
	pthread_create(&t, NULL, thread_stats, "thread");
	pthread_join(t, NULL);
	stats("after thread", 1);
	fflush(stdout);
	return 0;
}

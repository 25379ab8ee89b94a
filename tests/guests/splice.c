/*
 * splice, tee and vmsplice as Linux gives them (host/vmm/sys_file.c):
 * a file into a pipe and a pipe into a file at given offsets (the
 * descriptors' own offsets untouched), tee's copy that leaves the input
 * whole, vmsplice both ways, a splice that waits for a forked writer,
 * and Linux's EINVAL, ESPIPE, EAGAIN and EBADF. `splice DIR` works in
 * DIR; one line per check, the same natively and in keep.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lines.h"

static void
drain(const char *what, int fd, size_t n)
{
	char buf[64] = { 0 };
	ssize_t r = read(fd, buf, n < sizeof(buf) - 1 ? n : sizeof(buf) - 1);

	printf("%s: %zd \"%s\"\n", what, r, r > 0 ? buf : "");
}

int
main(int argc, char **argv)
{
	char path[512], buf[16];
	int p[2], q[2], fd, st;
	loff_t off;
	struct iovec iov[2];

	if (argc < 2)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	snprintf(path, sizeof(path), "%s/spliced", argv[1]);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	if (write(fd, "0123456789", 10) != 10)
		return 1;
	pipe(p);
	pipe(q);

	off = 3;
	say("file to pipe at 3", splice(fd, &off, p[1], NULL, 4, 0));
	printf("offset now %lld, the file's own %lld\n", (long long)off,
	    (long long)lseek(fd, 0, SEEK_CUR));
	drain("the pipe", p[0], 4);
	lseek(fd, 6, SEEK_SET);
	say("file to pipe at its offset", splice(fd, NULL, p[1], NULL, 100, 0));
	printf(
	    "the file's offset now %lld\n", (long long)lseek(fd, 0, SEEK_CUR));
	drain("the pipe", p[0], 100);

	if (write(p[1], "ab", 2) != 2)
		return 1;
	off = 1;
	say("pipe to file at 1", splice(p[0], NULL, fd, &off, 2, 0));
	pread(fd, buf, 4, 0);
	buf[4] = '\0';
	printf("the file starts %s, offset %lld\n", buf, (long long)off);

	say("no pipe", splice(fd, NULL, fd, NULL, 1, 0));
	off = 0;
	say("an offset on a pipe", splice(p[0], &off, fd, NULL, 1, 0));
	say("an empty pipe, SPLICE_F_NONBLOCK",
	    splice(p[0], NULL, fd, NULL, 1, SPLICE_F_NONBLOCK));
	say("a bad flag", splice(fd, NULL, p[1], NULL, 1, 0x100));
	say("nothing", splice(fd, NULL, p[1], NULL, 0, 0));

	if (write(p[1], "teed", 4) != 4)
		return 1;
	say("tee", tee(p[0], q[1], 100, 0));
	drain("the copy", q[0], 100);
	drain("the input, still whole", p[0], 100);
	say("tee to itself", tee(p[0], p[1], 1, 0));
	say("tee from a file", tee(fd, q[1], 1, 0));

	iov[0].iov_base = "vm";
	iov[0].iov_len = 2;
	iov[1].iov_base = "splice";
	iov[1].iov_len = 6;
	say("vmsplice into the pipe", vmsplice(p[1], iov, 2, 0));
	memset(buf, 0, sizeof(buf));
	iov[0].iov_base = buf;
	iov[0].iov_len = 8;
	say("vmsplice out of it", vmsplice(p[0], iov, 1, 0));
	printf("read %s\n", buf);
	say("vmsplice on a file", vmsplice(fd, iov, 1, 0));

	/* A splice out of an empty pipe waits for a forked writer. */
	fflush(stdout);
	if (fork() == 0) {
		usleep(100000);
		if (write(p[1], "late", 4) != 4)
			_exit(1);
		_exit(0);
	}
	off = 0;
	say("a splice that waits", splice(p[0], NULL, fd, &off, 4, 0));
	wait(&st);
	pread(fd, buf, 4, 0);
	buf[4] = '\0';
	printf("the file starts %s\n", buf);
	unlink(path);
	return 0;
}

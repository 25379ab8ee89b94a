/*
 * The synthetic /proc and /dev: each line is what a program would check.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char text[65536];

/* The whole file in text; its length or -1. */
static long
slurp(const char *path)
{
	int fd = open(path, O_RDONLY);
	long n = 0, r;

	if (fd < 0)
		return -1;
	while ((r = read(fd, text + n, sizeof(text) - 1 - n)) > 0)
		n += r;
	text[n] = '\0';
	close(fd);
	return n;
}

static void
has(const char *file, const char *needle)
{
	long n = slurp(file);

	printf("%s has %s: %s\n", file, needle,
	    n >= 0 && strstr(text, needle) != NULL ? "yes" : "no");
}

int
main(void)
{
	char buf[4096];
	struct stat st;
	ssize_t n;
	int fd, i, nz;
	DIR *d;
	struct dirent *e;

	n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("exe link: %s\n", buf);
	stat("/proc/self/exe", &st);
	n = slurp("/proc/self/exe");
	printf("exe bytes: %s, size matches: %s\n",
	    n > 4 && memcmp(text, "\177ELF", 4) == 0 ? "ELF" : "not ELF",
	    n > 0 && n == (long)st.st_size ? "yes" : "no");

	fd = open("/dev/null", O_RDONLY);
	printf("fd for /dev/null: %d\n", fd);
	n = readlink("/proc/self/fd/3", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("/proc/self/fd/3 -> %s\n", buf);
	d = opendir("/proc/self/fd");
	printf("fds:");
	while (d != NULL && (e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			printf(" %s", e->d_name);
	printf("\n");
	if (d != NULL)
		closedir(d);
	printf("read /dev/null: %zd\n", read(fd, buf, 10));
	close(fd);
	fd = open("/dev/null", O_WRONLY);
	printf("write /dev/null: %zd\n", write(fd, "abc", 3));
	close(fd);
	fd = open("/dev/zero", O_RDONLY);
	memset(buf, 1, 100);
	n = read(fd, buf, 100);
	for (nz = 0, i = 0; i < 100; i++)
		nz += buf[i] != 0;
	printf("read /dev/zero: %zd, nonzero %d\n", n, nz);
	close(fd);
	fd = open("/dev/urandom", O_RDONLY);
	printf("read /dev/urandom: %zd\n", read(fd, buf, 64));
	close(fd);
	fd = open("/dev/random", O_RDONLY);
	printf("read /dev/random: %zd\n", read(fd, buf, 64));
	close(fd);
	stat("/dev/null", &st);
	printf("/dev/null is a char device: %s\n",
	    S_ISCHR(st.st_mode) ? "yes" : "no");
	printf("write /proc/cpuinfo: %s\n",
	    open("/proc/cpuinfo", O_WRONLY) < 0 && errno == EACCES ? "EACCES"
	                                                           : "no");
	printf("create in /dev: %s\n",
	    open("/dev/new", O_WRONLY | O_CREAT, 0644) < 0 ? strerror(errno)
	                                                   : "created");
	printf("unlink /dev/null: %s\n",
	    unlink("/dev/null") < 0 ? strerror(errno) : "removed");
	n = readlink("/dev/stdin", buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	printf("/dev/stdin -> %s\n", buf);
	fd = open("/dev/stdout", O_WRONLY);
	n = write(fd, "through /dev/stdout\n", 20);
	close(fd);
	has("/proc/self/status", "Pid:\t1");
	has("/proc/self/status", "Uid:\t1000");
	has("/proc/self/maps", "[stack]");
	has("/proc/meminfo", "MemTotal:");
	has("/proc/cpuinfo", "processor\t: 0");
	n = slurp("/proc/self/cmdline");
	printf("cmdline: argv[0], then %s, NUL-terminated: %s\n",
	    n > 0 ? text + strlen(text) + 1 : "?",
	    n > 0 && text[n - 1] == '\0' ? "yes" : "no");
	/* No controlling terminal: /dev/tty exists but will not open. */
	printf("/dev/tty is a char device: %s\n",
	    stat("/dev/tty", &st) == 0 && S_ISCHR(st.st_mode) ? "yes" : "no");
	printf("open /dev/tty: %s\n",
	    open("/dev/tty", O_RDWR) < 0 && errno == ENXIO ? "ENXIO" : "no");
	fd = open("/tmp/scratch", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	printf("/tmp writable: %s\n",
	    fd >= 0 && write(fd, "x", 1) == 1 ? "yes" : "no");
	close(fd);
	stat("/tmp", &st);
	printf("/tmp mode: %o\n", (unsigned)(st.st_mode & 07777));
	return 0;
}

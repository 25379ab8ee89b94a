/*
 * Files in the workspace: a round trip, then escapes that must fail:
 * "../" out of the root, and a symlink (made by the test) that points
 * outside. Prints one line per check; the test compares them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void
try_open(const char *what, const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd >= 0) {
		char buf[64] = "";
		ssize_t n = read(fd, buf, sizeof(buf) - 1);

		printf("%s: OPENED (%zd bytes)\n", what, n);
		close(fd);
	} else
		printf("%s: refused (%s)\n", what, strerror(errno));
}

int
main(void)
{
	char buf[32] = "";
	int fd = open("out.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || write(fd, "round trip\n", 11) != 11 || close(fd) != 0) {
		perror("write out.txt");
		return 1;
	}
	fd = open("/out.txt", O_RDONLY);
	if (fd < 0 || read(fd, buf, sizeof(buf) - 1) != 11) {
		perror("read out.txt");
		return 1;
	}
	close(fd);
	printf("roundtrip: %s", buf);
	try_open("dotdot", "../../../../etc/passwd");
	try_open("symlink", "/escape/passwd");
	try_open("abs", "/etc/passwd");
	if (mkdir("/sub", 0755) == 0 && rmdir("/sub") == 0)
		printf("mkdir: ok\n");
	return 0;
}

/* Writes a workspace file until the workspace limit refuses. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(void)
{
	char buf[4096];
	int fd = open("big", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	size_t total = 0;

	memset(buf, 'y', sizeof(buf));
	for (;;) {
		if (write(fd, buf, sizeof(buf)) < 0) {
			printf("refused after %zu KiB: %s\n", total >> 10,
			    strerror(errno));
			return 0;
		}
		total += sizeof(buf);
	}
}

/*
 * fill FILE MIB: write FILE a mebibyte at a time; prints how far it got.
 * fill FILE sparse: ftruncate FILE to 1 GiB, then write 1 MiB into it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char chunk[1 << 20];

int
main(int argc, char **argv)
{
	struct stat st;
	int fd, i, n;

	if (argc != 3)
		return 2;
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	memset(chunk, 'z', sizeof(chunk));
	if (strcmp(argv[2], "sparse") == 0) {
		if (ftruncate(fd, 1L << 30) != 0) {
			printf("ftruncate 1 GiB: %s\n", strerror(errno));
			return 0;
		}
		fstat(fd, &st);
		printf("ftruncate 1 GiB: size %ld, %ld KiB held\n",
		    (long)st.st_size, (long)st.st_blocks / 2);
		printf("write 1 MiB into it: %s\n",
		    pwrite(fd, chunk, sizeof(chunk), 1 << 20) ==
		            (ssize_t)sizeof(chunk)
		        ? "ok"
		        : strerror(errno));
		return 0;
	}
	n = atoi(argv[2]);
	for (i = 0; i < n; i++)
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk)) {
			printf(
			    "refused after %d MiB: %s\n", i, strerror(errno));
			return 0;
		}
	printf("wrote %d MiB\n", n);
	return 0;
}

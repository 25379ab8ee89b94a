/* A user's own small files (lib/own_file.h). */
#include <sys/stat.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "lib/fdio.h"
#include "lib/own_file.h"

uint8_t *
own_file_read(const char *path, size_t max, size_t *len)
{
	struct stat sb;
	uint8_t *buf = NULL;
	int fd;

	*len = 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return NULL;
	/* Only what this user (or nobody but root) could have written. */
	if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) &&
	    sb.st_uid == geteuid() && (sb.st_mode & 022) == 0 &&
	    sb.st_size > 0 && (uint64_t)sb.st_size <= max &&
	    (buf = malloc((size_t)sb.st_size)) != NULL) {
		if (read_all(fd, buf, (size_t)sb.st_size) == (size_t)sb.st_size)
			*len = (size_t)sb.st_size;
		else {
			free(buf);
			buf = NULL;
		}
	}
	close(fd);
	return buf;
}

void
own_file_write(const char *path, const void *buf, size_t len, mode_t mode)
{
	char tmp[4096];
	int fd, ok;

	if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= (int)sizeof(tmp))
		return;
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1)
		return;
	ok = write_all(fd, buf, len) == 0 && fchmod(fd, mode) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, path) == -1)
		unlink(tmp);
}

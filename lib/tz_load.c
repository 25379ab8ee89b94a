/*
 * A zone by name from a zoneinfo directory (the operator's tzdata: a
 * trusted directory, but the name comes from a user and the file's bytes
 * are checked as any other input by tz_from_tzif).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/tz.h"

#define TZIF_MAX (64 * 1024) /* the largest zone in tzdata is ~4 KiB */

int
tz_load(int dir, const char *name, struct tz *out)
{
	uint8_t *buf;
	size_t len = 0;
	ssize_t n;
	int fd, rc;

	if (strcmp(name, "UTC") == 0 || strcmp(name, "Etc/UTC") == 0) {
		tz_utc(out);
		return 0;
	}
	if (!tz_name_valid(name)) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = openat(dir, name, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((buf = malloc(TZIF_MAX)) == NULL) {
		close(fd);
		return -1;
	}
	while (
	    len < TZIF_MAX && (n = read(fd, buf + len, TZIF_MAX - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			rc = errno;
			close(fd);
			free(buf);
			errno = rc;
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	rc = len < TZIF_MAX ? tz_from_tzif(buf, len, out) : -1;
	free(buf);
	if (rc == -1)
		errno = EINVAL;
	return rc;
}

/* Sealed memfds between keepd's processes (lib/memfd.h). */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/memfd.h"

int
memfd_new(const char *name)
{
	return memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
}

int
memfd_seal(int fd)
{
	return fcntl(fd, F_ADD_SEALS, MEMFD_SEALS_NEEDED | F_SEAL_SEAL);
}

int
memfd_make_sealed(const char *name, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t off = 0;
	ssize_t n;
	int fd, saved;

	if ((fd = memfd_new(name)) == -1)
		return -1;
	while (off < len) {
		n = write(fd, b + off, len - off);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			goto fail;
		}
		off += (size_t)n;
	}
	if (memfd_seal(fd) == -1)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int
memfd_owned_view(const char *name, size_t len, void **rw, const void **ro)
{
	void *w = MAP_FAILED, *r = MAP_FAILED;
	int fd, saved;

	if ((fd = memfd_new(name)) == -1)
		return -1;
	if (ftruncate(fd, (off_t)len) == -1 ||
	    (w = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) ==
	        MAP_FAILED ||
	    madvise(w, len, MADV_DONTFORK) == -1 ||
	    fcntl(fd, F_ADD_SEALS,
	        F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE |
	            F_SEAL_SEAL) == -1 ||
	    (r = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED) {
		saved = errno;
		if (w != MAP_FAILED)
			munmap(w, len);
		close(fd);
		errno = saved;
		return -1;
	}
	close(fd);
	*rw = w;
	*ro = r;
	return 0;
}

int
memfd_check(int fd, uint64_t len, uint64_t max)
{
	struct stat st;
	int seals;

	if (fd < 0 || fstat(fd, &st) == -1) {
		errno = EBADF;
		return -1;
	}
	/* Only shmem files (memfds) have seals: F_GET_SEALS on any other
	 * regular file is EINVAL. */
	if (!S_ISREG(st.st_mode) || (seals = fcntl(fd, F_GET_SEALS)) == -1) {
		errno = EINVAL;
		return -1;
	}
	if ((seals & MEMFD_SEALS_NEEDED) != MEMFD_SEALS_NEEDED) {
		errno = EPERM;
		return -1;
	}
	if (st.st_size < 0 || (uint64_t)st.st_size != len || len > max) {
		errno = EMSGSIZE;
		return -1;
	}
	return 0;
}

int
memfd_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *b = buf;
	size_t got = 0;
	ssize_t n;

	while (got < len) {
		n = pread(fd, b + got, len - got, (off_t)(off + got));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = EIO;
			return -1;
		}
		got += (size_t)n;
	}
	return 0;
}

void *
memfd_read(int fd, uint64_t len, uint64_t max)
{
	if (memfd_check(fd, len, max) == -1)
		return NULL;
	return memfd_read_at(fd, 0, len);
}

char *
memfd_read_at(int fd, uint64_t off, uint64_t len)
{
	char *buf;
	int saved;

	if (len > INT64_MAX || off > (uint64_t)INT64_MAX - len ||
	    (buf = malloc((size_t)len + 1)) == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (memfd_pread_all(fd, buf, (size_t)len, off) == -1) {
		saved = errno;
		explicit_bzero(buf, (size_t)len);
		free(buf);
		errno = saved;
		return NULL;
	}
	buf[len] = '\0';
	return buf;
}

/* Copying a directory tree written by someone else (lib/tree_copy.h). */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/tree_copy.h"

struct copy {
	const struct tree_copy_limits *lim;
	uint64_t bytes;
	unsigned entries;
	char buf[64 * 1024];
};

static int
charge(struct copy *c, const struct stat *st)
{
	uint64_t n = (uint64_t)st->st_blocks * 512, max = c->lim->max_bytes;

	if (++c->entries > c->lim->max_entries) {
		errno = E2BIG;
		return -1;
	}
	if (max != 0 && (n > max || c->bytes > max - n)) {
		errno = EDQUOT;
		return -1;
	}
	c->bytes += n;
	return 0;
}

/* An open that failed because the name was removed or replaced (by a
 * symlink, a file for a directory) since it was listed: left out, as
 * what was seen at the listing is no longer there. */
static int
changed(int e)
{
	return e == ENOENT || e == ELOOP || e == ENOTDIR;
}

static int
write_all(int fd, const char *p, size_t n, off_t off)
{
	ssize_t w;

	while (n > 0) {
		if ((w = pwrite(fd, p, n, off)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* The data of in (size bytes as it was seen) into out, hole for hole. */
static int
copy_data(struct copy *c, int in, int out, off_t size)
{
	off_t off = 0, data, hole;
	ssize_t n;

	while (off < size) {
		if ((data = lseek(in, off, SEEK_DATA)) == -1) {
			if (errno == ENXIO) /* a hole to the end */
				break;
			return -1;
		}
		if (data >= size)
			break;
		if ((hole = lseek(in, data, SEEK_HOLE)) == -1)
			return -1;
		if (hole > size)
			hole = size;
		for (off = data; off < hole; off += n) {
			size_t want = (size_t)(hole - off) < sizeof(c->buf)
			    ? (size_t)(hole - off)
			    : sizeof(c->buf);

			if ((n = pread(in, c->buf, want, off)) == -1) {
				if (errno == EINTR) {
					n = 0;
					continue;
				}
				return -1;
			}
			if (n == 0) /* it shrank meanwhile */
				return ftruncate(out, off);
			if (write_all(out, c->buf, (size_t)n, off) == -1)
				return -1;
		}
		off = hole;
	}
	return ftruncate(out, size);
}

/* The end of a node's copy: when rc is 0 the copy (out) takes st's mode,
 * less set-id bits, and times; then both ends are closed, errno kept. */
static int
finish(int in, int out, const struct stat *st, int rc)
{
	struct timespec times[2] = { st->st_atim, st->st_mtim };
	int saved;

	if (rc == 0 &&
	    (fchmod(out, st->st_mode & 01777) == -1 ||
	        futimens(out, times) == -1))
		rc = -1;
	saved = errno;
	if (in != -1)
		close(in);
	if (out != -1)
		close(out);
	errno = saved;
	return rc;
}

static int
copy_file(
    struct copy *c, int src, int dst, const char *name, const struct stat *seen)
{
	struct stat st;
	int in, out = -1;

	/* O_NONBLOCK: a FIFO swapped in after the lstat cannot hang us. */
	if ((in = openat(src, name,
	         O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC)) ==
	    -1)
		return changed(errno) ? 0 : -1;
	if (fstat(in, &st) == -1)
		return finish(in, out, seen, -1);
	if (!S_ISREG(st.st_mode) || st.st_ino != seen->st_ino ||
	    st.st_dev != seen->st_dev) {
		close(in); /* replaced meanwhile: left out */
		return 0;
	}
	if ((out = openat(dst, name,
	         O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) ==
	    -1)
		return finish(in, out, &st, -1);
	return finish(in, out, &st, copy_data(c, in, out, st.st_size));
}

static int
copy_link(int src, int dst, const char *name)
{
	char target[PATH_MAX];
	ssize_t n;

	if ((n = readlinkat(src, name, target, sizeof(target) - 1)) == -1)
		return errno == ENOENT || errno == EINVAL ? 0 : -1;
	target[n] = '\0';
	return symlinkat(target, dst, name);
}

static int copy_dir(struct copy *, int src, int dst, unsigned depth);

static int
copy_subdir(struct copy *c, int src, int dst, const char *name,
    const struct stat *seen, unsigned depth)
{
	struct stat st;
	int in, out = -1, rc;

	if (depth >= c->lim->max_depth) {
		errno = E2BIG;
		return -1;
	}
	if ((in = openat(src, name,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return changed(errno) ? 0 : -1;
	if (fstat(in, &st) == -1)
		return finish(in, out, seen, -1);
	if (st.st_ino != seen->st_ino || st.st_dev != seen->st_dev) {
		close(in); /* replaced meanwhile: left out */
		return 0;
	}
	if (mkdirat(dst, name, 0700) == -1 ||
	    (out = openat(dst, name,
	         O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return finish(in, out, &st, -1);
	/* copy_dir takes in over (fdopendir) and closes it. */
	rc = copy_dir(c, in, out, depth + 1);
	return finish(-1, out, &st, rc);
}

/* Copy what src holds into dst; src is consumed (closed). */
static int
copy_dir(struct copy *c, int src, int dst, unsigned depth)
{
	struct dirent *e;
	struct stat st;
	DIR *d;
	int rc = 0, saved;

	if ((d = fdopendir(src)) == NULL) {
		saved = errno;
		close(src);
		errno = saved;
		return -1;
	}
	while (rc == 0) {
		errno = 0;
		if ((e = readdir(d)) == NULL) {
			rc = errno != 0 ? -1 : 0;
			break;
		}
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1) {
			if (errno == ENOENT) /* gone meanwhile */
				continue;
			rc = -1;
			break;
		}
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
		    !S_ISLNK(st.st_mode))
			continue;
		if ((rc = charge(c, &st)) != 0)
			break;
		if (S_ISREG(st.st_mode))
			rc = copy_file(c, dirfd(d), dst, e->d_name, &st);
		else if (S_ISLNK(st.st_mode))
			rc = copy_link(dirfd(d), dst, e->d_name);
		else
			rc = copy_subdir(
			    c, dirfd(d), dst, e->d_name, &st, depth);
	}
	saved = errno;
	closedir(d);
	errno = saved;
	return rc;
}

int
tree_copy(int src, int dst, const struct tree_copy_limits *lim)
{
	struct copy *c;
	int fd, rc, saved;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return -1;
	c->lim = lim;
	if ((fd = openat(src, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		rc = -1;
	else
		rc = copy_dir(c, fd, dst, 0);
	saved = errno;
	free(c);
	errno = saved;
	return rc;
}

/*
 * rm -r without recursion. The walk descends into the first directory it
 * finds, unlinking the files it passes; a directory found empty is left
 * through "..", whose identity is checked against the one recorded on the
 * way down, and removed from it; the parent is then scanned again.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/tree.h"

struct tree_level {
	char name[NAME_MAX + 1]; /* this level's name in its parent */
	dev_t parent_dev;
	ino_t parent_ino;
};

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * Unlink every non-directory in dir. Returns 1 with the name of a
 * subdirectory in sub, 0 when dir is empty, -1 on an error.
 */
static int
tree_scan(int dir, char sub[NAME_MAX + 1])
{
	struct dirent *e;
	DIR *d;
	int fd, rc = 0, saved;

	if ((fd = openat(dir, ".", DIR_FLAGS)) == -1)
		return -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	errno = 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (unlinkat(dir, e->d_name, 0) == 0 || errno == ENOENT) {
			errno = 0;
			continue;
		}
		if (errno != EISDIR) {
			rc = -1;
			break;
		}
		strlcpy(sub, e->d_name, NAME_MAX + 1);
		rc = 1;
	}
	if (rc == 0 && errno != 0)
		rc = -1;
	saved = errno;
	closedir(d);
	errno = saved;
	return rc;
}

int
tree_remove(int dir, const char *name)
{
	struct tree_level *path = NULL, *grown;
	size_t depth = 0, cap = 0;
	char sub[NAME_MAX + 1];
	struct stat here, up;
	int fd, child, parent, found, saved, rc = -1;

	if (unlinkat(dir, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR)
		return -1;
	if ((fd = openat(dir, name, DIR_FLAGS)) == -1)
		return errno == ENOENT ? 0 : -1;
	for (;;) {
		if ((found = tree_scan(fd, sub)) == -1)
			goto out;
		if (found == 1) {
			if (depth == cap) {
				cap = cap != 0 ? cap * 2 : 16;
				if ((grown = reallocarray(
				         path, cap, sizeof(*path))) == NULL)
					goto out;
				path = grown;
			}
			if (fstat(fd, &here) == -1 ||
			    (child = openat(fd, sub, DIR_FLAGS)) == -1)
				goto out;
			strlcpy(
			    path[depth].name, sub, sizeof(path[depth].name));
			path[depth].parent_dev = here.st_dev;
			path[depth].parent_ino = here.st_ino;
			depth++;
			close(fd);
			fd = child;
			continue;
		}
		if (depth == 0)
			break;
		depth--;
		if ((parent = openat(fd, "..", DIR_FLAGS)) == -1)
			goto out;
		close(fd);
		fd = parent;
		if (fstat(fd, &up) == -1)
			goto out;
		if (up.st_dev != path[depth].parent_dev ||
		    up.st_ino != path[depth].parent_ino) {
			errno = ESTALE;
			goto out;
		}
		if (unlinkat(fd, path[depth].name, AT_REMOVEDIR) == -1 &&
		    errno != ENOENT)
			goto out;
	}
	close(fd);
	fd = -1;
	if (unlinkat(dir, name, AT_REMOVEDIR) == 0 || errno == ENOENT)
		rc = 0;
out:
	saved = errno;
	if (fd != -1)
		close(fd);
	free(path);
	errno = saved;
	return rc;
}

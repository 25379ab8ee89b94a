/*
 * Paths in a workspace: textual normalization, so no ".." survives, and
 * openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) with the workspace
 * directory as the root, so no symlink leads out: the kernel resolves an
 * absolute symlink from the workspace directory and keeps ".." at it, as
 * a chroot would (the guest sees the workspace as "/"). Used by the
 * guest's file calls (fs.c) and by the vmm's file API (host/vmmproc/vmm_main.c).
 */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "host/vmm/workspace.h"

/*
 * Join base and p and resolve "." and ".." textually into out (absolute,
 * no trailing slash but for "/"). ".." above the root stays at the root.
 */
int
ws_normalize(const char *base, const char *p, char *out, size_t outlen)
{
	char tmp[2 * WS_PATH_MAX + 2], *s, *save = NULL;
	size_t n = 0;

	if (p[0] == '\0')
		return -ENOENT;
	if ((p[0] == '/' ? (size_t)snprintf(tmp, sizeof(tmp), "%s", p)
	                 : (size_t)snprintf(tmp, sizeof(tmp), "%s/%s", base,
	                       p)) >= sizeof(tmp))
		return -ENAMETOOLONG;
	out[0] = '\0';
	for (s = strtok_r(tmp, "/", &save); s != NULL;
	     s = strtok_r(NULL, "/", &save)) {
		if (strcmp(s, ".") == 0)
			continue;
		if (strcmp(s, "..") == 0) {
			while (n > 0 && out[n - 1] != '/')
				n--;
			if (n > 0)
				n--;
			out[n] = '\0';
			continue;
		}
		if (n + 1 + strlen(s) + 1 > outlen)
			return -ENAMETOOLONG;
		out[n++] = '/';
		memcpy(out + n, s, strlen(s));
		n += strlen(s);
		out[n] = '\0';
	}
	if (n == 0)
		strlcpy(out, "/", outlen);
	return 0;
}

int
ws_openat(int ws_fd, const char *path, uint64_t flags, uint64_t mode)
{
	struct open_how how;
	const char *rel = path[1] == '\0' ? "." : path + 1;
	long fd;

	memset(&how, 0, sizeof(how));
	how.flags = flags | O_CLOEXEC;
	how.mode = (flags & (O_CREAT | O_TMPFILE)) ? (mode & 0777) : 0;
	how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
	fd = syscall(SYS_openat2, ws_fd, rel, &how, sizeof(how));
	return fd == -1 ? -errno : (int)fd;
}

int
ws_parentat(int ws_fd, const char *path, char *name, size_t namelen)
{
	char parent[WS_PATH_MAX];
	const char *slash = strrchr(path, '/');

	if (strcmp(path, "/") == 0)
		return -EBUSY;
	if ((size_t)(slash - path) >= sizeof(parent))
		return -ENAMETOOLONG;
	memcpy(parent, path, (size_t)(slash - path));
	parent[slash - path] = '\0';
	if (parent[0] == '\0')
		strlcpy(parent, "/", sizeof(parent));
	strlcpy(name, slash + 1, namelen);
	return ws_openat(ws_fd, parent, O_PATH | O_DIRECTORY, 0);
}

/* One directory of ws_usage's walk: dfd is consumed. */
static int
usage_dir(int dfd, dev_t dev, unsigned depth, unsigned *left, uint64_t *bytes)
{
	struct open_how how;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int rc = 0, sub;

	if (depth > WS_USAGE_MAX_DEPTH) {
		close(dfd);
		return -E2BIG;
	}
	if ((d = fdopendir(dfd)) == NULL) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (*left == 0) {
			rc = -E2BIG;
			break;
		}
		(*left)--;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue; /* gone since readdir: nothing to count */
		*bytes += (uint64_t)st.st_blocks * 512;
		if (!S_ISDIR(st.st_mode) || st.st_dev != dev)
			continue;
		memset(&how, 0, sizeof(how));
		how.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
		how.resolve =
		    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV;
		sub = (int)syscall(
		    SYS_openat2, dirfd(d), e->d_name, &how, sizeof(how));
		if (sub >= 0)
			rc = usage_dir(sub, dev, depth + 1, left, bytes);
	}
	closedir(d);
	return rc;
}

int
ws_usage(int ws_fd, unsigned max_entries, uint64_t *bytes)
{
	struct stat st;
	int dfd;

	*bytes = 0;
	if (fstat(ws_fd, &st) == -1)
		return -errno;
	if ((dfd = ws_openat(ws_fd, "/", O_RDONLY | O_DIRECTORY, 0)) < 0)
		return dfd;
	return usage_dir(dfd, st.st_dev, 0, &max_entries, bytes);
}

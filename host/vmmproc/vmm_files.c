/*
 * Files of a sandbox's workspace over the API: read, write, list, exists,
 * remove, mkdir, move; data travels in memfds.
 */
#include "host/vmmproc/vmm_int.h"

/* ---- files ------------------------------------------------------------ */

/* len bytes of from, read from its start (a memfd's offset is shared
 * with whoever wrote it), to to. */
static int
copy_fd(int from, int to, uint64_t len)
{
	char buf[65536];
	off_t off = 0;
	ssize_t n;

	while (len > 0) {
		n = pread(
		    from, buf, len < sizeof(buf) ? len : sizeof(buf), off);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			return n == 0 ? -EIO : -errno;
		}
		if (write(to, buf, (size_t)n) != n)
			return -errno;
		off += n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* What an upload to path replaces: the allocated bytes of the regular
 * file there, if any. */
static uint64_t
replaced_bytes(int ws_fd, const char *path)
{
	struct stat st;
	uint64_t old = 0;
	int fd;

	if ((fd = ws_openat(ws_fd, path, O_PATH | O_NOFOLLOW, 0)) >= 0) {
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			old = (uint64_t)st.st_blocks * 512;
		close(fd);
	}
	return old;
}

/* Whether a file of len bytes fits the workspace's quota, which counts
 * what the workspace holds (docs/vmm.md, "Limits"): what is there, less
 * the old bytes it replaces, plus the new one. */
static int
upload_fits(int ws_fd, uint64_t old, uint64_t len, uint64_t max)
{
	uint64_t used;

	if (len > max || ws_usage(ws_fd, WS_USAGE_MAX_ENTRIES, &used) != 0)
		return 0;
	used = used > old ? used - old : 0;
	return len <= max - (used < max ? used : max);
}

/* An upload changed what the workspace holds by new less old bytes: the
 * sandbox's runs going on count it too (their shared count, mapped here
 * only for the moment of the change). */
static void
upload_counted(struct sandbox *s, uint64_t old, int fd)
{
	struct stat st;
	uint64_t *count;

	if (!s->has_count || fstat(fd, &st) == -1 ||
	    (count = vmm_count_map(s->count_fd)) == NULL)
		return;
	vmm_workspace_count_adjust(count, (uint64_t)st.st_blocks * 512, old);
	munmap(count, sizeof(*count));
}

static void
dirent_of(struct vmm_dirent *de, const char *name, const struct stat *st)
{
	memset(de, 0, sizeof(*de));
	strlcpy(de->name, name, sizeof(de->name));
	strlcpy(de->type,
	    S_ISREG(st->st_mode)       ? "file"
	        : S_ISDIR(st->st_mode) ? "dir"
	        : S_ISLNK(st->st_mode) ? "link"
	                               : "other",
	    sizeof(de->type));
	de->size = (uint64_t)st->st_size;
	de->mtime = st->st_mtim.tv_sec;
}

/*
 * FILE_MOVE: path to the destination in the request's memfd, both
 * confined as every path is. rename(2) replaces a file at the
 * destination, as envd's Move (os.Rename) does.
 */
static int
file_move(int ws_fd, const char *from, int mfd, uint64_t len, int out,
    uint64_t *count)
{
	struct vmm_dirent de;
	struct stat st;
	char to[WS_PATH_MAX], fname[WS_PATH_MAX], tname[WS_PATH_MAX];
	char *raw;
	int fdir, tdir, rc;

	if (len == 0 || len >= FILE_PATH_MAX ||
	    (raw = memfd_read(mfd, len, FILE_PATH_MAX - 1)) == NULL)
		return -EINVAL;
	rc = memchr(raw, '\0', len) != NULL
	    ? -EINVAL
	    : ws_normalize("/", raw, to, sizeof(to));
	free(raw);
	if (rc != 0)
		return rc;
	if (strcmp(from, "/") == 0 || strcmp(to, "/") == 0)
		return -EBUSY;
	if ((fdir = ws_parentat(ws_fd, from, fname, sizeof(fname))) < 0)
		return fdir;
	if ((tdir = ws_parentat(ws_fd, to, tname, sizeof(tname))) < 0) {
		close(fdir);
		return tdir;
	}
	rc = renameat(fdir, fname, tdir, tname) == -1 ? -errno : 0;
	/* The entry moved, for the reply: the caller's grant is a write,
	 * and a listing would want a read. */
	if (rc == 0 && fstatat(tdir, tname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		dirent_of(&de, tname, &st);
		if (write(out, &de, sizeof(de)) != (ssize_t)sizeof(de))
			rc = -EIO;
		else
			*count = 1;
	}
	close(fdir);
	close(tdir);
	return rc;
}

static int
file_list(int dir, int out, uint64_t *count)
{
	struct vmm_dirent de;
	struct dirent *e;
	struct stat st;
	DIR *d;
	int fd;

	/* fdopendir wants a real descriptor, not an O_PATH one. */
	if ((fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -errno;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -errno;
	}
	*count = 0;
	while ((e = readdir(d)) != NULL && *count < FILE_LIST_MAX) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ==
		    -1)
			continue;
		dirent_of(&de, e->d_name, &st);
		if (write(out, &de, sizeof(de)) != (ssize_t)sizeof(de)) {
			closedir(d);
			return -EIO;
		}
		(*count)++;
	}
	closedir(d);
	return 0;
}

int
vmm_h_file(struct proc_ctx *ctx, const struct msg *m)
{
	struct vmm_state *vs = ctx->arg;
	struct msg_vmm_file q;
	struct msg_vmm_file_reply r;
	struct sandbox *s;
	struct stat st;
	struct grant g;
	char path[WS_PATH_MAX], name[WS_PATH_MAX];
	uint64_t old;
	int out = -1, fd = -1, dfd = -1, rc = 0, wr;

	memcpy(&q, m->data, sizeof(q));
	wr = q.op == FILE_WRITE || q.op == FILE_REMOVE || q.op == FILE_MKDIR ||
	    q.op == FILE_MOVE;
	if (memchr(q.path, '\0', sizeof(q.path)) == NULL ||
	    memchr(q.id, '\0', sizeof(q.id)) == NULL || q.op < FILE_READ ||
	    q.op > FILE_MOVE) {
		close(m->fd);
		return -1;
	}
	memset(&r, 0, sizeof(r));
	vmm_expire_sandboxes(vs);
	if (vmm_check_grant(ctx, m, &q.grant,
	        wr ? CAP_ARTIFACT_WRITE : CAP_ARTIFACT_READ, q.id, &g) != 0)
		r.status = SBX_E_GRANT;
	else if ((s = vmm_sandbox_find(vs, q.id, g.principal)) == NULL)
		r.status = vmm_not_found(vs);
	else if ((rc = ws_normalize("/", q.path, path, sizeof(path))) != 0 ||
	    (out = memfd_new("keep-file")) == -1)
		rc = rc != 0 ? rc : -errno;
	else {
		switch (q.op) {
		case FILE_READ:
			if ((fd = ws_openat(s->ws_fd, path, O_RDONLY, 0)) < 0)
				rc = fd;
			else if (fstat(fd, &st) == -1)
				rc = -errno;
			else if (!S_ISREG(st.st_mode))
				rc = -EISDIR;
			else if ((uint64_t)st.st_size > FILE_READ_MAX)
				rc = -EFBIG;
			else if ((rc = copy_fd(
			              fd, out, (uint64_t)st.st_size)) == 0)
				r.len = (uint64_t)st.st_size;
			break;
		case FILE_WRITE:
			old = replaced_bytes(s->ws_fd, path);
			if (memfd_check(m->fd, q.len, FILE_READ_MAX) == -1)
				rc = -EINVAL;
			else if (ctx->config != NULL &&
			    ctx->config->workspace_max != 0 &&
			    !upload_fits(s->ws_fd, old, q.len,
			        ctx->config->workspace_max))
				rc = -EDQUOT;
			else if ((fd = ws_openat(s->ws_fd, path,
			              O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW,
			              0644)) < 0)
				rc = fd;
			else {
				rc = copy_fd(m->fd, fd, q.len);
				upload_counted(s, old, fd);
			}
			break;
		case FILE_LIST:
			if ((fd = ws_openat(
			         s->ws_fd, path, O_PATH | O_DIRECTORY, 0)) < 0)
				rc = fd;
			else
				rc = file_list(fd, out, &r.len);
			break;
		case FILE_EXISTS:
			fd = ws_openat(s->ws_fd, path, O_PATH | O_NOFOLLOW, 0);
			r.exists = fd >= 0;
			if (fd < 0 && fd != -ENOENT && fd != -ENOTDIR)
				rc = fd;
			break;
		case FILE_REMOVE:
		case FILE_MKDIR:
			if (strcmp(path, "/") == 0)
				rc = -EBUSY;
			else if ((dfd = ws_parentat(
			              s->ws_fd, path, name, sizeof(name))) < 0)
				rc = dfd;
			else if (q.op == FILE_MKDIR)
				rc =
				    mkdirat(dfd, name, 0755) == -1 ? -errno : 0;
			else if (unlinkat(dfd, name, 0) == -1)
				rc = errno == EISDIR &&
				        unlinkat(dfd, name, AT_REMOVEDIR) == 0
				    ? 0
				    : -errno;
			break;
		case FILE_MOVE:
			rc = file_move(
			    s->ws_fd, path, m->fd, q.len, out, &r.len);
			break;
		}
	}
	r.error = rc < 0 ? -rc : 0;
	if (out != -1 && memfd_seal(out) == -1) {
		close(out);
		out = -1;
	}
	if (out == -1)
		out = memfd_make_sealed("keep-file", NULL, 0);
	if (out == -1 ||
	    msg_reply(ctx, m, MSG_VMM_FILE_REPLY, &r, sizeof(r), out) != MSG_OK)
		log_warnx("%s: reply lost", __func__);
	if (out != -1)
		close(out);
	if (fd >= 0)
		close(fd);
	if (dfd >= 0)
		close(dfd);
	close(m->fd);
	return 0;
}

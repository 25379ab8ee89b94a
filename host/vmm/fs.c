/*
 * The guest's files: descriptors 0, 1 and 2 wired to the caller, the
 * image's read-only files at their paths, and a workspace directory on
 * the host for everything else. Guest paths are normalized here ("." and
 * ".." resolved textually, so no ".." survives); the workspace is then
 * entered with openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS), so no
 * symlink leads out of it either.
 */
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/tls_hello.h"
#include "host/vmm/vm_int.h"
#include "host/vmm/workspace.h"

#define IOV_MAX_ 1024
#define PIPE_BUF_ 4096 /* Linux's atomic pipe write */

/* ---- descriptors ------------------------------------------------------ */

/* Descriptors are C ints: Linux reads only the low 32 bits. */
static struct vfd *
fd_get(struct vm *vm, uint64_t fd)
{
	fd = (uint32_t)fd;
	if (fd >= vm->nfds || vm->fds[fd].kind == VFD_FREE)
		return NULL;
	return &vm->fds[fd];
}

struct vfd *
vm_fd(struct vm *vm, uint64_t fd)
{
	return fd_get(vm, fd);
}

struct vfd *
vm_fd_anon(struct vm *vm, uint64_t fd, enum vm_anon kind, int64_t *err)
{
	struct vfd *f = fd_get(vm, fd);

	*err = f == NULL                             ? -EBADF
	    : f->kind != VFD_HOST || f->anon != kind ? -EINVAL
	                                             : 0;
	return *err == 0 ? f : NULL;
}

static int
fd_alloc(struct vm *vm, unsigned from)
{
	unsigned i;

	for (i = from; i < vm->nfds; i++)
		if (vm->fds[i].kind == VFD_FREE)
			return (int)i;
	return -EMFILE;
}

int
vm_fd_add_host(struct vm *vm, int hostfd, int cloexec)
{
	int gfd = fd_alloc(vm, 0);

	if (gfd < 0)
		return gfd;
	memset(&vm->fds[gfd], 0, sizeof(vm->fds[gfd]));
	vm->fds[gfd].kind = VFD_HOST;
	vm->fds[gfd].hostfd = hostfd;
	vm->fds[gfd].pipe = 1;
	vm->fds[gfd].flags = O_RDWR | (fcntl(hostfd, F_GETFL) & O_NONBLOCK);
	vm->fds[gfd].cloexec = cloexec;
	return gfd;
}

int
vm_fd_add_anon(
    struct vm *vm, int hostfd, int cloexec, int nonblock, enum vm_anon kind)
{
	int gfd;

	if ((gfd = vm_fd_add_host(vm, hostfd, cloexec)) < 0) {
		close(hostfd);
		return gfd;
	}
	vm->fds[gfd].anon = (uint8_t)kind;
	vm->fds[gfd].flags = O_RDONLY | (nonblock ? O_NONBLOCK : 0);
	return gfd;
}

void
vm_fd_is_file(struct vm *vm, int gfd)
{
	int fl = fcntl(vm->fds[gfd].hostfd, F_GETFL);

	vm->fds[gfd].pipe = 0;
	vm->fds[gfd].flags =
	    fl == -1 ? O_RDWR : fl & (O_ACCMODE | O_APPEND | O_NONBLOCK);
}

static void
fd_release(struct vfd *f)
{
	if (f->kind == VFD_HOST && f->hostfd >= 0)
		close(f->hostfd);
	free(f->path);
	free(f->owned);
	free(f->hello);
	memset(f, 0, sizeof(*f));
	f->hostfd = -1;
}

int
vm_fd_alloc(struct vm *vm, unsigned from)
{
	return fd_alloc(vm, from);
}

int
vm_fd_alloc_pair(struct vm *vm, int g[2])
{
	if ((g[0] = fd_alloc(vm, 0)) < 0)
		return g[0];
	vm->fds[g[0]].kind = VFD_HOST; /* reserved while the second is found */
	g[1] = fd_alloc(vm, 0);
	vm->fds[g[0]].kind = VFD_FREE;
	return g[1] < 0 ? g[1] : 0;
}

void
vm_fd_release(struct vfd *f)
{
	fd_release(f);
}

int
vm_fd_copy(struct vm *vm, const struct vfd *f, int newfd, int cloexec)
{
	struct vfd *n = &vm->fds[newfd];

	*n = *f;
	n->cloexec = cloexec;
	n->path = NULL;
	n->owned = NULL;
	n->hello = NULL;
	n->hostfd = -1;
	if (f->path != NULL && (n->path = strdup(f->path)) == NULL)
		goto nomem;
	if (f->hello != NULL) {
		/* A connection's first bytes, held: each its own copy,
		 * with room for the rest of the record. */
		if ((n->hello = malloc(TLS_HELLO_MAX)) == NULL)
			goto nomem;
		memcpy(n->hello, f->hello, f->hello_len);
	}
	if (f->owned != NULL) {
		/* A /proc file's bytes: each descriptor its own copy. */
		if ((n->owned = malloc(f->len ? f->len : 1)) == NULL)
			goto nomem;
		memcpy(n->owned, f->owned, f->len);
		n->data = n->owned;
	}
	if (f->kind == VFD_HOST &&
	    (n->hostfd = fcntl(f->hostfd, F_DUPFD_CLOEXEC, 0)) == -1) {
		int e = errno;

		fd_release(n);
		return -e;
	}
	return 0;
nomem:
	fd_release(n);
	return -ENOMEM;
}

int
vm_fs_init(struct vm *vm)
{
	const struct vmm_config *cfg = vm->cfg;
	unsigned i;

	vm->nfds = cfg->max_files ? cfg->max_files : VM_MAX_FILES_DEFAULT;
	if (vm->nfds < 3 || vm->nfds > VM_MAX_FILES_LIMIT ||
	    (vm->fds = calloc(vm->nfds, sizeof(*vm->fds))) == NULL)
		return VMM_E_NOMEM;
	for (i = 0; i < vm->nfds; i++)
		vm->fds[i].hostfd = -1;
	vm->fds[0].kind = VFD_STDIN;
	vm->fds[1].kind = VFD_OUT;
	vm->fds[1].outfd = 1;
	vm->fds[2].kind = VFD_OUT;
	vm->fds[2].outfd = 2;
	if (cfg->cwd == NULL || cfg->cwd[0] != '/' ||
	    strlcpy(vm->cwd, cfg->cwd, sizeof(vm->cwd)) >= sizeof(vm->cwd))
		strlcpy(vm->cwd, "/", sizeof(vm->cwd));
	if (cfg->tty)
		vm_tty_init(vm);
	if (vm_img_init(vm) != VMM_OK)
		return VMM_E_NOMEM;
	/* The guest's umask is applied here, so the process's must not
	 * apply again (vmm_run owns its process, vmm.h). */
	vm->umask = VM_UMASK_DEFAULT;
	vm->host_umask = umask(0);
	if (vm_ws_attach(vm, cfg) != 0)
		return VMM_E_INVAL;
	if (vm_quota_start(vm) != 0)
		return VMM_E_NOMEM;
	return VMM_OK;
}

int
vm_ws_attach(struct vm *vm, const struct vmm_config *cfg)
{
	if (vm->ws_fd >= 0)
		close(vm->ws_fd);
	vm->ws_fd = -1;
	if (cfg->workspace_fd >= 0) {
		if ((vm->ws_fd =
		            fcntl(cfg->workspace_fd, F_DUPFD_CLOEXEC, 0)) == -1)
			return -errno;
	} else if (cfg->workspace != NULL &&
	    (vm->ws_fd = open(
	         cfg->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -errno;
	if (vm->ws_fd >= 0) {
		/* A writable /tmp and /dev/shm, as programs expect (the
		 * process's umask is 0 here: vm_fs_init). */
		(void)mkdirat(vm->ws_fd, "tmp", 01777);
		(void)mkdirat(vm->ws_fd, &WS_SHM_DIR[1], 01777);
	}
	return 0;
}

void
vm_fs_free(struct vm *vm)
{
	unsigned i;

	if (vm->fds != NULL)
		umask(vm->host_umask);
	for (i = 0; vm->fds != NULL && i < vm->nfds; i++)
		fd_release(&vm->fds[i]);
	free(vm->fds);
	vm->fds = NULL;
	vm_img_free(vm);
	if (vm->ws_fd >= 0)
		close(vm->ws_fd);
	vm->ws_fd = -1;
	if (vm->ws_used != NULL && vm->ws_used_own)
		munmap(vm->ws_used, sizeof(*vm->ws_used));
	vm->ws_used = NULL;
	vm->ws_used_own = 0;
}

/* ---- paths ------------------------------------------------------------ */

/* The guest path at (dirfd, addr), normalized. */
static int
guest_path(struct vm *vm, int64_t dirfd, uint64_t addr, char *out,
    size_t outlen, int empty_ok)
{
	char p[VM_PATH_MAX];
	const char *base = vm->cwd;
	const struct vfd *d;
	int rc;

	dirfd = (int32_t)dirfd; /* an int, as for every descriptor */
	if ((rc = vm_gstr(vm, addr, p, sizeof(p))) != 0)
		return rc;
	if (p[0] == '\0' && empty_ok) {
		if ((d = fd_get(vm, (uint64_t)dirfd)) == NULL ||
		    d->path == NULL)
			return -EBADF;
		strlcpy(out, d->path, outlen);
		return 0;
	}
	if (p[0] != '/' && dirfd != G_AT_FDCWD) {
		if ((d = fd_get(vm, (uint64_t)dirfd)) == NULL)
			return -EBADF;
		/* find and fts walk /proc with *at calls from its
		 * directories' descriptors. */
		if ((d->kind != VFD_HOST && d->kind != VFD_VDIR &&
		        d->kind != VFD_SDIR) ||
		    d->path == NULL)
			return -ENOTDIR;
		base = d->path;
	}
	return ws_normalize(base, p, out, outlen);
}

static const struct vmm_file *
image_file(struct vm *vm, const char *path)
{
	return vm_img_find(vm, path);
}

/* Whether path is a directory made of the image files' prefixes. */
static int
image_dir(struct vm *vm, const char *path)
{
	return vm_img_is_dir(vm, path);
}

/* Whether a directory on the way to path is an image file ("/lib/x.zip/
 * a.py"): Linux answers such a path ENOTDIR, not ENOENT. Each prefix
 * ending before a '/' is looked up in the index: CPython's start-up
 * stats about 80 paths that do not exist, and a walk of the python
 * image's 8,700 files for each was 1.5 ms of a cold print(1). */
static int
image_file_on_the_way(struct vm *vm, const char *path)
{
	char prefix[VM_PATH_MAX];
	size_t i;

	for (i = 1; path[i] != '\0' && i < sizeof(prefix); i++) {
		if (path[i] != '/')
			continue;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		if (image_file(vm, prefix) != NULL)
			return 1;
	}
	return 0;
}

/*
 * /dev/shm is the workspace's WS_SHM_DIR: a directory in the workspace's
 * /tmp, so the workspace holds no dev/ of its own, through which a link
 * to /dev/null would name a file the kernel could create there. The
 * path in the workspace in buf, or path itself; NULL when too long.
 */
static const char *
shm_path(const char *path, char *buf, size_t len)
{
	if (strncmp(path, "/dev/shm", 8) != 0 ||
	    (path[8] != '\0' && path[8] != '/'))
		return path;
	if ((size_t)snprintf(buf, len, "%s%s", WS_SHM_DIR, path + 8) >= len)
		return NULL;
	return buf;
}

/* The workspace, through host/vmm/workspace.c; none: nothing exists. */
static int
ws_open(struct vm *vm, const char *path, uint64_t flags, uint64_t mode)
{
	char buf[VM_PATH_MAX + sizeof(WS_SHM_DIR)];

	if (vm->ws_fd < 0)
		return -ENOENT;
	if ((path = shm_path(path, buf, sizeof(buf))) == NULL)
		return -ENAMETOOLONG;
	return ws_openat(vm->ws_fd, path, flags, mode);
}

static int
ws_parent(struct vm *vm, const char *path, char *name, size_t namelen)
{
	char buf[VM_PATH_MAX + sizeof(WS_SHM_DIR)];

	if (vm->ws_fd < 0)
		return -ENOENT;
	if (strcmp(path, "/dev/shm") == 0)
		return -EBUSY; /* as Linux's mount point there */
	if ((path = shm_path(path, buf, sizeof(buf))) == NULL)
		return -ENAMETOOLONG;
	return ws_parentat(vm->ws_fd, path, name, namelen);
}

#define LINK_HOPS 40 /* Linux's MAXSYMLINKS */

/* Whether path is the VMM's to serve rather than the workspace's at
 * that path (/dev/shm is the workspace's elsewhere: shm_path). */
static int
served_here(struct vm *vm, const char *path)
{
	return vm_synth_path(path) || image_file(vm, path) != NULL ||
	    image_dir(vm, path) || image_file_on_the_way(vm, path) ||
	    (strncmp(path, "/dev/shm", 8) == 0 &&
	        (path[8] == '\0' || path[8] == '/'));
}

/*
 * The first symlink among path's prefixes in the workspace: 1 with the
 * prefix's length in *end and the link's text in target; 0: none before
 * a prefix that is missing or not a directory. nofollow: not the whole
 * path.
 */
static int
ws_first_link(struct vm *vm, const char *path, int nofollow, size_t *end,
    char *target, size_t tlen)
{
	char prefix[VM_PATH_MAX];
	struct stat st;
	size_t i, len = strlen(path);
	ssize_t n;
	int fd, rc;

	for (i = 1; i <= len; i++) {
		if (path[i] != '/' && path[i] != '\0')
			continue;
		if (path[i] == '\0' && nofollow)
			return 0;
		memcpy(prefix, path, i);
		prefix[i] = '\0';
		if ((fd = ws_open(vm, prefix, O_PATH | O_NOFOLLOW, 0)) < 0)
			return 0;
		if ((rc = fstat(fd, &st)) == 0 && S_ISLNK(st.st_mode)) {
			n = readlinkat(fd, "", target, tlen);
			close(fd);
			if (n <= 0 || (size_t)n >= tlen)
				return 0;
			target[n] = '\0';
			*end = i;
			return 1;
		}
		close(fd);
		if (rc != 0 || !S_ISDIR(st.st_mode))
			return 0;
	}
	return 0;
}

/*
 * A workspace walk of path came to nothing (ENOENT): whether it went
 * through a workspace symlink whose target is the image's, /proc's or
 * /dev's (venv's bin/python3 -> /usr/bin/python3, ln -s /dev/null x),
 * which the kernel's RESOLVE_IN_ROOT walk does not know. The links on
 * the way are read one at a time (the path's first link, then the first
 * of what that leads to, LINK_HOPS at most) and each target only makes
 * a guest path, which the caller then serves as if the guest had named
 * it. A link is text the guest could have given as the path itself, so
 * a rename racing this walk can lead only to paths the guest may name
 * anyway, and whatever the result is in the workspace is opened by the
 * kernel again, beneath the workspace (docs/threat-model.md).
 * nofollow: the last component is not followed (lstat, O_NOFOLLOW).
 * 1 with the guest path in out; 0: the workspace's answer stands;
 * -ELOOP.
 */
static int
ws_link_elsewhere(
    struct vm *vm, const char *path, int nofollow, char *out, size_t outlen)
{
	char cur[VM_PATH_MAX], target[VM_PATH_MAX], dir[VM_PATH_MAX];
	char joined[2 * VM_PATH_MAX];
	unsigned hops;
	size_t end, k;

	if (vm->ws_fd < 0 || strlcpy(cur, path, sizeof(cur)) >= sizeof(cur))
		return 0;
	for (hops = 0;; hops++) {
		if (hops > 0 && served_here(vm, cur))
			return strlcpy(out, cur, outlen) < outlen;
		if (!ws_first_link(
		        vm, cur, nofollow, &end, target, sizeof(target)))
			return 0;
		if (hops == LINK_HOPS)
			return -ELOOP;
		/* The link's directory: cur has no link before it. */
		for (k = end; k > 0 && cur[k - 1] != '/'; k--)
			;
		memcpy(dir, cur, k > 1 ? k - 1 : 1);
		dir[k > 1 ? k - 1 : 1] = '\0';
		if (ws_normalize(dir, target, joined, sizeof(joined)) != 0 ||
		    strlcat(joined, cur + end, sizeof(joined)) >=
		        sizeof(joined) ||
		    ws_normalize("/", joined, cur, sizeof(cur)) != 0)
			return 0;
	}
}

int
vm_path(struct vm *vm, int64_t dirfd, uint64_t addr, char *out, size_t outlen,
    int empty_ok)
{
	return guest_path(vm, dirfd, addr, out, outlen, empty_ok);
}

int
vm_path_in_image(struct vm *vm, const char *path)
{
	return image_file(vm, path) != NULL || image_dir(vm, path);
}

int
vm_ws_open(struct vm *vm, const char *path, uint64_t flags, uint64_t mode)
{
	return ws_open(vm, path, flags, mode);
}

int
vm_ws_parent(struct vm *vm, const char *path, char *name, size_t namelen)
{
	return ws_parent(vm, path, name, namelen);
}

/* There is no bindat nor an inotify_add_watch at a descriptor: such a
 * call is made from inside the directory, by one last name that cannot
 * leave it. The host's cwd matters to nothing of the VMM's (every path
 * is beneath a descriptor), but keep run's caller has its own, so it
 * goes back after. */
int
vm_cwd_enter(int dfd)
{
	struct open_how how;
	int back, err;

	memset(&how, 0, sizeof(how));
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	if ((back = (int)syscall(
	         SYS_openat2, AT_FDCWD, ".", &how, sizeof(how))) == -1)
		return -errno;
	if (fchdir(dfd) == -1) {
		err = errno;
		close(back);
		return -err;
	}
	return back;
}

void
vm_cwd_leave(int back)
{
	if (back >= 0) {
		if (fchdir(back) == -1)
			(void)0;
		close(back);
	}
}

/* ---- stat ------------------------------------------------------------- */

static void
synth_stat(struct stat *st, uint32_t mode, uint64_t size, const char *path)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *path != '\0'; path++)
		h = (h ^ (uint8_t)*path) * 1099511628211ULL;
	memset(st, 0, sizeof(*st));
	st->st_dev = 0x6b;
	st->st_ino = h;
	st->st_mode = mode;
	st->st_nlink = 1;
	st->st_uid = 0;
	st->st_gid = 0;
	st->st_size = (off_t)size;
	st->st_blksize = 4096;
	st->st_blocks = (blkcnt_t)((size + 511) / 512);
}

/* The workspace's files are the guest's own: its uid and gid, never the
 * host's. */
static int64_t
host_fstat(int fd, struct stat *st)
{
	if (fstat(fd, st) == -1)
		return -errno;
	st->st_uid = VM_GUEST_ID;
	st->st_gid = VM_GUEST_ID;
	return 0;
}

/* follow: whether a workspace link into the image, /proc or /dev is
 * still to be followed (ws_link_elsewhere), once. */
static int64_t
stat_path_via(
    struct vm *vm, const char *path, int nofollow, struct stat *st, int follow)
{
	char via[VM_PATH_MAX];
	const struct vmm_file *f;
	int fd, rc = 0;

	if (vm_synth_path(path))
		return vm_synth_stat(vm, path, nofollow, st);
	if ((f = image_file(vm, path)) != NULL) {
		synth_stat(st, S_IFREG | f->mode, f->len, path);
		return 0;
	}
	fd = ws_open(vm, path, O_PATH | (nofollow ? O_NOFOLLOW : 0), 0);
	if (fd >= 0) {
		rc = (int)host_fstat(fd, st);
		close(fd);
		return rc;
	}
	if (image_dir(vm, path)) {
		synth_stat(st, S_IFDIR | 0755, 4096, path);
		return 0;
	}
	if (fd == -ENOENT && follow &&
	    (rc = ws_link_elsewhere(vm, path, nofollow, via, sizeof(via))) != 0)
		return rc < 0 ? rc : stat_path_via(vm, via, nofollow, st, 0);
	return fd == -ENOENT && image_file_on_the_way(vm, path) ? -ENOTDIR : fd;
}

static int64_t
stat_path(struct vm *vm, const char *path, int nofollow, struct stat *st)
{
	return stat_path_via(vm, path, nofollow, st, 1);
}

static int64_t
stat_fd(struct vm *vm, struct vfd *f, struct stat *st)
{
	switch (f->kind) {
	case VFD_STDIN:
	case VFD_OUT:
		synth_stat(
		    st, S_IFIFO | 0600, 0, f->kind == VFD_OUT ? "o" : "i");
		return 0;
	case VFD_IMAGE:
		synth_stat(
		    st, S_IFREG | f->file->mode, f->file->len, f->file->path);
		return 0;
	case VFD_VDIR:
		synth_stat(st, S_IFDIR | 0755, 4096, f->path);
		return 0;
	case VFD_HOST:
		return host_fstat(f->hostfd, st);
	case VFD_DEV:
	case VFD_SYNTH:
	case VFD_SDIR:
		return vm_synth_stat(vm, f->path, 0, st);
	default:
		return -EBADF;
	}
}

int64_t
vm_stat_path(struct vm *vm, const char *path, int nofollow, struct stat *st)
{
	return stat_path(vm, path, nofollow, st);
}

int64_t
vm_stat_fd(struct vm *vm, struct vfd *f, struct stat *st)
{
	return stat_fd(vm, f, st);
}

static int64_t
put_stat(struct vm *vm, uint64_t addr, int64_t rc, const struct stat *st)
{
	void *g;

	if (rc != 0)
		return rc;
	if ((g = vm_gptr(vm, addr, sizeof(*st))) == NULL)
		return -EFAULT;
	memcpy(g, st, sizeof(*st));
	return 0;
}

int64_t
vm_put_stat(struct vm *vm, uint64_t addr, int64_t rc, const struct stat *st)
{
	return put_stat(vm, addr, rc, st);
}

/* ---- open ------------------------------------------------------------- */

/* Whether the guest's path string ends in "/" (and is not just "/"). */
static int
trailing_slash(struct vm *vm, uint64_t addr)
{
	char raw[VM_PATH_MAX];
	size_t n;

	if (vm_gstr(vm, addr, raw, sizeof(raw)) != 0)
		return 0;
	n = strlen(raw);
	return n > 1 && raw[n - 1] == '/';
}

static int64_t
open_at(
    struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t flags, uint64_t mode)
{
	char path[VM_PATH_MAX], via[VM_PATH_MAX];
	const struct vmm_file *img;
	struct vfd *f;
	int fd, hostfd, rc, followed = 0;
	int wr =
	    (flags & O_ACCMODE) != O_RDONLY || (flags & (O_CREAT | O_TRUNC));

	uint64_t before = 0;

	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	/* "name/" must be a directory: normalizing drops the slash, so its
	 * meaning is kept here (Linux: EISDIR to create one, ENOTDIR when
	 * it is a file). */
	if (trailing_slash(vm, addr)) {
		if (flags & O_CREAT)
			return -EISDIR;
		flags |= O_DIRECTORY;
	}
	/* O_PATH: a descriptor naming the object (a symlink itself with
	 * O_NOFOLLOW), for fstat, *at calls and /proc/self/fd; glibc's
	 * fchmodat(AT_SYMLINK_NOFOLLOW) and realpath use it. */
	if (flags & O_PATH) {
		flags &= O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC;
		wr = 0;
	}
	if ((fd = fd_alloc(vm, 0)) < 0)
		return fd;
	f = &vm->fds[fd];
again:
	if (vm_synth_path(path) && !followed &&
	    vm_synth_outside(
	        vm, path, (flags & O_NOFOLLOW) != 0, via, sizeof(via))) {
		strlcpy(path, via, sizeof(path));
		followed = 1;
		goto again;
	}
	if (vm_synth_path(path)) {
		int64_t r = vm_synth_open(vm, path, flags, f, fd);

		return r < 0 ? r : fd;
	}
	if ((flags & O_TRUNC) && vm->cfg->workspace_max != 0 &&
	    (hostfd = ws_open(vm, path, O_PATH, 0)) >= 0) {
		before = vm_quota_bytes(hostfd);
		close(hostfd);
	}
	if ((img = image_file(vm, path)) != NULL) {
		if (wr)
			return -EROFS;
		if (flags & O_DIRECTORY)
			return -ENOTDIR;
		if ((rc = vm_img_check(vm, img)) != 0)
			return rc;
		f->kind = VFD_IMAGE;
		f->file = img;
	} else if ((hostfd = ws_open(vm, path,
	                flags &
	                    (O_ACCMODE | O_CREAT | O_EXCL | O_TRUNC | O_APPEND |
	                        O_DIRECTORY | O_NOFOLLOW | O_PATH),
	                mode & ~(uint64_t)vm->umask)) >= 0) {
		f->kind = VFD_HOST;
		f->hostfd = hostfd;
		if (flags & O_TRUNC)
			vm_quota_update(vm, before, hostfd);
	} else if (image_dir(vm, path)) {
		if (wr)
			return -EISDIR;
		f->kind = VFD_VDIR;
	} else if (hostfd == -ENOENT && !followed &&
	    (rc = ws_link_elsewhere(
	         vm, path, (flags & O_NOFOLLOW) != 0, via, sizeof(via))) != 0) {
		if (rc < 0)
			return rc;
		strlcpy(path, via, sizeof(path));
		followed = 1;
		goto again;
	} else
		return hostfd == -ENOENT && image_file_on_the_way(vm, path)
		    ? -ENOTDIR
		    : hostfd;
	f->off = 0;
	f->cloexec = (flags & O_CLOEXEC) != 0;
	f->flags = (int)(flags & (O_ACCMODE | O_APPEND | O_NONBLOCK));
	if ((f->path = strdup(path)) == NULL) {
		fd_release(f);
		return -ENOMEM;
	}
	return fd;
}

/* ---- read and write --------------------------------------------------- */

/* A synthetic file's bytes, read as an image file's are. */
static int64_t
read_bytes(struct vm *vm, struct vfd *f, const uint8_t *data, uint64_t size,
    void *g, uint64_t len, int64_t pos)
{
	uint64_t off = pos >= 0 ? (uint64_t)pos : f->off;

	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	vm_mem_copy(vm, g, data + off, len);
	if (pos < 0)
		f->off += len;
	return (int64_t)len;
}

int64_t
vm_fd_read(struct vm *vm, struct vfd *f, void *g, uint64_t len, int64_t pos)
{
	ssize_t n;

	if (len > VM_IO_CHUNK)
		len = VM_IO_CHUNK;
	if ((f->flags & O_ACCMODE) == O_WRONLY && f->kind != VFD_OUT)
		return -EBADF;
	switch (f->kind) {
	case VFD_STDIN:
		if (pos >= 0)
			return -ESPIPE;
		if (vm->cfg->stdin_fd < 0)
			return 0;
		if (vm_snap_asked(vm))
			return -EINTR; /* the vmm pauses the context */
		n = read(vm->cfg->stdin_fd, g, len);
		if (n > 0)
			vm_tty_input(vm, f, g, (size_t)n);
		return n == -1 ? -errno : n;
	case VFD_IMAGE:
		return read_bytes(
		    vm, f, f->file->data, f->file->len, g, len, pos);
	case VFD_SYNTH:
		return read_bytes(vm, f, f->data, f->len, g, len, pos);
	case VFD_HOST:
		if (f->egress && pos < 0)
			return vm_egress_read(vm, f, g, len);
		n = pos >= 0 ? pread(f->hostfd, g, len, (off_t)pos)
		             : read(f->hostfd, g, len);
		return n == -1 ? -errno : n;
	case VFD_DEV:
		if (f->dev == VM_DEV_NULL)
			return 0;
		if (f->dev == VM_DEV_ZERO)
			memset(g, 0, len);
		else
			randombytes_buf(g, len);
		return (int64_t)len;
	case VFD_VDIR:
	case VFD_SDIR:
		return -EISDIR;
	default:
		return -EBADF;
	}
}

static uint8_t io_none;

static int64_t
do_read(struct vm *vm, struct vfd *f, uint64_t buf, uint64_t len, int64_t pos)
{
	uint8_t *g;

	if (len > VM_IO_CHUNK)
		len = VM_IO_CHUNK;
	/* A zero-length read touches no buffer, as in Linux: any pointer
	 * goes (node writes a child's empty output from NULL). */
	if ((g = len == 0 ? &io_none : vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	return vm_fd_read(vm, f, g, len, pos);
}

/* What a write of len bytes at pos (< 0: the file's offset or end) may
 * add to the workspace: nothing when it overwrites allocated bytes of a
 * file without holes, else up to len. */
static uint64_t
write_growth(struct vfd *f, uint64_t len, int64_t pos)
{
	struct stat st;
	uint64_t end, alloc;
	off_t cur;

	if (fstat(f->hostfd, &st) == -1)
		return len;
	alloc = (uint64_t)st.st_blocks * 512;
	if (alloc < (uint64_t)st.st_size)
		return len; /* sparse: any write may fill a hole */
	if (pos < 0) {
		if ((f->flags & O_APPEND) ||
		    (cur = lseek(f->hostfd, 0, SEEK_CUR)) == -1)
			cur = st.st_size;
		pos = cur;
	}
	end = (uint64_t)pos + len;
	return end <= alloc ? 0 : end - alloc < len ? end - alloc : len;
}

static int64_t fd_write(
    struct vm *vm, struct vfd *f, const void *g, uint64_t len, int64_t pos);

/* A terminal's output goes as its flags make it (tty.c); the caller is
 * told its own length was written. */
int64_t
vm_fd_write(
    struct vm *vm, struct vfd *f, const void *g, uint64_t len, int64_t pos)
{
	uint8_t *t = NULL;
	size_t tlen = 0;
	int64_t rc;

	if (len > VM_IO_CHUNK)
		len = VM_IO_CHUNK;
	/* Translated, it may double: it must still go out whole. */
	if (vm_tty_is(vm, f) && len > VM_IO_CHUNK / 2)
		len = VM_IO_CHUNK / 2;
	if (vm_tty_output(vm, f, g, (size_t)len, &t, &tlen) != 0)
		return -ENOMEM;
	if (t == NULL)
		return fd_write(vm, f, g, len, pos);
	rc = fd_write(vm, f, t, tlen, pos);
	free(t);
	return rc < 0 ? rc : (int64_t)len;
}

static int64_t
fd_write(struct vm *vm, struct vfd *f, const void *g, uint64_t len, int64_t pos)
{
	const struct vmm_config *cfg = vm->cfg;
	uint64_t room, done, *ob, before = 0, reserved = 0;
	ssize_t n;
	int rc;

	if (len > VM_IO_CHUNK)
		len = VM_IO_CHUNK;
	if ((f->flags & O_ACCMODE) == O_RDONLY && f->kind == VFD_HOST)
		return -EBADF;
	switch (f->kind) {
	case VFD_OUT:
		if (pos >= 0)
			return -ESPIPE;
		/* Counted for the whole process tree (proc.c). */
		ob = vm_output_counter(vm);
		done = __atomic_load_n(ob, __ATOMIC_SEQ_CST);
		room = cfg->output_max == 0   ? len
		    : done >= cfg->output_max ? 0
		                              : cfg->output_max - done;
		if (room < len) {
			if (room > 0 && cfg->output != NULL)
				cfg->output(cfg->output_arg, f->outfd, g, room);
			__atomic_fetch_add(ob, room, __ATOMIC_SEQ_CST);
			vm_stop(vm, VMM_OUTPUT_LIMIT, -1,
			    "output-limit: more than %llu bytes of output",
			    (unsigned long long)cfg->output_max);
			return -EFBIG;
		}
		if (cfg->output != NULL)
			cfg->output(cfg->output_arg, f->outfd, g, len);
		__atomic_fetch_add(ob, len, __ATOMIC_SEQ_CST);
		return (int64_t)len;
	case VFD_HOST:
		if (f->pipe) {
			if (pos >= 0)
				return -ESPIPE;
			if (f->egress)
				return vm_egress_write(vm, f, g, len);
			/* No reader: EPIPE and SIGPIPE, which ends the
			 * writer unless it ignores or catches it. */
			if ((n = write(f->hostfd, g, len)) == -1 &&
			    errno == EPIPE)
				vm_signal_raise(vm, SIGPIPE);
			return n == -1 ? -errno : n;
		}
		if (cfg->workspace_max != 0) {
			reserved = write_growth(f, len, pos);
			if ((rc = vm_quota_reserve(vm, reserved)) != 0)
				return rc;
			before = vm_quota_bytes(f->hostfd);
		}
		n = pos >= 0 ? pwrite(f->hostfd, g, len, (off_t)pos)
		             : write(f->hostfd, g, len);
		if (cfg->workspace_max != 0)
			vm_quota_settle(vm, reserved, before, f->hostfd);
		return n == -1 ? -errno : n;
	case VFD_DEV:
		return (int64_t)len; /* null, zero and random take anything */
	case VFD_IMAGE:
	case VFD_SYNTH:
	case VFD_STDIN:
	case VFD_VDIR:
	case VFD_SDIR:
		return -EBADF;
	default:
		return -EBADF;
	}
}

static int64_t
do_write(struct vm *vm, struct vfd *f, uint64_t buf, uint64_t len, int64_t pos)
{
	uint8_t *g;

	if (len > VM_IO_CHUNK)
		len = VM_IO_CHUNK;
	if ((g = len == 0 ? &io_none : vm_gptr(vm, buf, len)) == NULL)
		return -EFAULT;
	return vm_fd_write(vm, f, g, len, pos);
}

/*
 * writev to a pipe: Linux writes up to PIPE_BUF bytes in one piece that
 * no reader sees split (musl's stdio flushes its buffer and the new
 * bytes as two vectors), so the vectors are gathered and written once;
 * a larger writev goes vector by vector, as Linux may split it too.
 */
static int64_t
pipe_writev(struct vm *vm, struct vfd *f, const uint64_t *v, uint64_t cnt)
{
	uint8_t buf[PIPE_BUF_];
	uint64_t total = 0, i, base, len, done = 0;
	const uint8_t *g;
	int64_t n;
	ssize_t w;

	for (i = 0; i < cnt; i++) {
		memcpy(&len, &v[2 * i + 1], 8);
		if (len > PIPE_BUF_ || (total += len) > PIPE_BUF_)
			break;
	}
	if (i < cnt) {
		for (i = 0; i < cnt; i++) {
			memcpy(&base, &v[2 * i], 8);
			memcpy(&len, &v[2 * i + 1], 8);
			if (len == 0)
				continue;
			if ((n = do_write(vm, f, base, len, -1)) < 0)
				return done > 0 ? (int64_t)done : n;
			done += (uint64_t)n;
			if ((uint64_t)n < len || vm->stopped)
				break;
		}
		return (int64_t)done;
	}
	for (i = 0; i < cnt; i++) {
		memcpy(&base, &v[2 * i], 8);
		memcpy(&len, &v[2 * i + 1], 8);
		if (len == 0)
			continue;
		if ((g = vm_gptr(vm, base, len)) == NULL)
			return -EFAULT;
		memcpy(buf + done, g, len);
		done += len;
	}
	if ((w = write(f->hostfd, buf, done)) == -1 && errno == EPIPE)
		vm_signal_raise(vm, SIGPIPE);
	return w == -1 ? -errno : w;
}

/* ---- the workspace quota ---------------------------------------------- */

uint64_t
vm_quota_bytes(int hostfd)
{
	struct stat st;

	return fstat(hostfd, &st) == 0 ? (uint64_t)st.st_blocks * 512 : 0;
}

/*
 * Guest processes are host processes (a guest fork is a host fork), and
 * the quota is the workspace's, not each process's: the count lives in a
 * shared page that every process forked after this point updates (and,
 * under keepd, every run of the sandbox: cfg->workspace_count).
 */
int
vm_quota_start(struct vm *vm)
{
	uint64_t *page, used;

	/* A clone's inherited page (if any) is its template's. */
	if (vm->ws_used != NULL && vm->ws_used_own)
		munmap(vm->ws_used, sizeof(*vm->ws_used));
	vm->ws_used = NULL;
	vm->ws_used_own = 0;
	if (vm->cfg->workspace_max == 0 || vm->ws_fd < 0)
		return 0;
	/* The sandbox's count, shared with its other runs, if it has one:
	 * the walk sets it to what the workspace holds now (theirs
	 * included), and each run adds its own changes from then on. */
	if ((page = vm->cfg->workspace_count) == NULL) {
		page = mmap(NULL, sizeof(*page), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED)
			return -1;
		vm->ws_used_own = 1;
	}
	if (ws_usage(vm->ws_fd, WS_USAGE_MAX_ENTRIES, &used) != 0)
		used = UINT64_MAX; /* too big to count: full */
	__atomic_store_n(page, used, __ATOMIC_RELAXED);
	vm->ws_used = page;
	return 0;
}

uint64_t
vm_quota_used(const struct vm *vm)
{
	return vm->ws_used == NULL
	    ? 0
	    : __atomic_load_n(vm->ws_used, __ATOMIC_RELAXED);
}

void
vmm_workspace_count_adjust(uint64_t *count, uint64_t add, uint64_t sub)
{
	uint64_t cur, next;

	cur = __atomic_load_n(count, __ATOMIC_RELAXED);
	do {
		if (cur == UINT64_MAX)
			return;
		next = add < UINT64_MAX - 1 - cur ? cur + add : UINT64_MAX - 1;
		next = sub < next ? next - sub : 0;
	} while (!__atomic_compare_exchange_n(
	    count, &cur, next, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED));
}

static void
quota_adjust(struct vm *vm, uint64_t add, uint64_t sub)
{
	if (vm->ws_used != NULL)
		vmm_workspace_count_adjust(vm->ws_used, add, sub);
}

/* Check and take in one step, so that writers at the same instant (the
 * run's processes, the sandbox's other runs) cannot all pass. */
int
vm_quota_reserve(struct vm *vm, uint64_t grow)
{
	uint64_t max = vm->cfg->workspace_max, cur;

	if (max == 0 || grow == 0 || vm->ws_used == NULL)
		return 0;
	cur = __atomic_load_n(vm->ws_used, __ATOMIC_RELAXED);
	do {
		if (cur > max || grow > max - cur)
			return -EDQUOT;
	} while (!__atomic_compare_exchange_n(vm->ws_used, &cur, cur + grow, 0,
	    __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}

void
vm_quota_add(struct vm *vm, uint64_t bytes)
{
	quota_adjust(vm, bytes, 0);
}

void
vm_quota_release(struct vm *vm, uint64_t bytes)
{
	quota_adjust(vm, 0, bytes);
}

void
vm_quota_settle(struct vm *vm, uint64_t reserved, uint64_t before, int hostfd)
{
	uint64_t now = vm_quota_bytes(hostfd);

	if (now >= before)
		quota_adjust(vm, now - before, reserved);
	else
		quota_adjust(vm, 0, reserved + (before - now));
}

void
vm_quota_update(struct vm *vm, uint64_t before, int hostfd)
{
	vm_quota_settle(vm, 0, before, hostfd);
}

static int64_t
do_iov(struct vm *vm, struct vfd *f, uint64_t iov, uint64_t cnt, int wr)
{
	uint64_t *v, total = 0, i;
	int64_t n;

	if (cnt > IOV_MAX_)
		return -EINVAL;
	if ((v = vm_gptr(vm, iov, cnt * 16)) == NULL)
		return -EFAULT;
	if (wr && f->kind == VFD_HOST && f->egress)
		return vm_egress_writev(vm, f, v, cnt);
	if (wr && f->kind == VFD_HOST && f->pipe)
		return pipe_writev(vm, f, v, cnt);
	for (i = 0; i < cnt; i++) {
		uint64_t base, len;

		memcpy(&base, &v[2 * i], 8);
		memcpy(&len, &v[2 * i + 1], 8);
		if (len == 0)
			continue;
		n = wr ? do_write(vm, f, base, len, -1)
		       : do_read(vm, f, base, len, -1);
		if (n < 0)
			return total > 0 ? (int64_t)total : n;
		total += (uint64_t)n;
		if ((uint64_t)n < len || vm->stopped)
			break;
	}
	return (int64_t)total;
}

/* A pipe's reads and writes are the host pipe's, so its host descriptor
 * takes O_NONBLOCK too (EAGAIN instead of waiting); a file's host
 * descriptor keeps its own flags (a file never waits). */
static int64_t
set_nonblock(struct vfd *f, int on)
{
	int hf;

	if (f->kind == VFD_HOST && f->pipe) {
		if ((hf = fcntl(f->hostfd, F_GETFL)) == -1 ||
		    fcntl(f->hostfd, F_SETFL,
		        on ? hf | O_NONBLOCK : hf & ~O_NONBLOCK) == -1)
			return -errno;
	}
	f->flags = on ? f->flags | O_NONBLOCK : f->flags & ~O_NONBLOCK;
	return 0;
}

/* ---- descriptors' calls -------------------------------------------------------- */

static int64_t
fcntl_fd(struct vm *vm, uint64_t fd, uint64_t cmd, uint64_t arg)
{
	struct vfd *f = fd_get(vm, fd);
	int nfd, rc;

	if (f == NULL)
		return -EBADF;
	switch (cmd) {
	case F_GETFD:
		return f->cloexec ? FD_CLOEXEC : 0;
	case F_SETFD:
		f->cloexec = (arg & FD_CLOEXEC) != 0;
		return 0;
	case F_GETFL:
		if (f->kind == VFD_HOST) {
			if ((rc = fcntl(f->hostfd, F_GETFL)) == -1)
				return -errno;
			return (rc & ~O_NONBLOCK) | (f->flags & O_NONBLOCK);
		}
		return (f->kind == VFD_OUT ? O_WRONLY
		                           : f->flags & ~O_NONBLOCK) |
		    (f->flags & O_NONBLOCK);
	case F_SETFL:
		/* Only O_NONBLOCK is the guest's to change (F_GETFL shows
		 * it back). */
		return set_nonblock(f, ((int)arg & O_NONBLOCK) != 0);
	case F_GETPIPE_SZ:
	case F_SETPIPE_SZ:
		/* A guest pipe is a host pipe: its size is the host's, up to
		 * what Linux lets an unprivileged process set (the default
		 * fs.pipe-max-size). An eventfd or epoll instance says EBADF,
		 * as Linux does; nothing else here is a pipe. */
		if (f->kind != VFD_HOST || !f->pipe)
			return -EBADF;
		if (cmd == F_SETPIPE_SZ && arg > VM_PIPE_MAX)
			return -EPERM;
		if ((rc = fcntl(f->hostfd, (int)cmd, (int)arg)) == -1)
			return -errno;
		return rc;
	case F_DUPFD:
	case F_DUPFD_CLOEXEC:
		if (arg >= vm->nfds)
			return -EINVAL;
		if ((nfd = fd_alloc(vm, (unsigned)arg)) < 0)
			return nfd;
		goto dup;
	default:
		return vm_fcntl_lock(vm, f, cmd, arg);
	}
dup:
	if ((rc = vm_fd_copy(vm, f, nfd, cmd == F_DUPFD_CLOEXEC)) != 0)
		return rc;
	return nfd;
}

static int64_t
dup_to(struct vm *vm, uint64_t oldfd, uint64_t newfd)
{
	struct vfd *f = fd_get(vm, oldfd);

	if (f == NULL || newfd >= vm->nfds)
		return -EBADF;
	if (oldfd == newfd)
		return (int64_t)newfd;
	fd_release(&vm->fds[newfd]);
	vm->fds[newfd].kind = VFD_FREE;
	return fcntl_fd(vm, oldfd, F_DUPFD, newfd) == (int64_t)newfd
	    ? (int64_t)newfd
	    : -EBADF;
}

static int64_t
seek(struct vm *vm, uint64_t fd, int64_t off, uint64_t whence)
{
	struct vfd *f = fd_get(vm, fd);
	int64_t base, r;

	if (f == NULL)
		return -EBADF;
	switch (f->kind) {
	case VFD_HOST:
		r = lseek(f->hostfd, off, (int)whence);
		if (r == 0)
			f->off = 0; /* rewinddir: root_extras start again */
		return r == -1 ? -errno : r;
	case VFD_IMAGE:
	case VFD_SYNTH:
		base = whence == SEEK_SET ? 0
		    : whence == SEEK_CUR  ? (int64_t)f->off
		    : whence == SEEK_END
		    ? (int64_t)(f->kind == VFD_IMAGE ? f->file->len : f->len)
		    : -1;
		if (base < 0 || (off < 0 && -off > base))
			return -EINVAL;
		f->off = (uint64_t)(base + off);
		/* Back to the start of a /proc file: made again, as Linux's
		 * are (top keeps /proc/stat open and reads it so). */
		if (f->off == 0 && f->kind == VFD_SYNTH)
			vm_synth_refresh(vm, f);
		return (int64_t)f->off;
	case VFD_VDIR:
	case VFD_SDIR:
		if (whence != SEEK_SET || off != 0)
			return -EINVAL;
		f->off = 0;
		return 0;
	case VFD_DEV:
		return 0; /* as Linux's null and zero devices */
	default:
		return -ESPIPE;
	}
}

static int64_t
readlink_at(
    struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t buf, uint64_t len)
{
	char path[VM_PATH_MAX], target[VM_PATH_MAX];
	struct stat st;
	ssize_t n;
	int fd, rc;

	if ((int64_t)len <= 0)
		return -EINVAL;
	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path), 1)) != 0)
		return rc;
	if (vm_synth_path(path)) {
		if ((n = vm_synth_readlink(vm, path, target, sizeof(target))) <
		    0)
			return n;
	} else if (image_file(vm, path) != NULL || image_dir(vm, path))
		return -EINVAL;
	else {
		if ((fd = ws_open(vm, path, O_PATH | O_NOFOLLOW, 0)) < 0)
			return fd;
		/* Not a symlink: EINVAL, which glibc's realpath relies on. */
		if (fstat(fd, &st) == -1 || !S_ISLNK(st.st_mode))
			n = -1, errno = EINVAL;
		else
			n = readlinkat(fd, "", target, sizeof(target));
		rc = n == -1 ? -errno : 0;
		close(fd);
		if (rc != 0)
			return rc;
	}
	if ((uint64_t)n > len)
		n = (ssize_t)len;
	return vm_put(vm, buf, target, (size_t)n) == 0 ? n : -EFAULT;
}

/* mkdirat, unlinkat, renameat: workspace only. */
/* What unlinking or replacing name in dfd frees: a file's blocks when
 * this is its last link. */
static uint64_t
freed_bytes(struct vm *vm, int dfd, const char *name)
{
	struct stat st;

	if (vm->cfg->workspace_max == 0 ||
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    (!S_ISDIR(st.st_mode) && st.st_nlink > 1))
		return 0;
	return (uint64_t)st.st_blocks * 512;
}

/* A path the guest may not change: the image's and the synthetic. */
static int
read_only_path(struct vm *vm, const char *path)
{
	return vm_synth_path(path) || image_file(vm, path) != NULL ||
	    (image_dir(vm, path) && strcmp(path, "/") != 0);
}

static int64_t
do_mkdir(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t mode)
{
	char path[VM_PATH_MAX], name[VM_PATH_MAX];
	struct stat st;
	int dfd, rc;

	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	/* Linux answers EEXIST before EROFS: `mkdir -p /` relies on it. */
	if (stat_path(vm, path, 1, &st) == 0)
		return -EEXIST;
	if (read_only_path(vm, path))
		return -EROFS;
	if ((dfd = ws_parent(vm, path, name, sizeof(name))) < 0)
		return dfd;
	rc = mkdirat(dfd, name, (mode_t)(mode & 01777 & ~vm->umask)) == -1
	    ? -errno
	    : 0;
	if (rc == 0 && vm->ws_used != NULL &&
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		vm_quota_add(vm, (uint64_t)st.st_blocks * 512);
	close(dfd);
	return rc;
}

static int64_t
do_unlink(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t flags)
{
	char path[VM_PATH_MAX], name[VM_PATH_MAX];
	uint64_t freed;
	int dfd, rc;

	if ((flags & ~(uint64_t)G_AT_REMOVEDIR) != 0)
		return -EINVAL;
	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	if (strcmp(path, "/") == 0)
		return (flags & G_AT_REMOVEDIR) ? -EBUSY : -EISDIR;
	if (read_only_path(vm, path))
		return -EROFS;
	if ((dfd = ws_parent(vm, path, name, sizeof(name))) < 0)
		return dfd;
	freed = freed_bytes(vm, dfd, name);
	rc = unlinkat(dfd, name, (int)(flags & G_AT_REMOVEDIR)) == -1 ? -errno
	                                                              : 0;
	if (rc == 0)
		vm_quota_release(vm, freed);
	close(dfd);
	return rc;
}

static int64_t
do_rename(struct vm *vm, const uint64_t a[6], unsigned flags)
{
	char path[VM_PATH_MAX], name[VM_PATH_MAX], path2[VM_PATH_MAX],
	    name2[VM_PATH_MAX];
	uint64_t freed;
	int dfd, dfd2, rc;

	if ((rc = guest_path(vm, (int64_t)a[0], a[1], path, sizeof(path), 0)) !=
	        0 ||
	    (rc = guest_path(
	         vm, (int64_t)a[2], a[3], path2, sizeof(path2), 0)) != 0)
		return rc;
	if (strcmp(path, "/") == 0 || strcmp(path2, "/") == 0)
		return -EBUSY;
	if (read_only_path(vm, path) || read_only_path(vm, path2))
		return -EROFS;
	if ((dfd = ws_parent(vm, path, name, sizeof(name))) < 0)
		return dfd;
	if ((dfd2 = ws_parent(vm, path2, name2, sizeof(name2))) < 0) {
		close(dfd);
		return dfd2;
	}
	freed = freed_bytes(vm, dfd2, name2);
	rc = (int)syscall(SYS_renameat2, dfd, name, dfd2, name2, flags) == -1
	    ? -errno
	    : 0;
	if (rc == 0 && !(flags & RENAME_EXCHANGE))
		vm_quota_release(vm, freed);
	close(dfd2);
	close(dfd);
	return rc;
}

/* ---- the handlers (rows in sys_table.c) ------------------------------- */

/* A read or write that would block on a pipe or stdin, from a process
 * with other threads: the thread is parked until the descriptor is
 * ready, and the call is issued again (sys_thread.c); 1 when parked. */
static int
blocking_hostfd(struct vm *vm, struct vfd *f, int wr)
{
	return f->kind == VFD_HOST && f->pipe ? f->hostfd
	    : f->kind == VFD_STDIN && !wr     ? vm->cfg->stdin_fd
	                                      : -1;
}

static int
park_io(struct vm *vm, struct vfd *f, int wr)
{
	int hfd = blocking_hostfd(vm, f, wr);

	return hfd >= 0 && vm_thread_park_fd(vm, hfd, wr ? POLLOUT : POLLIN);
}

/* The same read or write from the process's only thread: it blocks in
 * the host, after a wait that a kick cannot slip past (0 when ready). */
static int
wait_io(struct vm *vm, struct vfd *f, int wr)
{
	int hfd = blocking_hostfd(vm, f, wr);

	if (hfd < 0 || (f->flags & O_NONBLOCK))
		return 0;
	return vm_signal_wait_fd(vm, hfd, wr ? POLLOUT : POLLIN);
}

/*
 * A blocking read or write on a pipe, a stream socket or stdin that is
 * ready now (a byte to read, room to write, or the end): it goes on at
 * once, as Linux's does, without park_io's and wait_io's checks, which
 * cost five host calls to this one poll (each request through a port
 * reads and writes once: docs/egress.md, "Measured").
 */
static int
io_ready(struct vm *vm, struct vfd *f, int wr)
{
	struct pollfd p = { .fd = blocking_hostfd(vm, f, wr),
		.events = wr ? POLLOUT : POLLIN };

	return p.fd >= 0 && !(f->flags & O_NONBLOCK) && poll(&p, 1, 0) == 1;
}

int64_t
sys_read(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	int rc;

	if (f == NULL)
		return -EBADF;
	if (io_ready(vm, f, 0))
		return do_read(vm, f, a[1], a[2], -1);
	if (park_io(vm, f, 0))
		return 0;
	if ((rc = wait_io(vm, f, 0)) != 0)
		return rc;
	return do_read(vm, f, a[1], a[2], -1);
}

int64_t
sys_write(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	int rc;

	if (f == NULL)
		return -EBADF;
	/* A query to the guest's resolver is the VMM's to answer. */
	if (f->kind == VFD_HOST && (f->sock == SOCK_DGRAM || f->dns_tcp) &&
	    (rc = (int)vm_sock_dns_write(vm, f, a[1], a[2])) != -ENOENT)
		return rc;
	if (io_ready(vm, f, 1))
		return do_write(vm, f, a[1], a[2], -1);
	if (park_io(vm, f, 1))
		return 0;
	if ((rc = wait_io(vm, f, 1)) != 0)
		return rc;
	return do_write(vm, f, a[1], a[2], -1);
}

int64_t
sys_pread64(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f;

	if ((int64_t)a[3] < 0)
		return -EINVAL;
	return (f = fd_get(vm, a[0])) != NULL
	    ? do_read(vm, f, a[1], a[2], (int64_t)a[3])
	    : -EBADF;
}

int64_t
sys_pwrite64(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f;

	if ((int64_t)a[3] < 0)
		return -EINVAL;
	return (f = fd_get(vm, a[0])) != NULL
	    ? do_write(vm, f, a[1], a[2], (int64_t)a[3])
	    : -EBADF;
}

int64_t
sys_readv(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	int rc;

	if (f == NULL)
		return -EBADF;
	if (park_io(vm, f, 0))
		return 0;
	if ((rc = wait_io(vm, f, 0)) != 0)
		return rc;
	return do_iov(vm, f, a[1], a[2], 0);
}

int64_t
sys_writev(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	int rc;

	if (f == NULL)
		return -EBADF;
	/* A query to the guest's resolver over TCP (glibc writes the
	 * length and the message as two iovecs). */
	if (f->kind == VFD_HOST && f->dns_tcp &&
	    (rc = (int)vm_sock_dns_writev(vm, f, a[1], a[2])) != -ENOENT)
		return rc;
	if (park_io(vm, f, 1))
		return 0;
	if ((rc = wait_io(vm, f, 1)) != 0)
		return rc;
	return do_iov(vm, f, a[1], a[2], 1);
}

int64_t
sys_open(struct vm *vm, const uint64_t a[6])
{
	return open_at(vm, G_AT_FDCWD, a[0], a[1], a[2]);
}

int64_t
sys_openat(struct vm *vm, const uint64_t a[6])
{
	return open_at(vm, (int64_t)a[0], a[1], a[2], a[3]);
}

int64_t
sys_close(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);

	if (f == NULL)
		return -EBADF;
	fd_release(f);
	return 0;
}

static int64_t
stat_at(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t buf, int flags)
{
	char path[VM_PATH_MAX];
	struct stat st;
	struct vfd *f;
	int64_t rc;

	if ((flags & G_AT_EMPTY_PATH) &&
	    vm_gstr(vm, addr, path, sizeof(path)) == 0 && path[0] == '\0') {
		/* fstat by another name: any descriptor will do. */
		if ((f = fd_get(vm, (uint64_t)dirfd)) == NULL)
			return -EBADF;
		return put_stat(vm, buf, stat_fd(vm, f, &st), &st);
	}
	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path),
	         (flags & G_AT_EMPTY_PATH) != 0)) != 0)
		return rc;
	return put_stat(vm, buf,
	    stat_path(vm, path, (flags & G_AT_SYMLINK_NOFOLLOW) != 0, &st),
	    &st);
}

int64_t
sys_stat(struct vm *vm, const uint64_t a[6])
{
	return stat_at(vm, G_AT_FDCWD, a[0], a[1], 0);
}

int64_t
sys_lstat(struct vm *vm, const uint64_t a[6])
{
	return stat_at(vm, G_AT_FDCWD, a[0], a[1], G_AT_SYMLINK_NOFOLLOW);
}

int64_t
sys_newfstatat(struct vm *vm, const uint64_t a[6])
{
	return stat_at(vm, (int64_t)a[0], a[1], a[2], (int)a[3]);
}

int64_t
sys_fstat(struct vm *vm, const uint64_t a[6])
{
	struct stat st;
	struct vfd *f = fd_get(vm, a[0]);

	if (f == NULL)
		return -EBADF;
	return put_stat(vm, a[1], stat_fd(vm, f, &st), &st);
}

static int64_t
access_at(struct vm *vm, int64_t dirfd, uint64_t addr)
{
	char path[VM_PATH_MAX];
	struct stat st;
	int64_t rc;

	if ((rc = guest_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	return stat_path(vm, path, 0, &st);
}

int64_t
sys_access(struct vm *vm, const uint64_t a[6])
{
	return access_at(vm, G_AT_FDCWD, a[0]);
}

int64_t
sys_faccessat(struct vm *vm, const uint64_t a[6])
{
	return access_at(vm, (int64_t)a[0], a[1]);
}

int64_t
sys_faccessat2(struct vm *vm, const uint64_t a[6])
{
	return access_at(vm, (int64_t)a[0], a[1]);
}

int64_t
sys_lseek(struct vm *vm, const uint64_t a[6])
{
	return seek(vm, a[0], (int64_t)a[1], a[2]);
}

/* The descriptor-flag requests every descriptor answers on Linux
 * (CPython's os.set_blocking uses FIONBIO); the terminal requests on a
 * terminal run's fds 0-2 (tty.c), ENOTTY elsewhere. */
int64_t
sys_ioctl(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	const int *on;

	if (f == NULL)
		return -EBADF;
	switch (a[1]) {
	case FIOCLEX:
	case FIONCLEX:
		f->cloexec = a[1] == FIOCLEX;
		return 0;
	case FIONBIO:
		if ((on = vm_gptr(vm, a[2], sizeof(*on))) == NULL)
			return -EFAULT;
		return set_nonblock(f, *on != 0);
	default:
		return vm_tty_ioctl(vm, f, a[1] & 0xffffffffu, a[2]);
	}
}

int64_t
sys_dup(struct vm *vm, const uint64_t a[6])
{
	return fcntl_fd(vm, a[0], F_DUPFD, 0);
}

int64_t
sys_dup2(struct vm *vm, const uint64_t a[6])
{
	return dup_to(vm, a[0], a[1]);
}

int64_t
sys_dup3(struct vm *vm, const uint64_t a[6])
{
	int64_t r;

	if (a[0] == a[1] || (a[2] & ~(uint64_t)O_CLOEXEC) != 0)
		return -EINVAL;
	if ((r = dup_to(vm, a[0], a[1])) >= 0)
		vm->fds[r].cloexec = (a[2] & O_CLOEXEC) != 0;
	return r;
}

int64_t
sys_fcntl(struct vm *vm, const uint64_t a[6])
{
	return fcntl_fd(vm, a[0], a[1], a[2]);
}

int64_t
sys_fsync(struct vm *vm, const uint64_t a[6])
{
	return fd_get(vm, a[0]) != NULL ? 0 : -EBADF;
}

int64_t
sys_fdatasync(struct vm *vm, const uint64_t a[6])
{
	return sys_fsync(vm, a);
}

/* A file's size is free; its blocks count against the quota, so a
 * sparse extension costs nothing until it is written. */
int64_t
sys_ftruncate(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = fd_get(vm, a[0]);
	uint64_t before;
	int rc;

	if (f == NULL)
		return -EBADF;
	if (f->kind != VFD_HOST || (int64_t)a[1] < 0)
		return -EINVAL;
	before = vm_quota_bytes(f->hostfd);
	rc = ftruncate(f->hostfd, (off_t)a[1]) == -1 ? -errno : 0;
	vm_quota_update(vm, before, f->hostfd);
	return rc;
}

int64_t
sys_getcwd(struct vm *vm, const uint64_t a[6])
{
	size_t n = strlen(vm->cwd) + 1;
	void *g;

	if (a[1] < n)
		return -ERANGE;
	if ((g = vm_gptr(vm, a[0], n)) == NULL)
		return -EFAULT;
	memcpy(g, vm->cwd, n);
	return (int64_t)n;
}

int64_t
sys_chdir(struct vm *vm, const uint64_t a[6])
{
	char path[VM_PATH_MAX], via[VM_PATH_MAX];
	struct stat st;
	int64_t rc;

	if ((rc = guest_path(vm, G_AT_FDCWD, a[0], path, sizeof(path), 0)) !=
	        0 ||
	    (rc = stat_path(vm, path, 0, &st)) != 0)
		return rc;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* /proc/self/cwd and below: the directory they lead to, as getcwd
	 * tells it on Linux (and a later relative path starts there). */
	if (vm_synth_path(path) &&
	    vm_synth_outside(vm, path, 0, via, sizeof(via)))
		strlcpy(path, via, sizeof(path));
	strlcpy(vm->cwd, path, sizeof(vm->cwd));
	return 0;
}

int64_t
sys_readlink(struct vm *vm, const uint64_t a[6])
{
	return readlink_at(vm, G_AT_FDCWD, a[0], a[1], a[2]);
}

int64_t
sys_readlinkat(struct vm *vm, const uint64_t a[6])
{
	return readlink_at(vm, (int64_t)a[0], a[1], a[2], a[3]);
}

int64_t
sys_getdents64(struct vm *vm, const uint64_t a[6])
{
	return vm_getdents(vm, a[0], a[1], a[2]);
}

int64_t
sys_mkdir(struct vm *vm, const uint64_t a[6])
{
	return do_mkdir(vm, G_AT_FDCWD, a[0], a[1]);
}

int64_t
sys_rmdir(struct vm *vm, const uint64_t a[6])
{
	return do_unlink(vm, G_AT_FDCWD, a[0], G_AT_REMOVEDIR);
}

int64_t
sys_unlink(struct vm *vm, const uint64_t a[6])
{
	return do_unlink(vm, G_AT_FDCWD, a[0], 0);
}

int64_t
sys_rename(struct vm *vm, const uint64_t a[6])
{
	uint64_t b[6] = { (uint64_t)G_AT_FDCWD, a[0], (uint64_t)G_AT_FDCWD,
		a[1], 0, 0 };

	return do_rename(vm, b, 0);
}

int64_t
sys_mkdirat(struct vm *vm, const uint64_t a[6])
{
	return do_mkdir(vm, (int64_t)a[0], a[1], a[2]);
}

int64_t
sys_unlinkat(struct vm *vm, const uint64_t a[6])
{
	return do_unlink(vm, (int64_t)a[0], a[1], a[2]);
}

int64_t
sys_renameat(struct vm *vm, const uint64_t a[6])
{
	return do_rename(vm, a, 0);
}

/* RENAME_NOREPLACE and RENAME_EXCHANGE as Linux; RENAME_WHITEOUT is a
 * privileged overlay matter: EINVAL for anything else. */
int64_t
sys_renameat2(struct vm *vm, const uint64_t a[6])
{
	if ((a[4] & ~(uint64_t)(RENAME_NOREPLACE | RENAME_EXCHANGE)) != 0 ||
	    ((a[4] & RENAME_NOREPLACE) && (a[4] & RENAME_EXCHANGE)))
		return -EINVAL;
	return do_rename(vm, a, (unsigned)a[4]);
}

/* ---- pipes -------------------------------------------------------------- */

/* pipe and pipe2: a host pipe, so that it crosses fork as it is. */
static int64_t
make_pipe(struct vm *vm, uint64_t addr, uint64_t flags)
{
	int hp[2], g[2], rc;
	void *out;

	if ((flags & ~(uint64_t)(O_CLOEXEC | O_NONBLOCK)) != 0)
		return -EINVAL;
	if ((out = vm_gptr(vm, addr, sizeof(g))) == NULL)
		return -EFAULT;
	if ((rc = vm_fd_alloc_pair(vm, g)) != 0)
		return rc;
	if (pipe2(hp, O_CLOEXEC | (int)(flags & O_NONBLOCK)) == -1)
		return -errno;
	/* Each guest read and write costs a VM exit, so the writer and the
	 * reader are best kept apart by a deep buffer (1 MiB, the host's
	 * default limit): both run at once instead of in lockstep. Failing
	 * leaves Linux's 64 KiB. */
	fcntl(hp[1], F_SETPIPE_SZ, 1 << 20);
	for (int i = 0; i < 2; i++) {
		struct vfd *f = &vm->fds[g[i]];

		memset(f, 0, sizeof(*f));
		f->kind = VFD_HOST;
		f->hostfd = hp[i];
		f->pipe = 1;
		f->flags =
		    (i == 0 ? O_RDONLY : O_WRONLY) | (int)(flags & O_NONBLOCK);
		f->cloexec = (flags & O_CLOEXEC) != 0;
	}
	memcpy(out, g, sizeof(g));
	return 0;
}

int64_t
sys_pipe(struct vm *vm, const uint64_t a[6])
{
	return make_pipe(vm, a[0], 0);
}

int64_t
sys_pipe2(struct vm *vm, const uint64_t a[6])
{
	return make_pipe(vm, a[0], a[1]);
}

/* ---- exec --------------------------------------------------------------- */

static int
program_via(struct vm *vm, const char *gpath, char *path, size_t pathlen,
    const uint8_t **data, size_t *len, uint8_t **owned, int follow)
{
	char via[VM_PATH_MAX];
	const struct vmm_file *f;
	struct stat st;
	uint8_t *buf;
	size_t got = 0;
	ssize_t n;
	int rc, fd;

	*owned = NULL;
	if (gpath[0] == '\0')
		return -ENOENT;
	if ((rc = ws_normalize(vm->cwd, gpath, path, pathlen)) != 0)
		return rc;
	if (vm_synth_is_exe(vm, path)) {
		/* The running program (busybox re-executes itself so). */
		*data = vm->cfg->elf;
		*len = vm->cfg->elf_len;
		return 0;
	}
	if ((f = image_file(vm, path)) != NULL) {
		if ((f->mode & 0111) == 0)
			return -EACCES;
		*data = f->data;
		*len = f->len;
		return 0;
	}
	if (image_dir(vm, path))
		return -EACCES;
	if ((fd = ws_open(vm, path, O_RDONLY, 0)) == -ENOENT && follow &&
	    (rc = ws_link_elsewhere(vm, path, 0, via, sizeof(via))) != 0)
		return rc < 0
		    ? rc
		    : program_via(vm, via, path, pathlen, data, len, owned, 0);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & 0111) == 0) {
		close(fd);
		return -EACCES;
	}
	if ((uint64_t)st.st_size > vm->memsz ||
	    (buf = malloc(st.st_size ? (size_t)st.st_size : 1)) == NULL) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size &&
	    (n = pread(fd, buf + got, (size_t)st.st_size - got, (off_t)got)) >
	        0)
		got += (size_t)n;
	close(fd);
	*data = *owned = buf;
	*len = got;
	return 0;
}

int
vm_fs_program(struct vm *vm, const char *gpath, char *path, size_t pathlen,
    const uint8_t **data, size_t *len, uint8_t **owned)
{
	return program_via(vm, gpath, path, pathlen, data, len, owned, 1);
}

void
vm_fs_exec_close(struct vm *vm)
{
	unsigned i;

	for (i = 0; i < vm->nfds; i++)
		if (vm->fds[i].kind != VFD_FREE && vm->fds[i].cloexec)
			fd_release(&vm->fds[i]);
}

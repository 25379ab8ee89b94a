/*
 * The file calls beyond open, read and write: modes and owners, links,
 * times, filesystem figures, xattrs, copies between descriptors, and
 * truncation, with Linux's errno semantics.
 *
 * A call that changes an existing workspace file first opens it O_PATH
 * beneath the workspace (host/vmm/workspace.c) and then works on that
 * descriptor (fchmodat2 and utimensat with AT_EMPTY_PATH), never on a
 * name that could be swapped for a symlink between a check and the
 * change. Calls that create a name (symlink, link) work on the parent
 * directory's descriptor with the *at call that does not follow the last
 * component. The image's files are read-only (EROFS) and so are /proc
 * and /dev (procfs.c).
 */
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "host/vmm/fs_int.h"
#include "host/vmm/sys.h"
#include "host/vmm/vm_int.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452 /* Linux 6.6; the headers here are older */
#endif

#define G_UTIME_NOW ((1L << 30) - 1)
#define G_UTIME_OMIT ((1L << 30) - 2)
#define COPY_CHUNK (64u << 10)
#define COPY_MAX (1u << 20) /* bytes one sendfile/copy_file_range moves */
#define WS_FS_MAGIC 0xEF53 /* statfs f_type: an ordinary disk filesystem */
#define WS_FS_BLOCKS_NOLIMIT (1ULL << 28) /* 1 TiB of 4 KiB blocks */
#define WS_FS_FILES (1ULL << 20)

/*
 * The object a guest path names, as an O_PATH descriptor beneath the
 * workspace (following a final symlink unless nofollow). *fd is -1 and
 * the result 0 when the path is the image's or synthetic (ro set).
 */
static int
object_at(
    struct vm *vm, int64_t dirfd, uint64_t addr, int flags, int *fd, int *ro)
{
	char path[VM_PATH_MAX];
	struct stat st;
	struct vfd *f;
	int rc;

	*fd = -1;
	*ro = 0;
	if ((flags & G_AT_EMPTY_PATH) &&
	    vm_gstr(vm, addr, path, sizeof(path)) == 0 && path[0] == '\0') {
		if ((f = vm_fd(vm, (uint64_t)dirfd)) == NULL)
			return -EBADF;
		if (f->kind != VFD_HOST) {
			*ro = 1;
			return 0;
		}
		*fd = fcntl(f->hostfd, F_DUPFD_CLOEXEC, 0);
		return *fd == -1 ? -errno : 0;
	}
	if ((rc = vm_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	/* /proc/self/fd/N followed is the object behind descriptor N (glibc
	 * changes a file's mode through it). */
	if (vm_synth_path(path) && !(flags & G_AT_SYMLINK_NOFOLLOW) &&
	    (rc = vm_synth_fd_of(vm, path)) >= 0 &&
	    (f = vm_fd(vm, (uint64_t)rc)) != NULL && f->kind == VFD_HOST) {
		*fd = fcntl(f->hostfd, F_DUPFD_CLOEXEC, 0);
		return *fd == -1 ? -errno : 0;
	}
	if (vm_synth_path(path) || vm_path_in_image(vm, path)) {
		*ro = 1;
		return (int)vm_stat_path(
		    vm, path, (flags & G_AT_SYMLINK_NOFOLLOW) != 0, &st);
	}
	*fd = vm_ws_open(vm, path,
	    O_PATH | ((flags & G_AT_SYMLINK_NOFOLLOW) ? O_NOFOLLOW : 0), 0);
	return *fd < 0 ? *fd : 0;
}

/* ---- modes ------------------------------------------------------------- */

static int64_t
chmod_object(int fd, uint64_t mode)
{
	char proc[64];

	if (syscall(SYS_fchmodat2, fd, "", (mode_t)(mode & 07777),
	        AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOSYS)
		return -errno;
	/* Before Linux 6.6: the same object through its descriptor. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return chmod(proc, (mode_t)(mode & 07777)) == -1 ? -errno : 0;
}

/* Whether fd is the workspace directory itself: the guest's "/", which
 * it does not own (Linux: EPERM to change its mode), and which must stay
 * readable to the vm process and to keepd's file API. */
static int
is_ws_root(struct vm *vm, int fd)
{
	struct stat a, b;

	return vm->ws_fd >= 0 && fstat(fd, &a) == 0 &&
	    fstat(vm->ws_fd, &b) == 0 && a.st_dev == b.st_dev &&
	    a.st_ino == b.st_ino;
}

static int64_t
chmod_at(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t mode)
{
	int fd, ro, rc;

	if ((rc = object_at(vm, dirfd, addr, 0, &fd, &ro)) != 0)
		return rc;
	if (ro)
		return -EROFS;
	if (is_ws_root(vm, fd)) {
		close(fd);
		return -EPERM;
	}
	rc = (int)chmod_object(fd, mode);
	close(fd);
	return rc;
}

int64_t
sys_chmod(struct vm *vm, const uint64_t a[6])
{
	return chmod_at(vm, G_AT_FDCWD, a[0], a[1]);
}

int64_t
sys_fchmodat(struct vm *vm, const uint64_t a[6])
{
	return chmod_at(vm, (int64_t)a[0], a[1], a[2]);
}

int64_t
sys_fchmod(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);

	if (f == NULL)
		return -EBADF;
	switch (f->kind) {
	case VFD_HOST:
		if (is_ws_root(vm, f->hostfd))
			return -EPERM;
		return fchmod(f->hostfd, (mode_t)(a[1] & 07777)) == -1 ? -errno
		                                                       : 0;
	case VFD_STDIN:
	case VFD_OUT:
		return 0; /* a pipe's mode is nobody's business */
	default:
		return -EROFS;
	}
}

int64_t
sys_umask(struct vm *vm, const uint64_t a[6])
{
	unsigned old = vm->umask;

	vm->umask = (unsigned)(a[0] & 0777);
	return old;
}

/* ---- owners ------------------------------------------------------------ */

/* The guest owns its files and is no one else: it may "change" an owner
 * to itself (or leave it, -1), and nothing more. */
static int64_t
chown_ids(uint64_t uid, uint64_t gid)
{
	uint32_t u = (uint32_t)uid, g = (uint32_t)gid;

	if ((u != UINT32_MAX && u != VM_GUEST_ID) ||
	    (g != UINT32_MAX && g != VM_GUEST_ID))
		return -EPERM;
	return 0;
}

static int64_t
chown_at(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t uid,
    uint64_t gid, int flags)
{
	int fd, ro, rc;

	if ((flags & ~(G_AT_SYMLINK_NOFOLLOW | G_AT_EMPTY_PATH)) != 0)
		return -EINVAL;
	if ((rc = object_at(vm, dirfd, addr, flags, &fd, &ro)) != 0)
		return rc;
	if (fd >= 0)
		close(fd);
	if (ro)
		return -EROFS;
	return chown_ids(uid, gid);
}

int64_t
sys_chown(struct vm *vm, const uint64_t a[6])
{
	return chown_at(vm, G_AT_FDCWD, a[0], a[1], a[2], 0);
}

int64_t
sys_lchown(struct vm *vm, const uint64_t a[6])
{
	return chown_at(
	    vm, G_AT_FDCWD, a[0], a[1], a[2], G_AT_SYMLINK_NOFOLLOW);
}

int64_t
sys_fchownat(struct vm *vm, const uint64_t a[6])
{
	return chown_at(vm, (int64_t)a[0], a[1], a[2], a[3], (int)a[4]);
}

int64_t
sys_fchown(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);

	if (f == NULL)
		return -EBADF;
	if (f->kind != VFD_HOST && f->kind != VFD_STDIN && f->kind != VFD_OUT)
		return -EROFS;
	return chown_ids(a[1], a[2]);
}

int64_t
sys_getgroups(struct vm *vm, const uint64_t a[6])
{
	uint32_t gid = VM_GUEST_ID;

	if ((int32_t)a[0] < 0)
		return -EINVAL;
	if (a[0] == 0)
		return 1;
	return vm_put(vm, a[1], &gid, sizeof(gid)) == 0 ? 1 : -EFAULT;
}

int64_t
sys_setgroups(struct vm *vm, const uint64_t a[6])
{
	(void)vm;
	(void)a;
	return -EPERM; /* as for any process without CAP_SETGID */
}

/* ---- links ------------------------------------------------------------- */

/* The parent directory of a new name: EEXIST when it exists, EROFS where
 * nothing may be created. */
static int
new_name(
    struct vm *vm, int64_t dirfd, uint64_t addr, char *name, size_t namelen)
{
	char path[VM_PATH_MAX];
	struct stat st;
	int rc;

	if ((rc = vm_path(vm, dirfd, addr, path, sizeof(path), 0)) != 0)
		return rc;
	if (vm_stat_path(vm, path, 1, &st) == 0)
		return -EEXIST;
	if (vm_synth_path(path) || vm_path_in_image(vm, path))
		return -EROFS;
	return vm_ws_parent(vm, path, name, namelen);
}

/* Symlinks are created as written; following one never leaves the
 * workspace (RESOLVE_IN_ROOT: an absolute target starts at the
 * workspace, ".." stops at it): docs/vmm.md. */
static int64_t
symlink_at(struct vm *vm, uint64_t target, int64_t dirfd, uint64_t addr)
{
	char t[VM_PATH_MAX], name[VM_PATH_MAX];
	struct stat st;
	int dfd, rc;

	if ((rc = vm_gstr(vm, target, t, sizeof(t))) != 0)
		return rc;
	if (t[0] == '\0')
		return -ENOENT;
	if ((dfd = new_name(vm, dirfd, addr, name, sizeof(name))) < 0)
		return dfd;
	if ((rc = vm_quota_reserve(vm, 4096)) == 0) {
		rc = symlinkat(t, dfd, name) == -1 ? -errno : 0;
		vm_quota_release(vm, 4096);
	}
	if (rc == 0 && vm->ws_used != NULL &&
	    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
		vm_quota_add(vm, (uint64_t)st.st_blocks * 512);
	close(dfd);
	return rc;
}

int64_t
sys_symlink(struct vm *vm, const uint64_t a[6])
{
	return symlink_at(vm, a[0], G_AT_FDCWD, a[1]);
}

int64_t
sys_symlinkat(struct vm *vm, const uint64_t a[6])
{
	return symlink_at(vm, a[0], (int64_t)a[1], a[2]);
}

static int64_t
link_at(struct vm *vm, int64_t olddir, uint64_t oldaddr, int64_t newdir,
    uint64_t newaddr, int flags)
{
	char path[VM_PATH_MAX], oname[VM_PATH_MAX], nname[VM_PATH_MAX];
	struct stat st;
	int odfd, ndfd, obj = -1, rc;

	if ((flags & ~(G_AT_SYMLINK_FOLLOW | G_AT_EMPTY_PATH)) != 0)
		return -EINVAL;
	if ((rc = vm_path(vm, olddir, oldaddr, path, sizeof(path), 0)) != 0)
		return rc;
	if (vm_synth_path(path) || vm_path_in_image(vm, path))
		return vm_stat_path(vm, path, 1, &st) == 0 ? -EXDEV : -ENOENT;
	if ((odfd = vm_ws_parent(vm, path, oname, sizeof(oname))) < 0)
		return odfd;
	if (fstatat(odfd, oname, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		rc = -errno;
		close(odfd);
		return rc;
	}
	if ((ndfd = new_name(vm, newdir, newaddr, nname, sizeof(nname))) < 0) {
		close(odfd);
		return ndfd;
	}
	if (S_ISDIR(st.st_mode))
		rc = -EPERM;
	else if ((flags & G_AT_SYMLINK_FOLLOW) && S_ISLNK(st.st_mode)) {
		/* The symlink's target, found beneath the workspace. */
		if ((obj = vm_ws_open(vm, path, O_PATH, 0)) < 0)
			rc = obj;
		else
			rc = linkat(obj, "", ndfd, nname, AT_EMPTY_PATH) == -1
			    ? -errno
			    : 0;
	} else
		rc = linkat(odfd, oname, ndfd, nname, 0) == -1 ? -errno : 0;
	if (obj >= 0)
		close(obj);
	close(ndfd);
	close(odfd);
	return rc;
}

int64_t
sys_link(struct vm *vm, const uint64_t a[6])
{
	return link_at(vm, G_AT_FDCWD, a[0], G_AT_FDCWD, a[1], 0);
}

int64_t
sys_linkat(struct vm *vm, const uint64_t a[6])
{
	return link_at(vm, (int64_t)a[0], a[1], (int64_t)a[2], a[3], (int)a[4]);
}

/* ---- times ------------------------------------------------------------- */

/* The guest does not own its "/" (see is_ws_root): Linux refuses a
 * non-owner explicit times with EPERM and "now" without write access
 * (the root is 0755 root's) with EACCES. */
static int64_t
root_times_refused(const struct timespec *times)
{
	int i;

	for (i = 0; times != NULL && i < 2; i++)
		if (times[i].tv_nsec != G_UTIME_NOW &&
		    times[i].tv_nsec != G_UTIME_OMIT)
			return -EPERM;
	return -EACCES;
}

/* times: two timespecs, or NULL for now (UTIME_NOW and UTIME_OMIT as
 * Linux). */
static int64_t
utimens_at(struct vm *vm, int64_t dirfd, uint64_t addr,
    const struct timespec *times, int flags)
{
	struct vfd *f;
	int fd, ro, rc, i;

	if ((flags & ~(G_AT_SYMLINK_NOFOLLOW | G_AT_EMPTY_PATH)) != 0)
		return -EINVAL;
	for (i = 0; times != NULL && i < 2; i++)
		if ((times[i].tv_nsec < 0 || times[i].tv_nsec >= 1000000000L) &&
		    times[i].tv_nsec != G_UTIME_NOW &&
		    times[i].tv_nsec != G_UTIME_OMIT)
			return -EINVAL;
	if (addr == 0) {
		/* futimens: the descriptor itself. */
		if ((f = vm_fd(vm, (uint64_t)dirfd)) == NULL)
			return -EBADF;
		if (f->kind == VFD_STDIN || f->kind == VFD_OUT)
			return 0;
		if (f->kind != VFD_HOST)
			return -EROFS;
		if (is_ws_root(vm, f->hostfd))
			return root_times_refused(times);
		return futimens(f->hostfd, times) == -1 ? -errno : 0;
	}
	if ((rc = object_at(vm, dirfd, addr, flags, &fd, &ro)) != 0)
		return rc;
	if (ro)
		return -EROFS;
	if (is_ws_root(vm, fd)) {
		close(fd);
		return root_times_refused(times);
	}
	rc = utimensat(fd, "", times, AT_EMPTY_PATH) == -1 ? -errno : 0;
	close(fd);
	return rc;
}

static int
get_timespecs(struct vm *vm, uint64_t addr, struct timespec ts[2])
{
	const void *g;

	if ((g = vm_gptr(vm, addr, 2 * sizeof(*ts))) == NULL)
		return -EFAULT;
	memcpy(ts, g, 2 * sizeof(*ts));
	return 0;
}

int64_t
sys_utimensat(struct vm *vm, const uint64_t a[6])
{
	struct timespec ts[2];
	int rc;

	if (a[2] != 0 && (rc = get_timespecs(vm, a[2], ts)) != 0)
		return rc;
	return utimens_at(
	    vm, (int64_t)a[0], a[1], a[2] != 0 ? ts : NULL, (int)a[3]);
}

/* utimes and futimesat: timevals, or NULL for now. */
static int64_t
utimes_at(struct vm *vm, int64_t dirfd, uint64_t addr, uint64_t tv)
{
	int64_t v[4];
	struct timespec ts[2];
	const void *g;
	int i;

	if (addr == 0)
		return -EFAULT;
	if (tv == 0)
		return utimens_at(vm, dirfd, addr, NULL, 0);
	if ((g = vm_gptr(vm, tv, sizeof(v))) == NULL)
		return -EFAULT;
	memcpy(v, g, sizeof(v));
	for (i = 0; i < 2; i++) {
		if (v[2 * i + 1] < 0 || v[2 * i + 1] >= 1000000)
			return -EINVAL;
		ts[i].tv_sec = v[2 * i];
		ts[i].tv_nsec = v[2 * i + 1] * 1000;
	}
	return utimens_at(vm, dirfd, addr, ts, 0);
}

int64_t
sys_utimes(struct vm *vm, const uint64_t a[6])
{
	return utimes_at(vm, G_AT_FDCWD, a[0], a[1]);
}

int64_t
sys_futimesat(struct vm *vm, const uint64_t a[6])
{
	return utimes_at(vm, (int64_t)a[0], a[1], a[2]);
}

/* utime: struct utimbuf {actime, modtime}, or NULL for now. */
int64_t
sys_utime(struct vm *vm, const uint64_t a[6])
{
	int64_t v[2];
	struct timespec ts[2];
	const void *g;

	if (a[0] == 0)
		return -EFAULT;
	if (a[1] == 0)
		return utimens_at(vm, G_AT_FDCWD, a[0], NULL, 0);
	if ((g = vm_gptr(vm, a[1], sizeof(v))) == NULL)
		return -EFAULT;
	memcpy(v, g, sizeof(v));
	ts[0].tv_sec = v[0];
	ts[1].tv_sec = v[1];
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	return utimens_at(vm, G_AT_FDCWD, a[0], ts, 0);
}

/* ---- filesystem figures ------------------------------------------------ */

/*
 * The workspace as the guest sees it: 4 KiB blocks, as many as the quota
 * allows (or 1 TiB without one), used as the quota counts them. The
 * image's files and /proc and /dev read as a read-only filesystem of
 * their own size. Nothing is the host's.
 */
static int64_t
put_statfs(struct vm *vm, uint64_t buf, int ro)
{
	struct statfs sf;
	uint64_t max = vm->cfg->workspace_max, used, ws_bytes = 0;

	memset(&sf, 0, sizeof(sf));
	sf.f_type = WS_FS_MAGIC;
	sf.f_bsize = 4096;
	sf.f_frsize = 4096;
	sf.f_namelen = 255;
	sf.f_files = WS_FS_FILES;
	sf.f_fsid.__val[0] = ro ? 0x6b01 : 0x6b02;
	if (ro || vm->ws_fd < 0) {
		sf.f_flags = ST_RDONLY;
		sf.f_ffree = WS_FS_FILES / 2;
	} else {
		sf.f_blocks =
		    max != 0 ? (fsblkcnt_t)(max / 4096) : WS_FS_BLOCKS_NOLIMIT;
		/* Without a quota nothing keeps count: walk now (bounded as
		 * the quota's walk is), so "used" is what the workspace holds. */
		if (max == 0 &&
		    ws_usage(vm->ws_fd, WS_USAGE_MAX_ENTRIES, &ws_bytes) == 0)
			used = (ws_bytes + 4095) / 4096;
		else
			used = vm_quota_used(vm) == UINT64_MAX
			    ? (uint64_t)sf.f_blocks
			    : (vm_quota_used(vm) + 4095) / 4096;
		sf.f_bfree = used < sf.f_blocks ? sf.f_blocks - used : 0;
		sf.f_bavail = sf.f_bfree;
		sf.f_ffree = WS_FS_FILES / 2;
	}
	return vm_put(vm, buf, &sf, sizeof(sf));
}

int64_t
sys_statfs(struct vm *vm, const uint64_t a[6])
{
	char path[VM_PATH_MAX];
	struct stat st;
	int64_t rc;

	if ((rc = vm_path(vm, G_AT_FDCWD, a[0], path, sizeof(path), 0)) != 0 ||
	    (rc = vm_stat_path(vm, path, 0, &st)) != 0)
		return rc;
	return put_statfs(vm, a[1],
	    vm_synth_path(path) ||
	        (vm_path_in_image(vm, path) &&
	            vm_ws_open(vm, path, O_PATH, 0) < 0));
}

int64_t
sys_fstatfs(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);

	if (f == NULL)
		return -EBADF;
	return put_statfs(vm, a[1], f->kind != VFD_HOST);
}

/* ---- statx --------------------------------------------------------------- */

struct g_statx_ts {
	int64_t sec;
	uint32_t nsec;
	int32_t pad;
};

struct g_statx {
	uint32_t mask, blksize;
	uint64_t attributes;
	uint32_t nlink, uid, gid;
	uint16_t mode, pad1;
	uint64_t ino, size, blocks, attributes_mask;
	struct g_statx_ts atime, btime, ctime, mtime;
	uint32_t rdev_major, rdev_minor, dev_major, dev_minor;
	uint64_t spare[14];
};

#define G_STATX_BASIC_STATS 0x7ffu
#define G_AT_NO_AUTOMOUNT 0x800
#define G_AT_STATX_SYNC_TYPE 0x6000

int64_t
sys_statx(struct vm *vm, const uint64_t a[6])
{
	char path[VM_PATH_MAX];
	struct g_statx sx;
	struct stat st;
	struct vfd *f;
	int flags = (int)a[2];
	int64_t rc;

	if ((flags &
	        ~(G_AT_SYMLINK_NOFOLLOW | G_AT_EMPTY_PATH | G_AT_NO_AUTOMOUNT |
	            G_AT_STATX_SYNC_TYPE)) != 0 ||
	    (flags & G_AT_STATX_SYNC_TYPE) == G_AT_STATX_SYNC_TYPE ||
	    (a[3] & 0x80000000u) != 0) /* STATX__RESERVED */
		return -EINVAL;
	if ((flags & G_AT_EMPTY_PATH) &&
	    vm_gstr(vm, a[1], path, sizeof(path)) == 0 && path[0] == '\0') {
		if ((f = vm_fd(vm, a[0])) == NULL)
			return -EBADF;
		rc = vm_stat_fd(vm, f, &st);
	} else if ((rc = vm_path(
	                vm, (int64_t)a[0], a[1], path, sizeof(path), 0)) == 0)
		rc = vm_stat_path(
		    vm, path, (flags & G_AT_SYMLINK_NOFOLLOW) != 0, &st);
	if (rc != 0)
		return rc;
	memset(&sx, 0, sizeof(sx));
	sx.mask = G_STATX_BASIC_STATS;
	sx.blksize = (uint32_t)st.st_blksize;
	sx.nlink = (uint32_t)st.st_nlink;
	sx.uid = st.st_uid;
	sx.gid = st.st_gid;
	sx.mode = (uint16_t)st.st_mode;
	sx.ino = st.st_ino;
	sx.size = (uint64_t)st.st_size;
	sx.blocks = (uint64_t)st.st_blocks;
	sx.atime.sec = st.st_atim.tv_sec;
	sx.atime.nsec = (uint32_t)st.st_atim.tv_nsec;
	sx.mtime.sec = st.st_mtim.tv_sec;
	sx.mtime.nsec = (uint32_t)st.st_mtim.tv_nsec;
	sx.ctime.sec = st.st_ctim.tv_sec;
	sx.ctime.nsec = (uint32_t)st.st_ctim.tv_nsec;
	sx.rdev_major = major(st.st_rdev);
	sx.rdev_minor = minor(st.st_rdev);
	sx.dev_major = major(st.st_dev);
	sx.dev_minor = minor(st.st_dev);
	return vm_put(vm, a[4], &sx, sizeof(sx));
}

/* ---- extended attributes ------------------------------------------------ */

/*
 * The workspace is a filesystem without extended attributes, as Linux
 * reports one: getting, setting or removing one is ENOTSUP (EOPNOTSUPP),
 * listing gives none. The path or descriptor is checked first, so a
 * missing file is still ENOENT or EBADF.
 */
static int64_t
xattr_path(struct vm *vm, uint64_t addr, int nofollow, int64_t result)
{
	char path[VM_PATH_MAX];
	struct stat st;
	int64_t rc;

	if ((rc = vm_path(vm, G_AT_FDCWD, addr, path, sizeof(path), 0)) != 0 ||
	    (rc = vm_stat_path(vm, path, nofollow, &st)) != 0)
		return rc;
	return result;
}

static int64_t
xattr_fd(struct vm *vm, uint64_t fd, int64_t result)
{
	return vm_fd(vm, fd) != NULL ? result : -EBADF;
}

int64_t
sys_getxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_path(vm, a[0], 0, -EOPNOTSUPP);
}

int64_t
sys_lgetxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_path(vm, a[0], 1, -EOPNOTSUPP);
}

int64_t
sys_fgetxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_fd(vm, a[0], -EOPNOTSUPP);
}

int64_t
sys_listxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_path(vm, a[0], 0, 0);
}

int64_t
sys_llistxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_path(vm, a[0], 1, 0);
}

int64_t
sys_flistxattr(struct vm *vm, const uint64_t a[6])
{
	return xattr_fd(vm, a[0], 0);
}

/* ---- copies between descriptors ------------------------------------------ */

/* Bytes read from f's offset and not written go back to it. */
static void
unread(struct vfd *f, uint64_t n)
{
	if (f->kind == VFD_HOST)
		(void)lseek(f->hostfd, -(off_t)n, SEEK_CUR);
	else if (f->kind == VFD_IMAGE || f->kind == VFD_SYNTH)
		f->off = f->off >= n ? f->off - n : 0;
}

/* Move up to len bytes from in (at *inpos, or its offset when NULL) to
 * out (at *outpos, or its offset), through a host buffer. */
static int64_t
copy_fds(struct vm *vm, struct vfd *in, int64_t *inpos, struct vfd *out,
    int64_t *outpos, uint64_t len)
{
	uint8_t *buf;
	uint64_t total = 0;
	int64_t n, w;

	if (len > COPY_MAX)
		len = COPY_MAX;
	if ((buf = malloc(COPY_CHUNK)) == NULL)
		return -ENOMEM;
	while (total < len && !vm->stopped) {
		uint64_t want =
		    len - total < COPY_CHUNK ? len - total : COPY_CHUNK;

		n = vm_fd_read(vm, in, buf, want, inpos ? *inpos : -1);
		if (n <= 0) {
			if (n < 0 && total == 0)
				total = (uint64_t)n;
			break;
		}
		w = vm_fd_write(
		    vm, out, buf, (uint64_t)n, outpos ? *outpos : -1);
		if (w < 0) {
			if (total == 0)
				total = (uint64_t)w;
			break;
		}
		if (inpos)
			*inpos += w;
		else if (w < n)
			unread(in, (uint64_t)(n - w));
		if (outpos)
			*outpos += w;
		total += (uint64_t)w;
		if (w < n)
			break;
	}
	free(buf);
	return (int64_t)total;
}

/* A loff_t the guest gives by pointer (0: none, *g NULL): 0, -EFAULT
 * or -EINVAL for a negative one. */
static int64_t
offset_in(struct vm *vm, uint64_t addr, void **g, int64_t *pos)
{
	*g = NULL;
	if (addr == 0)
		return 0;
	if ((*g = vm_gptr(vm, addr, 8)) == NULL)
		return -EFAULT;
	memcpy(pos, *g, 8);
	return *pos < 0 ? -EINVAL : 0;
}

/* copy_fds at the guest's offsets, written back when it moved bytes. */
static int64_t
copy_at(struct vm *vm, struct vfd *in, void *gi, int64_t inpos, struct vfd *out,
    void *go, int64_t outpos, uint64_t len)
{
	int64_t n =
	    copy_fds(vm, in, gi ? &inpos : NULL, out, go ? &outpos : NULL, len);

	if (n >= 0) {
		if (gi != NULL)
			memcpy(gi, &inpos, 8);
		if (go != NULL)
			memcpy(go, &outpos, 8);
	}
	return n;
}

static int
readable_kind(const struct vfd *f)
{
	return f->kind == VFD_HOST || f->kind == VFD_IMAGE ||
	    f->kind == VFD_SYNTH || f->kind == VFD_DEV || f->kind == VFD_STDIN;
}

int64_t
sys_sendfile(struct vm *vm, const uint64_t a[6])
{
	struct vfd *out = vm_fd(vm, a[0]), *in = vm_fd(vm, a[1]);
	struct stat st;
	int64_t pos = 0, rc;
	void *g;

	if (out == NULL || in == NULL)
		return -EBADF;
	if (!readable_kind(in) ||
	    (in->kind == VFD_HOST &&
	        (fstat(in->hostfd, &st) == -1 || S_ISDIR(st.st_mode))))
		return -EINVAL;
	if ((rc = offset_in(vm, a[2], &g, &pos)) != 0)
		return rc;
	return copy_at(vm, in, g, pos, out, NULL, 0, a[3]);
}

int64_t
sys_copy_file_range(struct vm *vm, const uint64_t a[6])
{
	struct vfd *in = vm_fd(vm, a[0]), *out = vm_fd(vm, a[2]);
	int64_t inpos = 0, outpos = 0, rc;
	void *gi, *go;
	struct stat st;

	if (a[5] != 0)
		return -EINVAL;
	if (in == NULL || out == NULL)
		return -EBADF;
	if ((out->flags & O_APPEND) != 0)
		return -EBADF;
	if ((in->kind != VFD_HOST && in->kind != VFD_IMAGE) ||
	    out->kind != VFD_HOST ||
	    (in->kind == VFD_HOST &&
	        (fstat(in->hostfd, &st) == -1 || !S_ISREG(st.st_mode))) ||
	    fstat(out->hostfd, &st) == -1 || !S_ISREG(st.st_mode))
		return -EINVAL;
	if ((rc = offset_in(vm, a[1], &gi, &inpos)) != 0 ||
	    (rc = offset_in(vm, a[3], &go, &outpos)) != 0)
		return rc;
	return copy_at(vm, in, gi, inpos, out, go, outpos, a[4]);
}

/* ---- splice, tee, vmsplice ------------------------------------------------ */

#define G_SPLICE_F_NONBLOCK 2
#define G_SPLICE_FLAGS 15 /* MOVE, NONBLOCK, MORE, GIFT */

static int
is_pipe(const struct vfd *f)
{
	struct stat st;

	return f->kind == VFD_HOST && f->pipe && fstat(f->hostfd, &st) == 0 &&
	    S_ISFIFO(st.st_mode);
}

static int
ready(int hfd, short events)
{
	struct pollfd p = { .fd = hfd, .events = events };

	return poll(&p, 1, 0) == 1;
}

/* Before a move out of in: 0 when it may go on, 1 when the thread was
 * parked (the call is made again when in is ready, as a read's), or
 * -EINTR. A descriptor that is not the host's never waits. */
static int
splice_wait(struct vm *vm, const struct vfd *in, uint64_t flags)
{
	if (in->kind != VFD_HOST || (!in->pipe && in->sock == 0) ||
	    (flags & G_SPLICE_F_NONBLOCK) || (in->flags & O_NONBLOCK) ||
	    ready(in->hostfd, POLLIN))
		return 0;
	if (vm_thread_park_fd(vm, in->hostfd, POLLIN))
		return 1;
	return vm_signal_wait_fd(vm, in->hostfd, POLLIN);
}

/*
 * splice: bytes between a pipe and another descriptor, moved through a
 * host buffer as sendfile's are (so a workspace file's writes count
 * against the quota, and an egress connection's bytes are judged as a
 * write's), not page by page: what Linux promises of the result holds,
 * none of the zero copy. One end must be a pipe (EINVAL), and a pipe's
 * end takes no offset (ESPIPE).
 */
int64_t
sys_splice(struct vm *vm, const uint64_t a[6])
{
	struct vfd *in = vm_fd(vm, a[0]), *out = vm_fd(vm, a[2]);
	int64_t inpos = 0, outpos = 0, rc;
	void *gi, *go;

	if (in == NULL || out == NULL)
		return -EBADF;
	if ((a[5] & ~(uint64_t)G_SPLICE_FLAGS) != 0 ||
	    (!is_pipe(in) && !is_pipe(out)) || !readable_kind(in))
		return -EINVAL;
	if ((a[1] != 0 && is_pipe(in)) || (a[3] != 0 && is_pipe(out)))
		return -ESPIPE;
	if ((rc = offset_in(vm, a[1], &gi, &inpos)) != 0 ||
	    (rc = offset_in(vm, a[3], &go, &outpos)) != 0)
		return rc;
	if (a[4] == 0)
		return 0;
	/* SPLICE_F_NONBLOCK: neither pipe end may wait (the host
	 * descriptors may be blocking ones). */
	if ((a[5] & G_SPLICE_F_NONBLOCK) &&
	    ((is_pipe(in) && !ready(in->hostfd, POLLIN)) ||
	        (is_pipe(out) && !ready(out->hostfd, POLLOUT))))
		return -EAGAIN;
	if ((rc = splice_wait(vm, in, a[5])) != 0)
		return rc == 1 ? 0 : rc;
	return copy_at(vm, in, gi, inpos, out, go, outpos, a[4]);
}

/* tee: the host's, between two host pipes (nothing leaves them). */
int64_t
sys_tee(struct vm *vm, const uint64_t a[6])
{
	struct vfd *in = vm_fd(vm, a[0]), *out = vm_fd(vm, a[1]);
	struct stat si, so;
	ssize_t n;
	int rc;

	if (in == NULL || out == NULL)
		return -EBADF;
	if ((a[3] & ~(uint64_t)G_SPLICE_FLAGS) != 0 || !is_pipe(in) ||
	    !is_pipe(out) || fstat(in->hostfd, &si) == -1 ||
	    fstat(out->hostfd, &so) == -1 ||
	    (si.st_ino == so.st_ino && si.st_dev == so.st_dev))
		return -EINVAL; /* two ends of one pipe too, as Linux */
	if ((rc = splice_wait(vm, in, a[3])) != 0)
		return rc == 1 ? 0 : rc;
	/* Never blocks on the output: a full pipe answers EAGAIN, where
	 * Linux would wait for room. */
	n = tee(in->hostfd, out->hostfd, a[2] > COPY_MAX ? COPY_MAX : a[2],
	    SPLICE_F_NONBLOCK);
	return n == -1 ? -errno : n;
}

/* vmsplice: the guest's memory into a pipe (its write end) or out of
 * it (its read end), as writev and readv move it. */
int64_t
sys_vmsplice(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);
	uint64_t v[6] = { a[0], a[1], a[2], 0, 0, 0 };
	int fl;

	if (f == NULL || !is_pipe(f) || (fl = fcntl(f->hostfd, F_GETFL)) == -1)
		return -EBADF;
	if ((a[3] & ~(uint64_t)G_SPLICE_FLAGS) != 0)
		return -EINVAL;
	/* Which end: the host's pipe says. */
	return (fl & O_ACCMODE) == O_RDONLY ? sys_readv(vm, v)
	                                    : sys_writev(vm, v);
}

/* ---- descriptors and sizes ------------------------------------------------ */

#define G_CLOSE_RANGE_UNSHARE 2
#define G_CLOSE_RANGE_CLOEXEC 4

int64_t
sys_close_range(struct vm *vm, const uint64_t a[6])
{
	uint32_t first = (uint32_t)a[0], last = (uint32_t)a[1], i;
	struct vfd *f;

	if ((a[2] &
	        ~(uint64_t)(G_CLOSE_RANGE_UNSHARE | G_CLOSE_RANGE_CLOEXEC)) !=
	        0 ||
	    first > last)
		return -EINVAL;
	if (last >= vm->nfds)
		last = vm->nfds - 1;
	for (i = first; i <= last && i < vm->nfds; i++) {
		if ((f = vm_fd(vm, i)) == NULL)
			continue;
		if (a[2] & G_CLOSE_RANGE_CLOEXEC)
			f->cloexec = 1;
		else
			vm_fd_release(f);
	}
	return 0;
}

int64_t
sys_fchdir(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);
	struct stat st;

	if (f == NULL)
		return -EBADF;
	if (f->path == NULL || vm_stat_fd(vm, f, &st) != 0 ||
	    !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	strlcpy(vm->cwd, f->path, sizeof(vm->cwd));
	return 0;
}

int64_t
sys_creat(struct vm *vm, const uint64_t a[6])
{
	uint64_t b[6] = { a[0], O_CREAT | O_WRONLY | O_TRUNC, a[1], 0, 0, 0 };

	return sys_open(vm, b);
}

int64_t
sys_truncate(struct vm *vm, const uint64_t a[6])
{
	char path[VM_PATH_MAX];
	struct stat st;
	uint64_t before;
	int fd, rc;

	if ((int64_t)a[1] < 0)
		return -EINVAL;
	if ((rc = vm_path(vm, G_AT_FDCWD, a[0], path, sizeof(path), 0)) != 0)
		return rc;
	if (vm_synth_path(path) || vm_path_in_image(vm, path)) {
		if ((rc = (int)vm_stat_path(vm, path, 0, &st)) != 0)
			return rc;
		return S_ISDIR(st.st_mode) ? -EISDIR : -EROFS;
	}
	if ((fd = vm_ws_open(vm, path, O_WRONLY | O_NONBLOCK, 0)) < 0)
		return fd;
	before = vm_quota_bytes(fd);
	rc = ftruncate(fd, (off_t)a[1]) == -1 ? -errno : 0;
	vm_quota_update(vm, before, fd);
	close(fd);
	return rc;
}

#define G_FALLOC_FL_KEEP_SIZE 0x01
#define G_FALLOC_FL_PUNCH_HOLE 0x02

/* Allocation counts against the quota in full before it is made;
 * punching a hole gives blocks back. */
int64_t
sys_fallocate(struct vm *vm, const uint64_t a[6])
{
	struct vfd *f = vm_fd(vm, a[0]);
	int64_t off = (int64_t)a[2], len = (int64_t)a[3];
	uint64_t mode = a[1], before, reserved;
	int rc;

	if (f == NULL)
		return -EBADF;
	if (off < 0 || len <= 0)
		return -EINVAL;
	if (f->kind == VFD_STDIN || f->kind == VFD_OUT)
		return -ESPIPE;
	if (f->kind != VFD_HOST)
		return -ENODEV;
	if (mode != 0 && mode != G_FALLOC_FL_KEEP_SIZE &&
	    mode != (G_FALLOC_FL_KEEP_SIZE | G_FALLOC_FL_PUNCH_HOLE))
		return -EOPNOTSUPP;
	reserved = mode & G_FALLOC_FL_PUNCH_HOLE ? 0 : (uint64_t)len;
	if ((rc = vm_quota_reserve(vm, reserved)) != 0)
		return rc;
	before = vm_quota_bytes(f->hostfd);
	rc = fallocate(f->hostfd, (int)mode, off, len) == -1 ? -errno : 0;
	vm_quota_settle(vm, reserved, before, f->hostfd);
	return rc;
}

/*
 * memfd_create: an anonymous file, which here is a file with no name in
 * the workspace's /dev/shm (O_TMPFILE), so its bytes count against the
 * workspace quota, as a tmpfs file's count against memory in Linux. It
 * is a workspace file with no guest path, as one passed with
 * SCM_RIGHTS: read, write, mmap (shared across fork), truncate, stat.
 * Seals are not kept: F_ADD_SEALS and F_GET_SEALS answer EINVAL, as for
 * any file that is not a memfd; MFD_HUGETLB and the newer exec flags
 * EINVAL, as on a kernel without them. No workspace, no room: ENOMEM.
 */
#define MFD_NAME_MAX 249 /* Linux's, without its "memfd:" */

/* Where the workspace's filesystem has no O_TMPFILE (EOPNOTSUPP; EISDIR
 * from kernels that predate it): a new file of a random name in
 * /dev/shm, unlinked at once. */
static int
named_then_gone(struct vm *vm)
{
	char path[64], leaf[64];
	unsigned char r[8];
	int dfd, fd;

	randombytes_buf(r, sizeof(r));
	snprintf(path, sizeof(path),
	    "/dev/shm/.memfd-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1],
	    r[2], r[3], r[4], r[5], r[6], r[7]);
	if ((fd = vm_ws_open(
	         vm, path, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600)) < 0)
		return fd;
	if ((dfd = vm_ws_parent(vm, path, leaf, sizeof(leaf))) >= 0) {
		(void)unlinkat(dfd, leaf, 0);
		close(dfd);
	}
	return fd;
}

int64_t
sys_memfd_create(struct vm *vm, const uint64_t a[6])
{
	char name[MFD_NAME_MAX + 1];
	uint64_t flags = a[1];
	int hfd, gfd, rc;

	if ((rc = vm_gstr(vm, a[0], name, sizeof(name))) != 0)
		return rc == -ENAMETOOLONG ? -EINVAL : rc;
	if ((flags & ~(uint64_t)(MFD_CLOEXEC | MFD_ALLOW_SEALING)) != 0)
		return -EINVAL;
	if ((hfd = vm_ws_open(
	         vm, "/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600)) < 0 &&
	    (hfd == -EOPNOTSUPP || hfd == -EISDIR))
		hfd = named_then_gone(vm);
	if (hfd < 0)
		return hfd == -ENOENT ? -ENOMEM : hfd;
	if ((gfd = vm_fd_add_host(vm, hfd, (flags & MFD_CLOEXEC) != 0)) < 0) {
		close(hfd);
		return gfd;
	}
	vm_fd_is_file(vm, gfd);
	return gfd;
}

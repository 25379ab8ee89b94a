/*
 * What the guest's file calls share across host/vmm/: descriptors,
 * guest paths and the three places a path can lead (fs.c), the
 * workspace quota (fs.c), and the synthetic /proc and /dev (procfs.c).
 */
#ifndef KEEP_VMM_FS_INT_H
#define KEEP_VMM_FS_INT_H

#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

#include "host/vmm/vm_int.h"

#define G_AT_FDCWD (-100)
#define G_AT_SYMLINK_NOFOLLOW 0x100
#define G_AT_REMOVEDIR 0x200
#define G_AT_SYMLINK_FOLLOW 0x400
#define G_AT_EMPTY_PATH 0x1000

/* ---- fs.c ---- */

/* The lowest free descriptor from `from` on, or -EMFILE. */
int vm_fd_alloc(struct vm *, unsigned from);
/* The two lowest free descriptors, for a pipe's or a pair's ends (both
 * still free: the caller makes them): 0, or -EMFILE. */
int vm_fd_alloc_pair(struct vm *, int g[2]);
void vm_fd_release(struct vfd *);
/* Descriptor newfd becomes a copy of f (newfd free). 0 or -errno. */
int vm_fd_copy(struct vm *, const struct vfd *f, int newfd, int cloexec);
/* The guest path at (dirfd, addr), normalized; empty_ok: "" names
 * dirfd itself (AT_EMPTY_PATH). 0 or -errno. */
int vm_path(struct vm *, int64_t dirfd, uint64_t addr, char *out, size_t outlen,
    int empty_ok);
/* Whether path is one of the image's files or directories. */
int vm_path_in_image(struct vm *, const char *path);
/* The workspace, beneath its directory (host/vmm/workspace.c). */
int vm_ws_open(struct vm *, const char *path, uint64_t flags, uint64_t mode);
int vm_ws_parent(struct vm *, const char *path, char *name, size_t namelen);
/* Into directory dfd, for a call that takes only a name there: the
 * descriptor vm_cwd_leave goes back by, or -errno (still where it was). */
int vm_cwd_enter(int dfd);
void vm_cwd_leave(int back);
int64_t vm_stat_path(
    struct vm *, const char *path, int nofollow, struct stat *st);
int64_t vm_stat_fd(struct vm *, struct vfd *, struct stat *st);
/* Copy a struct stat to the guest (rc passed through when not 0). */
int64_t vm_put_stat(
    struct vm *, uint64_t addr, int64_t rc, const struct stat *);
/* Read or write a descriptor with host memory; pos < 0: at its offset. */
int64_t vm_fd_read(
    struct vm *, struct vfd *, void *buf, uint64_t len, int64_t pos);
int64_t vm_fd_write(
    struct vm *, struct vfd *, const void *buf, uint64_t len, int64_t pos);

/* The workspace quota (docs/vmm.md, "Limits"). Take `grow` bytes for a
 * change that may grow the workspace by up to that much, if they fit:
 * 0, or -EDQUOT and nothing taken. */
int vm_quota_reserve(struct vm *, uint64_t grow);
/* Account for a change to a file: its allocated bytes before (from
 * vm_quota_bytes) and the file as it is now, less what was reserved
 * for it (settle: also when the change failed). */
uint64_t vm_quota_bytes(int hostfd);
void vm_quota_settle(
    struct vm *, uint64_t reserved, uint64_t before, int hostfd);
void vm_quota_update(struct vm *, uint64_t before, int hostfd);
/* Account for bytes freed (an unlink, a rename over a file). */
void vm_quota_release(struct vm *, uint64_t bytes);
/* Account for bytes a new node took (a directory, a symlink). */
void vm_quota_add(struct vm *, uint64_t bytes);
/* What the workspace holds as counted; UINT64_MAX: too big to count. */
uint64_t vm_quota_used(const struct vm *);
/* Count the workspace now, into a page of its own that the process
 * tree forked from here shares (vm_fs_init, a template's clone). */
int vm_quota_start(struct vm *);

/* ---- sys_lock.c ---- */

/* fcntl's lock requests on descriptor f (F_GETLK, F_SETLK, F_SETLKW
 * and their OFD forms); -EINVAL for any other command. */
int64_t vm_fcntl_lock(struct vm *, struct vfd *f, uint64_t cmd, uint64_t arg);

/* ---- procfs.c ---- */

/* Whether path is under the synthetic /proc or /dev. */
int vm_synth_path(const char *path);
int64_t vm_synth_stat(
    struct vm *, const char *path, int nofollow, struct stat *st);
/* Fill the free descriptor f for path, opened with flags; 0 or -errno
 * (the descriptor stays free on failure). */
int64_t vm_synth_open(
    struct vm *, const char *path, uint64_t flags, struct vfd *f, int fd);
/* getdents64 on guest descriptor fd into the guest's buf (fs_dir.c):
 * bytes filled, 0 at the end, or -errno. */
int64_t vm_getdents(struct vm *, uint64_t fd, uint64_t buf, uint64_t len);
/* The guest descriptor a /proc/self/fd/N path (or a link to one, such
 * as /dev/stdin) stands for when followed, or -1. */
int vm_synth_fd_of(struct vm *, const char *path);
/* The target of a synthetic symlink: its length or -errno (EINVAL for
 * anything not a symlink). */
int64_t vm_synth_readlink(
    struct vm *, const char *path, char *out, size_t outlen);
/* Whether path, followed, leaves the synthetic tree (below
 * /proc/self/cwd): 1 with where it leads in out, else 0. */
int vm_synth_outside(
    struct vm *, const char *path, int nofollow, char *out, size_t outlen);
/* A /proc file's bytes made again (a seek back to its start); the old
 * ones kept if that fails. */
void vm_synth_refresh(struct vm *, struct vfd *f);
/* Whether path leads to the running program (/proc/self/exe and the
 * ways to it). */
int vm_synth_is_exe(struct vm *, const char *path);
/* What /proc/self/fd/N names for descriptor f. */
void vm_fd_describe(const struct vfd *f, int fd, char *out, size_t outlen);

/* A write of (addr, len) on datagram socket f, when f is connected to
 * the guest resolver (sys_socket.c): answered as a send would be, the
 * bytes "sent" or -errno; -ENOENT when f is no such socket. */
int64_t vm_sock_dns_write(
    struct vm *, struct vfd *f, uint64_t addr, uint64_t len);
/* The same for writev (iov, n guest iovecs) on f, a TCP connection to
 * the guest resolver (f->dns_tcp; -ENOENT for any other). */
int64_t vm_sock_dns_writev(
    struct vm *, struct vfd *f, uint64_t iov, uint64_t n);

#endif

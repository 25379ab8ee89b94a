/*
 * Paths in a workspace directory (host/vmm/workspace.c). Paths are guest
 * paths: absolute once normalized, "/" being the workspace itself.
 * Functions return 0 or a descriptor, or a negative errno.
 */
#ifndef KEEP_VMM_WORKSPACE_H
#define KEEP_VMM_WORKSPACE_H

#include <stddef.h>
#include <stdint.h>

#define WS_PATH_MAX 1024 /* a normalized path, NUL included */

/* Join base (absolute) and p, resolve "." and ".." textually into out:
 * absolute, no trailing slash but for "/"; ".." above "/" stays at "/". */
int ws_normalize(const char *base, const char *p, char *out, size_t outlen);

/* openat2 of the normalized path beneath ws_fd (O_CLOEXEC added). */
int ws_openat(int ws_fd, const char *path, uint64_t flags, uint64_t mode);

/* The directory holding path (O_PATH), and path's last name in name. */
int ws_parentat(int ws_fd, const char *path, char *name, size_t namelen);

/* Bounds of ws_usage's walk: a workspace beyond them is not counted. */
#define WS_USAGE_MAX_ENTRIES 200000
#define WS_USAGE_MAX_DEPTH 64

/* The bytes a workspace holds: the allocated blocks of everything in it
 * (st_blocks, so sparse files count what they hold, not their size;
 * symlinks are not followed, other filesystems are not entered). 0, or
 * -E2BIG past max_entries or WS_USAGE_MAX_DEPTH, or -errno. */
int ws_usage(int ws_fd, unsigned max_entries, uint64_t *bytes);

/* Where the guest's /dev/shm lives in the workspace (fs.c). */
#define WS_SHM_DIR "/tmp/.shm"

#endif

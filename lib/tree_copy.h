/*
 * Copying a directory tree that someone else wrote: a sandbox's
 * workspace, for a fork of the sandbox (docs/api.yaml,
 * POST /v1/sandboxes/{id}/fork). Its contents are hostile: symlinks are
 * copied as links and never followed, only regular files, directories and
 * symlinks are copied (FIFOs, sockets and devices are left out), a hard
 * link becomes a file of its own, set-id bits are dropped, and holes stay
 * holes, so a sparse file costs in the copy what it costs in the source.
 * The copy is bounded in allocated bytes, names and depth.
 */
#ifndef KEEP_TREE_COPY_H
#define KEEP_TREE_COPY_H

#include <stdint.h>

struct tree_copy_limits {
	uint64_t max_bytes; /* allocated bytes (st_blocks), as the workspace
			       quota counts them; 0: no bound */
	unsigned max_entries; /* names copied */
	unsigned max_depth; /* directory levels below the top */
};

/*
 * Copy what the directory src holds into the directory dst (empty; the
 * names must not exist there). Modes (less set-id bits) and modification
 * times are kept. Returns 0, or -1 with errno set: EDQUOT past max_bytes,
 * E2BIG past max_entries or max_depth, or what a system call said. What
 * was copied before an error stays: the caller removes dst.
 */
int tree_copy(int src, int dst, const struct tree_copy_limits *lim);

#endif

/*
 * Removing a directory tree of any depth. The walk keeps its path on the
 * heap, never on the C stack, and holds at most two descriptors open, so
 * neither the depth of the tree nor RLIMIT_NOFILE bounds what it removes.
 */
#ifndef KEEP_TREE_H
#define KEEP_TREE_H

/*
 * rm -r of `name` below the directory `dir`: a file or symlink is
 * unlinked, a directory emptied and removed. Symlinks are never followed.
 * Returns 0 (also when `name` does not exist), or -1 with errno set:
 * ENOMEM, what unlinkat or openat said, or ESTALE if a directory was moved
 * while it was being emptied (the walk stops rather than climb into a
 * parent it did not come from).
 */
int tree_remove(int dir, const char *name);

#endif

/*
 * Small files a user's own keep run keeps between runs (the CPUID cache,
 * host/vmm/cpuid.h; the record of checked image files, image/verified.h):
 * read only when they can only be this user's own work, written whole or
 * not at all.
 */
#ifndef KEEP_OWN_FILE_H
#define KEEP_OWN_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * The bytes of path (malloc'd, *len set), or NULL: not there, a link,
 * not a regular file, not owned by the caller's effective user,
 * writable by its group or others, empty or larger than max. The caller
 * still decodes them as untrusted.
 */
uint8_t *own_file_read(const char *path, size_t max, size_t *len);

/* Replace path with len bytes of buf and mode, through a private
 * temporary file renamed over it, so a reader sees the old file or the
 * new, never a part. Best effort: a failure leaves the old file. */
void own_file_write(const char *path, const void *buf, size_t len, mode_t mode);

#endif

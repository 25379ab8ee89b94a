/* Whole reads and writes on a descriptor, retried after EINTR and short
 * transfers. */
#ifndef KEEP_FDIO_H
#define KEEP_FDIO_H

#include <stddef.h>

/* Write all len bytes. Returns 0, or -1 with errno set (EIO if the
 * descriptor took nothing). */
int write_all(int fd, const void *buf, size_t len);

/* Read until len bytes, end of file or an error; returns the bytes read
 * (fewer than len: end of file, or an error, with errno set). */
size_t read_all(int fd, void *buf, size_t len);

#endif

/*
 * Sealed memfds: how one keepd process hands another more bytes than a
 * message holds. The sender writes, then seals against shrinking, growing
 * and writing; the receiver checks the seals, that the descriptor is a
 * memfd, and its exact size before it reads or maps a byte, so a short or
 * changing file can neither fault a mapping (SIGBUS) nor change under a
 * reader.
 */
#ifndef KEEP_MEMFD_H
#define KEEP_MEMFD_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>

/* The seals every memfd between processes carries. */
#define MEMFD_SEALS_NEEDED (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE)

/*
 * A memfd that can be sealed later (MFD_CLOEXEC | MFD_ALLOW_SEALING);
 * name shows in /proc. Returns the descriptor, or -1 with errno.
 */
int memfd_new(const char *name);

/* Seal fd against shrinking, growing, writing and further seals.
 * Returns 0, or -1 with errno. */
int memfd_seal(int fd);

/*
 * A sealed memfd holding the len bytes at p. Returns the descriptor, or
 * -1 with errno (that of memfd_create, write or fcntl).
 */
int memfd_make_sealed(const char *name, const void *p, size_t len);

/*
 * Accept a memfd from another process: it must be a memfd (a regular
 * file that has seals), sealed with MEMFD_SEALS_NEEDED, and hold exactly
 * len bytes, len <= max. Returns 0, or -1 with errno: EBADF (fd), EINVAL
 * (not a memfd), EPERM (seals missing), EMSGSIZE (the size is not len, or
 * len is over max).
 */
int memfd_check(int fd, uint64_t len, uint64_t max);

/*
 * memfd_check, then its len bytes in a new buffer of len + 1 bytes (the
 * last a NUL, so text can be used as a string; malloc's alignment suits
 * the wire decoders). Returns NULL with errno on failure.
 */
void *memfd_read(int fd, uint64_t len, uint64_t max);

/*
 * The len bytes at off of a memfd already checked (memfd_check), in a
 * new buffer with a NUL after them. NULL with errno on failure (EIO when
 * the file ends first); what was read is wiped first (it may be a key).
 */
char *memfd_read_at(int fd, uint64_t off, uint64_t len);

/*
 * A zeroed shared region of len bytes that this process writes through
 * *rw and every process forked after this call reads, live, through
 * *ro. The writable view is not inherited (MADV_DONTFORK), and the
 * memfd's seals, F_SEAL_FUTURE_WRITE among them, keep a child from
 * making its view writable (mprotect: EACCES) or mapping the file
 * writable again; the descriptor is closed before this returns. A child
 * must not unmap *rw: something of its own may lie there. Returns 0, or
 * -1 with errno.
 */
int memfd_owned_view(const char *name, size_t len, void **rw, const void **ro);

/* len bytes at off of fd into buf (pread until done). 0, or -1 with
 * errno (EIO when the file ends first). */
int memfd_pread_all(int fd, void *buf, size_t len, uint64_t off);

#endif

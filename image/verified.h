/*
 * keep run's record of the files of an image it has checked against
 * their hashes (image/verified.c; docs/image-format.md, "The verified
 * files of keep run").
 *
 * An image with deferred hashes is checked file by file as a run uses
 * it. keepd's vmm checks each file once in its life, for as long as the
 * image file keeps its identity (inode, size, mtime, ctime); `keep run`
 * is a new process every time, and hashed the python interpreter (6.8
 * MB) and every library and module it opened at every run, 10 ms of a
 * cold print(1) and 50 of an import numpy. This record carries the same
 * knowledge from one `keep run` to the next: which files of this image
 * file, as it stands now, matched their hashes.
 *
 * The key binds a record to one boot, to the image file's identity as
 * the kernel keeps it (device, inode, size, mtime and ctime in
 * nanoseconds: a write in place changes the ctime, a replacement the
 * inode), to the signature of the manifest whose hashes the files were
 * checked against, and to its file count. A record is untrusted bytes:
 * image_verified_decode() accepts exactly one well-formed record for
 * the key; the loader accepts only a regular file owned by the caller's
 * user and writable by nobody else (the rules of the CPUID cache,
 * host/vmm/cpuid.h). Anything else is a miss, and a miss checks the
 * files again.
 */
#ifndef KEEP_IMAGE_VERIFIED_H
#define KEEP_IMAGE_VERIFIED_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"

#define IMAGE_VERIFIED_MAGIC "KEEPVFY2"
#define IMAGE_VERIFIED_BOOT_ID 36

struct image_verified_key {
	uint8_t boot_id[IMAGE_VERIFIED_BOOT_ID + 4]; /* 4 zero bytes after */
	uint64_t dev, ino, size;
	int64_t mtime_sec, mtime_nsec, ctime_sec, ctime_nsec;
	uint8_t sig[64]; /* the image's signature */
	uint32_t nfiles, zero;
};

/* The record: the magic, the key, then a bit per file (bit i % 8 of
 * byte i / 8: file i matched its hash and padding) and one more, bit
 * nfiles: the image's signature verified under the public key whose
 * k4.pid the image names (image_verify tries no other), the bits past
 * it zero. The callers' checked arrays have nfiles + 1 entries. */
struct image_verified_hdr {
	char magic[8];
	struct image_verified_key key;
};

/*
 * The key of an image opened with image_open_trusted_fd and signed, as
 * its file stands now: 0, or -1 when there can be no record (no boot id,
 * no descriptor, no signature, or a file system whose change times keep
 * does not take as the file's identity: only ext4, xfs, btrfs, f2fs and
 * tmpfs count).
 */
int image_verified_key(const struct image *img, struct image_verified_key *key);

/* checked (nfiles + 1 bytes, 0 or 1) from a record in buf made under
 * key: 0, or -1 (checked untouched) when buf is not exactly one such
 * record. */
int image_verified_decode(const uint8_t *buf, size_t len,
    const struct image_verified_key *key, uint8_t *checked);

/* The record of checked (key->nfiles + 1 bytes; nonzero: checked) under
 * key (malloc'd, *len set), or NULL. */
uint8_t *image_verified_encode(
    const struct image_verified_key *key, const uint8_t *checked, size_t *len);

/* Read the record at path into checked: 0, or -1 on any miss. */
int image_verified_load(
    const char *path, const struct image_verified_key *key, uint8_t *checked);
/* Replace the record at path atomically (best effort: a failure only
 * means the next run checks the files again). */
void image_verified_store(const char *path,
    const struct image_verified_key *key, const uint8_t *checked);

#endif

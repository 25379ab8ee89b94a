/*
 * Guest images: one file holding a manifest, the static executables and
 * read-only files a guest needs, and an Ed25519 signature over all of it.
 * See docs/image-format.md for the layout. Every byte is untrusted until
 * image_validate() has accepted the whole file; image_verify() then checks
 * the signature against trusted keys. keepd and `keep run --trust` only
 * boot what both accept.
 *
 * Functions return 0 or an IMAGE_E_* code; those that take err/errlen
 * also write a one-line reason (NUL-terminated) for people.
 */
#ifndef KEEP_IMAGE_IMAGE_H
#define KEEP_IMAGE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "lib/caps.h"

enum image_err {
	IMAGE_OK = 0,
	IMAGE_E_IO = -31000, /* open, read, mmap, write */
	IMAGE_E_FORMAT, /* not an image, or a field out of range */
	IMAGE_E_VERSION, /* a format version we do not read */
	IMAGE_E_HASH, /* a file's BLAKE2b hash does not match */
	IMAGE_E_UNSIGNED, /* no signature */
	IMAGE_E_UNTRUSTED, /* signed by a key not trusted here */
	IMAGE_E_SIGNATURE, /* signature does not verify */
	IMAGE_E_NOCOMMAND, /* no such command in the manifest */
	IMAGE_E_INVAL, /* a caller's argument out of range */
	IMAGE_E_NOMEM,
};

#define IMAGE_NAME_MAX 64
#define IMAGE_VERSION_MAX 32
#define IMAGE_CMD_MAX 32
#define IMAGE_PATH_MAX 128
#define IMAGE_MAX_COMMANDS 256
#define IMAGE_MAX_FILES 65536
#define IMAGE_KID_MAX 52

struct image_file {
	const char *path; /* absolute guest path, e.g. "/bin/js" */
	const uint8_t *data;
	uint64_t len;
	uint32_t mode; /* permission bits: 0755 or 0644 */
	/* NULL: the contents were checked when the image was opened. Else
	 * (an image with deferred hashes) the BLAKE2b-256 the contents
	 * must have: check it (image_file_verify, or the VMM's own check
	 * through vmm_file.hash) before the first byte is used. */
	const uint8_t *hash;
	/* With hash: how many bytes follow the file in the image before the
	 * next one, which must be zero; checked with the hash, so that
	 * opening an image reads none of its payload (20 MB of padding in
	 * the python image). 0 when checked at open. */
	uint64_t pad;
};

struct image_command {
	const char *name; /* what callers ask for: "sha256sum" */
	const char *argv0; /* what the program sees as argv[0] */
	const struct image_file *program;
};

struct image;

/* Map and validate a file (or a buffer the caller keeps alive). The
 * signature is not checked; use image_verify() or image_open_trusted(). */
int image_open(const char *path, struct image **out, char *err, size_t errlen);
int image_open_mem(const uint8_t *buf, size_t len, struct image **out,
    char *err, size_t errlen);
void image_close(struct image *img);

/* Check the signature against trusted Ed25519 public keys. On success
 * the signer's k4.pid is copied to kid (IMAGE_KID_MAX bytes) if not NULL. */
int image_verify(const struct image *img, const uint8_t (*keys)[32],
    size_t nkeys, char *kid, char *err, size_t errlen);

/* image_open + image_verify. */
int image_open_trusted(const char *path, const uint8_t (*keys)[32],
    size_t nkeys, struct image **out, char *err, size_t errlen);
/* The same, keeping the file open (read-only) until image_close, for a
 * VMM that maps the image's pages into guest memory (docs/vmm.md "Image
 * pages"). image_fd gives that descriptor and where the file is mapped
 * whole; -1 for an image opened any other way. */
int image_open_fd(
    const char *path, struct image **out, char *err, size_t errlen);
int image_open_trusted_fd(const char *path, const uint8_t (*keys)[32],
    size_t nkeys, struct image **out, char *err, size_t errlen);
int image_fd(const struct image *img, const uint8_t **base, size_t *len);

const char *image_name(const struct image *img);
const char *image_version(const struct image *img);
uint64_t image_memory(const struct image *img);
cap_set_t image_caps(const struct image *img);
int image_is_signed(const struct image *img);
const char *image_signer(const struct image *img); /* unverified kid */
size_t image_ncommands(const struct image *img);
const struct image_command *image_command_at(const struct image *img, size_t i);
const struct image_command *image_command(
    const struct image *img, const char *name);
size_t image_nfiles(const struct image *img);
const struct image_file *image_file_at(const struct image *img, size_t i);
/* The file at path, or NULL: a binary search when the files are sorted
 * (image_files_sorted), else a walk. */
const struct image_file *image_file_find(
    const struct image *img, const char *path);

/* The body (every byte before the signature trailer). */
const uint8_t *image_bytes(const struct image *img, size_t *len);

/* The bytes the signature covers: the body, or for an image with
 * deferred hashes its manifest (header and tables) alone. */
const uint8_t *image_signed_bytes(const struct image *img, size_t *len);

/* Whether file contents are checked on use rather than at open
 * (docs/image-format.md, "Deferred hashes"). */
int image_is_deferred(const struct image *img);

/* 1 when the files are strictly sorted by path (strcmp's order), as
 * keep's builder writes them: image_file_at(img, i) is then the i-th
 * path in order, and a caller may search them without sorting them. */
int image_files_sorted(const struct image *img);

/* 0 when f's contents match its hash and the padding after it is zero
 * (or both were checked at open), else IMAGE_E_HASH. */
int image_file_verify(const struct image_file *f);

/* Every file's contents against its hash (a no-op for an image checked
 * at open): for an image taken in (upload, keep image verify), so a
 * tampered payload is refused before it is kept, not first at a run. */
int image_verify_files(const struct image *img, char *err, size_t errlen);

/*
 * Building. Files are copied; commands name a file by its guest path.
 * image_builder_write() writes an unsigned image to fd.
 */
struct image_builder;

int image_builder_new(const char *name, const char *version, uint64_t memory,
    cap_set_t caps, struct image_builder **out);
int image_builder_add_file(struct image_builder *b, const char *path,
    const uint8_t *data, uint64_t len, uint32_t mode);
int image_builder_add_command(struct image_builder *b, const char *name,
    const char *argv0, const char *program_path);
/* Write an image whose file hashes are checked on use (large images:
 * a run reads and checks only the files it opens). */
void image_builder_defer_hashes(struct image_builder *b);
int image_builder_write(
    struct image_builder *b, int fd, char *err, size_t errlen);
void image_builder_free(struct image_builder *b);

/* Sign: the trailer to append to the unsigned body (replacing any old
 * one). sk is a libsodium Ed25519 secret key. */
#define IMAGE_TRAILER_LEN 128
int image_sign(const uint8_t *body, size_t len, const uint8_t sk[64],
    uint8_t trailer[IMAGE_TRAILER_LEN]);

const char *image_strerror(int err);

#endif

/* Private to image/: the opened image. */
#ifndef KEEP_IMAGE_INT_H
#define KEEP_IMAGE_INT_H

#include <stddef.h>
#include <stdint.h>

#include "image/image.h"
#include "lib/util.h"

struct image {
	const uint8_t *base;
	size_t len, body_len;
	int mapped, signed_;
	int fd; /* image_open_trusted_fd: the file mapped at base; else -1 */
	int deferred; /* IMG_FLAG_DEFERRED: file hashes checked on use */
	size_t manifest_len; /* header and tables: what a deferred
				image's signature covers */
	char kid[IMAGE_KID_MAX];
	const char *name, *version;
	uint64_t memory;
	cap_set_t caps;
	int sorted; /* files strictly sorted by path (as keep builds them) */
	struct image_file *files;
	struct image_command *commands;
	size_t nfiles, ncommands;
};

int image_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    KEEP_PRINTF(4, 5);
/* 0 when a fixed-size string field is well formed (docs/image-format.md);
 * path: a guest path's rules, else a name's. image_check_str_bytes gives
 * the same answers a byte at a time: the reference the tests and
 * fuzz/image_str.c compare image_check_str with. */
int image_check_str(const uint8_t *field, size_t size, int path);
int image_check_str_bytes(const uint8_t *field, size_t size, int path);

#endif

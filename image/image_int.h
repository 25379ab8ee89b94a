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
	struct image_file *files;
	struct image_command *commands;
	size_t nfiles, ncommands;
};

int image_fail(char *err, size_t errlen, int code, const char *fmt, ...)
    KEEP_PRINTF(4, 5);
int image_check_str(const uint8_t *field, size_t size, int path);

#endif

/*
 * Fuzz the string fields of an image (image_check_str): the path check,
 * a whole field at a time, must give the answer of the byte-at-a-time
 * reference for every field, and so must the names' check. The input is
 * the field, cut or zero-padded to each field size; a guard page after
 * the field makes a read past its end fault.
 */
#include <sys/mman.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/image.h"
#include "image/image_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = { IMAGE_PATH_MAX, IMAGE_NAME_MAX,
		IMAGE_VERSION_MAX, IMAGE_CMD_MAX, IMAGE_KID_MAX };
	static uint8_t *page;
	size_t i, n;
	int path;

	if (page == NULL) {
		page = mmap(NULL, 8192, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (page == MAP_FAILED || mprotect(page + 4096, 4096, 0) != 0)
			abort();
	}
	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		/* The field ends where the guard page begins. */
		uint8_t *field = page + 4096 - sizes[i];

		n = size < sizes[i] ? size : sizes[i];
		memset(field, 0, sizes[i]);
		memcpy(field, data, n);
		for (path = 0; path < 2; path++)
			if (image_check_str(field, sizes[i], path) !=
			    image_check_str_bytes(field, sizes[i], path))
				abort();
	}
	return 0;
}

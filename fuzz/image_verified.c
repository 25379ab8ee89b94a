/*
 * Fuzz the decoder of keep run's record of checked files
 * (image/verified.h). The input is a key (sizeof(struct
 * image_verified_key) bytes, its file count capped) and a record.
 * Whatever the decoder accepts must encode back to exactly the same
 * bytes: nothing in a record it accepts is ignored.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/verified.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_verified_key key;
	uint8_t *checked, *again;
	size_t len;

	if (size < sizeof(key))
		return 0;
	memcpy(&key, data, sizeof(key));
	key.nfiles %= 1u << 17; /* an image holds at most 65,536 files */
	if ((checked = malloc(key.nfiles + 1)) == NULL) /* the files, the
							     signature */
		return 0;
	if (image_verified_decode(
	        data + sizeof(key), size - sizeof(key), &key, checked) == 0) {
		for (len = 0; len <= key.nfiles; len++)
			if (checked[len] > 1)
				abort();
		again = image_verified_encode(&key, checked, &len);
		if (again == NULL || len != size - sizeof(key) ||
		    memcmp(again, data + sizeof(key), len) != 0)
			abort();
		free(again);
	}
	free(checked);
	return 0;
}

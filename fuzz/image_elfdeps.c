/*
 * Fuzz the image builder's DT_NEEDED reader. Whatever it accepts must
 * hold NUL-terminated, printable names within their fields.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/elfdeps.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elfdeps d;
	char err[128];
	size_t i;

	if (elfdeps_parse(data, size, &d, err, sizeof(err)) != 0)
		return 0;
	if (d.nneeded > ELFDEPS_MAX_NEEDED ||
	    memchr(d.interp, '\0', sizeof(d.interp)) == NULL ||
	    memchr(d.runpath, '\0', sizeof(d.runpath)) == NULL)
		abort();
	for (i = 0; i < d.nneeded; i++)
		if (d.needed[i][0] == '\0' ||
		    memchr(d.needed[i], '\0', sizeof(d.needed[i])) == NULL)
			abort();
	return 0;
}

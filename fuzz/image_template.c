/*
 * Fuzz the parser of an image's template declaration (image/template.h).
 * Whatever it accepts must hold terminated names and arguments within
 * their counts.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct image_template t;
	char err[128];
	unsigned i;

	if (image_template_parse(data, size, &t, err, sizeof(err)) != 0) {
		if (memchr(err, '\0', sizeof(err)) == NULL)
			abort();
		return 0;
	}
	if (t.ncommands == 0 || t.ncommands > IMAGE_TEMPLATE_COMMANDS ||
	    t.nargs > IMAGE_TEMPLATE_ARGS)
		abort();
	for (i = 0; i < t.ncommands; i++)
		if (t.commands[i][0] == '\0' ||
		    memchr(t.commands[i], '\0', sizeof(t.commands[i])) ==
		        NULL ||
		    !image_template_serves(&t, t.commands[i]))
			abort();
	for (i = 0; i < t.nargs; i++)
		if (memchr(t.args[i], '\0', sizeof(t.args[i])) == NULL)
			abort();
	return 0;
}

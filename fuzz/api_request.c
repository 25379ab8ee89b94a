/*
 * Fuzz the whole request path: raw bytes, possibly several pipelined
 * requests, through the parser, the router, authentication, the handlers
 * and the fake backend. Every request must get a well-formed status line.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz/api_fuzz_env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;
	size_t off = 0;

	if (size > 131072 || (buf = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(buf, data, size);
	for (int n = 0; n < 8 && off < size; n++) {
		size_t used = 0;
		if (fuzz_api_one(buf + off, size - off, &used) != 0 ||
		    used == 0)
			break;
		off += used;
	}
	free(buf);
	return 0;
}

/* Fuzz the size and duration parsers: never crash, and what parses
 * formats back to text that parses to the same value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t v, w;
	char buf[64];

	if (units_parse_size((const char *)data, size, &v) == 0) {
		units_format_size(buf, sizeof(buf), v);
		if (units_parse_size(buf, strlen(buf), &w) != 0 || w != v)
			abort();
	}
	if (units_parse_duration((const char *)data, size, &v) == 0) {
		units_format_duration(buf, sizeof(buf), v);
		if (units_parse_duration(buf, strlen(buf), &w) != 0 || w != v)
			abort();
	}
	return 0;
}

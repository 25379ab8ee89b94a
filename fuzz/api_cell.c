/*
 * Fuzz the decoding of a live context's cell output (host/api/api_context.c):
 * the driver's JSON lines are written by code in the guest, so any bytes
 * at all. The first byte splits the input into the lines and the raw
 * output. Every input must decode to a well-formed object (or NULL only
 * when out of memory) whose parts have the types the reply promises.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t cut;
	json_t *d;

	if (size < 1 || size > 1 << 20)
		return 0;
	cut = data[0] * (size - 1) / 255;
	d = api_cell_decode((const char *)data + 1, cut,
	    (const char *)data + 1 + cut, size - 1 - cut);
	if (d == NULL)
		return 0;
	if (!json_is_array(json_object_get(d, "lines")) ||
	    !json_is_string(json_object_get(d, "stdout")) ||
	    !json_is_string(json_object_get(d, "stderr")) ||
	    !json_is_array(json_object_get(d, "results")) ||
	    !(json_is_object(json_object_get(d, "error")) ||
	        json_is_null(json_object_get(d, "error"))))
		abort();
	json_decref(d);
	return 0;
}

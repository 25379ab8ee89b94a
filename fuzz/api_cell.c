/*
 * Fuzz the decoding of what a guest's interpreter says about its code
 * (host/api/api_context.c, host/front/front_run.c), any bytes at all:
 * a live context's cell output (the first byte splits the input into
 * the driver's lines and the raw output), which must decode to a
 * well-formed object (or NULL only when out of memory) whose parts have
 * the types the reply promises; and a plain execute's stderr with its
 * results line (keep_once.py), cut out and decoded to an array.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/api/api_int.h"
#include "host/front/front_backend_int.h"

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

	/* The same bytes as a python execute's stderr, nonce "n". */
	{
		struct api_run_result res;
		json_t *rs;

		memset(&res, 0, sizeof(res));
		if ((res.err = malloc(size + 1)) == NULL)
			return 0;
		memcpy(res.err, data, size);
		res.err[size] = '\0';
		res.err_len = size;
		fb_take_results(&res, "n");
		if (res.err_len > size)
			abort();
		rs = api_results_decode(res.results, res.results_len);
		if (rs != NULL && !json_is_array(rs))
			abort();
		json_decref(rs);
		free(res.err);
		free(res.results);
	}
	return 0;
}

/*
 * Fuzz the decoding of what a guest's interpreter says about its code
 * (host/api/api_context.c, host/front/front_run.c), any bytes at all:
 * a live context's cell output (the first byte splits the input into
 * the driver's lines and the raw output), which must decode to a
 * well-formed object (or NULL only when out of memory) whose parts have
 * the types the reply promises; the same lines streamed as they come
 * (api_cell_stream_*), cut in three where the input says, which must
 * read as the whole reply's lines, byte for byte, with no
 * number_of_executions before the end; and a plain execute's stderr
 * with its results line (keep_once.py), cut out and decoded to an
 * array.
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

	/* Streamed: two pieces and the reply's rest, against the whole. */
	{
		const char *out = (const char *)data + 1;
		size_t i = cut == 0 ? 0 : (size_t)data[0] * 131 % (cut + 1);
		size_t j = i + (cut - i) / 2;
		struct api_cell_stream cs;
		struct http_buf want, got;
		json_t *line;
		size_t k;

		http_buf_init(&want);
		http_buf_init(&got);
		if ((d = api_cell_decode(
		         out, cut, out + cut, size - 1 - cut)) == NULL)
			return 0;
		json_array_foreach(json_object_get(d, "lines"), k, line)
		{
			char *t = json_dumps(line, JSON_COMPACT);

			if (t == NULL)
				want.oom = 1;
			else {
				http_buf_puts(&want, t);
				http_buf_puts(&want, "\n");
			}
			free(t);
		}
		json_decref(d);
		api_cell_stream_init(&cs);
		api_cell_stream_feed(&cs, out, i, &got);
		api_cell_stream_feed(&cs, out + i, j - i, &got);
		/* Each line is one object, its type first when it is one. */
		for (k = 0; !got.oom && k < got.len;) {
			const char *nl =
			    memchr(got.data + k, '\n', got.len - k);
			size_t n = nl != NULL ? (size_t)(nl - got.data) - k
			                      : got.len - k;

			if (n >= 30 &&
			    memcmp(got.data + k,
			        "{\"type\":\"number_of_executions\"", 30) == 0)
				abort();
			k += n + 1;
		}
		if (api_cell_stream_end(&cs, out + j, cut - j, out + cut,
		        size - 1 - cut, &got) == 0 &&
		    !want.oom &&
		    (got.len != want.len ||
		        (want.len > 0 &&
		            memcmp(got.data, want.data, want.len) != 0)))
			abort();
		api_cell_stream_free(&cs);
		http_buf_free(&want);
		http_buf_free(&got);
	}

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

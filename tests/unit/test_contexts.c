/* Unit tests for what the front and the API make of an interpreter's
 * words about its code (docs/contexts.md): a context cell's JSON lines
 * (api_cell_decode), a python execute's results line cut out of stderr
 * (fb_take_results) and decoded (api_results_decode). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "host/api/api_int.h"
#include "host/front/front_backend_int.h"

static const char *
str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void
test_cell_lines(void **state)
{
	static const char out[] =
	    "{\"type\":\"stdout\",\"text\":\"hi\\n\"}\n"
	    "{\"type\":\"stderr\",\"text\":\"oops\\n\"}\n"
	    "{\"type\":\"result\",\"text\":\"42\",\"html\":\"<b>\","
	    "\"evil\":\"x\",\"is_main_result\":true}\n"
	    "{\"type\":\"error\",\"name\":\"E\",\"value\":\"v\","
	    "\"traceback\":\"t\"}\n"
	    "{\"type\":\"error\",\"name\":\"Second\",\"value\":\"\","
	    "\"traceback\":\"\"}\n"
	    "{\"type\":\"number_of_executions\",\"execution_count\":7}\n";
	json_t *d, *r, *lines;

	(void)state;
	d = api_cell_decode(out, sizeof(out) - 1, "raw", 3);
	assert_non_null(d);
	assert_string_equal(str(d, "stdout"), "hi\n");
	assert_string_equal(str(d, "stderr"), "oops\nraw");
	r = json_array_get(json_object_get(d, "results"), 0);
	assert_string_equal(str(r, "text"), "42");
	assert_string_equal(str(r, "html"), "<b>");
	assert_null(json_object_get(r, "evil"));
	assert_null(json_object_get(r, "type"));
	assert_true(json_is_true(json_object_get(r, "is_main_result")));
	/* The first error is the cell's. */
	assert_string_equal(str(json_object_get(d, "error"), "name"), "E");
	assert_int_equal(
	    json_integer_value(json_object_get(d, "execution_count")), 7);
	/* ndjson: the lines in order, the raw output, the count last. */
	lines = json_object_get(d, "lines");
	assert_int_equal(json_array_size(lines), 7);
	assert_string_equal(str(json_array_get(lines, 5), "text"), "raw");
	assert_string_equal(
	    str(json_array_get(lines, 6), "type"), "number_of_executions");
	json_decref(d);
}

static void
test_cell_garbage(void **state)
{
	static const char out[] = "not json\n[1,2]\n{\"type\":\"end\"}\n"
	                          "{\"type\":\"stdout\",\"text\":5}\n"
	                          "{\"type\":\"number_of_executions\","
	                          "\"execution_count\":\"x\"}\n\n\n{";
	json_t *d;

	(void)state;
	d = api_cell_decode(out, sizeof(out) - 1, NULL, 0);
	assert_non_null(d);
	/* Only the stdout line survives, its text made a string. */
	assert_int_equal(json_array_size(json_object_get(d, "lines")), 1);
	assert_string_equal(str(d, "stdout"), "");
	assert_true(json_is_null(json_object_get(d, "error")));
	assert_true(json_is_null(json_object_get(d, "execution_count")));
	json_decref(d);
}

/* The ndjson a whole reply holds: api_cell_decode's lines. */
static void
whole_lines(const char *out, size_t len, const char *err, size_t elen,
    struct http_buf *b)
{
	json_t *d = api_cell_decode(out, len, err, elen), *line;
	size_t i;

	assert_non_null(d);
	json_array_foreach(json_object_get(d, "lines"), i, line)
	{
		char *t = json_dumps(line, JSON_COMPACT);

		assert_non_null(t);
		http_buf_puts(b, t);
		http_buf_puts(b, "\n");
		free(t);
	}
	json_decref(d);
}

/*
 * A cell's lines streamed, cut anywhere (a line longer than a message
 * comes in pieces) and ended by what the reply carries after them, read
 * as the whole reply would: the same lines in the same order, and no
 * number_of_executions before the end.
 */
static void
test_cell_stream(void **state)
{
	static const char out[] =
	    "{\"type\":\"stdout\",\"text\":\"hi\\n\"}\n"
	    "{\"type\":\"number_of_executions\",\"execution_count\":6}\n"
	    "not json\n"
	    "{\"type\":\"result\",\"text\":\"42\",\"evil\":1,"
	    "\"is_main_result\":true}\n"
	    "{\"type\":\"end\"}\n"
	    "{\"type\":\"error\",\"name\":\"E\",\"value\":\"v\","
	    "\"traceback\":\"t\"}\n"
	    "{\"type\":\"number_of_executions\",\"execution_count\":7}\n"
	    "{\"type\":\"stderr\",\"text\":\"late\"}";
	const size_t len = sizeof(out) - 1;
	struct http_buf want, got;
	struct api_cell_stream cs;
	size_t i, j;

	(void)state;
	http_buf_init(&want);
	whole_lines(out, len, "raw", 3, &want);
	assert_false(want.oom);
	for (i = 0; i <= len; i++)
		for (j = i; j <= len; j += 7) {
			http_buf_init(&got);
			api_cell_stream_init(&cs);
			api_cell_stream_feed(&cs, out, i, &got);
			api_cell_stream_feed(&cs, out + i, j - i, &got);
			assert_null(memmem(got.data ? got.data : "", got.len,
			    "number_of_executions", 20));
			assert_int_equal(api_cell_stream_end(&cs, out + j,
			                     len - j, "raw", 3, &got),
			    0);
			assert_int_equal(got.len, want.len);
			assert_memory_equal(got.data, want.data, want.len);
			api_cell_stream_free(&cs);
			http_buf_free(&got);
		}
	/* All streamed, the count too: it still comes last, once. */
	http_buf_init(&got);
	api_cell_stream_init(&cs);
	api_cell_stream_feed(&cs, out, len, &got);
	assert_int_equal(api_cell_stream_end(&cs, "", 0, "raw", 3, &got), 0);
	assert_int_equal(got.len, want.len);
	assert_memory_equal(got.data, want.data, want.len);
	api_cell_stream_free(&cs);
	http_buf_free(&got);
	http_buf_free(&want);
}

static void
run_err(struct api_run_result *res, const char *err)
{
	memset(res, 0, sizeof(*res));
	res->err = strdup(err);
	res->err_len = strlen(err);
	assert_non_null(res->err);
}

static void
test_take_results(void **state)
{
	struct api_run_result res;
	json_t *rs;

	(void)state;
	/* The last line under the run's nonce is taken; one under another
	 * nonce, and the text around, stay the program's. */
	run_err(&res,
	    "a\n\x1ekeep-results:other:[]\nb"
	    "\x1ekeep-results:abc:[{\"text\":\"1\"}]\n"
	    "\x1ekeep-results:abc:[{\"text\":\"2\"},3]\nc");
	fb_take_results(&res, "abc");
	assert_string_equal(res.err,
	    "a\n\x1ekeep-results:other:[]\nb"
	    "\x1ekeep-results:abc:[{\"text\":\"1\"}]\nc");
	assert_int_equal(res.err_len, strlen(res.err));
	assert_non_null(res.results);
	rs = api_results_decode(res.results, res.results_len);
	assert_int_equal(json_array_size(rs), 1);
	assert_string_equal(str(json_array_get(rs, 0), "text"), "2");
	assert_true(json_is_false(
	    json_object_get(json_array_get(rs, 0), "is_main_result")));
	json_decref(rs);
	free(res.err);
	free(res.results);

	/* None: an empty array; stderr untouched. */
	run_err(&res, "plain\n");
	fb_take_results(&res, "abc");
	assert_string_equal(res.err, "plain\n");
	assert_string_equal(res.results, "[]");
	free(res.err);
	free(res.results);

	/* At the very end, without a newline. */
	run_err(&res, "x\x1ekeep-results:abc:not json");
	fb_take_results(&res, "abc");
	assert_string_equal(res.err, "x");
	rs = api_results_decode(res.results, res.results_len);
	assert_int_equal(json_array_size(rs), 0);
	json_decref(rs);
	free(res.err);
	free(res.results);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cell_lines),
		cmocka_unit_test(test_cell_garbage),
		cmocka_unit_test(test_cell_stream),
		cmocka_unit_test(test_take_results),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

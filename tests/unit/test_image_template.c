/* The template declaration parser (image/template.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "image/template.h"

static int
parse(const char *text, struct image_template *t, char *err, size_t errlen)
{
	return image_template_parse(
	    (const uint8_t *)text, strlen(text), t, err, errlen);
}

static void
test_python(void **state)
{
	struct image_template t;
	char err[128];

	(void)state;
	assert_int_equal(parse("# a comment\n\ncommand python\ncommand "
	                       "python3\narg /usr/lib/keep/python-ready.py\n"
	                       "arg numpy\n",
	                     &t, err, sizeof(err)),
	    0);
	assert_int_equal(t.ncommands, 2);
	assert_string_equal(t.commands[0], "python");
	assert_string_equal(t.commands[1], "python3");
	assert_int_equal(t.nargs, 2);
	assert_string_equal(t.args[0], "/usr/lib/keep/python-ready.py");
	assert_string_equal(t.args[1], "numpy");
	assert_true(image_template_serves(&t, "python3"));
	assert_false(image_template_serves(&t, "python3.11"));
}

static void
test_args_keep_spaces_and_no_final_newline(void **state)
{
	struct image_template t;
	char err[128];

	(void)state;
	assert_int_equal(
	    parse("command js\narg two words", &t, err, sizeof(err)), 0);
	assert_int_equal(t.nargs, 1);
	assert_string_equal(t.args[0], "two words");
}

static void
test_refused(void **state)
{
	static const char *const bad[] = {
		"", /* no command */
		"# only a comment\n",
		"arg x\n", /* no command */
		"command\n", /* no name */
		"command \n",
		"command .dot\n",
		"command a/b\n",
		"command a b\n",
		"command ok\ncommand\tx\n",
		"commandx ok\n",
		"command ok\narg \x01\n",
		"command ok\narg caf\xc3\xa9\n", /* not ASCII */
		"command ok\r\n", /* CR is not part of a name */
		"command ok\nenv A=B\n",
	};
	struct image_template t;
	char err[128];
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		assert_int_equal(parse(bad[i], &t, err, sizeof(err)), -1);
		assert_true(err[0] != '\0');
		assert_int_equal(t.ncommands, 0);
	}
}

static void
test_limits(void **state)
{
	char text[IMAGE_TEMPLATE_FILE_MAX + 2];
	struct image_template t;
	char err[128];
	size_t n = 0;
	int i;

	(void)state;
	/* Nine commands, one too many. */
	for (i = 0; i < 9; i++)
		n += (size_t)snprintf(
		    text + n, sizeof(text) - n, "command c%d\n", i);
	assert_int_equal(parse(text, &t, err, sizeof(err)), -1);
	/* 33 arguments, one too many. */
	n = (size_t)snprintf(text, sizeof(text), "command c\n");
	for (i = 0; i < 33; i++)
		n +=
		    (size_t)snprintf(text + n, sizeof(text) - n, "arg %d\n", i);
	assert_int_equal(parse(text, &t, err, sizeof(err)), -1);
	/* An argument of 255 bytes fits, 256 does not. */
	n = (size_t)snprintf(text, sizeof(text), "command c\narg ");
	memset(text + n, 'a', 255);
	text[n + 255] = '\0';
	assert_int_equal(parse(text, &t, err, sizeof(err)), 0);
	text[n + 255] = 'a';
	text[n + 256] = '\0';
	assert_int_equal(parse(text, &t, err, sizeof(err)), -1);
	/* A NUL inside, and a file larger than the limit. */
	assert_int_equal(image_template_parse((const uint8_t *)"command a\0b",
	                     11, &t, err, sizeof(err)),
	    -1);
	memset(text, '#', sizeof(text));
	assert_int_equal(image_template_parse((const uint8_t *)text,
	                     IMAGE_TEMPLATE_FILE_MAX + 1, &t, err, sizeof(err)),
	    -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_python),
		cmocka_unit_test(test_args_keep_spaces_and_no_final_newline),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

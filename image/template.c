/*
 * The template declaration of an image (image/template.h): a few lines
 * of text, parsed as hostile input.
 */
#include <stdio.h>
#include <string.h>

#include "image/template.h"

static int
name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len >= IMAGE_TEMPLATE_NAME_MAX || s[0] == '.' ||
	    s[0] == '-')
		return 0;
	for (i = 0; i < len; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') ||
		        (s[i] >= 'A' && s[i] <= 'Z') ||
		        (s[i] >= '0' && s[i] <= '9') || s[i] == '.' ||
		        s[i] == '_' || s[i] == '-' || s[i] == '+'))
			return 0;
	return 1;
}

static int
arg_ok(const char *s, size_t len)
{
	size_t i;

	if (len >= IMAGE_TEMPLATE_ARG_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return 0;
	return 1;
}

/* One line (without its newline): 0, or -1 with err set. */
static int
parse_line(const char *s, size_t len, unsigned lineno,
    struct image_template *out, char *err, size_t errlen)
{
	size_t wlen;

	if (len == 0 || s[0] == '#')
		return 0;
	/* The line is not NUL-terminated: scan within it. */
	for (wlen = 0; wlen < len && s[wlen] != ' '; wlen++)
		;
	if (wlen == 7 && memcmp(s, "command", 7) == 0 && wlen < len) {
		s += 8;
		len -= 8;
		if (!name_ok(s, len)) {
			snprintf(
			    err, errlen, "line %u: bad command name", lineno);
			return -1;
		}
		if (out->ncommands == IMAGE_TEMPLATE_COMMANDS) {
			snprintf(err, errlen, "line %u: more than %d commands",
			    lineno, IMAGE_TEMPLATE_COMMANDS);
			return -1;
		}
		memcpy(out->commands[out->ncommands], s, len);
		out->commands[out->ncommands++][len] = '\0';
		return 0;
	}
	if (wlen == 3 && memcmp(s, "arg", 3) == 0 && wlen < len) {
		s += 4;
		len -= 4;
		if (!arg_ok(s, len)) {
			snprintf(err, errlen,
			    "line %u: an argument holds printable ASCII, "
			    "at most %d bytes",
			    lineno, IMAGE_TEMPLATE_ARG_MAX - 1);
			return -1;
		}
		if (out->nargs == IMAGE_TEMPLATE_ARGS) {
			snprintf(err, errlen, "line %u: more than %d arguments",
			    lineno, IMAGE_TEMPLATE_ARGS);
			return -1;
		}
		memcpy(out->args[out->nargs], s, len);
		out->args[out->nargs++][len] = '\0';
		return 0;
	}
	snprintf(err, errlen, "line %u: want 'command NAME' or 'arg ARGUMENT'",
	    lineno);
	return -1;
}

int
image_template_parse(const uint8_t *data, size_t len,
    struct image_template *out, char *err, size_t errlen)
{
	const char *p = (const char *)data, *end, *nl;
	unsigned lineno = 0;

	memset(out, 0, sizeof(*out));
	if (len > IMAGE_TEMPLATE_FILE_MAX) {
		snprintf(err, errlen, "larger than %d bytes",
		    IMAGE_TEMPLATE_FILE_MAX);
		return -1;
	}
	if (len > 0 && memchr(data, '\0', len) != NULL) {
		snprintf(err, errlen, "holds a NUL byte");
		return -1;
	}
	end = p + len;
	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (parse_line(
		        p, (size_t)(nl - p), ++lineno, out, err, errlen) != 0) {
			memset(out, 0, sizeof(*out));
			return -1;
		}
		p = nl + 1;
	}
	if (out->ncommands == 0) {
		snprintf(err, errlen, "names no command");
		return -1;
	}
	return 0;
}

int
image_template_serves(const struct image_template *t, const char *name)
{
	unsigned i;

	for (i = 0; i < t->ncommands; i++)
		if (strcmp(t->commands[i], name) == 0)
			return 1;
	return 0;
}

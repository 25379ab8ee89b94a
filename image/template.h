/*
 * An image's template declaration (docs/templates.md): the file
 * /etc/keep/template among the image's files, text, one item a line:
 *
 *	command NAME	a command the template serves (1 to 8 lines); the
 *			template boots the first one's program and argv[0]
 *	arg ARGUMENT	one more argument of the template's boot (0 to 32
 *			lines, in order; the rest of the line, as is)
 *
 * Blank lines and lines starting with '#' are ignored. The file is part
 * of the signed image, but it is parsed as untrusted bytes all the same.
 *
 * image_template_parse returns 0 and fills *out, or -1 with a reason in
 * err ("line N: ..."). Names follow the command table's alphabet; an
 * argument holds printable ASCII only (no control bytes), at most
 * IMAGE_TEMPLATE_ARG_MAX - 1 bytes.
 */
#ifndef KEEP_IMAGE_TEMPLATE_H
#define KEEP_IMAGE_TEMPLATE_H

#include <stddef.h>
#include <stdint.h>

#define IMAGE_TEMPLATE_PATH "/etc/keep/template"
#define IMAGE_TEMPLATE_FILE_MAX 16384
#define IMAGE_TEMPLATE_COMMANDS 8
#define IMAGE_TEMPLATE_ARGS 32
#define IMAGE_TEMPLATE_NAME_MAX 32 /* the command table's field */
#define IMAGE_TEMPLATE_ARG_MAX 256

struct image_template {
	unsigned ncommands;
	char commands[IMAGE_TEMPLATE_COMMANDS][IMAGE_TEMPLATE_NAME_MAX];
	unsigned nargs;
	char args[IMAGE_TEMPLATE_ARGS][IMAGE_TEMPLATE_ARG_MAX];
};

int image_template_parse(const uint8_t *data, size_t len,
    struct image_template *out, char *err, size_t errlen);

/* Whether the template serves command name. */
int image_template_serves(const struct image_template *t, const char *name);

#endif

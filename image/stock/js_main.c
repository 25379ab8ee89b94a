/*
 * The js stock image: a small main around Duktape (the source Debian's
 * duktape-dev ships, compiled in by the build, not kept here).
 *   js -e CODE     evaluate CODE
 *   js FILE        evaluate a script file
 *   js             evaluate standard input
 * The value of the last expression is printed unless it is undefined;
 * print() and console.log() write their arguments joined by spaces. An
 * uncaught error prints its stack to stderr and exits 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duktape.h"

#define SOURCE_MAX (16 * 1024 * 1024)

static duk_ret_t
js_print(duk_context *ctx)
{
	duk_idx_t n = duk_get_top(ctx);

	for (duk_idx_t i = 0; i < n; i++) {
		if (i > 0)
			fputc(' ', stdout);
		fputs(duk_safe_to_string(ctx, i), stdout);
	}
	fputc('\n', stdout);
	return 0;
}

static char *
read_all(FILE *fp, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap);

	while (buf != NULL) {
		size_t got = fread(buf + n, 1, cap - n, fp);
		n += got;
		if (got == 0)
			break;
		if (n == cap) {
			char *nb;
			if (cap >= SOURCE_MAX ||
			    (nb = realloc(buf, cap * 2)) == NULL) {
				free(buf);
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
	}
	*len = n;
	return buf;
}

int
main(int argc, char **argv)
{
	duk_context *ctx;
	char *src = NULL;
	const char *name = "stdin";
	size_t len = 0;
	int rc = 0;

	if (argc == 3 && strcmp(argv[1], "-e") == 0) {
		src = strdup(argv[2]);
		len = strlen(argv[2]);
		name = "-e";
	} else if (argc == 2 && argv[1][0] != '-') {
		FILE *fp = fopen(argv[1], "rb");
		if (fp == NULL) {
			perror(argv[1]);
			return 2;
		}
		src = read_all(fp, &len);
		fclose(fp);
		name = argv[1];
	} else if (argc == 1) {
		src = read_all(stdin, &len);
	} else {
		fprintf(stderr, "usage: js [-e CODE | FILE]\n");
		return 2;
	}
	if (src == NULL) {
		fprintf(stderr, "js: cannot read the program\n");
		return 2;
	}
	if ((ctx = duk_create_heap_default()) == NULL) {
		fprintf(stderr, "js: out of memory\n");
		return 1;
	}
	duk_push_c_function(ctx, js_print, DUK_VARARGS);
	duk_put_global_string(ctx, "print");
	duk_push_object(ctx);
	duk_push_c_function(ctx, js_print, DUK_VARARGS);
	duk_put_prop_string(ctx, -2, "log");
	duk_push_c_function(ctx, js_print, DUK_VARARGS);
	duk_put_prop_string(ctx, -2, "error");
	duk_put_global_string(ctx, "console");

	duk_push_lstring(ctx, src, len);
	duk_push_string(ctx, name);
	if (duk_pcompile(ctx, DUK_COMPILE_EVAL) != 0 ||
	    duk_pcall(ctx, 0) != DUK_EXEC_SUCCESS) {
		if (duk_is_error(ctx, -1) &&
		    duk_get_prop_string(ctx, -1, "stack")) {
			fprintf(stderr, "%s\n", duk_safe_to_string(ctx, -1));
			duk_pop(ctx);
		} else {
			fprintf(stderr, "uncaught: %s\n",
			    duk_safe_to_string(ctx, -1));
		}
		rc = 1;
	} else if (!duk_is_undefined(ctx, -1)) {
		printf("%s\n", duk_safe_to_string(ctx, -1));
	}
	fflush(stdout);
	duk_destroy_heap(ctx);
	free(src);
	return rc;
}

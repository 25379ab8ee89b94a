/*
 * The js stock image: a small main around Duktape (the source Debian's
 * duktape-dev ships, compiled in by the build, not kept here).
 *   js -e CODE     evaluate CODE
 *   js FILE        evaluate a script file
 *   js             evaluate standard input
 * The value of the last expression is printed unless it is undefined;
 * print() and console.log() write their arguments joined by spaces. An
 * uncaught error prints its stack to stderr and exits 1.
 *
 * fetch(url, {method, headers, body}) -> {status, ok, headers, body}
 * is synchronous (no promises: Duktape has no event loop here). It is
 * the keep call KEEP_SYS_FETCH (guest/include/keep.h): the host's policy
 * decides, and a refusal or failure throws an Error whose message is the
 * host's reason ("host not on the allowlist: policy: denied") and whose
 * `errno` property is the positive errno (EACCES = 13, ...). headers
 * in the options is an object of strings; in the result, an object with
 * lower-case names. body is a string both ways (bytes as Latin-1 would
 * be lossy: responses are passed through as UTF-8 text). Responses up to
 * 8 MiB of body and 64 KiB of headers.
 *
 * For keep's live contexts (docs/contexts.md) two more functions:
 * __keep_cell() reads the next cell the host framed on standard input
 * and returns {code, nonce, env} (null at the end of input), and
 * __keep_write(fd, text) writes text to descriptor 1 or 2 unbuffered.
 * keep's context driver (image/stock/keep_driver.js) is built on them.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "duktape.h"

#include "../../guest/include/keep.h"

#define FETCH_BODY_MAX (8u << 20)
#define FETCH_HEADERS_MAX (64u << 10)

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

/* Append "Name: value\r\n" for every own property of the object at idx. */
static char *
fetch_headers(duk_context *ctx, duk_idx_t idx, size_t *len)
{
	char *buf = NULL, *nb;
	size_t n = 0, need;
	const char *k, *v;

	*len = 0;
	duk_enum(ctx, idx, DUK_ENUM_OWN_PROPERTIES_ONLY);
	while (duk_next(ctx, -1, 1)) {
		k = duk_to_string(ctx, -2);
		v = duk_to_string(ctx, -1);
		need = strlen(k) + strlen(v) + 4;
		if (n + need > FETCH_HEADERS_MAX ||
		    (nb = realloc(buf, n + need + 1)) == NULL) {
			free(buf);
			(void)duk_range_error(ctx, "fetch: headers too large");
		}
		buf = nb;
		n += (size_t)snprintf(buf + n, need + 1, "%s: %s\r\n", k, v);
		duk_pop_2(ctx);
	}
	duk_pop(ctx);
	*len = n;
	return buf;
}

/* The response header block as an object: lower-case names, the last
 * of repeated names wins. */
static void
push_headers(duk_context *ctx, char *h, size_t len)
{
	char *line = h, *end = h + len, *eol, *colon, *v, *p;

	duk_push_object(ctx);
	while (line < end) {
		if ((eol = memchr(line, '\n', (size_t)(end - line))) == NULL)
			eol = end;
		*eol = '\0';
		if (eol > line && eol[-1] == '\r')
			eol[-1] = '\0';
		if ((colon = strchr(line, ':')) != NULL && colon != line) {
			*colon = '\0';
			for (p = line; *p != '\0'; p++)
				if (*p >= 'A' && *p <= 'Z')
					*p = (char)(*p - 'A' + 'a');
			for (v = colon + 1; *v == ' ' || *v == '\t'; v++)
				;
			duk_push_string(ctx, v);
			duk_put_prop_string(ctx, -2, line);
		}
		line = eol + 1;
	}
}

static duk_ret_t
js_fetch(duk_context *ctx)
{
	struct keep_fetch f;
	const char *url, *method = "GET", *body = NULL;
	duk_size_t url_len, body_len = 0;
	char *hdrs = NULL, *rh = NULL, *rb = NULL;
	size_t hlen = 0;
	long r;

	url = duk_require_lstring(ctx, 0, &url_len);
	if (duk_is_object(ctx, 1)) {
		if (duk_get_prop_string(ctx, 1, "method"))
			method = duk_to_string(ctx, -1);
		duk_pop(ctx);
		if (duk_get_prop_string(ctx, 1, "body") &&
		    !duk_is_undefined(ctx, -1) && !duk_is_null(ctx, -1))
			body = duk_to_lstring(ctx, -1, &body_len);
		/* The values stay on the stack (reachable) until we return. */
		if (duk_get_prop_string(ctx, 1, "headers") &&
		    duk_is_object(ctx, -1))
			hdrs =
			    fetch_headers(ctx, duk_get_top_index(ctx), &hlen);
	}
	if ((rh = malloc(FETCH_HEADERS_MAX)) == NULL ||
	    (rb = malloc(FETCH_BODY_MAX)) == NULL) {
		free(hdrs);
		free(rh);
		(void)duk_error(ctx, DUK_ERR_ERROR, "fetch: out of memory");
	}
	memset(&f, 0, sizeof(f));
	f.version = KEEP_FETCH_VERSION;
	f.size = sizeof(f);
	f.method = (uint64_t)(uintptr_t)method;
	f.method_len = (uint32_t)strlen(method);
	f.url = (uint64_t)(uintptr_t)url;
	f.url_len = (uint32_t)url_len;
	f.req_headers = (uint64_t)(uintptr_t)hdrs;
	f.req_headers_len = hlen;
	f.req_body = (uint64_t)(uintptr_t)body;
	f.req_body_len = body_len;
	f.resp_headers = (uint64_t)(uintptr_t)rh;
	f.resp_headers_cap = FETCH_HEADERS_MAX;
	f.resp_body = (uint64_t)(uintptr_t)rb;
	f.resp_body_cap = FETCH_BODY_MAX;
	r = keep_fetch(&f);
	free(hdrs);
	if (r != 0) {
		free(rh);
		free(rb);
		f.reason[sizeof(f.reason) - 1] = '\0';
		duk_push_error_object(ctx, DUK_ERR_ERROR, "%s",
		    f.reason[0] != '\0' ? f.reason : strerror((int)-r));
		duk_push_int(ctx, (int)-r);
		duk_put_prop_string(ctx, -2, "errno");
		duk_push_uint(ctx, f.status);
		duk_put_prop_string(ctx, -2, "status");
		return duk_throw(ctx);
	}
	duk_push_object(ctx);
	duk_push_uint(ctx, f.status);
	duk_put_prop_string(ctx, -2, "status");
	duk_push_boolean(ctx, f.status >= 200 && f.status < 300);
	duk_put_prop_string(ctx, -2, "ok");
	push_headers(ctx, rh, (size_t)f.resp_headers_len);
	duk_put_prop_string(ctx, -2, "headers");
	duk_push_lstring(ctx, rb, (duk_size_t)f.resp_body_len);
	duk_put_prop_string(ctx, -2, "body");
	free(rh);
	free(rb);
	return 1;
}

static int
read_exact(int fd, void *p, size_t n)
{
	char *b = p;
	ssize_t got;

	while (n > 0) {
		if ((got = read(fd, b, n)) <= 0) {
			if (got == -1 && errno == EINTR)
				continue;
			return -1;
		}
		b += got;
		n -= (size_t)got;
	}
	return 0;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

/* "KEEPCELL", nonce[8], u32 code length, u32 variables; the code; each
 * variable a u32 length and "KEY=VALUE". */
static duk_ret_t
js_keep_cell(duk_context *ctx)
{
	static const char hex[] = "0123456789abcdef";
	uint8_t h[24];
	char nonce[17], *buf;
	uint32_t len, nenv, i;
	int k;

	if (read_exact(0, h, sizeof(h)) != 0) {
		duk_push_null(ctx);
		return 1;
	}
	if (memcmp(h, "KEEPCELL", 8) != 0 || le32(h + 16) > SOURCE_MAX ||
	    le32(h + 20) > 4096)
		return duk_error(ctx, DUK_ERR_ERROR, "keep: bad cell frame");
	for (k = 0; k < 8; k++) {
		nonce[2 * k] = hex[h[8 + k] >> 4];
		nonce[2 * k + 1] = hex[h[8 + k] & 15];
	}
	nonce[16] = '\0';
	len = le32(h + 16);
	nenv = le32(h + 20);
	duk_push_object(ctx);
	duk_push_string(ctx, nonce);
	duk_put_prop_string(ctx, -2, "nonce");
	for (i = 0; i <= nenv; i++) {
		uint8_t l[4];
		char *eq;

		if (i > 0) {
			if (read_exact(0, l, sizeof(l)) != 0 ||
			    (len = le32(l)) > SOURCE_MAX)
				return duk_error(
				    ctx, DUK_ERR_ERROR, "keep: bad cell frame");
		}
		if ((buf = malloc(len + 1)) == NULL)
			return duk_error(ctx, DUK_ERR_ERROR, "out of memory");
		if (read_exact(0, buf, len) != 0) {
			free(buf);
			return duk_error(
			    ctx, DUK_ERR_ERROR, "keep: bad cell frame");
		}
		buf[len] = '\0';
		if (i == 0) {
			duk_push_lstring(ctx, buf, len);
			duk_put_prop_string(ctx, -2, "code");
			duk_push_object(ctx);
		} else if ((eq = memchr(buf, '=', len)) != NULL) {
			duk_push_lstring(
			    ctx, eq + 1, len - (size_t)(eq - buf) - 1);
			duk_put_prop_lstring(ctx, -2, buf, (size_t)(eq - buf));
		}
		free(buf);
	}
	duk_put_prop_string(ctx, -2, "env");
	return 1;
}

static duk_ret_t
js_keep_write(duk_context *ctx)
{
	int fd = duk_require_int(ctx, 0);
	duk_size_t n;
	const char *s = duk_require_lstring(ctx, 1, &n);
	ssize_t w;

	if (fd != 1 && fd != 2)
		return duk_error(ctx, DUK_ERR_RANGE_ERROR, "fd must be 1 or 2");
	fflush(fd == 1 ? stdout : stderr);
	while (n > 0) {
		if ((w = write(fd, s, n)) <= 0) {
			if (w == -1 && errno == EINTR)
				continue;
			return duk_error(
			    ctx, DUK_ERR_ERROR, "keep: write failed");
		}
		s += w;
		n -= (size_t)w;
	}
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
	duk_push_c_function(ctx, js_fetch, 2);
	duk_put_global_string(ctx, "fetch");
	duk_push_c_function(ctx, js_keep_cell, 0);
	duk_put_global_string(ctx, "__keep_cell");
	duk_push_c_function(ctx, js_keep_write, 2);
	duk_put_global_string(ctx, "__keep_write");

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

/*
 * Response writer and the growable buffer it writes into. A buffer that
 * fails to grow records oom and ignores further appends, so callers check
 * once at the end instead of after every append.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/http/http.h"

void
http_buf_init(struct http_buf *b)
{
	memset(b, 0, sizeof(*b));
}

void
http_buf_free(struct http_buf *b)
{
	free(b->data);
	memset(b, 0, sizeof(*b));
}

void
http_buf_reset(struct http_buf *b)
{
	b->len = 0;
	b->oom = 0;
}

static int
grow(struct http_buf *b, size_t need)
{
	size_t cap;
	char *p;

	if (b->oom)
		return -1;
	if (need <= b->cap - b->len)
		return 0;
	if (need > SIZE_MAX / 2 - b->len) {
		b->oom = 1;
		return -1;
	}
	cap = b->cap ? b->cap : 256;
	while (cap - b->len < need)
		cap *= 2;
	if ((p = realloc(b->data, cap)) == NULL) {
		b->oom = 1;
		return -1;
	}
	b->data = p;
	b->cap = cap;
	return 0;
}

void
http_buf_add(struct http_buf *b, const void *p, size_t n)
{
	if (n == 0 || grow(b, n) != 0)
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

void
http_buf_puts(struct http_buf *b, const char *s)
{
	http_buf_add(b, s, strlen(s));
}

void
http_buf_printf(struct http_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (grow(b, 128) != 0)
		return;
	va_start(ap, fmt);
	n = vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = 1;
		return;
	}
	if ((size_t)n >= b->cap - b->len) {
		if (grow(b, (size_t)n + 1) != 0)
			return;
		va_start(ap, fmt);
		vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
	}
	b->len += (size_t)n;
}

void
http_buf_consume(struct http_buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->data, b->data + n, b->len - n);
	b->len -= n;
}

const char *
http_reason(int status)
{
	switch (status) {
	case 100:
		return "Continue";
	case 200:
		return "OK";
	case 201:
		return "Created";
	case 202:
		return "Accepted";
	case 204:
		return "No Content";
	case 400:
		return "Bad Request";
	case 401:
		return "Unauthorized";
	case 403:
		return "Forbidden";
	case 404:
		return "Not Found";
	case 405:
		return "Method Not Allowed";
	case 408:
		return "Request Timeout";
	case 409:
		return "Conflict";
	case 411:
		return "Length Required";
	case 412:
		return "Precondition Failed";
	case 413:
		return "Content Too Large";
	case 414:
		return "URI Too Long";
	case 415:
		return "Unsupported Media Type";
	case 417:
		return "Expectation Failed";
	case 423:
		return "Locked";
	case 429:
		return "Too Many Requests";
	case 431:
		return "Request Header Fields Too Large";
	case 500:
		return "Internal Server Error";
	case 501:
		return "Not Implemented";
	case 503:
		return "Service Unavailable";
	case 505:
		return "HTTP Version Not Supported";
	case 507:
		return "Insufficient Storage";
	default:
		return "Unknown";
	}
}

void
http_buf_putu(struct http_buf *b, uint64_t v)
{
	char d[20];
	size_t n = 0;

	do
		d[sizeof(d) - ++n] = (char)('0' + v % 10);
	while ((v /= 10) != 0);
	http_buf_add(b, d + sizeof(d) - n, n);
}

/* Every response starts here: appends rather than printf, which would
 * cost more than the rest of a small response. */
void
http_response_begin(struct http_buf *b, int status, const char *ctype,
    size_t body_len, int close)
{
	http_buf_add(b, "HTTP/1.1 ", 9);
	http_buf_putu(
	    b, (uint64_t)(status >= 100 && status <= 999 ? status : 500));
	http_buf_add(b, " ", 1);
	http_buf_puts(b, http_reason(status));
	http_buf_add(b, "\r\n", 2);
	if (ctype != NULL) {
		http_buf_add(b, "Content-Type: ", 14);
		http_buf_puts(b, ctype);
		http_buf_add(b, "\r\n", 2);
	}
	if (body_len != (size_t)-1) {
		http_buf_add(b, "Content-Length: ", 16);
		http_buf_putu(b, body_len);
		http_buf_add(b, "\r\n", 2);
	}
	if (close)
		http_buf_puts(b, "Connection: close\r\n");
}

void
http_response_header(struct http_buf *b, const char *name, const char *value)
{
	/* Values we write come from our own code; refuse CR/LF anyway. */
	if (strpbrk(value, "\r\n") != NULL || strpbrk(name, "\r\n: ") != NULL)
		return;
	http_buf_puts(b, name);
	http_buf_add(b, ": ", 2);
	http_buf_puts(b, value);
	http_buf_add(b, "\r\n", 2);
}

void
http_response_body(
    struct http_buf *b, const void *body, size_t len, int head_only)
{
	http_buf_add(b, "\r\n", 2);
	if (!head_only)
		http_buf_add(b, body, len);
}

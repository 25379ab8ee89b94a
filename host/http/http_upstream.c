/*
 * The framing of a guest server's response (host/http/http_upstream.h).
 * RFC 9112 section 6.3 decides the body's length; the rest of the head
 * passes unread.
 */
#include <string.h>

#include "host/http/http_upstream.h"

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static int
name_is(const char *s, size_t n, const char *lit)
{
	size_t i;

	for (i = 0; i < n && lit[i] != '\0'; i++)
		if (lower((unsigned char)s[i]) != lit[i])
			return 0;
	return i == n && lit[i] == '\0';
}

static int
tchar(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

/* Each comma-separated element of v[0..n), trimmed, to fn; empty ones
 * are skipped (RFC 9110 5.6.1). */
struct elems {
	const char *v;
	size_t n, pos;
};

static int
elem_next(struct elems *e, const char **s, size_t *len)
{
	while (e->pos < e->n) {
		size_t a = e->pos, b;

		while (e->pos < e->n && e->v[e->pos] != ',')
			e->pos++;
		b = e->pos;
		if (e->pos < e->n)
			e->pos++;
		while (a < b && (e->v[a] == ' ' || e->v[a] == '\t'))
			a++;
		while (b > a && (e->v[b - 1] == ' ' || e->v[b - 1] == '\t'))
			b--;
		if (b > a) {
			*s = e->v + a;
			*len = b - a;
			return 1;
		}
	}
	return 0;
}

/* A Content-Length value: one or more equal decimal numbers. */
static int
content_length(const char *v, size_t n, uint64_t *out)
{
	struct elems e = { v, n, 0 };
	const char *s;
	size_t len;
	int seen = 0;

	while (elem_next(&e, &s, &len)) {
		uint64_t x = 0;

		if (len > 19)
			return -1;
		for (size_t i = 0; i < len; i++) {
			if (s[i] < '0' || s[i] > '9')
				return -1;
			x = x * 10 + (uint64_t)(s[i] - '0');
		}
		if (seen && x != *out)
			return -1;
		*out = x;
		seen = 1;
	}
	return seen ? 0 : -1;
}

int
http_upstream_head(const char *buf, size_t len, size_t max_head,
    int head_request, struct http_upstream_head *h)
{
	size_t n = len < max_head ? len : max_head, pos = 0, end = 0;
	int have_cl = 0, have_te = 0, te_chunked = 0, nchunked = 0;
	int conn_close = 0;
	uint64_t cl = 0;

	memset(h, 0, sizeof(*h));
	/* The head's end first: an empty line. */
	while (pos < n) {
		const char *nl = memchr(buf + pos, '\n', n - pos);
		size_t ll;

		if (nl == NULL)
			break;
		ll = (size_t)(nl - (buf + pos));
		if (ll > 0 && buf[pos + ll - 1] == '\r')
			ll--;
		if (ll == 0 && pos > 0) {
			end = (size_t)(nl - buf) + 1;
			break;
		}
		pos = (size_t)(nl - buf) + 1;
	}
	if (end == 0)
		return len >= max_head ? HTTP_ERROR : HTTP_MORE;

	/* The status line: HTTP/1.x SP 3DIGIT [SP reason]. */
	if (end < 13 || memcmp(buf, "HTTP/1.", 7) != 0 ||
	    (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' || buf[9] < '1' ||
	    buf[9] > '9' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' ||
	    buf[11] > '9' ||
	    (buf[12] != ' ' && buf[12] != '\r' && buf[12] != '\n'))
		return HTTP_ERROR;
	h->version_minor = buf[7] - '0';
	h->status =
	    (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');

	/* The fields, line by line; a bare CR or a NUL anywhere is refused,
	 * and so is a folded line (it could hide a framing field). */
	pos = 0;
	while (pos < end) {
		const char *line = buf + pos;
		const char *nl = memchr(line, '\n', end - pos);
		size_t ll = (size_t)(nl - line), nlen, vs, ve;

		pos += ll + 1;
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		for (size_t i = 0; i < ll; i++)
			if (line[i] == '\r' || line[i] == '\0')
				return HTTP_ERROR;
		if (line == buf || ll == 0)
			continue; /* the status line; the final empty line */
		if (line[0] == ' ' || line[0] == '\t')
			return HTTP_ERROR;
		for (nlen = 0; nlen < ll && line[nlen] != ':'; nlen++)
			if (!tchar((unsigned char)line[nlen]))
				return HTTP_ERROR;
		if (nlen == 0 || nlen == ll)
			return HTTP_ERROR;
		vs = nlen + 1;
		ve = ll;
		while (vs < ve && (line[vs] == ' ' || line[vs] == '\t'))
			vs++;
		while (ve > vs && (line[ve - 1] == ' ' || line[ve - 1] == '\t'))
			ve--;
		if (name_is(line, nlen, "content-length")) {
			uint64_t v = 0;

			if (content_length(line + vs, ve - vs, &v) != 0 ||
			    (have_cl && v != cl))
				return HTTP_ERROR;
			cl = v;
			have_cl = 1;
		} else if (name_is(line, nlen, "transfer-encoding")) {
			struct elems e = { line + vs, ve - vs, 0 };
			const char *s;
			size_t sl;

			while (elem_next(&e, &s, &sl)) {
				have_te = 1;
				te_chunked =
				    sl == 7 && name_is(s, sl, "chunked");
				nchunked += te_chunked;
			}
		} else if (name_is(line, nlen, "connection")) {
			struct elems e = { line + vs, ve - vs, 0 };
			const char *s;
			size_t sl;

			while (elem_next(&e, &s, &sl))
				if (name_is(s, sl, "close"))
					conn_close = 1;
		}
	}
	if (nchunked > 1)
		return HTTP_ERROR;
	h->head_len = end;
	if (h->status < 200 || h->status == 204 || h->status == 304 ||
	    head_request)
		h->framing = HTTP_FRAME_NONE;
	else if (have_te)
		h->framing = te_chunked && h->version_minor == 1
		    ? HTTP_FRAME_CHUNKED
		    : HTTP_FRAME_CLOSE;
	else if (have_cl) {
		h->framing = HTTP_FRAME_LENGTH;
		h->content_length = cl;
	} else
		h->framing = HTTP_FRAME_CLOSE;
	/* Both framings: the coding wins, and the connection is not one to
	 * trust with another request (RFC 9112 6.3, item 3). */
	h->reusable = h->version_minor == 1 && !conn_close &&
	    h->framing != HTTP_FRAME_CLOSE && !(have_te && have_cl);
	return HTTP_OK;
}

enum {
	CS_SIZE, /* the first hex digit of a size */
	CS_SIZE_MORE, /* more digits, an extension, or the line's end */
	CS_EXT, /* an extension, skipped to the line's end */
	CS_SIZE_LF, /* CR seen after the size line */
	CS_DATA,
	CS_DATA_END, /* CR or LF after the data */
	CS_DATA_LF, /* LF after the data's CR */
	CS_TRAILER, /* a trailer line's start (or the body's end) */
	CS_TRAILER_LINE, /* in a trailer field, skipped */
	CS_END_LF /* LF of the final empty line */
};

void
http_chunk_scan_init(struct http_chunk_scan *s)
{
	memset(s, 0, sizeof(*s));
	s->state = CS_SIZE;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = lower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

int
http_chunk_scan(
    struct http_chunk_scan *s, const char *buf, size_t len, size_t *used)
{
	size_t i = 0;

	while (i < len) {
		int c = (unsigned char)buf[i];

		switch (s->state) {
		case CS_DATA: {
			size_t take = len - i;

			if (take > s->remaining)
				take = (size_t)s->remaining;
			s->remaining -= take;
			i += take;
			if (s->remaining == 0)
				s->state = CS_DATA_END;
			continue;
		}
		case CS_SIZE:
			if (hexval(c) < 0)
				goto bad;
			s->remaining = (uint64_t)hexval(c);
			s->ndigits = 1;
			s->line = 1;
			s->state = CS_SIZE_MORE;
			break;
		case CS_SIZE_MORE:
			if (hexval(c) >= 0) {
				if (++s->ndigits > 16)
					goto bad;
				s->remaining =
				    s->remaining << 4 | (uint64_t)hexval(c);
			} else if (c == ';' || c == ' ' || c == '\t')
				s->state = CS_EXT;
			else if (c == '\r')
				s->state = CS_SIZE_LF;
			else if (c == '\n')
				goto size_done;
			else
				goto bad;
			if (++s->line > HTTP_UPSTREAM_LINE_MAX)
				goto bad;
			break;
		case CS_EXT:
			if (c == '\r')
				s->state = CS_SIZE_LF;
			else if (c == '\n')
				goto size_done;
			else if (c == '\0' ||
			    ++s->line > HTTP_UPSTREAM_LINE_MAX)
				goto bad;
			break;
		case CS_SIZE_LF:
			if (c != '\n')
				goto bad;
		size_done:
			s->state = s->remaining == 0 ? CS_TRAILER : CS_DATA;
			break;
		case CS_DATA_END:
			if (c == '\r')
				s->state = CS_DATA_LF;
			else if (c == '\n')
				s->state = CS_SIZE;
			else
				goto bad;
			break;
		case CS_DATA_LF:
			if (c != '\n')
				goto bad;
			s->state = CS_SIZE;
			break;
		case CS_TRAILER:
			if (c == '\n') {
				*used = i + 1;
				return HTTP_OK;
			}
			if (c == '\r')
				s->state = CS_END_LF;
			else if (c == '\0')
				goto bad;
			else
				s->state = CS_TRAILER_LINE;
			if (++s->trailer > HTTP_UPSTREAM_TRAILER_MAX)
				goto bad;
			break;
		case CS_TRAILER_LINE:
			if (c == '\n')
				s->state = CS_TRAILER;
			else if (c == '\0')
				goto bad;
			if (++s->trailer > HTTP_UPSTREAM_TRAILER_MAX)
				goto bad;
			break;
		case CS_END_LF:
			if (c != '\n')
				goto bad;
			*used = i + 1;
			return HTTP_OK;
		default:
			goto bad;
		}
		i++;
	}
	*used = len;
	return HTTP_MORE;
bad:
	*used = i;
	return HTTP_ERROR;
}

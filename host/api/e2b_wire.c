/*
 * E2B's non-JSON wire formats (e2b_wire.h). Strict where the SDK is
 * regular: what undici's FormData and connect-web send is accepted, and
 * anything a parser here would have to guess at is refused.
 */
#include <string.h>

#include "host/api/e2b_wire.h"

#define LINE_MAX_PART 1024
#define BOUNDARY_MAX 70

static int
lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c + 32 : c;
}

/* s[0..n) begins with lit, compared without case. */
static int
prefix_ci(const char *s, size_t n, const char *lit)
{
	size_t l = strlen(lit);

	if (n < l)
		return 0;
	for (size_t i = 0; i < l; i++)
		if (lower((unsigned char)s[i]) != lit[i])
			return 0;
	return 1;
}

/* RFC 2046's bchars, space aside. */
static int
bchar(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') || strchr("'()+_,-./:=?", c) != NULL;
}

/* RFC 9110's tchar. */
static int
tchar(int c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z') ||
	    (c != '\0' && strchr("!#$%&'*+-.^_`|~", c));
}

static size_t
skip_ows(const char *s, size_t i, size_t n)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

int
e2b_multipart_boundary(
    const char *ctype, size_t len, const char **b, size_t *blen)
{
	static const char mt[] = "multipart/form-data";
	size_t i = sizeof(mt) - 1, s;

	if (!prefix_ci(ctype, len, mt))
		return -1;
	i = skip_ows(ctype, i, len);
	if (i >= len || ctype[i] != ';')
		return -1;
	i = skip_ows(ctype, i + 1, len);
	if (!prefix_ci(ctype + i, len - i, "boundary="))
		return -1;
	i += 9;
	if (i < len && ctype[i] == '"') {
		s = ++i;
		while (i < len && ctype[i] != '"') {
			if (!bchar((unsigned char)ctype[i]) && ctype[i] != ' ')
				return -1;
			i++;
		}
		if (i >= len || i == s || ctype[i - 1] == ' ')
			return -1;
		*b = ctype + s;
		*blen = i - s;
		i++;
	} else {
		s = i;
		while (i < len && bchar((unsigned char)ctype[i]))
			i++;
		*b = ctype + s;
		*blen = i - s;
	}
	/* One parameter, the boundary, and nothing after it. */
	if (*blen == 0 || *blen > BOUNDARY_MAX ||
	    skip_ows(ctype, i, len) != len)
		return -1;
	return 0;
}

/*
 * One parameter "; key=value" of a Content-Disposition at v[*i..n);
 * value a quoted string without escapes or a token.
 */
static int
disp_param(const char *v, size_t n, size_t *i, const char **key, size_t *klen,
    const char **val, size_t *vlen)
{
	size_t j = skip_ows(v, *i, n);

	if (j >= n || v[j] != ';')
		return -1;
	j = skip_ows(v, j + 1, n);
	*key = v + j;
	while (j < n && tchar((unsigned char)v[j]))
		j++;
	*klen = (size_t)(v + j - *key);
	if (*klen == 0 || j >= n || v[j] != '=')
		return -1;
	j++;
	if (j < n && v[j] == '"') {
		*val = v + ++j;
		while (j < n && v[j] != '"') {
			unsigned char c = (unsigned char)v[j];
			/* No escapes: a backslash would be one. */
			if (c < 0x20 || c == 0x7f || c == '\\')
				return -1;
			j++;
		}
		if (j >= n)
			return -1;
		*vlen = (size_t)(v + j - *val);
		j++;
	} else {
		*val = v + j;
		while (j < n && tchar((unsigned char)v[j]))
			j++;
		*vlen = (size_t)(v + j - *val);
		if (*vlen == 0)
			return -1;
	}
	*i = j;
	return 0;
}

/* form-data; name="..."[; filename="..."], each at most once. */
static int
disposition(const char *v, size_t n, struct e2b_part *p)
{
	const char *k, *val;
	size_t i = 9, kl, vl;

	if (!prefix_ci(v, n, "form-data"))
		return -1;
	while (skip_ows(v, i, n) < n) {
		if (disp_param(v, n, &i, &k, &kl, &val, &vl) != 0)
			return -1;
		if (kl == 4 && prefix_ci(k, kl, "name")) {
			if (p->name != NULL)
				return -1;
			p->name = val;
			p->name_len = vl;
		} else if (kl == 8 && prefix_ci(k, kl, "filename")) {
			if (p->filename != NULL)
				return -1;
			p->filename = val;
			p->filename_len = vl;
		} else
			return -1;
	}
	return p->name != NULL ? 0 : -1;
}

/* The head of one part at body[*pos..len), up to its empty line. */
static int
part_head(const char *body, size_t len, size_t *pos, struct e2b_part *p)
{
	int nctype = 0;

	for (;;) {
		const char *l = body + *pos, *e, *colon;
		size_t ll, v, ve;

		e = memchr(l, '\n', len - *pos);
		if (e == NULL || e == l || e[-1] != '\r')
			return -1;
		ll = (size_t)(e - l) - 1;
		*pos += ll + 2;
		if (ll == 0)
			break;
		if (ll > LINE_MAX_PART || memchr(l, '\r', ll) != NULL)
			return -1;
		if ((colon = memchr(l, ':', ll)) == NULL || colon == l)
			return -1;
		for (const char *c = l; c < colon; c++)
			if (!tchar((unsigned char)*c))
				return -1;
		v = skip_ows(l, (size_t)(colon - l) + 1, ll);
		for (ve = ll; ve > v && (l[ve - 1] == ' ' || l[ve - 1] == '\t');
		     ve--)
			;
		for (size_t c = v; c < ve; c++)
			if ((unsigned char)l[c] < 0x20 && l[c] != '\t')
				return -1;
		if ((size_t)(colon - l) == 19 &&
		    prefix_ci(l, 19, "content-disposition")) {
			if (p->name != NULL ||
			    disposition(l + v, ve - v, p) != 0)
				return -1;
		} else if ((size_t)(colon - l) == 12 &&
		    prefix_ci(l, 12, "content-type")) {
			if (nctype++)
				return -1;
		} else
			return -1;
	}
	return p->name != NULL ? 0 : -1;
}

int
e2b_multipart_parse(const char *body, size_t len, const char *b, size_t blen,
    struct e2b_part *parts, size_t max, size_t *n)
{
	char delim[4 + BOUNDARY_MAX];
	size_t pos, dlen = 4 + blen;
	const char *end;

	*n = 0;
	if (blen == 0 || blen > BOUNDARY_MAX)
		return -1;
	memcpy(delim, "\r\n--", 4);
	memcpy(delim + 4, b, blen);
	/* No preamble: the first delimiter starts the body. */
	if (len < dlen || memcmp(body, delim + 2, dlen - 2) != 0)
		return -1;
	pos = dlen - 2;
	for (;;) {
		struct e2b_part p;

		if (len - pos < 2)
			return -1;
		if (body[pos] == '-' && body[pos + 1] == '-') {
			pos += 2;
			/* The close delimiter: an optional CRLF, nothing more. */
			if (len - pos == 0 ||
			    (len - pos == 2 && body[pos] == '\r' &&
			        body[pos + 1] == '\n'))
				return *n > 0 ? 0 : -1;
			return -1;
		}
		if (body[pos] != '\r' || body[pos + 1] != '\n')
			return -1;
		pos += 2;
		if (*n >= max)
			return -1;
		memset(&p, 0, sizeof(p));
		if (part_head(body, len, &pos, &p) != 0)
			return -1;
		end = memmem(body + pos, len - pos, delim, dlen);
		if (end == NULL)
			return -1;
		p.data = body + pos;
		p.len = (size_t)(end - (body + pos));
		parts[(*n)++] = p;
		pos = (size_t)(end - body) + dlen;
	}
}

int
e2b_envelope_one(const char *body, size_t len, const char **msg, size_t *msglen)
{
	const unsigned char *u = (const unsigned char *)body;
	uint32_t l;

	if (len < 5 || u[0] != 0)
		return -1;
	l = (uint32_t)u[1] << 24 | (uint32_t)u[2] << 16 | (uint32_t)u[3] << 8 |
	    u[4];
	if ((uint64_t)l != len - 5)
		return -1;
	*msg = body + 5;
	*msglen = l;
	return 0;
}

void
e2b_envelope_put(
    struct http_buf *b, unsigned flags, const void *data, size_t len)
{
	unsigned char h[5];

	if (len > UINT32_MAX) {
		b->oom = 1;
		return;
	}
	h[0] = (unsigned char)flags;
	h[1] = (unsigned char)(len >> 24);
	h[2] = (unsigned char)(len >> 16);
	h[3] = (unsigned char)(len >> 8);
	h[4] = (unsigned char)len;
	http_buf_add(b, h, sizeof(h));
	http_buf_add(b, data, len);
}

int
e2b_timeout_ms(const char *v, size_t len, uint64_t *ms)
{
	uint64_t x = 0;

	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (uint64_t)(v[i] - '0');
	}
	*ms = x;
	return 0;
}

const char *
e2b_connect_code(int status)
{
	static const struct {
		int status;
		const char *code;
	} tab[] = {
		{ 400, "invalid_argument" },
		{ 401, "unauthenticated" },
		{ 403, "permission_denied" },
		{ 404, "not_found" },
		{ 405, "unimplemented" },
		{ 408, "deadline_exceeded" },
		{ 409, "already_exists" },
		{ 412, "failed_precondition" },
		{ 413, "invalid_argument" },
		{ 415, "invalid_argument" },
		{ 423, "failed_precondition" },
		{ 429, "resource_exhausted" },
		{ 500, "internal" },
		{ 501, "unimplemented" },
		{ 502, "unavailable" },
		{ 503, "unavailable" },
		{ 507, "resource_exhausted" },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].status == status)
			return tab[i].code;
	return "unknown";
}

const char *
e2b_template_image(const char *t)
{
	static const struct {
		const char *tmpl, *image;
	} tab[] = {
		{ "code-interpreter-v1", "machine" },
		{ "code-interpreter", "machine" },
		{ "base", "machine" },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (strcmp(t, tab[i].tmpl) == 0)
			return tab[i].image;
	return t;
}

int
e2b_cell_split(const char *out, size_t len, const char *mark, size_t mark_len,
    size_t *user_len, size_t *tail)
{
	const char *p = out, *end = out + len, *q, *hit = NULL;

	if (mark_len == 0 || len <= mark_len)
		return -1;
	/* A cell that printed the mark itself printed it before the
	 * wrapper's own last line. */
	while ((q = memmem(p, (size_t)(end - p), mark, mark_len)) != NULL) {
		if (q > out && q[-1] == '\n')
			hit = q;
		p = q + 1;
	}
	if (hit == NULL)
		return -1;
	*user_len = (size_t)(hit - 1 - out);
	*tail = (size_t)(hit - out) + mark_len;
	return 0;
}

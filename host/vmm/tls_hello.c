/*
 * A TLS ClientHello's server name (host/vmm/tls_hello.h). A reader over
 * a bounded span: every length is checked against what is left before
 * it is used, and nothing is read past len.
 */
#include <string.h>

#include "host/vmm/tls_hello.h"

#define TLS_CONTENT_HANDSHAKE 22
#define TLS_HANDSHAKE_CLIENT_HELLO 1
#define TLS_EXT_SERVER_NAME 0
#define TLS_NAME_HOST 0

struct span {
	const uint8_t *p;
	size_t len;
};

static int
take(struct span *s, size_t n, struct span *out)
{
	if (n > s->len)
		return -1;
	if (out != NULL) {
		out->p = s->p;
		out->len = n;
	}
	s->p += n;
	s->len -= n;
	return 0;
}

static int
take_u8(struct span *s, size_t *v)
{
	if (s->len < 1)
		return -1;
	*v = s->p[0];
	return take(s, 1, NULL);
}

static int
take_u16(struct span *s, size_t *v)
{
	if (s->len < 2)
		return -1;
	*v = (size_t)s->p[0] << 8 | s->p[1];
	return take(s, 2, NULL);
}

static int
take_u24(struct span *s, size_t *v)
{
	if (s->len < 3)
		return -1;
	*v = (size_t)s->p[0] << 16 | (size_t)s->p[1] << 8 | s->p[2];
	return take(s, 3, NULL);
}

/* A vector with a length prefix of width bytes (1 or 2). */
static int
take_vec(struct span *s, int width, struct span *out)
{
	size_t n;

	if ((width == 1 ? take_u8(s, &n) : take_u16(s, &n)) != 0)
		return -1;
	return take(s, n, out);
}

/* A host name as RFC 6066 has it (no trailing dot there; one is
 * forgiven), copied lower-cased into name. 0, or -1. */
static int
host_name(const struct span *h, char *name)
{
	size_t n = h->len, i;

	if (n > 0 && h->p[n - 1] == '.')
		n--;
	if (n == 0 || n > TLS_SNI_MAX)
		return -1;
	for (i = 0; i < n; i++) {
		uint8_t c = h->p[i];

		if (c >= 'A' && c <= 'Z')
			c = (uint8_t)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		        c == '-' || c == '_' || c == '.'))
			return -1;
		if (c == '.' && (i == 0 || name[i - 1] == '.'))
			return -1;
		name[i] = (char)c;
	}
	if (name[n - 1] == '.')
		return -1;
	name[n] = '\0';
	return 0;
}

/* server_name's body: exactly one entry, of type host_name. */
static int
server_name(struct span ext, char *name)
{
	struct span list, host;
	size_t type;

	if (take_vec(&ext, 2, &list) != 0 || ext.len != 0 ||
	    take_u8(&list, &type) != 0 || type != TLS_NAME_HOST ||
	    take_vec(&list, 2, &host) != 0 || list.len != 0)
		return -1;
	return host_name(&host, name);
}

static enum tls_hello_result
parse(const uint8_t *p, size_t len, char *name, size_t *need)
{
	struct span rec = { p, len }, msg, body, exts, ext, skip;
	size_t v, rlen, hlen, type, elen;
	int seen_sni = 0;

	*need = 0;
	name[0] = '\0';
	/* The record header: a handshake, version 3.x, a fragment of
	 * 1..2^14 bytes. Each byte is judged as soon as it is there. */
	if (len >= 1 && p[0] != TLS_CONTENT_HANDSHAKE)
		return TLS_HELLO_NOT_TLS;
	if (len >= 2 && p[1] != 3)
		return TLS_HELLO_NOT_TLS;
	if (len < TLS_RECORD_HEADER) {
		*need = TLS_RECORD_HEADER;
		return TLS_HELLO_MORE;
	}
	rlen = (size_t)p[3] << 8 | p[4];
	if (rlen == 0 || rlen > TLS_RECORD_MAX)
		return TLS_HELLO_MALFORMED;
	if (len < TLS_RECORD_HEADER + rlen) {
		*need = TLS_RECORD_HEADER + rlen;
		return TLS_HELLO_MORE;
	}
	(void)take(&rec, TLS_RECORD_HEADER, NULL);
	rec.len = rlen; /* what follows the record is not looked at */
	/* The handshake message, whole in this record. */
	if (take_u8(&rec, &type) != 0 || type != TLS_HANDSHAKE_CLIENT_HELLO ||
	    take_u24(&rec, &hlen) != 0 || take(&rec, hlen, &msg) != 0)
		return TLS_HELLO_MALFORMED;
	body = msg;
	/* legacy_version, random, session id (<= 32), cipher suites (an
	 * even count, at least one), compression methods (at least one). */
	if (take_u16(&body, &v) != 0 || (v >> 8) != 3 ||
	    take(&body, 32, NULL) != 0 || take_vec(&body, 1, &skip) != 0 ||
	    skip.len > 32 || take_vec(&body, 2, &skip) != 0 || skip.len < 2 ||
	    (skip.len & 1) != 0 || take_vec(&body, 1, &skip) != 0 ||
	    skip.len < 1)
		return TLS_HELLO_MALFORMED;
	if (body.len == 0)
		return TLS_HELLO_NO_SNI; /* no extensions at all */
	if (take_vec(&body, 2, &exts) != 0 || body.len != 0)
		return TLS_HELLO_MALFORMED;
	while (exts.len > 0) {
		if (take_u16(&exts, &type) != 0 ||
		    take_u16(&exts, &elen) != 0 || take(&exts, elen, &ext) != 0)
			return TLS_HELLO_MALFORMED;
		if (type != TLS_EXT_SERVER_NAME)
			continue;
		if (seen_sni++ || server_name(ext, name) != 0)
			return TLS_HELLO_MALFORMED;
	}
	return seen_sni ? TLS_HELLO_SNI : TLS_HELLO_NO_SNI;
}

enum tls_hello_result
tls_hello_parse(const uint8_t *p, size_t len, char *name, size_t *need)
{
	enum tls_hello_result r = parse(p, len, name, need);

	/* A name found before a later extension proved the hello bad is
	 * no answer. */
	if (r != TLS_HELLO_SNI)
		name[0] = '\0';
	return r;
}

const char *
tls_hello_result_name(enum tls_hello_result r)
{
	switch (r) {
	case TLS_HELLO_MORE:
		return "more";
	case TLS_HELLO_SNI:
		return "sni";
	case TLS_HELLO_NO_SNI:
		return "no-sni";
	case TLS_HELLO_NOT_TLS:
		return "not-tls";
	case TLS_HELLO_MALFORMED:
		return "malformed";
	}
	return "?";
}

#include <string.h>

#include "lib/secret_ref.h"

static const char open_tok[] = "${{";
static const char prefix[] = "secrets.";

int
secret_name_ok(const char *s, size_t len)
{
	size_t i;

	if (len == 0 || len > SECRET_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		        (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return 0;
	}
	return 1;
}

static size_t
skip_blanks(const char *s, size_t len, size_t i)
{
	while (i < len && (s[i] == ' ' || s[i] == '\t'))
		i++;
	return i;
}

int
secret_ref_next(const char *s, size_t len, size_t *pos, struct secret_ref *ref)
{
	size_t i, start, n;

	for (start = *pos; start + 3 <= len; start++)
		if (memcmp(s + start, open_tok, 3) == 0)
			break;
	if (start + 3 > len)
		return 0;
	i = skip_blanks(s, len, start + 3);
	if (len - i < sizeof(prefix) - 1 ||
	    memcmp(s + i, prefix, sizeof(prefix) - 1) != 0)
		return -1;
	i += sizeof(prefix) - 1;
	for (n = 0; i + n < len && secret_name_ok(s + i + n, 1); n++)
		;
	if (!secret_name_ok(s + i, n))
		return -1;
	ref->name = s + i;
	ref->name_len = n;
	i = skip_blanks(s, len, i + n);
	if (len - i < 2 || s[i] != '}' || s[i + 1] != '}')
		return -1;
	ref->start = start;
	ref->end = i + 2;
	*pos = ref->end;
	return 1;
}

int
secret_ref_expand(const char *s, size_t len, secret_lookup_fn lookup, void *arg,
    char *out, size_t outmax, size_t *outlen)
{
	struct secret_ref ref;
	size_t pos = 0, from = 0, o = 0, vlen;
	const char *v;
	int rc;

	while ((rc = secret_ref_next(s, len, &pos, &ref)) == 1) {
		if ((v = lookup(arg, ref.name, ref.name_len, &vlen)) == NULL ||
		    outmax - o <= (ref.start - from) + vlen)
			return -1;
		memcpy(out + o, s + from, ref.start - from);
		o += ref.start - from;
		memcpy(out + o, v, vlen);
		o += vlen;
		from = ref.end;
	}
	if (rc < 0 || outmax - o <= len - from)
		return -1;
	memcpy(out + o, s + from, len - from);
	o += len - from;
	out[o] = '\0';
	*outlen = o;
	return 0;
}

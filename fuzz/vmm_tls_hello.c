/*
 * Fuzz the ClientHello reader (host/vmm/tls_hello.c): a hostile guest
 * writes every byte a connection's first send carries. Properties:
 * nothing crashes or reads out of bounds (an exact-size copy); a name
 * is lower case [a-z0-9_.-], no empty label, at most TLS_SNI_MAX; MORE
 * asks for more than it was given and never more than one record; a
 * prefix of a decided input never decides otherwise (it says MORE or
 * the same thing), so a hello sent in pieces is judged as if whole.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/vmm/tls_hello.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_name(const char *n)
{
	size_t len = strlen(n), i;

	if (len == 0 || len > TLS_SNI_MAX || n[0] == '.' || n[len - 1] == '.')
		abort();
	for (i = 0; i < len; i++) {
		char c = n[i];

		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		        c == '-' || c == '_' || c == '.'))
			abort();
		if (c == '.' && n[i + 1] == '.')
			abort();
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[TLS_SNI_MAX + 1], name2[TLS_SNI_MAX + 1];
	enum tls_hello_result r, r2;
	size_t need, need2, cut;
	uint8_t *copy;

	if (size > TLS_HELLO_MAX + 64)
		size = TLS_HELLO_MAX + 64;
	if ((copy = malloc(size ? size : 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	r = tls_hello_parse(copy, size, name, &need);
	switch (r) {
	case TLS_HELLO_MORE:
		if (need <= size || need > TLS_HELLO_MAX)
			abort();
		break;
	case TLS_HELLO_SNI:
		check_name(name);
		break;
	case TLS_HELLO_NO_SNI:
	case TLS_HELLO_NOT_TLS:
	case TLS_HELLO_MALFORMED:
		if (name[0] != '\0')
			abort();
		break;
	default:
		abort();
	}
	/* A prefix (its own exact-size copy) says MORE or the same. */
	if (size > 0 && r != TLS_HELLO_MORE) {
		cut = copy[size - 1] % size;
		free(copy);
		if ((copy = malloc(cut ? cut : 1)) == NULL)
			return 0;
		memcpy(copy, data, cut);
		r2 = tls_hello_parse(copy, cut, name2, &need2);
		if (r2 != TLS_HELLO_MORE && r2 != r)
			abort();
	}
	free(copy);
	return 0;
}

#include <string.h>

#include "lib/redact.h"

size_t
redact_step(const struct redact_value *vals, size_t nvals, const uint8_t *in,
    size_t len, int final, uint8_t *out, size_t *outlen)
{
	size_t pos = 0, o = 0, i, best, rest;
	int partial;

	while (pos < len) {
		best = 0;
		partial = 0;
		rest = len - pos;
		for (i = 0; i < nvals; i++) {
			const struct redact_value *v = &vals[i];

			if (v->len == 0)
				continue;
			if (v->len <= rest) {
				if (v->len > best &&
				    memcmp(in + pos, v->v, v->len) == 0)
					best = v->len;
			} else if (!final && memcmp(in + pos, v->v, rest) == 0)
				partial = 1;
		}
		/* A longer value may still complete here: wait for it. */
		if (partial)
			break;
		if (best > 0) {
			memcpy(out + o, REDACT_MARK, sizeof(REDACT_MARK) - 1);
			o += sizeof(REDACT_MARK) - 1;
			pos += best;
		} else
			out[o++] = in[pos++];
	}
	*outlen = o;
	return pos;
}

/*
 * Fuzz the secret reference parser and the redactor (lib/secret_ref.h,
 * lib/redact.h). The input's first byte splits it into a value and a
 * text. Checks: expansion never overruns and every reference it finds
 * lies inside the text; redacting the text piece by piece (cut where the
 * second byte says) gives exactly what redacting it whole gives, never
 * longer than the input, and leaves no occurrence of the value (one
 * without '*', which could be made of a mark and the text around it).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/redact.h"
#include "lib/secret_ref.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *
lookup(void *arg, const char *name, size_t name_len, size_t *value_len)
{
	(void)arg;
	(void)name;
	*value_len = name_len;
	return "012345678901234567890123456789012345678901234567890123456789012"
	       "3";
}

static size_t
redact_pieces(const struct redact_value *v, const uint8_t *in, size_t len,
    size_t cut, uint8_t *out)
{
	size_t done = 0, o = 0, got, used, step;

	while (done < len) {
		step = cut == 0 ? len - done : cut;
		if (step > len - done)
			step = len - done;
		/* Present what is waiting plus the next piece. */
		used = redact_step(v, 1, in + done, step, 0, out + o, &got);
		o += got;
		done += used;
		if (used == 0 && done + step >= len)
			break;
		if (used == 0)
			cut = cut * 2 + 1;
	}
	(void)redact_step(v, 1, in + done, len - done, 1, out + o, &got);
	return o + got;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct secret_ref ref;
	struct redact_value v;
	size_t vlen, tlen, pos = 0, outlen, whole, pieces, i;
	uint8_t *a, *b;
	char out[4096];
	int rc;

	if (size < 2)
		return 0;
	vlen = data[0] % 16 + 4;
	if (vlen > size - 2)
		return 0;
	v.v = data + 2;
	v.len = vlen;
	tlen = size - 2 - vlen;
	const char *text = (const char *)data + 2 + vlen;

	while ((rc = secret_ref_next(text, tlen, &pos, &ref)) == 1)
		if (ref.end > tlen || ref.start >= ref.end || ref.name < text ||
		    ref.name + ref.name_len > text + tlen ||
		    !secret_name_ok(ref.name, ref.name_len))
			abort();
	if (secret_ref_expand(
	        text, tlen, lookup, NULL, out, sizeof(out), &outlen) == 0 &&
	    (outlen >= sizeof(out) || out[outlen] != '\0'))
		abort();

	if ((a = malloc(tlen + 1)) == NULL || (b = malloc(tlen + 1)) == NULL)
		abort();
	(void)redact_step(&v, 1, (const uint8_t *)text, tlen, 1, a, &whole);
	pieces = redact_pieces(&v, (const uint8_t *)text, tlen, data[1] % 8, b);
	if (whole > tlen || pieces != whole || memcmp(a, b, whole) != 0)
		abort();
	for (i = 0; i + vlen <= whole; i++)
		if (memcmp(a + i, v.v, vlen) == 0 &&
		    memchr(v.v, '*', vlen) == NULL)
			abort();
	free(a);
	free(b);
	return 0;
}

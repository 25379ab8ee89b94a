/*
 * Fuzz the .pyc rewriter of keep image build --deb (image/pyc.c). The
 * input is a .pyc, then the source after a first byte that says where
 * the .pyc ends. A rewrite keeps the magic and the code, marks the file
 * hash-based and unchecked, and never reads past either buffer.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "image/pyc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *pyc, *src;
	size_t pyclen, srclen, outlen;
	uint8_t *out;
	int64_t mtime;
	int r;

	if (size < 1)
		return 0;
	pyclen = data[0] < size - 1 ? data[0] : size - 1;
	pyc = data + 1;
	src = pyc + pyclen;
	srclen = size - 1 - pyclen;
	/* The time the header names, so that some inputs are current. */
	mtime = pyclen >= 12
	    ? (int64_t)((uint32_t)pyc[8] | (uint32_t)pyc[9] << 8 |
	          (uint32_t)pyc[10] << 16 | (uint32_t)pyc[11] << 24)
	    : 0;
	r = pyc_make_unchecked(pyc, pyclen, src, srclen, mtime, &out, &outlen);
	if (r == 0 && (out != NULL || outlen != 0))
		abort();
	if (r == 1) {
		if (outlen != pyclen || pyclen < PYC_HEADER_LEN ||
		    memcmp(out, pyc, 4) != 0 ||
		    memcmp(out + 4, "\x01\0\0\0", 4) != 0 ||
		    memcmp(out + PYC_HEADER_LEN, pyc + PYC_HEADER_LEN,
		        pyclen - PYC_HEADER_LEN) != 0)
			abort();
		free(out);
	}
	(void)pyc_siphash13(mtime, (uint64_t)srclen, src, srclen);
	return 0;
}

/*
 * Python bytecode for read-only images (keep image build --deb,
 * docs/image-format.md "Images from Debian packages").
 *
 * Debian compiles each module at install into a timestamp-based .pyc:
 * its 16-byte header holds the source's modification time and size, and
 * CPython recompiles the module whenever they differ from what stat(2)
 * says of the source. An image keeps no modification times (the guest
 * sees 0), so every such .pyc would be stale in every run and every
 * import would compile its module again. The builder turns each .pyc
 * that is current for its source on the build machine into an unchecked
 * hash-based .pyc (PEP 552): the header carries SipHash-1-3 of the
 * source, as CPython's importlib computes it, and CPython loads it
 * without looking at the source's time; the source cannot change in a
 * signed image. Pure: no I/O; the .pyc is untrusted (fuzz/image_pyc.c).
 */
#ifndef KEEP_IMAGE_PYC_H
#define KEEP_IMAGE_PYC_H

#include <stddef.h>
#include <stdint.h>

#define PYC_HEADER_LEN 16

/* SipHash-1-3 of p[0..n) under the key (k0, k1), as CPython's
 * _Py_KeyedHash (k1 = 0 there). */
uint64_t pyc_siphash13(uint64_t k0, uint64_t k1, const uint8_t *p, size_t n);

/*
 * pyc (len bytes) as an unchecked hash-based .pyc for the source src
 * (srclen bytes, modified at src_mtime, seconds since the epoch).
 * Returns 1 with the new bytes in *out (malloc'd, *outlen bytes,
 * the code unchanged after the header); 0 when pyc is not a
 * timestamp-based .pyc that is current for that source (too short, not
 * a .pyc, already hash-based, another time or size), to be kept as it
 * is; -1 when out of memory.
 */
int pyc_make_unchecked(const uint8_t *pyc, size_t len, const uint8_t *src,
    size_t srclen, int64_t src_mtime, uint8_t **out, size_t *outlen);

#endif

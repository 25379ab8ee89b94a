/*
 * Timestamp-based .pyc files as unchecked hash-based ones (image/pyc.h).
 * SipHash-1-3 is written from the SipHash paper (Aumasson, Bernstein):
 * one compression round per 8-byte word, three finalization rounds.
 */
#include <stdlib.h>
#include <string.h>

#include "image/pyc.h"

#define PYC_FLAG_HASH_BASED 0x1u

static uint64_t
rotl(uint64_t x, int b)
{
	return (x << b) | (x >> (64 - b));
}

static uint64_t
le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)v;
}

struct sip {
	uint64_t v0, v1, v2, v3;
};

static void
sip_round(struct sip *s)
{
	s->v0 += s->v1;
	s->v1 = rotl(s->v1, 13) ^ s->v0;
	s->v0 = rotl(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = rotl(s->v3, 16) ^ s->v2;
	s->v0 += s->v3;
	s->v3 = rotl(s->v3, 21) ^ s->v0;
	s->v2 += s->v1;
	s->v1 = rotl(s->v1, 17) ^ s->v2;
	s->v2 = rotl(s->v2, 32);
}

static void
sip_word(struct sip *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	s->v0 ^= m;
}

uint64_t
pyc_siphash13(uint64_t k0, uint64_t k1, const uint8_t *p, size_t n)
{
	struct sip s = {
		k0 ^ 0x736f6d6570736575ULL, /* "somepseu" */
		k1 ^ 0x646f72616e646f6dULL, /* "dorandom" */
		k0 ^ 0x6c7967656e657261ULL, /* "lygenera" */
		k1 ^ 0x7465646279746573ULL, /* "tedbytes" */
	};
	uint8_t last[8] = { 0 };
	size_t i;

	for (i = 0; i + 8 <= n; i += 8)
		sip_word(&s, le64(p + i));
	memcpy(last, p + i, n - i);
	last[7] = (uint8_t)n;
	sip_word(&s, le64(last));
	s.v2 ^= 0xff;
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

int
pyc_make_unchecked(const uint8_t *pyc, size_t len, const uint8_t *src,
    size_t srclen, int64_t src_mtime, uint8_t **out, size_t *outlen)
{
	uint8_t *o;

	*out = NULL;
	*outlen = 0;
	/* A .pyc's magic ends in "\r\n"; its flags word is 0 for a
	 * timestamp-based file, whose time and size fields hold the
	 * source's, each as CPython stores them: the low 32 bits. */
	if (len < PYC_HEADER_LEN || pyc[2] != '\r' || pyc[3] != '\n' ||
	    le32(pyc + 4) != 0 || le32(pyc + 8) != (uint32_t)src_mtime ||
	    le32(pyc + 12) != (uint32_t)srclen)
		return 0;
	if ((o = malloc(len)) == NULL)
		return -1;
	memcpy(o, pyc, 4);
	put_le(o + 4, PYC_FLAG_HASH_BASED, 4);
	/* The key is the magic number read as a little-endian integer
	 * (importlib's _RAW_MAGIC_NUMBER). */
	put_le(o + 8, pyc_siphash13(le32(pyc), 0, src, srclen), 8);
	memcpy(o + PYC_HEADER_LEN, pyc + PYC_HEADER_LEN, len - PYC_HEADER_LEN);
	*out = o;
	*outlen = len;
	return 1;
}

#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "token/paserk.h"
#include "token/paseto.h"
#include "token/token_err.h"

static const char header[] = "v4.public.";
#define HEADER_LEN (sizeof(header) - 1)
#define SIG_LEN crypto_sign_BYTES

static void
le64(uint8_t out[8], uint64_t n)
{
	/* PAE clears the top bit so the length is never read as negative. */
	n &= ~(1ULL << 63);
	for (int k = 0; k < 8; k++) {
		out[k] = n & 0xff;
		n >>= 8;
	}
}

/* PAE of the four pieces into a malloc'ed buffer. */
static uint8_t *
pae(const uint8_t *m, size_t mlen, const uint8_t *f, size_t flen,
    const uint8_t *i, size_t ilen, size_t *outlen)
{
	const uint8_t *piece[4] = { (const uint8_t *)header, m, f, i };
	size_t plen[4] = { HEADER_LEN, mlen, flen, ilen };
	size_t total = 8;
	uint8_t *buf, *p;

	for (int k = 0; k < 4; k++) {
		if (plen[k] > PASETO_MAX_TOKEN * 2)
			return NULL;
		total += 8 + plen[k];
	}
	if ((buf = malloc(total)) == NULL)
		return NULL;
	p = buf;
	le64(p, 4);
	p += 8;
	for (int k = 0; k < 4; k++) {
		le64(p, plen[k]);
		p += 8;
		if (plen[k] > 0)
			memcpy(p, piece[k], plen[k]);
		p += plen[k];
	}
	*outlen = total;
	return buf;
}

int
paseto_v4_sign(const uint8_t sk[64], const uint8_t *m, size_t mlen,
    const uint8_t *f, size_t flen, const uint8_t *i, size_t ilen, char **out)
{
	uint8_t *pa, *body;
	size_t palen, blen, tlen;
	char *tok, *p;

	*out = NULL;
	if (mlen > PASETO_MAX_TOKEN || flen > PASETO_MAX_FOOTER ||
	    ilen > PASETO_MAX_TOKEN)
		return TOKEN_E_TOO_LARGE;
	if ((pa = pae(m, mlen, f, flen, i, ilen, &palen)) == NULL)
		return TOKEN_E_NOMEM;
	blen = mlen + SIG_LEN;
	if ((body = malloc(blen)) == NULL) {
		free(pa);
		return TOKEN_E_NOMEM;
	}
	if (mlen > 0)
		memcpy(body, m, mlen);
	crypto_sign_detached(body + mlen, NULL, pa, palen, sk);
	free(pa);
	tlen = HEADER_LEN + b64url_encoded_len(blen) +
	    (flen ? 1 + b64url_encoded_len(flen) : 0);
	if ((tok = malloc(tlen + 1)) == NULL) {
		free(body);
		return TOKEN_E_NOMEM;
	}
	memcpy(tok, header, HEADER_LEN);
	p = tok + HEADER_LEN;
	p += b64url_encode(p, tlen + 1 - (size_t)(p - tok), body, blen);
	free(body);
	if (flen) {
		*p++ = '.';
		b64url_encode(p, tlen + 1 - (size_t)(p - tok), f, flen);
	}
	*out = tok;
	return 0;
}

/* Split a token into its body and optional footer, checking the header. */
static int
split(const char *tok, size_t tlen, const char **body, size_t *blen,
    const char **foot, size_t *footlen)
{
	const char *dot;

	if (tlen > PASETO_MAX_TOKEN)
		return TOKEN_E_TOO_LARGE;
	if (tlen < 3 || memchr(tok, '\0', tlen) != NULL)
		return TOKEN_E_FORMAT;
	if (tlen < HEADER_LEN || memcmp(tok, header, HEADER_LEN) != 0) {
		/* Say "version" for any other PASETO header. */
		if (tok[0] == 'v' && memchr(tok, '.', tlen) != NULL)
			return TOKEN_E_VERSION;
		return TOKEN_E_FORMAT;
	}
	*body = tok + HEADER_LEN;
	dot = memchr(*body, '.', tlen - HEADER_LEN);
	if (dot == NULL) {
		*blen = tlen - HEADER_LEN;
		*foot = NULL;
		*footlen = 0;
	} else {
		*blen = (size_t)(dot - *body);
		*foot = dot + 1;
		*footlen = tlen - (size_t)(*foot - tok);
		/* An empty footer is written without its dot. */
		if (*footlen == 0 || memchr(*foot, '.', *footlen) != NULL)
			return TOKEN_E_FORMAT;
	}
	return 0;
}

int
paseto_v4_footer(
    const char *tok, size_t tlen, char *buf, size_t buflen, size_t *flen)
{
	const char *body, *foot;
	size_t blen, footlen;
	int rc;

	*flen = 0;
	if ((rc = split(tok, tlen, &body, &blen, &foot, &footlen)) != 0)
		return rc;
	if (foot == NULL) {
		if (buflen > 0)
			buf[0] = '\0';
		return 0;
	}
	if (footlen > b64url_encoded_len(PASETO_MAX_FOOTER) || buflen < 1)
		return TOKEN_E_TOO_LARGE;
	if (b64url_decode((uint8_t *)buf, buflen - 1, flen, foot, footlen) != 0)
		return TOKEN_E_BASE64;
	buf[*flen] = '\0';
	return 0;
}

static int
decode_body(const char *tok, size_t tlen, uint8_t **raw, size_t *rawlen,
    uint8_t **f, size_t *flen)
{
	const char *body, *foot;
	size_t blen, footlen, max;
	int rc;

	*raw = *f = NULL;
	*flen = 0;
	if ((rc = split(tok, tlen, &body, &blen, &foot, &footlen)) != 0)
		return rc;
	max = blen / 4 * 3 + 3;
	if ((*raw = malloc(max + 1)) == NULL)
		return TOKEN_E_NOMEM;
	if (b64url_decode(*raw, max, rawlen, body, blen) != 0)
		return TOKEN_E_BASE64;
	if (*rawlen < SIG_LEN)
		return TOKEN_E_FORMAT;
	if (foot != NULL) {
		if ((*f = malloc(footlen / 4 * 3 + 3)) == NULL)
			return TOKEN_E_NOMEM;
		if (b64url_decode(
		        *f, footlen / 4 * 3 + 3, flen, foot, footlen) != 0)
			return TOKEN_E_BASE64;
		if (*flen > PASETO_MAX_FOOTER)
			return TOKEN_E_TOO_LARGE;
	}
	return 0;
}

int
paseto_v4_verify(const uint8_t pk[32], const char *tok, size_t tlen,
    const uint8_t *i, size_t ilen, uint8_t **m, size_t *mlen)
{
	uint8_t *raw, *f, *pa = NULL;
	size_t rawlen = 0, flen, palen, plen;
	int rc;

	*m = NULL;
	*mlen = 0;
	if ((rc = decode_body(tok, tlen, &raw, &rawlen, &f, &flen)) != 0)
		goto out;
	plen = rawlen - SIG_LEN;
	if ((pa = pae(raw, plen, f, flen, i, ilen, &palen)) == NULL) {
		rc = TOKEN_E_NOMEM;
		goto out;
	}
	if (crypto_sign_verify_detached(raw + plen, pa, palen, pk) != 0) {
		rc = TOKEN_E_SIGNATURE;
		goto out;
	}
	raw[plen] = '\0'; /* over the first signature byte; not needed now */
	*m = raw;
	*mlen = plen;
	raw = NULL;
out:
	free(raw);
	free(f);
	free(pa);
	return rc;
}

int
paseto_v4_payload_unverified(
    const char *tok, size_t tlen, uint8_t **m, size_t *mlen)
{
	uint8_t *raw, *f;
	size_t rawlen = 0, flen;
	int rc;

	*m = NULL;
	rc = decode_body(tok, tlen, &raw, &rawlen, &f, &flen);
	free(f);
	if (rc != 0) {
		free(raw);
		return rc;
	}
	raw[rawlen - SIG_LEN] = '\0';
	*m = raw;
	*mlen = rawlen - SIG_LEN;
	return 0;
}

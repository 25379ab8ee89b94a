/*
 * PASETO v4.public: Ed25519 over PAE("v4.public.", m, f, i).
 *   token = "v4.public." b64url(m || sig) [ "." b64url(f) ]
 * Strict: exactly this header, canonical unpadded base64url, no empty
 * footer section. The footer is authenticated but returned only after the
 * signature verifies; paseto_v4_footer() reads it beforehand, untrusted,
 * for key selection only.
 */
#ifndef KEEP_TOKEN_PASETO_H
#define KEEP_TOKEN_PASETO_H

#include <stddef.h>
#include <stdint.h>

#define PASETO_MAX_TOKEN 8192
#define PASETO_MAX_FOOTER 512

/* Sign. *out is a malloc'ed NUL-terminated token. Returns 0 or TOKEN_E_*. */
int paseto_v4_sign(const uint8_t sk[64], const uint8_t *m, size_t mlen,
    const uint8_t *f, size_t flen, const uint8_t *i, size_t ilen, char **out);

/*
 * Verify tok (tlen bytes) under pk with implicit assertion i. On success
 * *m is a malloc'ed copy of the payload (NUL-terminated; *mlen excludes
 * the NUL). Returns 0 or TOKEN_E_*.
 */
int paseto_v4_verify(const uint8_t pk[32], const char *tok, size_t tlen,
    const uint8_t *i, size_t ilen, uint8_t **m, size_t *mlen);

/* Decode the (unauthenticated) footer into buf (NUL-terminated). *flen is
 * 0 when the token has none. Returns 0 or TOKEN_E_*. */
int paseto_v4_footer(
    const char *tok, size_t tlen, char *buf, size_t buflen, size_t *flen);

/* Decode the (unauthenticated) payload, for `keep token inspect`. */
int paseto_v4_payload_unverified(
    const char *tok, size_t tlen, uint8_t **m, size_t *mlen);

#endif

/*
 * PASERK k4 key serialization for Ed25519 keys (libsodium layout):
 *   k4.public.<base64url(32-byte public key)>
 *   k4.secret.<base64url(64-byte seed || public key)>
 *   k4.pid.<base64url(BLAKE2b-264("k4.pid." || <k4.public string>))>
 * base64url is unpadded and strict: padding, non-alphabet bytes and
 * non-canonical trailing bits are refused.
 *
 * All functions return 0 or a TOKEN_E_* code (token/token_err.h).
 */
#ifndef KEEP_TOKEN_PASERK_H
#define KEEP_TOKEN_PASERK_H

#include <stddef.h>
#include <stdint.h>

#define PASERK_PUBLIC_LEN 53 /* "k4.public." + 43 */
#define PASERK_SECRET_LEN 96 /* "k4.secret." + 86 */
#define PASERK_PID_LEN 51 /* "k4.pid." + 44 */

/* out receives the text and a NUL: at least the length above plus one. */
int paserk_public_encode(char *out, size_t outlen, const uint8_t pk[32]);
int paserk_secret_encode(char *out, size_t outlen, const uint8_t sk[64]);
int paserk_pid(char *out, size_t outlen, const uint8_t pk[32]);

/* Decode exactly len bytes. The secret decoder also checks that the
 * public half is the one the seed derives (TOKEN_E_KEY otherwise). */
int paserk_public_decode(uint8_t pk[32], const char *s, size_t len);
int paserk_secret_decode(uint8_t sk[64], const char *s, size_t len);

/*
 * Load a key given as PASERK text or as the path of a file holding it
 * (one line; surrounding white space ignored). Text is recognized by its
 * "k4." prefix. A secret key file must not be readable by group or
 * others (TOKEN_E_KEYFILE).
 */
int paserk_load_public(const char *arg, uint8_t pk[32]);
int paserk_load_secret(const char *arg, uint8_t sk[64]);

/* Strict unpadded base64url. Encode writes a NUL; returns the length.
 * Decode returns 0 and the decoded length in *outlen, or -1. */
size_t b64url_encoded_len(size_t binlen);
size_t b64url_encode(
    char *out, size_t outlen, const uint8_t *bin, size_t binlen);
int b64url_decode(
    uint8_t *out, size_t outmax, size_t *outlen, const char *s, size_t len);

#endif

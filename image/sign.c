/*
 * Image signatures: Ed25519ph (libsodium's multi-part API, so a large
 * image is hashed as it is read) over
 *     "keep image v1\0" || kid[52] || body
 * where kid is the signer's k4.pid, zero padded. Binding the kid means a
 * trailer cannot be relabelled to name another key.
 */
#include <sodium.h>
#include <string.h>

#include "image/format.h"
#include "image/image.h"
#include "image/image_int.h"
#include "token/paserk.h"

static void
sig_state(crypto_sign_state *st, const char kid[IMAGE_KID_MAX],
    const uint8_t *body, size_t len)
{
	crypto_sign_init(st);
	crypto_sign_update(
	    st, (const uint8_t *)IMG_SIG_CONTEXT, sizeof(IMG_SIG_CONTEXT));
	crypto_sign_update(st, (const uint8_t *)kid, IMAGE_KID_MAX);
	crypto_sign_update(st, body, len);
}

int
image_sign(const uint8_t *body, size_t len, const uint8_t sk[64],
    uint8_t trailer[IMAGE_TRAILER_LEN])
{
	crypto_sign_state st;
	char kid[IMAGE_KID_MAX];

	if (sodium_init() < 0)
		return IMAGE_E_NOMEM;
	memset(trailer, 0, IMAGE_TRAILER_LEN);
	memset(kid, 0, sizeof(kid));
	paserk_pid(kid, sizeof(kid), sk + 32);
	memcpy(trailer, IMG_SIG_MAGIC, 8);
	memcpy(trailer + IMG_T_KID, kid, IMAGE_KID_MAX);
	sig_state(&st, kid, body, len);
	crypto_sign_final_create(&st, trailer + IMG_T_SIG, NULL, sk);
	return 0;
}

int
image_verify(const struct image *img, const uint8_t (*keys)[32], size_t nkeys,
    char *kid, char *err, size_t errlen)
{
	const uint8_t *sig;
	crypto_sign_state st;

	if (!img->signed_)
		return image_fail(err, errlen, IMAGE_E_UNSIGNED,
		    "image %s is not signed", img->name);
	sig = img->base + img->body_len + IMG_T_SIG;
	for (size_t i = 0; i < nkeys; i++) {
		char pid[IMAGE_KID_MAX];

		memset(pid, 0, sizeof(pid));
		paserk_pid(pid, sizeof(pid), keys[i]);
		if (memcmp(pid, img->kid, IMAGE_KID_MAX) != 0)
			continue;
		sig_state(&st, pid, img->base,
		    img->deferred ? img->manifest_len : img->body_len);
		if (crypto_sign_final_verify(&st, sig, keys[i]) != 0)
			return image_fail(err, errlen, IMAGE_E_SIGNATURE,
			    "image %s: signature by %s does not verify",
			    img->name, pid);
		if (kid != NULL)
			memcpy(kid, pid, IMAGE_KID_MAX);
		return 0;
	}
	return image_fail(err, errlen, IMAGE_E_UNTRUSTED,
	    "image %s is signed by %.*s, which is not trusted", img->name,
	    IMAGE_KID_MAX, img->kid);
}

static int
open_trusted(int keep_fd, const char *path, const uint8_t (*keys)[32],
    size_t nkeys, struct image **out, char *err, size_t errlen)
{
	int rc;

	if ((rc = keep_fd ? image_open_fd(path, out, err, errlen)
	                  : image_open(path, out, err, errlen)) != 0)
		return rc;
	if ((rc = image_verify(*out, keys, nkeys, NULL, err, errlen)) != 0) {
		image_close(*out);
		*out = NULL;
	}
	return rc;
}

int
image_open_trusted(const char *path, const uint8_t (*keys)[32], size_t nkeys,
    struct image **out, char *err, size_t errlen)
{
	return open_trusted(0, path, keys, nkeys, out, err, errlen);
}

int
image_open_trusted_fd(const char *path, const uint8_t (*keys)[32], size_t nkeys,
    struct image **out, char *err, size_t errlen)
{
	return open_trusted(1, path, keys, nkeys, out, err, errlen);
}

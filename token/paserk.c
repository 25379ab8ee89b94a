#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include "token/paserk.h"
#include "token/token_err.h"

static const char pfx_public[] = "k4.public.";
static const char pfx_secret[] = "k4.secret.";
static const char pfx_pid[] = "k4.pid.";

static int
encode_with(char *out, size_t outlen, const char *pfx, const uint8_t *bin,
    size_t binlen)
{
	size_t pl = strlen(pfx);

	if (outlen < pl + b64url_encoded_len(binlen) + 1)
		return TOKEN_E_INVAL;
	memcpy(out, pfx, pl);
	b64url_encode(out + pl, outlen - pl, bin, binlen);
	return 0;
}

static int
decode_with(
    uint8_t *bin, size_t binlen, const char *pfx, const char *s, size_t len)
{
	size_t pl = strlen(pfx), got;

	if (len < 3 || memcmp(s, "k4.", 3) != 0)
		return TOKEN_E_VERSION;
	if (len < pl || memcmp(s, pfx, pl) != 0)
		return TOKEN_E_KEY;
	if (len - pl != b64url_encoded_len(binlen))
		return TOKEN_E_KEY;
	if (b64url_decode(bin, binlen, &got, s + pl, len - pl) != 0)
		return TOKEN_E_BASE64;
	return got == binlen ? 0 : TOKEN_E_KEY;
}

int
paserk_public_encode(char *out, size_t outlen, const uint8_t pk[32])
{
	return encode_with(out, outlen, pfx_public, pk, 32);
}

int
paserk_secret_encode(char *out, size_t outlen, const uint8_t sk[64])
{
	return encode_with(out, outlen, pfx_secret, sk, 64);
}

int
paserk_pid(char *out, size_t outlen, const uint8_t pk[32])
{
	char pub[PASERK_PUBLIC_LEN + 1];
	uint8_t h[33];
	crypto_generichash_state st;

	paserk_public_encode(pub, sizeof(pub), pk);
	crypto_generichash_init(&st, NULL, 0, sizeof(h));
	crypto_generichash_update(
	    &st, (const uint8_t *)pfx_pid, strlen(pfx_pid));
	crypto_generichash_update(&st, (const uint8_t *)pub, strlen(pub));
	crypto_generichash_final(&st, h, sizeof(h));
	return encode_with(out, outlen, pfx_pid, h, sizeof(h));
}

int
paserk_public_decode(uint8_t pk[32], const char *s, size_t len)
{
	return decode_with(pk, 32, pfx_public, s, len);
}

int
paserk_secret_decode(uint8_t sk[64], const char *s, size_t len)
{
	uint8_t pk[32], derived[64];
	int rc;

	if ((rc = decode_with(sk, 64, pfx_secret, s, len)) != 0)
		return rc;
	/* The public half must be the one the seed makes, or signatures
	 * would verify under a key other than the one advertised. */
	crypto_sign_seed_keypair(pk, derived, sk);
	rc = sodium_memcmp(pk, sk + 32, 32) == 0 ? 0 : TOKEN_E_KEY;
	sodium_memzero(derived, sizeof(derived));
	if (rc != 0)
		sodium_memzero(sk, 64);
	return rc;
}

/* Read the key text from arg or from the file it names; trims blanks. */
static int
key_text(const char *arg, int secret, char *buf, size_t buflen, size_t *len)
{
	const char *s = arg;
	size_t n;

	if (strncmp(arg, "k4.", 3) != 0) {
		struct stat sb;
		ssize_t r;
		int fd = open(arg, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);

		if (fd == -1)
			return TOKEN_E_KEYFILE;
		if (fstat(fd, &sb) == -1 || !S_ISREG(sb.st_mode) ||
		    (secret && (sb.st_mode & 077) != 0)) {
			close(fd);
			return TOKEN_E_KEYFILE;
		}
		r = read(fd, buf, buflen - 1);
		close(fd);
		if (r < 0)
			return TOKEN_E_KEYFILE;
		buf[r] = '\0';
		s = buf;
	}
	while (*s != '\0' && isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		n--;
	if (n >= buflen)
		return TOKEN_E_KEY;
	memmove(buf, s, n);
	buf[n] = '\0';
	*len = n;
	return 0;
}

int
paserk_load_public(const char *arg, uint8_t pk[32])
{
	char buf[256];
	size_t len;
	int rc;

	if ((rc = key_text(arg, 0, buf, sizeof(buf), &len)) != 0)
		return rc;
	return paserk_public_decode(pk, buf, len);
}

int
paserk_load_secret(const char *arg, uint8_t sk[64])
{
	char buf[256];
	size_t len;
	int rc;

	if ((rc = key_text(arg, 1, buf, sizeof(buf), &len)) != 0)
		return rc;
	rc = paserk_secret_decode(sk, buf, len);
	sodium_memzero(buf, sizeof(buf));
	return rc;
}

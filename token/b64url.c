/*
 * Strict unpadded base64url on libsodium. libsodium's decoder already
 * refuses non-canonical trailing bits and, for the no-padding variant,
 * any '='; we add the length rule it leaves to the caller (a remainder of
 * one character cannot encode a byte).
 */
#include <sodium.h>

#include "token/paserk.h"

size_t
b64url_encoded_len(size_t binlen)
{
	return (binlen / 3) * 4 + ((binlen % 3) ? (binlen % 3) + 1 : 0);
}

size_t
b64url_encode(char *out, size_t outlen, const uint8_t *bin, size_t binlen)
{
	size_t need = b64url_encoded_len(binlen);

	if (outlen < need + 1)
		return 0;
	sodium_bin2base64(out, need + 1, bin, binlen,
	    sodium_base64_VARIANT_URLSAFE_NO_PADDING);
	return need;
}

int
b64url_decode(
    uint8_t *out, size_t outmax, size_t *outlen, const char *s, size_t len)
{
	const char *end;

	if (len % 4 == 1)
		return -1;
	if (sodium_base642bin(out, outmax, s, len, NULL, outlen, &end,
	        sodium_base64_VARIANT_URLSAFE_NO_PADDING) != 0)
		return -1;
	if (end != s + len)
		return -1;
	return 0;
}

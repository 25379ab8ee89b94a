/* Error codes of token/: a range that cannot collide with errno. */
#ifndef KEEP_TOKEN_ERR_H
#define KEEP_TOKEN_ERR_H

enum token_err {
	TOKEN_OK = 0,
	TOKEN_E_FORMAT = -30900, /* not a v4.public token: shape */
	TOKEN_E_VERSION, /* another version or purpose */
	TOKEN_E_BASE64, /* non-canonical or invalid base64url */
	TOKEN_E_SIGNATURE, /* signature does not verify */
	TOKEN_E_TOO_LARGE, /* token, payload or footer over a limit */
	TOKEN_E_FOOTER, /* footer is not the JSON keep expects */
	TOKEN_E_KID, /* no trusted key for the footer's kid */
	TOKEN_E_JSON, /* payload is not strict JSON */
	TOKEN_E_CLAIM, /* a claim is missing or of the wrong type */
	TOKEN_E_EXPIRED, /* exp is in the past */
	TOKEN_E_NOT_YET, /* nbf or iat is in the future */
	TOKEN_E_LIFETIME, /* exp - iat above the configured maximum */
	TOKEN_E_AUDIENCE, /* aud is not this service */
	TOKEN_E_CAP, /* an unknown capability */
	TOKEN_E_REVOKED, /* jti is revoked */
	TOKEN_E_WIDER, /* attenuation asked for more than held */
	TOKEN_E_KEY, /* a key of the wrong length or version */
	TOKEN_E_KEYFILE, /* a key file unreadable or too open */
	TOKEN_E_NOMEM,
	TOKEN_E_INVAL, /* a caller's argument is out of range */
	TOKEN_E_REVOCATION_UNKNOWN, /* whether jti is revoked cannot be told now */
};

const char *token_strerror(int err);

#endif

/* Claims: strict JSON in and out, RFC 3339 times, attenuation. */
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "token/paseto.h"
#include "token/token.h"

#define CLAIMS_MAX_KEYS 32
#define CLAIMS_MAX_DEPTH 4
#define CLAIMS_MAX_LEN 4096

static int
digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int k = 0; k < n; k++) {
		if (s[k] < '0' || s[k] > '9')
			return -1;
		*v = *v * 10 + (s[k] - '0');
	}
	return 0;
}

int
token_time_parse(const char *s, size_t len, int64_t *t)
{
	int Y, M, D, h, m, sec, oh = 0, om = 0, sign = 0;
	size_t p = 19;
	struct tm tm;
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30,
		31 };

	if (len < 20 || len > 40)
		return -1;
	if (digits(s, 4, &Y) || s[4] != '-' || digits(s + 5, 2, &M) ||
	    s[7] != '-' || digits(s + 8, 2, &D) || (s[10] != 'T') ||
	    digits(s + 11, 2, &h) || s[13] != ':' || digits(s + 14, 2, &m) ||
	    s[16] != ':' || digits(s + 17, 2, &sec))
		return -1;
	if (M < 1 || M > 12 || D < 1 || D > mdays[M - 1] || h > 23 || m > 59 ||
	    sec > 60 || Y < 1970)
		return -1;
	if (s[p] == '.') { /* fractional seconds: ignored, at least one digit */
		p++;
		size_t start = p;
		while (p < len && s[p] >= '0' && s[p] <= '9')
			p++;
		if (p == start || p - start > 9)
			return -1;
	}
	if (p < len && s[p] == 'Z' && p + 1 == len) {
		sign = 0;
	} else if (p + 6 == len && (s[p] == '+' || s[p] == '-') &&
	    digits(s + p + 1, 2, &oh) == 0 && s[p + 3] == ':' &&
	    digits(s + p + 4, 2, &om) == 0 && oh <= 23 && om <= 59) {
		sign = s[p] == '+' ? 1 : -1;
	} else {
		return -1;
	}
	memset(&tm, 0, sizeof(tm));
	tm.tm_year = Y - 1900;
	tm.tm_mon = M - 1;
	tm.tm_mday = D;
	tm.tm_hour = h;
	tm.tm_min = m;
	tm.tm_sec = sec;
	*t = (int64_t)timegm(&tm) - sign * (oh * 3600 + om * 60);
	return 0;
}

void
token_time_format(char out[21], int64_t t)
{
	struct tm tm;
	time_t tt = (time_t)t;

	gmtime_r(&tt, &tm);
	strftime(out, 21, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

void
token_new_jti(char out[TOKEN_STR_MAX])
{
	uint8_t r[16];

	randombytes_buf(r, sizeof(r));
	b64url_encode(out, TOKEN_STR_MAX, r, sizeof(r));
}

static int
depth_ok(json_t *j, int depth, size_t *keys)
{
	const char *k;
	json_t *v;
	size_t i;

	if (depth > CLAIMS_MAX_DEPTH)
		return 0;
	if (json_is_object(j)) {
		*keys += json_object_size(j);
		if (*keys > CLAIMS_MAX_KEYS)
			return 0;
		json_object_foreach(
		    j, k, v) if (!depth_ok(v, depth + 1, keys)) return 0;
	} else if (json_is_array(j)) {
		if (json_array_size(j) > CAP_COUNT * 2)
			return 0;
		json_array_foreach(
		    j, i, v) if (!depth_ok(v, depth + 1, keys)) return 0;
	}
	return 1;
}

static int
get_str(json_t *o, const char *key, char out[TOKEN_STR_MAX], int required)
{
	json_t *v = json_object_get(o, key);
	size_t n;

	out[0] = '\0';
	if (v == NULL)
		return required ? TOKEN_E_CLAIM : 0;
	if (!json_is_string(v))
		return TOKEN_E_CLAIM;
	n = json_string_length(v);
	if (n >= TOKEN_STR_MAX || memchr(json_string_value(v), '\0', n))
		return TOKEN_E_CLAIM;
	memcpy(out, json_string_value(v), n + 1);
	return 0;
}

/* The optional "pjti": an array of 1..TOKEN_CHAIN_MAX non-empty jtis. */
static int
get_chain(json_t *o, struct token_claims *c)
{
	json_t *a = json_object_get(o, "pjti"), *v;
	size_t i, n;

	c->nchain = 0;
	if (a == NULL)
		return 0;
	if (!json_is_array(a) || json_array_size(a) == 0 ||
	    json_array_size(a) > TOKEN_CHAIN_MAX)
		return TOKEN_E_CLAIM;
	json_array_foreach(a, i, v)
	{
		if (!json_is_string(v) || (n = json_string_length(v)) == 0 ||
		    n >= TOKEN_JTI_MAX ||
		    memchr(json_string_value(v), '\0', n) != NULL)
			return TOKEN_E_CLAIM;
		memcpy(c->chain[i], json_string_value(v), n + 1);
	}
	c->nchain = json_array_size(a);
	return 0;
}

static int
get_time(json_t *o, const char *key, int64_t *t, int required)
{
	json_t *v = json_object_get(o, key);

	*t = 0;
	if (v == NULL)
		return required ? TOKEN_E_CLAIM : 0;
	if (!json_is_string(v) ||
	    token_time_parse(json_string_value(v), json_string_length(v), t))
		return TOKEN_E_CLAIM;
	return 0;
}

int
token_claims_parse(const uint8_t *json, size_t len, struct token_claims *c)
{
	json_error_t jerr;
	json_t *o, *caps, *v;
	size_t keys = 0, i;
	int rc;

	memset(c, 0, sizeof(*c));
	if (len > CLAIMS_MAX_LEN)
		return TOKEN_E_TOO_LARGE;
	o = json_loadb((const char *)json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL)
		return TOKEN_E_JSON;
	if (!json_is_object(o) || !depth_ok(o, 1, &keys)) {
		rc = TOKEN_E_JSON;
		goto out;
	}
	if ((rc = get_str(o, "iss", c->iss, 0)) ||
	    (rc = get_str(o, "sub", c->sub, 1)) ||
	    (rc = get_str(o, "aud", c->aud, 1)) ||
	    (rc = get_str(o, "jti", c->jti, 1)) ||
	    (rc = get_str(o, "sbx", c->sbx, 0)) ||
	    (rc = get_time(o, "exp", &c->exp, 1)) ||
	    (rc = get_time(o, "iat", &c->iat, 0)) ||
	    (rc = get_time(o, "nbf", &c->nbf, 0)))
		goto out;
	if (c->sub[0] == '\0' || c->jti[0] == '\0') {
		rc = TOKEN_E_CLAIM;
		goto out;
	}
	if ((rc = get_chain(o, c)) != 0)
		goto out;
	if ((v = json_object_get(o, "port")) != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 1 ||
		    json_integer_value(v) > 65535 || c->sbx[0] == '\0') {
			rc = TOKEN_E_CLAIM;
			goto out;
		}
		c->port = (uint32_t)json_integer_value(v);
	}
	if ((caps = json_object_get(o, "caps")) == NULL ||
	    !json_is_array(caps)) {
		rc = TOKEN_E_CLAIM;
		goto out;
	}
	json_array_foreach(caps, i, v)
	{
		int id;

		if (!json_is_string(v)) {
			rc = TOKEN_E_CLAIM;
			goto out;
		}
		id = cap_lookup(json_string_value(v), json_string_length(v));
		if (id < 0) {
			rc = TOKEN_E_CAP;
			goto out;
		}
		if (c->caps & CAP_BIT(id)) { /* listed twice: not canonical */
			rc = TOKEN_E_CLAIM;
			goto out;
		}
		c->caps |= CAP_BIT(id);
	}
	rc = 0;
out:
	json_decref(o);
	return rc;
}

int
token_claims_check(const struct token_claims *c, int64_t now, int64_t skew,
    int64_t max_lifetime, const char *audience)
{
	if (audience != NULL && strcmp(c->aud, audience) != 0)
		return TOKEN_E_AUDIENCE;
	if (c->exp <= now - skew)
		return TOKEN_E_EXPIRED;
	if (c->nbf != 0 && c->nbf > now + skew)
		return TOKEN_E_NOT_YET;
	if (c->iat != 0 && c->iat > now + skew)
		return TOKEN_E_NOT_YET;
	if (max_lifetime > 0) {
		/* Without iat the lifetime counts from now. */
		int64_t start = c->iat != 0 ? c->iat : now;
		if (c->exp - start > max_lifetime)
			return TOKEN_E_LIFETIME;
	}
	return 0;
}

int
token_claims_encode(const struct token_claims *c, char **out)
{
	json_t *o = json_object(), *caps = json_array();
	char t[21];
	int rc = TOKEN_E_NOMEM;

	*out = NULL;
	if (o == NULL || caps == NULL)
		goto out;
	if (c->iss[0])
		json_object_set_new(o, "iss", json_string(c->iss));
	json_object_set_new(o, "sub", json_string(c->sub));
	json_object_set_new(o, "aud", json_string(c->aud));
	if (c->iat) {
		token_time_format(t, c->iat);
		json_object_set_new(o, "iat", json_string(t));
	}
	if (c->nbf) {
		token_time_format(t, c->nbf);
		json_object_set_new(o, "nbf", json_string(t));
	}
	token_time_format(t, c->exp);
	json_object_set_new(o, "exp", json_string(t));
	json_object_set_new(o, "jti", json_string(c->jti));
	for (int i = 0; i < CAP_COUNT; i++)
		if (c->caps & CAP_BIT(i))
			json_array_append_new(caps, json_string(cap_name(i)));
	json_object_set(o, "caps", caps);
	if (c->sbx[0])
		json_object_set_new(o, "sbx", json_string(c->sbx));
	if (c->port != 0)
		json_object_set_new(o, "port", json_integer(c->port));
	if (c->nchain > 0) {
		json_t *chain = json_array();

		if (chain == NULL || c->nchain > TOKEN_CHAIN_MAX) {
			json_decref(chain);
			goto out;
		}
		for (size_t i = 0; i < c->nchain; i++)
			json_array_append_new(chain, json_string(c->chain[i]));
		json_object_set_new(o, "pjti", chain);
	}
	if ((*out = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER)) != NULL)
		rc = 0;
out:
	json_decref(caps);
	json_decref(o);
	return rc;
}

int
token_mint(const uint8_t sk[64], const struct token_claims *c, char **token)
{
	char *json, footer[PASERK_PID_LEN + 16], pid[PASERK_PID_LEN + 1];
	int rc;

	*token = NULL;
	if (c->sub[0] == '\0' || c->jti[0] == '\0' || c->exp == 0)
		return TOKEN_E_CLAIM;
	if ((rc = token_claims_encode(c, &json)) != 0)
		return rc;
	paserk_pid(pid, sizeof(pid), sk + 32);
	snprintf(footer, sizeof(footer), "{\"kid\":\"%s\"}", pid);
	rc = paseto_v4_sign(sk, (const uint8_t *)json, strlen(json),
	    (const uint8_t *)footer, strlen(footer), NULL, 0, token);
	free(json);
	return rc;
}

int
token_attenuate(const struct token_claims *parent, cap_set_t caps, int64_t exp,
    const char *sbx, int64_t now, struct token_claims *child)
{
	if ((caps & ~parent->caps) != 0 || (caps & ~CAP_ALL) != 0)
		return TOKEN_E_WIDER;
	if (exp != 0 && exp > parent->exp)
		return TOKEN_E_WIDER;
	if (sbx != NULL && sbx[0] != '\0' && parent->sbx[0] != '\0' &&
	    strcmp(sbx, parent->sbx) != 0)
		return TOKEN_E_WIDER;
	if (sbx != NULL && strlen(sbx) >= TOKEN_STR_MAX)
		return TOKEN_E_INVAL;
	if (parent->nchain >= TOKEN_CHAIN_MAX ||
	    strlen(parent->jti) >= TOKEN_JTI_MAX)
		return TOKEN_E_INVAL;
	*child = *parent;
	strlcpy(child->chain[child->nchain++], parent->jti, TOKEN_JTI_MAX);
	child->caps = caps;
	child->exp = exp != 0 ? exp : parent->exp;
	if (sbx != NULL && sbx[0] != '\0')
		strlcpy(child->sbx, sbx, sizeof(child->sbx));
	child->iat = now;
	child->nbf = 0;
	token_new_jti(child->jti);
	return 0;
}

/*
 * Token revocation, checked on every request without a round trip: the
 * front is the only process that revokes (POST /v1/tokens/revoke, which
 * writes to the store first), so it keeps the set of revoked jtis itself,
 * read from the store when it starts. Until that read succeeds, and when
 * the set is full, each check asks the store; a check that cannot be
 * answered refuses the token (fail closed).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/front/front_backend_int.h"
#include "host/store/store.h"
#include "host/store/store_wire.h"
#include "lib/log.h"

#define REVOKED_SLOTS 4096 /* a power of two; then the store is asked */
#define JTI_MAX 65

struct fb_revoked {
	int loaded;
	size_t n;
	/* SipHash's key: jtis come from token issuers, and a keyed hash
	 * keeps chosen ones from piling into one run of slots. */
	uint8_t key[crypto_shorthash_KEYBYTES];
	struct revoked_slot {
		char jti[JTI_MAX]; /* "" : empty */
		int64_t exp_s;
	} slot[REVOKED_SLOTS];
};

static size_t
slot_of(const struct fb_revoked *rv, const char *jti)
{
	uint8_t h[crypto_shorthash_BYTES];
	uint64_t v;

	crypto_shorthash(h, (const uint8_t *)jti, strlen(jti), rv->key);
	memcpy(&v, h, sizeof(v));
	return (size_t)(v & (REVOKED_SLOTS - 1));
}

/* Returns 0, or -1 when the set is full (expired entries are reused). */
static int
set_add(struct fb_revoked *rv, const char *jti, int64_t exp_s)
{
	int64_t now = (int64_t)time(NULL);
	size_t i, k, first;

	if (strlen(jti) >= JTI_MAX)
		return -1;
	for (i = 0, first = slot_of(rv, jti); i < REVOKED_SLOTS; i++) {
		k = (first + i) & (REVOKED_SLOTS - 1);
		if (strcmp(rv->slot[k].jti, jti) == 0 ||
		    rv->slot[k].jti[0] == '\0' || rv->slot[k].exp_s < now) {
			if (rv->slot[k].jti[0] == '\0')
				rv->n++;
			strlcpy(rv->slot[k].jti, jti, sizeof(rv->slot[k].jti));
			rv->slot[k].exp_s = exp_s;
			return 0;
		}
	}
	return -1;
}

/* 1 revoked, 0 not. Slots are never emptied, so a probe ends at the
 * first empty one. */
static int
set_has(const struct fb_revoked *rv, const char *jti)
{
	size_t i, k, first;

	for (i = 0, first = slot_of(rv, jti); i < REVOKED_SLOTS; i++) {
		k = (first + i) & (REVOKED_SLOTS - 1);
		if (rv->slot[k].jti[0] == '\0')
			return 0;
		if (strcmp(rv->slot[k].jti, jti) == 0)
			return 1;
	}
	return 0;
}

/* Read every revocation from the store. */
static int
load(struct front_backend *fb, struct fb_revoked *rv)
{
	struct store_wire_reply hdr;
	struct api_error err;
	char cursor[STORE_CURSOR_MAX] = "", next[STORE_CURSOR_MAX];
	void *q, *reply;
	size_t qlen, rlen;
	uint32_t i;

	memset(&err, 0, sizeof(err));
	do {
		if (store_wire_key_encode(MSG_STORE_LIST, STORE_DB_REVOCATIONS,
		        NULL, cursor[0] != '\0' ? cursor : NULL,
		        STORE_WIRE_MAX_LIST, NULL, &q, &qlen) != STORE_OK)
			return -1;
		if (fb_store_call(fb, 0, MSG_STORE_LIST, q, qlen, &reply, &rlen,
		        &hdr, next, &err) != API_OK) {
			free(q);
			return -1;
		}
		free(q);
		if (hdr.status != STORE_OK) {
			free(reply);
			return -1;
		}
		for (i = 0; i < hdr.count; i++) {
			struct store_revocation v;
			const void *rec;
			size_t reclen;

			if (store_wire_reply_record(
			        reply, rlen, i, &rec, &reclen) != STORE_OK ||
			    store_revocation_decode(rec, reclen, &v) !=
			        STORE_OK ||
			    set_add(rv, v.jti, v.exp_s) != 0) {
				free(reply);
				return -1;
			}
		}
		free(reply);
		strlcpy(cursor, next, sizeof(cursor));
	} while (cursor[0] != '\0');
	log_info("%zu token revocation(s) in force", rv->n);
	return 0;
}

/* Ask the store about one jti: the slow path. */
static int
ask(struct front_backend *fb, const char *jti)
{
	struct store_wire_reply hdr;
	struct api_error err;
	char next[STORE_CURSOR_MAX];
	void *q = NULL, *reply = NULL;
	size_t qlen, rlen;
	int revoked = -1; /* unknown: refused, to be retried */

	if (store_wire_key_encode(MSG_STORE_REVOKED, STORE_DB_REVOCATIONS, jti,
	        NULL, 0, NULL, &q, &qlen) != STORE_OK)
		return -1;
	memset(&err, 0, sizeof(err));
	if (fb_store_call(fb, 0, MSG_STORE_REVOKED, q, qlen, &reply, &rlen,
	        &hdr, next, &err) == API_OK &&
	    hdr.status == STORE_OK)
		revoked = hdr.value != 0;
	else
		log_warnx("revocation of %s unknown (%s): refused", jti,
		    err.message[0] != '\0' ? err.message : "store error");
	free(q);
	free(reply);
	return revoked;
}

int
fb_revoked(void *arg, const char *jti)
{
	struct front_backend *fb = arg;
	struct fb_revoked *rv = fb->revoked;

	if (jti[0] == '\0')
		return 0;
	if (rv == NULL && (rv = fb->revoked = calloc(1, sizeof(*rv))) == NULL)
		return ask(fb, jti);
	if (!rv->loaded) {
		memset(rv, 0, sizeof(*rv));
		randombytes_buf(rv->key, sizeof(rv->key));
		if (load(fb, rv) != 0) {
			memset(rv, 0, sizeof(*rv));
			return ask(fb, jti);
		}
		rv->loaded = 1;
	}
	return set_has(rv, jti);
}

void
fb_revoked_add(struct front_backend *fb, const char *jti, int64_t exp_s)
{
	struct fb_revoked *rv = fb->revoked;

	/* A full set is no longer the whole truth: ask the store again. */
	if (rv != NULL && rv->loaded && set_add(rv, jti, exp_s) != 0)
		rv->loaded = 0;
}

void
fb_revoked_free(struct front_backend *fb)
{
	free(fb->revoked);
	fb->revoked = NULL;
}

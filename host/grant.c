/*
 * Grant minting and verification (host/grant.h). Pure apart from
 * randombytes for the nonce and the clock in grant_now_ms.
 */
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "host/grant.h"
#include "lib/caps.h"

_Static_assert(GRANT_KEY_BYTES == crypto_auth_KEYBYTES, "key size");
_Static_assert(GRANT_MAC_BYTES == crypto_auth_BYTES, "mac size");

#define GRANT_SIGNED_BYTES offsetof(struct grant, mac)

const char *
grant_strerror(int err)
{
	switch (err) {
	case GRANT_OK:
		return "ok";
	case GRANT_ERR_SIZE:
		return "grant has the wrong size";
	case GRANT_ERR_VERSION:
		return "unknown grant version";
	case GRANT_ERR_LINK:
		return "grant minted for another link";
	case GRANT_ERR_MAC:
		return "grant MAC does not verify";
	case GRANT_ERR_EXPIRED:
		return "grant expired";
	case GRANT_ERR_REQID:
		return "grant minted for another request";
	case GRANT_ERR_FIELD:
		return "grant field out of range";
	case GRANT_ERR_DENIED:
		return "grant denies the request";
	case GRANT_ERR_TARGET:
		return "grant is for another capability or target";
	case GRANT_ERR_ARG:
		return "bad argument";
	}
	return "unknown error";
}

void
grant_target_hash(const void *target, size_t len, uint8_t out[GRANT_HASH_BYTES])
{
	crypto_generichash(out, GRANT_HASH_BYTES, target, len, NULL, 0);
}

uint64_t
grant_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Shared by mint and verify: the fields a well-formed grant must have. */
static int
grant_fields_ok(const struct grant *g)
{
	if (g->decision != GRANT_DENY && g->decision != GRANT_ALLOW)
		return 0;
	if (g->cap >= CAP_COUNT)
		return 0;
	if (g->link >= 32)
		return 0;
	if (memchr(g->principal, '\0', sizeof(g->principal)) == NULL)
		return 0;
	if (g->principal[0] == '\0')
		return 0;
	if (g->procs_max > GRANT_PROCS_MAX)
		return 0;
	return 1;
}

int
grant_mint(struct grant *g, const uint8_t key[GRANT_KEY_BYTES])
{
	size_t n;

	if (g == NULL || key == NULL || sodium_init() < 0)
		return GRANT_ERR_ARG;
	g->version = GRANT_VERSION;
	if (!grant_fields_ok(g))
		return GRANT_ERR_FIELD;
	/* NUL-pad the principal so the MAC covers no stale bytes. */
	n = strlen(g->principal);
	memset(g->principal + n, 0, sizeof(g->principal) - n);
	randombytes_buf(g->nonce, sizeof(g->nonce));
	crypto_auth(g->mac, (const unsigned char *)g, GRANT_SIGNED_BYTES, key);
	return GRANT_OK;
}

int
grant_verify(const void *buf, size_t len, uint32_t link,
    const uint8_t key[GRANT_KEY_BYTES], uint64_t now_ms, uint64_t reqid,
    struct grant *out)
{
	struct grant g;

	if (buf == NULL || key == NULL || out == NULL)
		return GRANT_ERR_ARG;
	if (len != sizeof(g))
		return GRANT_ERR_SIZE;
	memcpy(&g, buf, sizeof(g));
	/* The MAC first: nothing else in an unauthenticated grant is
	 * worth reporting. */
	if (crypto_auth_verify(
	        g.mac, (const unsigned char *)&g, GRANT_SIGNED_BYTES, key) != 0)
		return GRANT_ERR_MAC;
	if (g.version != GRANT_VERSION)
		return GRANT_ERR_VERSION;
	if (g.link != link)
		return GRANT_ERR_LINK;
	if (!grant_fields_ok(&g))
		return GRANT_ERR_FIELD;
	if (g.reqid != reqid)
		return GRANT_ERR_REQID;
	if (g.expires <= now_ms)
		return GRANT_ERR_EXPIRED;
	*out = g;
	if (g.decision != GRANT_ALLOW)
		return GRANT_ERR_DENIED;
	return GRANT_OK;
}

int
grant_check(const struct grant *g, uint32_t cap, const void *target, size_t len)
{
	uint8_t h[GRANT_HASH_BYTES];

	if (g->decision != GRANT_ALLOW)
		return GRANT_ERR_DENIED;
	grant_target_hash(target, len, h);
	if (g->cap != cap || sodium_memcmp(h, g->target, sizeof(h)) != 0)
		return GRANT_ERR_TARGET;
	return GRANT_OK;
}

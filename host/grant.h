/*
 * Grants: the proof that the policy process allowed one effect. Only the
 * policy process holds the keys to mint them; each verifying process (vmm,
 * store, egress, front) holds the key of its own link and checks a grant
 * before it acts.
 *
 * A grant is fixed-width and travels by value inside a message payload.
 * Its MAC is crypto_auth (HMAC-SHA-512-256) over every byte before `mac`,
 * keyed with the per-link key the parent generates at start with
 * randombytes, keeps only in memory and hands out over MSG_CTL_GRANT_KEY.
 * The link is the enum proc_id of the verifier, so a grant minted for the
 * store does not verify at the vmm even if it is replayed there.
 *
 * Error codes are GRANT_ERR_* (>= 2100); grant_strerror names them.
 */
#ifndef KEEP_HOST_GRANT_H
#define KEEP_HOST_GRANT_H

#include <stddef.h>
#include <stdint.h>

#define GRANT_VERSION 1
#define GRANT_KEY_BYTES 32 /* crypto_auth_KEYBYTES */
#define GRANT_MAC_BYTES 32 /* crypto_auth_BYTES */
#define GRANT_HASH_BYTES 32 /* BLAKE2b-256 */
#define GRANT_NONCE_BYTES 16
#define GRANT_PRINCIPAL_MAX 64 /* including the NUL */
#define GRANT_PROCS_MAX 1024 /* the policy language's bound */

enum grant_decision { GRANT_DENY = 0, GRANT_ALLOW = 1 };

struct grant {
	uint32_t version; /* GRANT_VERSION */
	uint32_t link; /* enum proc_id of the verifying process */
	uint32_t decision; /* enum grant_decision */
	uint32_t cap; /* enum cap_id (lib/caps.h) */
	char principal[GRANT_PRINCIPAL_MAX]; /* NUL-terminated, NUL-padded */
	uint8_t target[GRANT_HASH_BYTES]; /* BLAKE2b-256 of the target */
	uint64_t reqid; /* request it was minted for */
	uint64_t expires; /* CLOCK_REALTIME, ms since epoch */
	/* Limits that apply to the effect (0 = none given). */
	uint64_t mem_max; /* guest memory, bytes */
	uint64_t timeout_ms; /* per run */
	uint64_t output_max; /* bytes of output */
	/* For a create (sandbox:write): how many the principal may hold at
	 * once, this one included; 0 = no limit of its own. */
	uint32_t count_max;
	uint32_t procs_max; /* guest processes at once, <= GRANT_PROCS_MAX */
	uint32_t flags; /* GRANT_F_* */
	/* For a run (exec): bytes out and in of its connections through
	 * egress together (the policy's `egress bytes`), in KiB rounded
	 * up (a uint32 where the layout had room: up to 4 TiB); 0 = none. */
	uint32_t egress_kib;
	/* For a run: the principal's `egress budget`, the bytes of all its
	 * runs together (KiB, rounded up) refilled per egress_budget_s
	 * seconds; 0 = none. */
	uint32_t egress_budget_kib;
	uint32_t egress_budget_s;
	uint8_t nonce[GRANT_NONCE_BYTES];
	uint8_t mac[GRANT_MAC_BYTES];
};
/* flags: the run needs hardware isolation (the policy's isolation kvm);
 * the vmm refuses it on the trap platform. */
#define GRANT_F_KVM 0x1u
/* secret:read: an `egress ... inject` entry of the principal names this
 * secret, so its value never enters the guest: the run's variables get
 * a placeholder, and egress puts the value in (docs/egress.md). */
#define GRANT_F_SECRET_EGRESS 0x2u
_Static_assert(sizeof(struct grant) == 224, "grant is fixed-width");

enum grant_err {
	GRANT_OK = 0,
	GRANT_ERR_SIZE = 2100, /* not exactly sizeof(struct grant) bytes */
	GRANT_ERR_VERSION, /* unknown version */
	GRANT_ERR_LINK, /* minted for another link */
	GRANT_ERR_MAC, /* forged or tampered */
	GRANT_ERR_EXPIRED, /* expires <= now */
	GRANT_ERR_REQID, /* minted for another request */
	GRANT_ERR_FIELD, /* a field out of range (decision, cap,
				  principal not terminated, procs_max) */
	GRANT_ERR_DENIED, /* valid, but the decision is deny */
	GRANT_ERR_TARGET, /* valid, but for another target */
	GRANT_ERR_ARG /* bad argument from the caller */
};

const char *grant_strerror(int err);

/* BLAKE2b-256 of a target string (sandbox id, path, host:port). */
void grant_target_hash(
    const void *target, size_t len, uint8_t out[GRANT_HASH_BYTES]);

/*
 * Policy side. Fill g's fields (version, nonce and mac are set here), then
 * call grant_mint with the key of g->link. Returns GRANT_OK, or
 * GRANT_ERR_FIELD / GRANT_ERR_ARG if g is not well-formed.
 */
int grant_mint(struct grant *g, const uint8_t key[GRANT_KEY_BYTES]);

/*
 * Receiver side. buf/len is the grant as received (untrusted). link is
 * the verifier's own proc id, key its link key, now_ms the current
 * CLOCK_REALTIME in ms, reqid the request id of the message that carried
 * it. On GRANT_OK or GRANT_ERR_DENIED copies the grant to *out.
 * Returns GRANT_OK only for an authentic, unexpired allow for this link and
 * request.
 */
int grant_verify(const void *buf, size_t len, uint32_t link,
    const uint8_t key[GRANT_KEY_BYTES], uint64_t now_ms, uint64_t reqid,
    struct grant *out);

/* After grant_verify: whether g authorizes cap on this target. Returns
 * GRANT_OK or GRANT_ERR_TARGET. */
int grant_check(
    const struct grant *g, uint32_t cap, const void *target, size_t len);

/* CLOCK_REALTIME in ms, for expiry. */
uint64_t grant_now_ms(void);

#endif

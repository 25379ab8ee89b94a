/*
 * The closed capability catalogue, shared by the policy language, tokens,
 * the API and the CLI. A capability is "resource:action" or a bare name.
 * A set of capabilities is a cap_set_t bitset; bit i is enum cap_id i.
 *
 * Adding a capability: append it to the enum and to caps.c's table (never
 * reorder: compiled policies and grants carry the numbers), and document it
 * in docs/keep-policy.5.
 */
#ifndef KEEP_CAPS_H
#define KEEP_CAPS_H

#include <stddef.h>
#include <stdint.h>

enum cap_id {
	CAP_AGENT_READ,
	CAP_AGENT_WRITE,
	CAP_ARTIFACT_READ,
	CAP_ARTIFACT_WRITE,
	CAP_AGENT_RUN_READ,
	CAP_AGENT_RUN_WRITE,
	CAP_SCHEDULE_READ,
	CAP_SCHEDULE_WRITE,
	CAP_SANDBOX_READ,
	CAP_SANDBOX_WRITE,
	CAP_IMAGE_READ,
	CAP_IMAGE_WRITE,
	CAP_AUDIT_READ,
	CAP_POLICY_READ,
	CAP_EXEC,
	CAP_EGRESS,
	CAP_SECRET_READ,
	CAP_ADMIN,
	CAP_SECRET_WRITE, /* set and delete secrets (docs/secrets.md) */
	CAP_COUNT
};

typedef uint32_t cap_set_t;

#define CAP_BIT(c) ((cap_set_t)1 << (c))
#define CAP_ALL ((cap_set_t)((1ULL << CAP_COUNT) - 1))

/* Name of a capability ("artifact:read"); NULL for an out-of-range id. */
const char *cap_name(enum cap_id id);

/* Look up a name of exactly len bytes. Returns the id, or -1 if unknown. */
int cap_lookup(const char *name, size_t len);

/* Whether a capability is a read (rate "read") or a write (rate "write",
 * "lock writes"). Bare capabilities (exec, egress, admin, ...) count as
 * writes except secret:read. */
int cap_is_write(enum cap_id id);

#endif

/*
 * The seam between the policy process and the policy compiler (lang/,
 * policy/). Phase 2 sets policy_hooks to the compiler's functions; until
 * then the built-in hooks accept any text and deny every request.
 */
#ifndef KEEP_HOST_PROC_POLICY_H
#define KEEP_HOST_PROC_POLICY_H

#include <stddef.h>

#include "host/msg.h"

struct policy_hooks {
	/* Compile text (len bytes, not NUL-terminated). On success store the
	 * compiled policy in *out and return 0; else write a diagnostic to
	 * err and return -1. */
	int (*compile)(
	    const char *text, size_t len, void **out, char *err, size_t errlen);
	/* Decide q against a compiled policy (NULL: none loaded). Fill
	 * r->grant's decision, cap, principal, target, limits and expiry
	 * and r's rule fields; the caller mints. Must not fail. */
	void (*decide)(void *compiled, const struct msg_policy_decide *q,
	    struct msg_policy_decision *r);
	void (*free)(void *compiled);
};

extern const struct policy_hooks *policy_hooks;

/* Lifetime of a grant the policy process mints, in ms. */
#define POLICY_GRANT_TTL_MS 30000
/* How long an asker may reuse an egress decision that spends no quota
 * (DECIDE_REUSE), in ms: a burst of one program's connections, well
 * within the grant's life. */
#define POLICY_REUSE_MS 10000

#endif

/*
 * The policy language's implementation of the policy process's hooks
 * (host/proc_policy.h). Phase 2 wires it in with
 *	policy_hooks = &policy_lang_hooks;
 *
 * compile: parse, check and compile the text; on failure the first error
 * as "file:line:col: error: message" plus its source line and caret.
 * The compiled object owns its quota counters (fresh on every load).
 * decide: never fails; fills the grant's decision, cap, principal and
 * limits (mem_max, timeout_ms, output_max), the rule id and line, and
 * retry_after_ms when a rate bucket is empty. It reads CLOCK_MONOTONIC
 * for the rate buckets; the evaluator underneath takes the clock as an
 * argument. token_caps are applied: effective rights = token caps &
 * policy.
 */
#ifndef KEEP_POLICY_HOOKS_H
#define KEEP_POLICY_HOOKS_H

#include "host/proc_policy.h"

extern const struct policy_hooks policy_lang_hooks;

struct policy;
struct policy_quota;

/* The compiled policy and the quota counters inside a hooks object. */
const struct policy *policy_hooks_policy(void *compiled);
struct policy_quota *policy_hooks_quota(void *compiled);

/*
 * Concurrency for phase 2: decide cannot know when an operation ends, so
 * the process that runs it reports start and end (a message to the policy
 * process that calls these). enter returns POLICY_OK, POLICY_E_BUSY (the
 * agent's "concurrent" limit is reached: answer 429) or
 * POLICY_E_NOTFOUND; leave after every successful enter.
 */
int policy_hooks_enter(void *compiled, const char *principal);
/* policy_quota_levels for a principal, now. */
/* The principal's limits in the compiled policy, or NULL. */
const struct policy_limits *policy_hooks_limits(
    void *compiled, const char *principal);
void policy_hooks_levels(void *compiled, const char *principal,
    uint64_t *budget_left, double tokens[2]);
void policy_hooks_leave(void *compiled, const char *principal);

#endif

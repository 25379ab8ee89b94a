/*
 * The policy compiler, evaluator and quota engine. A pure library: no
 * globals, no I/O, no clock (the caller passes the time in), so decisions
 * are deterministic and testable.
 *
 *	struct lang_file *f;  lang_parse + lang_check, no errors
 *	struct policy *p;
 *	policy_compile(f, &p);
 *	struct policy_quota *q = policy_quota_new(p);
 *	policy_decide(p, q, now_ns, &req, &res);   q NULL: no accounting
 *
 * A compiled policy holds, for every agent, its effective rights as a
 * cap_set_t (allows minus denies over its whole role inheritance), the
 * deciding rule of every capability, its limits and its exec and egress
 * lists. A decision is one hash lookup and a bit test; rates use GCRA
 * (an exact token bucket in one 64-bit word per bucket).
 *
 * Errors: POLICY_OK or a POLICY_E_* code (>= 3100); policy_strerror.
 * Caveats: a struct policy is immutable after compile and may be shared
 * by readers; a struct policy_quota is not thread-safe and belongs to
 * one compiled policy (make a new one on reload).
 */
#ifndef KEEP_POLICY_H
#define KEEP_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "lang/lang.h"
#include "lib/caps.h"

struct egress_rule;
struct policy_quota;

enum policy_err {
	POLICY_OK = 0,
	POLICY_E_NOMEM = 3100, /* allocation failed */
	POLICY_E_ARG, /* bad argument, or a file that did not check */
	POLICY_E_SPACE, /* output array too small */
	POLICY_E_NOTFOUND, /* no such principal */
	POLICY_E_BUSY /* concurrency limit reached */
};

const char *policy_strerror(int err);

/* Why a decision came out as it did. */
enum policy_reason {
	POLICY_R_ALLOW = 0, /* an allow rule, no deny */
	POLICY_R_DEFAULT, /* default deny: nothing allows it */
	POLICY_R_PRINCIPAL, /* no such agent in the policy */
	POLICY_R_DENY, /* an explicit deny rule */
	POLICY_R_TARGET, /* exec, egress or secret target not on the list */
	POLICY_R_RATE, /* the rate bucket is empty (see retry_after) */
	POLICY_R_BUDGET, /* the operation budget is spent */
	POLICY_R_REQUEST, /* malformed request (capability out of range) */
	POLICY_R_TOKEN, /* the token does not carry the capability */
	POLICY_R_BUSY, /* the agent's concurrent operations are at the limit */
	POLICY_R_RESTORING /* its spent budget is still being read back */
};

const char *policy_reason_name(enum policy_reason r);
/* The reason as the audit log names it: "rate", "concurrent", "budget",
 * "token caps", "default deny", ...; "?" when out of range. */
const char *policy_reason_keyword(enum policy_reason r);

#define POLICY_UNLIMITED UINT64_MAX

struct policy_limits {
	uint64_t rate_count[2]; /* read, write; 0 = no rate */
	uint64_t rate_period_ms[2];
	uint64_t budget; /* POLICY_UNLIMITED if none */
	uint64_t mem_max; /* bytes, 0 = not set */
	uint64_t timeout_ms; /* 0 = not set */
	uint64_t output_max; /* bytes, 0 = not set */
	uint32_t concurrent; /* 0 = no limit */
	uint32_t lock_writes; /* 1: writes need the sandbox lock */
	uint32_t procs_max; /* guest processes at once, 0 = not set */
	uint32_t cost[CAP_COUNT]; /* per operation, default 1 */
	uint32_t sandboxes; /* sandboxes held at once, 0 = no limit */
	uint32_t contexts; /* live contexts at once, 0 = no limit */
	uint64_t pause_ms; /* a context idle this long is paused, 0 = never */
	uint64_t snapshots_max; /* bytes of journals and snapshots, 0 = none */
	uint32_t isolation; /* POLICY_ISO_KVM: its runs need KVM */
	/* bytes out and in of one run's connections through egress
	 * (`egress bytes`), 0 = not set */
	uint64_t egress_max;
	/* bytes out and in of all its runs' connections together, refilled
	 * at egress_budget per egress_budget_ms (`egress budget`); 0 = none */
	uint64_t egress_budget;
	uint64_t egress_budget_ms;
};

#define POLICY_ISO_ANY 0
#define POLICY_ISO_KVM 1

struct policy_exec {
	const char *name;
	uint32_t rule, line;
};

/* A port of its guests a principal may reach (expose; 0: any). */
struct policy_expose {
	uint16_t port, last; /* port to last, both in; port 0: any */
	uint64_t link_ms; /* reachable by a link lasting at most this; 0: no */
	uint32_t rule, line;
};

struct policy_egress {
	const char *host; /* exact, "*.suffix", an address or a range */
	uint16_t port; /* 0 = any */
	uint8_t http, private_, udp;
	uint32_t rule, line;
	/* inject "SECRET" as "Header" (both NULL when none) */
	const char *inject_secret, *inject_header;
};

struct policy_principal {
	const char *name;
	uint32_t len;
	uint32_t hash;
	cap_set_t allow; /* effective: allows minus denies */
	cap_set_t deny;
	uint32_t exec_off, nexec; /* into policy->execs */
	uint32_t egress_off, negress; /* into policy->egress */
	uint64_t gcra_t[2]; /* rate: ns between tokens (read, write) */
	uint64_t gcra_tau[2]; /* rate: burst tolerance, ns */
	uint32_t rule[CAP_COUNT]; /* deciding rule per capability, 0 none */
	uint32_t line[CAP_COUNT];
	struct policy_limits lim;
	uint32_t secret_off, nsecret; /* into policy->secrets */
	uint32_t expose_off, nexpose; /* into policy->expose */
};

struct policy {
	struct policy_principal *pr; /* sorted by name */
	uint32_t npr;
	uint64_t *slot; /* hash table: hash << 32 | (principal index + 1) */
	uint32_t mask;
	struct policy_exec *execs;
	uint32_t nexecs;
	struct policy_egress *egress;
	uint32_t negress;
	struct policy_exec *secrets; /* names a secret list allows */
	uint32_t nsecrets;
	struct policy_expose *expose;
	uint32_t nexpose;
	uint32_t nrules;
	cap_set_t writes; /* capabilities that count as writes */
	uint8_t hash[32]; /* BLAKE2b-256 of the source text */
	char *strings; /* names, owned */
};

struct policy_request {
	const char *principal;
	size_t principal_len;
	int cap; /* enum cap_id */
	const char
	    *target; /* exec, secret:read: a name; egress: "host[:port]" */
	size_t target_len; /* 0: no target */
	int no_budget; /* 1: neither spends nor is refused by the budget */
	/* sandbox:read of a guest's port (the ports route): allowed only
	 * where an expose rule names it. 0: no port. */
	uint16_t port;
	/* With port: by a signed link rather than the caller's token; only
	 * an expose rule that says "link" names the port then. */
	int link;
};

struct policy_result {
	int allow;
	enum policy_reason reason;
	uint32_t rule; /* deciding rule id, 0 = default deny */
	uint32_t line; /* its source line, 0 if none */
	int principal; /* index, -1 if unknown */
	const struct policy_limits *limits; /* NULL if unknown principal */
	uint64_t retry_after_ms; /* POLICY_R_RATE: when a token is due */
	/* A link request allowed: the deciding rule's longest link life. */
	uint64_t link_ms;
};

/*
 * Compile a checked file (lang_check returned LANG_OK). The policy keeps
 * no pointer into f. Returns POLICY_OK, POLICY_E_ARG or POLICY_E_NOMEM.
 */
int policy_compile(const struct lang_file *f, struct policy **out);
void policy_free(struct policy *p);

/* Parse, check and compile text in one step; on failure *errbuf holds
 * the first error as "file:line:col: error: message". */
int policy_compile_text(const char *name, const char *text, size_t len,
    struct policy **out, char *errbuf, size_t errlen);

/* Index of a principal, or -1. */
int policy_find(const struct policy *p, const char *name, size_t len);

/*
 * Decide a request. q may be NULL (no quota accounting); then the result
 * is the static decision. With q, an allowed request spends a token of
 * the read or write bucket and its cost from the budget; a denied one
 * spends nothing. now_ns is any monotonic clock in ns. Never fails: a
 * malformed request is a deny with POLICY_R_REQUEST.
 */
void policy_decide(const struct policy *p, struct policy_quota *q,
    uint64_t now_ns, const struct policy_request *req,
    struct policy_result *res);

/*
 * Whether an allowed cap for principal (an index) spends a quota that a
 * repeat of the decision would spend again: a budget that counts cap
 * (no_budget clear, its cost above 0), or a rate on cap's bucket. 0
 * means the decision is the same each time while this policy is
 * loaded, so an asker may reuse it for a while (docs/egress.md,
 * "Decisions reused"); 1 for an unknown principal or cap.
 */
int policy_decision_spends(
    const struct policy *p, int principal, int cap, int no_budget);

/* The static rule for one principal index and capability, no target. */
void policy_decide_index(
    const struct policy *p, int principal, int cap, struct policy_result *res);

/* Quotas. One struct per compiled policy; counters start full. */
struct policy_quota *policy_quota_new(const struct policy *p);
void policy_quota_free(struct policy_quota *q);
/* A concurrent operation begins or ends. Returns POLICY_OK, POLICY_E_BUSY
 * (at the limit) or POLICY_E_NOTFOUND. */
int policy_quota_enter(struct policy_quota *q, int principal);
void policy_quota_leave(struct policy_quota *q, int principal);
/* What is left at now (ns): the budget (POLICY_UNLIMITED: none) and the
 * read and write tokens a request could spend at once (-1: no rate). */
void policy_quota_levels(const struct policy_quota *q, int principal,
    uint64_t now, uint64_t *budget_left, double tokens[2]);
/* Every operation has ended (the process that reported them restarted). */
void policy_quota_leave_all(struct policy_quota *q);
/* Budget spent so far, and setting it (restored from the store). */
uint64_t policy_quota_spent(const struct policy_quota *q, int principal);
void policy_quota_set_spent(
    struct policy_quota *q, int principal, uint64_t spent);
/*
 * A reload keeps what was spent: each principal of to gets the counters
 * (rate buckets, budget spent, operations in flight) of the principal of
 * the same name in from, whose policy must still be alive. One that is
 * new starts full.
 */
void policy_quota_carry(
    struct policy_quota *to, const struct policy_quota *from);

/*
 * Service functions for the processes.
 *
 * policy_exec_allowed: whether principal may run the executable name (a
 * bare name, never a shell string). Returns 1 or 0.
 *
 * policy_egress_export: the principal's egress allowlist as egress rules
 * (host/egress/egress.h) in out[0..max). Sets *n to the count. Returns
 * POLICY_OK, POLICY_E_NOTFOUND or POLICY_E_SPACE (*n says how many are
 * needed). An agent denied egress exports none.
 *
 * policy_limits_of: the limits of a principal, NULL if unknown.
 *
 * policy_hash: BLAKE2b-256 of the text the policy was compiled from.
 */
int policy_exec_allowed(
    const struct policy *p, const char *principal, const char *name);
int policy_egress_export(const struct policy *p, const char *principal,
    struct egress_rule *out, size_t max, size_t *n);
const struct policy_limits *policy_limits_of(
    const struct policy *p, const char *principal);
const uint8_t *policy_hash(const struct policy *p);

/*
 * The reference evaluator: interprets the checked tree directly, with no
 * tables, for the differential test. Fills allow, reason, rule and line
 * (no quotas, no limits).
 */
void policy_ref_decide(const struct lang_file *f,
    const struct policy_request *req, struct policy_result *res);

/* Whether an egress target "host[:port]" matches host pattern and port
 * (shared by both evaluators). */
int policy_egress_match(
    const char *pattern, uint16_t port, const char *target, size_t len);
/* The same for an entry whose `udp` flag is udp: a target ending in
 * "/udp" ("ntp.test:123/udp", a guest's UDP socket: docs/egress.md)
 * matches only an entry that says udp; any other as above. */
int policy_egress_match_proto(const char *pattern, uint16_t port, int udp,
    const char *target, size_t len);

#endif

/*
 * Messages between keepd's processes. One message per SOCK_SEQPACKET
 * datagram: a fixed 24-byte header, then exactly hdr.len payload bytes.
 * Payloads are fixed-width structs (no pointers) or, where a handler
 * declares it, a variable-size payload up to a bound. Larger data travels
 * as a memfd over SCM_RIGHTS (at most one descriptor per message).
 *
 * A receiver checks, in order: the datagram holds a whole header; the
 * reserved fields are zero; the type is known to this process; this sender
 * may send it; the payload length is exactly right (or within the declared
 * bound); a descriptor is present if and only if the type carries one.
 * Anything else is logged (escaped), counted and dropped. Never fatal.
 *
 * Error codes are MSG_ERR_* (>= 2000, never an errno); msg_strerror names
 * them.
 */
#ifndef KEEP_HOST_MSG_H
#define KEEP_HOST_MSG_H

#include <stddef.h>
#include <stdint.h>

#include "host/grant.h"
#include "host/proc.h"

#define MSG_MAX_PAYLOAD (64 * 1024)

struct msg_hdr {
	uint32_t type; /* MSG_* */
	uint32_t flags; /* MSG_F_*; unknown bits are rejected */
	uint64_t reqid; /* request id, echoed in replies and logs */
	uint32_t len; /* payload bytes after the header */
	uint32_t pad; /* must be 0 */
};
_Static_assert(sizeof(struct msg_hdr) == 24, "msg_hdr is 24 bytes");

/* Header flags. */
#define MSG_F_REPLY 0x1u /* an answer to reqid */
#define MSG_F_ERROR 0x2u /* payload is struct msg_error */
#define MSG_F_ALL (MSG_F_REPLY | MSG_F_ERROR)

/* Message types: MSG_<AREA>_<VERB>, one range of 0x100 per area. */
enum msg_type {
	/* 0x01xx control, parent <-> every child */
	MSG_CTL_PING = 0x0100, /* any -> any: struct msg_ping */
	MSG_CTL_PONG = 0x0101, /* reply: struct msg_ping */
	MSG_CTL_GRANT_KEY = 0x0102, /* parent -> child: struct msg_grant_key */
	MSG_CTL_PEER = 0x0103, /* parent -> child: struct msg_peer + fd */
	MSG_CTL_READY = 0x0104, /* child -> parent: struct msg_ready */
	MSG_CTL_RELOAD = 0x0105, /* parent -> child: no payload */
	MSG_CTL_SHUTDOWN = 0x0106, /* parent -> child: no payload */
	MSG_CTL_STATS = 0x0107, /* parent -> child: no payload */
	MSG_CTL_STATS_REPLY = 0x0108, /* child -> parent: struct msg_stats */
	MSG_CTL_CONFIG = 0x0109, /* parent -> child: struct msg_config */
	MSG_CTL_PUBKEYS = 0x010a, /* parent -> front, vmm: msg_pubkeys */
	MSG_CTL_TLS = 0x010b, /* parent -> front: msg_tls + memfd */
	MSG_CTL_MINT_KEY = 0x010c, /* parent -> policy: msg_mint_key */
	/* parent -> front, keepd -T only: msg_test_clock */
	MSG_CTL_TEST_CLOCK = 0x0120,
	/* parent -> front: msg_zones + memfd, the time zones' rules */
	MSG_CTL_ZONES = 0x0121,
	MSG_CTL_SECRET_KEY = 0x0110, /* parent -> front, vmm: msg_secret_key */
	/* parent -> vmm: the certificates guests trust beside their
	 * image's, PEM (host/guest_ca.h), 0 to VMM_CA_EXTRA_MAX bytes */
	MSG_CTL_GUEST_CA = 0x0111,

	/* 0x02xx policy */
	MSG_POLICY_LOAD = 0x0200, /* parent -> policy: msg_policy_load+memfd */
	MSG_POLICY_LOADED = 0x0201, /* policy -> parent: msg_policy_loaded */
	MSG_POLICY_DECIDE = 0x0202, /* front/vmm -> policy: msg_policy_decide */
	MSG_POLICY_DECISION = 0x0203, /* policy -> asker: msg_policy_decision */
	MSG_POLICY_MINT = 0x0204, /* front -> policy: msg_policy_mint */
	MSG_POLICY_MINTED = 0x0205, /* policy -> front: msg_policy_minted */
	MSG_POLICY_INFO = 0x0206, /* front -> policy: no payload */
	MSG_POLICY_INFO_REPLY = 0x0207, /* policy -> front: msg_policy_info */
	MSG_POLICY_LEAVE = 0x0208, /* front -> policy: msg_policy_leave */
	MSG_POLICY_USAGE = 0x0209, /* front -> policy: msg_policy_leave */
	MSG_POLICY_USAGE_REPLY = 0x020a, /* msg_policy_usage */
	MSG_POLICY_DECIDE_BATCH = 0x020b, /* front -> policy: decide_batch */
	MSG_POLICY_DECISIONS = 0x020c, /* policy -> front: decisions */
	/* policy -> vmm, unanswered: msg_policy_changed, a policy was
	 * loaded; decisions given before it may no longer be reused */
	MSG_POLICY_CHANGED = 0x020d,

	/* 0x03xx vmm, 0x04xx store, 0x05xx egress, 0x06xx front: their
	 * owners define the verbs; the ranges are reserved here. */
	MSG_VMM_BASE = 0x0300,
	MSG_STORE_BASE = 0x0400,
	MSG_EGRESS_BASE = 0x0500,
	MSG_FRONT_BASE = 0x0600
};

/* Every reply that failed: MSG_F_ERROR set, this payload. */
struct msg_error {
	uint32_t code; /* area-specific error code */
	uint32_t pad;
	char text[120]; /* NUL-terminated, for logs only */
};

struct msg_ping {
	uint64_t seq;
	uint64_t pid; /* sender's pid (informational) */
	uint64_t nrecv; /* messages it has dispatched */
	uint64_t ndropped; /* malformed messages it has dropped */
};

struct msg_grant_key {
	uint32_t link; /* enum proc_id of the verifying process */
	uint32_t pad;
	uint8_t key[32]; /* crypto_auth key; lives only in memory */
};

struct msg_peer {
	uint32_t peer; /* enum proc_id at the other end of the fd */
	uint32_t pad;
};

struct msg_ready {
	uint32_t proc; /* enum proc_id of the sender */
	uint32_t seccomp; /* 1 when its filter is installed */
	uint64_t pid;
};

/*
 * The part of keepd.yaml children need, fixed-width. Sent after the grant
 * keys at every start and again after a SIGHUP that changed it.
 */
struct msg_config {
	uint64_t max_request_body;
	uint64_t memory_default, memory_max;
	uint64_t timeout_default_ms, timeout_max_ms;
	uint64_t output_max, workspace_max;
	uint64_t token_max_ttl_ms, token_clock_skew_ms;
	uint32_t max_connections, max_sandboxes;
	uint32_t listen_port;
	uint32_t tls; /* 1: MSG_CTL_TLS follows; serve only TLS */
	uint32_t max_files; /* a guest's open descriptors */
	uint64_t store_reserve; /* bytes of disk kept for the store */
	uint32_t max_connections_per_client;
	/* enum vmm_platform as the parent resolved it (never AUTO): KVM, or
	 * the trap platform; kvm_missing: KVM was required (platform: kvm)
	 * and /dev/kvm did not open, so no guest can run. */
	uint16_t platform, kvm_missing;
	uint64_t unauthenticated_timeout_ms;
	uint64_t max_replies_pending;
	char node[24]; /* keepd.yaml node: sandbox id prefix, "" none */
	char ports_domain[128]; /* keepd.yaml ports.domain, "" none */
};

/* Public keys, resolved by the parent (file names read, whitespace
 * trimmed): token issuers to the front, image signers to the vmm. */
#define MSG_PUBKEYS_MAX 8
#define MSG_PUBKEY_LEN 128
enum msg_pubkey_kind { MSG_PUBKEYS_TOKEN = 1, MSG_PUBKEYS_IMAGE = 2 };
struct msg_pubkeys {
	uint32_t kind; /* enum msg_pubkey_kind */
	uint32_t n; /* keys used, <= MSG_PUBKEYS_MAX */
	char keys[MSG_PUBKEYS_MAX][MSG_PUBKEY_LEN]; /* "k4.public...", NUL */
};

/* The TLS certificate chain and key (PEM), read by the parent, as one
 * sealed memfd: cert_len bytes of chain, then key_len bytes of key. */
#define MSG_TLS_MAX (1024 * 1024)
struct msg_tls {
	uint64_t cert_len;
	uint64_t key_len;
};

/* The schedules' clock for tests (keepd -T FILE, docs/schedules.md):
 * unix seconds, > 0. Never sent otherwise. */
struct msg_test_clock {
	int64_t now_s;
};

/* The zone table (host/parent_zones.c): len bytes of "NAME\tRULE\n"
 * lines in a sealed memfd. */
#define MSG_ZONES_MAX (1u << 20)
struct msg_zones {
	uint64_t len;
};

/*
 * The delegation key: an Ed25519 secret key the parent keeps in
 * <state_dir>/keys/delegation.secret and gives only to the policy process,
 * which signs attenuated tokens (sandbox tokens, POST /v1/tokens) with it.
 * Its public half is among the token keys the front and policy trust.
 */
struct msg_mint_key {
	uint8_t sk[64];
};

/*
 * The secrets key (docs/secrets.md): an X25519 key pair the parent keeps
 * in <state_dir>/keys/secrets.key. The front gets the public half only,
 * enough to seal a value it accepts (crypto_box_seal) and never enough
 * to open a stored one; the vmm gets both halves and opens a secret only
 * for a run whose grant names it. sk is all zero for the front.
 */
struct msg_secret_key {
	uint8_t pk[32];
	uint8_t sk[32];
};

struct msg_stats {
	uint64_t nrecv;
	uint64_t ndropped;
};

/* The policy text travels as a sealed memfd of exactly size bytes. */
#define MSG_POLICY_MAX_TEXT (16u * 1024 * 1024)
struct msg_policy_load {
	uint64_t size;
	uint64_t generation; /* incremented by the parent on each reload */
};

struct msg_policy_loaded {
	uint64_t generation;
	uint32_t status; /* 0 loaded, else an error code; old policy kept */
	uint32_t pad;
	uint8_t hash[32]; /* BLAKE2b-256 of the text as loaded */
};

/*
 * A decision request: may principal do cap on target? The policy process
 * answers with MSG_POLICY_DECISION whose grant is minted for `link` (the
 * process that will carry out the effect). token_caps are the caps of the
 * caller's verified token; effective rights = token_caps & policy rights.
 */
#define MSG_TARGET_MAX 256
struct msg_policy_decide {
	uint32_t cap; /* enum cap_id */
	uint32_t link; /* enum proc_id that will verify the grant */
	uint32_t token_caps; /* cap_set_t */
	uint32_t target_len; /* bytes used in target[] */
	uint32_t flags; /* DECIDE_* */
	uint32_t pad;
	char principal[GRANT_PRINCIPAL_MAX]; /* NUL-terminated */
	char target[MSG_TARGET_MAX]; /* not NUL-terminated */
};

/*
 * DECIDE_ENTER: an operation that runs on (a run) takes one of the
 * principal's concurrency slots with the decision, and the asker gives
 * it back with MSG_POLICY_LEAVE when it ends. DECIDE_DRY_RUN: decide
 * without spending rate or budget (POST /v1/policy/check).
 */
#define DECIDE_ENTER 0x1u
#define DECIDE_DRY_RUN 0x2u
/* DECIDE_NO_BUDGET: an operation the budget does not count and does not
 * refuse (an agent's read of its own usage, the deletion of its own
 * sandbox: docs/policy-language.md). Rules and rates still apply. */
#define DECIDE_NO_BUDGET 0x4u
/* DECIDE_PORT: sandbox:read of a guest's port, its number the target in
 * decimal (the ports route): the policy's expose rules decide it. */
#define DECIDE_PORT 0x8u
/* DECIDE_LINK (with DECIDE_PORT): by a signed link, not a token (a
 * request through it, or the minting of one): only an expose rule that
 * says "link" names the port. */
#define DECIDE_LINK 0x10u
/* DECIDE_CONNECT: egress for a guest's TCP connect by name (the vmm's
 * relay): only then does the decision bind an `inject` entry's secret
 * and header (docs/egress.md, "Secrets injected at egress"); a fetch's
 * or a webhook's grant stays a plain destination's. */
#define DECIDE_CONNECT 0x20u
/* DECIDE_REUSE: the asker may reuse an allow for the same principal,
 * token caps and target for a while (the vmm's relay: docs/egress.md,
 * "Decisions reused"); the decision's reuse_ms says how long. */
#define DECIDE_REUSE 0x40u

struct msg_policy_leave {
	char principal[GRANT_PRINCIPAL_MAX]; /* NUL-terminated */
};

/* A principal's quotas now (GET .../system). */
struct msg_policy_usage {
	int64_t budget_remaining; /* -1: no budget */
	double read_tokens, write_tokens; /* -1: no rate */
	uint32_t contexts_max; /* live contexts at once, 0: no limit */
	uint32_t pad;
	uint64_t pause_ms; /* a context's idle time before a pause, 0: never */
	uint64_t snapshots_max; /* contexts' disk (bytes), 0: no limit */
};

struct msg_policy_decision {
	struct grant grant; /* decision, limits and MAC */
	uint32_t rule; /* deciding rule id, 0 = default deny */
	uint32_t line; /* its source line, 0 if none */
	uint64_t retry_after_ms; /* rate limited: when to retry, else 0 */
	uint32_t reason; /* enum policy_reason: why, for the client's error */
	uint32_t flags; /* DECISION_* */
	/* The deciding rule as "file:line:col" (the file's base name in
	 * policy_dir), NUL-terminated; "" when none. */
	char where[48];
	/* DECIDE_LINK allowed: the deciding rule's longest link life, in
	 * ms; else 0. */
	uint64_t link_ms;
	/* An allowed egress to "host:port" whose entry injects a secret
	 * (`inject "SECRET" as "Header"`): both names, NUL-terminated,
	 * and the grant's target is egress_grant_target_inject()'s; else
	 * both "". */
	char inject_secret[64];
	char inject_header[64];
	/* DECIDE_REUSE asked and an allow that spends no quota (no budget
	 * or rate counts it: policy_decision_spends): for how long, in ms,
	 * the asker may reuse it (its grant with it, which egress verifies
	 * each time) instead of asking again, while no MSG_POLICY_CHANGED
	 * has come and the grant has not expired; else 0. */
	uint32_t reuse_ms;
	/* The policy generation that decided, its low 32 bits: egress
	 * keeps a reusable decision for a run's direct link only while
	 * that generation is in force (host/proc_egress.h, MSG_EGRESS_RUN). */
	uint32_t generation;
};

/* The agent's policy says `lock writes` and this capability is a write:
 * the operation needs the sandbox's lock (423 without it). */
#define DECISION_LOCK_WRITES 0x1u

/*
 * Many decisions in one message each way: the front asks for those its
 * requests need in one pass of its loop together (msg_batch_hdr, then
 * count entries). Each entry is decided exactly as a MSG_POLICY_DECIDE
 * with that request id, its grant bound to it.
 */
#define MSG_DECIDE_BATCH_MAX 64
struct msg_batch_hdr {
	uint32_t count; /* 1..MSG_DECIDE_BATCH_MAX */
	uint32_t pad;
};
struct msg_policy_decide_entry {
	uint64_t reqid;
	struct msg_policy_decide q;
};
struct msg_policy_decision_entry {
	uint64_t reqid;
	struct msg_policy_decision d; /* a malformed entry: DENY, REQUEST */
};

/* Descriptor passing. */
#define MSG_NO_FD (-1)

/* A received, validated message. data points into the receive buffer. */
struct msg {
	struct msg_hdr hdr;
	const uint8_t *data; /* hdr.len bytes */
	enum proc_id from;
	int fd; /* MSG_NO_FD unless the type carries one; owned by the
		   handler, which must close it */
};

/*
 * Attenuation: the front sends the caller's bearer token as received and
 * what it wants; the policy process verifies the token itself (a
 * compromised front cannot claim rights it was not given), derives the
 * narrower claims (token_attenuate: caps a subset, exp no later, sbx the
 * parent's or any when unscoped) and signs them with the delegation key.
 */
#define MSG_TOKEN_MAX 2048
struct msg_policy_mint {
	uint32_t caps; /* cap_set_t wanted */
	uint32_t token_len; /* bytes used in token[] */
	int64_t exp; /* wanted expiry, unix seconds; 0: the parent's */
	char sbx[72]; /* NUL-terminated; "" keeps the parent's */
	/* 0, or a link to this port of sbx (docs/architecture.md,
	 * "Ports"): caps must then be sandbox:read alone, sbx set, and the
	 * policy must let the parent's principal give links to the port for
	 * that long (the token's aud is then TOKEN_LINK_AUD). */
	uint32_t port;
	uint32_t pad;
	char token[MSG_TOKEN_MAX]; /* the parent token, not NUL-terminated */
};

struct msg_policy_minted {
	int32_t status; /* 0, or a TOKEN_E_* code (negative) */
	uint32_t token_len;
	int64_t exp;
	char token[MSG_TOKEN_MAX]; /* not NUL-terminated */
};

/* MSG_POLICY_CHANGED: the generation now in force. */
struct msg_policy_changed {
	uint64_t generation;
};

/* The policy in force, for GET /v1/policy. */
struct msg_policy_info {
	uint64_t generation; /* 0: none loaded */
	int64_t loaded_at; /* unix seconds */
	uint8_t hash[32]; /* BLAKE2b-256 of its text */
	/* Egress decisions (guest fetches, webhooks) since the policy
	 * process started. */
	uint64_t egress_allow, egress_deny;
};

/* Handler flags. */
#define MSG_H_VARIABLE 0x1u /* size is an upper bound, not exact */
#define MSG_H_FD 0x2u /* exactly one descriptor comes with it */

struct msg_handler {
	uint32_t type;
	uint32_t senders; /* PROC_BIT()s allowed to send it */
	uint32_t size; /* exact payload size, or bound with VARIABLE */
	uint32_t flags; /* MSG_H_* */
	int (*fn)(struct proc_ctx *ctx, const struct msg *m);
};

enum msg_err {
	MSG_OK = 0,
	MSG_ERR_SHORT = 2000, /* datagram shorter than the header */
	MSG_ERR_LENGTH, /* hdr.len differs from the datagram */
	MSG_ERR_RESERVED, /* pad or unknown flag bits set */
	MSG_ERR_TYPE, /* no handler for this type */
	MSG_ERR_SENDER, /* this sender may not send this type */
	MSG_ERR_SIZE, /* payload size not exactly right */
	MSG_ERR_FD, /* descriptor missing or unexpected */
	MSG_ERR_TRUNCATED, /* datagram or control data truncated */
	MSG_ERR_TOOBIG, /* payload above MSG_MAX_PAYLOAD */
	MSG_ERR_EOF, /* peer closed the link */
	MSG_ERR_IO, /* send/recv failed; errno is set */
	MSG_ERR_HANDLER, /* the handler refused the payload */
	MSG_ERR_AGAIN /* non-blocking link: nothing to read, or the
			    peer's queue is full */
};

const char *msg_strerror(int err);

/* Name of a message type for logs ("MSG_CTL_PING"), "unknown" otherwise. */
const char *msg_type_name(uint32_t type);

/* Every message type defined in host/'s headers and its name, generated
 * at build time from them by mk/msgnames.py ($(B)/gen/msg_names.c). */
struct msg_type_name {
	uint32_t type;
	const char *name;
};
extern const struct msg_type_name msg_type_names[];
extern const size_t msg_type_nnames;

/*
 * Pure decoder: check buf[0..len) (one whole datagram) from sender `from`
 * against handlers[0..n). has_fd says whether a descriptor came with it.
 * On success fills *m (m->data points into buf, m->fd = MSG_NO_FD) and
 * *h with the matching handler, and returns MSG_OK; else a MSG_ERR_*.
 */
int msg_decode(const struct msg_handler *handlers, size_t n, enum proc_id from,
    const void *buf, size_t len, int has_fd, struct msg *m,
    const struct msg_handler **h);

/*
 * Send one message: header + len payload bytes, plus fd when fd >= 0.
 * Returns MSG_OK, MSG_ERR_TOOBIG or MSG_ERR_IO (errno set). The caller
 * keeps ownership of fd.
 */
int msg_send(int sock, uint32_t type, uint32_t flags, uint64_t reqid,
    const void *payload, size_t len, int fd);

/*
 * Receive one datagram into buf (bufsz >= sizeof(struct msg_hdr) +
 * MSG_MAX_PAYLOAD). *len gets the datagram size, *fd the descriptor that
 * came with it or MSG_NO_FD (extra descriptors are closed). Returns MSG_OK,
 * MSG_ERR_EOF, MSG_ERR_TRUNCATED (the datagram is dropped and any fd
 * closed) or MSG_ERR_IO.
 */
#define MSG_BUFSZ (sizeof(struct msg_hdr) + MSG_MAX_PAYLOAD)
int msg_recv(int sock, void *buf, size_t bufsz, size_t *len, int *fd);
/*
 * Batches: many whole messages (each a msg_hdr and its payload, no
 * descriptors) in one message's payload, after a msg_batch_hdr. The
 * receiver serves each as if it had come alone, from the same sender,
 * through the same handler table; the replies it makes without a
 * descriptor are held and go back the same way, in as few messages of
 * type reply_type as fit. One message instead of many cuts the cost of
 * a crossing (docs/architecture.md).
 */
struct msg_replies {
	enum proc_id to;
	uint32_t reply_type;
	uint32_t count;
	size_t len;
	uint8_t buf[MSG_MAX_PAYLOAD];
};

/* Append one message (header and payload) to a batch being built in
 * buf (len bytes so far, header included); MSG_ERR_TOOBIG when it does
 * not fit in cap. */
int msg_batch_add(uint8_t *buf, size_t cap, size_t *len, uint32_t *count,
    uint32_t type, uint32_t flags, uint64_t reqid, const void *payload,
    size_t plen);
/*
 * Serve the batch in m: each inner message through ctx->handlers as from
 * m->from (a nested batch, a malformed or unknown inner message is
 * logged, counted and skipped), replies to the sender held in r and sent
 * as reply_type with m's request id. Returns 0, or -1 when the batch
 * itself is malformed (nothing is served).
 */
int msg_batch_serve(struct proc_ctx *ctx, const struct msg *m,
    uint32_t reply_type, struct msg_replies *r);
/*
 * Walk a batch's payload: *off starts at 0; each call gives the next
 * inner message (start and length) and returns 1, 0 at the end, -1
 * when it is malformed.
 */
int msg_batch_next(const uint8_t *payload, size_t len, size_t *off,
    const uint8_t **msg, size_t *mlen);

/* msg_recv that does not wait, even on a blocking link: MSG_ERR_AGAIN
 * when nothing is queued. */
int msg_recv_nowait(int sock, void *buf, size_t bufsz, size_t *len, int *fd);

/*
 * Receive and dispatch one message on ctx->fd[from]: decode against
 * ctx->handlers, call the handler. A malformed message is logged, counted
 * in ctx->ndropped and dropped; returns MSG_OK for dispatched and dropped
 * messages alike, MSG_ERR_EOF or MSG_ERR_IO when the link is gone.
 */
int msg_dispatch(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz);
/* msg_dispatch that does not wait: MSG_ERR_AGAIN when nothing is queued. */
int msg_dispatch_nowait(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz);

/* Reply to m on ctx's link to m->from, echoing its request id. */
int msg_reply(struct proc_ctx *ctx, const struct msg *m, uint32_t type,
    const void *payload, size_t len, int fd);

/*
 * Handlers every child process lists first in its table: ping, grant key,
 * peer link, shutdown and stats, implemented in host/proc.c.
 */
int msg_h_ping(struct proc_ctx *ctx, const struct msg *m);
int msg_h_grant_key(struct proc_ctx *ctx, const struct msg *m);
int msg_h_peer(struct proc_ctx *ctx, const struct msg *m);
int msg_h_shutdown(struct proc_ctx *ctx, const struct msg *m);
int msg_h_stats(struct proc_ctx *ctx, const struct msg *m);

#define MSG_ANY_PROC (PROC_BIT(PROC_COUNT) - 1)
int msg_h_config(struct proc_ctx *ctx, const struct msg *m);
int msg_h_pubkeys(struct proc_ctx *ctx, const struct msg *m);

/* clang-format off */
#define MSG_HANDLERS_COMMON \
	{ MSG_CTL_PING, MSG_ANY_PROC, sizeof(struct msg_ping), 0, \
	    msg_h_ping }, \
	{ MSG_CTL_GRANT_KEY, PROC_BIT(PROC_PARENT), \
	    sizeof(struct msg_grant_key), 0, msg_h_grant_key }, \
	{ MSG_CTL_PEER, PROC_BIT(PROC_PARENT), sizeof(struct msg_peer), \
	    MSG_H_FD, msg_h_peer }, \
	{ MSG_CTL_SHUTDOWN, PROC_BIT(PROC_PARENT), 0, 0, msg_h_shutdown }, \
	{ MSG_CTL_STATS, PROC_BIT(PROC_PARENT), 0, 0, msg_h_stats }, \
	{ MSG_CTL_CONFIG, PROC_BIT(PROC_PARENT), sizeof(struct msg_config), \
	    0, msg_h_config }, \
	{ MSG_CTL_PUBKEYS, PROC_BIT(PROC_PARENT), \
	    sizeof(struct msg_pubkeys), 0, msg_h_pubkeys }
/* clang-format on */

#endif

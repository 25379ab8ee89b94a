/*
 * The process framework of keepd: one table of processes, the descriptor
 * layout a re-executed child finds, and the per-process context that the
 * message loop passes to every handler.
 *
 * Descriptor layout of a child after exec (fixed, so nothing is parsed to
 * find them):
 *	PROC_FD_LINK(p)	the SOCK_SEQPACKET link to process p (p = PROC_PARENT
 *			is the link to the parent), -1/closed if the two do
 *			not talk
 *	PROC_FD_KVM	vmm only: /dev/kvm, opened by the parent
 *	PROC_FD_LISTEN	front only: the listening TCP socket
 * A link to a restarted peer arrives later as MSG_CTL_PEER with the new
 * descriptor over SCM_RIGHTS.
 */
#ifndef KEEP_HOST_PROC_H
#define KEEP_HOST_PROC_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lib/util.h"

struct msg_replies;

enum proc_id {
	PROC_PARENT,
	PROC_FRONT,
	PROC_POLICY,
	PROC_VMM,
	PROC_STORE,
	PROC_EGRESS,
	PROC_COUNT
};

#define PROC_BIT(p) ((uint32_t)1 << (p))
#define PROC_FD_BASE 3
#define PROC_FD_LINK(p) (PROC_FD_BASE + (int)(p))
#define PROC_FD_KVM (PROC_FD_BASE + PROC_COUNT)
#define PROC_FD_LISTEN (PROC_FD_KVM + 1)
/* Lowest descriptor the framework does not own; closefrom() starts here. */
#define PROC_FD_FIRST_FREE (PROC_FD_LISTEN + 1)

struct proc_ctx;
struct seccomp_filter;
struct msg;
struct msg_handler;
struct msg_config;
struct msg_pubkeys;

/* Where a child is chrooted. */
enum proc_root {
	PROC_ROOT_EMPTY, /* <state_dir>/empty: root-owned, empty, 0755 */
	PROC_ROOT_STATE, /* <state_dir>: images, workspaces (vmm) */
	PROC_ROOT_DB /* <state_dir>/db: the LMDB environment (store) */
};

/* One row per process. */
struct proc_info {
	const char *name; /* "front"; the title is "keepd: front" */
	enum proc_id id;
	int (*main)(struct proc_ctx *); /* NULL for the parent */
	uint32_t peers; /* PROC_BIT()s of the processes it
					   has a link to (parent implied) */
	enum proc_root root;
	const struct seccomp_filter *filter; /* NULL for the parent */
};

/* Handler state of a process; opaque to the framework. */
struct proc_ctx {
	enum proc_id self;
	int fd[PROC_COUNT]; /* link to each process, -1 if none */
	int kvm_fd; /* vmm: /dev/kvm, else -1 */
	int netns_fd; /* vmm: its namespace maker (host/vm_confine.h), or -1 */
	int listen_fd; /* front: listener, else -1 */
	int quit; /* set by a handler to leave proc_loop() */
	const struct msg_handler *handlers;
	size_t nhandlers;
	/* Counters: messages dispatched, malformed dropped. */
	uint64_t nrecv;
	uint64_t ndropped;
	/* Grant keys this process holds (policy: all, verifiers: their own). */
	uint8_t grant_key[PROC_COUNT][32];
	uint32_t grant_keys_held; /* PROC_BIT()s */
	/* From the parent (MSG_CTL_CONFIG, MSG_CTL_PUBKEYS); NULL until
	 * received, replaced whole on reload. */
	struct msg_config *config;
	struct msg_pubkeys *token_keys; /* front */
	struct msg_pubkeys *image_keys; /* vmm */
	void *arg; /* the process's own state */
	/* Called after a peer's link is replaced (the peer restarted):
	 * state kept on the old peer's behalf is stale. NULL: nothing. */
	void (*on_peer)(struct proc_ctx *, enum proc_id peer);
	/* While a batch of requests is served (msg_batch_serve): replies
	 * to its sender are held here and go back together. */
	struct msg_replies *replies;
	/* Called by proc_loop_every once every link the poll found ready
	 * has been served, before the timer: the store commits the writes
	 * of the round there. NULL: nothing. */
	void (*on_round_end)(struct proc_ctx *);
	/* The process's own deadline: proc_loop_every waits in poll no
	 * longer than the ms this returns (-1: none), so on_round_end runs
	 * by then (egress's batched audit entries). NULL: none. */
	int (*wake_in)(struct proc_ctx *);
	/* Descriptors polled beside the links (egress's runs' direct
	 * links): poll_more fills at most PROC_POLL_MORE and says how many;
	 * poll_ready gets them back, revents set, once the links the poll
	 * found ready are served. NULL: none. */
	size_t (*poll_more)(struct proc_ctx *, struct pollfd *, size_t room);
	void (*poll_ready)(struct proc_ctx *, const struct pollfd *, size_t n);
};
#define PROC_POLL_MORE 64

/*
 * The token verifier's settings for this process, from the keys and the
 * configuration the parent sent last (host/token_config.c): keys gets
 * MSG_PUBKEYS_MAX entries' room, vc the keys, audience, skew and maximum
 * lifetime; the caller adds its cache and revocation check. -1 when
 * neither has arrived yet.
 */
struct token_key;
struct token_verifier_config;
int proc_token_config(const struct proc_ctx *, struct token_key *keys,
    struct token_verifier_config *vc);

/* Each child's entry point, one file each: host/proc_<name>.c. */
int front_main(struct proc_ctx *ctx);
int policy_main(struct proc_ctx *ctx);
int vmm_main(struct proc_ctx *ctx);
int store_main(struct proc_ctx *ctx);
int egress_main(struct proc_ctx *ctx);

/*
 * Drop privileges in the fixed order (docs/architecture.md): chroot(root),
 * chdir("/"), setgroups, setresgid, setresuid to user, every capability
 * (effective, permitted, inheritable, bounding, ambient), then
 * PR_SET_NO_NEW_PRIVS. When not root, warns and only sets NO_NEW_PRIVS.
 * root or user NULL skips that step. Returns 0 or -1 (logged); the caller
 * must not go on after -1.
 */
int proc_privdrop(const char *root, const char *user);
/* The same, with root entered as a mount namespace of its own
 * (pivot_root) rather than a chroot where it can be: the vmm's. */
int proc_privdrop_ns(const char *root, const char *user);

/* The table, indexed by enum proc_id. */
extern const struct proc_info proc_table[PROC_COUNT];

/* Lookups. proc_by_name returns NULL for an unknown name. */
const struct proc_info *proc_by_name(const char *name);
const char *proc_name(enum proc_id id);

/* Whether a and b talk directly (symmetric). */
int proc_linked(enum proc_id a, enum proc_id b);

/*
 * Child side, after exec: set the title, drop privileges in the fixed order
 * (docs/architecture.md), install the seccomp filter, then run
 * info->main(). root is the chroot directory (NULL: no chroot, not root),
 * user the account to become (NULL: stay). Never returns.
 */
KEEP_NORETURN void proc_child_start(const struct proc_info *info,
    const char *root, const char *user, int foreground, int verbosity);

/*
 * The message loop of a child: poll every link, receive, decode against
 * ctx->handlers and dispatch. Returns 0 when a handler sets ctx->quit or
 * the parent goes away.
 */
int proc_loop(struct proc_ctx *ctx);

/*
 * proc_loop with a timer: tick(arg) runs every every_ms milliseconds
 * (> 0), between messages, for as long as the loop does (the store's
 * expiry of old records).
 */
int proc_loop_every(
    struct proc_ctx *ctx, unsigned every_ms, void (*tick)(void *), void *arg);

/*
 * After the loop, when the process is told to stop: dispatch what the
 * peers had already sent (not the parent's), without waiting for more.
 * The parent stops every process at once, so a write a peer sent just
 * before (and may have acknowledged to its client) would otherwise be
 * lost to a clean restart. At most PROC_DRAIN_MAX messages a link.
 */
#define PROC_DRAIN_MAX 4096
void proc_drain(struct proc_ctx *ctx);

/*
 * For a process with its own event loop (the front's epoll, the vmm's VM
 * processes): call this when ctx->fd[from] is readable. It receives and
 * dispatches one message (buf: MSG_BUFSZ bytes); a link to a peer that
 * closed is closed and set to -1 (the parent sends a new one with
 * MSG_CTL_PEER when the peer is back). Returns 0, or -1 when the link to
 * the parent is gone and the process should exit.
 */
int proc_link_event(
    struct proc_ctx *ctx, enum proc_id from, void *buf, size_t bufsz);

/*
 * Receiver side of a grant carried in message m: verifies it with this
 * process's own link key, for this process's link, m's request id and the
 * current time (host/grant.h). Returns GRANT_OK, a GRANT_ERR_*, or
 * GRANT_ERR_ARG when the parent has not sent this process a key.
 */
struct grant;
int proc_grant_verify(const struct proc_ctx *ctx, const struct msg *m,
    const void *grant, size_t len, struct grant *out);

#endif

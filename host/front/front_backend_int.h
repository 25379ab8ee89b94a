/*
 * Internals of the front's backend, shared by host/front/front_backend.c (links,
 * tokens, decisions), host/front/front_sandbox.c (sandboxes over the vmm) and
 * host/front/front_files.c (workspace files over the vmm) and host/front/front_run.c
 * (runs over the vmm).
 */
#ifndef KEEP_HOST_FRONT_BACKEND_INT_H
#define KEEP_HOST_FRONT_BACKEND_INT_H

#include <stdarg.h>
#include <stdint.h>

#include "host/api/api.h"
#include "host/front/front_backend.h"
#include "host/msg.h"
#include "host/proc_egress.h"
#include "lib/memfd.h"

/* The grant of an authorize, kept in the call's authz_room for its op
 * (call->authz). */
struct fb_authz {
	uint64_t reqid; /* the grant is bound to it */
	enum proc_id link;
	int deferred; /* the op decides (exec: on the program's name) */
	/* A ports route: the policy's answer for the port, asked with the
	 * route's decision (fb_port_check reads it). */
	unsigned port;
	int port_allowed;
	struct msg_policy_decision d;
};

#define FB_WAIT_BUCKETS 256 /* a power of two */

/* Refusals without a principal: an interval, the sources counted apart
 * in one, and the entries of their own per source and in all. */
#define FB_ANON_INTERVAL_MS 60000
#define FB_ANON_SOURCES 64
#define FB_ANON_EACH 8
#define FB_ANON_ENTRIES 128

struct fb_run; /* a run in flight at the vmm (host/front/front_run.c) */
struct fb_wait; /* a task's call in flight (host/front/front_backend.c) */

/* How long a deferred run may wait for the vmm: longer than any run's
 * time limit (keepd.yaml caps it) plus boot and teardown. */
#define FB_RUN_WAIT_MS (11 * 60 * 1000)

/*
 * The front process's ctx->arg points to a struct whose first member is
 * its struct front_backend *: message handlers reach the backend that way.
 */

struct front_backend {
	struct proc_ctx *ctx;
	struct api_backend ops;
	uint8_t *buf; /* MSG_BUFSZ, for synchronous calls */
	uint64_t next_reqid;
	/* Calls of suspended tasks (fb_call), hashed by request id. */
	struct fb_wait *waits[FB_WAIT_BUCKETS];
	unsigned nwaits;
	/* Decisions asked in this pass of the loop, sent at its end. */
	struct {
		struct msg_batch_hdr h;
		struct msg_policy_decide_entry e[MSG_DECIDE_BATCH_MAX];
	} * dbatch;
	uint32_t dbatch_n;
	/* Requests to the vmm queued in this pass (fb_flush_vmm). */
	struct fb_batch {
		uint32_t count;
		size_t len;
		uint8_t buf[MSG_MAX_PAYLOAD];
	} * vbatch;
	struct token_verifier *tv;
	const void *tv_keys, *tv_config; /* what tv was built from */
	/* Links to guests' ports (host/front/front_links.c): the same keys,
	 * the audience TOKEN_LINK_AUD. */
	struct token_verifier *link_tv;
	const void *link_tv_keys, *link_tv_config;
	struct fb_run *runs; /* list */
	struct fb_revoked *revoked; /* host/front/front_revoke.c */
	struct fb_locks *locks; /* host/front/front_lock.c */
	/* For /metrics: guest boot times (le 1, 2, 5, 10, 20, 50, 100 ms,
	 * +Inf) and runs by how they ended (enum run_status). */
	uint64_t boot_bucket[8], boot_count, boot_sum_us;
	uint64_t runs_by_status[11]; /* enum run_status, RUN_NOCWD the last */
	uint8_t *audit_buf; /* entries waiting for fb_audit_flush */
	size_t audit_len;
	uint32_t audit_count;
	uint64_t audit_since_ms; /* monotonic, when the first one waited */
	struct fb_scheds *scheds; /* host/front/front_sched.c */
	struct fb_watch *watches; /* host/front/front_watch.c */
	int64_t test_clock_s; /* > 0: schedules' time (keepd -T), seconds */
	const char *zones; /* "NAME\tRULE\n" lines (MSG_CTL_ZONES), or NULL */
	size_t zones_len;
	/* The store refused an audit append for room: until one commits
	 * again, every request waits for its entry
	 * (fb_audit_decision_commit). */
	int audit_full;
	/* Refusals without a principal (no token, or one that does not
	 * verify), this interval: the first few of each source are entries
	 * of their own, the rest counted per source (host/front/front_audit.c),
	 * so that a flood costs the log a bounded number of entries. */
	struct fb_anon {
		char peer[48];
		char action[64];
		char reason[96]; /* the first counted one's */
		uint64_t seen, counted;
	} anon[FB_ANON_SOURCES];
	unsigned anon_n; /* slots in use */
	uint64_t anon_other; /* counted without a slot of their own */
	uint64_t anon_since_ms; /* monotonic, the interval's start */
	unsigned anon_entries; /* entries of their own this interval */
	/* For /metrics: such refusals recorded as entries of their own,
	 * counted into an aggregate entry. */
	uint64_t anon_total[2];
	/* Env snapshots from the vmm, numbered in the order it made them,
	 * and the syncs to the store running now, one per sandbox
	 * (fb_sync_env). */
	uint64_t env_seq;
	struct fb_env_sync *env_syncs;
};

/* fb_call reply flags. */
#define FB_R_VARIABLE 0x1u /* *rlen is a bound, not the exact size */
#define FB_R_FD 0x2u /* a descriptor comes with the reply */
/* A descriptor may come with it (a port's socket: none when refused);
 * the payload says which. */
#define FB_R_FD_OPT 0x4u

int fb_call(struct front_backend *, enum proc_id peer, uint32_t type,
    uint64_t reqid, const void *q, size_t qlen, int qfd, uint32_t rtype,
    uint32_t rflags, void *r, size_t *rlen, int *rfd, struct api_error *err);
void fb_dispatch(struct front_backend *, enum proc_id from, size_t len, int fd);
/* Send the decisions the tasks asked for in this pass, in one message. */
void fb_flush_decisions(struct front_backend *);
/* Send the tasks' requests to the vmm queued in this pass, in one. */
void fb_flush_vmm(struct front_backend *);
/* Fail the tasks' calls whose peer has not answered in time. */
void fb_expire_waits(struct front_backend *);
int fb_fail(struct api_error *, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* flags: DECIDE_* (host/msg.h). */
/* fb_mint, then a token.mint entry naming why and the new token's jti,
 * committed before the token is handed out. */
int fb_mint_recorded(struct front_backend *, const struct api_call *,
    cap_set_t caps, int64_t exp, const char *sbx, const char *why,
    struct api_token *out, struct api_error *err);
int fb_decide(struct front_backend *, const struct api_principal *, enum cap_id,
    enum proc_id link, const char *target, uint64_t reqid, uint32_t flags,
    struct msg_policy_decision *, struct api_error *);
/* One request to the store and its reply, decoded into hdr (reqid 0: a
 * fresh one). *reply is malloc'd, the caller frees it. A full store is
 * API_ESTORAGE. */
struct store_wire_reply;
int fb_store_call(struct front_backend *, uint64_t reqid, uint16_t type,
    const void *q, size_t qlen, void **reply, size_t *rlen,
    struct store_wire_reply *hdr, char *next, struct api_error *err);
/* The same with a descriptor sent along (qfd, kept by the caller). */
int fb_store_call_fd(struct front_backend *, uint64_t reqid, uint16_t type,
    const void *q, size_t qlen, int qfd, void **reply, size_t *rlen,
    struct store_wire_reply *hdr, char *next, struct api_error *err);
/* The one record of db under k1 (and k2, or NULL): API_OK and the
 * store's answer in *status; with STORE_OK, *rec and *len point into
 * *reply, which the caller frees (also when *status is another). A key
 * the store cannot take is the error bad_key, saying bad_msg. */
int fb_store_get(struct front_backend *, unsigned db, const char *k1,
    const char *k2, int bad_key, const char *bad_msg, void **reply,
    const void **rec, size_t *len, uint32_t *status, struct api_error *err);

/* Records that outlive a restart (host/front/front_persist.c). Each returns an
 * API_* code; the run record is best effort and only logged. */
struct msg_vmm_sandbox_info;
int fb_persist_sandbox(struct front_backend *, const struct api_principal *,
    const struct msg_vmm_sandbox_info *, const struct api_sandbox_spec *,
    struct api_error *);
int fb_forget_sandbox(struct front_backend *, const struct api_principal *,
    const char *id, struct api_error *);
int fb_persist_sandbox_end(struct front_backend *, const struct api_principal *,
    const char *id, int64_t expires_at, struct api_error *);
/* The metadata of sandbox id from its store record (*out malloc'd, keys
 * and values too; none when the record is not who's). */
int fb_sandbox_metadata(struct front_backend *, const struct api_principal *,
    const char *id, struct api_kv **out, size_t *n, struct api_error *);
/* api_kv arrays as the API layer frees them: each key and value, then
 * the array. fb_kv_copy: 0, or -1 out of memory (*out NULL). */
int fb_kv_copy(
    const struct api_kv *in, size_t n, struct api_kv **out, size_t *nout);
void fb_kv_free(struct api_kv *kv, size_t n);
int fb_persist_env(struct front_backend *, const struct api_principal *,
    const char *id, const char *key, const char *value, struct api_error *);
int fb_forget_env(struct front_backend *, const struct api_principal *,
    const char *id, const char *key, struct api_error *);
void fb_persist_ops(struct api_backend *);
/* One record put or deleted, authorized by a dry-run decision of cap on
 * target for who (the store checks the grant). */
int fb_store_put(struct front_backend *, const struct api_principal *,
    enum cap_id cap, const char *target, unsigned db, const void *rec,
    size_t reclen, struct api_error *);
int fb_store_del(struct front_backend *, const struct api_principal *,
    enum cap_id cap, const char *target, unsigned db, const char *k1,
    const char *k2, struct api_error *);
int fb_persist_image(struct front_backend *, const struct api_principal *,
    const struct api_image *, struct api_error *);
int fb_forget_image(struct front_backend *, const struct api_principal *,
    const char *name, struct api_error *);
/* How long audit entries may wait for the store (a crash loses at most
 * that much of the audit log; docs/threat-model.md). */
#define FB_AUDIT_DELAY_MS 5

/* Send the audit entries made since the last flush, in one message. */
void fb_audit_flush(struct front_backend *);
/* The aggregate entries of refusals without a principal, now. */
void fb_audit_anon_flush(struct front_backend *);
void fb_image_ops(struct api_backend *);
void fb_lock_ops(struct api_backend *);
void fb_locks_free(struct front_backend *);
/* API_OK, or API_ELOCKED when decision d needs the sandbox's lock and
 * the call does not name it (Keep-Lock). */
int fb_lock_check(struct front_backend *, const struct api_call *,
    const char *sbx, const struct msg_policy_decision *d, struct api_error *);
/* The identity of the link to peer as it is now: 0 if there is none or
 * its peer has gone; another value once the parent has replaced it. */
uint64_t fb_link_id(struct front_backend *, enum proc_id peer);
int fb_sync_env(struct front_backend *, const struct api_principal *,
    const char *id, const char *env, size_t env_len, struct api_error *);
void fb_persist_run(struct front_backend *, const struct api_principal *,
    const char *id, const char *run_id, const char *command, int ok,
    const struct api_run_result *, int64_t started_ms);

/* A vmm sandbox status (enum sbx_status) as the API error. */
int fb_sbx_error(int status, struct api_error *err);
int fb_contexts_max(struct front_backend *fb, const struct api_call *call,
    uint32_t *max, struct api_error *err);

/* Give back the concurrency slot a DECIDE_ENTER decision took. */
void fb_leave(struct front_backend *, const char *principal);
int fb_refusal(
    const struct msg_policy_decision *, enum cap_id, struct api_error *);
/* A token derived from the caller's (call->token). */
int fb_mint(struct front_backend *, const struct api_call *, cap_set_t caps,
    int64_t exp, const char *sbx, struct api_token *out, struct api_error *err);
/* The same, for a link to port of sbx (port 0: a token, as fb_mint). */
int fb_mint_port(struct front_backend *, const struct api_call *,
    cap_set_t caps, int64_t exp, const char *sbx, unsigned port,
    struct api_token *out, struct api_error *err);
/* host/front/front_links.c */
void fb_link_ops(struct api_backend *);

/* host/front/front_sandbox.c */
void fb_sandbox_ops(struct api_backend *);

/* host/front/front_audit.c */
void fb_audit_decision(struct front_backend *, const struct api_call *,
    const char *target, const struct msg_policy_decision *);
/*
 * The allowed decision's entry, committed before the operation is done
 * when the operation can change anything (or the store was last found
 * full): API_OK once it is durable, API_ESTORAGE (507) when the store has
 * no room for it, so no operation is acknowledged without its entry.
 */
int fb_audit_decision_commit(struct front_backend *, const struct api_call *,
    const char *target, const struct msg_policy_decision *, struct api_error *);
/* An operation's own allow or deny entry (POST /v1/tokens); err NULL:
 * batched, else committed and waited for, as fb_audit_decision_commit. */
int fb_audit_outcome(struct front_backend *, const struct api_call *,
    const char *action, const char *target, int allow, const char *rule,
    const char *detail, struct api_error *err);
/* Whether the request with capability cap must wait for its entry. */
int fb_audit_must_commit(const struct front_backend *, enum cap_id cap);
/* An allowed decision whose operation the sandbox's lock refused (423). */
void fb_audit_lock_refusal(struct front_backend *, const struct api_call *,
    const char *target, const struct msg_policy_decision *);
/* What runs this box's guests, "kvm" or "trap", as run results and their
 * audit entries name it. */
const char *fb_platform(const struct front_backend *);
void fb_audit_event(struct front_backend *, const struct api_call *,
    const char *action, const char *target, const char *detail);
int fb_revoked(void *fb, const char *jti);
/* A jti the store has just recorded as revoked until exp_s. */
void fb_revoked_add(struct front_backend *, const char *jti, int64_t exp_s);
void fb_revoked_free(struct front_backend *);
void fb_audit_ops(struct api_backend *);
extern const struct msg_handler fb_store_handlers[];
extern const size_t fb_store_nhandlers;

/* host/front/front_files.c */
void fb_file_ops(struct api_backend *);

/* host/front/front_run.c */
void fb_run_ops(struct api_backend *);
void fb_context_ops(struct api_backend *); /* host/front/front_context.c */
/* A python execute's results line out of res->err into res->results
 * (host/front/front_run.c). */
void fb_take_results(struct api_run_result *res, const char *nonce);
/* A run that answers no request: done(fb, arg, rc, res, err) is called
 * from the loop when it ends, and owns res->out and res->err. */
typedef void (*fb_run_done_fn)(struct front_backend *, void *arg, int rc,
    struct api_run_result *res, const struct api_error *err);
int fb_run_async(struct front_backend *, const struct api_call *,
    const char *id, const struct api_exec *, fb_run_done_fn, void *arg,
    struct api_error *);
int fb_run_command_async(struct front_backend *, const struct api_call *,
    const char *id, const struct api_command *, fb_run_done_fn, void *arg,
    struct api_error *);

/* host/front/front_watch.c: files/watch streams. */
struct fb_watch;
void fb_watch_ops(struct api_backend *);
/* From the loop: stop the watches whose client went; keep the others'
 * connections alive. */
void fb_watch_tick(struct front_backend *);
void fb_watch_end_all(struct front_backend *, const char *reason);
extern const struct msg_handler fb_watch_handlers[];
extern const size_t fb_watch_nhandlers;

/* host/front/front_sched.c: schedules and their timers. */
struct fb_scheds;
void fb_sched_ops(struct api_backend *);
/* From the loop: load the schedules once, then fire what is due. */
void fb_sched_tick(struct front_backend *);
void fb_sched_free(struct front_backend *);

/* host/front/front_async.c: execute/async and its webhook. */
void fb_async_ops(struct api_backend *);
int fb_async_h_webhook_reply(struct proc_ctx *, const struct msg *);
#define FB_ASYNC_HANDLERS                                                      \
	{                                                                      \
		MSG_EGRESS_WEBHOOK_REPLY, PROC_BIT(PROC_EGRESS),               \
		    sizeof(struct msg_egress_rep), MSG_H_FD,                   \
		    fb_async_h_webhook_reply                                   \
	}
void fb_runs_fail_all(struct front_backend *);
/* Secrets (host/front/front_secrets.c, docs/secrets.md). */
void fb_secret_ops(struct api_backend *);
extern const struct msg_handler fb_secret_handlers[];
extern const size_t fb_secret_nhandlers;
int fb_run_secrets(struct front_backend *, const struct api_call *,
    const char *sandbox, uint64_t reqid, const struct api_kv *env, size_t nenv,
    int context, struct api_error *err);
extern const struct msg_handler fb_run_handlers[];
extern const size_t fb_run_nhandlers;

#endif

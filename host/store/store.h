/*
 * The store: keep's persistent state on one LMDB environment, and the
 * tamper-evident audit log. Used by the `keepd: store` process (through
 * store_service_handle, host/store/store_wire.h) and by `keep audit`.
 *
 * Layout: one environment (data.mdb, lock.mdb) in a directory, normally
 * <state_dir>/db. Named databases, one per record kind (enum store_db).
 * Every value is a versioned record: a 4-byte header (kind tag, version,
 * two zero bytes) and little-endian fields; strings are a uint16 length
 * (NUL included) and bytes ending in their only NUL; blobs a uint32 length
 * and bytes. Every record read back is validated (store_record_check)
 * and must match the key it was found under. docs/store.md has the
 * layouts.
 *
 * Errors: every function returns STORE_OK (0) or a STORE_E_* code (4000
 * and up, never an errno); store_strerror() names it.
 *
 * Records handed out (get, list) are views: their string pointers point
 * into a malloc'd copy of the value, returned through `mem`; free(mem)
 * releases the record. Nothing handed out points into the map.
 *
 * Caveats:
 * - Every call runs its own transaction and ends it before returning; no
 *   transaction outlives a call, so a caller may block between calls.
 * - One struct store per process and thread: MDB_NOTLS is not used and the
 *   handle is not locked. Other processes may open the same directory.
 * - MDB_MAP_FULL is STORE_E_FULL, after one growth step when the map may
 *   grow (store_config.map_max); the failed write leaves nothing behind
 *   and reads keep working. A full disk at commit is STORE_E_NOSPC.
 * - Commits are synchronous (fsync): a write that returned STORE_OK
 *   survives kill -9 and power loss.
 */
#ifndef KEEP_STORE_H
#define KEEP_STORE_H

#include <stddef.h>
#include <stdint.h>

enum store_err {
	STORE_OK = 0,
	STORE_E_BASE = 4000,
	STORE_E_ARG, /* bad argument (string too long, NUL inside) */
	STORE_E_NOTFOUND, /* no such record */
	STORE_E_EXISTS, /* record exists (create-only put) */
	STORE_E_FULL, /* the map is full (MDB_MAP_FULL); reads still work */
	STORE_E_NOSPC, /* the disk is full at commit */
	STORE_E_CORRUPT, /* a record read back failed validation */
	STORE_E_VERSION, /* schema or record version not understood */
	STORE_E_NOMEM, /* out of memory */
	STORE_E_IO, /* other LMDB or system failure */
	STORE_E_RDONLY, /* write on a read-only handle */
	STORE_E_CHAIN, /* the audit chain is broken (see verify) */
	STORE_E_SIG, /* checkpoint signature or key mismatch */
	STORE_E_MSG, /* malformed service message */
	STORE_E_GRANT, /* the grant does not authorize this write */
	STORE_E_SENDER, /* this process may not send this request */
	STORE_E_TOOBIG, /* record or reply above its bound */
	STORE_E_LAST
};

const char *store_strerror(int err);

/* The named databases; their numbers travel in service messages. */
enum store_db {
	STORE_DB_META = 0, /* schema version, audit head, checkpoint */
	STORE_DB_SANDBOXES, /* id -> struct store_sandbox */
	STORE_DB_RUNS, /* sandbox NUL run -> struct store_run */
	STORE_DB_AUDIT, /* big-endian uint64 seq -> struct store_audit */
	STORE_DB_COUNTERS, /* principal NUL name -> struct store_counter */
	STORE_DB_REVOCATIONS, /* jti -> struct store_revocation */
	STORE_DB_IDEMPOTENCY, /* principal NUL key -> struct store_idem */
	STORE_DB_IMAGES, /* name -> struct store_image */
	STORE_DB_ENV, /* sandbox NUL name -> struct store_env */
	STORE_DB_FILES, /* sandbox NUL path -> struct store_file */
	STORE_DB_SCHEDULES, /* id -> struct store_schedule */
	STORE_DB_SCHED_RUNS, /* schedule NUL seq -> struct store_sched_run */
	STORE_DB_SECRETS, /* name -> struct store_secret (docs/secrets.md) */
	STORE_DB_COUNT
};

/* Name of a database ("sandboxes"), NULL when out of range. */
const char *store_db_name(unsigned db);

#define STORE_SCHEMA_VERSION 1
#define STORE_RECORD_VERSION 1

/* Bounds, in bytes without the NUL. */
#define STORE_ID_MAX 64 /* sandbox and run ids */
#define STORE_NAME_MAX 128 /* principal, image, counter, env, idem key */
#define STORE_TEXT_MAX 512 /* commands, audit text fields */
/* File paths: sandbox NUL path must fit LMDB's 511-byte key limit. */
#define STORE_PATH_MAX 400
#define STORE_META_MAX 32 /* metadata pairs per sandbox */
#define STORE_VALUE_MAX 8192 /* env and metadata values */
#define STORE_OUTPUT_MAX (8u << 20) /* run stdout, stderr each */
#define STORE_FILE_MAX (16u << 20) /* file contents */
#define STORE_BODY_MAX (1u << 20) /* idempotent response body */
#define STORE_HASH_BYTES 32 /* BLAKE2b-256 */

/* ---- the environment ------------------------------------------------ */

struct store;

struct store_config {
	uint64_t map_size; /* initial map size; 0: 64 MiB */
	uint64_t map_max; /* grow up to this on MAP_FULL; 0: never grow */
	int readonly; /* 1: open read-only (keep audit) */
	uint64_t idem_ttl_ms; /* 0: 24 h */
	/* 1: MDB_NOSYNC, commits are not durable. For fuzzing and
	 * benchmarks that measure the baseline only; keepd never sets it. */
	int nosync;
};

/*
 * Keep bytes of disk allocated for the store past its data file's end
 * (fallocate, renewed as it is used), so that other users of the file
 * system (the workspaces) cannot take the room its next writes need.
 * 0: none. store_reserve_left: what is allocated and unused now.
 */
void store_set_reserve(struct store *, uint64_t bytes);
uint64_t store_reserve_left(struct store *);

/*
 * Open (creating when not read-only) the environment in directory dir,
 * which must exist. Checks the schema version and clears reader slots
 * left by dead processes. Returns STORE_OK, STORE_E_VERSION (a schema
 * this build does not know), STORE_E_CORRUPT (the schema record is not
 * one), STORE_E_NOTFOUND (read-only and no store), STORE_E_RDONLY (no
 * permission), STORE_E_FULL (no room for the databases), STORE_E_NOMEM
 * or STORE_E_IO.
 */
int store_open(
    const char *dir, const struct store_config *cfg, struct store **out);

/*
 * Group commit. Between store_batch_begin and store_batch_end, each write
 * runs in a child transaction of one write transaction (its failure undoes
 * it alone), and store_batch_end commits them with one sync: 0, or the
 * first failure of a commit made for the batch, after which none of its
 * writes may be reported as done. Reads in between see what was committed
 * before the batch: the caller ends the batch before reading. Where the
 * map has less than 8 MiB free, no batch opens and each write goes alone
 * (the map grows only with no transaction open).
 */
int store_batch_begin(struct store *st);
int store_batch_end(struct store *st);
void store_close(struct store *st);

/* The current map size in bytes (after growth). */
uint64_t store_map_size(struct store *st);

/*
 * The bytes the store can still write: the least of the map's room up
 * to map_max (map_size when it may not grow) past the pages in use, and
 * the file system's free room for data.mdb plus what is left of the
 * reserve (store_set_reserve). Pages LMDB frees and reuses are not
 * counted, so it errs low. UINT64_MAX when it cannot be told.
 */
uint64_t store_room(struct store *st);

/*
 * Below this room, the service records no refusal without a principal
 * (an entry whose principal is empty, decision deny, rule "token": no
 * token, or one that does not verify): what is left is kept for the
 * decisions of authenticated requests, so that a flood of requests
 * without a token cannot fill the audit log and turn every tenant's
 * request into 507 (docs/store.md).
 */
#define STORE_UNATTRIBUTED_FLOOR (128ULL << 20)
/* keep status warns below this room (and /metrics' alert, docs/store.md). */
#define STORE_ROOM_WARN (512ULL << 20)
/* keepd's store: its map starts at 64 MiB and grows up to 4 GiB. */
#define STORE_KEEPD_MAP_SIZE (64ULL << 20)
#define STORE_KEEPD_MAP_MAX (4ULL << 30)

/*
 * A consistent, compacted copy of the whole environment into directory
 * dir (which must exist and hold no data.mdb): LMDB's mdb_env_copy2 with
 * MDB_CP_COMPACT, inside one read transaction, so it runs beside a
 * writer in another process (keep store backup). Returns STORE_OK,
 * STORE_E_NOSPC, STORE_E_RDONLY or STORE_E_IO (errno says more).
 */
int store_copy(struct store *st, const char *dir);

/* ---- records -------------------------------------------------------- */

enum store_sandbox_status {
	STORE_SBX_CREATING = 1,
	STORE_SBX_RUNNING,
	STORE_SBX_STOPPED,
	STORE_SBX_DELETED
};

struct store_sandbox {
	const char *id; /* [A-Za-z0-9_-]{1,64} */
	const char *image;
	const char *owner; /* principal that created it */
	int64_t created_ms, expires_ms; /* unix ms */
	uint32_t status; /* enum store_sandbox_status */
	uint32_t nmeta; /* <= STORE_META_MAX */
	const char *meta_key[STORE_META_MAX];
	const char *meta_val[STORE_META_MAX];
};

enum store_run_status {
	STORE_RUN_QUEUED = 1,
	STORE_RUN_RUNNING,
	STORE_RUN_EXITED, /* exit_code is valid */
	STORE_RUN_KILLED,
	STORE_RUN_TIMEOUT,
	STORE_RUN_FAULT,
	STORE_RUN_FAILED /* could not start */
};

struct store_run {
	const char *sandbox;
	const char *id;
	const char *principal;
	const char *command; /* "python", "cmd:sha256sum", ... */
	uint32_t status; /* enum store_run_status */
	int32_t exit_code;
	int64_t started_ms, finished_ms; /* 0: not yet */
	const void *out; /* stdout, out_len <= STORE_OUTPUT_MAX */
	uint32_t out_len;
	const void *err;
	uint32_t err_len;
	const char *reason; /* "" or "timeout", "output-limit", ... */
};

enum store_decision {
	STORE_DECISION_ALLOW = 1,
	STORE_DECISION_DENY,
	STORE_DECISION_INFO /* an event, not a decision (lifecycle, reload) */
};

/*
 * One audit entry. On append the caller fills time_ms..detail; the store
 * sets seq, prev and hash. hash = BLAKE2b-256 of the encoded entry up to
 * (not including) hash, so it covers seq and prev: the chain.
 */
struct store_audit {
	uint64_t seq; /* 1, 2, 3, ... without gaps */
	int64_t time_ms;
	const char *request_id; /* "" when none */
	const char *principal;
	const char *jti; /* "" when no token */
	const char *action; /* "sandbox:write", "sandbox.create", ... */
	const char *target;
	uint32_t decision; /* enum store_decision */
	const char *rule; /* deciding rule, "" when none */
	const char *detail; /* e.g. the policy hash on reload */
	/* The X-Request-Id the client sent, kept apart from request_id
	 * (always the server's own, unique): NULL or "" when none. Encoded
	 * after detail only when given, so older entries are unchanged. */
	const char *client_request_id;
	uint8_t prev[STORE_HASH_BYTES];
	uint8_t hash[STORE_HASH_BYTES];
};

struct store_counter {
	const char *principal;
	const char *name; /* "budget", "runs", ... */
	int64_t value;
	int64_t updated_ms;
};

struct store_revocation {
	const char *jti;
	int64_t exp_s; /* the token's exp; the record is kept until then */
	int64_t revoked_ms;
};

struct store_idem {
	const char *principal;
	const char *key; /* the Idempotency-Key header */
	int64_t created_ms;
	uint8_t req_hash[STORE_HASH_BYTES]; /* of method, route and body */
	uint32_t status; /* the first response's HTTP status */
	const void *body; /* and its body */
	uint32_t body_len; /* <= STORE_BODY_MAX */
};

struct store_image {
	const char *name;
	const char *version;
	uint8_t digest[STORE_HASH_BYTES];
	uint64_t size;
	const char *signer; /* key id of the signature that verified */
	int64_t added_ms;
};

struct store_env {
	const char *sandbox;
	const char *key;
	const char *value; /* <= STORE_VALUE_MAX */
};

/* A secret: its value sealed to the vmm's key (crypto_box_seal), never
 * in clear here. */
#define STORE_SEALED_MAX 4200
struct store_secret {
	const char *name;
	const void *sealed;
	uint32_t sealed_len; /* 1..STORE_SEALED_MAX */
	int64_t created_ms, updated_ms;
	const char *set_by; /* the principal of the last PUT */
};

struct store_file {
	const char *sandbox;
	const char *path; /* absolute, inside the workspace */
	uint32_t mode; /* permission bits */
	int64_t mtime_ms;
	const void *data;
	uint32_t len; /* <= STORE_FILE_MAX */
};

/*
 * A schedule (docs/schedules.md): spec is its definition as compact JSON,
 * which the front validates again whenever it reads one back.
 */
#define STORE_SPEC_MAX 32768
#define STORE_SCHED_OUT_MAX 16384 /* a fire's stdout, stderr each */
struct store_schedule {
	const char *id;
	const char *owner; /* principal that created it */
	const char *spec; /* <= STORE_SPEC_MAX */
	uint64_t caps; /* the creating token's capabilities */
	int64_t created_ms, updated_ms;
	int64_t last_fire_ms; /* the occurrence last fired or skipped; 0 */
	uint64_t next_seq; /* the next fire's number */
	/* The jtis of the token that last wrote it and of its ancestors,
	 * separated by spaces (<= STORE_TOKENS_MAX), or NULL/"": none (a
	 * record written before they were kept). Last, and only when not
	 * empty, so older records decode as before. */
	const char *tokens;
};
#define STORE_TOKENS_MAX 640

enum store_sched_run_status {
	STORE_SCHED_COMPLETED = 1, /* it ran: exit_code is valid */
	STORE_SCHED_FAILED, /* it could not start or did not finish */
	STORE_SCHED_REFUSED /* the policy refused the fire */
};

/* One fire of a schedule. seq is 20 decimal digits, so keys sort. */
struct store_sched_run {
	const char *schedule;
	const char *seq;
	const char *owner;
	uint32_t status; /* enum store_sched_run_status */
	int32_t exit_code;
	uint32_t catch_up; /* 1: a fire missed while keepd was down */
	int64_t fire_ms; /* the occurrence (scheduled time) */
	int64_t started_ms, finished_ms;
	const char *sandbox; /* where it ran, "" if nowhere */
	const char *run_id; /* the run's request id, "" */
	const char *detail; /* "" or why it failed, the stop reason */
	const void *out; /* out_len <= STORE_SCHED_OUT_MAX */
	uint32_t out_len;
	const void *err;
	uint32_t err_len;
};

/*
 * Codecs, pure. encode: validate *in and write a malloc'd record to
 * *out. decode: validate len bytes at buf and point *out into them.
 * Return STORE_OK, STORE_E_ARG (encode: a field out of bounds),
 * STORE_E_CORRUPT (decode: anything out of place), STORE_E_VERSION or
 * STORE_E_NOMEM.
 */
int store_sandbox_encode(
    const struct store_sandbox *in, void **out, size_t *len);
int store_sandbox_decode(
    const void *buf, size_t len, struct store_sandbox *out);
int store_run_encode(const struct store_run *in, void **out, size_t *len);
int store_run_decode(const void *buf, size_t len, struct store_run *out);
int store_audit_encode(const struct store_audit *in, void **out, size_t *len);
int store_audit_decode(const void *buf, size_t len, struct store_audit *out);
int store_counter_encode(
    const struct store_counter *in, void **out, size_t *len);
int store_counter_decode(
    const void *buf, size_t len, struct store_counter *out);
int store_revocation_encode(
    const struct store_revocation *in, void **out, size_t *len);
int store_revocation_decode(
    const void *buf, size_t len, struct store_revocation *out);
int store_idem_encode(const struct store_idem *in, void **out, size_t *len);
int store_idem_decode(const void *buf, size_t len, struct store_idem *out);
int store_image_encode(const struct store_image *in, void **out, size_t *len);
int store_image_decode(const void *buf, size_t len, struct store_image *out);
int store_env_encode(const struct store_env *in, void **out, size_t *len);
int store_env_decode(const void *buf, size_t len, struct store_env *out);
int store_file_encode(const struct store_file *in, void **out, size_t *len);
int store_file_decode(const void *buf, size_t len, struct store_file *out);
int store_schedule_encode(
    const struct store_schedule *in, void **out, size_t *len);
int store_schedule_decode(
    const void *buf, size_t len, struct store_schedule *out);
int store_sched_run_encode(
    const struct store_sched_run *in, void **out, size_t *len);
int store_sched_run_decode(
    const void *buf, size_t len, struct store_sched_run *out);
int store_secret_encode(const struct store_secret *in, void **out, size_t *len);
int store_secret_decode(const void *buf, size_t len, struct store_secret *out);

/*
 * Validate a value found in database db (any kind, including the meta
 * records). Returns STORE_OK, STORE_E_CORRUPT or STORE_E_VERSION.
 */
int store_record_check(unsigned db, const void *buf, size_t len);

/*
 * The key a record is stored under, from its encoded bytes (which must
 * have passed store_record_check for db): written to key (keymax bytes),
 * length to *klen. Returns STORE_OK, STORE_E_CORRUPT or STORE_E_TOOBIG.
 */
int store_record_key(unsigned db, const void *buf, size_t len, void *key,
    size_t keymax, size_t *klen);

/* ---- generic access ------------------------------------------------- */

/*
 * Put an encoded record into db (not META or AUDIT: those have their
 * own calls); the key comes from the record. flags STORE_PUT_CREATE:
 * STORE_E_EXISTS if the key is there. Returns STORE_OK, STORE_E_ARG,
 * STORE_E_CORRUPT (record invalid), STORE_E_VERSION, STORE_E_EXISTS,
 * STORE_E_FULL, STORE_E_NOSPC, STORE_E_RDONLY, STORE_E_TOOBIG (LMDB
 * refused the size) or STORE_E_IO.
 */
#define STORE_PUT_CREATE 0x1u
int store_put(
    struct store *st, unsigned db, const void *rec, size_t len, unsigned flags);

/*
 * Get or delete by key parts: k1 is the id, jti, name or principal; k2
 * the second part for two-part keys (runs, counters, idempotency, env,
 * files), NULL otherwise. get returns the validated record as a malloc'd
 * copy in *rec (free it), length *len. Return STORE_OK, STORE_E_ARG,
 * STORE_E_NOTFOUND, STORE_E_CORRUPT and (delete) the write errors.
 * Deleting a sandbox also deletes its runs, env and files; deleting a
 * schedule its fires (STORE_DB_SCHED_RUNS).
 */
int store_get(struct store *st, unsigned db, const char *k1, const char *k2,
    void **rec, size_t *len);
int store_delete(struct store *st, unsigned db, const char *k1, const char *k2);

/*
 * A page of records, in key order. For two-part keys prefix is the first
 * part (the sandbox, the principal) and the page holds only its records;
 * NULL lists the whole database. after is the cursor: the last key part
 * of the previous page (for AUDIT, the decimal seq), NULL for the start.
 * At most limit (1..STORE_PAGE_MAX) records. next is "" at the end, else
 * the cursor for the following page. Returns STORE_OK, STORE_E_ARG (a
 * two-part database without prefix, a bad cursor or limit),
 * STORE_E_CORRUPT (a record in the range failed validation; the page is
 * then empty), STORE_E_NOMEM or STORE_E_IO. A struct store_page is large
 * (about 20 KiB): allocate it.
 */
#define STORE_PAGE_MAX 1000
#define STORE_CURSOR_MAX (STORE_PATH_MAX + 1)
struct store_page {
	size_t n;
	void *rec[STORE_PAGE_MAX]; /* each malloc'd, validated */
	size_t len[STORE_PAGE_MAX];
	char next[STORE_CURSOR_MAX];
};
int store_list(struct store *st, unsigned db, const char *prefix,
    const char *after, size_t limit, struct store_page *page);
void store_page_free(struct store_page *page);

/* ---- typed helpers -------------------------------------------------- */

/* A record struct with its backing memory; free(mem) releases both. */
int store_sandbox_get(
    struct store *st, const char *id, struct store_sandbox *out, void **mem);
int store_run_get(struct store *st, const char *sandbox, const char *run,
    struct store_run *out, void **mem);

/*
 * Budgets and counters: add delta to (principal, name) atomically (a
 * missing counter starts at 0); *value gets the new value (may be NULL).
 * store_counter_set overwrites. Return the write errors.
 */
int store_counter_add(struct store *st, const char *principal, const char *name,
    int64_t delta, int64_t now_ms, int64_t *value);
int store_counter_set(struct store *st, const char *principal, const char *name,
    int64_t value, int64_t now_ms);
int store_counter_get(
    struct store *st, const char *principal, const char *name, int64_t *value);

/*
 * Revocations: the record lives until exp_s. store_revoked sets *revoked
 * to 1 for a revoked jti whose exp is still ahead, else 0, and returns
 * STORE_OK or a read error. store_expire drops revocations past exp and
 * idempotency keys past the TTL; *n (may be NULL) counts them.
 */
int store_revoke(
    struct store *st, const char *jti, int64_t exp_s, int64_t now_ms);
int store_revoked(
    struct store *st, const char *jti, int64_t now_s, int *revoked);
int store_expire(struct store *st, int64_t now_ms, uint64_t *n);

/*
 * Idempotency keys: get answers STORE_E_NOTFOUND for a key older than
 * the TTL (it is then dead, though store_expire removes it later). put
 * is create-only among live keys: STORE_E_EXISTS when a live record is
 * there (an expired one is replaced). The API compares req_hash: equal
 * returns the first response, different is a 409.
 */
int store_idem_get(struct store *st, const char *principal, const char *key,
    int64_t now_ms, struct store_idem *out, void **mem);
int store_idem_put(
    struct store *st, const struct store_idem *rec, int64_t now_ms);

/* ---- the audit log -------------------------------------------------- */

/*
 * Append n entries in one transaction (n = 1 for a single entry), in
 * order. The store sets seq, prev and hash (the caller's values are
 * ignored); *first_seq (may be NULL) gets the first one's seq. Returns
 * STORE_OK, STORE_E_ARG (a field out of bounds; nothing appended), the
 * write errors, or STORE_E_CHAIN / STORE_E_CORRUPT if the head it builds
 * on does not validate (nothing is appended to a broken log).
 */
int store_audit_append(struct store *st, const struct store_audit *e, size_t n,
    uint64_t *first_seq);

/* The head: last seq (0 when empty) and its hash. */
int store_audit_head(
    struct store *st, uint64_t *seq, uint8_t hash[STORE_HASH_BYTES]);

enum store_verify_reason {
	STORE_VERIFY_OK = 0,
	STORE_VERIFY_CORRUPT, /* entry does not decode */
	STORE_VERIFY_KEY, /* key malformed or not the entry's seq */
	STORE_VERIFY_MISSING, /* a seq is absent (deleted) */
	STORE_VERIFY_HASH, /* entry's own hash wrong (edited) */
	STORE_VERIFY_LINK, /* prev does not match the entry before */
	STORE_VERIFY_HEAD, /* head record does not match the last entry */
	STORE_VERIFY_CHECKPOINT /* checkpoint bad, unsigned or wrong key */
};

struct store_verify {
	uint64_t entries; /* entries checked */
	uint64_t first_seq, last_seq; /* of the entries present */
	uint64_t checkpoint_seq; /* 0: no checkpoint (chain from genesis) */
	uint64_t bad_seq; /* first broken entry (0 if intact) */
	int reason; /* enum store_verify_reason */
	char message[200]; /* one line for humans */
};

/*
 * Walk the whole log in one read transaction. pubkey (may be NULL): the
 * Ed25519 key a checkpoint must be signed with; NULL accepts the key
 * recorded in the checkpoint (the signature is still checked). Returns
 * STORE_OK (intact), STORE_E_CHAIN (v->bad_seq and v->reason name the
 * first broken entry), or STORE_E_IO / STORE_E_NOMEM.
 */
int store_audit_verify(
    struct store *st, const uint8_t *pubkey, struct store_verify *v);

/*
 * Retention: remove the oldest entries, those older than now_ms -
 * max_age_ms (if max_age_ms) and those beyond the newest max_entries (if
 * max_entries), never the last one. Before removing it writes, in the
 * same transaction, a checkpoint naming the last removed seq and its
 * hash, signed with sk (Ed25519, libsodium's 64-byte secret key), so the
 * rest still verifies. Works in batches, one transaction each. *removed
 * (may be NULL) counts them.
 */
int store_audit_prune(struct store *st, int64_t now_ms, uint64_t max_age_ms,
    uint64_t max_entries, const uint8_t sk[64], uint64_t *removed);

/* The checkpoint, if any (STORE_E_NOTFOUND otherwise). */
struct store_checkpoint {
	uint64_t seq; /* last removed entry */
	uint8_t hash[STORE_HASH_BYTES]; /* its hash */
	int64_t time_ms;
	uint64_t removed; /* entries removed so far, all prunes */
	uint8_t pubkey[32];
	uint8_t sig[64]; /* Ed25519 over the record before sig */
};
int store_audit_checkpoint(struct store *st, struct store_checkpoint *cp);

#endif

/* Internals shared by the files of host/store/. */
#ifndef KEEP_STORE_INT_H
#define KEEP_STORE_INT_H

#include <stddef.h>
#include <stdint.h>

#include <lmdb.h>

#include "host/store/store.h"

struct store {
	MDB_env *env;
	MDB_dbi dbi[STORE_DB_COUNT];
	int have[STORE_DB_COUNT]; /* read-only: the database exists */
	int readonly;
	uint64_t map_size, map_max;
	uint64_t idem_ttl_ms;
	/* Room kept allocated past the data file's end (store_set_reserve),
	 * and the offset up to which it is allocated now. */
	uint64_t reserve, reserved_to;
	/* Between store_batch_begin and store_batch_end: the write
	 * transaction the batch's writes are children of, and the first
	 * failure of a commit made for the batch. */
	MDB_txn *batch;
	int batch_rc;
};

/* An LMDB or errno value as a STORE_E_* code. */
int store_mdb_err(int rc);

/*
 * Run fn in one write transaction and commit it. On STORE_E_FULL, grows
 * the map once (when allowed) and runs fn again in a fresh transaction,
 * so fn must not keep state between calls.
 */
typedef int (*store_txn_fn)(struct store *st, MDB_txn *txn, void *arg);
int store_write(struct store *st, store_txn_fn fn, void *arg);
/* Begin a read transaction (following a map grown by another process). */
int store_read_begin(struct store *st, MDB_txn **txn);

/* Record kind tags, the first byte of every value. */
#define STORE_TAG_SANDBOX 'S'
#define STORE_TAG_RUN 'R'
#define STORE_TAG_AUDIT 'A'
#define STORE_TAG_COUNTER 'C'
#define STORE_TAG_REVOCATION 'V'
#define STORE_TAG_IDEM 'K'
#define STORE_TAG_IMAGE 'I'
#define STORE_TAG_ENV 'E'
#define STORE_TAG_FILE 'F'
#define STORE_TAG_SCHEDULE 'D'
#define STORE_TAG_SCHED_RUN 'G'
#define STORE_TAG_SECRET 'Z'
#define STORE_TAG_SCHEMA 'M'
#define STORE_TAG_HEAD 'H'
#define STORE_TAG_CHECKPOINT 'P'

#define STORE_HDR_BYTES 4

/* Keys in STORE_DB_META. */
#define STORE_META_SCHEMA "schema"
#define STORE_META_HEAD "head"
#define STORE_META_CHECKPOINT "checkpoint"

/* Longest key: sandbox NUL path. */
#define STORE_KEY_MAX (STORE_ID_MAX + 1 + STORE_PATH_MAX)

/* A growable output buffer; err sticks at the first failure. */
struct store_wbuf {
	uint8_t *p;
	size_t len, cap;
	int err;
};

void store_w_hdr(struct store_wbuf *w, uint8_t tag);
/* A header whose third byte holds flags: STORE_HDR_EXTRA, an optional
 * field is present (kinds that have one say where). */
#define STORE_HDR_EXTRA 0x01
void store_w_hdr_flags(struct store_wbuf *w, uint8_t tag, uint8_t flags);
void store_w_u32(struct store_wbuf *w, uint32_t v);
void store_w_u64(struct store_wbuf *w, uint64_t v);
void store_w_bytes(struct store_wbuf *w, const void *p, size_t n);
void store_w_str(struct store_wbuf *w, const char *s, size_t max);
void store_w_blob(struct store_wbuf *w, const void *p, size_t n, size_t max);
int store_w_finish(struct store_wbuf *w, void **out, size_t *len);

/* Bounds-checked reader over untrusted bytes. */
struct store_rbuf {
	const uint8_t *p;
	size_t left;
	int err;
};

int store_r_hdr(struct store_rbuf *r, uint8_t tag);
/* The same, with the flags of a kind that has them (any outside allowed
 * is STORE_E_CORRUPT). */
int store_r_hdr_flags(
    struct store_rbuf *r, uint8_t tag, uint8_t allowed, uint8_t *flags);
uint32_t store_r_u32(struct store_rbuf *r);
uint64_t store_r_u64(struct store_rbuf *r);
void store_r_bytes(struct store_rbuf *r, void *dst, size_t n);
const char *store_r_str(struct store_rbuf *r, size_t max);
const void *store_r_blob(struct store_rbuf *r, size_t max, uint32_t *n);
int store_r_end(struct store_rbuf *r);

/* 1 for [A-Za-z0-9_-]{1,max}. */
int store_id_ok(const char *s, size_t max);
/* 1 for a non-empty string of at most max bytes without control bytes. */
int store_name_ok(const char *s, size_t max);

/* Build a key from its parts; returns its length, 0 if it does not fit
 * or a part is invalid for db. */
size_t store_key_make(
    unsigned db, const char *k1, const char *k2, uint8_t key[STORE_KEY_MAX]);

/* Meta records. */
struct store_head {
	uint64_t seq;
	uint8_t hash[STORE_HASH_BYTES];
};
int store_head_encode(const struct store_head *h, void **out, size_t *len);
int store_head_decode(const void *buf, size_t len, struct store_head *out);
int store_checkpoint_encode(
    const struct store_checkpoint *cp, void **out, size_t *len);
int store_checkpoint_decode(
    const void *buf, size_t len, struct store_checkpoint *out);
/* Length of the signed part of an encoded checkpoint. */
size_t store_checkpoint_signed_len(void);

/* BLAKE2b-256 of an encoded audit entry's hashed part. */
void store_audit_hash(const void *rec, size_t len, uint8_t out[32]);

void store_be64(uint8_t out[8], uint64_t v);
uint64_t store_get_be64(const uint8_t in[8]);

#endif

/*
 * The audit log: append-only, hash-chained, verifiable, prunable from a
 * signed checkpoint.
 *
 * Entry n stores prev = hash of entry n-1 and its own hash over every
 * byte before the hash field (seq and prev included). The head record in
 * the meta database names the last seq and hash, so a truncated tail is
 * seen too. A checkpoint, signed with Ed25519, stands in for the entries
 * pruned before it: the first entry kept must chain to its hash.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/store/store_int.h"
#include "lib/util.h"

#define PRUNE_BATCH 1000

static int
meta_get(struct store *st, MDB_txn *txn, const char *name, MDB_val *v)
{
	MDB_val k = { strlen(name), (void *)name };
	int rc;

	if (!st->have[STORE_DB_META])
		return STORE_E_NOTFOUND;
	if ((rc = store_mdb_err(mdb_get(txn, st->dbi[STORE_DB_META], &k, v))) !=
	    0)
		return rc;
	return store_record_check(STORE_DB_META, v->mv_data, v->mv_size) == 0
	    ? STORE_OK
	    : STORE_E_CORRUPT;
}

static int
checkpoint_get(
    struct store *st, MDB_txn *txn, struct store_checkpoint *cp, int check_sig)
{
	MDB_val v;
	int rc;

	if ((rc = meta_get(st, txn, STORE_META_CHECKPOINT, &v)) != 0)
		return rc;
	if (store_checkpoint_decode(v.mv_data, v.mv_size, cp) != STORE_OK)
		return STORE_E_CORRUPT;
	if (check_sig &&
	    crypto_sign_verify_detached(cp->sig, v.mv_data,
	        store_checkpoint_signed_len(), cp->pubkey) != 0)
		return STORE_E_SIG;
	return STORE_OK;
}

/* The head: the head record, else the checkpoint, else genesis. */
static int
head_get(struct store *st, MDB_txn *txn, struct store_head *h)
{
	struct store_checkpoint cp;
	MDB_val v;
	int rc;

	memset(h, 0, sizeof(*h));
	rc = meta_get(st, txn, STORE_META_HEAD, &v);
	if (rc == STORE_OK)
		return store_head_decode(v.mv_data, v.mv_size, h) == STORE_OK
		    ? STORE_OK
		    : STORE_E_CORRUPT;
	if (rc != STORE_E_NOTFOUND)
		return rc;
	rc = checkpoint_get(st, txn, &cp, 0);
	if (rc == STORE_OK) {
		h->seq = cp.seq;
		memcpy(h->hash, cp.hash, STORE_HASH_BYTES);
	}
	return rc == STORE_E_NOTFOUND ? STORE_OK : rc;
}

static int
meta_put(struct store *st, MDB_txn *txn, const char *name, const void *rec,
    size_t len)
{
	MDB_val k = { strlen(name), (void *)name }, v = { len, (void *)rec };

	return store_mdb_err(mdb_put(txn, st->dbi[STORE_DB_META], &k, &v, 0));
}

static int
head_put(struct store *st, MDB_txn *txn, const struct store_head *h)
{
	size_t len;
	void *rec;
	int rc;

	if ((rc = store_head_encode(h, &rec, &len)) != STORE_OK)
		return rc;
	rc = meta_put(st, txn, STORE_META_HEAD, rec, len);
	free(rec);
	return rc;
}

int
store_audit_head(
    struct store *st, uint64_t *seq, uint8_t hash[STORE_HASH_BYTES])
{
	struct store_head h;
	MDB_txn *txn;
	int rc;

	if ((rc = store_read_begin(st, &txn)) != STORE_OK)
		return rc;
	rc = head_get(st, txn, &h);
	mdb_txn_abort(txn);
	if (rc == STORE_OK) {
		*seq = h.seq;
		if (hash != NULL)
			memcpy(hash, h.hash, STORE_HASH_BYTES);
	}
	return rc;
}

struct append_arg {
	const struct store_audit *e;
	size_t n;
	uint64_t first;
};

static int
append_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct append_arg *a = arg;
	struct store_head h;
	MDB_cursor *c;
	MDB_val k, v;
	uint8_t key[8];
	int rc;

	if ((rc = head_get(st, txn, &h)) != STORE_OK)
		return rc;
	/* Build only on a head that matches the last entry. */
	if ((rc = mdb_cursor_open(txn, st->dbi[STORE_DB_AUDIT], &c)) != 0)
		return store_mdb_err(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_LAST);
	mdb_cursor_close(c);
	if (rc == 0) {
		struct store_audit last;

		if (k.mv_size != 8 || store_get_be64(k.mv_data) != h.seq ||
		    store_audit_decode(v.mv_data, v.mv_size, &last) != 0 ||
		    memcmp(last.hash, h.hash, STORE_HASH_BYTES) != 0)
			return STORE_E_CHAIN;
	} else if (rc != MDB_NOTFOUND)
		return store_mdb_err(rc);
	a->first = h.seq + 1;
	for (size_t i = 0; i < a->n; i++) {
		struct store_audit e = a->e[i];
		uint8_t *rec;
		size_t len;

		e.seq = h.seq + 1;
		memcpy(e.prev, h.hash, STORE_HASH_BYTES);
		memset(e.hash, 0, STORE_HASH_BYTES);
		if ((rc = store_audit_encode(&e, (void **)&rec, &len)) != 0)
			return rc;
		store_audit_hash(rec, len, rec + len - STORE_HASH_BYTES);
		memcpy(h.hash, rec + len - STORE_HASH_BYTES, STORE_HASH_BYTES);
		h.seq = e.seq;
		store_be64(key, e.seq);
		k.mv_data = key;
		k.mv_size = sizeof(key);
		v.mv_data = rec;
		v.mv_size = len;
		rc = store_mdb_err(
		    mdb_put(txn, st->dbi[STORE_DB_AUDIT], &k, &v, MDB_APPEND));
		free(rec);
		if (rc != STORE_OK)
			return rc == STORE_E_EXISTS ? STORE_E_CHAIN : rc;
	}
	return head_put(st, txn, &h);
}

int
store_audit_append(struct store *st, const struct store_audit *e, size_t n,
    uint64_t *first_seq)
{
	struct append_arg a = { e, n, 0 };
	int rc;

	if (n == 0 || e == NULL)
		return STORE_E_ARG;
	if ((rc = store_write(st, append_fn, &a)) == STORE_OK && first_seq)
		*first_seq = a.first;
	return rc;
}

int
store_audit_checkpoint(struct store *st, struct store_checkpoint *cp)
{
	MDB_txn *txn;
	int rc;

	if ((rc = store_read_begin(st, &txn)) != STORE_OK)
		return rc;
	rc = checkpoint_get(st, txn, cp, 0);
	mdb_txn_abort(txn);
	return rc;
}

/* ---- verify --------------------------------------------------------- */

static int broken(struct store_verify *v, uint64_t seq, int reason,
    const char *fmt, ...) KEEP_PRINTF(4, 5);

static int
broken(struct store_verify *v, uint64_t seq, int reason, const char *fmt, ...)
{
	va_list ap;

	v->bad_seq = seq;
	v->reason = reason;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
	return STORE_E_CHAIN;
}

static int
verify_txn(struct store *st, MDB_txn *txn, const uint8_t *pubkey,
    struct store_verify *v)
{
	uint8_t prev[STORE_HASH_BYTES] = { 0 }, h[STORE_HASH_BYTES];
	struct store_checkpoint cp;
	struct store_head head;
	struct store_audit a;
	uint64_t expect = 1;
	MDB_cursor *c;
	MDB_val k, val;
	int rc, have_head;

	rc = checkpoint_get(st, txn, &cp, 1);
	if (rc == STORE_OK) {
		if (pubkey != NULL && memcmp(pubkey, cp.pubkey, 32) != 0)
			return broken(v, cp.seq + 1, STORE_VERIFY_CHECKPOINT,
			    "checkpoint at entry %" PRIu64
			    " is signed with another key",
			    cp.seq);
		v->checkpoint_seq = cp.seq;
		expect = cp.seq + 1;
		memcpy(prev, cp.hash, STORE_HASH_BYTES);
	} else if (rc == STORE_E_SIG || rc == STORE_E_CORRUPT)
		return broken(v, 1, STORE_VERIFY_CHECKPOINT,
		    "checkpoint is corrupt or its signature does not verify");
	else if (rc != STORE_E_NOTFOUND)
		return rc;
	rc = meta_get(st, txn, STORE_META_HEAD, &val);
	have_head = rc == STORE_OK;
	if (rc == STORE_OK &&
	    store_head_decode(val.mv_data, val.mv_size, &head) != STORE_OK)
		rc = STORE_E_CORRUPT;
	if (rc == STORE_E_CORRUPT)
		return broken(v, expect, STORE_VERIFY_HEAD,
		    "head record is corrupt (after entry %" PRIu64 ")",
		    expect - 1);
	if (rc != STORE_OK && rc != STORE_E_NOTFOUND)
		return rc;
	if (!st->have[STORE_DB_AUDIT])
		goto end;
	if ((rc = mdb_cursor_open(txn, st->dbi[STORE_DB_AUDIT], &c)) != 0)
		return store_mdb_err(rc);
	for (rc = mdb_cursor_get(c, &k, &val, MDB_FIRST); rc == 0;
	     rc = mdb_cursor_get(c, &k, &val, MDB_NEXT)) {
		uint64_t kseq;

		if (k.mv_size != 8) {
			rc = broken(v, expect, STORE_VERIFY_KEY,
			    "entry %" PRIu64 ": a malformed key was inserted "
			    "before it",
			    expect);
			break;
		}
		kseq = store_get_be64(k.mv_data);
		if (kseq > expect) {
			rc = broken(v, expect, STORE_VERIFY_MISSING,
			    "entry %" PRIu64 " is missing (deleted)", expect);
			break;
		}
		if (kseq < expect) {
			rc = broken(v, kseq, STORE_VERIFY_KEY,
			    "entry %" PRIu64 " precedes the checkpoint", kseq);
			break;
		}
		if (store_audit_decode(val.mv_data, val.mv_size, &a) != 0) {
			rc = broken(v, kseq, STORE_VERIFY_CORRUPT,
			    "entry %" PRIu64 " does not decode", kseq);
			break;
		}
		if (a.seq != kseq) {
			rc = broken(v, kseq, STORE_VERIFY_KEY,
			    "entry %" PRIu64 " holds another entry's record "
			    "(reordered)",
			    kseq);
			break;
		}
		store_audit_hash(val.mv_data, val.mv_size, h);
		if (memcmp(h, a.hash, STORE_HASH_BYTES) != 0) {
			rc = broken(v, kseq, STORE_VERIFY_HASH,
			    "entry %" PRIu64 " does not match its hash "
			    "(edited)",
			    kseq);
			break;
		}
		if (memcmp(a.prev, prev, STORE_HASH_BYTES) != 0) {
			rc = broken(v, kseq, STORE_VERIFY_LINK,
			    "entry %" PRIu64 " does not chain to the entry "
			    "before it (edited, inserted or reordered)",
			    kseq);
			break;
		}
		if (v->entries == 0)
			v->first_seq = kseq;
		v->last_seq = kseq;
		v->entries++;
		memcpy(prev, a.hash, STORE_HASH_BYTES);
		expect++;
	}
	mdb_cursor_close(c);
	if (rc == STORE_E_CHAIN)
		return rc;
	if (rc != MDB_NOTFOUND)
		return store_mdb_err(rc);
end:
	if (!have_head) {
		if (v->entries > 0 || v->checkpoint_seq > 0)
			return broken(v, expect - 1, STORE_VERIFY_HEAD,
			    "head record is missing (last entry %" PRIu64 ")",
			    expect - 1);
		return STORE_OK;
	}
	if (head.seq > expect - 1)
		return broken(v, expect, STORE_VERIFY_MISSING,
		    "entry %" PRIu64 " and those after it are missing "
		    "(truncated)",
		    expect);
	if (head.seq < expect - 1)
		return broken(v, head.seq + 1, STORE_VERIFY_HEAD,
		    "entry %" PRIu64 " lies beyond the recorded head "
		    "(appended outside the store)",
		    head.seq + 1);
	if (memcmp(head.hash, prev, STORE_HASH_BYTES) != 0)
		return broken(v, head.seq, STORE_VERIFY_HEAD,
		    "entry %" PRIu64 " does not match the recorded head",
		    head.seq);
	return STORE_OK;
}

int
store_audit_verify(
    struct store *st, const uint8_t *pubkey, struct store_verify *v)
{
	MDB_txn *txn;
	int rc;

	memset(v, 0, sizeof(*v));
	if ((rc = store_read_begin(st, &txn)) != STORE_OK)
		return rc;
	rc = verify_txn(st, txn, pubkey, v);
	mdb_txn_abort(txn);
	if (rc == STORE_OK)
		snprintf(v->message, sizeof(v->message),
		    "%" PRIu64 " entries intact", v->entries);
	return rc;
}

/* ---- retention ------------------------------------------------------ */

struct prune_arg {
	int64_t now_ms;
	uint64_t max_age_ms, max_entries;
	const uint8_t *sk;
	uint64_t removed; /* this batch */
};

static int
prune_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct prune_arg *a = arg;
	struct store_checkpoint cp;
	struct store_head head;
	struct store_audit e;
	uint64_t total;
	MDB_cursor *c;
	MDB_val k, v;
	void *rec;
	size_t len;
	int rc;

	a->removed = 0;
	if ((rc = head_get(st, txn, &head)) != STORE_OK)
		return rc;
	rc = checkpoint_get(st, txn, &cp, 1);
	if (rc == STORE_E_NOTFOUND) {
		memset(&cp, 0, sizeof(cp));
		rc = STORE_OK;
	}
	if (rc != STORE_OK)
		return rc;
	if ((rc = mdb_cursor_open(txn, st->dbi[STORE_DB_AUDIT], &c)) != 0)
		return store_mdb_err(rc);
	total = head.seq - cp.seq;
	for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
	     rc == 0 && a->removed < PRUNE_BATCH;
	     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		int old, many;

		if (k.mv_size != 8 ||
		    store_audit_decode(v.mv_data, v.mv_size, &e) != 0 ||
		    e.seq != cp.seq + 1 || e.seq > head.seq) {
			mdb_cursor_close(c);
			return STORE_E_CHAIN;
		}
		if (e.seq == head.seq)
			break; /* never the last entry */
		old = a->max_age_ms != 0 &&
		    e.time_ms < a->now_ms - (int64_t)a->max_age_ms;
		many =
		    a->max_entries != 0 && total - a->removed > a->max_entries;
		if (!old && !many)
			break;
		cp.seq = e.seq;
		memcpy(cp.hash, e.hash, STORE_HASH_BYTES);
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
		a->removed++;
	}
	mdb_cursor_close(c);
	if (rc != 0 && rc != MDB_NOTFOUND)
		return store_mdb_err(rc);
	if (a->removed == 0)
		return STORE_OK;
	cp.time_ms = a->now_ms;
	cp.removed += a->removed;
	memcpy(cp.pubkey, a->sk + 32, 32);
	memset(cp.sig, 0, sizeof(cp.sig));
	if ((rc = store_checkpoint_encode(&cp, &rec, &len)) != STORE_OK)
		return rc;
	crypto_sign_detached((uint8_t *)rec + store_checkpoint_signed_len(),
	    NULL, rec, store_checkpoint_signed_len(), a->sk);
	rc = meta_put(st, txn, STORE_META_CHECKPOINT, rec, len);
	free(rec);
	/* Without a head record the checkpoint would become the head. */
	if (rc == STORE_OK)
		rc = head_put(st, txn, &head);
	return rc;
}

int
store_audit_prune(struct store *st, int64_t now_ms, uint64_t max_age_ms,
    uint64_t max_entries, const uint8_t sk[64], uint64_t *removed)
{
	struct prune_arg a = { now_ms, max_age_ms, max_entries, sk, 0 };
	struct store_verify v;
	uint64_t total = 0;
	int rc;

	if (removed != NULL)
		*removed = 0;
	if (sk == NULL || (max_age_ms == 0 && max_entries == 0))
		return STORE_E_ARG;
	/* A checkpoint must never paper over a broken chain. */
	if ((rc = store_audit_verify(st, NULL, &v)) != STORE_OK)
		return rc;
	do {
		if ((rc = store_write(st, prune_fn, &a)) != STORE_OK)
			break;
		total += a.removed;
	} while (a.removed == PRUNE_BATCH);
	if (removed != NULL)
		*removed = total;
	return rc;
}

/*
 * Unit tests for the audit chain: appends (single and batched), and every
 * kind of tampering done with the LMDB API directly -- edit (with and
 * without a recomputed hash), deletion, insertion, reordering, a
 * truncated tail, an entry appended outside the store -- each named by
 * store_audit_verify. Retention: pruning keeps the rest verifiable from a
 * signed checkpoint, and a forged or re-signed checkpoint is caught.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <lmdb.h>
#include <sodium.h>

#include "host/store/store.h"
#include "host/store/store_int.h"
#include "lib/util.h"

#define N 20

struct fx {
	char dir[64];
	struct store *st;
	uint8_t pk[32], sk[64];
};

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));
	struct store_audit e[N];

	if (sodium_init() < 0)
		return -1;
	strlcpy(f->dir, "/tmp/test_audit.XXXXXX", sizeof(f->dir));
	if (mkdtemp(f->dir) == NULL || store_open(f->dir, NULL, &f->st) != 0)
		return -1;
	crypto_sign_keypair(f->pk, f->sk);
	memset(e, 0, sizeof(e));
	for (int i = 0; i < N; i++) {
		e[i].time_ms = 1000 * (i + 1);
		e[i].request_id = "req";
		e[i].principal = i % 2 ? "agent-a" : "agent-b";
		e[i].jti = "jti";
		e[i].action = "sandbox:write";
		e[i].target = "sbx_1";
		e[i].decision =
		    i % 3 ? STORE_DECISION_ALLOW : STORE_DECISION_DENY;
		e[i].rule = "role builder";
		e[i].detail = "";
	}
	/* Half one by one, half in a batch. */
	for (int i = 0; i < N / 2; i++) {
		uint64_t seq;

		if (store_audit_append(f->st, &e[i], 1, &seq) != 0 ||
		    seq != (uint64_t)i + 1)
			return -1;
	}
	if (store_audit_append(f->st, &e[N / 2], N / 2, NULL) != 0)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;
	char p[128];

	store_close(f->st);
	snprintf(p, sizeof(p), "%s/data.mdb", f->dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", f->dir);
	unlink(p);
	rmdir(f->dir);
	free(f);
	return 0;
}

/* ---- raw LMDB access, as an attacker with the file would have ------- */

static void
raw_get(struct fx *f, uint64_t seq, uint8_t **val, size_t *len)
{
	MDB_txn *txn;
	uint8_t key[8];
	MDB_val k = { 8, key }, v;

	store_be64(key, seq);
	assert_int_equal(mdb_txn_begin(f->st->env, NULL, MDB_RDONLY, &txn), 0);
	assert_int_equal(mdb_get(txn, f->st->dbi[STORE_DB_AUDIT], &k, &v), 0);
	*val = malloc(v.mv_size);
	memcpy(*val, v.mv_data, v.mv_size);
	*len = v.mv_size;
	mdb_txn_abort(txn);
}

static void
raw_put(struct fx *f, unsigned db, const void *key, size_t klen,
    const void *val, size_t vlen)
{
	MDB_txn *txn;
	MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };

	assert_int_equal(mdb_txn_begin(f->st->env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_put(txn, f->st->dbi[db], &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
}

static void
raw_put_seq(struct fx *f, uint64_t seq, const void *val, size_t len)
{
	uint8_t key[8];

	store_be64(key, seq);
	raw_put(f, STORE_DB_AUDIT, key, 8, val, len);
}

static void
raw_del_seq(struct fx *f, uint64_t seq)
{
	MDB_txn *txn;
	uint8_t key[8];
	MDB_val k = { 8, key };

	store_be64(key, seq);
	assert_int_equal(mdb_txn_begin(f->st->env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_del(txn, f->st->dbi[STORE_DB_AUDIT], &k, NULL), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
}

static void
expect_broken(struct fx *f, uint64_t seq, int reason)
{
	struct store_verify v;

	assert_int_equal(store_audit_verify(f->st, NULL, &v), STORE_E_CHAIN);
	if (v.bad_seq != seq || v.reason != reason)
		fail_msg("expected entry %llu reason %d, got %llu %d: %s",
		    (unsigned long long)seq, reason,
		    (unsigned long long)v.bad_seq, v.reason, v.message);
}

/* Re-encode an entry with one field changed (hash not recomputed). */
static void
edit_target(uint8_t **val, size_t *len, const char *target, int rehash)
{
	struct store_audit a;
	void *rec;

	assert_int_equal(store_audit_decode(*val, *len, &a), 0);
	a.target = target;
	assert_int_equal(store_audit_encode(&a, &rec, len), 0);
	free(*val);
	*val = rec;
	if (rehash)
		store_audit_hash(rec, *len, *val + *len - STORE_HASH_BYTES);
}

/* ---- tests ---------------------------------------------------------- */

static void
test_intact(void **state)
{
	struct fx *f = *state;
	struct store_verify v;
	uint64_t seq;
	uint8_t h[32];

	assert_int_equal(store_audit_verify(f->st, NULL, &v), STORE_OK);
	assert_int_equal(v.entries, N);
	assert_int_equal(v.first_seq, 1);
	assert_int_equal(v.last_seq, N);
	assert_int_equal(store_audit_head(f->st, &seq, h), 0);
	assert_int_equal(seq, N);
}

static void
test_edit_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *val;
	size_t len;

	raw_get(f, 7, &val, &len);
	edit_target(&val, &len, "sbx_2", 0);
	raw_put_seq(f, 7, val, len);
	expect_broken(f, 7, STORE_VERIFY_HASH);
	free(val);
}

static void
test_edit_rehashed_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *val;
	size_t len;

	/* Whoever recomputes the entry's own hash breaks the next link. */
	raw_get(f, 7, &val, &len);
	edit_target(&val, &len, "sbx_2", 1);
	raw_put_seq(f, 7, val, len);
	expect_broken(f, 8, STORE_VERIFY_LINK);
	free(val);
}

static void
test_flip_any_byte_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *val;
	size_t len;

	raw_get(f, 3, &val, &len);
	for (size_t i = 0; i < len; i++) {
		struct store_verify v;

		val[i] ^= 0x01;
		raw_put_seq(f, 3, val, len);
		assert_int_equal(
		    store_audit_verify(f->st, NULL, &v), STORE_E_CHAIN);
		assert_true(v.bad_seq == 3 || v.bad_seq == 4);
		val[i] ^= 0x01;
	}
	raw_put_seq(f, 3, val, len);
	free(val);
	assert_int_equal(
	    store_audit_verify(f->st, NULL, &(struct store_verify){ 0 }),
	    STORE_OK);
}

static void
test_delete_detected(void **state)
{
	struct fx *f = *state;

	raw_del_seq(f, 5);
	expect_broken(f, 5, STORE_VERIFY_MISSING);
}

static void
test_delete_first_detected(void **state)
{
	struct fx *f = *state;

	raw_del_seq(f, 1);
	expect_broken(f, 1, STORE_VERIFY_MISSING);
}

static void
test_truncate_detected(void **state)
{
	struct fx *f = *state;

	raw_del_seq(f, N);
	raw_del_seq(f, N - 1);
	expect_broken(f, N - 1, STORE_VERIFY_MISSING);
}

static void
test_insert_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *vals[N + 1];
	size_t lens[N + 1];

	/* Insert a forged entry at 10, renumbering the rest up by one: the
	 * forger gets 10 to chain to 9, but the old 10 (now at 11) does not
	 * chain to the forgery. */
	for (uint64_t s = 10; s <= N; s++)
		raw_get(f, s, &vals[s], &lens[s]);
	for (uint64_t s = N; s >= 10; s--) {
		struct store_audit a;
		void *rec;
		size_t len;

		assert_int_equal(store_audit_decode(vals[s], lens[s], &a), 0);
		a.seq = s + 1;
		assert_int_equal(store_audit_encode(&a, &rec, &len), 0);
		store_audit_hash(rec, len, (uint8_t *)rec + len - 32);
		raw_put_seq(f, s + 1, rec, len);
		free(rec);
	}
	{
		struct store_audit a;
		uint8_t *prev;
		size_t plen;
		void *rec;
		size_t len;

		raw_get(f, 9, &prev, &plen);
		assert_int_equal(store_audit_decode(vals[10], lens[10], &a), 0);
		a.target = "forged";
		assert_int_equal(
		    store_audit_decode(prev, plen, &(struct store_audit){ 0 }),
		    0);
		memcpy(a.prev, prev + plen - 32, 32);
		assert_int_equal(store_audit_encode(&a, &rec, &len), 0);
		store_audit_hash(rec, len, (uint8_t *)rec + len - 32);
		raw_put_seq(f, 10, rec, len);
		free(rec);
		free(prev);
	}
	expect_broken(f, 11, STORE_VERIFY_LINK);
	for (uint64_t s = 10; s <= N; s++)
		free(vals[s]);
}

static void
test_reorder_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *a, *b;
	size_t la, lb;

	raw_get(f, 12, &a, &la);
	raw_get(f, 13, &b, &lb);
	raw_put_seq(f, 12, b, lb);
	raw_put_seq(f, 13, a, la);
	expect_broken(f, 12, STORE_VERIFY_KEY);
	free(a);
	free(b);
}

static void
test_append_outside_detected(void **state)
{
	struct fx *f = *state;
	uint8_t *val;
	size_t len;

	/* A well-chained entry appended without the store's head. */
	raw_get(f, N, &val, &len);
	{
		struct store_audit a;
		void *rec;
		size_t l;

		assert_int_equal(store_audit_decode(val, len, &a), 0);
		memcpy(a.prev, a.hash, 32);
		a.seq = N + 1;
		assert_int_equal(store_audit_encode(&a, &rec, &l), 0);
		store_audit_hash(rec, l, (uint8_t *)rec + l - 32);
		raw_put_seq(f, N + 1, rec, l);
		free(rec);
	}
	free(val);
	expect_broken(f, N + 1, STORE_VERIFY_HEAD);
	/* The store refuses to build on a broken log. */
	{
		struct store_audit e = { 0, 1, "", "p", "", "x", "", 3, "", "",
			NULL, { 0 }, { 0 } };

		assert_int_equal(
		    store_audit_append(f->st, &e, 1, NULL), STORE_E_CHAIN);
	}
}

static void
test_bad_key_detected(void **state)
{
	struct fx *f = *state;
	uint8_t key[9] = { 0 };
	uint8_t *val;
	size_t len;

	/* A 9-byte key sorts between 4 and 5. */
	store_be64(key, 4);
	raw_get(f, 4, &val, &len);
	raw_put(f, STORE_DB_AUDIT, key, sizeof(key), val, len);
	free(val);
	expect_broken(f, 5, STORE_VERIFY_KEY);
}

static void
test_append_refuses_bad_fields(void **state)
{
	struct fx *f = *state;
	struct store_audit e = { 0, 1, "", "p", "", "", "", 3, "", "", NULL,
		{ 0 }, { 0 } };
	uint64_t seq;

	assert_int_equal(store_audit_append(f->st, &e, 1, NULL), STORE_E_ARG);
	e.action = "ok";
	e.decision = 9;
	assert_int_equal(store_audit_append(f->st, &e, 1, NULL), STORE_E_ARG);
	assert_int_equal(store_audit_head(f->st, &seq, NULL), 0);
	assert_int_equal(seq, N);
}

static void
test_prune_checkpoint(void **state)
{
	struct fx *f = *state;
	struct store_checkpoint cp;
	struct store_verify v;
	uint64_t removed;
	uint8_t otherpk[32], othersk[64];

	/* By age: entries with time < 5000 go (1..4). */
	assert_int_equal(
	    store_audit_prune(f->st, 10000, 5001, 0, f->sk, &removed), 0);
	assert_int_equal(removed, 4);
	assert_int_equal(store_audit_verify(f->st, f->pk, &v), STORE_OK);
	assert_int_equal(v.checkpoint_seq, 4);
	assert_int_equal(v.first_seq, 5);
	assert_int_equal(v.entries, N - 4);
	/* By count. */
	assert_int_equal(store_audit_prune(f->st, 0, 0, 6, f->sk, &removed), 0);
	assert_int_equal(removed, N - 4 - 6);
	assert_int_equal(store_audit_verify(f->st, f->pk, &v), STORE_OK);
	assert_int_equal(v.entries, 6);
	assert_int_equal(store_audit_checkpoint(f->st, &cp), 0);
	assert_int_equal(cp.removed, N - 6);
	/* Never the last entry. */
	assert_int_equal(store_audit_prune(f->st, 0, 0, 1, f->sk, &removed), 0);
	assert_int_equal(
	    store_audit_prune(f->st, INT64_MAX / 2, 1, 0, f->sk, &removed), 0);
	assert_int_equal(removed, 0);
	assert_int_equal(store_audit_verify(f->st, NULL, &v), STORE_OK);
	assert_int_equal(v.entries, 1);
	/* Appends go on from the chain. */
	{
		struct store_audit e = { 0, 1, "", "p", "", "x", "", 3, "", "",
			NULL, { 0 }, { 0 } };
		uint64_t seq;

		assert_int_equal(store_audit_append(f->st, &e, 1, &seq), 0);
		assert_int_equal(seq, N + 1);
	}
	assert_int_equal(store_audit_verify(f->st, f->pk, &v), STORE_OK);
	/* Another trusted key: the checkpoint is refused. */
	crypto_sign_keypair(otherpk, othersk);
	assert_int_equal(store_audit_verify(f->st, otherpk, &v), STORE_E_CHAIN);
	assert_int_equal(v.reason, STORE_VERIFY_CHECKPOINT);
	/* A checkpoint edited on disk no longer verifies. */
	{
		void *rec;
		size_t len;

		cp.seq = 3;
		assert_int_equal(store_checkpoint_encode(&cp, &rec, &len), 0);
		raw_put(f, STORE_DB_META, STORE_META_CHECKPOINT,
		    strlen(STORE_META_CHECKPOINT), rec, len);
		free(rec);
	}
	assert_int_equal(store_audit_verify(f->st, NULL, &v), STORE_E_CHAIN);
	assert_int_equal(v.reason, STORE_VERIFY_CHECKPOINT);
}

static void
test_prune_refuses_broken(void **state)
{
	struct fx *f = *state;
	uint64_t removed;

	raw_del_seq(f, 3);
	assert_int_equal(
	    store_audit_prune(f->st, 0, 0, 2, f->sk, &removed), STORE_E_CHAIN);
	assert_int_equal(removed, 0);
	expect_broken(f, 3, STORE_VERIFY_MISSING);
}

/* More than one batch of 1000: several transactions, one checkpoint each,
 * the last one standing. */
static void
test_prune_batches(void **state)
{
	struct fx *f = *state;
	struct store_audit e[250];
	struct store_verify v;
	struct store_checkpoint cp;
	uint64_t removed;

	memset(e, 0, sizeof(e));
	for (size_t i = 0; i < 250; i++) {
		e[i].time_ms = 100000;
		e[i].request_id = "";
		e[i].principal = "p";
		e[i].jti = "";
		e[i].action = "bulk";
		e[i].target = "";
		e[i].decision = STORE_DECISION_INFO;
		e[i].rule = "";
		e[i].detail = "";
	}
	for (int i = 0; i < 10; i++)
		assert_int_equal(store_audit_append(f->st, e, 250, NULL), 0);
	assert_int_equal(
	    store_audit_prune(f->st, 0, 0, 7, f->sk, &removed), STORE_OK);
	assert_int_equal(removed, N + 2500 - 7);
	assert_int_equal(store_audit_verify(f->st, f->pk, &v), STORE_OK);
	assert_int_equal(v.entries, 7);
	assert_int_equal(v.first_seq, N + 2500 - 6);
	assert_int_equal(store_audit_checkpoint(f->st, &cp), 0);
	assert_int_equal(cp.removed, removed);
	assert_int_equal(cp.seq, N + 2500 - 7);
}

static void
test_list_audit(void **state)
{
	struct fx *f = *state;
	struct store_page *pg = calloc(1, sizeof(*pg));
	struct store_audit a;

	assert_int_equal(
	    store_list(f->st, STORE_DB_AUDIT, NULL, "15", 3, pg), 0);
	assert_int_equal(pg->n, 3);
	assert_int_equal(store_audit_decode(pg->rec[0], pg->len[0], &a), 0);
	assert_int_equal(a.seq, 16);
	assert_string_equal(pg->next, "18");
	store_page_free(pg);
	assert_int_equal(
	    store_list(f->st, STORE_DB_AUDIT, NULL, "x", 3, pg), STORE_E_ARG);
	free(pg);
}

int
main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_intact),
		T(test_edit_detected),
		T(test_edit_rehashed_detected),
		T(test_flip_any_byte_detected),
		T(test_delete_detected),
		T(test_delete_first_detected),
		T(test_truncate_detected),
		T(test_insert_detected),
		T(test_reorder_detected),
		T(test_append_outside_detected),
		T(test_bad_key_detected),
		T(test_append_refuses_bad_fields),
		T(test_prune_checkpoint),
		T(test_prune_refuses_broken),
		T(test_prune_batches),
		T(test_list_audit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

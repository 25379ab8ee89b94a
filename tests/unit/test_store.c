/*
 * Unit tests for the store: record codecs (round trips, every truncation
 * and corruption refused), the generic and typed operations on a real
 * LMDB environment in a temporary directory, records corrupted on disk
 * refused on read, MAP_FULL with a tiny map (clean error, reads work,
 * growth when allowed), idempotency expiry, revocations, counters and
 * persistence across a reopen.
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

#include "host/store/store.h"
#include "host/store/store_int.h"
#include "lib/util.h"

struct fx {
	char dir[64];
	struct store *st;
};

static void
rmtree(const char *dir)
{
	char p[128];

	snprintf(p, sizeof(p), "%s/data.mdb", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/lock.mdb", dir);
	unlink(p);
	rmdir(dir);
}

static int
open_with(struct fx *f, uint64_t map, uint64_t max)
{
	struct store_config cfg = { map, max, 0, 0, 0 };

	return store_open(f->dir, &cfg, &f->st);
}

static int
setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	strlcpy(f->dir, "/tmp/test_store.XXXXXX", sizeof(f->dir));
	if (mkdtemp(f->dir) == NULL)
		return -1;
	if (open_with(f, 0, 0) != STORE_OK)
		return -1;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fx *f = *state;

	store_close(f->st);
	rmtree(f->dir);
	free(f);
	return 0;
}

static void
sample_sandbox(struct store_sandbox *s, const char *id)
{
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->image = "js";
	s->owner = "agent-b";
	s->created_ms = 1700000000000;
	s->expires_ms = 1700000600000;
	s->status = STORE_SBX_RUNNING;
	s->nmeta = 2;
	s->meta_key[0] = "team";
	s->meta_val[0] = "infra";
	s->meta_key[1] = "ticket";
	s->meta_val[1] = "";
}

static void
put_sandbox(struct store *st, const char *id)
{
	struct store_sandbox s;
	size_t len;
	void *rec;

	sample_sandbox(&s, id);
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_OK);
	assert_int_equal(store_put(st, STORE_DB_SANDBOXES, rec, len, 0), 0);
	free(rec);
}

/* A 2 KiB environment record for sandbox, key id: the store's return. */
static int
put_env_filled(struct store *st, const char *sandbox, const char *id, char fill)
{
	struct store_env e;
	char val[2048];
	size_t len;
	void *rec;
	int rc;

	memset(val, fill, sizeof(val) - 1);
	val[sizeof(val) - 1] = '\0';
	e.sandbox = sandbox;
	e.key = id;
	e.value = val;
	assert_int_equal(store_env_encode(&e, &rec, &len), 0);
	rc = store_put(st, STORE_DB_ENV, rec, len, 0);
	free(rec);
	return rc;
}

/* ---- codecs --------------------------------------------------------- */

static void
test_sandbox_roundtrip(void **state)
{
	struct store_sandbox s, d;
	size_t len;
	void *rec;

	(void)state;
	sample_sandbox(&s, "sbx_1");
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_OK);
	assert_int_equal(store_sandbox_decode(rec, len, &d), STORE_OK);
	assert_string_equal(d.id, "sbx_1");
	assert_string_equal(d.image, "js");
	assert_string_equal(d.owner, "agent-b");
	assert_int_equal(d.created_ms, 1700000000000);
	assert_int_equal(d.nmeta, 2);
	assert_string_equal(d.meta_key[1], "ticket");
	assert_string_equal(d.meta_val[0], "infra");
	/* Every truncation and one extra byte are refused. */
	for (size_t i = 0; i < len; i++)
		assert_int_not_equal(store_sandbox_decode(rec, i, &d), 0);
	{
		uint8_t *big = malloc(len + 1);

		memcpy(big, rec, len);
		big[len] = 0;
		assert_int_equal(
		    store_sandbox_decode(big, len + 1, &d), STORE_E_CORRUPT);
		free(big);
	}
	free(rec);
}

static void
test_sandbox_encode_refuses(void **state)
{
	struct store_sandbox s;
	size_t len;
	void *rec;

	(void)state;
	sample_sandbox(&s, "bad id");
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_E_ARG);
	sample_sandbox(&s, "ok");
	s.status = 99;
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_E_ARG);
	sample_sandbox(&s, "ok");
	s.nmeta = STORE_META_MAX + 1;
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_E_ARG);
	sample_sandbox(&s, "ok");
	s.image = NULL;
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), STORE_E_ARG);
}

/* Flip each byte of each record kind: never a crash, never accepted as a
 * different record without the decoder's checks passing. */
static void
flip_all(unsigned db, const uint8_t *rec, size_t len)
{
	uint8_t *c = malloc(len);

	for (size_t i = 0; i < len; i++) {
		memcpy(c, rec, len);
		c[i] ^= 0xff;
		(void)store_record_check(db, c, len);
	}
	/* The header and a string length are always checked. */
	memcpy(c, rec, len);
	c[0] ^= 0x20;
	assert_int_equal(store_record_check(db, c, len), STORE_E_CORRUPT);
	memcpy(c, rec, len);
	c[1] = 2;
	assert_int_equal(store_record_check(db, c, len), STORE_E_VERSION);
	/* A flag no kind knows; an optional field's flag taken away or
	 * given (audit entries, schedules) leaves bytes out of place. */
	memcpy(c, rec, len);
	c[2] ^= 0x80;
	assert_int_equal(store_record_check(db, c, len), STORE_E_CORRUPT);
	memcpy(c, rec, len);
	c[2] ^= 0x01;
	assert_int_equal(store_record_check(db, c, len), STORE_E_CORRUPT);
	free(c);
}

static void
test_all_codecs(void **state)
{
	static const char out[] = "hello\n";
	struct store_run r = { "sbx_1", "run_1", "agent-b", "python",
		STORE_RUN_EXITED, 3, 10, 20, out, 6, "", 0, "" };
	struct store_audit a = { 0, 5, "req-1", "agent-b", "jti1",
		"sandbox:write", "sbx_1", STORE_DECISION_ALLOW, "role builder",
		"", "cli-7", { 0 }, { 0 } };
	struct store_counter c = { "agent-b", "budget", -5, 7 };
	struct store_revocation v = { "jti1", 1800000000, 9 };
	struct store_idem k = { "agent-b", "key-1", 100, { 1 }, 201, "{}", 2 };
	struct store_image im = { "js", "1.0", { 2 }, 4096, "k4.pid.x", 1 };
	struct store_env e = { "sbx_1", "PATH", "/bin" };
	struct store_file fl = { "sbx_1", "/w/a.txt", 0644, 5, "abc", 3 };
	struct {
		unsigned db;
		int rc;
		void *rec;
		size_t len;
	} t[9];
	struct store_run rd;
	struct store_file fd;
	struct store_idem kd;

	(void)state;
	t[0].db = STORE_DB_RUNS;
	t[0].rc = store_run_encode(&r, &t[0].rec, &t[0].len);
	t[1].db = STORE_DB_AUDIT;
	t[1].rc = store_audit_encode(&a, &t[1].rec, &t[1].len);
	t[2].db = STORE_DB_COUNTERS;
	t[2].rc = store_counter_encode(&c, &t[2].rec, &t[2].len);
	t[3].db = STORE_DB_REVOCATIONS;
	t[3].rc = store_revocation_encode(&v, &t[3].rec, &t[3].len);
	t[4].db = STORE_DB_IDEMPOTENCY;
	t[4].rc = store_idem_encode(&k, &t[4].rec, &t[4].len);
	t[5].db = STORE_DB_IMAGES;
	t[5].rc = store_image_encode(&im, &t[5].rec, &t[5].len);
	t[6].db = STORE_DB_ENV;
	t[6].rc = store_env_encode(&e, &t[6].rec, &t[6].len);
	t[7].db = STORE_DB_FILES;
	t[7].rc = store_file_encode(&fl, &t[7].rec, &t[7].len);
	{
		struct store_sandbox s;

		sample_sandbox(&s, "sbx_1");
		t[8].db = STORE_DB_SANDBOXES;
		t[8].rc = store_sandbox_encode(&s, &t[8].rec, &t[8].len);
	}
	for (size_t i = 0; i < nitems(t); i++) {
		assert_int_equal(t[i].rc, STORE_OK);
		assert_int_equal(
		    store_record_check(t[i].db, t[i].rec, t[i].len), 0);
		/* A record is refused in any other database. */
		for (unsigned db = 1; db < STORE_DB_COUNT; db++)
			if (db != t[i].db)
				assert_int_not_equal(
				    store_record_check(db, t[i].rec, t[i].len),
				    0);
		for (size_t n = 0; n < t[i].len; n++)
			assert_int_not_equal(
			    store_record_check(t[i].db, t[i].rec, n), 0);
		flip_all(t[i].db, t[i].rec, t[i].len);
	}
	assert_int_equal(store_run_decode(t[0].rec, t[0].len, &rd), 0);
	assert_int_equal(rd.out_len, 6);
	assert_memory_equal(rd.out, "hello\n", 6);
	assert_int_equal(rd.exit_code, 3);
	assert_int_equal(store_file_decode(t[7].rec, t[7].len, &fd), 0);
	assert_string_equal(fd.path, "/w/a.txt");
	assert_int_equal(fd.mode, 0644);
	assert_int_equal(store_idem_decode(t[4].rec, t[4].len, &kd), 0);
	assert_int_equal(kd.status, 201);
	for (size_t i = 0; i < nitems(t); i++)
		free(t[i].rec);
	/* Field rules on encode. */
	fl.path = "relative";
	assert_int_equal(
	    store_file_encode(&fl, &t[0].rec, &t[0].len), STORE_E_ARG);
	k.status = 42;
	assert_int_equal(
	    store_idem_encode(&k, &t[0].rec, &t[0].len), STORE_E_ARG);
	r.out_len = STORE_OUTPUT_MAX + 1;
	assert_int_equal(
	    store_run_encode(&r, &t[0].rec, &t[0].len), STORE_E_ARG);
	a.action = "";
	assert_int_equal(
	    store_audit_encode(&a, &t[0].rec, &t[0].len), STORE_E_ARG);
}

static void
test_string_rules(void **state)
{
	/* A string whose length excludes its NUL, or with a NUL inside. */
	uint8_t rec[] = { 'E', 1, 0, 0, 2, 0, 'a', 0, 2, 0, 'k', 0, 3, 0, 'v',
		0, 0 };
	struct store_env e;

	(void)state;
	assert_int_equal(
	    store_env_decode(rec, sizeof(rec), &e), STORE_E_CORRUPT);
	rec[12] = 2;
	assert_int_equal(store_env_decode(rec, sizeof(rec) - 1, &e), STORE_OK);
	assert_string_equal(e.value, "v");
	rec[6] = ' ';
	assert_int_equal(
	    store_env_decode(rec, sizeof(rec) - 1, &e), STORE_E_CORRUPT);
}

/* ---- operations ----------------------------------------------------- */

static void
test_put_get_delete(void **state)
{
	struct fx *f = *state;
	struct store_sandbox s;
	void *mem;

	put_sandbox(f->st, "sbx_1");
	assert_int_equal(store_sandbox_get(f->st, "sbx_1", &s, &mem), 0);
	assert_string_equal(s.owner, "agent-b");
	free(mem);
	assert_int_equal(
	    store_sandbox_get(f->st, "nope", &s, &mem), STORE_E_NOTFOUND);
	assert_int_equal(
	    store_sandbox_get(f->st, "bad id", &s, &mem), STORE_E_ARG);
	{
		struct store_sandbox x;
		size_t len;
		void *rec;

		sample_sandbox(&x, "sbx_1");
		assert_int_equal(store_sandbox_encode(&x, &rec, &len), 0);
		assert_int_equal(store_put(f->st, STORE_DB_SANDBOXES, rec, len,
		                     STORE_PUT_CREATE),
		    STORE_E_EXISTS);
		/* The audit and meta databases have their own calls. */
		assert_int_equal(
		    store_put(f->st, STORE_DB_AUDIT, rec, len, 0), STORE_E_ARG);
		/* A record in the wrong database. */
		assert_int_equal(store_put(f->st, STORE_DB_RUNS, rec, len, 0),
		    STORE_E_CORRUPT);
		free(rec);
	}
	assert_int_equal(
	    store_delete(f->st, STORE_DB_SANDBOXES, "sbx_1", NULL), STORE_OK);
	assert_int_equal(store_delete(f->st, STORE_DB_SANDBOXES, "sbx_1", NULL),
	    STORE_E_NOTFOUND);
}

static void
put_env(struct store *st, const char *sbx, const char *k, const char *v)
{
	struct store_env e = { sbx, k, v };
	size_t len;
	void *rec;

	assert_int_equal(store_env_encode(&e, &rec, &len), 0);
	assert_int_equal(store_put(st, STORE_DB_ENV, rec, len, 0), 0);
	free(rec);
}

static void
test_list_pagination_and_cascade(void **state)
{
	struct fx *f = *state;
	struct store_page *pg = calloc(1, sizeof(*pg));
	char id[16], next[STORE_CURSOR_MAX] = "";
	size_t total = 0;
	struct store_env e;

	for (int i = 0; i < 25; i++) {
		snprintf(id, sizeof(id), "sbx_%02d", i);
		put_sandbox(f->st, id);
	}
	do {
		assert_int_equal(store_list(f->st, STORE_DB_SANDBOXES, NULL,
		                     next[0] ? next : NULL, 10, pg),
		    0);
		total += pg->n;
		strlcpy(next, pg->next, sizeof(next));
		store_page_free(pg);
	} while (next[0] != '\0');
	assert_int_equal(total, 25);

	put_env(f->st, "sbx_01", "A", "1");
	put_env(f->st, "sbx_01", "B", "2");
	put_env(f->st, "sbx_01", "C", "3");
	put_env(f->st, "sbx_02", "A", "x");
	assert_int_equal(
	    store_list(f->st, STORE_DB_ENV, "sbx_01", NULL, 2, pg), 0);
	assert_int_equal(pg->n, 2);
	assert_string_equal(pg->next, "B");
	store_page_free(pg);
	assert_int_equal(
	    store_list(f->st, STORE_DB_ENV, "sbx_01", "B", 2, pg), 0);
	assert_int_equal(pg->n, 1);
	assert_int_equal(store_env_decode(pg->rec[0], pg->len[0], &e), 0);
	assert_string_equal(e.value, "3");
	assert_string_equal(pg->next, "");
	store_page_free(pg);
	/* Two-part databases list per first part only. */
	assert_int_equal(
	    store_list(f->st, STORE_DB_ENV, NULL, NULL, 2, pg), STORE_E_ARG);
	/* Deleting a sandbox deletes its env, and only its. */
	assert_int_equal(
	    store_delete(f->st, STORE_DB_SANDBOXES, "sbx_01", NULL), 0);
	assert_int_equal(
	    store_list(f->st, STORE_DB_ENV, "sbx_01", NULL, 10, pg), 0);
	assert_int_equal(pg->n, 0);
	assert_int_equal(
	    store_list(f->st, STORE_DB_ENV, "sbx_02", NULL, 10, pg), 0);
	assert_int_equal(pg->n, 1);
	store_page_free(pg);
	free(pg);
}

/* Overwrite a value with the LMDB API directly. */
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
test_corrupt_on_disk_refused(void **state)
{
	struct fx *f = *state;
	struct store_sandbox s;
	struct store_page pg;
	size_t len;
	void *rec, *mem;

	put_sandbox(f->st, "sbx_1");
	put_sandbox(f->st, "sbx_2");
	/* Truncated value. */
	raw_put(f, STORE_DB_SANDBOXES, "sbx_1", 5, "S\1\0\0\5", 5);
	assert_int_equal(
	    store_sandbox_get(f->st, "sbx_1", &s, &mem), STORE_E_CORRUPT);
	assert_int_equal(
	    store_list(f->st, STORE_DB_SANDBOXES, NULL, NULL, 10, &pg),
	    STORE_E_CORRUPT);
	/* A valid record under another key (a swap) is refused too. */
	sample_sandbox(&s, "sbx_2");
	assert_int_equal(store_sandbox_encode(&s, &rec, &len), 0);
	raw_put(f, STORE_DB_SANDBOXES, "sbx_1", 5, rec, len);
	free(rec);
	assert_int_equal(
	    store_sandbox_get(f->st, "sbx_1", &s, &mem), STORE_E_CORRUPT);
	assert_int_equal(store_sandbox_get(f->st, "sbx_2", &s, &mem), 0);
	free(mem);
}

static void
test_counters_revocations(void **state)
{
	struct fx *f = *state;
	int64_t v;
	int revoked;
	uint64_t n;

	assert_int_equal(store_counter_get(f->st, "agent-b", "budget", &v),
	    STORE_E_NOTFOUND);
	assert_int_equal(
	    store_counter_add(f->st, "agent-b", "budget", 10, 1, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(
	    store_counter_add(f->st, "agent-b", "budget", -3, 2, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(
	    store_counter_add(f->st, "agent-b", "budget", INT64_MAX, 2, &v),
	    STORE_E_ARG);
	assert_int_equal(store_counter_set(f->st, "agent-b", "runs", 42, 3), 0);
	assert_int_equal(store_counter_get(f->st, "agent-b", "runs", &v), 0);
	assert_int_equal(v, 42);

	assert_int_equal(store_revoked(f->st, "jti-1", 1000, &revoked), 0);
	assert_int_equal(revoked, 0);
	assert_int_equal(store_revoke(f->st, "jti-1", 2000, 1), 0);
	assert_int_equal(store_revoked(f->st, "jti-1", 1000, &revoked), 0);
	assert_int_equal(revoked, 1);
	/* Past its exp the token is dead anyway; the record may go. */
	assert_int_equal(store_revoked(f->st, "jti-1", 2000, &revoked), 0);
	assert_int_equal(revoked, 0);
	assert_int_equal(store_expire(f->st, 1999 * 1000, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_expire(f->st, 2000 * 1000, &n), 0);
	assert_int_equal(n, 1);
}

static void
test_idempotency_expiry(void **state)
{
	struct fx *f = *state;
	const int64_t day = 24ll * 3600 * 1000, t0 = 1700000000000;
	struct store_idem k = { "agent-b", "key-1", t0, { 7 }, 201,
		"{\"id\":1}", 8 },
	                  out;
	void *mem;
	uint64_t n;

	assert_int_equal(store_idem_put(f->st, &k, t0), 0);
	assert_int_equal(
	    store_idem_get(f->st, "agent-b", "key-1", t0 + day - 1, &out, &mem),
	    0);
	assert_int_equal(out.status, 201);
	assert_memory_equal(out.body, "{\"id\":1}", 8);
	assert_int_equal(out.req_hash[0], 7);
	free(mem);
	/* Another principal's key of the same name is another key. */
	assert_int_equal(
	    store_idem_get(f->st, "agent-a", "key-1", t0, &out, &mem),
	    STORE_E_NOTFOUND);
	/* A live key is create-only. */
	k.created_ms = t0 + 5;
	assert_int_equal(store_idem_put(f->st, &k, t0 + 5), STORE_E_EXISTS);
	/* After 24 h it is gone, and may be taken again. */
	assert_int_equal(
	    store_idem_get(f->st, "agent-b", "key-1", t0 + day, &out, &mem),
	    STORE_E_NOTFOUND);
	assert_int_equal(store_expire(f->st, t0 + day, &n), 0);
	assert_int_equal(n, 1);
	k.created_ms = t0 + day;
	assert_int_equal(store_idem_put(f->st, &k, t0 + day), 0);
}

static void
test_map_full(void **state)
{
	struct fx *f = *state;
	struct store_sandbox s;
	char id[32];
	void *mem;
	int rc = 0, i;

	store_close(f->st);
	rmtree(f->dir);
	assert_non_null(mkdtemp(strcpy(f->dir, "/tmp/test_store.XXXXXX")));
	/* A tiny map, no growth. */
	assert_int_equal(open_with(f, 128 * 1024, 0), STORE_OK);
	put_sandbox(f->st, "first");
	for (i = 0; i < 100000; i++) {
		snprintf(id, sizeof(id), "K%06d", i);
		if ((rc = put_env_filled(f->st, "first", id, 'x')) != STORE_OK)
			break;
	}
	assert_int_equal(rc, STORE_E_FULL);
	assert_true(i > 10);
	/* Reads keep working, and the failed write left nothing. */
	assert_int_equal(store_sandbox_get(f->st, "first", &s, &mem), 0);
	free(mem);
	{
		void *rec;
		size_t len;

		assert_int_equal(
		    store_get(f->st, STORE_DB_ENV, "first", id, &rec, &len),
		    STORE_E_NOTFOUND);
	}

	/* With growth allowed, the same load goes through. */
	store_close(f->st);
	assert_int_equal(open_with(f, 128 * 1024, 64ull << 20), STORE_OK);
	for (int j = 0; j < i + 50; j++) {
		snprintf(id, sizeof(id), "K%06d", j);
		assert_int_equal(put_env_filled(f->st, "second", id, 'y'), 0);
	}
	assert_true(store_map_size(f->st) > 128 * 1024);
}

/* Group commit: writes in a batch are children of one transaction; one
 * that fails is undone alone; a batch that ends uncommitted (the store
 * closed) leaves nothing; near a full map no batch opens, and the writes
 * go alone and grow the map as before. */
static void
test_batch(void **state)
{
	struct fx *f = *state;
	struct store_sandbox s;
	void *mem, *rec;
	size_t len;
	int64_t v;
	int i, rc = STORE_OK;

	assert_int_equal(store_batch_begin(f->st), STORE_OK);
	put_sandbox(f->st, "one");
	assert_int_equal(store_counter_add(f->st, "p", "n", 2, 1, &v), 0);
	assert_int_equal(v, 2);
	/* A write refused inside the batch: the others stay. */
	{
		struct store_idem k;

		memset(&k, 0, sizeof(k));
		k.principal = "p";
		k.key = "key";
		k.created_ms = 1;
		k.status = 200;
		k.body = "h";
		k.body_len = 1;

		assert_int_equal(store_idem_put(f->st, &k, 1), STORE_OK);
		assert_int_equal(store_idem_put(f->st, &k, 1), STORE_E_EXISTS);
	}
	assert_int_equal(store_counter_add(f->st, "p", "n", 3, 1, &v), 0);
	assert_int_equal(v, 5);
	assert_int_equal(store_batch_end(f->st), STORE_OK);
	assert_int_equal(store_sandbox_get(f->st, "one", &s, &mem), 0);
	free(mem);
	assert_int_equal(store_counter_get(f->st, "p", "n", &v), 0);
	assert_int_equal(v, 5);
	/* Not ended: closed with the store, nothing of it is kept. */
	assert_int_equal(store_batch_begin(f->st), STORE_OK);
	put_sandbox(f->st, "two");
	store_close(f->st);
	assert_int_equal(open_with(f, 0, 0), STORE_OK);
	assert_int_equal(
	    store_sandbox_get(f->st, "two", &s, &mem), STORE_E_NOTFOUND);
	/* A tiny map that may grow, filled inside one batch. */
	store_close(f->st);
	rmtree(f->dir);
	assert_non_null(mkdtemp(strcpy(f->dir, "/tmp/test_store.XXXXXX")));
	assert_int_equal(open_with(f, 128 * 1024, 64ull << 20), STORE_OK);
	assert_int_equal(store_batch_begin(f->st), STORE_OK);
	for (i = 0; i < 200 && rc == STORE_OK; i++) {
		char id[32];

		snprintf(id, sizeof(id), "K%06d", i);
		rc = put_env_filled(f->st, "grow", id, 'z');
	}
	assert_int_equal(rc, STORE_OK);
	assert_int_equal(store_batch_end(f->st), STORE_OK);
	assert_true(store_map_size(f->st) > 128 * 1024);
	assert_int_equal(
	    store_get(f->st, STORE_DB_ENV, "grow", "K000000", &rec, &len), 0);
	free(rec);
	assert_int_equal(
	    store_get(f->st, STORE_DB_ENV, "grow", "K000199", &rec, &len), 0);
	free(rec);
}

static void
test_persist_and_readonly(void **state)
{
	struct fx *f = *state;
	struct store_config ro = { 0, 0, 1, 0, 0 };
	struct store_sandbox s;
	int64_t v;
	void *mem;

	put_sandbox(f->st, "keep_me");
	assert_int_equal(store_counter_add(f->st, "p", "budget", 5, 1, &v), 0);
	assert_int_equal(store_revoke(f->st, "jti-x", INT32_MAX, 1), 0);
	{
		struct store_run r = { "keep_me", "run_1", "agent-b", "js",
			STORE_RUN_EXITED, 0, 1, 2, "ok", 2, "", 0, "" };
		size_t len;
		void *rec;

		assert_int_equal(store_run_encode(&r, &rec, &len), 0);
		assert_int_equal(
		    store_put(f->st, STORE_DB_RUNS, rec, len, 0), 0);
		free(rec);
	}
	store_close(f->st);
	assert_int_equal(store_open(f->dir, &ro, &f->st), STORE_OK);
	assert_int_equal(store_sandbox_get(f->st, "keep_me", &s, &mem), 0);
	free(mem);
	assert_int_equal(store_counter_get(f->st, "p", "budget", &v), 0);
	assert_int_equal(v, 5);
	{
		struct store_run r;
		int revoked;

		assert_int_equal(
		    store_run_get(f->st, "keep_me", "run_1", &r, &mem), 0);
		assert_memory_equal(r.out, "ok", 2);
		free(mem);
		assert_int_equal(store_revoked(f->st, "jti-x", 5, &revoked), 0);
		assert_int_equal(revoked, 1);
	}
	assert_int_equal(
	    store_counter_add(f->st, "p", "budget", 1, 1, &v), STORE_E_RDONLY);
	store_close(f->st);
	f->st = NULL;
	/* No store at all: a clear error for read-only openers. */
	assert_int_equal(
	    store_open("/nonexistent-keep", &ro, &f->st), STORE_E_NOTFOUND);
	assert_int_equal(open_with(f, 0, 0), STORE_OK);
}

static void
test_strerror(void **state)
{
	(void)state;
	for (int e = STORE_E_BASE + 1; e < STORE_E_LAST; e++)
		assert_string_not_equal(
		    store_strerror(e), "unknown store error");
	assert_string_equal(store_strerror(12345), "unknown store error");
	assert_string_equal(store_db_name(STORE_DB_AUDIT), "audit");
	assert_null(store_db_name(STORE_DB_COUNT));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sandbox_roundtrip),
		cmocka_unit_test(test_sandbox_encode_refuses),
		cmocka_unit_test(test_all_codecs),
		cmocka_unit_test(test_string_rules),
		cmocka_unit_test(test_strerror),
		cmocka_unit_test_setup_teardown(
		    test_put_get_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_list_pagination_and_cascade, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_corrupt_on_disk_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_counters_revocations, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_idempotency_expiry, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_batch, setup, teardown),
		cmocka_unit_test_setup_teardown(
		    test_persist_and_readonly, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

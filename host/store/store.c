/*
 * The LMDB environment, short transactions, and the generic and typed
 * record operations. The audit log is in store_audit.c.
 */
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host/store/store_int.h"
#include "lib/util.h"

#define DEFAULT_MAP (64ull << 20)
#define DEFAULT_IDEM_TTL_MS (24ull * 3600 * 1000)

static const char *const db_names[STORE_DB_COUNT] = {
	[STORE_DB_META] = "meta",
	[STORE_DB_SANDBOXES] = "sandboxes",
	[STORE_DB_RUNS] = "runs",
	[STORE_DB_AUDIT] = "audit",
	[STORE_DB_COUNTERS] = "counters",
	[STORE_DB_REVOCATIONS] = "revocations",
	[STORE_DB_IDEMPOTENCY] = "idempotency",
	[STORE_DB_IMAGES] = "images",
	[STORE_DB_ENV] = "env",
	[STORE_DB_FILES] = "files",
	[STORE_DB_SCHEDULES] = "schedules",
	[STORE_DB_SCHED_RUNS] = "schedule_runs",
	[STORE_DB_SECRETS] = "secrets",
};

const char *
store_db_name(unsigned db)
{
	return db < STORE_DB_COUNT ? db_names[db] : NULL;
}

const char *
store_strerror(int err)
{
	static const char *const msgs[] = {
		[STORE_E_ARG - STORE_E_BASE] = "invalid argument",
		[STORE_E_NOTFOUND - STORE_E_BASE] = "not found",
		[STORE_E_EXISTS - STORE_E_BASE] = "already exists",
		[STORE_E_FULL - STORE_E_BASE] = "store map is full",
		[STORE_E_NOSPC - STORE_E_BASE] = "no space left on device",
		[STORE_E_CORRUPT - STORE_E_BASE] = "corrupt record",
		[STORE_E_VERSION - STORE_E_BASE] = "unknown schema or "
		                                   "record version",
		[STORE_E_NOMEM - STORE_E_BASE] = "out of memory",
		[STORE_E_IO - STORE_E_BASE] = "I/O or LMDB error",
		[STORE_E_RDONLY - STORE_E_BASE] = "store is read-only",
		[STORE_E_CHAIN - STORE_E_BASE] = "audit chain is broken",
		[STORE_E_SIG - STORE_E_BASE] = "checkpoint signature does "
		                               "not verify",
		[STORE_E_MSG - STORE_E_BASE] = "malformed store message",
		[STORE_E_GRANT - STORE_E_BASE] = "grant refused",
		[STORE_E_SENDER - STORE_E_BASE] = "sender may not send this",
		[STORE_E_TOOBIG - STORE_E_BASE] = "too big",
	};

	if (err == STORE_OK)
		return "ok";
	if (err > STORE_E_BASE && err < STORE_E_LAST &&
	    msgs[err - STORE_E_BASE] != NULL)
		return msgs[err - STORE_E_BASE];
	return "unknown store error";
}

int
store_mdb_err(int rc)
{
	switch (rc) {
	case MDB_SUCCESS:
		return STORE_OK;
	case MDB_NOTFOUND:
		return STORE_E_NOTFOUND;
	case MDB_KEYEXIST:
		return STORE_E_EXISTS;
	case MDB_MAP_FULL:
		return STORE_E_FULL;
	case ENOSPC:
	case EDQUOT:
		return STORE_E_NOSPC;
	case ENOMEM:
		return STORE_E_NOMEM;
	case EACCES:
	case EROFS:
		return STORE_E_RDONLY;
	case MDB_VERSION_MISMATCH:
	case MDB_INVALID:
		return STORE_E_VERSION;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
		return STORE_E_CORRUPT;
	case MDB_BAD_VALSIZE:
		return STORE_E_TOOBIG;
	default:
		return STORE_E_IO;
	}
}

static int
txn_begin(struct store *st, unsigned flags, MDB_txn **txn)
{
	int rc = mdb_txn_begin(st->env, NULL, flags, txn);

	if (rc == MDB_MAP_RESIZED) {
		/* Another process grew the map: adopt its size. */
		if ((rc = mdb_env_set_mapsize(st->env, 0)) == 0) {
			MDB_envinfo info;

			mdb_env_info(st->env, &info);
			st->map_size = info.me_mapsize;
			rc = mdb_txn_begin(st->env, NULL, flags, txn);
		}
	}
	return store_mdb_err(rc);
}

int
store_read_begin(struct store *st, MDB_txn **txn)
{
	return txn_begin(st, MDB_RDONLY, txn);
}

static int
grow(struct store *st)
{
	uint64_t want;

	if (st->map_max <= st->map_size)
		return STORE_E_FULL;
	want = st->map_size * 2;
	if (want > st->map_max || want < st->map_size)
		want = st->map_max;
	/* Safe: this process has no transaction open here. */
	if (mdb_env_set_mapsize(st->env, (size_t)want) != 0)
		return STORE_E_FULL;
	st->map_size = want;
	return STORE_OK;
}

/*
 * LMDB reports a short write as EIO, which is how a full file system
 * usually shows: name it when the file system is (nearly) out of room.
 */
#define NOSPC_SLACK (1u << 20)
static int
disk_full(struct store *st)
{
	struct statvfs sv;
	mdb_filehandle_t fd;

	if (mdb_env_get_fd(st->env, &fd) != 0 || fstatvfs(fd, &sv) != 0)
		return 0;
	return (uint64_t)sv.f_bavail * sv.f_frsize < NOSPC_SLACK;
}

/*
 * The store's room on a file system it shares with the workspaces: the
 * blocks of st->reserve bytes past the data file's end are allocated
 * beforehand (fallocate, the file's size unchanged), so LMDB's next pages
 * land in them even when a tenant has filled the disk. Renewed when half
 * is used; when renewing fails (the disk is full), what is left of it is
 * still there, and a write past it is STORE_E_NOSPC.
 */
static void
reserve_room(struct store *st)
{
	mdb_filehandle_t fd;
	struct stat sb;
	uint64_t want;

	if (st->reserve == 0 || st->readonly ||
	    mdb_env_get_fd(st->env, &fd) != 0 || fstat(fd, &sb) != 0 ||
	    sb.st_size < 0)
		return;
	if (st->reserved_to >= (uint64_t)sb.st_size + st->reserve / 2)
		return;
	want = (uint64_t)sb.st_size + st->reserve;
	if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)want) == 0)
		st->reserved_to = want;
}

void
store_set_reserve(struct store *st, uint64_t bytes)
{
	if (st->reserve == bytes)
		return;
	st->reserve = bytes;
	st->reserved_to = 0;
	reserve_room(st);
}

uint64_t
store_reserve_left(struct store *st)
{
	mdb_filehandle_t fd;
	struct stat sb;

	if (st->reserve == 0 || mdb_env_get_fd(st->env, &fd) != 0 ||
	    fstat(fd, &sb) != 0 || (uint64_t)sb.st_size >= st->reserved_to)
		return 0;
	return st->reserved_to - (uint64_t)sb.st_size;
}

uint64_t
store_room(struct store *st)
{
	MDB_envinfo info;
	MDB_stat ms;
	struct statvfs sv;
	mdb_filehandle_t fd;
	struct stat sb;
	uint64_t used, max, map_room, disk_room;

	if (mdb_env_info(st->env, &info) != 0 ||
	    mdb_env_stat(st->env, &ms) != 0)
		return UINT64_MAX;
	used = ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize;
	max = st->map_max > st->map_size ? st->map_max : st->map_size;
	map_room = max > used ? max - used : 0;
	if (mdb_env_get_fd(st->env, &fd) != 0 || fstatvfs(fd, &sv) != 0 ||
	    fstat(fd, &sb) != 0 || sb.st_size < 0)
		return map_room;
	disk_room = (uint64_t)sv.f_bavail * sv.f_frsize;
	/* Pages inside the file are written in place; past its end they
	 * take the reserve's blocks, then free ones. */
	if ((uint64_t)sb.st_size > used)
		disk_room += (uint64_t)sb.st_size - used;
	/* The reserve: blocks allocated past the file's end (as keepd's
	 * store_set_reserve left them, whoever opened the store). */
	if ((uint64_t)sb.st_blocks * 512 > (uint64_t)sb.st_size)
		disk_room +=
		    (uint64_t)sb.st_blocks * 512 - (uint64_t)sb.st_size;
	return map_room < disk_room ? map_room : disk_room;
}

/* Room a batch needs in the map: the map grows only with no transaction
 * open, so a batch opens only where its writes (at most 32 messages of
 * 64 KiB, with the pages their trees copy) cannot fill it. */
#define BATCH_ROOM (8u << 20)

int
store_batch_begin(struct store *st)
{
	MDB_envinfo info;
	MDB_stat ms;

	if (st->readonly || st->batch != NULL)
		return STORE_OK;
	if (mdb_env_info(st->env, &info) != 0 ||
	    mdb_env_stat(st->env, &ms) != 0 ||
	    ((uint64_t)info.me_last_pgno + 1) * ms.ms_psize + BATCH_ROOM >
	        st->map_size)
		return STORE_OK; /* writes go alone, each may grow the map */
	return txn_begin(st, 0, &st->batch);
}

/* The batch's transaction committed: one sync for all its writes. */
static int
batch_commit(struct store *st)
{
	int rc;

	if (st->batch == NULL)
		return STORE_OK;
	rc = store_mdb_err(mdb_txn_commit(st->batch));
	st->batch = NULL;
	if (rc == STORE_E_IO && disk_full(st))
		rc = STORE_E_NOSPC;
	if (rc == STORE_OK)
		reserve_room(st);
	if (rc != STORE_OK && st->batch_rc == STORE_OK)
		st->batch_rc = rc;
	return rc;
}

int
store_batch_end(struct store *st)
{
	int rc;

	batch_commit(st);
	rc = st->batch_rc;
	st->batch_rc = STORE_OK;
	return rc;
}

int
store_write(struct store *st, store_txn_fn fn, void *arg)
{
	MDB_txn *txn;
	int rc;

	if (st->readonly)
		return STORE_E_RDONLY;
	if (st->batch != NULL) {
		/* A child of the batch: its failure undoes it alone. */
		if ((rc = store_mdb_err(mdb_txn_begin(
		         st->env, st->batch, 0, &txn))) == STORE_OK) {
			if ((rc = fn(st, txn, arg)) == STORE_OK)
				rc = store_mdb_err(mdb_txn_commit(txn));
			else
				mdb_txn_abort(txn);
		}
		if (rc != STORE_E_FULL)
			return rc;
		/* The map grows only with no transaction open: what the
		 * batch holds is committed now, and this write goes alone. */
		batch_commit(st);
	}
	for (int attempt = 0;; attempt++) {
		if ((rc = txn_begin(st, 0, &txn)) != STORE_OK)
			return rc;
		rc = fn(st, txn, arg);
		if (rc == STORE_OK) {
			rc = store_mdb_err(mdb_txn_commit(txn));
			if (rc == STORE_E_IO && disk_full(st))
				rc = STORE_E_NOSPC;
			if (rc == STORE_OK)
				reserve_room(st);
		} else
			mdb_txn_abort(txn);
		if (rc != STORE_E_FULL || attempt > 0 || grow(st) != STORE_OK)
			return rc;
	}
}

/* ---- open and close ------------------------------------------------- */

struct open_arg {
	int created;
};

static int
open_dbs(struct store *st, MDB_txn *txn, void *arg)
{
	static const uint8_t schema[] = { STORE_TAG_SCHEMA,
		STORE_RECORD_VERSION, 0, 0, STORE_SCHEMA_VERSION, 0, 0, 0 };
	unsigned flags = st->readonly ? 0 : MDB_CREATE;
	MDB_val k = { strlen(STORE_META_SCHEMA), STORE_META_SCHEMA }, v;
	int rc;

	(void)arg;
	for (unsigned i = 0; i < STORE_DB_COUNT; i++) {
		rc = mdb_dbi_open(txn, db_names[i], flags, &st->dbi[i]);
		if (rc == MDB_NOTFOUND && st->readonly) {
			st->have[i] = 0;
			continue;
		}
		if (rc != 0)
			return store_mdb_err(rc);
		st->have[i] = 1;
	}
	if (!st->have[STORE_DB_META])
		return STORE_E_NOTFOUND;
	rc = mdb_get(txn, st->dbi[STORE_DB_META], &k, &v);
	if (rc == MDB_NOTFOUND && !st->readonly) {
		v.mv_data = (void *)schema;
		v.mv_size = sizeof(schema);
		return store_mdb_err(
		    mdb_put(txn, st->dbi[STORE_DB_META], &k, &v, 0));
	}
	if (rc != 0)
		return store_mdb_err(rc);
	if (v.mv_size != sizeof(schema) ||
	    store_record_check(STORE_DB_META, v.mv_data, v.mv_size) != 0)
		return STORE_E_CORRUPT;
	if (memcmp(v.mv_data, schema, sizeof(schema)) != 0)
		return STORE_E_VERSION;
	return STORE_OK;
}

int
store_open(const char *dir, const struct store_config *cfg, struct store **out)
{
	struct store *st;
	MDB_envinfo info;
	MDB_txn *txn;
	int rc, dead;

	*out = NULL;
	if ((st = calloc(1, sizeof(*st))) == NULL)
		return STORE_E_NOMEM;
	st->readonly = cfg != NULL && cfg->readonly;
	st->map_size =
	    cfg != NULL && cfg->map_size ? cfg->map_size : DEFAULT_MAP;
	st->map_max = cfg != NULL ? cfg->map_max : 0;
	st->idem_ttl_ms = cfg != NULL && cfg->idem_ttl_ms ? cfg->idem_ttl_ms
	                                                  : DEFAULT_IDEM_TTL_MS;
	if ((rc = mdb_env_create(&st->env)) != 0) {
		free(st);
		return store_mdb_err(rc);
	}
	if ((rc = mdb_env_set_maxdbs(st->env, STORE_DB_COUNT)) != 0 ||
	    (rc = mdb_env_set_mapsize(st->env, (size_t)st->map_size)) != 0 ||
	    (rc = mdb_env_open(st->env, dir,
	         (st->readonly ? MDB_RDONLY : 0) |
	             (cfg != NULL && cfg->nosync ? MDB_NOSYNC : 0),
	         0600)) != 0) {
		rc = rc == ENOENT ? STORE_E_NOTFOUND : store_mdb_err(rc);
		goto fail;
	}
	/* Slots of readers killed with -9 would pin old pages forever. */
	(void)mdb_reader_check(st->env, &dead);
	mdb_env_info(st->env, &info);
	st->map_size = info.me_mapsize;
	if (st->readonly) {
		if ((rc = txn_begin(st, MDB_RDONLY, &txn)) != 0)
			goto fail;
		rc = open_dbs(st, txn, NULL);
		/* Handles opened in a read-only txn survive its commit. */
		if (rc == STORE_OK)
			rc = store_mdb_err(mdb_txn_commit(txn));
		else
			mdb_txn_abort(txn);
	} else
		rc = store_write(st, open_dbs, NULL);
	if (rc != STORE_OK)
		goto fail;
	*out = st;
	return STORE_OK;
fail:
	mdb_env_close(st->env);
	free(st);
	return rc;
}

void
store_close(struct store *st)
{
	if (st != NULL && st->batch != NULL) {
		mdb_txn_abort(st->batch);
		st->batch = NULL;
	}
	if (st == NULL)
		return;
	mdb_env_close(st->env);
	free(st);
}

uint64_t
store_map_size(struct store *st)
{
	return st->map_size;
}

int
store_copy(struct store *st, const char *dir)
{
	int rc = mdb_env_copy2(st->env, dir, MDB_CP_COMPACT);

	if (rc != 0)
		errno = rc;
	return store_mdb_err(rc);
}

/* ---- generic access ------------------------------------------------- */

/* Validate a value found under key in db; the record must name the key. */
static int
value_ok(unsigned db, const MDB_val *k, const MDB_val *v)
{
	uint8_t key[STORE_KEY_MAX];
	size_t klen;

	if (store_record_check(db, v->mv_data, v->mv_size) != STORE_OK)
		return STORE_E_CORRUPT;
	if (db == STORE_DB_META)
		return STORE_OK;
	if (store_record_key(db, v->mv_data, v->mv_size, key, sizeof(key),
	        &klen) != STORE_OK ||
	    klen != k->mv_size || memcmp(key, k->mv_data, klen) != 0)
		return STORE_E_CORRUPT;
	return STORE_OK;
}

struct put_arg {
	unsigned db;
	const void *rec;
	size_t len;
	unsigned flags;
};

static int
put_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct put_arg *a = arg;
	uint8_t key[STORE_KEY_MAX];
	MDB_val k, v;
	size_t klen;
	int rc;

	if ((rc = store_record_key(
	         a->db, a->rec, a->len, key, sizeof(key), &klen)) != STORE_OK)
		return rc == STORE_E_TOOBIG ? STORE_E_ARG : rc;
	k.mv_data = key;
	k.mv_size = klen;
	v.mv_data = (void *)a->rec;
	v.mv_size = a->len;
	return store_mdb_err(mdb_put(txn, st->dbi[a->db], &k, &v,
	    (a->flags & STORE_PUT_CREATE) ? MDB_NOOVERWRITE : 0));
}

int
store_put(
    struct store *st, unsigned db, const void *rec, size_t len, unsigned flags)
{
	struct put_arg a = { db, rec, len, flags };
	int rc;

	if (db == STORE_DB_META || db == STORE_DB_AUDIT ||
	    db >= STORE_DB_COUNT || (flags & ~STORE_PUT_CREATE) != 0)
		return STORE_E_ARG;
	if ((rc = store_record_check(db, rec, len)) != STORE_OK)
		return rc == STORE_E_VERSION ? rc : STORE_E_CORRUPT;
	return store_write(st, put_fn, &a);
}

int
store_get(struct store *st, unsigned db, const char *k1, const char *k2,
    void **rec, size_t *len)
{
	uint8_t key[STORE_KEY_MAX];
	MDB_val k, v;
	MDB_txn *txn;
	int rc;

	*rec = NULL;
	*len = 0;
	if ((k.mv_size = store_key_make(db, k1, k2, key)) == 0)
		return STORE_E_ARG;
	k.mv_data = key;
	if (!st->have[db])
		return STORE_E_NOTFOUND;
	if ((rc = store_read_begin(st, &txn)) != STORE_OK)
		return rc;
	rc = store_mdb_err(mdb_get(txn, st->dbi[db], &k, &v));
	if (rc == STORE_OK)
		rc = value_ok(db, &k, &v);
	if (rc == STORE_OK) {
		if ((*rec = malloc(v.mv_size ? v.mv_size : 1)) == NULL)
			rc = STORE_E_NOMEM;
		else {
			memcpy(*rec, v.mv_data, v.mv_size);
			*len = v.mv_size;
		}
	}
	mdb_txn_abort(txn);
	return rc;
}

/* Delete every key that begins with prefix (plen bytes). */
static int
delete_prefix(MDB_txn *txn, MDB_dbi dbi, const uint8_t *prefix, size_t plen)
{
	MDB_cursor *c;
	MDB_val k = { plen, (void *)prefix }, v;
	int rc;

	if ((rc = mdb_cursor_open(txn, dbi, &c)) != 0)
		return store_mdb_err(rc);
	rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
	while (rc == 0 && k.mv_size >= plen &&
	    memcmp(k.mv_data, prefix, plen) == 0) {
		if ((rc = mdb_cursor_del(c, 0)) != 0)
			break;
		/* After a delete, MDB_NEXT yields the record that moved
		 * into the cursor's place. */
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	}
	mdb_cursor_close(c);
	return rc == MDB_NOTFOUND || rc == 0 ? STORE_OK : store_mdb_err(rc);
}

struct del_arg {
	unsigned db;
	const char *k1;
	uint8_t key[STORE_KEY_MAX];
	size_t klen;
};

static int
del_fn(struct store *st, MDB_txn *txn, void *arg)
{
	static const unsigned children[] = { STORE_DB_RUNS, STORE_DB_ENV,
		STORE_DB_FILES };
	struct del_arg *a = arg;
	MDB_val k = { a->klen, a->key };
	int rc;

	if ((rc = store_mdb_err(mdb_del(txn, st->dbi[a->db], &k, NULL))) != 0)
		return rc;
	if (a->db == STORE_DB_SANDBOXES) {
		uint8_t prefix[STORE_ID_MAX + 1];
		size_t n = strlen(a->k1);

		memcpy(prefix, a->k1, n);
		prefix[n] = '\0';
		for (size_t i = 0; i < nitems(children); i++)
			if ((rc = delete_prefix(txn, st->dbi[children[i]],
			         prefix, n + 1)) != STORE_OK)
				return rc;
	}
	if (a->db == STORE_DB_SCHEDULES) {
		uint8_t prefix[STORE_ID_MAX + 1];
		size_t n = strlen(a->k1);

		memcpy(prefix, a->k1, n);
		prefix[n] = '\0';
		if ((rc = delete_prefix(txn, st->dbi[STORE_DB_SCHED_RUNS],
		         prefix, n + 1)) != STORE_OK)
			return rc;
	}
	return STORE_OK;
}

int
store_delete(struct store *st, unsigned db, const char *k1, const char *k2)
{
	struct del_arg a;

	a.db = db;
	a.k1 = k1;
	if ((a.klen = store_key_make(db, k1, k2, a.key)) == 0)
		return STORE_E_ARG;
	return store_write(st, del_fn, &a);
}

void
store_page_free(struct store_page *page)
{
	for (size_t i = 0; i < page->n; i++)
		free(page->rec[i]);
	page->n = 0;
}

/* The cursor text for key k in db: the seq, the second part, or all. */
static void
cursor_text(unsigned db, const MDB_val *k, char *out, size_t outlen)
{
	const uint8_t *p = k->mv_data, *nul;
	size_t n = k->mv_size;

	if (db == STORE_DB_AUDIT && n == 8) {
		snprintf(out, outlen, "%" PRIu64, store_get_be64(p));
		return;
	}
	if ((nul = memchr(p, '\0', n)) != NULL) {
		n -= (size_t)(nul + 1 - p);
		p = nul + 1;
	}
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

int
store_list(struct store *st, unsigned db, const char *prefix, const char *after,
    size_t limit, struct store_page *page)
{
	uint8_t start[STORE_KEY_MAX], pfx[STORE_KEY_MAX];
	char last[STORE_CURSOR_MAX] = "";
	size_t plen = 0, slen = 0;
	MDB_cursor *c = NULL;
	MDB_txn *txn = NULL;
	MDB_val k, v;
	int rc, op;

	page->n = 0;
	page->next[0] = '\0';
	if (db == STORE_DB_META || db >= STORE_DB_COUNT || limit == 0 ||
	    limit > STORE_PAGE_MAX)
		return STORE_E_ARG;
	if (after != NULL && after[0] == '\0')
		after = NULL;
	if (db == STORE_DB_AUDIT) {
		uint64_t seq = 0;
		char *end;

		if (prefix != NULL)
			return STORE_E_ARG;
		if (after != NULL) {
			errno = 0;
			seq = strtoull(after, &end, 10);
			if (errno != 0 || *end != '\0' || after[0] == '-' ||
			    seq == UINT64_MAX)
				return STORE_E_ARG;
			seq++;
		}
		store_be64(start, seq);
		slen = 8;
	} else if ((prefix != NULL) !=
	    (db == STORE_DB_RUNS || db == STORE_DB_COUNTERS ||
	        db == STORE_DB_IDEMPOTENCY || db == STORE_DB_ENV ||
	        db == STORE_DB_FILES || db == STORE_DB_SCHED_RUNS)) {
		/* Two-part keys are listed per first part, others whole. */
		return STORE_E_ARG;
	} else if (prefix != NULL) {
		/* Start at prefix NUL after; both parts validated (a fire's
		 * number is all digits, so its stand-in is too). */
		const char *k2 = after != NULL  ? after
		    : db == STORE_DB_SCHED_RUNS ? "00000000000000000000"
		                                : "x";

		if ((slen = store_key_make(db, prefix, k2, start)) == 0)
			return STORE_E_ARG;
		plen = strlen(prefix) + 1;
		memcpy(pfx, start, plen);
		if (after == NULL)
			slen = plen;
	} else if (after != NULL) {
		slen = strnlen(after, STORE_KEY_MAX);
		if (slen >= STORE_KEY_MAX)
			return STORE_E_ARG;
		memcpy(start, after, slen);
	}
	if (!st->have[db])
		return STORE_OK;
	if ((rc = store_read_begin(st, &txn)) != STORE_OK)
		return rc;
	if ((rc = store_mdb_err(mdb_cursor_open(txn, st->dbi[db], &c))) != 0)
		goto out;
	k.mv_data = start;
	k.mv_size = slen;
	op = slen ? MDB_SET_RANGE : MDB_FIRST;
	rc = mdb_cursor_get(c, &k, &v, op);
	/* The cursor names the last record seen: start after it. */
	if (rc == 0 && after != NULL && db != STORE_DB_AUDIT &&
	    k.mv_size == slen && memcmp(k.mv_data, start, slen) == 0)
		rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
	for (; rc == 0; rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
		if (plen != 0 &&
		    (k.mv_size < plen || memcmp(k.mv_data, pfx, plen) != 0))
			break;
		if (page->n == limit) {
			memcpy(page->next, last, sizeof(page->next));
			break;
		}
		if ((rc = value_ok(db, &k, &v)) != STORE_OK)
			goto out;
		if ((page->rec[page->n] = malloc(v.mv_size)) == NULL) {
			rc = STORE_E_NOMEM;
			goto out;
		}
		memcpy(page->rec[page->n], v.mv_data, v.mv_size);
		page->len[page->n] = v.mv_size;
		page->n++;
		cursor_text(db, &k, last, sizeof(last));
	}
	rc = rc == MDB_NOTFOUND || rc == 0 ? STORE_OK : store_mdb_err(rc);
out:
	if (c != NULL)
		mdb_cursor_close(c);
	mdb_txn_abort(txn);
	if (rc != STORE_OK)
		store_page_free(page);
	return rc;
}

/* ---- typed helpers -------------------------------------------------- */

int
store_sandbox_get(
    struct store *st, const char *id, struct store_sandbox *out, void **mem)
{
	size_t len;
	int rc;

	if ((rc = store_get(st, STORE_DB_SANDBOXES, id, NULL, mem, &len)) != 0)
		return rc;
	if ((rc = store_sandbox_decode(*mem, len, out)) != STORE_OK) {
		free(*mem);
		*mem = NULL;
	}
	return rc;
}

int
store_run_get(struct store *st, const char *sandbox, const char *run,
    struct store_run *out, void **mem)
{
	size_t len;
	int rc;

	if ((rc = store_get(st, STORE_DB_RUNS, sandbox, run, mem, &len)) != 0)
		return rc;
	if ((rc = store_run_decode(*mem, len, out)) != STORE_OK) {
		free(*mem);
		*mem = NULL;
	}
	return rc;
}

/* Read and validate one record inside a write transaction. */
static int
txn_get(struct store *st, MDB_txn *txn, unsigned db, const uint8_t *key,
    size_t klen, MDB_val *v)
{
	MDB_val k = { klen, (void *)key };
	int rc;

	if ((rc = store_mdb_err(mdb_get(txn, st->dbi[db], &k, v))) != 0)
		return rc;
	return value_ok(db, &k, v);
}

static int
txn_put(struct store *st, MDB_txn *txn, unsigned db, const uint8_t *key,
    size_t klen, const void *rec, size_t len)
{
	MDB_val k = { klen, (void *)key }, v = { len, (void *)rec };

	return store_mdb_err(mdb_put(txn, st->dbi[db], &k, &v, 0));
}

struct counter_arg {
	const char *principal, *name;
	int64_t delta, now_ms, value;
	int set;
};

static int
counter_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct counter_arg *a = arg;
	struct store_counter c = { a->principal, a->name, 0, a->now_ms };
	uint8_t key[STORE_KEY_MAX];
	size_t klen, len;
	MDB_val v;
	void *rec;
	int rc;

	if ((klen = store_key_make(
	         STORE_DB_COUNTERS, a->principal, a->name, key)) == 0)
		return STORE_E_ARG;
	if (a->set)
		c.value = a->delta;
	else {
		struct store_counter old;

		rc = txn_get(st, txn, STORE_DB_COUNTERS, key, klen, &v);
		if (rc == STORE_OK) {
			if ((rc = store_counter_decode(
			         v.mv_data, v.mv_size, &old)) != 0)
				return rc;
			c.value = old.value;
		} else if (rc != STORE_E_NOTFOUND)
			return rc;
		if (__builtin_add_overflow(c.value, a->delta, &c.value))
			return STORE_E_ARG;
	}
	if ((rc = store_counter_encode(&c, &rec, &len)) != STORE_OK)
		return rc;
	rc = txn_put(st, txn, STORE_DB_COUNTERS, key, klen, rec, len);
	free(rec);
	a->value = c.value;
	return rc;
}

int
store_counter_add(struct store *st, const char *principal, const char *name,
    int64_t delta, int64_t now_ms, int64_t *value)
{
	struct counter_arg a = { principal, name, delta, now_ms, 0, 0 };
	int rc;

	if ((rc = store_write(st, counter_fn, &a)) == STORE_OK && value)
		*value = a.value;
	return rc;
}

int
store_counter_set(struct store *st, const char *principal, const char *name,
    int64_t value, int64_t now_ms)
{
	struct counter_arg a = { principal, name, value, now_ms, 0, 1 };

	return store_write(st, counter_fn, &a);
}

int
store_counter_get(
    struct store *st, const char *principal, const char *name, int64_t *value)
{
	struct store_counter c;
	size_t len;
	void *rec;
	int rc;

	*value = 0;
	if ((rc = store_get(st, STORE_DB_COUNTERS, principal, name, &rec,
	         &len)) != STORE_OK)
		return rc;
	if ((rc = store_counter_decode(rec, len, &c)) == STORE_OK)
		*value = c.value;
	free(rec);
	return rc;
}

int
store_revoke(struct store *st, const char *jti, int64_t exp_s, int64_t now_ms)
{
	struct store_revocation r = { jti, exp_s, now_ms };
	size_t len;
	void *rec;
	int rc;

	if ((rc = store_revocation_encode(&r, &rec, &len)) != STORE_OK)
		return rc;
	rc = store_put(st, STORE_DB_REVOCATIONS, rec, len, 0);
	free(rec);
	return rc;
}

int
store_revoked(struct store *st, const char *jti, int64_t now_s, int *revoked)
{
	struct store_revocation r;
	size_t len;
	void *rec;
	int rc;

	*revoked = 0;
	rc = store_get(st, STORE_DB_REVOCATIONS, jti, NULL, &rec, &len);
	if (rc == STORE_E_NOTFOUND)
		return STORE_OK;
	if (rc != STORE_OK)
		return rc;
	if ((rc = store_revocation_decode(rec, len, &r)) == STORE_OK)
		*revoked = r.exp_s > now_s;
	free(rec);
	return rc;
}

int
store_idem_get(struct store *st, const char *principal, const char *key,
    int64_t now_ms, struct store_idem *out, void **mem)
{
	size_t len;
	int rc;

	if ((rc = store_get(st, STORE_DB_IDEMPOTENCY, principal, key, mem,
	         &len)) != STORE_OK)
		return rc;
	if ((rc = store_idem_decode(*mem, len, out)) == STORE_OK &&
	    out->created_ms + (int64_t)st->idem_ttl_ms <= now_ms)
		rc = STORE_E_NOTFOUND;
	if (rc != STORE_OK) {
		free(*mem);
		*mem = NULL;
	}
	return rc;
}

struct idem_arg {
	const void *rec;
	size_t len;
	const struct store_idem *in;
	int64_t now_ms;
};

static int
idem_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct idem_arg *a = arg;
	uint8_t key[STORE_KEY_MAX];
	struct store_idem old;
	size_t klen;
	MDB_val v;
	int rc;

	if ((klen = store_key_make(
	         STORE_DB_IDEMPOTENCY, a->in->principal, a->in->key, key)) == 0)
		return STORE_E_ARG;
	rc = txn_get(st, txn, STORE_DB_IDEMPOTENCY, key, klen, &v);
	if (rc == STORE_OK) {
		if ((rc = store_idem_decode(v.mv_data, v.mv_size, &old)) != 0)
			return rc;
		if (old.created_ms + (int64_t)st->idem_ttl_ms > a->now_ms)
			return STORE_E_EXISTS;
	} else if (rc != STORE_E_NOTFOUND)
		return rc;
	return txn_put(
	    st, txn, STORE_DB_IDEMPOTENCY, key, klen, a->rec, a->len);
}

int
store_idem_put(struct store *st, const struct store_idem *in, int64_t now_ms)
{
	struct idem_arg a = { NULL, 0, in, now_ms };
	void *rec;
	int rc;

	if ((rc = store_idem_encode(in, &rec, &a.len)) != STORE_OK)
		return rc;
	a.rec = rec;
	rc = store_write(st, idem_fn, &a);
	free(rec);
	return rc;
}

struct expire_arg {
	int64_t now_ms;
	uint64_t n;
};

static int
expire_fn(struct store *st, MDB_txn *txn, void *arg)
{
	struct expire_arg *a = arg;
	static const unsigned dbs[] = { STORE_DB_REVOCATIONS,
		STORE_DB_IDEMPOTENCY };
	MDB_cursor *c;
	MDB_val k, v;
	int rc;

	a->n = 0;
	for (size_t i = 0; i < nitems(dbs); i++) {
		if ((rc = mdb_cursor_open(txn, st->dbi[dbs[i]], &c)) != 0)
			return store_mdb_err(rc);
		for (rc = mdb_cursor_get(c, &k, &v, MDB_FIRST); rc == 0;
		     rc = mdb_cursor_get(c, &k, &v, MDB_NEXT)) {
			struct store_revocation r;
			struct store_idem d;
			int dead;

			if (dbs[i] == STORE_DB_REVOCATIONS)
				dead = store_revocation_decode(v.mv_data,
				           v.mv_size, &r) == STORE_OK &&
				    r.exp_s * 1000 <= a->now_ms;
			else
				dead = store_idem_decode(v.mv_data, v.mv_size,
				           &d) == STORE_OK &&
				    d.created_ms + (int64_t)st->idem_ttl_ms <=
				        a->now_ms;
			/* A corrupt record is left for an operator to see. */
			if (!dead)
				continue;
			if ((rc = mdb_cursor_del(c, 0)) != 0)
				break;
			a->n++;
		}
		mdb_cursor_close(c);
		if (rc != MDB_NOTFOUND)
			return store_mdb_err(rc);
	}
	return STORE_OK;
}

int
store_expire(struct store *st, int64_t now_ms, uint64_t *n)
{
	struct expire_arg a = { now_ms, 0 };
	int rc = store_write(st, expire_fn, &a);

	if (n != NULL)
		*n = rc == STORE_OK ? a.n : 0;
	return rc;
}

/*
 * Fuzz the store's record decoders, the validation every value read back
 * from LMDB passes. The first byte picks the database. Properties: nothing
 * crashes, leaks or over-reads; a record that validates has a key; and
 * decoding then encoding gives back the same bytes (the encoding is
 * canonical, so a record cannot smuggle bytes the decoder skipped).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host/store/store.h"
#include "host/store/store_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
same(const void *a, size_t alen, int rc, void *b, size_t blen)
{
	if (rc != STORE_OK || alen != blen || memcmp(a, b, alen) != 0)
		abort();
	free(b);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t key[STORE_KEY_MAX];
	unsigned db;
	uint8_t *rec;
	size_t len, klen, olen;
	void *out;
	int rc;

	if (size < 1)
		return 0;
	db = data[0] % STORE_DB_COUNT;
	len = size - 1;
	/* An exact-size copy so that an over-read faults under ASan. */
	if ((rec = malloc(len ? len : 1)) == NULL)
		return 0;
	memcpy(rec, data + 1, len);
	if (store_record_check(db, rec, len) != STORE_OK) {
		free(rec);
		return 0;
	}
	if (db != STORE_DB_META &&
	    store_record_key(db, rec, len, key, sizeof(key), &klen) != 0)
		abort();
	switch (db) {
	case STORE_DB_SANDBOXES: {
		struct store_sandbox x;

		(void)store_sandbox_decode(rec, len, &x);
		rc = store_sandbox_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_RUNS: {
		struct store_run x;

		(void)store_run_decode(rec, len, &x);
		rc = store_run_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_AUDIT: {
		struct store_audit x;
		uint8_t h[STORE_HASH_BYTES];

		(void)store_audit_decode(rec, len, &x);
		rc = store_audit_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		store_audit_hash(rec, len, h);
		break;
	}
	case STORE_DB_COUNTERS: {
		struct store_counter x;

		(void)store_counter_decode(rec, len, &x);
		rc = store_counter_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_REVOCATIONS: {
		struct store_revocation x;

		(void)store_revocation_decode(rec, len, &x);
		rc = store_revocation_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_IDEMPOTENCY: {
		struct store_idem x;

		(void)store_idem_decode(rec, len, &x);
		rc = store_idem_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_IMAGES: {
		struct store_image x;

		(void)store_image_decode(rec, len, &x);
		rc = store_image_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_ENV: {
		struct store_env x;

		(void)store_env_decode(rec, len, &x);
		rc = store_env_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_FILES: {
		struct store_file x;

		(void)store_file_decode(rec, len, &x);
		rc = store_file_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_SCHEDULES: {
		struct store_schedule x;

		(void)store_schedule_decode(rec, len, &x);
		rc = store_schedule_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	case STORE_DB_SCHED_RUNS: {
		struct store_sched_run x;

		(void)store_sched_run_decode(rec, len, &x);
		rc = store_sched_run_encode(&x, &out, &olen);
		same(rec, len, rc, out, olen);
		break;
	}
	default:
		break;
	}
	free(rec);
	return 0;
}

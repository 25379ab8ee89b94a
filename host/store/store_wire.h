/*
 * The store's messages (type range MSG_STORE_BASE, host/msg.h) and the
 * pure request -> reply service step that `keepd: store` runs for each
 * message after the framework has checked the header.
 *
 * Layout: a fixed-width header struct, then variable parts back to back,
 * no padding, host byte order (both ends are on this machine). Records
 * travel in the store's own record encoding (host/store/store.h), so one
 * validating decoder serves the disk and the wire. Decoders require the
 * total length to be exactly the sum of the parts, every reserved field
 * and unused grant zero, every key part free of NUL bytes.
 *
 * Authorization. Writes that carry out a client's request (PUT, DELETE)
 * carry a grant minted for PROC_STORE and this request id; the store
 * verifies it and checks its capability and target (the table in
 * docs/store.md) and, for records that name one, that the grant's
 * principal is the record's. Audit appends and counters carry no grant:
 * they record decisions, denials included, and quota state, and are
 * authorized by sender (audit: every process; counters: the policy
 * process). Reads are by sender (front, vmm, policy).
 */
#ifndef KEEP_STORE_WIRE_H
#define KEEP_STORE_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "host/grant.h"
#include "host/store/store.h"

#define MSG_STORE_PUT 0x0401 /* IN: store_wire_put + record */
#define MSG_STORE_GET 0x0402 /* IN: store_wire_key + k1 + k2 */
#define MSG_STORE_LIST 0x0403 /* IN: store_wire_key + prefix + cursor */
#define MSG_STORE_DELETE 0x0404 /* IN: store_wire_key (+grant) + k1 + k2 */
#define MSG_STORE_AUDIT 0x0405 /* IN: store_wire_audit + entries */
#define MSG_STORE_COUNTER 0x0406 /* IN: store_wire_counter + k1 + k2 */
#define MSG_STORE_REVOKED 0x0407 /* IN: store_wire_key, db REVOCATIONS */
/* IN: a uint64 length, and a sealed memfd holding a whole MSG_STORE_PUT
 * payload of that length, for a record larger than a message (a run's
 * output). Handled exactly as that MSG_STORE_PUT. */
#define MSG_STORE_PUT_LARGE 0x0408
/* IN: nothing. The reply's value is store_room(): the bytes the store can
 * still write (for /metrics and the front's warning). */
#define MSG_STORE_ROOM 0x0409
#define STORE_PUT_LARGE_MAX (2 * STORE_OUTPUT_MAX + (1u << 20))
#define MSG_STORE_REPLY 0x0480 /* OUT: store_wire_reply + next + recs */

#define STORE_WIRE_VERSION 1
#define STORE_WIRE_MAX_AUDIT 256 /* entries in one MSG_STORE_AUDIT */
#define STORE_WIRE_MAX_LIST 100 /* records in one list reply */
#define STORE_WIRE_REPLY_MAX (60u * 1024) /* list replies stop here */

/* MSG_STORE_PUT, then rec_len bytes of record for db. */
struct store_wire_put {
	uint32_t version; /* STORE_WIRE_VERSION */
	uint32_t db; /* enum store_db: SANDBOXES RUNS REVOCATIONS
			IDEMPOTENCY IMAGES ENV FILES */
	uint32_t flags; /* STORE_PUT_CREATE or 0 */
	uint32_t rec_len;
	struct grant grant;
};

/* GET, LIST, DELETE, REVOKED, then k1_len + k2_len bytes. For LIST, k1
 * is the prefix and k2 the cursor; a zero length means none. */
struct store_wire_key {
	uint32_t version;
	uint32_t db;
	uint32_t limit; /* LIST: 1..STORE_WIRE_MAX_LIST; else 0 */
	uint32_t k1_len; /* 1..STORE_NAME_MAX (LIST: 0..) */
	uint32_t k2_len; /* 0..STORE_PATH_MAX */
	uint32_t reserved; /* 0 */
	struct grant grant; /* DELETE only; all zero otherwise */
};

/* MSG_STORE_AUDIT, then count times: uint32 length, an audit record
 * with seq 0 and prev and hash all zero (the store sets them). */
struct store_wire_audit {
	uint32_t version;
	uint32_t count; /* 1..STORE_WIRE_MAX_AUDIT */
};

enum store_counter_op {
	STORE_COUNTER_ADD = 1,
	STORE_COUNTER_SET = 2,
	STORE_COUNTER_GET = 3
};

/* MSG_STORE_COUNTER, then principal (k1) and counter name (k2). */
struct store_wire_counter {
	uint32_t version;
	uint32_t op; /* enum store_counter_op */
	uint32_t k1_len; /* 1..STORE_NAME_MAX */
	uint32_t k2_len; /* 1..STORE_NAME_MAX */
	int64_t value; /* ADD: delta; SET: value; GET: 0 */
};

/*
 * Every reply: the header, next_len bytes of cursor (LIST), then count
 * times a uint32 length and a record. value: the counter (COUNTER), the
 * first seq (AUDIT), 1 if revoked (REVOKED), else 0.
 */
struct store_wire_reply {
	uint32_t version;
	uint32_t status; /* STORE_OK or STORE_E_* */
	uint32_t count;
	uint32_t next_len; /* <= STORE_CURSOR_MAX - 1 */
	int64_t value;
};

_Static_assert(sizeof(struct store_wire_put) == 240, "put layout");
_Static_assert(sizeof(struct store_wire_key) == 248, "key layout");
_Static_assert(sizeof(struct store_wire_audit) == 8, "audit layout");
_Static_assert(sizeof(struct store_wire_counter) == 24, "counter layout");
_Static_assert(sizeof(struct store_wire_reply) == 24, "reply layout");

/*
 * The service. verify checks a grant as received for this request and,
 * on GRANT_OK, copies the verified grant to *out; NULL selects
 * grant_verify with grant_key and link PROC_STORE at the real clock, so
 * unit tests can pass a key of their own. now_ms (NULL: the real clock)
 * dates revocation and idempotency checks.
 */
struct store_service {
	struct store *st;
	int (*verify)(void *arg, const struct grant *wire, uint64_t reqid,
	    struct grant *out);
	void *arg;
	uint8_t grant_key[GRANT_KEY_BYTES];
	int64_t (*now_ms)(void *arg);
	/* Counters for logs and metrics. */
	uint64_t nhandled, nmalformed, nrefused;
	/* Refusals without a principal not recorded: the store's room was
	 * below STORE_UNATTRIBUTED_FLOOR (kept for authenticated ones). */
	uint64_t nunattributed_dropped;
};

/*
 * Handle one request of type from process `from` (enum proc_id) with
 * request id reqid. Always produces a reply for a known type (*reply
 * malloc'd, the caller frees it; *reply_type MSG_STORE_REPLY) whose
 * status is the outcome. Returns STORE_OK when the message was well
 * formed and allowed (whatever the outcome), STORE_E_MSG for a malformed
 * one, STORE_E_SENDER or STORE_E_GRANT for a refused one (a reply is
 * made all the same, for the glue to send, log and count), and for an
 * unknown type STORE_E_MSG with no reply; STORE_E_NOMEM, no reply.
 * A GET of a large record (run output, a file) may exceed
 * MSG_MAX_PAYLOAD: the glue sends such a reply as a sealed memfd.
 */
int store_service_handle(struct store_service *svc, uint16_t type,
    uint32_t from, uint64_t reqid, const void *msg, size_t len,
    uint16_t *reply_type, void **reply, size_t *reply_len);

/* ---- encoders for the senders (front, vmm, policy, egress) ---------- */

int store_wire_put_encode(unsigned db, unsigned flags, const struct grant *g,
    const void *rec, size_t rec_len, void **out, size_t *len);
/* type: GET, LIST, DELETE or REVOKED; g only for DELETE (else NULL). */
int store_wire_key_encode(uint16_t type, unsigned db, const char *k1,
    const char *k2, unsigned limit, const struct grant *g, void **out,
    size_t *len);
int store_wire_audit_encode(
    const struct store_audit *e, size_t n, void **out, size_t *len);
int store_wire_counter_encode(unsigned op, const char *principal,
    const char *name, int64_t value, void **out, size_t *len);

/*
 * Decode a reply (untrusted): checks the header and that the records
 * exactly fill the rest. *next gets the cursor, NUL-terminated. Then
 * store_wire_reply_record walks the records: call it with i = 0 .. count-1
 * and the same arguments. Returns STORE_OK or STORE_E_MSG.
 */
int store_wire_reply_decode(const void *msg, size_t len,
    struct store_wire_reply *hdr, char next[STORE_CURSOR_MAX]);
/* Just the status of a reply that carries nothing else the caller
 * needs (an audit append, a counter set). STORE_OK or STORE_E_MSG. */
int store_wire_reply_status(const void *msg, size_t len, uint32_t *status);
int store_wire_reply_record(
    const void *msg, size_t len, uint32_t i, const void **rec, size_t *rec_len);

#endif
